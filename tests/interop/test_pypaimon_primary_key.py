"""Primary-key tables between lakeskip and pypaimon 2.1 (its own virtualenv).

lakeskip writes upserts and deletes (``-D`` versions) and pypaimon's merge-on-read returns
the same rows as lakeskip's; pypaimon writes upserts and lakeskip reads the latest row per
key through the Spark catalog and through the temp-view path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.interop.reads import json_keys, pypaimon_rows
from tests.interop.test_pypaimon import pypaimon_python, run_pypaimon  # noqa: F401
from tests.pk_tables import write_pk

from lakeskip.catalog import Catalog
from lakeskip.catalog.pk.primary_key import RowKind
from lakeskip.types import BIGINT, INT, STRING, RowType

pytestmark = pytest.mark.interop

ROW = RowType.of(("id", BIGINT), ("dt", STRING), ("name", STRING), ("n", INT))

WRITE_SCRIPT = """
    import json, sys
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema
    cat = CatalogFactory.create({"warehouse": sys.argv[1]})
    cat.create_database("db", False)
    pa_schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                           pa.field("dt", pa.string(), nullable=False),
                           ("name", pa.string()), ("n", pa.int32())])
    cat.create_table("db.t", Schema.from_pyarrow_schema(
        pa_schema, partition_keys=["dt"], primary_keys=["id", "dt"],
        options={"bucket": "3"}), False)
    t = cat.get_table("db.t")
    for commit in range(3):
        rows = [{"id": i, "dt": f"d{i % 2}", "name": f"v{commit}-{i}", "n": commit * 100 + i}
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


def test_pypaimon_reads_lakeskip_upserts_and_deletes(
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table(
        "db.pk", ROW, partition_keys=["dt"], options={"primary-key": "id,dt", "bucket": "3"}
    )
    latest: dict[tuple[Any, ...], dict[str, Any] | None] = {}
    for w in range(3):
        rows = [
            {"id": i, "dt": f"d{i % 2}", "name": f"w{w}-{i}", "n": w * 1000 + i}
            for i in range(w * 20, w * 20 + 50)
        ]
        write_pk(t, rows, RowKind.INSERT, f"w{w}", row_type=ROW)
        latest.update({(r["id"], r["dt"]): r for r in rows})
        gone = [r for r in rows if r["id"] % 7 == w]
        write_pk(t, gone, RowKind.DELETE, f"d{w}", row_type=ROW)
        latest.update({(r["id"], r["dt"]): None for r in gone})
    want = [r for r in latest.values() if r is not None]
    got = pypaimon_rows(pypaimon_python, wh, "db.pk")
    assert json_keys(got) == json_keys(want)
    # after a full compaction: one sorted run per bucket at the top level (5)
    from tests.unit.procedures.test_sort_rewrite import LocalExecutor

    from lakeskip.procedures.compact import Compact

    Compact().run(
        catalog=cat, executor=LocalExecutor(), arguments={"table": "db.pk"}, default_database="db"
    )
    assert {e.file.level for e in t.scan_files()} == {5}
    got = pypaimon_rows(pypaimon_python, wh, "db.pk")
    assert json_keys(got) == json_keys(want)


def test_lakeskip_reads_pypaimon_primary_key_table(
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
    spark: Any,
) -> None:
    import lakeskip

    wh = str(tmp_path / "wh")
    assert run_pypaimon(pypaimon_python, WRITE_SCRIPT, wh) == "ok"
    want: dict[int, dict[str, Any]] = {}
    for commit in range(3):
        for i in range(commit * 5, commit * 5 + 12):
            want[i] = {"id": i, "dt": f"d{i % 2}", "name": f"v{commit}-{i}", "n": commit * 100 + i}
    session = lakeskip.connect(wh, spark=spark)
    t = session.catalog.get_table("db.t")
    assert t.schema.primary_keys == ("id", "dt")
    name = f"{session.catalog_name}.db.t"
    got = [r.asDict() for r in spark.sql(f"SELECT * FROM {name}").collect()]
    assert json_keys(got) == json_keys(list(want.values()))
    hits = spark.sql(f"SELECT id, n FROM {name} WHERE n >= 200").collect()
    assert sorted(tuple(r) for r in hits) == sorted(
        (r["id"], r["n"]) for r in want.values() if r["n"] >= 200
    )
    # the temp-view path (no catalog): a window per key over the same files
    from lakeskip.spark.read.query import table_view

    merged = table_view(spark, t, t.scan_files())
    assert json_keys([r.asDict() for r in merged.collect()]) == json_keys(list(want.values()))


def test_pypaimon_reads_a_primary_key_table_after_merge(
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
    spark: Any,
) -> None:
    """MERGE INTO writes +U / -D / +I versions in one snapshot; pypaimon's merge-on-read
    returns the rows lakeskip returns."""
    import lakeskip

    wh = str(tmp_path / "wh")
    session = lakeskip.connect(wh, spark=spark)
    session.sql("CREATE DATABASE db")
    session.sql(
        "CREATE TABLE db.m (id BIGINT, dt STRING, name STRING, n INT, "
        "PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) WITH ('bucket' = '3')"
    )
    session.sql(
        "INSERT INTO db.m SELECT id, concat('d', id % 2), concat('v', id), CAST(id AS INT) "
        "FROM range(0, 40)"
    )
    session.sql(
        "INSERT INTO db.m SELECT id, concat('d', id % 2), concat('w', id), CAST(id AS INT) "
        "FROM range(30, 50)"
    )
    session.sql(
        "MERGE INTO db.m USING (SELECT id, concat('d', id % 2) AS dt, id * 10 AS n "
        "FROM range(20, 60)) s ON m.id = s.id AND m.dt = s.dt "
        "WHEN MATCHED AND s.id % 3 = 0 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET n = s.n, name = concat(m.name, '!') "
        "WHEN NOT MATCHED THEN INSERT (id, dt, name, n) VALUES (s.id, s.dt, 'new', s.n) "
        "WHEN NOT MATCHED BY SOURCE AND m.id < 5 THEN DELETE"
    )
    want: dict[int, dict[str, Any]] = {}
    for i in range(50):
        want[i] = {"id": i, "dt": f"d{i % 2}", "name": f"{'v' if i < 30 else 'w'}{i}", "n": i}
    for i in range(20, 60):
        if i in want and i % 3 == 0:
            del want[i]
        elif i in want:
            want[i] = {**want[i], "n": i * 10, "name": want[i]["name"] + "!"}
        else:
            want[i] = {"id": i, "dt": f"d{i % 2}", "name": "new", "n": i * 10}
    for i in range(5):
        del want[i]
    got = [r.asDict() for r in session.sql("SELECT * FROM db.m").collect()]
    assert json_keys(got) == json_keys(list(want.values()))
    t = session.catalog.get_table("db.m")
    snaps = t.list_snapshots()
    # the MERGE is one snapshot (3); what follows is the compaction after it (5 runs in a
    # bucket: universal compaction's trigger), which pypaimon then reads through
    assert snaps[2].id == 3 and snaps[2].commit_kind.value != "COMPACT"
    assert all(s.commit_kind.value == "COMPACT" for s in snaps[3:])
    got = pypaimon_rows(pypaimon_python, wh, "db.m")
    assert json_keys(got) == json_keys(list(want.values()))
