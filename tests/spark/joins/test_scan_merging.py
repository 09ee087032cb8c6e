"""Spark's MergeSubplans fuses scans of one lakeskip table as it does plain Parquet's
(``TableCapability.SCAN_MERGING``): scalar subqueries over the same table and filter that read
different columns (TPC-DS q9's shape) scan it once, not once per subquery. The oracle is plain
Spark over a Parquet copy of the same rows: the same answers and the same number of Spark jobs. Subqueries with different filters, merged only when Spark's symmetric
DSv2 filter propagation is on, still answer as plain Spark does (each side's filter stays
above the merged scan, which is offered the OR of both).

Exchange reuse: two scans whose pushed filters differ only in the order of an AND's / OR's
sides or an IN's values are equal (TPC-H q7's ``nation`` broadcast reused, as plain Spark
does); scans differing in a value, column, operator, read columns or snapshot's files are not."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import lakeskip

T = "lakeskip.sm.t"
_GROUPS = itertools.count()
SYMMETRIC = (
    "spark.sql.optimizer.mergeSubplans.filterPropagation.dsv2SymmetricFilterPropagation.enabled"
)


@pytest.fixture
def tables(spark: SparkSession, tmp_path: Path) -> Any:
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.sm")
    spark.sql(
        f"CREATE TABLE {T} (q INT, x DOUBLE, y BIGINT, s STRING) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns'='s')"
    )
    for i in range(4):  # 4 files, each one range of q (clustered), a NULL in each
        spark.sql(
            f"INSERT INTO {T} SELECT CAST(id % 25 + {i * 25} AS INT), id * 0.5, id, "
            f"concat('s', CAST(id % 9 AS STRING)) FROM range({i * 50}, {i * 50 + 50}, 1, 1) "
            "UNION ALL SELECT CAST(NULL AS INT), 1.0, NULL, NULL"
        )
    plain = str(tmp_path / "plain")
    spark.table(T).write.parquet(plain)
    spark.read.parquet(plain).createOrReplaceTempView("sm_plain")
    yield s
    spark.catalog.dropTempView("sm_plain")


def _q9_shape(t: str) -> str:
    """Three subqueries per bucket with the same filter, different columns (q9)."""
    parts = []
    for lo, hi in [(0, 20), (21, 60), (61, 99)]:
        where = f"WHERE q BETWEEN {lo} AND {hi}"
        parts.append(
            f"CASE WHEN (SELECT count(*) FROM {t} {where}) > 30 "
            f"THEN (SELECT avg(x) FROM {t} {where}) ELSE (SELECT sum(y) FROM {t} {where}) END"
        )
    return "SELECT " + ", ".join(parts)


def _different_filters(t: str) -> str:
    return (
        f"SELECT (SELECT count(*) FROM {t} WHERE q < 10), (SELECT max(x) FROM {t} WHERE q > 90), "
        f"(SELECT min(y) FROM {t} WHERE s = 's3'), (SELECT sum(y) FROM {t} WHERE q IS NULL)"
    )


def _jobs(spark: SparkSession, query: str) -> tuple[list[tuple[Any, ...]], int]:
    """The answer and how many Spark jobs running it took (one per scalar subquery that
    still scans on its own: merged subqueries share one)."""
    sc = spark.sparkContext
    group = f"scan-merging-{next(_GROUPS)}"
    sc.setJobGroup(group, query)
    try:
        rows = [tuple(r) for r in spark.sql(query).collect()]
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return rows, len(sc.statusTracker().getJobIdsForGroup(group))


def test_same_filter_subqueries_scan_the_table_once_per_filter(
    spark: SparkSession, tables: Any
) -> None:
    spark.sql(_q9_shape(T)).collect()  # warm: the first run plans the snapshot's metadata
    ours, our_jobs = _jobs(spark, _q9_shape(T))
    plain, plain_jobs = _jobs(spark, _q9_shape("sm_plain"))
    assert ours == plain
    # plain Spark merges the 9 subqueries into one scan per filter (3); without scan merging
    # lakeskip's V2 scans ran 9 (TPC-DS q9 at SF 0.1: 31 jobs against plain Spark's 11)
    assert our_jobs == plain_jobs


@pytest.mark.parametrize("symmetric", ["false", "true"])
def test_different_filters_answer_as_plain_spark(
    spark: SparkSession, tables: Any, symmetric: str
) -> None:
    spark.conf.set(SYMMETRIC, symmetric)
    try:
        ours, our_jobs = _jobs(spark, _different_filters(T))
        plain, plain_jobs = _jobs(spark, _different_filters("sm_plain"))
    finally:
        spark.conf.unset(SYMMETRIC)
    assert ours == plain
    assert our_jobs <= plain_jobs + 1


N = "lakeskip.sm.nation"
F = "lakeskip.sm.trade"
NATIONS = ["FRANCE", "GERMANY", "SPAIN", "ITALY"]


@pytest.fixture
def nations(spark: SparkSession, tmp_path: Path) -> Any:
    """A small ``nation`` (two snapshots) and a fact table joined to it twice (TPC-H q7's
    supplier and customer nations), with plain Parquet copies of the last snapshot."""
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.sm")
    spark.sql(f"CREATE TABLE {N} (n_key INT, n_name STRING, n_region INT)")
    spark.sql(f"INSERT INTO {N} VALUES (0, 'FRANCE', 1), (1, 'GERMANY', 1)")
    spark.sql(f"INSERT INTO {N} VALUES (2, 'SPAIN', 2), (3, 'ITALY', 3)")
    spark.sql(f"CREATE TABLE {F} (a INT, b INT, v BIGINT)")
    spark.sql(
        f"INSERT INTO {F} SELECT CAST(id % 4 AS INT), CAST(id DIV 4 % 4 AS INT), id "
        "FROM range(0, 20000, 1, 1)"
    )
    for t, view in [(N, "sm_nation"), (F, "sm_trade")]:
        plain = str(tmp_path / view)
        spark.table(t).write.parquet(plain)
        spark.read.parquet(plain).createOrReplaceTempView(view)
    yield s
    for view in ["sm_nation", "sm_trade"]:
        spark.catalog.dropTempView(view)


def _q7_shape(nation: str, trade: str) -> str:
    return (
        f"SELECT n1.n_name, n2.n_name, sum(v) FROM {trade} "
        f"JOIN {nation} n1 ON a = n1.n_key JOIN {nation} n2 ON b = n2.n_key "
        "WHERE (n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY') "
        "OR (n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE') "
        "GROUP BY n1.n_name, n2.n_name ORDER BY 1, 2"
    )


def _plan_nodes(df: Any) -> list[Any]:
    """Every node of ``df``'s executed plan (final adaptive plan, query stages walked; a
    reused exchange is listed, not what it reuses)."""
    root = df._jdf.queryExecution().executedPlan()
    todo = [root.executedPlan() if "Adaptive" in root.nodeName() else root]
    found = []
    while todo:
        node = todo.pop()
        found.append(node)
        if "QueryStage" in node.nodeName():
            todo.append(node.plan())
            continue
        kids = node.children().iterator()
        while kids.hasNext():
            todo.append(kids.next())
    return found


def _reused(df: Any) -> int:
    return sum(1 for n in _plan_nodes(df) if n.nodeName() == "ReusedExchange")


def test_q7_shape_reuses_the_nation_broadcast(spark: SparkSession, nations: Any) -> None:
    """The two ``nation`` reads are pushed ``n_name = 'FRANCE' OR n_name = 'GERMANY'`` and the
    same the other way round: one broadcast, reused, as plain Spark's V1 scan does."""
    ours_df = spark.sql(_q7_shape(N, F))
    ours = [tuple(r) for r in ours_df.collect()]
    plain_df = spark.sql(_q7_shape("sm_nation", "sm_trade"))
    plain = [tuple(r) for r in plain_df.collect()]
    assert ours == plain
    assert len(ours) == 2
    assert _reused(plain_df) >= 1  # the shape is q7's: plain Spark reuses it
    assert _reused(ours_df) == _reused(plain_df)


