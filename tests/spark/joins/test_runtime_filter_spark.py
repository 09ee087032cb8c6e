"""Spark's dynamic pruning through a join reaches lakeskip's scan (issue 38): the plan holds a
``dynamicpruningexpression`` against the fact scan on a clustered non-partition column, the
scan reads only the files holding the dimension's keys, the runtime tier shows in EXPLAIN
PRUNING and the scan's metrics, and answers equal plain Spark's over the same rows."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from tests.spark.read.scan_metrics import batch_scans, scan_metrics

import lakeskip
from lakeskip.spark import pruning_reports
from lakeskip.spark.front.catalog_setup import service_for

F = "lakeskip.rt.fact"
D = "lakeskip.rt.dim"
QUERY = (
    f"SELECT d.tag, count(*), sum(f.v) FROM {F} f JOIN {D} d ON f.k = d.k "
    "WHERE d.tag = 'hot' GROUP BY d.tag"
)


@pytest.fixture
def star(spark: SparkSession, tmp_path: Path) -> Any:
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.rt")
    spark.sql(f"CREATE TABLE {F} (k BIGINT, v INT)")
    for i in range(8):  # 8 files, each one range of k (a fact table clustered by its key)
        spark.sql(
            f"INSERT INTO {F} SELECT id, CAST(id % 7 AS INT) FROM range({i * 100}, {i * 100 + 100}, 1, 1)"
        )
    spark.sql(f"INSERT INTO {F} SELECT CAST(NULL AS BIGINT), 1")  # a NULL key
    spark.sql(f"CREATE TABLE {D} (k BIGINT, tag STRING)")
    # keys of file 3 and a key no file holds are 'hot'; duplicates on the dimension side
    spark.sql(
        f"INSERT INTO {D} SELECT id, CASE WHEN id BETWEEN 310 AND 320 OR id = 5000 "
        "THEN 'hot' ELSE 'cold' END FROM range(0, 800) UNION ALL SELECT 315, 'hot'"
    )
    return s


def _fact_metrics(df: DataFrame) -> dict[str, int]:
    """The lakeskip SQLMetrics of the fact scan in the executed (final adaptive) plan."""
    m = scan_metrics(df, F)
    assert m is not None, "no fact scan in the executed plan"
    return m


@contextmanager
def _runtime_filters_off(spark: SparkSession) -> Iterator[None]:
    """lakeskip's runtime filtering off for the block: the same query, planned without it."""
    spark.conf.set("spark.lakeskip.runtime-filter.enabled", "false")
    try:
        yield
    finally:
        spark.conf.unset("spark.lakeskip.runtime-filter.enabled")


def test_dynamic_pruning_skips_fact_files_by_stats(spark: SparkSession, star: Any) -> None:
    explained = "\n".join(r[0] for r in spark.sql(f"EXPLAIN {QUERY}").collect()).lower()
    assert "dynamicpruningexpression" in explained
    with pruning_reports(spark) as reports:
        df = spark.sql(QUERY)
        got = sorted(tuple(r) for r in df.collect())
    # the executed plan's scan description says what ran
    executed = df._jdf.queryExecution().executedPlan().toString()
    assert "files 1/9 kept; skipped by stats 1, runtime stats(k) 7" in executed, executed
    m = _fact_metrics(df)
    assert m["lakeskipFilesTotal"] == 9
    assert m["lakeskipFilesKept"] == 1  # only the file of keys 300..399
    assert m["lakeskipSkippedStats"] == 1  # the NULL key's file: IsNotNull(k)
    assert m["lakeskipSkippedRuntime"] == 7
    fact = [r for r in reports if r.table.endswith("fact") and r.skipped_at_runtime]
    assert fact and fact[-1].skipped_at_runtime == {"stats(k)": 7}
    with _runtime_filters_off(spark):
        plain = sorted(tuple(r) for r in spark.sql(QUERY).collect())
        off = "\n".join(r[0] for r in spark.sql(f"EXPLAIN {QUERY}").collect()).lower()
    assert "dynamicpruningexpression" not in off
    assert got == plain == [("hot", 12, sum((k % 7) for k in [*range(310, 321), 315]))]


