"""Runtime filters (Spark's dynamic pruning through a join) on primary-key tables, by the
static planner's soundness rules (issue 38):

* merged on read: only filters on key columns narrow the files (a file they rule out holds
  no version of a matching key), here by bucket: a join on the primary key to a filtered
  dimension reads only the buckets of the selected keys, and a key updated since its first
  version still reads as its newest one. A join on a value column plans no runtime filter
  (an older version of a key must never come back because its newer one was skipped).
* with deletion vectors (read raw, one live version per key in the files above level 0):
  pruned file by file like an append table.

Answers are checked against the rows computed here and against the same query with runtime
filtering off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from tests.spark.read.scan_metrics import scan_metrics

import lakeskip

OFF = "spark.lakeskip.runtime-filter.enabled"
HOT = (6, 17, 250)  # 6 and 250 were updated by the second write


def _rows(spark: SparkSession, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def _without_runtime_filters(spark: SparkSession, sql: str) -> list[tuple[Any, ...]]:
    spark.conf.set(OFF, "false")
    try:
        return _rows(spark, sql)
    finally:
        spark.conf.unset(OFF)


@pytest.mark.parametrize(
    "options",
    ["'bucket' = '4'", "'bucket' = '4', 'deletion-vectors.enabled' = 'true'"],
    ids=["merge-on-read", "deletion-vectors"],
)
def test_join_on_the_key_reads_only_the_selected_keys_buckets(
    spark: SparkSession, tmp_path: Path, options: str
) -> None:
    lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.pkrt")
    fact, dim = "lakeskip.pkrt.fact", "lakeskip.pkrt.dim"
    spark.sql(
        f"CREATE TABLE {fact} (id BIGINT, v INT, PRIMARY KEY (id) NOT ENFORCED) "
        f"TBLPROPERTIES ({options})"
    )
    spark.sql(f"INSERT INTO {fact} SELECT id, CAST(id AS INT) FROM range(0, 400)")
    # newer versions of every third key (6 and 250 among them)
    spark.sql(f"INSERT INTO {fact} SELECT id, CAST(-id AS INT) FROM range(0, 400, 3)")
    spark.sql(f"CREATE TABLE {dim} (id BIGINT, tag STRING)")
    spark.sql(
        f"INSERT INTO {dim} SELECT id, CASE WHEN id IN {HOT} THEN 'hot' ELSE 'cold' END "
        "FROM range(0, 400)"
    )
    query = (
        f"SELECT /*+ BROADCAST(d) */ f.id, f.v FROM {fact} f JOIN {dim} d ON f.id = d.id "
        "WHERE d.tag = 'hot'"
    )
    explained = "\n".join(r[0] for r in spark.sql(f"EXPLAIN {query}").collect()).lower()
    assert "dynamicpruningexpression" in explained
    df = spark.sql(query)
    got = sorted(tuple(r) for r in df.collect())
    want = sorted((k, -k if k % 3 == 0 else k) for k in HOT)
    assert got == want == _without_runtime_filters(spark, query)
    m = scan_metrics(df, fact)
    assert m is not None
    # 4 buckets; the selected keys hash to at most 3 of them, their files alone are read
    assert m["lakeskipSkippedRuntime"] > 0, m
    assert 0 < m["lakeskipFilesKept"] < m["lakeskipFilesTotal"], m


def test_join_on_a_value_column_of_a_merged_table_plans_no_runtime_filter(
    spark: SparkSession, tmp_path: Path
) -> None:
    """``v`` is clustered in the files (two disjoint ranges) but a value column of a table
    merged on read: skipping the file of a newer version could bring an older one back."""
    lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.pkv")
    fact, dim = "lakeskip.pkv.fact", "lakeskip.pkv.dim"
    spark.sql(
        f"CREATE TABLE {fact} (id BIGINT, v INT, PRIMARY KEY (id) NOT ENFORCED) "
        "TBLPROPERTIES ('bucket' = '1')"
    )
    spark.sql(f"INSERT INTO {fact} SELECT id, CAST(id AS INT) FROM range(0, 100)")
    # key 5 moves from v = 5 to v = 1005: the old file still holds v = 5
    spark.sql(f"INSERT INTO {fact} SELECT id + 0, CAST(id + 1000 AS INT) FROM range(0, 10)")
    spark.sql(f"CREATE TABLE {dim} (v INT, tag STRING)")
    spark.sql(f"INSERT INTO {dim} VALUES (5, 'hot'), (1005, 'hot'), (50, 'cold')")
    query = (
        f"SELECT /*+ BROADCAST(d) */ f.id, f.v FROM {fact} f JOIN {dim} d ON f.v = d.v "
        "WHERE d.tag = 'hot'"
    )
    explained = "\n".join(r[0] for r in spark.sql(f"EXPLAIN {query}").collect()).lower()
    assert "dynamicpruning" not in explained
    assert _rows(spark, query) == [(5, 1005)]
