"""Comparisons of a function of a column with a literal, as ranges of the column itself.

Spark pushes ``year(ts) = 2023``, ``CAST(ts AS DATE) = DATE '2024-02-29'`` and
``substring(s, 1, 6) = 'u00123'`` to the scan as functions of the column, which min/max
statistics and file indexes cannot judge. Each function here is monotone (non-decreasing) in
its column, so a comparison of it with a literal holds exactly on a range of the column:

* ``CAST(ts AS DATE)`` (``ts`` a TIMESTAMP or TIMESTAMP_NTZ column): the day ``d`` is the
  instants from the start of ``d`` to the start of the next day, in the session time zone for
  TIMESTAMP, as Spark casts;
* ``EXTRACT(YEAR FROM d)`` (``year(...)``) of a DATE column or of such a cast: the year ``y``
  is the days from January 1st of ``y`` to January 1st of ``y + 1``; a ``year = y`` beside a
  ``month = m`` of the same argument (:func:`month_ranges`) is that month's days;
* ``SUBSTRING(s, 1, n) = v``: ``s`` starts with ``v`` when ``v`` has ``n`` characters, is
  ``v`` when it has fewer.

Every translation holds for every row the Spark predicate selects (the module contract of
:mod:`lakeskip.spark.read.predicate_json`); it is *exact* when it selects exactly those rows.
A TIMESTAMP's day boundaries in a zone with daylight-saving or historical offset changes are
computed with Python's tz database, which may differ from the JVM's: such bounds are widened
by :data:`ZONE_MARGIN` and not exact.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any

from lakeskip.expressions import (
    BooleanExpression,
    EqualTo,
    GreaterThanOrEqual,
    LessThan,
    Reference,
    StartsWith,
    and_,
)
from lakeskip.spark.jvm.protocol import PredicateFunction, PredicateKey, PredicateOp
from lakeskip.types import RowType, TypeRoot, session_time_zone

__all__ = ["UTC", "ZONE_MARGIN", "function_comparison", "month_ranges"]

#: the time zone when none is given
UTC = "UTC"

#: how far a day boundary computed in a zone with offset changes is widened
ZONE_MARGIN = datetime.timedelta(hours=3)

Translated = tuple[BooleanExpression, bool]  # (expression, exact)
#: the start of a day as a value of the column (a date, or an instant)
_DayStart = Callable[[datetime.date], Any]


class _DaySource:
    """A DATE-valued expression of one column: the column and where each day starts in it."""

    def __init__(self, column: Reference, start: _DayStart, exact: bool) -> None:
        self.column = column
        self.start = start
        self.exact = exact


def _zone(time_zone: str) -> tuple[datetime.tzinfo, bool] | None:
    """The session time zone and whether its offset never changes (``None``: unknown)."""
    try:
        return session_time_zone(time_zone)
    except ValueError:
        return None


def _ref(node: Any, row_type: RowType) -> tuple[Reference, TypeRoot, bool] | None:
    """A top-level column: its reference, type root and whether it is CHAR(n)."""
    if not isinstance(node, dict) or PredicateKey.REF not in node:
        return None
    names = node[PredicateKey.REF]
    if len(names) != 1 or not row_type.has(str(names[0])):
        return None
    field = row_type.field(str(names[0]))
    return Reference(field.name), field.type.root, field.type.fixed


def _day_source(node: Any, row_type: RowType, time_zone: str) -> _DaySource | None:
    """``node`` as a DATE-valued expression of a column: a DATE column, or ``CAST(ts AS
    DATE)`` of a TIMESTAMP / TIMESTAMP_NTZ column."""
    col = _ref(node, row_type)
    if col is not None:
        return _DaySource(col[0], lambda d: d, True) if col[1] is TypeRoot.DATE else None
    if not isinstance(node, dict) or node.get(PredicateKey.FN) != PredicateFunction.CAST:
        return None
    if node.get(PredicateKey.TO) != "date" or len(node.get(PredicateKey.ARGS, [])) != 1:
        return None
    col = _ref(node[PredicateKey.ARGS][0], row_type)
    if col is None:
        return None
    ref, root, _ = col
    if root is TypeRoot.TIMESTAMP:
        return _DaySource(ref, lambda d: datetime.datetime(d.year, d.month, d.day), True)
    if root is not TypeRoot.TIMESTAMP_LTZ:
        return None
    zone = _zone(time_zone)
    if zone is None:
        return None
    tz, fixed = zone

    def start(d: datetime.date) -> datetime.datetime:
        # fold=0: a midnight that falls in a gap maps to the end of the gap, one that
        # repeats to its first occurrence -- the first instant of the day either way
        local = datetime.datetime(d.year, d.month, d.day, tzinfo=tz, fold=0)
        return local.astimezone(datetime.UTC)

    return _DaySource(ref, start, fixed)


def _range(
    op: str, src: _DaySource, first: datetime.date, after: datetime.date
) -> Translated | None:
    """``f(column) op k`` where the key ``k`` holds from day ``first`` (inclusive) to day
    ``after`` (exclusive) and ``f`` is non-decreasing."""
    margin = datetime.timedelta(0) if src.exact else ZONE_MARGIN
    try:  # widened outwards by the margin (none where exact)
        lo, hi = src.start(first), src.start(after)
        lo_down, lo_up, hi_down, hi_up = lo - margin, lo + margin, hi - margin, hi + margin
    except OverflowError:  # a bound past year 1 or 9999
        return None
    col = src.column
    if op == PredicateOp.EQ:
        out: BooleanExpression = and_(GreaterThanOrEqual(col, lo_down), LessThan(col, hi_up))
    elif op == PredicateOp.LT:
        out = LessThan(col, lo_up)
    elif op == PredicateOp.LE:
        out = LessThan(col, hi_up)
    elif op == PredicateOp.GT:
        out = GreaterThanOrEqual(col, hi_down)
    elif op == PredicateOp.GE:
        out = GreaterThanOrEqual(col, lo_down)
    else:
        return None
    return out, src.exact


def _year_bounds(year: Any) -> tuple[datetime.date, datetime.date] | None:
    if isinstance(year, bool) or not isinstance(year, int) or not 1 <= year <= 9998:
        return None
    return datetime.date(year, 1, 1), datetime.date(year + 1, 1, 1)


def _extract(node: Any, field: str) -> Any | None:
    """The argument of ``EXTRACT(field FROM arg)``, or ``None``."""
    if not isinstance(node, dict) or node.get(PredicateKey.FN) != PredicateFunction.EXTRACT:
        return None
    args = node.get(PredicateKey.ARGS, [])
    if str(node.get(PredicateKey.FIELD, "")).upper() != field or len(args) != 1:
        return None
    return args[0]


def _substring(op: str, node: Any, value: Any, row_type: RowType) -> Translated | None:
    """``SUBSTRING(s, 1[, n]) = v`` as ``s`` starting with / equal to ``v``."""
    args = node.get(PredicateKey.ARGS, [])
    if op != PredicateOp.EQ or not isinstance(value, str) or len(args) not in (2, 3):
        return None
    col = _ref(args[0], row_type)
    if col is None or col[1] is not TypeRoot.STRING or col[2]:  # CHAR(n) pads: not here
        return None
    numbers: list[Any] = [
        a.get(PredicateKey.LIT) if isinstance(a, dict) else None for a in args[1:]
    ]
    if any(isinstance(x, bool) or not isinstance(x, int) for x in numbers):
        return None
    pos = numbers[0]
    if pos not in (0, 1):  # Spark's 0 is 1
        return None
    if len(numbers) == 1:  # the whole string
        return EqualTo(col[0], value), True
    n = int(numbers[1])
    if len(value) == n:
        return StartsWith(col[0], value), True
    if len(value) < n:  # the string is shorter than n: it is the whole string
        return EqualTo(col[0], value), True
    return None  # longer than the substring can be: never true (left to Spark)


def function_comparison(
    op: str, node: Any, value: Any, row_type: RowType, time_zone: str
) -> Translated | None:
    """``node op value`` (``node`` a function node, ``value`` a literal's Python value) as a
    predicate on the function's column, or ``None``."""
    if not isinstance(node, dict) or PredicateKey.FN not in node or value is None:
        return None
    fn = node[PredicateKey.FN]
    if fn == PredicateFunction.SUBSTRING:
        return _substring(op, node, value, row_type)
    if fn == PredicateFunction.CAST and isinstance(value, datetime.date):
        if isinstance(value, datetime.datetime):
            return None
        src = _day_source(node, row_type, time_zone)
        if src is None or value >= datetime.date.max:
            return None
        return _range(op, src, value, value + datetime.timedelta(days=1))
    arg = _extract(node, "YEAR")
    if arg is not None:
        bounds = _year_bounds(value)
        src = _day_source(arg, row_type, time_zone)
        if bounds is None or src is None:
            return None
        return _range(op, src, *bounds)
    return None


def month_ranges(
    filters: Sequence[Any], row_type: RowType, time_zone: str
) -> list[BooleanExpression]:
    """For conjuncts ``year(x) = y`` and ``month(x) = m`` of the same ``x``: the range of
    ``x``'s column that month covers (implied by the two; added beside them)."""
    years: dict[str, tuple[Any, int]] = {}
    months: dict[str, int] = {}
    for f in filters:
        if not isinstance(f, dict) or f.get(PredicateKey.OP) != PredicateOp.EQ:
            continue
        args = f.get(PredicateKey.ARGS, [])
        if len(args) != 2:
            continue
        for fn_node, lit in ((args[0], args[1]), (args[1], args[0])):
            value = lit.get(PredicateKey.LIT) if isinstance(lit, dict) else None
            if isinstance(value, bool) or not isinstance(value, int):
                continue
            year_arg, month_arg = _extract(fn_node, "YEAR"), _extract(fn_node, "MONTH")
            if year_arg is not None:
                years[repr(year_arg)] = (year_arg, value)
            elif month_arg is not None:
                months[repr(month_arg)] = value
    out: list[BooleanExpression] = []
    for key, (arg, year) in years.items():
        month = months.get(key)
        if month is None or not 1 <= month <= 12 or _year_bounds(year) is None:
            continue
        src = _day_source(arg, row_type, time_zone)
        if src is None:
            continue
        first = datetime.date(year, month, 1)
        after = datetime.date(year + (month == 12), month % 12 + 1, 1)
        t = _range(PredicateOp.EQ, src, first, after)
        if t is not None:
            out.append(t[0])
    return out