def _scan(spark: SparkSession, query: str) -> Any:
    """The one lakeskip scan (``LakeScan``) of ``nation`` in ``query``'s executed plan."""
    df = spark.sql(query)
    df.collect()
    scans = [
        n.scan() for n in _plan_nodes(df) if n.nodeName().startswith(("BatchScan", "LakeV1Scan"))
    ]
    assert len(scans) == 1
    return scans[0]


def _both_sides(table: str, one: str, other: str) -> str:
    """Both scans of ``table`` in one query: Spark reuses the exchange of equal scans."""
    return (
        f"SELECT * FROM (SELECT n_key k1 FROM {table} WHERE {one}) "
        f"FULL JOIN (SELECT n_key k2 FROM {table} WHERE {other}) ON k1 = k2 ORDER BY k1, k2"
    )


_EQUAL = [
    ("n_name = 'FRANCE' OR n_name = 'GERMANY'", "n_name = 'GERMANY' OR n_name = 'FRANCE'"),
    ("n_name IN ('FRANCE', 'GERMANY', 'SPAIN')", "n_name IN ('SPAIN', 'FRANCE', 'GERMANY')"),
    (
        "NOT (n_key > 1 AND (n_name = 'SPAIN' OR n_key < 3))",
        "NOT ((n_key < 3 OR n_name = 'SPAIN') AND n_key > 1)",
    ),
]
_UNEQUAL = [
    ("n_name = 'FRANCE' OR n_name = 'GERMANY'", "n_name = 'FRANCE' OR n_name = 'SPAIN'"),
    ("n_name IN ('FRANCE', 'GERMANY', 'SPAIN')", "n_name IN ('FRANCE', 'GERMANY', 'ITALY')"),
    ("n_key = 1 OR n_region = 2", "n_key = 2 OR n_region = 1"),
    ("n_key = 1 OR n_region = 3", "n_region = 1 OR n_region = 3"),
    ("n_key < 2 OR n_name = 'SPAIN'", "n_key <= 2 OR n_name = 'SPAIN'"),
    ("n_key < 2 AND n_region = 1", "n_key < 2 OR n_region = 1"),
    ("NOT (n_key < 2 OR n_region = 1)", "n_key < 2 OR n_region = 1"),
]


