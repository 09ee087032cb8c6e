"""Per-query cost of the Spark catalog without stale answers.

A query through the catalog costs exactly two Python callbacks (``load_table`` during
analysis, ``plan_scan`` while Spark pushes filters down), whatever the settings; and every
query reads the table's newest snapshot: a commit through the catalog, through lakeskip's own
writer, or by another process that never talked to this session (here: a second
:class:`~lakeskip.catalog.Catalog` object writing files and committing on its own) is visible to
the very next query. Results are checked against the rows written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import lakeskip
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.data_writer import DataWriter, WriteSpec
from lakeskip.spark import input_files
from lakeskip.spark.catalog_setup import service_for


@pytest.fixture
def lk(spark: SparkSession, tmp_path: Path) -> Any:
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    assert s.catalog_name == "lakeskip", "javac is installed here: the catalog must be active"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql(
        "CREATE TABLE lakeskip.db.f (id BIGINT, s STRING) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns'='s')"
    )
    return s


def _ids(spark: SparkSession, where: str = "true") -> list[int]:
    rows = spark.sql(f"SELECT id FROM lakeskip.db.f WHERE {where}").collect()
    return sorted(r.id for r in rows)


def _external_commit(warehouse: str, ids: list[int]) -> None:
    """Another writer on the same warehouse: its own Catalog, files and commit."""
    table = Catalog(warehouse).get_table("db.f")
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    data = pa.table(
        {"id": pa.array(ids, pa.int64()), "s": pa.array([f"s{i}" for i in ids], pa.string())}
    )
    table.commit(DataWriter(spec).write_batches(iter([data])))


def test_two_callbacks_per_query(spark: SparkSession, lk: Any) -> None:
    spark.sql("INSERT INTO lakeskip.db.f VALUES (1, 's1'), (2, 's2')")
    spark.sql("INSERT INTO lakeskip.db.f VALUES (3, 's3')")
    service = service_for(spark)
    _ids(spark)  # warm
    # the scan.* time travel settings and the time zone are read from the payload, not
    # fetched back from the JVM: setting them must not add round trips
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        before = service.callback_stats()
        for _ in range(3):
            assert _ids(spark, "s = 's3'") == [3]
        calls = service.callback_stats().since(before).calls
    finally:
        spark.conf.unset("spark.sql.session.timeZone")
    assert {k: v for k, v in calls.items() if v} == {"load_table": 3, "plan_scan": 3}


def test_commits_are_visible_to_the_next_query(spark: SparkSession, lk: Any) -> None:
    spark.sql("INSERT INTO lakeskip.db.f VALUES (1, 's1')")
    assert _ids(spark) == [1]
    spark.sql("INSERT INTO lakeskip.db.f VALUES (2, 's2')")
    assert _ids(spark) == [1, 2], "INSERT through spark.sql"
    spark.createDataFrame([(3, "s3")], "id BIGINT, s STRING").writeTo("lakeskip.db.f").append()
    assert _ids(spark) == [1, 2, 3], "DataFrameWriterV2.append"
    lk.write(spark.createDataFrame([(4, "s4")], "id BIGINT, s STRING"), "db.f")
    assert _ids(spark) == [1, 2, 3, 4], "lakeskip's own writer"
    assert _ids(spark, "s = 's4'") == [4]
    spark.sql("INSERT OVERWRITE lakeskip.db.f VALUES (5, 's5')")
    assert _ids(spark) == [5], "overwrite: the replaced files are gone at once"


def test_external_commit_is_visible_to_the_next_query(spark: SparkSession, lk: Any) -> None:
    spark.sql("INSERT INTO lakeskip.db.f VALUES (1, 's1')")
    assert _ids(spark, "s = 's1'") == [1]
    warehouse = str(lk.catalog.warehouse)
    _external_commit(warehouse, [7, 8])
    assert _ids(spark) == [1, 7, 8]
    assert _ids(spark, "s = 's8'") == [8], "the new file is planned and its index read"
    df = spark.sql("SELECT id FROM lakeskip.db.f WHERE s = 's8'")
    assert len(input_files(df)) == 1, "the bloom filter skips the other files"
    _external_commit(warehouse, [9])
    assert _ids(spark, "id >= 8") == [8, 9]


def test_session_time_zone_reaches_planning(spark: SparkSession, tmp_path: Path) -> None:
    """The time zone sent with the scan callback is the querying session's: a timestamp
    literal means another instant in another zone, and the files kept must follow."""
    lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql("CREATE TABLE lakeskip.db.ts (id BIGINT, t TIMESTAMP)")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        # one file each, in UTC: 2024-01-01 00:00, 2024-01-01 08:00, 2023-12-31 15:00
        for i, at in enumerate(["2024-01-01 00:00", "2024-01-01 08:00", "2023-12-31 15:00"]):
            spark.sql(f"INSERT INTO lakeskip.db.ts VALUES ({i}, TIMESTAMP '{at}:00')")
        query = "SELECT id FROM lakeskip.db.ts WHERE t = TIMESTAMP '2024-01-01 00:00:00'"
        for zone, expected in [
            ("UTC", [0]),
            ("America/Los_Angeles", [1]),  # UTC-8 in January
            ("Asia/Tokyo", [2]),  # UTC+9
        ]:
            spark.conf.set("spark.sql.session.timeZone", zone)
            df = spark.sql(query)
            assert sorted(r.id for r in df.collect()) == expected, zone
            assert len(input_files(df)) == 1, f"{zone}: min/max keeps the one matching file"
    finally:
        spark.conf.unset("spark.sql.session.timeZone")


def _broadcasts_during(spark: SparkSession, fn: Any) -> int:
    """Broadcast variables created while ``fn`` runs (the ids come from one counter)."""
    sc = spark.sparkContext
    before = sc.broadcast(0)
    fn()
    after = sc.broadcast(0)
    n = int(after._jbroadcast.id()) - int(before._jbroadcast.id()) - 1
    before.unpersist()
    after.unpersist()
    return n


def test_planning_a_query_broadcasts_the_hadoop_conf_once(spark: SparkSession, lk: Any) -> None:
    """Spark's ParquetScan broadcasts the Hadoop configuration each time its reader factory
    is built, and physical planning asks a copy of the scan node again: the catalog's scan
    builds it at most once per query, and a query that needs the same factory as an earlier
    one (same columns, pushed filters, options, SQL and Hadoop settings) reuses it; anything
    that changes the factory builds a new one."""
    spark.sql("INSERT INTO lakeskip.db.f VALUES (1, 's1'), (2, 's2')")

    def planned(query: str) -> int:
        return _broadcasts_during(
            spark, lambda: spark.sql(query)._jdf.queryExecution().executedPlan()
        )

    query = "SELECT count(*) FROM lakeskip.db.f WHERE id >= 7"
    assert planned(query) == 1
    assert spark.sql(query).collect()[0][0] == 0
    assert planned(query) == 0, "the same query again: the factory is reused"
    assert planned("SELECT count(*) FROM lakeskip.db.f WHERE id >= 8") == 1, "another filter"
    assert planned("SELECT s FROM lakeskip.db.f WHERE id >= 7") == 1, "other columns"
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    try:
        assert planned(query) == 1, "a changed SQL setting"
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("lakeskip.test.setting", "1")
    try:
        assert planned(query) == 1, "a changed Hadoop setting"
    finally:
        hadoop.unset("lakeskip.test.setting")
    spark.sql("INSERT INTO lakeskip.db.f VALUES (9, 's9')")
    assert spark.sql(query).collect()[0][0] == 1, "a new file, read with the kept factory"


def test_repeated_query_sees_the_next_commit(spark: SparkSession, lk: Any) -> None:
    """The planner keeps plans per snapshot: the same query text after a commit must plan
    the new snapshot (here committed by another writer)."""
    spark.sql("INSERT INTO lakeskip.db.f VALUES (1, 's1'), (2, 's2')")
    for _ in range(2):
        assert _ids(spark, "s = 's9'") == []
    _external_commit(str(lk.catalog.warehouse), [9])
    assert _ids(spark, "s = 's9'") == [9]
    df = spark.sql("SELECT id FROM lakeskip.db.f WHERE s = 's9'")
    assert len(input_files(df)) == 1, "the new file kept, the others skipped by the bloom filter"
