"""Aggregates answered from the manifests through the Spark catalog (issue 30):
``count(*)``, ``count(c)``, ``min(c)``, ``max(c)`` with no filter or partition filters.

The oracle is Spark itself over the same table with the push-down switched off
(``spark.lakeskip.aggregate-pushdown.enabled=false``): the same scan, every row read. EXPLAIN
tells whether the aggregate was pushed; where the manifests cannot answer exactly (a string
or float min/max, a data filter, deleted rows under a min, a merge-on-read primary-key
table) it must not be, and the answer is Spark's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from tests.examples import spark_examples

import lakeskip

CONF = "spark.lakeskip.aggregate-pushdown.enabled"


@pytest.fixture(scope="module")
def agg(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    wh = tmp_path_factory.mktemp("agg") / "wh"
    lakeskip.connect(str(wh), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.g")
    spark.sql(
        "CREATE TABLE lakeskip.g.t (id BIGINT, n INT, d DATE, dec DECIMAL(10, 2), "
        "ts TIMESTAMP, s STRING, x DOUBLE, p INT) PARTITIONED BY (p)"
    )
    for f in range(4):  # one file per partition and INSERT; nulls; a NULL partition
        spark.sql(
            f"""INSERT INTO lakeskip.g.t SELECT
                  id * 3 + {f}, CASE WHEN id % 4 = 0 THEN NULL ELSE CAST(id - {f * 5} AS INT) END,
                  date_add(DATE'2024-01-01', CAST(id * {f + 1} AS INT)),
                  CAST(id / 7 - {f} AS DECIMAL(10, 2)),
                  CASE WHEN id = 2 THEN NULL ELSE
                    timestamp_micros(1700000000000000 + id * 1000001 * {f + 1}) END,
                  concat('s', CAST(id AS STRING)), id / 3.0,
                  CASE WHEN {f} = 3 THEN NULL ELSE CAST((id + {f}) % 3 AS INT) END
                FROM range(0, 9, 1, 1)"""
        )
    yield str(wh)
    spark.conf.unset(CONF)


def _answer(spark: SparkSession, sql: str, pushdown: bool) -> tuple[list[tuple[Any, ...]], str]:
    spark.conf.set(CONF, str(pushdown).lower())
    try:
        df = spark.sql(sql)
        plan = df._jdf.queryExecution().executedPlan().toString()
        return [tuple(r) for r in df.collect()], plan
    finally:
        spark.conf.unset(CONF)


def _check(spark: SparkSession, sql: str, pushed: bool) -> list[tuple[Any, ...]]:
    got, plan = _answer(spark, sql, True)
    want, plain = _answer(spark, sql, False)
    assert got == want, f"{sql}: pushed {got}, Spark {want}"
    assert "LakeAggregateScan" not in plain, "the switch turns the push-down off"
    if pushed:
        assert "PushedAggregation: [" in plan and "LakeAggregateScan" in plan, f"{sql}: {plan}"
    else:
        assert "LakeAggregateScan" not in plan, f"{sql} must not be answered from manifests"
    return got


ALL = "count(*), count(n), min(id), max(id), min(n), max(n), min(d), max(d), min(dec), max(dec), min(ts), max(ts)"


def test_answers_from_manifests_equal_sparks(spark: SparkSession, agg: Any) -> None:
    for where in (
        "",
        "WHERE p = 1",
        "WHERE p IN (0, 2)",
        "WHERE p > 0",
        "WHERE p IS NULL",
        "WHERE p = 7",
        "WHERE p IS NULL OR p = 0",
        "WHERE NOT (p <=> 1)",
    ):
        _check(spark, f"SELECT {ALL} FROM lakeskip.g.t {where}", pushed=True)
    rows = _check(spark, "SELECT count(*) FROM lakeskip.g.t WHERE p = 7", pushed=True)
    assert rows == [(0,)]
    # grouped by the partition column: one row per partition, none for no partition
    for where in ("", "WHERE p > 0", "WHERE p IS NULL OR p = 2", "WHERE p = 7"):
        _check(
            spark,
            f"SELECT p, {ALL} FROM lakeskip.g.t {where} GROUP BY p ORDER BY p NULLS FIRST",
            pushed=True,
        )
    assert _check(spark, "SELECT p FROM lakeskip.g.t WHERE p = 7 GROUP BY p", pushed=True) == []
    got = _check(spark, "SELECT count(*) AS c FROM lakeskip.g.t GROUP BY p ORDER BY c", pushed=True)
    assert sum(r[0] for r in got) == 36 and len(got) == 4
    # not exact from the manifests: Spark aggregates the rows
    for sql in (
        "SELECT min(s) FROM lakeskip.g.t",  # truncated string stats
        "SELECT max(x) FROM lakeskip.g.t",  # NaN / -0.0
        "SELECT count(*) FROM lakeskip.g.t WHERE n > 2",  # a data filter
        "SELECT count(*) FROM lakeskip.g.t WHERE p + n = 2",
        "SELECT n, count(*) FROM lakeskip.g.t GROUP BY n ORDER BY n",  # not a partition column
        "SELECT count(DISTINCT n) FROM lakeskip.g.t",
        "SELECT sum(n) FROM lakeskip.g.t",
    ):
        _check(spark, sql, pushed=False)
    # a partition filter is no post-scan filter any more: the rows are still exact
    got = spark.sql("SELECT id, p FROM lakeskip.g.t WHERE p = 1 OR p IS NULL").collect()
    assert got and all(r.p in (1, None) for r in got)
    assert (
        len(got)
        == spark.sql("SELECT count(*) FROM lakeskip.g.t WHERE p = 1 OR p IS NULL").collect()[0][0]
    )


def test_deleted_rows_and_table_kinds(spark: SparkSession, agg: Any) -> None:
    spark.sql(
        "CREATE TABLE lakeskip.g.dv (id BIGINT, p INT) PARTITIONED BY (p) "
        "TBLPROPERTIES ('deletion-vectors.enabled' = 'true')"
    )
    spark.sql("INSERT INTO lakeskip.g.dv SELECT id, CAST(id % 2 AS INT) FROM range(0, 20)")
    _check(spark, "SELECT count(*), min(id) FROM lakeskip.g.dv", pushed=True)
    spark.sql("DELETE FROM lakeskip.g.dv WHERE id IN (0, 3, 4)")
    assert _check(spark, "SELECT count(*) FROM lakeskip.g.dv", pushed=True) == [(17,)]
    _check(spark, "SELECT count(*) FROM lakeskip.g.dv WHERE p = 0", pushed=True)
    _check(spark, "SELECT min(id) FROM lakeskip.g.dv", pushed=False)  # a deleted row was it
    # a file without deleted rows holds each partition's extremes: the DV files' stats are
    # bounds within them, so the manifests answer (issue 39)
    spark.sql("INSERT INTO lakeskip.g.dv SELECT id, CAST(abs(id) % 2 AS INT) FROM range(-4, 0)")
    spark.sql("INSERT INTO lakeskip.g.dv SELECT id, CAST(id % 2 AS INT) FROM range(40, 44)")
    assert _check(spark, "SELECT min(id), max(id) FROM lakeskip.g.dv", pushed=True) == [(-4, 43)]
    _check(spark, "SELECT count(id), min(id) FROM lakeskip.g.dv WHERE p = 1", pushed=True)

    # two partition columns, grouped by one: the partitions' rows combine per group
    spark.sql("CREATE TABLE lakeskip.g.two (id BIGINT, a STRING, b INT) PARTITIONED BY (a, b)")
    spark.sql(
        "INSERT INTO lakeskip.g.two SELECT id, CASE WHEN id % 5 = 0 THEN NULL ELSE "
        "CAST(id % 3 AS STRING) END, CAST(id % 4 AS INT) FROM range(0, 40)"
    )
    for sql in (
        "SELECT a, count(*), min(id), max(id) FROM lakeskip.g.two GROUP BY a",
        "SELECT b, a, count(id) FROM lakeskip.g.two WHERE b < 3 GROUP BY a, b",
        "SELECT max(id), b FROM lakeskip.g.two WHERE a = '1' GROUP BY b",
    ):
        _check(spark, f"{sql} ORDER BY 1 NULLS FIRST, 2 NULLS FIRST", pushed=True)
    plan = _answer(spark, "SELECT a, count(*) FROM lakeskip.g.two GROUP BY a", True)[1]
    assert "LakeAggregateExec" in plan, plan
    spark.sql("CREATE TABLE lakeskip.g.cow (id BIGINT, v STRING)")
    spark.sql("INSERT INTO lakeskip.g.cow SELECT id, 'a' FROM range(0, 10)")
    spark.sql("INSERT INTO lakeskip.g.cow SELECT id, 'b' FROM range(5, 12)")
    spark.sql("DELETE FROM lakeskip.g.cow WHERE id < 3")  # copy-on-write: files rewritten
    _check(spark, "SELECT count(*), min(id), max(id) FROM lakeskip.g.cow", pushed=True)

    spark.sql(
        "CREATE TABLE lakeskip.g.pk (k INT NOT NULL, v INT) TBLPROPERTIES "
        "('primary-key' = 'k', 'bucket' = '1')"
    )
    spark.sql("INSERT INTO lakeskip.g.pk VALUES (1, 1), (2, 2)")
    spark.sql("INSERT INTO lakeskip.g.pk VALUES (1, 5), (3, 3)")  # merge-on-read: 3 rows
    assert _check(spark, "SELECT count(*) FROM lakeskip.g.pk", pushed=False) == [(3,)]

    spark.sql(
        "CREATE TABLE lakeskip.g.pkdv (k INT NOT NULL, v INT) TBLPROPERTIES "
        "('primary-key' = 'k', 'bucket' = '1', 'deletion-vectors.enabled' = 'true')"
    )
    spark.sql("INSERT INTO lakeskip.g.pkdv VALUES (1, 1), (2, 2)")
    spark.sql("INSERT INTO lakeskip.g.pkdv VALUES (1, 5), (3, 3)")  # k=1's old version: a DV
    assert _check(spark, "SELECT count(*) FROM lakeskip.g.pkdv", pushed=True) == [(3,)]


def test_pushed_count_reads_no_data_file(spark: SparkSession, agg: Any, tmp_path: Any) -> None:
    """With a data file gone from disk, the pushed count still answers (it reads only the
    manifests); the same query read row by row fails."""
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE TABLE lakeskip.default.gone (id BIGINT)")
    for _ in range(3):
        spark.sql("INSERT INTO lakeskip.default.gone SELECT id FROM range(0, 5)")
    for f in s.table("default.gone").files():
        os.remove(f)
    got, plan = _answer(spark, "SELECT count(*), max(id) FROM lakeskip.default.gone", True)
    assert got == [(15, 4)] and "LakeAggregateScan" in plan
    with pytest.raises(Exception, match=r"(?i)not exist|not found|FileNotFound"):
        _answer(spark, "SELECT count(*), max(id) FROM lakeskip.default.gone", False)
    spark.sql("DROP TABLE lakeskip.default.gone")
    lakeskip.connect(agg, spark=spark)  # the module's warehouse again


def _jobs(spark: SparkSession, run: Any) -> tuple[Any, int]:
    """``run()``'s result and how many Spark jobs it started (its own job group)."""
    sc = spark.sparkContext
    group = f"lakeskip-jobs-{os.urandom(4).hex()}"
    sc.setJobGroup(group, "counting jobs")
    try:
        out = run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return out, len(sc.statusTracker().getJobIdsForGroup(group))


