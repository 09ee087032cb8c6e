"""The Spark catalog from a user's own SparkSession: spark.sql, DataFrame API, writers, CALL.

The session is the shared test session, built without lakeskip's jar: ``lakeskip.connect(
warehouse, spark=spark)`` attaches the catalog at run time (ADD JAR + conf), as a user's
notebook would. Results are checked against plain Spark over all the table's files; pruning
by the files the scan reads (:func:`lakeskip.spark.input_files`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import lakeskip
import lakeskip.spark
from lakeskip.spark import input_files


@pytest.fixture
def lk(spark: SparkSession, tmp_path: Path) -> Any:
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    assert s.catalog_name == "lakeskip", "javac is installed here: the catalog must be active"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    return s


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _all_files(session: Any, table: str) -> list[str]:
    return [f"file://{p}" if p.startswith("/") else p for p in session.table(table).files()]


def _events(spark: SparkSession) -> None:
    spark.sql(
        "CREATE TABLE lakeskip.db.events (id BIGINT, cat STRING, v DOUBLE, p STRING) "
        "PARTITIONED BY (p) TBLPROPERTIES ('file-index.bloom-filter.columns'='cat')"
    )
    # one INSERT per file: ids 0..39, 100..139, ...; partitions x, y, x, NULL
    for i, p in enumerate(["'x'", "'y'", "'x'", "NULL"]):
        spark.sql(
            f"INSERT INTO lakeskip.db.events SELECT id, concat('c', CAST(id AS STRING)), "
            f"id * 1.5, {p} FROM range({i * 100}, {i * 100 + 40}, 1, 1)"
        )


def _plain(spark: SparkSession, session: Any) -> Any:
    """The same table read by plain Spark: every file, no lakeskip."""
    files = _all_files(session, "db.events")
    df = spark.read.schema("id BIGINT, cat STRING, v DOUBLE").parquet(*files)
    part = {os.path.basename(os.path.dirname(os.path.dirname(f))): None for f in files}
    assert len(part) == 3, f"expected 3 partition directories, got {sorted(part)}"
    with_p = F.regexp_extract(F.input_file_name(), r"/p=([^/]*)/bucket-", 1)
    return df.withColumn("p", F.when(with_p == "__DEFAULT_PARTITION__", None).otherwise(with_p))


def test_spark_sql_prunes_and_matches_plain_spark(spark: SparkSession, lk: Any) -> None:
    _events(spark)
    plain = _plain(spark, lk)
    plain.createOrReplaceTempView("plain_events")
    cases = {
        "id = 105": 1,  # stats
        "cat = 'c205'": 1,  # bloom filter / stats
        "p = 'y'": 1,  # partition
        "p IS NULL": 1,  # the NULL partition
        "id = 5 OR id = 305": 2,
        "(id = 5 AND upper(cat) = 'C5') OR id = 305": 2,  # Spark's toV1 would lose id = 5
        "upper(cat) = 'C5'": 4,  # nothing to translate: every file
        "id < 0": 0,
    }
    for where, files in cases.items():
        df = spark.sql(f"SELECT * FROM lakeskip.db.events WHERE {where}")
        want = _rows(spark.sql(f"SELECT id, cat, v, p FROM plain_events WHERE {where}"))
        assert _rows(df) == want, f"{where}: rows differ from plain Spark"
        assert len(input_files(df)) == files, (
            f"{where}: read {input_files(df)}, expected {files} files"
        )


def test_dataframe_api_join_and_explain(spark: SparkSession, lk: Any, tmp_path: Path) -> None:
    _events(spark)
    with lakeskip.spark.pruning_reports(spark) as reports:
        df = spark.table("lakeskip.db.events").filter("id = 105")
        assert [r.id for r in df.collect()] == [105]
    assert [(r.table, r.kept_files, r.total_files) for r in reports] == [("db.events", 1, 4)]
    assert len(input_files(df)) == 1, "spark.table(...).filter(...) should read one file"
    spark.range(100, 110).withColumnRenamed("id", "k").write.parquet(str(tmp_path / "dim"))
    spark.read.parquet(str(tmp_path / "dim")).createOrReplaceTempView("dim")
    joined = spark.sql(
        "SELECT e.id, d.k FROM lakeskip.db.events e JOIN dim d ON e.id = d.k WHERE e.cat = 'c107'"
    )
    assert _rows(joined) == [(107, 107)]
    plan = "\n".join(
        r[0]
        for r in spark.sql("EXPLAIN SELECT id FROM lakeskip.db.events WHERE id = 105").collect()
    )
    assert "PushedFilters: [IsNotNull(id), EqualTo(id,105)]" in plan, plan
    assert "LakeFileIndex(1 files)" in plan or "LakeFileIndex" in plan, plan
    assert "ReadSchema: struct<id:bigint>" in plan, "column pruning as for plain Parquet"


def _snapshots(lk: Any, table: str) -> int:
    return len(lk.catalog.get_table(table).list_snapshots())


def test_writers_reach_the_table_with_one_commit_each(spark: SparkSession, lk: Any) -> None:
    spark.sql("CREATE TABLE lakeskip.db.w (id BIGINT, p STRING) PARTITIONED BY (p)")
    spark.sql("INSERT INTO lakeskip.db.w VALUES (1, 'a'), (2, 'b')")
    df = spark.createDataFrame([(3, "a")], "id BIGINT, p STRING")
    df.writeTo("lakeskip.db.w").append()
    df.write.insertInto("lakeskip.db.w")
    df.write.mode("append").saveAsTable("lakeskip.db.w")
    assert _snapshots(lk, "db.w") == 4, "one snapshot per write"
    assert _rows(spark.table("lakeskip.db.w")) == [(1, "a"), (2, "b"), (3, "a"), (3, "a"), (3, "a")]
    spark.sql("INSERT OVERWRITE lakeskip.db.w PARTITION (p = 'a') SELECT 9")
    assert _rows(spark.table("lakeskip.db.w")) == [(2, "b"), (9, "a")]
    spark.createDataFrame([(7, "b")], "id BIGINT, p STRING").writeTo("lakeskip.db.w").overwrite(
        F.col("p") == "b"
    )
    assert _rows(spark.table("lakeskip.db.w")) == [(7, "b"), (9, "a")]
    spark.sql("INSERT OVERWRITE lakeskip.db.w SELECT 1, 'z'")
    assert _rows(spark.table("lakeskip.db.w")) == [(1, "z")]
    assert not any(
        Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")).glob("**/w")
    ), "nothing may be written to Spark's own warehouse"


def test_create_ctas_rtas_and_time_travel(spark: SparkSession, lk: Any) -> None:
    spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, s STRING").writeTo(
        "lakeskip.db.c"
    ).create()
    spark.sql(
        "CREATE TABLE lakeskip.db.c2 TBLPROPERTIES ('file-index.bloom-filter.columns'='s') AS SELECT * FROM lakeskip.db.c WHERE id = 2"
    )
    assert _rows(spark.table("lakeskip.db.c2")) == [(2, "b")]
    assert lk.catalog.get_table("db.c2").schema.options == {"file-index.bloom-filter.columns": "s"}
    spark.createDataFrame([(5, "e")], "id BIGINT, s STRING").writeTo(
        "lakeskip.db.c"
    ).createOrReplace()
    assert _rows(spark.table("lakeskip.db.c")) == [(5, "e")]
    spark.sql("INSERT INTO lakeskip.db.c VALUES (6, 'f')")
    assert _rows(spark.sql("SELECT * FROM lakeskip.db.c VERSION AS OF 1")) == [(5, "e")]
    first = lk.catalog.get_table("db.c").snapshot(1).time_millis
    at_first = spark.sql(f"SELECT * FROM lakeskip.db.c TIMESTAMP AS OF timestamp_millis({first})")
    assert _rows(at_first) == [(5, "e")], "TIMESTAMP AS OF the first commit's time"
    assert _rows(spark.sql("SELECT * FROM lakeskip.db.c")) == [(5, "e"), (6, "f")]
    with pytest.raises(AnalysisException, match="snapshot 9 does not exist"):
        spark.sql("SELECT * FROM lakeskip.db.c VERSION AS OF 9").collect()


def test_ddl_and_procedures(spark: SparkSession, lk: Any) -> None:
    _events(spark)
    spark.sql("ALTER TABLE lakeskip.db.events SET TBLPROPERTIES ('file-index.bitmap.columns'='p')")
    assert lk.catalog.get_table("db.events").schema.options["file-index.bitmap.columns"] == "p"
    spark.sql("ALTER TABLE lakeskip.db.events UNSET TBLPROPERTIES ('file-index.bitmap.columns')")
    assert "file-index.bitmap.columns" not in lk.catalog.get_table("db.events").schema.options
    assert [r.tableName for r in spark.sql("SHOW TABLES IN lakeskip.db").collect()] == ["events"]
    cols = [r.col_name for r in spark.sql("DESCRIBE TABLE lakeskip.db.events").collect()]
    assert cols[:4] == ["id", "cat", "v", "p"]
    positional = spark.sql("CALL lakeskip.sys.rewrite_file_index('db.events')").collect()
    assert positional[0].files_unchanged == 4
    named = spark.sql("CALL lakeskip.sys.compact(table => 'db.events')").collect()
    assert (named[0].files_before, named[0].files_after) == (2, 1), "partition x: 2 files -> 1"
    assert len(lk.table("db.events").files()) == 3
    assert _rows(spark.table("lakeskip.db.events").filter("id = 205")) == [
        (205, "c205", 307.5, "x")
    ]
    spark.sql("DROP TABLE lakeskip.db.events")
    assert not lk.catalog.table_exists("db.events")


def test_errors_are_one_line_and_nothing_is_written(spark: SparkSession, lk: Any) -> None:
    with pytest.raises(AnalysisException) as e:
        spark.sql(
            "CREATE TABLE lakeskip.db.bad (id BIGINT) TBLPROPERTIES ('file-index.bloom-filter.columns'='nope')"
        )
    assert "nope" in str(e.value) and "Traceback" not in str(e.value) and "py4j" not in str(e.value)
    with pytest.raises(AnalysisException, match="unknown procedure"):
        spark.sql("CALL lakeskip.sys.no_such_thing('db.t')")
    # spark_catalog is Spark's own here: USING paimon cannot make a lakeskip table there
    with pytest.raises(AnalysisException, match=r"^USING paimon: Paimon's Spark source is not"):
        spark.sql("CREATE TABLE plain_pm (id BIGINT) USING paimon")
    assert not spark.catalog.tableExists("plain_pm")
    spark.sql("CREATE TABLE lakeskip.db.d (id BIGINT, p STRING) PARTITIONED BY (p)")
    spark.sql("INSERT INTO lakeskip.db.d VALUES (1, 'a')")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:  # dynamic partition overwrite works (tests/spark/catalog/test_spark_ddl.py)
        spark.sql("INSERT OVERWRITE lakeskip.db.d SELECT 1, 'a'")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    with pytest.raises(AnalysisException, match="partition columns"):
        spark.createDataFrame([(3, "a")], "id BIGINT, p STRING").writeTo("lakeskip.db.d").overwrite(
            F.col("id") == 1
        )
    assert _rows(spark.table("lakeskip.db.d")) == [(1, "a")], "failed writes must change nothing"
    assert spark.range(1).count() == 1, "the session survives"


def test_session_sql_reports_through_the_catalog(spark: SparkSession, lk: Any) -> None:
    _events(spark)
    df = lk.sql("SELECT id FROM db.events WHERE id = 105")
    assert [r.id for r in df.collect()] == [105]
    [report] = lk.last_reports
    assert (report.table, report.kept_files, report.total_files) == ("db.events", 1, 4)
    lk.sql("CREATE TABLE db.paimon_style (id BIGINT) WITH ('file-index.bloom-filter.columns'='id')")
    lk.sql("CALL sys.rewrite_file_index('db.paimon_style')")
    assert lk.catalog.table_exists("db.paimon_style")


def test_as_spark_catalog_beside_parquet_tables(spark: SparkSession, tmp_path: Path) -> None:
    from lakeskip.catalog import Catalog
    from lakeskip.spark.front.catalog_setup import SESSION_CATALOG_CLASS, attach_catalog

    wh = str(tmp_path / "wh")
    service = attach_catalog(spark, wh)
    assert service is not None
    service.bind_catalog("spark_catalog", wh)
    spark.conf.set("spark.sql.catalog.spark_catalog", SESSION_CATALOG_CLASS)
    try:
        spark.sql("CREATE TABLE lk_sc (id BIGINT, s STRING) USING lakeskip")
        spark.sql("INSERT INTO lk_sc VALUES (1, 'a'), (2, 'b')")
        spark.sql("CREATE TABLE pq_sc (id BIGINT, name STRING) USING parquet")
        spark.sql("INSERT INTO pq_sc VALUES (2, 'two')")
        joined = spark.sql("SELECT l.id, p.name FROM lk_sc l JOIN pq_sc p ON l.id = p.id")
        assert _rows(joined) == [(2, "two")]
        assert Catalog(wh).table_exists("default.lk_sc"), "USING lakeskip creates a lakeskip table"
        assert not Catalog(wh).table_exists("default.pq_sc"), "USING parquet stays Spark's"
        # as typed by Paimon users (Paimon's own Spark source is absent: lakeskip writes
        # Paimon's layout)
        spark.sql("CREATE TABLE pm_sc (id BIGINT, s STRING) USING paimon PARTITIONED BY (s)")
        spark.sql("INSERT INTO pm_sc VALUES (1, 'x'), (3, 'y')")
        assert _rows(spark.sql("SELECT * FROM pm_sc WHERE id > 1")) == [(3, "y")]
        assert Catalog(wh).get_table("default.pm_sc").schema.partition_keys == ("s",)
        df = spark.table("lk_sc").filter("id = 2")
        assert _rows(df) == [(2, "b")] and len(input_files(df)) == 1
        before = service.callback_stats()
        assert _rows(spark.table("lk_sc").filter("id = 2")) == [(2, "b")]
        calls = service.callback_stats().since(before).calls
        assert not any(calls.values()), f"repeated on an unchanged table: no callback, {calls}"
        # Paimon's system tables through spark_catalog too
        snaps = spark.sql("SELECT snapshot_id, total_record_count FROM `lk_sc$snapshots`")
        assert _rows(snaps) == [(1, 2)]
        spark.sql("CALL sys.rewrite_file_index('default.lk_sc')")
        names = {r.tableName for r in spark.sql("SHOW TABLES").collect()}
        assert {"lk_sc", "pq_sc"} <= names
        spark.sql("CREATE DATABASE sc_db")
        spark.sql("CREATE TABLE sc_db.t (id BIGINT) USING lakeskip")
        assert Catalog(wh).table_exists("sc_db.t"), "a Spark database gets its warehouse twin"
    finally:
        spark.sql("DROP TABLE IF EXISTS pq_sc")
        spark.sql("DROP TABLE IF EXISTS lk_sc")
        spark.sql("DROP TABLE IF EXISTS pm_sc")
        spark.sql("DROP TABLE IF EXISTS sc_db.t")
        spark.sql("DROP DATABASE IF EXISTS sc_db")
        spark.conf.unset("spark.sql.catalog.spark_catalog")


def test_temp_view_fallback_still_prunes(spark: SparkSession, lk: Any) -> None:
    """Without the catalog (no javac), Session.sql plans through temporary views."""
    _events(spark)
    fallback = lakeskip.Session(lk.catalog, spark)
    assert fallback.catalog_name is None
    df = fallback.sql("SELECT id FROM db.events WHERE id = 105")
    assert [r.id for r in df.collect()] == [105]
    assert len(input_files(df)) == 1 and fallback.last_reports[0].kept_files == 1


def test_parser_extension_accepts_paimon_with_and_call_sys(spark: SparkSession, lk: Any) -> None:
    """The extension is installed at session start (conf); the shared test session has
    none, so its parser is built over Spark's and driven directly."""
    assert spark._jvm is not None
    parser = spark._jvm.lakeskip.jvm.sql.LakeParser(spark._jsparkSession.sessionState().sqlParser())

    def run(sql: str) -> list[Any]:
        plan = parser.parsePlan(sql)
        jdf = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, plan)
        return list(jdf.collectAsList())

    run("CREATE TABLE db.pw (id BIGINT, s STRING) WITH ('file-index.bloom-filter.columns'='s')")
    table = lk.catalog.get_table("db.pw")
    assert table.schema.options == {"file-index.bloom-filter.columns": "s"}
    run("INSERT INTO lakeskip.db.pw VALUES (1, 'a')")
    [row] = run("CALL sys.rewrite_file_index(table => 'db.pw')")
    assert int(row.get(0)) + int(row.get(1)) == 1, "one file: rewritten or unchanged"
    with pytest.raises(Exception, match="PARSE_SYNTAX_ERROR"):
        parser.parsePlan("SELEC 1")