def test_a_repeated_join_asks_python_once(spark: SparkSession, star: Any) -> None:
    """A repetition of the join on the same snapshots reuses the fact scan (``ScanCache``)
    and, with it, Python's answer to the same runtime filter: no callback at all, the same
    files kept and figures shown. A query whose pruning report is collected still asks
    (its report holds the runtime tier)."""
    service = service_for(spark)
    first = sorted(tuple(r) for r in spark.sql(QUERY).collect())
    before = service.callback_stats()
    df = spark.sql(QUERY)
    again = sorted(tuple(r) for r in df.collect())
    calls = {k: v for k, v in service.callback_stats().since(before).calls.items() if v}
    assert again == first and calls == {}, calls
    executed = df._jdf.queryExecution().executedPlan().toString()
    assert "files 1/9 kept; skipped by stats 1, runtime stats(k) 7" in executed, executed
    before = service.callback_stats()
    with pruning_reports(spark) as reports:
        assert sorted(tuple(r) for r in spark.sql(QUERY).collect()) == first
    calls = {k: v for k, v in service.callback_stats().since(before).calls.items() if v}
    assert calls.get("runtime_filter") == 1, calls
    fact = [r for r in reports if r.table.endswith("fact") and r.skipped_at_runtime]
    assert fact and fact[-1].skipped_at_runtime == {"stats(k)": 7}


def test_empty_dimension_and_no_match(spark: SparkSession, star: Any) -> None:
    for tag, want in (("none", []), ("cold", None)):
        q = QUERY.replace("'hot'", f"'{tag}'")
        got = sorted(tuple(r) for r in spark.sql(q).collect())
        with _runtime_filters_off(spark):
            plain = sorted(tuple(r) for r in spark.sql(q).collect())
        assert got == plain
        if want is not None:
            assert got == want


def test_runtime_filters_only_where_files_can_narrow(spark: SparkSession, star: Any) -> None:
    """A scan declares to Spark only the columns that can narrow its files: not the
    one-file dimension's key, not the fact's ``v`` (0..6 in every file). Each declared
    column lets Spark plan a dynamic pruning subquery that copies the join's other side,
    subqueries included; with every column of every scan declared, TPC-DS q64's joins made
    a plan of over 30,000 nodes that never finished planning. Answers as without runtime
    filters."""
    one = "lakeskip.rt.one"
    spark.sql(f"CREATE TABLE {one} (k BIGINT, tag STRING)")
    spark.sql(f"INSERT INTO {one} SELECT id, 'x' FROM range(0, 800, 1, 1)")  # one file
    queries = [
        # the filter is on the fact side: Spark would prune the dimension by it
        f"SELECT count(*), sum(d.k) FROM {one} d JOIN {F} f ON d.k = f.k WHERE f.v = 3",
        # the join key is the fact's unclustered column
        f"SELECT count(*), sum(f.k) FROM {F} f JOIN {D} d ON f.v = d.k WHERE d.tag = 'hot'",
    ]
    for q in queries:
        explained = "\n".join(r[0] for r in spark.sql(f"EXPLAIN {q}").collect()).lower()
        assert "dynamicpruning" not in explained, (q, explained)
        got = sorted(tuple(r) for r in spark.sql(q).collect())
        with _runtime_filters_off(spark):
            plain = sorted(tuple(r) for r in spark.sql(q).collect())
        assert got == plain
    assert spark.sql(queries[0]).collect()[0][0] == sum(1 for k in range(800) if k % 7 == 3)


