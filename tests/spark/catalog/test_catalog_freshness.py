"""Per-query cost of the Spark catalog without stale answers.

A query through the catalog costs at most two Python callbacks (``load_table`` during
analysis, ``plan_scan`` while Spark pushes filters down), and none when it repeats on an
unchanged table (the JVM keeps the loaded table while the metadata files Python named are
unchanged, and the built scan for the same snapshot, filters, columns and settings); and every
query reads the table's newest snapshot: a commit through the catalog, through lakeskip's own
writer, or by another process that never talked to this session (here: a second
:class:`~lakeskip.catalog.Catalog` object writing files and committing on its own), a schema
change, a re-created table or a re-used snapshot id is visible to the very next query. Results
are checked against the rows written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row, SparkSession
from tests.examples import spark_examples

import lakeskip
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.write.data_writer import DataWriter
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.spark import input_files
from lakeskip.spark.front.catalog_setup import service_for
from lakeskip.spark.front.native_query import pruning_reports
from lakeskip.types import BIGINT, STRING, Field, RowType


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


def _external_commit(warehouse: str, ids: list[int], name: str = "f") -> None:
    """Another writer on the same warehouse: its own Catalog, files and commit."""
    table = Catalog(warehouse).get_table(f"db.{name}")
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    data = pa.table(
        {"id": pa.array(ids, pa.int64()), "s": pa.array([f"s{i}" for i in ids], pa.string())}
    )
    table.commit(DataWriter(spec).write_batches(iter([data])))


def _calls(service: Any, fn: Any) -> dict[str, int]:
    before = service.callback_stats()
    fn()
    return {k: v for k, v in service.callback_stats().since(before).calls.items() if v}


def test_callbacks_only_when_something_changed(spark: SparkSession, lk: Any) -> None:
    spark.sql("INSERT INTO lakeskip.db.f VALUES (1, 's1'), (2, 's2')")
    spark.sql("INSERT INTO lakeskip.db.f VALUES (3, 's3')")
    service = service_for(spark)

    def three() -> None:
        for _ in range(3):
            assert _ids(spark, "s = 's3'") == [3]

    first = _calls(service, lambda: _ids(spark, "s = 's3'"))
    assert first == {"load_table": 1, "plan_scan": 1}, "the INSERT's commit changed the table"
    assert _calls(service, three) == {}, "the same query on the same snapshot: none"
    _external_commit(str(lk.catalog.warehouse), [3])
    assert _calls(service, lambda: _ids(spark, "s = 's3'")) == {"load_table": 1, "plan_scan": 1}
    assert _ids(spark, "s = 's3'") == [3, 3]
    # the time zone travels with the scan callback (not fetched back from the JVM): a new
    # zone is a new question for the planner, asked once
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        assert _calls(service, lambda: _ids(spark, "s = 's3'")) == {"plan_scan": 1}
        assert _calls(service, lambda: _ids(spark, "s = 's3'")) == {}
    finally:
        spark.conf.unset("spark.sql.session.timeZone")


def test_an_output_only_setting_keeps_the_planned_scan(spark: SparkSession, lk: Any) -> None:
    """``spark-sql`` and the Thrift server set ``spark.sql.binaryOutputStyle`` the first time
    they print rows (Spark's ``HiveResult``), after the session's first query was planned: a
    setting that only shapes printed rows neither plans the scan again nor, once a commit
    makes the scan planned again, builds a new reader factory (a broadcast of the Hadoop
    configuration); the answers stay right; a setting of the read plans the scan again."""
    spark.sql("CREATE TABLE lakeskip.db.b (id BIGINT, b BINARY)")
    spark.sql("INSERT INTO lakeskip.db.b VALUES (1, X'7879'), (2, X'00FF')")
    spark.sql("INSERT INTO lakeskip.db.b VALUES (3, X'7879'), (4, X'78')")
    service = service_for(spark)
    query = "SELECT id, b FROM lakeskip.db.b WHERE id <> 2"
    want = [(1, b"xy"), (3, b"xy"), (4, b"x")]

    def rows() -> list[tuple[int, bytes]]:
        return sorted((r.id, bytes(r.b)) for r in spark.sql(query).collect())

    def shown() -> str:
        return str(spark.sql(query + " ORDER BY id")._jdf.showString(20, 20, False))

    def planning_broadcasts() -> int:
        return _broadcasts_during(
            spark, lambda: spark.sql(query)._jdf.queryExecution().executedPlan()
        )

    assert _calls(service, lambda: rows() == want) == {"load_table": 1, "plan_scan": 1}
    assert rows() == want
    plain = shown()
    spark.conf.set("spark.sql.binaryOutputStyle", "HEX")
    try:
        assert _calls(service, rows) == {}, "printed output only: the scan is reused"
        assert rows() == want
        spark.sql("INSERT INTO lakeskip.db.b VALUES (5, X'7879')")
        assert planning_broadcasts() == 0, "a new snapshot's scan, the same reader factory"
        assert rows() == [*want, (5, b"xy")]
        assert shown() != plain and "|  4|  78|" in shown(), "the setting took"
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
        try:
            assert _calls(service, rows) == {"plan_scan": 1}, "a setting of the read"
            assert rows() == [*want, (5, b"xy")]
        finally:
            spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    finally:
        spark.conf.unset("spark.sql.binaryOutputStyle")


def _read_settings(spark: SparkSession) -> list[tuple[Any, Any]]:
    """(change, undo) of settings that can change a scan: Parquet, file splitting, case
    sensitivity, time zone, a Hadoop entry changed in place (``lakeskip.test.in.place``, set
    by the caller) and a new one."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()

    def sql_setting(name: str, value: str) -> tuple[Any, Any]:
        old = spark.conf.get(name, None)
        return (
            lambda: spark.conf.set(name, value),
            lambda: spark.conf.unset(name) if old is None else spark.conf.set(name, old),
        )

    def hadoop_setting(name: str, value: str) -> tuple[Any, Any]:
        old = conf.get(name)
        return (
            lambda: conf.set(name, value),
            lambda: conf.unset(name) if old is None else conf.set(name, old),
        )

    return [
        sql_setting("spark.sql.parquet.filterPushdown", "false"),
        sql_setting("spark.sql.parquet.enableVectorizedReader", "false"),
        sql_setting("spark.sql.files.maxPartitionBytes", "1234567"),
        sql_setting("spark.sql.caseSensitive", "true"),
        sql_setting("spark.sql.session.timeZone", "Asia/Kolkata"),
        hadoop_setting("lakeskip.test.in.place", "b"),
        hadoop_setting("parquet.read.support.class.test", "x"),
    ]


def test_every_setting_of_the_read_plans_the_scan_again(spark: SparkSession, lk: Any) -> None:
    """A planned scan is reused only under the very SQL and Hadoop settings it was planned
    under (the key holds a copy of each, shared while the live settings hold the same
    entries): a changed value of a setting that can change a scan (Parquet, file splitting,
    case sensitivity, time zone, a Hadoop entry, one set or changed in place) plans it again,
    once; back to the earlier value, the earlier scan is reused; answers stay right."""
    spark.sql("INSERT INTO lakeskip.db.f VALUES (1, 's1'), (2, 's2'), (3, 's3')")
    service = service_for(spark)
    where = "id >= 2"
    assert _calls(service, lambda: _ids(spark, where)) == {"load_table": 1, "plan_scan": 1}
    assert _calls(service, lambda: _ids(spark, where)) == {}
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set("lakeskip.test.in.place", "a")  # an entry whose value then changes in place
    assert _calls(service, lambda: _ids(spark, where)) == {"plan_scan": 1}
    changes = _read_settings(spark)
    try:
        for change, undo in changes:
            change()
            try:
                assert _calls(service, lambda: _ids(spark, where)) == {"plan_scan": 1}
                assert _calls(service, lambda: _ids(spark, where)) == {}, "then reused"
                assert _ids(spark, where) == [2, 3]
            finally:
                undo()
            assert _calls(service, lambda: _ids(spark, where)) == {}, "the earlier scan"
        spark.conf.set("spark.sql.binaryOutputStyle", "BASE64")
        try:
            assert _calls(service, lambda: _ids(spark, where)) == {}, "printed output only"
        finally:
            spark.conf.unset("spark.sql.binaryOutputStyle")
    finally:
        conf.unset("lakeskip.test.in.place")
    assert _ids(spark, where) == [2, 3]


def test_a_reused_scan_still_reports(spark: SparkSession, lk: Any) -> None:
    """A tagged query (its pruning report collected) gets the report of the scan it reuses."""
    spark.sql("INSERT INTO lakeskip.db.f VALUES (1, 's1')")
    spark.sql("INSERT INTO lakeskip.db.f VALUES (2, 's2')")
    service = service_for(spark)
    query = "SELECT id FROM lakeskip.db.f WHERE s = 's2'"
    for expected in ({"load_table": 1, "plan_scan": 1}, {"file_report": 1}):
        with pruning_reports(spark) as reports:
            assert _calls(service, lambda: spark.sql(query).collect()) == expected
        assert [(r.table, r.total_files, r.kept_files) for r in reports] == [("db.f", 2, 1)]


def test_a_changed_schema_is_seen_by_the_next_query(spark: SparkSession, lk: Any) -> None:
    spark.sql("INSERT INTO lakeskip.db.f VALUES (1, 's1')")
    warehouse = str(lk.catalog.warehouse)
    assert spark.sql("SELECT * FROM lakeskip.db.f").columns == ["id", "s"]
    Catalog(warehouse).add_columns("db.f", [Field(2, "n", BIGINT)])
    assert spark.sql("SELECT * FROM lakeskip.db.f").columns == ["id", "s", "n"]
    assert spark.sql("SELECT * FROM lakeskip.db.f").collect() == [Row(id=1, s="s1", n=None)]
    # dropped and re-created elsewhere: schema-0 again, but other bytes, and no snapshot
    Catalog(warehouse).drop_table("db.f")
    Catalog(warehouse).create_table("db.f", RowType.of(("k", STRING)))
    assert spark.sql("SELECT * FROM lakeskip.db.f").columns == ["k"]
    assert spark.sql("SELECT * FROM lakeskip.db.f").collect() == []


def test_a_reused_snapshot_id_is_not_the_old_snapshot(spark: SparkSession, lk: Any) -> None:
    """Paimon's rollback deletes the newer snapshots, and the next commit takes the id again:
    same id, other content (here: snapshot 2 deleted behind the session's back and
    committed anew by another writer, with no query in between)."""
    spark.sql("INSERT INTO lakeskip.db.f VALUES (1, 's1')")
    warehouse = str(lk.catalog.warehouse)
    _external_commit(warehouse, [7])
    assert _ids(spark) == [1, 7]
    assert _ids(spark, "s = 's7'") == [7]
    table = Catalog(warehouse).get_table("db.f")
    snapshots = table.snapshot_manager
    table.file_io.delete(snapshots.path(2))
    table.file_io.write_bytes(f"{snapshots.dir}/LATEST", b"1")
    _external_commit(warehouse, [8])
    assert Catalog(warehouse).get_table("db.f").latest_snapshot().id == 2  # type: ignore[union-attr]
    assert _ids(spark) == [1, 8]
    assert _ids(spark, "s = 's7'") == []


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
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set("lakeskip.test.in.place", "a")
    assert planned(query) == 1, "a Hadoop entry more"
    try:
        for change, undo in _read_settings(spark):
            change()
            try:
                assert planned(query) == 1, "a changed setting of the read"
                assert planned(query) == 0, "then reused"
                assert spark.sql(query).collect()[0][0] == 0
            finally:
                undo()
            assert planned(query) == 0, "back to the earlier settings: the earlier factory"
        spark.conf.set("spark.sql.binaryOutputStyle", "BASE64")
        try:
            assert planned(query) == 0, "printed output only"
        finally:
            spark.conf.unset("spark.sql.binaryOutputStyle")
        # a scan built under one setting (a new filter: not a reused scan, which keeps its
        # factory) whose factory is asked for under another: Spark made its Hadoop
        # configuration of the earlier settings, so its factory is its own, which a query
        # planned under the new setting does not get
        other = "SELECT count(*) FROM lakeskip.db.f WHERE id >= 6"
        stale = spark.sql(other)._jdf.queryExecution()
        stale.optimizedPlan()
        spark.conf.set("spark.sql.parquet.int96AsTimestamp", "false")
        try:
            assert _broadcasts_during(spark, stale.executedPlan) == 1
            assert planned(other) == 1, "planned anew: not the stale scan's factory"
            assert planned(other) == 0
            assert spark.sql(other).collect()[0][0] == 0
        finally:
            spark.conf.unset("spark.sql.parquet.int96AsTimestamp")
    finally:
        conf.unset("lakeskip.test.in.place")
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


_PREDICATES: list[tuple[str, Any]] = [
    ("true", lambda i: True),
    ("id >= 10", lambda i: i >= 10),
    ("s = 's3'", lambda i: i == 3),
    ("id IN (1, 4, 15)", lambda i: i in (1, 4, 15)),
    ("s >= 's2' AND id < 12", lambda i: f"s{i}" >= "s2" and i < 12),
    ("id = 7 OR s = 's19'", lambda i: i in (7, 19)),
    ("s LIKE 's1%'", lambda i: str(i).startswith("1")),
]
_tables = iter(range(10**6))

_op = st.one_of(
    st.tuples(st.just("commit"), st.lists(st.integers(0, 20), min_size=1, max_size=4)),
    st.tuples(st.just("overwrite"), st.lists(st.integers(0, 20), min_size=1, max_size=3)),
    *[st.tuples(st.just("reuse_id"), st.lists(st.integers(0, 20), min_size=1, max_size=3))] * 2,
    st.tuples(st.just("pushdown"), st.booleans()),
    *[st.tuples(st.just("query"), st.sampled_from(range(len(_PREDICATES))))] * 3,
)


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=2, fuzz=12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(_op, min_size=4, max_size=12))
def test_repeated_queries_match_the_rows_written(
    spark: SparkSession, lk: Any, ops: list[tuple[str, Any]]
) -> None:
    """Random commits, overwrites, re-used snapshot ids (a Paimon rollback, then a commit)
    and settings changes between random queries that repeat: every answer is the rows
    written. Catches a table or scan the JVM kept after it changed."""
    name = f"r{next(_tables)}"
    spark.sql(f"CREATE TABLE lakeskip.db.{name} (id BIGINT, s STRING)")
    warehouse = str(lk.catalog.warehouse)
    history: list[list[int]] = [[]]  # the rows of each snapshot (index = snapshot id)

    def commit(ids: list[int]) -> None:
        _external_commit(warehouse, ids, name)
        history.append(history[-1] + ids)

    asked: list[int] = []  # predicates queried so far: asked again after every change

    def check(i: int) -> None:
        where, keep = _PREDICATES[i]
        rows = spark.sql(f"SELECT id FROM lakeskip.db.{name} WHERE {where}").collect()
        expected = sorted(r for r in history[-1] if keep(r))
        assert sorted(r.id for r in rows) == expected, (where, history)

    try:
        for kind, arg in ops:
            if kind == "commit":
                commit(arg)
            elif kind == "overwrite":
                values = ", ".join(f"({i}, 's{i}')" for i in arg)
                spark.sql(f"INSERT OVERWRITE lakeskip.db.{name} VALUES {values}")
                history.append(list(arg))
            elif kind == "reuse_id" and len(history) > 2:
                table = Catalog(warehouse).get_table(f"db.{name}")
                snapshots = table.snapshot_manager
                table.file_io.delete(snapshots.path(len(history) - 1))
                table.file_io.write_bytes(f"{snapshots.dir}/LATEST", str(len(history) - 2).encode())
                history.pop()
                commit(arg)
            elif kind == "pushdown":
                spark.conf.set("spark.sql.parquet.filterPushdown", str(arg).lower())
            if kind == "query":
                check(arg)
                asked.append(arg)
            else:
                for i in dict.fromkeys(asked):
                    check(i)
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")
