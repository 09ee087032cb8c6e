"""Plain ``spark.sql`` on a warehouse in an S3 bucket (moto's server): Spark's S3A reads the data
files, lakeskip writes and commits through pyarrow/obstore, both configured by the one set of
``spark.hadoop.fs.s3a.*`` settings (see ``conftest.py``).

* one application: CREATE, INSERT, a pruned SELECT (same rows as a Python oracle, fewer files
  planned), DELETE, MERGE INTO, compaction, snapshot expiry and orphan removal, the objects
  checked in the bucket with boto3, and the Python API on ``s3://`` reading the same table;
* three Spark applications (separate processes) INSERTing into one table at once: every commit
  is there exactly once, one snapshot each.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.s3.conftest import BUCKET, s3a_conf, spark_conf

from lakeskip.catalog import Catalog
from lakeskip.catalog.s3_conf import s3_filesystem
from lakeskip.expressions import EqualTo
from lakeskip.planner.scan import ScanPlanner

pytestmark = pytest.mark.s3


def _keys(endpoint: str, prefix: str) -> list[str]:
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    )
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"] for p in pages for o in p.get("Contents", [])]


def _put(endpoint: str, key: str, body: bytes) -> None:
    import boto3

    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    ).put_object(Bucket=BUCKET, Key=key, Body=body)


def _python_rows(endpoint: str, warehouse: str, table: str) -> list[tuple[Any, ...]]:
    """The table through the Python API on ``s3://``, configured from the same S3A settings."""
    catalog = Catalog(
        warehouse.replace("s3a://", "s3://"), filesystem=s3_filesystem(s3a_conf_only(endpoint))
    )
    t = catalog.get_table(table)
    rows: list[tuple[Any, ...]] = []
    for e in t.scan_files():
        with t.file_io.open_input(t.data_file_path(e)) as f:
            rows += [tuple(r.values()) for r in pq.read_table(f).to_pylist()]
    return sorted(rows)


def s3a_conf_only(endpoint: str) -> dict[str, str]:
    return {k: v for k, v in s3a_conf(endpoint).items() if k != "spark.jars"}


