"""Paimon 0.9.0 (Java) reads a lakeskip primary-key table after upserts, deletes and
updates, and after a full compaction: its merge-on-read returns the same rows as lakeskip's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.interop.reads import java_rows, lakeskip_rows

pytestmark = pytest.mark.interop


def test_paimon_java_reads_lakeskip_primary_key_table(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    session.sql(
        "CREATE TABLE t (id BIGINT, s STRING, v INT, dt STRING, PRIMARY KEY (dt, id) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '2', 'file-index.bloom-filter.columns' = 's')"
    )
    for w in range(3):
        values = ", ".join(
            f"({i}, 's{w}-{i}', {w * 100 + i}, 'p{i % 2}')" for i in range(w * 4, w * 4 + 10)
        )
        session.sql(f"INSERT INTO t VALUES {values}")
    session.sql("DELETE FROM t WHERE v % 5 = 0")
    session.sql("UPDATE t SET s = upper(s) WHERE id < 6")
    ours = lakeskip_rows(session, "SELECT id, s, v, dt FROM t")
    assert len(ours) > 5
    assert java_rows(paimon_java, wh, "default.t") == ours
    # after a full compaction (one sorted run per bucket at the top level (5), deletes gone)
    session.sql("CALL sys.compact(table => 't')")
    assert java_rows(paimon_java, wh, "default.t") == ours


def test_paimon_java_reads_after_universal_compaction(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    """Upserts and deletes compacted after each commit by universal compaction (trigger 3:
    levels 0-3, runs merged below the top keep their retracts), then a minor compaction:
    Paimon 0.9's merge-on-read returns lakeskip's rows, and rows through the catalog's
    Spark writes (``spark.sql``) and its spilled write buffer too."""
    wh = tmp_path / "warehouse"
    session.sql(
        "CREATE TABLE u (id BIGINT, s STRING, v INT, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '2', 'num-sorted-run.compaction-trigger' = '3', "
        "'write-buffer-size' = '8 kb')"
    )
    session.sql("INSERT INTO u SELECT id, concat('b', CAST(id AS STRING)), 0 FROM range(0, 3000)")
    name = f"{session.catalog_name}.default.u"
    for w in range(1, 9):
        if w % 3 == 0:
            session.sql(f"DELETE FROM u WHERE id % 97 = {w}")
        else:
            session.spark.sql(
                f"INSERT INTO {name} SELECT id * 13 % 3100, 'w{w}', {w} "
                f"FROM range({w * 40}, {w * 40 + 60})"
            ).collect()
    table = session.catalog.get_table("default.u")
    levels = {e.file.level for e in table.scan_files()}
    assert len(levels) > 1 and any(s.commit_kind.value == "COMPACT" for s in table.list_snapshots())
    ours = lakeskip_rows(session, "SELECT id, s, v FROM u")
    assert java_rows(paimon_java, wh, "default.u") == ours
    session.sql("CALL sys.compact(table => 'u', compact_strategy => 'minor')")
    assert java_rows(paimon_java, wh, "default.u") == ours


def test_paimon_java_reads_after_full_compaction_on_write(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    """``full-compaction.delta-commits``: every write (INSERT, DELETE, UPDATE) is followed by
    a full compaction of its buckets (one sorted run at level 5, deletes dropped): Paimon
    0.9's merge-on-read returns lakeskip's rows."""
    wh = tmp_path / "warehouse"
    session.sql(
        "CREATE TABLE f (id BIGINT, s STRING, v INT, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '2', 'full-compaction.delta-commits' = '2')"
    )
    session.sql("INSERT INTO f SELECT id, concat('b', CAST(id AS STRING)), 0 FROM range(0, 500)")
    session.sql("INSERT INTO f SELECT id * 7 % 600, 'w1', 1 FROM range(0, 80)")
    session.sql("DELETE FROM f WHERE id % 9 = 4")
    session.sql("UPDATE f SET s = upper(s) WHERE id < 40")
    table = session.catalog.get_table("default.f")
    files = table.scan_files()
    assert {e.file.level for e in files} == {5} and len({e.bucket for e in files}) == 2
    ours = lakeskip_rows(session, "SELECT id, s, v FROM f")
    assert sum(e.file.row_count for e in files) == len(ours)  # no retracts left
    assert java_rows(paimon_java, wh, "default.f") == ours
