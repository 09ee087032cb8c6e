"""Functions of a column prune (issue 39): ``year(ts)``, ``year(ts) AND month(ts)``,
``CAST(ts AS DATE)``, ``year(d)``, ``substring(s, 1, n)``, ``date_trunc(unit, ts)`` through
``spark.sql`` on the catalog, on a table clustered by time, in several session time zones; never
a wrong answer against plain Spark reading the same rows from Parquet Spark wrote itself
(hypothesis), also on rows every ten minutes around daylight-saving switches (``date_trunc``)."""

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


def _run(
    spark: SparkSession,
    where: str,
    zone: str,
    table: str = "lkfn.f.t",
    plain: str = "fn_plain",
) -> tuple[list[Any], list[Any], Any]:
    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        with lakeskip.spark.pruning_reports(spark) as reports:
            got = sorted(r[0] for r in spark.sql(f"SELECT id FROM {table} WHERE {where}").collect())
        want = sorted(r[0] for r in spark.sql(f"SELECT id FROM {plain} WHERE {where}").collect())
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
        ("date_trunc('DAY', ts) = TIMESTAMP '2024-02-29 00:00:00'", 2),
        ("date_trunc('MONTH', ts) = TIMESTAMP '2023-06-01 00:00:00'", 2),
        ("date_trunc('mm', ts) = '2023-06-01'", 2),
        ("date_trunc('YEAR', ts) < TIMESTAMP '2023-01-01 00:00:00'", 6),
        ("date_trunc('QUARTER', ts) >= TIMESTAMP '2024-04-01 00:00:00'", 3),
        (
            "date_trunc('HOUR', ts) BETWEEN TIMESTAMP '2023-03-12 00:00:00' "
            "AND TIMESTAMP '2023-03-12 12:00:00'",
            2,
        ),
        (
            "date_trunc('WEEK', ts) IN (TIMESTAMP '2023-01-02 00:00:00', "
            "TIMESTAMP '2024-01-01 00:00:00')",
            4,
        ),
        ("date_trunc('DD', ts) > TIMESTAMP '2024-06-20 12:00:00'", 2),
        ("date_trunc('DAY', tn) = TIMESTAMP '2023-09-09 00:00:00'", 2),
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


#: UTC instants of clock changes in 2023: Los Angeles, London, Lord Howe (30 minutes), and
#: Santiago, whose clocks go from 24:00 back to 23:00 and from 24:00 on to 01:00 (a day's
#: truncation is not monotone there)
SWITCHES = [
    datetime.datetime(2023, 3, 12, 10, tzinfo=datetime.UTC),
    datetime.datetime(2023, 11, 5, 9, tzinfo=datetime.UTC),
    datetime.datetime(2023, 3, 26, 1, tzinfo=datetime.UTC),
    datetime.datetime(2023, 10, 29, 1, tzinfo=datetime.UTC),
    datetime.datetime(2023, 4, 1, 15, tzinfo=datetime.UTC),
    datetime.datetime(2023, 9, 30, 15, 30, tzinfo=datetime.UTC),
    datetime.datetime(2023, 4, 2, 3, tzinfo=datetime.UTC),
    datetime.datetime(2023, 9, 3, 4, tzinfo=datetime.UTC),
]
#: rows every 601 seconds from a day before each switch to a day after
SWITCH_ROWS = 288
TRUNC_ZONES = [*ZONES, "Europe/London", "America/Santiago"]
TRUNC_UNITS = [
    "MICROSECOND",
    "MILLISECOND",
    "SECOND",
    "MINUTE",
    "HOUR",
    "DAY",
    "DD",
    "WEEK",
    "MONTH",
    "MM",
    "MON",
    "QUARTER",
    "YEAR",
    "YYYY",
    "YY",
    "DECADE",
]


@pytest.fixture(scope="module")
def switches(
    spark: SparkSession, clustered: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """``lkfn.f.dst`` (8 files, rows every ten minutes around :data:`SWITCHES`) and
    ``fn_dst_plain`` (the same rows as Spark writes Parquet itself)."""
    root = tmp_path_factory.mktemp("fn_dst")
    seconds = [int(at.timestamp()) - 86400 + i * 601 for at in SWITCHES for i in range(SWITCH_ROWS)]
    spark.sql("CREATE TABLE lkfn.f.dst (id BIGINT, ts TIMESTAMP, tn TIMESTAMP_NTZ)")
    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        rows = spark.createDataFrame(list(enumerate(seconds)), "id BIGINT, sec BIGINT").selectExpr(
            "id",
            "timestamp_seconds(sec) AS ts",
            "CAST(timestamp_seconds(sec) AS TIMESTAMP_NTZ) AS tn",
        )
        rows.repartitionByRange(8, "ts").sortWithinPartitions("ts").writeTo("lkfn.f.dst").append()
        rows.repartitionByRange(8, "ts").write.parquet(str(root / "plain"))
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)
    spark.read.parquet(str(root / "plain")).createOrReplaceTempView("fn_dst_plain")
    yield None
    spark.catalog.dropTempView("fn_dst_plain")