def test_spark_sql_on_a_warehouse_in_a_bucket(spark: Any, s3_endpoint: str) -> None:
    import lakeskip

    prefix = f"wh-{uuid.uuid4().hex[:8]}"
    warehouse = f"s3a://{BUCKET}/{prefix}"
    session = lakeskip.connect(warehouse, spark=spark)
    spark.sql("CREATE DATABASE IF NOT EXISTS lakeskip.db")
    spark.sql(
        "CREATE TABLE lakeskip.db.t (id BIGINT, s STRING, v INT) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns' = 's')"
    )
    for f in range(3):
        spark.sql(
            "INSERT INTO lakeskip.db.t SELECT /*+ REPARTITION(1) */ id, concat('k', id), "
            f"CAST(id % 7 AS INT) FROM range({f * 100}, {f * 100 + 100})"
        )
    oracle = {(i, f"k{i}", i % 7) for i in range(300)}
    data = [k for k in _keys(s3_endpoint, f"{prefix}/db.db/t/") if k.endswith(".parquet")]
    assert len(data) == 3, "the data files are objects in the bucket"

    got = spark.sql("SELECT id, s, v FROM lakeskip.db.t WHERE s = 'k150'").collect()
    assert [tuple(r) for r in got] == [(150, "k150", 3)]
    t = session.catalog.get_table("db.t")
    assert len(ScanPlanner(t).plan(EqualTo("s", "k150")).files) == 1, "pruned to one file of 3"

    spark.sql("DELETE FROM lakeskip.db.t WHERE v = 0 OR id >= 290")
    oracle = {r for r in oracle if r[2] != 0 and r[0] < 290}
    spark.sql(
        "CREATE TABLE lakeskip.db.pk (id BIGINT, v INT) "
        "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '2')"
    )
    spark.sql("INSERT INTO lakeskip.db.pk SELECT id, CAST(id AS INT) FROM range(0, 20)")
    spark.sql(
        "MERGE INTO lakeskip.db.pk AS p USING (SELECT id, CAST(id * 10 AS INT) AS v "
        "FROM range(10, 30)) AS u ON p.id = u.id WHEN MATCHED THEN UPDATE SET v = u.v "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (u.id, u.v)"
    )
    pk = sorted(tuple(r) for r in spark.sql("SELECT id, v FROM lakeskip.db.pk").collect())
    assert pk == [(i, i if i < 10 else i * 10) for i in range(30)]

    spark.sql("CALL lakeskip.sys.compact(table => 'db.t')")
    spark.sql("CALL lakeskip.sys.expire_snapshots(table => 'db.t', retain_last => 1)")
    t = session.catalog.get_table("db.t")
    assert [s.id for s in t.list_snapshots()] == [t.latest_snapshot().id]
    assert len(t.scan_files()) == 1, "compacted to one file"
    live = [k for k in _keys(s3_endpoint, f"{prefix}/db.db/t/") if k.endswith(".parquet")]
    assert len(live) == 1, f"expiry deleted the files only expired snapshots used: {live}"

    stray = f"{prefix}/db.db/t/bucket-0/data-{uuid.uuid4()}-0.parquet"
    _put(s3_endpoint, stray, b"an orphan: a failed write's file")
    time.sleep(2.5)  # older_than has whole seconds and may not be in the future
    now = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    r = spark.sql(
        f"CALL lakeskip.sys.remove_orphan_files(table => 'db.t', older_than => '{now}')"
    ).collect()[0]
    assert r["files_deleted"] == 1 and stray not in _keys(s3_endpoint, stray)

    rows = {tuple(r) for r in spark.sql("SELECT id, s, v FROM lakeskip.db.t").collect()}
    assert rows == oracle
    assert _python_rows(s3_endpoint, warehouse, "db.t") == sorted(oracle), (
        "the Python API on s3:// reads the table Spark wrote on s3a://"
    )


WRITER = """
import json, sys
import lakeskip
from lakeskip.spark.front.builder import build_spark_session
conf, warehouse, writer, commits = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spark = build_spark_session(master="local[1]", conf=conf)
lakeskip.connect(warehouse, spark=spark)
for c in range(commits):
    spark.sql(f"INSERT INTO lakeskip.db.c VALUES ({writer}, {c})")
spark.stop()
"""
WRITERS, COMMITS = 3, 4


def test_three_spark_applications_commit_to_one_table(
    spark: Any, s3_endpoint: str, tmp_path: Path
) -> None:
    import lakeskip

    warehouse = f"s3a://{BUCKET}/wh-{uuid.uuid4().hex[:8]}"
    session = lakeskip.connect(warehouse, spark=spark)
    spark.sql("CREATE DATABASE IF NOT EXISTS lakeskip.db")
    spark.sql(
        "CREATE TABLE lakeskip.db.c (writer INT, c INT) "
        "TBLPROPERTIES ('commit.min-retry-wait' = '5 ms')"
    )
    procs = []
    for w in range(WRITERS):
        conf = spark_conf(s3_endpoint, tmp_path / f"w{w}")
        conf["spark.driver.memory"] = "512m"
        cmd = [sys.executable, "-c", textwrap.dedent(WRITER), json.dumps(conf), warehouse]
        cmd += [str(w), str(COMMITS)]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outs = [p.communicate(timeout=900) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err.decode()[-3000:]
    t = session.catalog.get_table("db.c")
    assert [s.id for s in t.list_snapshots()] == list(range(1, WRITERS * COMMITS + 1))
    rows = sorted(tuple(r) for r in spark.sql("SELECT writer, c FROM lakeskip.db.c").collect())
    assert rows == [(w, c) for w in range(WRITERS) for c in range(COMMITS)], "each once"
