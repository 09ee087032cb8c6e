"""Primary-key tables with deletion vectors across implementations: Paimon 0.9 (Java) and
pypaimon 2.1 read lakeskip's tables (lookup writes at levels > 0 with DVs, DELETE as DV marks,
UPDATE, full bucket compaction) with exactly lakeskip's rows after every step; and lakeskip
reads a DV primary-key table pypaimon wrote the way pypaimon does (pypaimon writes level-0
files and does not compact them, so its own batch read skips them; both see the rows once a
compaction has moved them up)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.interop.test_pypaimon import pypaimon_python, run_pypaimon  # noqa: F401

pytestmark = pytest.mark.interop

PYPAIMON_READ = """
    import json, sys
    from pypaimon import CatalogFactory
    t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table(sys.argv[2])
    rb = t.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    print(json.dumps({"rows": data.to_pylist()}, default=str))
"""

PYPAIMON_WRITE = """
    import json, sys
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema
    cat = CatalogFactory.create({"warehouse": sys.argv[1]})
    cat.create_database("db", False)
    pa_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                           ("n", pa.int32())])
    cat.create_table("db.t", Schema.from_pyarrow_schema(pa_schema, primary_keys=["id"],
        options={"bucket": "2", "deletion-vectors.enabled": "true"}), False)
    t = cat.get_table("db.t")
    for commit in range(3):
        rows = [{"id": i, "name": f"v{commit}-{i}", "n": commit * 100 + i}
                for i in range(commit * 5, commit * 5 + 12)]
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(pa.Table.from_pylist(rows, schema=pa_schema))
        c = wb.new_commit()
        c.commit(w.prepare_commit())
        w.close()
        c.close()
    print(json.dumps("ok"))
