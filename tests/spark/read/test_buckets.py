"""Fixed-bucket append tables through Spark: INSERT places rows by Paimon's bucket function,
a point lookup on the bucket key reads one bucket's files, results equal plain Spark."""

from __future__ import annotations

import os
import re
from typing import Any

from lakeskip.catalog.format.bucket import bucket_ids, bucket_of
from lakeskip.spark import input_files
from lakeskip.types import BIGINT, STRING

ROWS = (
    "SELECT /*+ REPARTITION(3) */ id, concat('c', CAST(id % 37 AS STRING)) AS customer, "
    "CAST(id % 101 AS INT) AS amount FROM range(0, 3000)"
)


def _bucket_of_path(path: str) -> int:
    m = re.search(r"/bucket-(\d+)/", path)
    assert m is not None, path
    return int(m.group(1))


def _create(session: Any, key: str) -> Any:
    session.sql(
        "CREATE TABLE db.orders (id BIGINT, customer STRING, amount INT) "
        f"WITH ('bucket' = '8', 'bucket-key' = '{key}')"
    )
    session.sql(f"INSERT INTO db.orders {ROWS}")
    session.sql(f"INSERT INTO db.orders {ROWS.replace('range(0, 3000)', 'range(3000, 4000)')}")
    return session.table("db.orders")


def test_point_lookup_on_bucket_key_reads_one_bucket(session: Any) -> None:
    session.sql("CREATE DATABASE db")
    handle = _create(session, "id")
    files = handle.files()
    assert {_bucket_of_path(p) for p in files} == set(range(8))
    # one task per bucket after the (partition, bucket) shuffle: one file per bucket per INSERT
    assert len(files) == 16
    entries = handle.table.scan_files()
    assert {e.total_buckets for e in entries} == {8}
    plain = session.spark.read.parquet(*files)
    for f in files:  # every row sits in the bucket Paimon's function gives it
        ids = session.spark.read.parquet(f).toArrow()["id"]
        assert set(bucket_ids([ids], [BIGINT], 8).tolist()) == {_bucket_of_path(f)}
    for where, keys in (("id = 1234", [1234]), ("id IN (7, 3999, 5000)", [7, 3999, 5000])):
        df = session.sql(f"SELECT * FROM db.orders WHERE {where}")
        got = {os.path.basename(p) for p in input_files(df)}
        want = {bucket_of((k,), (BIGINT,), 8) for k in keys}
        assert {_bucket_of_path(p) for p in input_files(df)} <= want
        assert got, where
        assert session.last_reports[0].skipped_by_bucket == 16 - 2 * len(want)
        assert sorted(map(tuple, df.collect())) == sorted(map(tuple, plain.where(where).collect()))
    rows = session.sql("EXPLAIN PRUNING SELECT * FROM db.orders WHERE id = 1234").collect()
    metrics = {r["metric"]: r["value"] for r in rows}
    # bucket of 1234 keeps one file per INSERT; stats then skip the 3000..3999 one
    assert metrics["files skipped by bucket"] == "14" and metrics["files kept"] == "1"


def test_string_key_and_filters_that_keep_every_bucket(session: Any) -> None:
    session.sql("CREATE DATABASE db")
    handle = _create(session, "customer")
    plain = session.spark.read.parquet(*handle.files())
    df = session.sql("SELECT * FROM db.orders WHERE customer = 'c5'")
    assert {_bucket_of_path(p) for p in input_files(df)} == {bucket_of(("c5",), (STRING,), 8)}
    assert sorted(map(tuple, df.collect())) == sorted(
        map(tuple, plain.where("customer = 'c5'").collect())
    )
    ddl = session.sql("SHOW CREATE TABLE db.orders").collect()[0][0]
    assert "'bucket' = '8'" in ddl and "'bucket-key' = 'customer'" in ddl, ddl
    for where in ("customer > 'c5'", "amount = 3", "customer = 'c5' OR amount = 3"):
        df = session.sql(f"SELECT * FROM db.orders WHERE {where}")
        assert sorted(map(tuple, df.collect())) == sorted(map(tuple, plain.where(where).collect()))
        assert session.last_reports[0].skipped_by_bucket == 0, where