def test_attached_session_takes_paimon_with_call_sys_and_explain_pruning(
    spark: SparkSession, lk: Any
) -> None:
    """A session attached at run time gets the parser too (no spark.sql.extensions): plain
    spark.sql accepts WITH (...), CALL sys.x without the catalog, EXPLAIN PRUNING."""
    spark.sql(
        "CREATE TABLE lakeskip.db.aw (id BIGINT, s STRING) "
        "WITH ('file-index.bloom-filter.columns'='s')"
    )
    assert lk.catalog.get_table("db.aw").schema.options == {"file-index.bloom-filter.columns": "s"}
    for i in range(3):
        spark.sql(f"INSERT INTO lakeskip.db.aw VALUES ({i}, 's{i}')")
    rows = spark.sql("EXPLAIN PRUNING SELECT * FROM lakeskip.db.aw WHERE s = 's1'").collect()
    metrics = {(r[0], r[1]): r[2] for r in rows}
    assert metrics[("db.aw", "files total")] == "3", rows
    assert metrics[("db.aw", "files kept")] == "1", rows
    assert spark.sql("CALL sys.rewrite_file_index(table => 'db.aw')").collect()
    with pytest.raises(AnalysisException, match="takes a query"):
        spark.sql("EXPLAIN PRUNING DELETE FROM lakeskip.db.aw WHERE id = 1").collect()
    assert spark.table("lakeskip.db.aw").count() == 3, "EXPLAIN PRUNING never runs a statement"
    assert spark._jvm is not None
    assert spark._jvm.lakeskip.jvm.bridge.Brain.pid() == -1, "a PySpark driver is its own brain"
    # a session created after the attach (as a Thrift server makes per connection) sees it
    other = spark.newSession()
    assert [r[1] for r in other.sql("SHOW TABLES IN lakeskip.db").collect()].count("aw") == 1


def test_queries_from_other_python_threads(spark: SparkSession, lk: Any) -> None:
    """Each Python thread has its own JVM thread (and class loader) under PySpark's pinned
    threads; the catalog attached on the main thread must serve them all."""
    import threading

    _events(spark)
    results: dict[int, Any] = {}

    def work(i: int) -> None:
        try:
            with lakeskip.spark.pruning_reports(spark) as reports:
                df = spark.sql(f"SELECT id FROM lakeskip.db.events WHERE id = {i * 100 + 5}")
                rows = [r.id for r in df.collect()]
            results[i] = (rows, [r.kept_files for r in reports])
        except Exception as e:  # reported below with the thread's index
            results[i] = e

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: ([i * 100 + 5], [1]) for i in range(3)}, results