"""


def test_lakeskip_dv_primary_key_tables_read_the_same_everywhere(
    session: Any,
    paimon_java: Any,
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    wh = tmp_path / "warehouse"
    session.sql(
        "CREATE TABLE t (id BIGINT, s STRING, v INT, dt STRING, PRIMARY KEY (dt, id) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '2', 'deletion-vectors' = 'true', "
        "'file-index.bloom-filter.columns' = 's')"
    )

    def check(step: str) -> None:
        ours = sorted(
            (str(r[0]), r[1], str(r[2]), r[3])
            for r in session.sql("SELECT id, s, v, dt FROM t").collect()
        )
        assert ours, step
        (res,) = paimon_java(wh, {"op": "read", "table": "default.t", "queries": []})
        assert sorted(tuple(r) for r in res["rows"]) == ours, f"{step}: Paimon 0.9 differs"
        py = run_pypaimon(pypaimon_python, PYPAIMON_READ, str(wh), "default.t")
        theirs = sorted((str(r["id"]), r["s"], str(r["v"]), r["dt"]) for r in py["rows"])
        assert theirs == ours, f"{step}: pypaimon differs"

    for w in range(3):
        values = ", ".join(
            f"({i}, 's{w}-{i}', {w * 100 + i}, 'p{i % 2}')" for i in range(w * 4, w * 4 + 10)
        )
        session.sql(f"INSERT INTO t VALUES {values}")
    t = session.catalog.get_table("default.t")
    assert t.deletion_files() and {e.file.level for e in t.scan_files()} == {3, 4, 5}
    check("upserts")
    session.sql("DELETE FROM t WHERE v % 5 = 0")
    check("DELETE")
    session.sql("UPDATE t SET s = upper(s) WHERE id < 6")
    check("UPDATE")
    after_update = sorted(tuple(r) for r in session.sql("SELECT * FROM t").collect())
    session.sql("CALL sys.create_tag(table => 't', tag => 'after_update')")
    session.sql("INSERT INTO t VALUES (1, 'again', 1, 'p1'), (40, 'new', 40, 'p0')")
    # level 1 was taken by the UPDATE: this write compacted its buckets to the top level
    check("upsert into a full bucket")
    session.sql("CALL sys.compact(table => 't')")
    t = t.refresh()
    assert {e.file.level for e in t.scan_files()} == {5} and not t.deletion_files()
    check("compaction")
    session.sql(
        "MERGE INTO t USING (SELECT * FROM VALUES (2L, 'm', 2, 'p0'), (3L, 'gone', 3, 'p1'), "
        "(50L, 'ins', 50, 'p0') AS s(id, s, v, dt)) AS s ON t.id = s.id AND t.dt = s.dt "
        "WHEN MATCHED AND s.s = 'gone' THEN DELETE WHEN MATCHED THEN UPDATE SET s = s.s "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    check("MERGE")
    session.sql("CALL sys.rollback(table => 't', version => 'after_update')")
    assert sorted(tuple(r) for r in session.sql("SELECT * FROM t").collect()) == after_update
    assert session.catalog.get_table("default.t").deletion_files(), "the DVs came back"
    check("rollback to a tag (files and DVs)")


def test_lakeskip_reads_pypaimon_dv_primary_key_table(
    session: Any,
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    import lakeskip

    wh = tmp_path / "wh"
    assert run_pypaimon(pypaimon_python, PYPAIMON_WRITE, str(wh)) == "ok"
    s = lakeskip.connect(str(wh), spark=session.spark)
    name = f"{s.catalog_name}.db.t"

    def same(step: str) -> list[tuple[Any, ...]]:
        py = run_pypaimon(pypaimon_python, PYPAIMON_READ, str(wh), "db.t")["rows"]
        theirs = sorted((r["id"], r["name"], r["n"]) for r in py)
        ours = sorted(tuple(r) for r in session.spark.sql(f"SELECT * FROM {name}").collect())
        assert ours == theirs, step
        assert sorted(tuple(r) for r in s.sql("SELECT * FROM db.t").collect()) == theirs, step
        return ours

    t = s.catalog.get_table("db.t")
    assert {e.file.level for e in t.scan_files()} == {0}
    assert same("pypaimon's level-0 files") == []  # invisible to both until compacted
    s.sql("CALL sys.compact(table => 'db.t')")
    want = {}
    for commit in range(3):
        for i in range(commit * 5, commit * 5 + 12):
            want[i] = (i, f"v{commit}-{i}", commit * 100 + i)
    assert same("after lakeskip's compaction") == sorted(want.values())
    s.sql("INSERT INTO db.t VALUES (3, 'x', -3)")
    s.sql("DELETE FROM db.t WHERE id = 4")
    want[3] = (3, "x", -3)
    del want[4]
    assert same("lakeskip upsert + delete") == sorted(want.values())


def test_lakeskip_first_row_tables_read_the_same_everywhere(
    session: Any,
    paimon_java: Any,
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """``merge-engine = first-row``: lookup writes at levels > 0 (a row whose key is live is
    not written), read by Paimon 0.9 and pypaimon with lakeskip's rows after every step."""
    wh = tmp_path / "warehouse"
    session.sql(
        "CREATE TABLE fr (id BIGINT, s STRING, dt STRING, PRIMARY KEY (dt, id) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '2', 'merge-engine' = 'first-row')"
    )

    def check(step: str, want: set[tuple[str, str, str]]) -> None:
        ours = sorted((str(r[0]), r[1], r[2]) for r in session.sql("SELECT * FROM fr").collect())
        assert ours == sorted(want), f"{step}: lakeskip"
        (res,) = paimon_java(wh, {"op": "read", "table": "default.fr", "queries": []})
        assert sorted(tuple(r) for r in res["rows"]) == ours, f"{step}: Paimon 0.9 differs"
        py = run_pypaimon(pypaimon_python, PYPAIMON_READ, str(wh), "default.fr")
        theirs = sorted((str(r["id"]), r["s"], r["dt"]) for r in py["rows"])
        assert theirs == ours, f"{step}: pypaimon differs"

    model: dict[tuple[str, str], str] = {}
    for w in range(4):
        ids = range(w * 3, w * 3 + 8)
        session.sql(
            "INSERT INTO fr VALUES " + ", ".join(f"({i}, 'w{w}-{i}', 'p{i % 2}')" for i in ids)
        )
        for i in ids:
            model.setdefault((str(i), f"p{i % 2}"), f"w{w}-{i}")
        check(f"write {w}", {(k, v, p) for (k, p), v in model.items()})
    session.sql("CALL sys.compact(table => 'fr')")
    check("compaction", {(k, v, p) for (k, p), v in model.items()})