def test_compaction_keeps_rows_in_their_buckets(session: Any) -> None:
    session.sql("CREATE DATABASE db")
    handle = _create(session, "id")
    before = sorted(map(tuple, session.sql("SELECT * FROM db.orders").collect()))
    r = session.sql("CALL sys.compact('db.orders')").collect()[0]
    assert (r["files_before"], r["files_after"]) == (16, 8), "one file per bucket"
    session.sql(
        "CALL sys.compact(table => 'db.orders', order_strategy => 'zorder', "
        "order_by => 'customer,amount')"
    )
    files = handle.files()
    for f in files:
        ids = session.spark.read.parquet(f).toArrow()["id"]
        assert set(bucket_ids([ids], [BIGINT], 8).tolist()) == {_bucket_of_path(f)}
    assert sorted(map(tuple, session.sql("SELECT * FROM db.orders").collect())) == before
    df = session.sql("SELECT * FROM db.orders WHERE id = 77")
    assert {_bucket_of_path(p) for p in input_files(df)} == {bucket_of((77,), (BIGINT,), 8)}
    assert [r["id"] for r in df.collect()] == [77]
    # indexes added later go beside the files in their bucket directories
    session.sql(
        "ALTER TABLE db.orders SET TBLPROPERTIES ('file-index.bloom-filter.columns' = 'customer',"
        " 'file-index.in-manifest-threshold' = '1 b')"
    )
    session.sql("CALL sys.rewrite_file_index('db.orders')")
    entries = handle.table.refresh().scan_files()
    assert all(e.file.index_file_name for e in entries)
    for e in entries:
        assert handle.table.file_io.exists(
            f"{handle.table.data_file_dir(e)}/{e.file.index_file_name}"
        )
        assert handle.table.data_file_dir(e).endswith(f"/bucket-{e.bucket}")
    df = session.sql("SELECT * FROM db.orders WHERE id = 77 AND customer = 'c3'")
    assert [r["id"] for r in df.collect()] == [77]


def test_date_decimal_string_key_through_sql_literals(session: Any) -> None:
    session.sql("CREATE DATABASE db")
    session.sql(
        "CREATE TABLE db.k (d DATE, m DECIMAL(10,2), s STRING, v INT) "
        "WITH ('bucket' = '5', 'bucket-key' = 'd,m,s')"
    )
    session.sql(
        "INSERT INTO db.k SELECT /*+ REPARTITION(2) */ date_add(DATE '2024-01-01', CAST(id % 9 AS INT)), "
        "CAST(id % 7 AS DECIMAL(10,2)) / 4, concat('s', CAST(id % 4 AS STRING)), CAST(id AS INT) "
        "FROM range(0, 600)"
    )
    plain = session.spark.read.parquet(*session.table("db.k").files())
    wheres = [
        "d = DATE '2024-01-03' AND m = 0.25 AND s = 's1'",
        "d = '2024-01-03' AND m = 0.250 AND s = 's1'",
        "d = DATE '2024-01-05' AND m IN (0.5, 1.25, 7) AND s IN ('s0', 's2')",
        "d = DATE '2024-01-05' AND m = 1 AND s = 's2'",
        "(d = DATE '2024-01-02' AND m = 0.75 AND s = 's3') OR (d = DATE '2024-01-04' AND m = 0 AND s = 's0')",
        "d = DATE '2024-01-03' AND m = 0.251 AND s = 's1'",
    ]
    pruned = 0
    for where in wheres:
        df = session.sql(f"SELECT * FROM db.k WHERE {where}")
        got = sorted(map(tuple, df.collect()))
        assert got == sorted(map(tuple, plain.where(where).collect())), where
        # a predicate Spark folds to false (m = 0.251 on DECIMAL(10,2)) plans no scan at all
        reports = session.last_reports
        pruned += bool(reports) and reports[0].skipped_by_bucket > 0
    assert pruned >= 4
