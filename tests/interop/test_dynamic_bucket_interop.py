"""Dynamic-bucket primary-key tables (``bucket = -1``, the default) between lakeskip, Paimon
0.9 (Java) and pypaimon 2.1: both read lakeskip's table after upserts, DELETE, UPDATE and
compaction; Paimon's own HashBucketAssigner writes into it from lakeskip's HASH index and
pypaimon writes one lakeskip then reads and writes, a key staying in one bucket throughout."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.interop.reads import java_rows, lakeskip_rows, pypaimon_rows
from tests.interop.test_pypaimon import pypaimon_python, run_pypaimon  # noqa: F401

pytestmark = pytest.mark.interop


def _buckets_of_keys(table: Any, key: str) -> dict[Any, set[int]]:
    """(partition, key) -> buckets of the live files holding a version of it."""
    out: dict[Any, set[int]] = defaultdict(set)
    for e in table.scan_files():
        with table.file_io.open_input(table.data_file_path(e)) as f:
            data = pq.read_table(f, columns=[f"_KEY_{key}"])
        for k in data.column(0).to_pylist():
            out[(e.partition, k)].add(e.bucket)
    return out


def test_paimon_java_reads_and_writes_a_lakeskip_dynamic_bucket_table(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    session.sql(
        "CREATE TABLE t (id BIGINT, s STRING, v INT, dt STRING, PRIMARY KEY (dt, id) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('dynamic-bucket.target-row-num' = '5', "
        "'file-index.bloom-filter.columns' = 's')"
    )
    for w in range(3):
        values = ", ".join(
            f"({i}, 's{w}-{i}', {w * 100 + i}, 'p{i % 2}')" for i in range(w * 8, w * 8 + 20)
        )
        session.sql(f"INSERT INTO t VALUES {values}")
    session.sql("DELETE FROM t WHERE v % 5 = 0")
    session.sql("UPDATE t SET s = upper(s) WHERE id < 6")
    table = session.table("t").table
    assert table.schema.options["bucket"] == "-1"
    assert len({e.bucket for e in table.scan_files()}) >= 4
    ours = lakeskip_rows(session, "SELECT id, s, v, dt FROM t")
    assert java_rows(paimon_java, wh, "default.t") == ours
    # Paimon's HashBucketAssigner, loading lakeskip's HASH index, upserts old and new keys
    rows = [[i, f"j{i}", 7000 + i, f"p{i % 2}"] for i in range(30, 50)]
    paimon_java(wh, {"op": "write", "table": "default.t", "rows": rows})
    ours = lakeskip_rows(session, "SELECT id, s, v, dt FROM t")
    assert [r for r in ours if r[1] == "j45"] == [["45", "j45", "7045", "p1"]]
    table = session.table("t").table
    spread = _buckets_of_keys(table, "id")
    assert all(len(b) == 1 for b in spread.values()), spread
    # lakeskip writes again over Paimon's index: keys still in one bucket
    session.sql("INSERT INTO t SELECT id, 'k', 1, concat('p', id % 2) FROM range(40, 70)")
    spread = _buckets_of_keys(session.table("t").table, "id")
    assert all(len(b) == 1 for b in spread.values()), spread
    ours = lakeskip_rows(session, "SELECT id, s, v, dt FROM t")
    assert java_rows(paimon_java, wh, "default.t") == ours
    session.sql("CALL sys.compact(table => 't')")
    assert java_rows(paimon_java, wh, "default.t") == ours


def test_pypaimon_reads_lakeskip_dynamic_bucket_table(
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
    spark: Any,
) -> None:
    import lakeskip

    wh = str(tmp_path / "wh")
    session = lakeskip.connect(wh, spark=spark)
    session.sql("CREATE DATABASE db")
    session.sql(
        "CREATE TABLE db.d (id BIGINT, dt STRING, name STRING, n INT, "
        "PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) "
        "WITH ('dynamic-bucket.target-row-num' = '6', 'deletion-vectors.enabled' = 'true')"
    )
    session.sql(
        "INSERT INTO db.d SELECT id, concat('d', id % 2), concat('v', id), CAST(id AS INT) "
        "FROM range(0, 40)"
    )
    session.sql(
        "INSERT INTO db.d SELECT id, concat('d', id % 2), concat('w', id), CAST(id AS INT) "
        "FROM range(30, 50)"
    )
    session.sql("DELETE FROM db.d WHERE n % 7 = 0")
    want = [r.asDict() for r in session.sql("SELECT * FROM db.d").collect()]
    assert len(want) == 50 - 8
    got = pypaimon_rows(pypaimon_python, wh, "db.d")
    key = lambda rows: sorted(json.dumps(r, sort_keys=True) for r in rows)  # noqa: E731
    assert key(got) == key(want)


PYPAIMON_DYNAMIC_WRITE = """
    import json, sys
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema
    cat = CatalogFactory.create({"warehouse": sys.argv[1]})
    if sys.argv[2] == "create":
        cat.create_database("db", False)
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
        cat.create_table("db.p", Schema.from_pyarrow_schema(
            schema, primary_keys=["id"],
            options={"bucket": "-1", "dynamic-bucket.target-row-num": "8"}), False)
    t = cat.get_table("db.p")
    lo, hi, tag = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.Table.from_pylist(
        [{"id": i, "name": f"{tag}{i}"} for i in range(lo, hi)], schema=schema))
    c = wb.new_commit()
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    print(json.dumps("ok"))
"""


def test_lakeskip_reads_and_writes_a_pypaimon_dynamic_bucket_table(
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
    spark: Any,
) -> None:
    import lakeskip

    wh = str(tmp_path / "wh")
    assert (
        run_pypaimon(pypaimon_python, PYPAIMON_DYNAMIC_WRITE, wh, "create", "0", "30", "a") == "ok"
    )
    session = lakeskip.connect(wh, spark=spark)
    table = session.catalog.get_table("db.p")
    assert table.schema.options["bucket"] == "-1"
    assert len({e.bucket for e in table.scan_files()}) >= 4  # pypaimon grew buckets
    want = {i: f"a{i}" for i in range(30)}

    def ours() -> dict[int, str]:
        return {r[0]: r[1] for r in session.sql("SELECT id, name FROM db.p").collect()}

    assert ours() == want
    # lakeskip upserts over pypaimon's HASH index, then pypaimon over lakeskip's
    session.sql("INSERT INTO db.p SELECT id, concat('b', id) FROM range(20, 45)")
    want.update({i: f"b{i}" for i in range(20, 45)})
    assert ours() == want
    assert (
        run_pypaimon(pypaimon_python, PYPAIMON_DYNAMIC_WRITE, wh, "append", "40", "60", "c") == "ok"
    )
    want.update({i: f"c{i}" for i in range(40, 60)})
    assert ours() == want
    spread = _buckets_of_keys(session.catalog.get_table("db.p"), "id")
    assert all(len(b) == 1 for b in spread.values()), spread
    got = pypaimon_rows(pypaimon_python, wh, "db.p")
    assert {r["id"]: r["name"] for r in got} == want
