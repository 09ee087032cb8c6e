"""Deletion vectors across implementations: Paimon 0.9 (Java) and pypaimon 2.1 read lakeskip's
DV tables with the deleted rows gone, and Paimon's Java writes the same DV bytes.

pypaimon 2.1 writes DVs only for data-evolution tables (``TableDeleteByRowId`` needs
``data-evolution.enabled`` and ``row-tracking.enabled``, which lakeskip does not support), and
Paimon 0.9's Java API writes them only through its Flink/Spark DML, so the other direction is
covered by reading Paimon's index-file layout from pypaimon's reader code (the unit tests)
rather than by files they wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap
from tests.interop.test_pypaimon import pypaimon_python, run_pypaimon  # noqa: F401

from lakeskip.catalog import (
    Catalog,
    CommitKind,
    FileKind,
    FileStoreTable,
    ManifestEntry,
    collect_stats,
    make_data_file_meta,
)
from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate, encode_vector
from lakeskip.catalog.options import stats_mode
from lakeskip.types import BIGINT, INT, STRING, RowType

pytestmark = pytest.mark.interop

ROW = RowType.of(("id", BIGINT), ("s", STRING), ("v", INT), ("dt", STRING))


def _write(t: FileStoreTable, ids: range, dt: str) -> ManifestEntry:
    arrow = pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "s": [f"k{i}" for i in ids],
            "v": pa.array([i % 7 for i in ids], pa.int32()),
            "dt": [dt] * len(ids),
        }
    )
    name = t.new_data_file_name()
    path = f"{t.path}/{t.partition_path((dt,))}/{name}"
    with t.file_io.open_output(path) as out:
        pq.write_table(arrow, out, compression="zstd")  # Paimon 0.9 ships no snappy
    stats, cols = collect_stats(arrow, ROW, stats_mode(t.schema.options))
    meta = make_data_file_meta(
        name, t.file_io.file_size(path), arrow.num_rows, stats, cols, t.schema.id, None, ()
    )
    return ManifestEntry(FileKind.ADD, (dt,), 0, -1, meta)


def _delete(t: FileStoreTable, e: ManifestEntry, positions: list[int]) -> None:
    name = e.file.file_name
    ref = t.deletion_files().get(name)
    old = t.read_deletion_vector(ref) if ref is not None else BitMap()
    t.commit(
        [],
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=[],
        deletion_vectors=DeletionVectorUpdate(
            {name: old | BitMap(positions)}, {name: ref.index_file if ref else None}
        ),
    )


def _dv_table(wh: Path) -> tuple[FileStoreTable, list[tuple[int, str, int, str]]]:
    """Three files in two partitions; DVs on two of them over three commits (index files
    replaced and carried over), an append and a compaction in between."""
    cat = Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", ROW, partition_keys=["dt"], options={"deletion-vectors": "true"})
    a, b, c = (
        _write(t, range(0, 10), "p1"),
        _write(t, range(10, 20), "p1"),
        _write(t, range(20, 30), "p2"),
    )
    t.commit([a, b, c])
    _delete(t, a, [0, 5])
    _delete(t, c, [9])
    d = _write(t, range(30, 35), "p2")
    t.commit([d])
    _delete(t, a, [6])
    _delete(t, d, [1, 2])
    # compaction of b alone (no DV) keeps the others' DVs
    b2 = _write(t, range(10, 20), "p1")
    t.commit([b2], deleted=[b], kind=CommitKind.COMPACT)
    deleted = {0, 5, 6, 29, 31, 32}
    rows = [(i, f"k{i}", i % 7, "p1" if i < 20 else "p2") for i in range(35) if i not in deleted]
    return t, rows


def test_paimon_java_dv_bytes_are_ours(paimon_java: Any, tmp_path: Path) -> None:
    cases = [[0], [1, 5, 70000], list(range(0, 5000, 3)), list(range(100, 9000))]
    out = paimon_java(tmp_path, *({"op": "dv", "positions": p} for p in cases))
    for positions, hex_bytes in zip(cases, out, strict=True):
        block = encode_vector(BitMap(positions))
        assert block[4:-4].hex() == hex_bytes, f"DV bytes differ for {positions[:5]}..."


def test_paimon_java_reads_lakeskip_dvs(paimon_java: Any, tmp_path: Path) -> None:
    _t, rows = _dv_table(tmp_path / "wh")
    (res,) = paimon_java(tmp_path / "wh", {"op": "read", "table": "db.t", "queries": []})
    got = sorted(tuple(r) for r in res["rows"])
    want = sorted((str(i), s, str(v), dt) for i, s, v, dt in rows)
    assert got == want, "Paimon 0.9 must skip the rows our deletion vectors delete"


PYPAIMON_READ = """
    import json, sys
    from pypaimon import CatalogFactory
    t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table("db.t")
    rb = t.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    print(json.dumps({"rows": rows}))
"""


def test_pypaimon_reads_lakeskip_dvs(pypaimon_python: str, tmp_path: Path) -> None:  # noqa: F811
    _t, rows = _dv_table(tmp_path / "wh")
    got = run_pypaimon(pypaimon_python, PYPAIMON_READ, str(tmp_path / "wh"))["rows"]
    assert sorted((r["id"], r["s"], r["v"], r["dt"]) for r in got) == sorted(rows)


def test_spark_dml_dv_tables_read_the_same_everywhere(
    session: Any,
    paimon_java: Any,
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """DELETE / UPDATE through Session.sql, then compaction: Paimon 0.9 and pypaimon read
    exactly lakeskip's rows after each step."""
    wh = tmp_path / "warehouse"
    session.sql(
        "CREATE TABLE t (id BIGINT, s STRING, v INT, dt STRING) PARTITIONED BY (dt) "
        "WITH ('deletion-vectors' = 'true', 'file-index.bloom-filter.columns' = 's')"
    )
    for f in range(3):
        values = ", ".join(f"({f * 10 + j}, 'k{f * 10 + j}', {j}, 'p{f % 2}')" for j in range(10))
        session.sql(f"INSERT INTO t SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")

    def check(step: str) -> None:
        ours = sorted(
            (str(r[0]), r[1], str(r[2]), r[3])
            for r in session.sql("SELECT id, s, v, dt FROM t").collect()
        )
        (res,) = paimon_java(wh, {"op": "read", "table": "default.t", "queries": []})
        assert sorted(tuple(r) for r in res["rows"]) == ours, f"{step}: Paimon 0.9 differs"
        py = run_pypaimon(pypaimon_python, PYPAIMON_READ.replace("db.t", "default.t"), str(wh))
        theirs = sorted((str(r["id"]), r["s"], str(r["v"]), r["dt"]) for r in py["rows"])
        assert theirs == ours, f"{step}: pypaimon differs"

    session.sql("DELETE FROM t WHERE v IN (2, 3) OR id = 25")
    check("DELETE")
    session.sql("UPDATE t SET v = v + 100 WHERE id % 4 = 0")
    check("UPDATE")
    session.sql("DELETE FROM t WHERE v > 105")
    check("DELETE after UPDATE")
    session.sql("CALL sys.compact(table => 't')")
    check("compaction")
