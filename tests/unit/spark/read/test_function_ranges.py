"""Functions of a column as ranges of it (``function_ranges``): never narrower than Spark's
predicate. Oracle: the function evaluated row by row in Python (``astimezone(zone).date()``,
``.year``, string slicing), on hypothesis-generated values with nulls, in several zones;
wherever it is TRUE the translation must be TRUE, and an exact translation must agree wherever
it is TRUE or FALSE. (The same predicates against Spark itself: tests/spark/read/
test_function_pruning.py.)"""

from __future__ import annotations

import datetime
import operator
import zoneinfo
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from lakeskip.expressions import bind, evaluate_arrow_3vl
from lakeskip.spark.read.function_ranges import function_comparison
from lakeskip.spark.read.predicate_json import predicate_from_json
from lakeskip.types import DATE, STRING, RowType, parse_sql_type

ROW_TYPE = RowType.of(
    ("ts", parse_sql_type("TIMESTAMP")),
    ("tn", parse_sql_type("TIMESTAMP_NTZ")),
    ("d", DATE),
    ("s", STRING),
)
ZONES = ["UTC", "+05:30", "America/Los_Angeles", "Australia/Lord_Howe", "Pacific/Apia"]
OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "<>": operator.ne,
}
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
INSTANTS = st.integers(
    int((datetime.datetime(2011, 1, 1, tzinfo=datetime.UTC) - EPOCH).total_seconds()),
    int((datetime.datetime(2013, 1, 1, tzinfo=datetime.UTC) - EPOCH).total_seconds()),
).map(lambda s: EPOCH + datetime.timedelta(seconds=s))
DAYS = st.dates(datetime.date(2010, 12, 25), datetime.date(2013, 1, 5))
STRS = st.text(alphabet="ab", max_size=4)


def _zone(name: str) -> datetime.tzinfo:
    if name == "+05:30":
        return datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    return datetime.UTC if name == "UTC" else zoneinfo.ZoneInfo(name)


def _cast(col: str) -> dict[str, Any]:
    return {"fn": "CAST", "to": "date", "args": [{"ref": [col]}]}


def _extract(field: str, arg: dict[str, Any]) -> dict[str, Any]:
    return {"fn": "EXTRACT", "field": field, "args": [arg]}


def _date_lit(d: datetime.date) -> dict[str, Any]:
    return {"lit": (d - datetime.date(1970, 1, 1)).days, "type": "date"}


def _int(v: int) -> dict[str, Any]:
    return {"lit": v, "type": "integer"}


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], Callable[[dict[str, Any], str], bool | None]]:
    """A JSON filter and Spark's meaning of it on a row (``None``: NULL)."""
    op = draw(st.sampled_from(list(OPS)))
    kind = draw(st.sampled_from(["cast", "cast_ntz", "year", "year_d", "substr", "ym"]))
    day, year = draw(DAYS), draw(st.integers(2010, 2014))

    def local_day(row: dict[str, Any], zone: str) -> datetime.date | None:
        ts = row["ts"]
        return None if ts is None else ts.astimezone(_zone(zone)).date()

    if kind == "cast":
        return {
            "op": op,
            "args": [_cast("ts"), _date_lit(day)],
        }, lambda r, z: None if (v := local_day(r, z)) is None else OPS[op](v, day)
    if kind == "cast_ntz":
        return {
            "op": op,
            "args": [_date_lit(day), _cast("tn")],
        }, lambda r, z: None if r["tn"] is None else OPS[op](day, r["tn"].date())
    if kind == "year":
        return {
            "op": op,
            "args": [_extract("YEAR", _cast("ts")), _int(year)],
        }, lambda r, z: None if (v := local_day(r, z)) is None else OPS[op](v.year, year)
    if kind == "year_d":
        return {
            "op": op,
            "args": [_extract("YEAR", {"ref": ["d"]}), _int(year)],
        }, lambda r, z: None if r["d"] is None else OPS[op](r["d"].year, year)
    if kind == "ym":
        month = draw(st.integers(0, 13))
        node = {
            "op": "AND",
            "args": [
                {"op": "=", "args": [_extract("YEAR", _cast("ts")), _int(year)]},
                {"op": "=", "args": [_extract("MONTH", _cast("ts")), _int(month)]},
            ],
        }
        return (
            node,
            lambda r, z: (
                None if (v := local_day(r, z)) is None else (v.year, v.month) == (year, month)
            ),
        )
    n, pos = draw(st.integers(-1, 5)), draw(st.sampled_from([0, 1, 2]))
    value = draw(STRS)
    args = [{"ref": ["s"]}, _int(pos), _int(n)]

    def substr(r: dict[str, Any], z: str) -> bool | None:
        s = r["s"]
        if s is None:
            return None
        start = max(pos, 1) - 1 if pos >= 0 else 0
        return s[start : start + max(n, 0)] == value

    return {
        "op": "=",
        "args": [{"fn": "SUBSTRING", "args": args}, {"lit": value, "type": "string"}],
    }, substr


ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "ts": st.one_of(st.none(), INSTANTS),
            "d": st.one_of(st.none(), DAYS),
            "s": st.one_of(st.none(), STRS),
        }
    ),
    min_size=1,
    max_size=25,
)


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {
            "ts": pa.array([r["ts"] for r in rows], pa.timestamp("us", tz="UTC")),
            "tn": pa.array([r["tn"] for r in rows], pa.timestamp("us")),
            "d": pa.array([r["d"] for r in rows], pa.date32()),
            "s": pa.array([r["s"] for r in rows], pa.string()),
        }
    )


@given(rows=ROWS, case=cases(), zone=st.sampled_from(ZONES), negate=st.booleans())
def test_function_translation_keeps_every_row_spark_selects(
    rows: list[dict[str, Any]], case: Any, zone: str, negate: bool
) -> None:
    for r in rows:  # the NTZ column: the wall time of ts in UTC
        r["tn"] = None if r["ts"] is None else r["ts"].replace(tzinfo=None)
    node, meaning = case
    if negate:
        node = {"op": "NOT", "args": [node]}
    want = [meaning(r, zone) for r in rows]
    if negate:
        want = [None if v is None else not v for v in want]
    expr = predicate_from_json([node], ROW_TYPE, time_zone=zone)
    if expr is None:
        return  # nothing translated: every file is kept
    got = evaluate_arrow_3vl(bind(ROW_TYPE, expr, time_zone=zone), _table(rows)).to_pylist()
    for row, w, g in zip(rows, want, got, strict=True):
        if w is True:
            assert g is True, f"{node} ({zone}) drops a row Spark selects: {row}"


def test_unknown_functions_and_zones_do_not_translate() -> None:
    lit = _date_lit(datetime.date(2024, 1, 1))
    assert (
        function_comparison("=", _cast("ts"), datetime.date(2024, 1, 1), ROW_TYPE, "Mars/Base")
        is None
    )
    assert (
        function_comparison("=", {"fn": "UPPER", "args": [{"ref": ["s"]}]}, "X", ROW_TYPE, "UTC")
        is None
    )
    assert (
        function_comparison("<>", _cast("ts"), datetime.date(2024, 1, 1), ROW_TYPE, "UTC") is None
    )
    # CAST to a type other than DATE, and of a column that is no timestamp
    other = {"fn": "CAST", "to": "string", "args": [{"ref": ["ts"]}]}
    assert predicate_from_json([{"op": "=", "args": [other, lit]}], ROW_TYPE) is None
    assert predicate_from_json([{"op": "=", "args": [_cast("s"), lit]}], ROW_TYPE) is None
