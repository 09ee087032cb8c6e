"""Runtime filters on a column only a file index narrows (issue 39: no cost when nothing can be
skipped). A fact table whose files each hold their own values of ``v`` over overlapping
ranges (as TPC-H's ``lineitem`` holds ``l_orderkey``), with a bitmap index on ``v``: Spark plans
dynamic pruning through a join on ``v`` either way; a join whose keys fit the index's bound
(``INDEX_VALUES_LIMIT``) is asked about and skips the files without those values, a longer one
is not sent to Python at all (its stats would keep every file), and a repetition of that query
plans no dynamic pruning on ``v`` at all. Answers equal those with runtime filtering off and
those computed from the rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import lakeskip
from lakeskip.planner.runtime import INDEX_VALUES_LIMIT
from lakeskip.spark import pruning_reports
from lakeskip.spark.front.catalog_setup import service_for

F = "lakeskip.rtv.fact"
D = "lakeskip.rtv.dim"
FILES = 4
ROWS = 400  # per file: v = file + 4 * i, so every file spans the same range


def _query(hot: int) -> str:
    return f"SELECT count(*), sum(f.v) FROM {F} f JOIN {D} d ON f.v = d.v WHERE d.tag < {hot}"


@pytest.fixture
def fact(spark: SparkSession, tmp_path: Path) -> Any:
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.rtv")
    spark.sql(
        f"CREATE TABLE {F} (v INT, x BIGINT) TBLPROPERTIES ('file-index.bitmap.columns' = 'v')"
    )
    for f in range(FILES):
        spark.sql(
            f"INSERT INTO {F} SELECT CAST({f} + 4 * id AS INT), id FROM range(0, {ROWS}, 1, 1)"
        )
    # the dimension's keys are file 0's values (multiples of 4); tag orders them
    spark.sql(f"CREATE TABLE {D} (v INT, tag INT)")
    spark.sql(f"INSERT INTO {D} SELECT CAST(4 * id AS INT), CAST(id AS INT) FROM range(0, {ROWS})")
    return s


def _run(spark: SparkSession, q: str) -> tuple[list[tuple[Any, ...]], int, list[Any]]:
    """The rows, the runtime_filter callbacks made and the pruning reports of ``q``."""
    service = service_for(spark)
    before = service.callback_stats()
    with pruning_reports(spark) as reports:
        rows = sorted(tuple(r) for r in spark.sql(q).collect())
    calls = service.callback_stats().since(before).calls.get("runtime_filter", 0)
    return rows, calls, list(reports)


@pytest.mark.parametrize("hot", [3, INDEX_VALUES_LIMIT + 10])
def test_runtime_filter_by_index_only_within_its_bound(
    spark: SparkSession, fact: Any, hot: int
) -> None:
    q = _query(hot)
    explained = "\n".join(r[0] for r in spark.sql(f"EXPLAIN {q}").collect()).lower()
    assert "dynamicpruningexpression" in explained, explained
    rows, calls, reports = _run(spark, q)
    kept = [r.kept_files for r in reports if r.table.endswith("fact")]
    again = "\n".join(r[0] for r in spark.sql(f"EXPLAIN {q}").collect()).lower()
    if hot <= INDEX_VALUES_LIMIT:
        assert calls >= 1
        assert min(kept) == 1, kept  # the bitmap keeps file 0 alone
        assert "dynamicpruningexpression" in again, again
    else:
        assert calls == 0  # not asked: stats alone would keep all four files
        assert kept == [FILES], kept
        # the repetition reuses the scan, which no longer declares v: no subquery planned
        assert "dynamicpruningexpression" not in again, again
        assert _run(spark, q)[0] == rows
    spark.conf.set("spark.lakeskip.runtime-filter.enabled", "false")
    try:
        off = sorted(tuple(r) for r in spark.sql(q).collect())
    finally:
        spark.conf.unset("spark.lakeskip.runtime-filter.enabled")
    keys = [4 * i for i in range(hot)]
    assert rows == off == [(len(keys), sum(keys))]


def test_runtime_filter_dropped_at_run_time_is_not_planned_again(
    spark: SparkSession, fact: Any
) -> None:
    """The fact as a join's build side (smaller than the filtered side): Spark plans dynamic
    pruning on ``v`` from the other side, then drops it at run time (that side is no broadcast
    to reuse), so the scan gets no runtime filter. Its repetition, reusing the scan, plans none
    on ``v`` (TPC-H q8's ``orders`` through ``spark-sql``)."""
    big = "lakeskip.rtv.big"
    spark.sql(f"CREATE TABLE {big} (v INT, tag INT, pad STRING)")
    spark.sql(
        f"INSERT INTO {big} SELECT CAST(4 * (id % {ROWS}) AS INT), CAST(id % {ROWS} AS INT), "
        f"sha2(CAST(id AS STRING), 256) FROM range(0, 20000, 1, 1)"
    )
    q = (
        f"SELECT count(*), sum(f.v) FROM {F} f JOIN {big} b ON f.v = b.v "
        f"WHERE b.tag < 3 AND b.pad <> 'q'"
    )
    explained = "\n".join(r[0] for r in spark.sql(f"EXPLAIN {q}").collect())
    assert "dynamicpruningexpression" in explained.lower(), explained
    assert "BuildLeft" in explained, explained  # the fact is the broadcast side
    rows, calls, _ = _run(spark, q)
    assert calls == 0  # dropped at run time: the scan was handed nothing
    again = "\n".join(r[0] for r in spark.sql(f"EXPLAIN {q}").collect()).lower()
    assert "dynamicpruningexpression" not in again, again
    assert _run(spark, q)[0] == rows
    keys = [4 * i for i in range(3)]
    assert rows == [(len(keys) * 20000 // ROWS, sum(keys) * 20000 // ROWS)]


def test_a_reference_without_a_join_does_not_stop_another_ones_runtime_filter(
    spark: SparkSession, fact: Any
) -> None:
    """A CTE read twice in one query: both references are one scan shape, the second built
    from the first's cached scan and sharing its runtime filter state; one is joined to the
    selective dimension (dynamic pruning on ``v``, the bitmap keeps file 0), the other read
    whole (no join, so no runtime filter). The unjoined reference running without a runtime
    filter says nothing about ``v``: repetitions still plan dynamic pruning on the joined one
    (before: they no longer did, 1ae249b's memory took the unjoined run for a dropped filter).
    Answers equal those with runtime filtering off and those computed from the rows."""
    q = (
        f"WITH c AS (SELECT v FROM {F} WHERE v IS NOT NULL) "
        f"SELECT 'joined', count(*), sum(c.v) FROM c JOIN {D} d ON c.v = d.v WHERE d.tag < 3 "
        "UNION ALL SELECT 'whole', count(*), sum(v) FROM c"
    )
    whole = [f + 4 * i for f in range(FILES) for i in range(ROWS)]
    want = sorted([("joined", 3, 0 + 4 + 8), ("whole", len(whole), sum(whole))])
    for run in range(3):  # untagged, as a repeated query runs: the scans are reused
        explained = "\n".join(r[0] for r in spark.sql(f"EXPLAIN {q}").collect()).lower()
        assert "dynamicpruningexpression" in explained, (run, explained)
        assert sorted(tuple(r) for r in spark.sql(q).collect()) == want, run
    rows, calls, reports = _run(spark, q)
    assert rows == want and calls >= 1
    kept = sorted(r.kept_files for r in reports if r.table.endswith("fact"))
    assert kept[0] == 1, kept  # the joined reference: file 0 alone
    spark.conf.set("spark.lakeskip.runtime-filter.enabled", "false")
    try:
        off = sorted(tuple(r) for r in spark.sql(q).collect())
    finally:
        spark.conf.unset("spark.lakeskip.runtime-filter.enabled")
    assert off == want
