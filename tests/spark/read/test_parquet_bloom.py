"""``parquet.bloom.filter.*`` table options end to end: files written by Spark tasks carry
row-group bloom filters that Spark's own Parquet reader (parquet-mr) reads and uses to skip row
groups inside a file, and query answers stay the same."""

from __future__ import annotations

from typing import Any

import pyarrow.parquet as pq
import pytest

from lakeskip.spark.read.query import table_file_paths, view_over_files
from lakeskip.spark.write.writer import last_write_timings

ROWS = 4000


def _scan_rows(df: Any) -> int:
    """Rows the Parquet scan of an executed DataFrame produced (after row-group skipping)."""
    found: list[int] = []

    def walk(node: Any) -> None:
        if "Scan" in node.nodeName():
            found.append(int(node.metrics().apply("numOutputRows").value()))
        children = node.children().iterator()
        while children.hasNext():
            walk(children.next())

    walk(df._jdf.queryExecution().executedPlan())
    assert len(found) == 1, f"expected one scan node, found {found}"
    return found[0]


@pytest.fixture
def bloom_table(session):  # type: ignore[no-untyped-def]
    spark = session.spark
    # user_id values spread over every row group in random-looking order: min/max of each
    # row group spans almost everything, so only a bloom filter can skip one
    df = spark.range(0, ROWS, numPartitions=1).selectExpr(
        "id", f"concat('u', cast((id * 7919) % {ROWS} as string)) AS user_id"
    )
    session.sql(
        "CREATE TABLE t (id BIGINT, user_id STRING) WITH ("
        "'parquet.bloom.filter.enabled#user_id' = 'true', "
        "'parquet.bloom.filter.fpp#user_id' = '0.01', "
        "'parquet.block.size' = '4000')"
    )
    session.write(df, "t")
    return session.catalog.get_table("default.t")


def test_spark_reader_skips_row_groups_by_the_bloom_filter(session, bloom_table) -> None:  # type: ignore[no-untyped-def]
    spark = session.spark
    paths = table_file_paths(bloom_table, bloom_table.scan_files())
    groups = sum(pq.ParquetFile(p.removeprefix("file://")).metadata.num_row_groups for p in paths)
    assert groups >= 4, f"parquet.block.size should give several row groups, got {groups}"
    conf = spark._jsc.hadoopConfiguration()
    # dictionary pages could skip row groups too: turn that off to see the bloom filter alone
    saved = {
        k: conf.get(k)
        for k in ("parquet.filter.dictionary.enabled", "parquet.filter.bloom.enabled")
    }
    try:
        conf.set("parquet.filter.dictionary.enabled", "false")
        rows = {}
        for bloom in ("true", "false"):
            conf.set("parquet.filter.bloom.enabled", bloom)
            df = view_over_files(spark, bloom_table.schema.row_type, paths).where("user_id = 'u17'")
            assert len(df.collect()) == 1, "the answer must not depend on the bloom filter"
            rows[bloom] = _scan_rows(df)
    finally:
        for k, v in saved.items():
            conf.unset(k) if v is None else conf.set(k, v)
    assert rows["false"] == ROWS, "without bloom filters every row group is read"
    assert rows["true"] < ROWS // 2, f"the bloom filter should skip row groups: read {rows}"


def test_bloom_filter_is_readable_by_parquet_mr_without_false_negatives(
    session, bloom_table
) -> None:  # type: ignore[no-untyped-def]
    jvm = session.spark._jvm
    conf = session.spark._jsc.hadoopConfiguration()
    binary = jvm.org.apache.parquet.io.api.Binary
    for path in table_file_paths(bloom_table, bloom_table.scan_files()):
        local = pq.ParquetFile(path.removeprefix("file://"))
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
            jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
                jvm.org.apache.hadoop.fs.Path(path), conf
            )
        )
        try:
            blocks = reader.getFooter().getBlocks()
            assert blocks.size() == local.metadata.num_row_groups
            misses = 0
            for g in range(blocks.size()):
                column = blocks.get(g).getColumns().get(1)  # user_id
                bloom = reader.readBloomFilter(column)
                assert bloom is not None, f"row group {g} has no bloom filter"
                for v in local.read_row_group(g, columns=["user_id"]).column(0).to_pylist():
                    assert bloom.findHash(bloom.hash(binary.fromString(v))), f"{v} missing"
                absent = [f"u{ROWS + i}" for i in range(50)]  # inside min/max, never written
                misses += sum(not bloom.findHash(bloom.hash(binary.fromString(v))) for v in absent)
            assert misses > 0, "a bloom filter that finds every absent value skips nothing"
        finally:
            reader.close()


def test_answers_match_a_table_without_parquet_options(session, bloom_table) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE plain (id BIGINT, user_id STRING)")
    session.sql("INSERT INTO plain SELECT * FROM t")
    for where in ("user_id = 'u17'", "user_id = 'u99999'", "user_id IN ('u1', 'u3999', 'x')"):
        got = sorted(session.sql(f"SELECT id FROM t WHERE {where}").collect())
        want = sorted(session.sql(f"SELECT id FROM plain WHERE {where}").collect())
        assert got == want, where


def test_write_reports_stage_timings(session, bloom_table) -> None:  # type: ignore[no-untyped-def]
    timings = last_write_timings()
    assert timings is not None
    assert timings.rows == ROWS
    assert timings.files == len(bloom_table.scan_files())
    assert timings.parquet > 0