def test_a_fully_answered_aggregate_runs_no_spark_job(spark: SparkSession, agg: Any) -> None:
    """A complete answer from the manifests is rows on the driver (LakeAggregateExec): no
    Spark job, through spark.sql and the DataFrame API; the same queries with the push-down
    off run jobs (so the count is no accident) and give the same rows."""
    from pyspark.sql import functions as f

    queries = {
        "count(*)": lambda: spark.sql("SELECT count(*) FROM lakeskip.g.t").collect(),
        "count(*) p": lambda: spark.sql(
            "SELECT count(*) AS c, count(*) + 1 FROM lakeskip.g.t WHERE p = 1"
        ).collect(),
        "min max": lambda: spark.sql(f"SELECT {ALL} FROM lakeskip.g.t WHERE p < 2").collect(),
        "df.count": lambda: spark.table("lakeskip.g.t").count(),
        "df.agg": lambda: (
            spark.table("lakeskip.g.t")
            .where("p IS NULL")
            .agg(f.count("*"), f.min("ts"), f.max("dec"))
            .collect()
        ),
        "df.groupBy().count": lambda: spark.table("lakeskip.g.t").groupBy().count().collect(),
        "df.groupBy(p).agg": lambda: (
            spark.table("lakeskip.g.t").groupBy("p").agg(f.count("*"), f.max("id")).collect()
        ),
    }
    for name, run in queries.items():
        run()  # compiled and planned once, then counted
        got, jobs = _jobs(spark, run)
        spark.conf.set(CONF, "false")
        try:
            want, plain_jobs = _jobs(spark, run)
        finally:
            spark.conf.unset(CONF)
        if isinstance(got, list):  # groups in any order
            got, want = sorted(map(repr, got)), sorted(map(repr, want))
        assert got == want, f"{name}: pushed {got}, Spark {want}"
        assert jobs == 0, f"{name} ran {jobs} Spark job(s)"
        assert plain_jobs > 0, f"{name}: the read without push-down ran no job?"
    plan = spark.sql("SELECT count(*) FROM lakeskip.g.t")._jdf.queryExecution().executedPlan()
    assert "LakeAggregateExec" in plan.toString() and "PushedAggregation: [COUNT(*)]" in (
        plan.toString()
    )
    # not fully answered (a data filter): Spark's job, Spark's rows
    _, jobs = _jobs(
        spark, lambda: spark.sql("SELECT count(*) FROM lakeskip.g.t WHERE n > 2").collect()
    )
    assert jobs > 0