def test_dimension_on_the_left_leaves_the_runtime_filter_to_the_fact(
    spark: SparkSession, star: Any
) -> None:
    """Spark's ``PartitionPruning`` tries a join's left side first: a dimension clustered by
    its key (two files apart, so it declares the key) on the left, with a selective
    predicate on both sides, would be pruned by the fact's keys and the fact by nothing.
    ``LakeJoinKeys`` tells the smaller (by rows) left table not to offer that key: the fact
    gets the runtime filter and reads the one file holding the hot keys. Answers as
    without runtime filters and as computed here from the rows."""
    two = "lakeskip.rt.two"
    spark.sql(f"CREATE TABLE {two} (k BIGINT, tag STRING)")
    # two files, each one range of k; 400 rows < the fact's 801. 'zzz' keeps the second
    # file's tag range over 'hot': both files survive the static filter, so the
    # dimension's scan has two files apart and declares k
    for lo, hi in ((0, 400), (400, 800)):
        spark.sql(
            f"INSERT INTO {two} SELECT id, CASE WHEN id BETWEEN 310 AND 320 THEN 'hot' "
            f"WHEN id = 798 THEN 'zzz' ELSE 'cold' END FROM range({lo}, {hi}, 2, 1)"
        )
    q = (
        f"SELECT /*+ BROADCAST(d) */ d.tag, count(*), sum(f.v) FROM {two} d JOIN {F} f "
        "ON d.k = f.k WHERE d.tag = 'hot' AND f.v < 100 GROUP BY d.tag"
    )
    df = spark.sql(q)
    got = sorted(tuple(r) for r in df.collect())
    m = _fact_metrics(df)
    assert (m["lakeskipFilesTotal"], m["lakeskipFilesKept"]) == (9, 1), m
    with _runtime_filters_off(spark):
        off = sorted(tuple(r) for r in spark.sql(q).collect())
    want = [("hot", 6, sum(k % 7 for k in range(310, 321, 2)))]
    assert got == off == want


def _scan_partitions(df: DataFrame, table: str) -> int:
    """How many partitions the executed scan of ``table`` read (after runtime filters; a
    ``LakeV1Scan``'s: its V1 file scan's)."""
    found = [
        int(
            (node.child() if node.nodeName().startswith("LakeV1Scan") else node)
            .inputRDD()
            .getNumPartitions()
        )
        for node in batch_scans(df, table)
    ]
    assert len(found) == 1, found
    return found[0]


def test_kept_files_are_split_as_plain_spark_splits_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The files a runtime filter keeps are packed into partitions as Spark packs a scan of
    just those files, not left in the partitions planned over every file: the two kept files
    of the four largest (planned together in one partition) are read in two tasks, as
    ``spark.read.parquet`` over the same two files reads them. Answers as without runtime
    filters."""
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    fact, dim = "lakeskip.rp.fact", "lakeskip.rp.dim"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.rp")
    spark.sql(f"CREATE TABLE {fact} (k BIGINT, v BIGINT)")
    for i in range(8):  # file i: keys from i * 100000, (i + 1) * 2000 rows (size grows with i)
        lo = i * 100_000
        spark.sql(
            f"INSERT INTO {fact} SELECT id, id * 7919 % 1000003 "
            f"FROM range({lo}, {lo + (i + 1) * 2000}, 1, 1)"
        )
    spark.sql(f"CREATE TABLE {dim} (k BIGINT, tag STRING)")
    spark.sql(
        f"INSERT INTO {dim} SELECT i * 100000 + j, IF(i IN (4, 5), 'hot', 'cold') "
        "FROM range(0, 8) AS a(i) CROSS JOIN range(0, 10) AS b(j)"
    )
    q = f"SELECT count(*), sum(f.v) FROM {fact} f JOIN {dim} d ON f.k = d.k WHERE d.tag = 'hot'"
    spark.conf.set("spark.sql.files.minPartitionNum", "2")
    try:
        df = spark.sql(q)
        got = df.collect()
        m = scan_metrics(df, fact)
        assert m is not None and (m["lakeskipFilesTotal"], m["lakeskipFilesKept"]) == (8, 2), m
        files = s.table("rp.fact").files()
        kept = sorted(
            r[0]
            for r in spark.read.parquet(*files)
            .where("k IN (400000, 500000)")
            .selectExpr("input_file_name()")
            .distinct()
            .collect()
        )
        assert len(kept) == 2
        # planned over all 8 files, the scan has more than one split: it may be split again
        assert spark.read.parquet(*files).rdd.getNumPartitions() >= 2
        assert _scan_partitions(df, fact) == spark.read.parquet(*kept).rdd.getNumPartitions() == 2
        with _runtime_filters_off(spark):
            off = spark.sql(q).collect()
    finally:
        spark.conf.unset("spark.sql.files.minPartitionNum")
    want = [
        (20, sum(k * 7919 % 1000003 for i in (4, 5) for k in range(i * 100000, i * 100000 + 10)))
    ]
    assert [tuple(r) for r in got] == [tuple(r) for r in off] == want
