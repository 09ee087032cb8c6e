"""A row-by-row, pure-Python evaluator of *unbound* predicates with Spark's semantics.

Deliberately independent of ``bind``, ``literals`` and ``arrow_eval``: it compares each row's
Python value with the raw literal, so it checks coercion, NOT push-down and the Arrow kernels
at once. Three-valued: ``True`` / ``False`` / ``None`` (unknown).

Semantics encoded here (what the tests hold the library to):
* numbers compare exactly by value (int vs ``Decimal``/float included); FLOAT/DOUBLE values
  and float literals compare as doubles; NaN equals NaN and is above every number; a
  decimal column reads a float literal by its shortest spelling (``repr``), as SQL text;
* DATE accepts ``'YYYY-MM-DD'``; timestamps accept dates (midnight), ISO strings and
  datetimes; naive literals vs TIMESTAMP_LTZ are wall-clock in ``time_zone``, aware
  literals vs TIMESTAMP (NTZ) are converted to that zone's wall clock;
* strings compare by code point, bytes by unsigned bytes.
"""

from __future__ import annotations

import datetime
import decimal
import math
import zoneinfo
from typing import Any

from lakeskip import expressions as E
from lakeskip import types as T

Row = dict[str, Any]


def _is_nan(x: Any) -> bool:
    return (isinstance(x, float) and math.isnan(x)) or (
        isinstance(x, decimal.Decimal) and x.is_nan()
    )


def _cmp(a: Any, b: Any) -> int:
    """Spark's total order for the comparison operators (NaN = NaN, NaN on top)."""
    na, nb = _is_nan(a), _is_nan(b)
    if na or nb:
        return 0 if na and nb else (1 if na else -1)
    return (a > b) - (a < b)


def _literal(t: T.DataType, v: Any, tz: str) -> Any:
    """The literal in the row values' Python form (row values come from ``to_pylist``)."""
    r = t.root
    if r in (T.TypeRoot.FLOAT, T.TypeRoot.DOUBLE):
        return float(v)
    if r is T.TypeRoot.DECIMAL:
        return decimal.Decimal(repr(v)) if isinstance(v, float) else decimal.Decimal(v)
    if r is T.TypeRoot.DATE and isinstance(v, str):
        return datetime.date.fromisoformat(v)
    if t.is_timestamp:
        if isinstance(v, str):
            v = datetime.datetime.fromisoformat(v.replace(" ", "T", 1))
        elif not isinstance(v, datetime.datetime):
            v = datetime.datetime(v.year, v.month, v.day)
        zone = zoneinfo.ZoneInfo(tz)
        if r is T.TypeRoot.TIMESTAMP_LTZ:
            return v if v.tzinfo is not None else v.replace(tzinfo=zone, fold=0)
        return v if v.tzinfo is None else v.astimezone(zone).replace(tzinfo=None)
    return v


def _value(row: Row, ref: E.Reference, schema: T.RowType) -> tuple[Any, T.DataType]:
    f = schema.field(ref.name)
    v = row[f.name]
    if ref.key is None:
        return v, f.type
    assert f.type.value is not None
    if v is None:
        return None, f.type.value
    entries = v.items() if isinstance(v, dict) else v
    for k, x in entries:
        if k == ref.key:
            return x, f.type.value
    return None, f.type.value


def _leaf(p: E.UnboundPredicate, row: Row, schema: T.RowType, tz: str) -> bool | None:
    v, t = _value(row, p.term, schema)
    if isinstance(p, E.IsNull):
        return v is None
    if isinstance(p, E.IsNotNull):
        return v is not None
    if isinstance(p, E.SetPredicate):
        if isinstance(p, E.NotIn) and not p.values:
            return True
        if v is None:
            return None
        hit = any(_cmp(v, _literal(t, x, tz)) == 0 for x in p.values)
        return hit if isinstance(p, E.In) else not hit
    if v is None:
        return None
    assert isinstance(p, E.LiteralPredicate)
    if isinstance(p, E.StartsWith):
        return bool(v.startswith(p.value))
    if isinstance(p, E.NotStartsWith):
        return not v.startswith(p.value)
    c = _cmp(v, _literal(t, p.value, tz))
    return {
        E.EqualTo: c == 0,
        E.NotEqualTo: c != 0,
        E.LessThan: c < 0,
        E.LessThanOrEqual: c <= 0,
        E.GreaterThan: c > 0,
        E.GreaterThanOrEqual: c >= 0,
    }[type(p)]


def eval_row(
    expr: E.BooleanExpression, row: Row, schema: T.RowType, tz: str = "UTC"
) -> bool | None:
    """Kleene three-valued evaluation of an unbound tree on one row."""
    if isinstance(expr, E.AlwaysTrue):
        return True
    if isinstance(expr, E.AlwaysFalse):
        return False
    if isinstance(expr, E.Not):
        x = eval_row(expr.child, row, schema, tz)
        return None if x is None else not x
    if isinstance(expr, E.And):
        a, b = eval_row(expr.left, row, schema, tz), eval_row(expr.right, row, schema, tz)
        if a is False or b is False:
            return False
        return None if a is None or b is None else True
    if isinstance(expr, E.Or):
        a, b = eval_row(expr.left, row, schema, tz), eval_row(expr.right, row, schema, tz)
        if a is True or b is True:
            return True
        return None if a is None or b is None else False
    assert isinstance(expr, E.UnboundPredicate), expr
    return _leaf(expr, row, schema, tz)


def select(
    expr: E.BooleanExpression, rows: list[Row], schema: T.RowType, tz: str = "UTC"
) -> list[bool]:
    """WHERE semantics over rows: selected only where the predicate is true."""
    return [eval_row(expr, r, schema, tz) is True for r in rows]
