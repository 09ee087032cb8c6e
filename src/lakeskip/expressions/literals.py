"""Literal coercion: a Python literal against a column type, without changing any result.

:func:`coerce_literal` places a literal relative to the values the column type can hold:

* ``exact`` -- the literal *is* a value of the type (``value`` holds its internal form);
* ``between`` -- it falls strictly between two adjacent values ``floor`` and ``ceil``
  (``1.5`` for an INT column: floor 1, ceil 2; either is ``None`` at the type's edge);
* ``below`` / ``above`` -- it is smaller / larger than every value of the type
  (``1000`` for a TINYINT column; a NaN literal against an integer or decimal column is
  ``above``: Spark compares those as doubles, and NaN sorts above every double).

The binder turns the last three into exact rewrites (``a < 1.5`` is ``a <= 1``,
``a = 1.5`` is ``AlwaysFalse``). Comparison semantics follow Spark's type coercion:

* integer/decimal columns against non-integral or wider literals compare numerically and
  exactly (floats by their exact binary value for integer columns, by their shortest
  decimal spelling -- the SQL text -- for decimal columns);
* FLOAT/DOUBLE columns against int/Decimal literals compare as doubles (Spark widens FLOAT
  to DOUBLE), so a double literal that no FLOAT value equals is ``between`` two floats;
* DATE columns accept ``datetime.date`` and ``'YYYY-MM-DD'`` strings; TIMESTAMP columns
  accept datetimes, dates (midnight) and ISO strings. For TIMESTAMP_LTZ a naive value is a
  wall-clock time in the session ``time_zone``; for TIMESTAMP (NTZ) naive values are taken
  as-is and aware ones are converted to the session zone's wall clock;
* anything else must already be of the column's kind, else :class:`TypeMismatchError`.

>>> from lakeskip import types as T
>>> coerce_literal(T.INT, 1.5, "a")
Coerced(kind='between', value=None, floor=1, ceil=2)
>>> coerce_literal(T.TINYINT, 1000, "a").kind
'above'
>>> coerce_literal(T.decimal_type(5, 2), "1.555", "d")
Coerced(kind='between', value=None, floor=Decimal('1.55'), ceil=Decimal('1.56'))
>>> coerce_literal(T.FLOAT, 0.5, "f").kind, coerce_literal(T.FLOAT, 0.1, "f").kind
('exact', 'between')
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from lakeskip.errors import TypeMismatchError
from lakeskip.types import (
    EPOCH_NAIVE,
    EPOCH_UTC,
    INT_RANGES,
    DataType,
    TypeRoot,
    session_time_zone,
    to_internal,
)

__all__ = ["Coerced", "coerce_literal"]

Kind = Literal["exact", "between", "below", "above"]

_NUMBER = (int, float, decimal.Decimal)


@dataclass(frozen=True, slots=True)
class Coerced:
    """Where a literal falls among the values of a type (see the module docstring)."""

    kind: Kind
    value: Any = None
    floor: Any = None
    ceil: Any = None


_BELOW = Coerced("below")
_ABOVE = Coerced("above")


def coerce_literal(t: DataType, value: Any, column: str, time_zone: str = "UTC") -> Coerced:
    """Place ``value`` among the values of ``t``.

    Args:
        t: the (atomic) column type.
        value: a Python literal (not ``None``).
        column: the column's display name, for error messages.
        time_zone: Spark's session time zone (see the module docstring).

    Raises:
        TypeMismatchError: the literal cannot be compared with the column.
    """
    r = t.root

    def bad() -> TypeMismatchError:  # built only when raised: str(t) costs as much as a bind
        return TypeMismatchError(f"cannot compare {column} ({t}) with {value!r}")

    if t.is_integer:
        if isinstance(value, bool) or not isinstance(value, _NUMBER):
            raise bad()
        lo, hi = INT_RANGES[r]
        return _integral(value, lo, hi)
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        if isinstance(value, bool) or not isinstance(value, _NUMBER):
            raise bad()
        try:
            v = float(value)
        except OverflowError:  # an int too large for a double: beyond every float
            return _ABOVE if value > 0 else _BELOW
        return _float32(v) if r is TypeRoot.FLOAT else Coerced("exact", v)
    if r is TypeRoot.DECIMAL:
        if isinstance(value, bool) or not isinstance(value, (*_NUMBER, str)):
            raise bad()
        return _decimal(t, value, bad)
    if t.is_timestamp:
        micros = _timestamp_micros(t, value, time_zone, bad)
        if t.timestamp_unit == "us":
            return Coerced("exact", micros)
        ms, rem = divmod(micros, 1000)
        return Coerced("exact", ms) if rem == 0 else Coerced("between", None, ms, ms + 1)
    try:
        return Coerced("exact", to_internal(t, value))
    except TypeMismatchError as e:
        raise TypeMismatchError(f"cannot compare {column} ({t}) with {value!r}: {e}") from e


def _integral(value: Any, lo: int, hi: int) -> Coerced:
    if isinstance(value, float):
        if math.isnan(value) or value == math.inf:
            return _ABOVE
        if value == -math.inf:
            return _BELOW
        value = decimal.Decimal(value)  # the float's exact binary value
    if isinstance(value, decimal.Decimal):
        if value.is_nan():
            return _ABOVE
        if value.is_infinite():
            return _ABOVE if value > 0 else _BELOW
        f = int(value.to_integral_value(rounding=decimal.ROUND_FLOOR))
        c = int(value.to_integral_value(rounding=decimal.ROUND_CEILING))
    else:
        f = c = int(value)
    if c < lo:
        return _BELOW
    if f > hi:
        return _ABOVE
    if f == c:
        return Coerced("exact", f)
    return Coerced("between", None, f if f >= lo else None, c if c <= hi else None)


def _float32(v: float) -> Coerced:
    if math.isnan(v) or math.isinf(v):
        return Coerced("exact", v)
    with np.errstate(over="ignore"):
        f32 = np.float32(v)
    if float(f32) == v:
        return Coerced("exact", v)
    if float(f32) < v:
        lo, up = f32, np.nextafter(f32, np.float32(np.inf))
    else:
        lo, up = np.nextafter(f32, np.float32(-np.inf)), f32
    # +-inf are FLOAT values too, so both neighbours always exist
    return Coerced("between", None, float(lo), float(up))


def _decimal(t: DataType, value: Any, bad: Callable[[], Exception]) -> Coerced:
    assert t.precision is not None and t.scale is not None
    try:
        d = decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)
    except (decimal.InvalidOperation, ValueError) as e:
        raise bad() from e
    if d.is_nan():
        return _ABOVE
    if d.is_infinite():
        return _ABOVE if d > 0 else _BELOW
    quantum = decimal.Decimal(1).scaleb(-t.scale)
    limit = decimal.Decimal(10) ** (t.precision - t.scale)
    with decimal.localcontext() as ctx:
        ctx.prec = max(80, len(d.as_tuple().digits) + abs(int(d.as_tuple().exponent)) + t.scale)
        f = d.quantize(quantum, rounding=decimal.ROUND_FLOOR)
        c = d.quantize(quantum, rounding=decimal.ROUND_CEILING)
    if c <= -limit:
        return _BELOW
    if f >= limit:
        return _ABOVE
    if f == c:
        return Coerced("exact", f)
    return Coerced("between", None, f if f > -limit else None, c if c < limit else None)


def _timestamp_micros(t: DataType, value: Any, time_zone: str, bad: Callable[[], Exception]) -> int:
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value.strip().replace(" ", "T", 1))
        except ValueError as e:
            raise bad() from e
    elif isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime.datetime):
        raise bad()
    try:
        zone, _ = session_time_zone(time_zone)
    except ValueError as e:
        raise TypeMismatchError(f"unknown session time zone {time_zone!r}") from e
    if t.root is TypeRoot.TIMESTAMP_LTZ:
        if value.tzinfo is None:  # wall-clock time in the session zone, as Spark casts
            value = value.replace(tzinfo=zone, fold=0)
        delta = value - EPOCH_UTC
    else:
        if value.tzinfo is not None:
            value = value.astimezone(zone).replace(tzinfo=None)
        delta = value - EPOCH_NAIVE
    return int((delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds)