def _pair(spark: SparkSession, one: str, other: str) -> tuple[Any, Any, Any]:
    """The lakeskip scans of ``one`` and ``other``, and the query joining both sides, its rows
    checked against the same query on plain Parquet."""
    a = _scan(spark, f"SELECT n_key, n_name FROM {N} WHERE {one}")
    b = _scan(spark, f"SELECT n_key, n_name FROM {N} WHERE {other}")
    both = spark.sql(_both_sides(N, one, other))
    plain = spark.sql(_both_sides("sm_nation", one, other))
    assert [tuple(r) for r in both.collect()] == [tuple(r) for r in plain.collect()]
    return a, b, both


@pytest.mark.parametrize(("one", "other"), _EQUAL)
def test_scans_equal_when_only_commutative_order_differs(
    spark: SparkSession, nations: Any, one: str, other: str
) -> None:
    a, b, both = _pair(spark, one, other)
    assert str(a.inner().pushedFilters()) != str(b.inner().pushedFilters()) or one == other
    assert a.equals(b) and b.equals(a)
    assert a.hashCode() == b.hashCode()
    assert _reused(both) == 1  # the shape reuses an exchange of equal scans


@pytest.mark.parametrize(("one", "other"), _UNEQUAL)
def test_scans_differing_in_a_filter_are_not_equal(
    spark: SparkSession, nations: Any, one: str, other: str
) -> None:
    a, b, both = _pair(spark, one, other)
    assert not a.equals(b) and not b.equals(a)
    assert _reused(both) == 0


def test_scans_of_other_columns_or_snapshots_are_not_equal(
    spark: SparkSession, nations: Any
) -> None:
    where = "WHERE n_name = 'FRANCE' OR n_name = 'GERMANY'"
    base = _scan(spark, f"SELECT n_key, n_name FROM {N} {where}")
    same = _scan(spark, f"SELECT n_key, n_name FROM {N} {where}")
    assert base.equals(same)
    for other in [
        f"SELECT n_key, n_name, n_region FROM {N} {where}",
        f"SELECT n_key, n_name FROM {N}",
    ]:
        scan = _scan(spark, other)
        assert not base.equals(scan) and not scan.equals(base), other
    # snapshot 1 has other files than snapshot 2 (the filter above keeps snapshot 1's files
    # in both: the same files and filters, equal and rightly reused)
    where = "WHERE n_key = 1 OR n_key > 1"
    now = _scan(spark, f"SELECT n_key, n_name FROM {N} {where}")
    then = _scan(spark, f"SELECT n_key, n_name FROM {N} VERSION AS OF 1 {where}")
    assert not now.equals(then) and not then.equals(now)