AGGREGATES = st.lists(
    st.sampled_from(
        ["count(*)", "count(n)", "min(id)", "max(id)", "min(n)", "max(d)", "min(dec)", "max(ts)"]
    ),
    min_size=1,
    max_size=4,
    unique=True,
)
PARTITION_FILTER = st.sampled_from(
    [
        "",
        "p = 0",
        "p <> 1",
        "p < 2",
        "p IN (1, NULL)",
        "p IS NOT NULL",
        "p IS NULL",
        "coalesce(p, 5) > 1",
        "p = 0 OR p = 2",
        "NOT (p = 2)",
    ]
)


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=4, fuzz=24),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    aggregates=AGGREGATES,
    where=PARTITION_FILTER,
    deletes=st.lists(st.integers(0, 30), max_size=4),
    dv=st.booleans(),
    grouped=st.booleans(),
)
def test_random_tables_and_partition_filters(
    spark: SparkSession,
    agg: Any,
    aggregates: list[str],
    where: str,
    deletes: list[int],
    dv: bool,
    grouped: bool,
) -> None:
    spark.sql("DROP TABLE IF EXISTS lakeskip.g.r")
    opts = " TBLPROPERTIES ('deletion-vectors.enabled' = 'true')" if dv else ""
    spark.sql(
        "CREATE TABLE lakeskip.g.r (id BIGINT, n INT, d DATE, dec DECIMAL(6, 1), ts TIMESTAMP, "
        f"p INT) PARTITIONED BY (p){opts}"
    )
    spark.sql(
        "INSERT INTO lakeskip.g.r SELECT id, CASE WHEN id % 3 = 0 THEN NULL ELSE CAST(id AS INT) "
        "END, date_add(DATE'2020-02-02', CAST(id AS INT)), CAST(id / 4 AS DECIMAL(6, 1)), "
        "timestamp_micros(id * 999), CASE WHEN id % 4 = 3 THEN NULL ELSE CAST(id % 4 AS INT) "
        "END FROM range(0, 16)"
    )
    spark.sql("INSERT INTO lakeskip.g.r SELECT id, 1, NULL, NULL, NULL, 2 FROM range(14, 31)")
    if deletes:
        spark.sql(f"DELETE FROM lakeskip.g.r WHERE id IN ({', '.join(map(str, deletes))})")
    sql = f"SELECT {', '.join(aggregates)} FROM lakeskip.g.r {'WHERE ' + where if where else ''}"
    if grouped:  # one row per partition, in any order
        sql = sql.replace("SELECT ", "SELECT p, ", 1) + " GROUP BY p"
    got, plan = _answer(spark, sql, True)
    want, _ = _answer(spark, sql, False)
    got, want = sorted(got, key=repr), sorted(want, key=repr)
    assert got == want, f"{sql}: pushed {got}, Spark {want}"
    only_counts = all(a.startswith("count") and a != "count(n)" for a in aggregates)
    if not dv or not deletes or only_counts:
        assert "LakeAggregateScan" in plan, f"{sql} (dv={dv}, deletes={deletes}) was not pushed"
