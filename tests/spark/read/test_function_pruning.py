"""Functions of a column prune (issue 39): ``year(ts)``, ``year(ts) AND month(ts)``,
``CAST(ts AS DATE)``, ``year(d)``, ``substring(s, 1, n)`` through ``spark.sql`` on the catalog,
on a table clustered by time, in several session time zones; never a wrong answer against
plain Spark reading the same rows from Parquet Spark wrote itself (hypothesis)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from tests.examples import spark_examples

import lakeskip
import lakeskip.spark

FILES = 12
#: rows over 2022-07 .. 2024-06, one every ~6 hours (the DST switches of every zone inside)
ROWS = 2920
START = 1656633600  # 2022-07-01 00:00:00 UTC

ZONES = ["UTC", "America/Los_Angeles", "Asia/Kolkata", "+05:30", "Australia/Lord_Howe"]


@pytest.fixture(scope="module")
def clustered(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``lakeskip.f.t`` (12 files clustered by ``ts``) and ``fn_plain`` (the same rows, as
    Spark writes and reads Parquet itself)."""
    root = tmp_path_factory.mktemp("fn")
    s = lakeskip.connect(str(root / "wh"), spark=spark, catalog_name="lkfn")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lkfn.f")
    spark.sql(
        "CREATE TABLE lkfn.f.t (id BIGINT, ts TIMESTAMP, tn TIMESTAMP_NTZ, d DATE, s STRING) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns' = 's')"
    )
    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        rows = spark.sql(
            f"""SELECT id, ts, CAST(ts AS TIMESTAMP_NTZ) AS tn, CAST(ts AS DATE) AS d,
                       concat('u', lpad(CAST(id AS STRING), 5, '0')) AS s
                FROM (SELECT id, timestamp_seconds({START} + id * 21601) AS ts
                      FROM range({ROWS}))"""
        )
        rows.repartitionByRange(FILES, "ts").sortWithinPartitions("ts").writeTo("lkfn.f.t").append()
        rows.repartitionByRange(FILES, "ts").write.parquet(str(root / "plain"))
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)
    spark.read.parquet(str(root / "plain")).createOrReplaceTempView("fn_plain")
    yield s
    spark.catalog.dropTempView("fn_plain")


def _run(spark: SparkSession, where: str, zone: str) -> tuple[list[Any], list[Any], Any]:
    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        with lakeskip.spark.pruning_reports(spark) as reports:
            got = sorted(
                r[0] for r in spark.sql(f"SELECT id FROM lkfn.f.t WHERE {where}").collect()
            )
        want = sorted(r[0] for r in spark.sql(f"SELECT id FROM fn_plain WHERE {where}").collect())
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)
    return got, want, reports[0] if reports else None


@pytest.mark.parametrize(
    ("where", "most"),
    [
        ("year(ts) = 2023 AND month(ts) = 6", 2),
        ("year(ts) = 2023", 7),
        ("year(ts) < 2023", 6),
        ("CAST(ts AS DATE) = DATE '2024-02-29'", 2),
        ("CAST(ts AS DATE) >= DATE '2024-05-01'", 2),
        ("to_date(ts) = DATE '2023-01-15'", 2),
        ("year(d) = 2024 AND month(d) = 2", 2),
        ("CAST(tn AS DATE) = DATE '2023-09-09'", 2),
        ("substring(s, 1, 5) = 'u0009'", 2),
        ("substr(s, 1, 6) = 'u00123'", 2),
    ],
)
@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_function_of_a_column_prunes_files(
    spark: SparkSession, clustered: Any, where: str, most: int, zone: str
) -> None:
    got, want, report = _run(spark, where, zone)
    assert got == want, f"WHERE {where} ({zone}): {len(got)} rows, plain Spark {len(want)}"
    assert want, "the query selects rows"
    assert report is not None and report.total_files == FILES
    assert report.kept_files <= most, f"WHERE {where} ({zone}): {report.summary()}"


DAY = datetime.date(2022, 6, 25)


@st.composite
def function_predicate(draw: st.DrawFn) -> str:
    op = draw(st.sampled_from(["=", "<", "<=", ">", ">=", "<>"]))
    kind = draw(st.sampled_from(["cast", "cast_ntz", "year", "year_month", "year_d", "substr"]))
    day = DAY + datetime.timedelta(days=draw(st.integers(0, 740)))
    if kind == "cast":
        return f"CAST(ts AS DATE) {op} DATE '{day}'"
    if kind == "cast_ntz":
        return f"CAST(tn AS DATE) {op} DATE '{day}'"
    if kind == "year":
        return f"year(ts) {op} {draw(st.integers(2021, 2025))}"
    if kind == "year_d":
        return f"year(d) {op} {draw(st.integers(2021, 2025))}"
    if kind == "year_month":
        return f"year(ts) = {day.year} AND month(ts) = {draw(st.integers(0, 13))}"
    n = draw(st.integers(0, 7))
    prefix = "u" + str(draw(st.integers(0, 3000))).zfill(5)
    return f"substring(s, 1, {n}) = '{prefix[: draw(st.integers(0, 7))]}'"


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=8, fuzz=80),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    where=st.one_of(
        function_predicate(),
        st.tuples(function_predicate(), function_predicate()).map(
            lambda t: f"NOT ({t[0]}) OR {t[1]}"
        ),
    ),
    zone=st.sampled_from(ZONES),
)
def test_functions_of_columns_never_skip_a_matching_row(
    spark: SparkSession, clustered: Any, where: str, zone: str
) -> None:
    got, want, _ = _run(spark, where, zone)
    assert got == want, f"WHERE {where} ({zone}): {len(got)} rows, plain Spark {len(want)}"