@st.composite
def trunc_predicate(draw: st.DrawFn, near: list[datetime.datetime]) -> str:
    """``date_trunc(unit, ts or tn)`` compared with local times near ``near``, often unit
    starts (``tn``: TIMESTAMP_NTZ, which Spark casts to TIMESTAMP for ``date_trunc``)."""
    unit = draw(st.sampled_from(TRUNC_UNITS))
    column = draw(st.sampled_from(["ts", "ts", "tn"]))

    def literal() -> str:
        at = draw(st.sampled_from(near)).replace(tzinfo=None) + datetime.timedelta(
            seconds=draw(st.integers(-3 * 86400, 3 * 86400)),
            microseconds=draw(st.sampled_from([0, 0, 1, 999_999])),
        )
        cut = draw(st.sampled_from(["us", "s", "min", "h", "day", "month", "year"]))
        if cut != "us":
            at = at.replace(microsecond=0)
        if cut in ("min", "h", "day", "month", "year"):
            at = at.replace(second=0)
        if cut in ("h", "day", "month", "year"):
            at = at.replace(minute=draw(st.sampled_from([0, 0, 30])))
        if cut in ("day", "month", "year"):
            at = at.replace(hour=0, minute=0)
        if cut in ("month", "year"):
            at = at.replace(day=1)
        if cut == "year":
            at = at.replace(month=1)
        return f"TIMESTAMP '{at.isoformat(sep=' ')}'"

    fn = f"date_trunc('{unit}', {column})"
    form = draw(st.sampled_from(["=", "<", "<=", ">", ">=", "<>", "<=>", "IN", "BETWEEN"]))
    if form == "IN":
        return f"{fn} IN ({', '.join(literal() for _ in range(draw(st.integers(1, 12))))})"
    if form == "BETWEEN":
        return f"{fn} BETWEEN {literal()} AND {literal()}"
    if draw(st.booleans()):
        return f"{fn} {form} {literal()}"
    flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(form, form)
    return f"{literal()} {flipped} {fn}"


#: the clustered table's days, as instants to draw literals near
_SPAN = [
    datetime.datetime.fromtimestamp(START, datetime.UTC) + datetime.timedelta(days=d)
    for d in range(0, 735, 15)
]


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=10, fuzz=120),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=st.data(),
    dst=st.booleans(),
    zone=st.sampled_from(TRUNC_ZONES),
    shape=st.sampled_from(["one", "and", "not_or"]),
)
def test_date_trunc_never_skips_a_matching_row(
    spark: SparkSession, switches: None, data: st.DataObject, dst: bool, zone: str, shape: str
) -> None:
    """``date_trunc`` comparisons against the no-index oracle, on the clustered table and on
    rows every ten minutes around clock changes, in zones with and without them."""
    pred = trunc_predicate(SWITCHES if dst else _SPAN)
    where = data.draw(pred)
    if shape == "and":
        where = f"{where} AND {data.draw(pred)}"
    elif shape == "not_or":
        where = f"NOT ({where}) OR {data.draw(pred)}"
    table, plain = ("lkfn.f.dst", "fn_dst_plain") if dst else ("lkfn.f.t", "fn_plain")
    got, want, _ = _run(spark, where, zone, table, plain)
    assert got == want, f"WHERE {where} ({zone}, {table}): {len(got)} rows, plain {len(want)}"


@pytest.mark.parametrize("zone", ["UTC", "America/Santiago", "Australia/Lord_Howe"])
def test_date_trunc_around_clock_changes_prunes_and_answers(
    spark: SparkSession, switches: None, zone: str
) -> None:
    """A day and an hour at a clock change: plain Spark's rows, from at most 3 of the 8 files."""
    for where in (
        "date_trunc('DAY', ts) = TIMESTAMP '2023-04-01 00:00:00'",
        "date_trunc('HOUR', ts) = TIMESTAMP '2023-09-03 01:00:00'",
        "date_trunc('DAY', ts) IN (TIMESTAMP '2023-09-02 00:00:00', '2023-09-03 01:00:00')",
    ):
        got, want, report = _run(spark, where, zone, "lkfn.f.dst", "fn_dst_plain")
        assert got == want, f"WHERE {where} ({zone}): {len(got)} rows, plain {len(want)}"
        assert report is not None and report.kept_files <= 3, f"{where} ({zone}): {report}"
