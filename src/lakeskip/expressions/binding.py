"""Binding: resolve columns against a schema and coerce literals -- without changing results.

:func:`bind` first pushes NOT to the leaves (:func:`rewrite_not`), then resolves each leaf.
The literal rewrites below are exact in SQL's three-valued logic *because* NOT is gone by
then: e.g. ``int_col = 1.5`` becomes ``AlwaysFalse`` (no row is selected), ``int_col <> 1.5``
becomes ``IsNotNull`` (every non-null row), ``int_col < 1.5`` becomes ``int_col <= 1``.

>>> from lakeskip import types as T
>>> rt = T.RowType.of(("a", T.TINYINT), ("d", T.decimal_type(5, 2)))
>>> bind(rt, LessThan("a", 1.5))
BoundPredicate('le', a, 1)
>>> bind(rt, Not(EqualTo("a", 1000)))
BoundPredicate('not_null', a)
>>> bind(rt, GreaterThan("d", "1.555"))
BoundPredicate('ge', d, Decimal('1.56'))
"""

from __future__ import annotations

import datetime
import decimal
import math
import zoneinfo
from dataclasses import dataclass, field
from typing import Any

from lakeskip.errors import InvalidArgumentError, TypeMismatchError
from lakeskip.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotStartsWith,
    Or,
    Reference,
    StartsWith,
    UnboundPredicate,
)
from lakeskip.types import (
    _INT_RANGES,
    EPOCH_NAIVE,
    EPOCH_UTC,
    DataType,
    Field,
    RowType,
    TypeRoot,
    to_internal,
)

__all__ = ["BoundPredicate", "BoundReference", "bind", "rewrite_not"]

_NEGATED_OP = {
    "eq": "ne",
    "ne": "eq",
    "lt": "ge",
    "ge": "lt",
    "le": "gt",
    "gt": "le",
    "in": "not_in",
    "not_in": "in",
    "is_null": "not_null",
    "not_null": "is_null",
    "starts_with": "not_starts_with",
    "not_starts_with": "starts_with",
}

_OPS = {
    EqualTo: "eq",
    NotEqualTo: "ne",
    LessThan: "lt",
    LessThanOrEqual: "le",
    GreaterThan: "gt",
    GreaterThanOrEqual: "ge",
    In: "in",
    NotIn: "not_in",
    IsNull: "is_null",
    IsNotNull: "not_null",
    StartsWith: "starts_with",
    NotStartsWith: "not_starts_with",
}


@dataclass(frozen=True, slots=True)
class BoundReference:
    """A resolved column (or map key): ``type`` is the type of the values compared."""

    field: Field
    type: DataType
    key: str | None = None

    @property
    def name(self) -> str:
        """The file-index column name: ``col`` or ``col[key]``."""
        return self.field.name if self.key is None else f"{self.field.name}[{self.key}]"

    @property
    def column(self) -> str:
        return self.field.name

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class BoundPredicate(BooleanExpression):
    """A bound leaf: ``op`` is one of eq ne lt le gt ge in not_in is_null not_null
    starts_with not_starts_with; values are in the column type's internal form."""

    op: str
    term: BoundReference
    value: Any = None
    values: frozenset[Any] = field(default_factory=frozenset)

    def negate(self) -> BooleanExpression:
        return BoundPredicate(_NEGATED_OP[self.op], self.term, self.value, self.values)

    def __repr__(self) -> str:
        if self.op in ("is_null", "not_null"):
            return f"BoundPredicate({self.op!r}, {self.term!r})"
        if self.op in ("in", "not_in"):
            try:
                shown = sorted(self.values)
            except TypeError:
                shown = sorted(self.values, key=repr)
            return f"BoundPredicate({self.op!r}, {self.term!r}, {shown!r})"
        return f"BoundPredicate({self.op!r}, {self.term!r}, {self.value!r})"


def rewrite_not(expr: BooleanExpression) -> BooleanExpression:
    """Push every NOT down to the leaves (De Morgan; leaves negate exactly).

    >>> rewrite_not(Not(And(EqualTo("a", 1), IsNull("b"))))
    Or(NotEqualTo(Reference('a'), 1), IsNotNull(Reference('b')))
    """
    if isinstance(expr, Not):
        return rewrite_not(expr.child.negate())
    if isinstance(expr, And):
        return And(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Or):
        return Or(rewrite_not(expr.left), rewrite_not(expr.right))
    return expr


def bind(
    schema: RowType,
    expr: BooleanExpression,
    case_sensitive: bool = False,
    time_zone: str = "UTC",
) -> BooleanExpression:
    """Resolve ``expr`` against ``schema`` (NOT is pushed down first, see module docstring).

    Args:
        schema: the table's row type.
        expr: an unbound expression.
        case_sensitive: match column names exactly (default: case-insensitive, like Spark).
        time_zone: Spark's session time zone; naive datetimes and strings compared with
            TIMESTAMP_LTZ columns are wall-clock times there.

    Raises:
        ColumnNotFoundError: a column does not exist.
        TypeMismatchError: a literal does not fit its column's type.
    """
    return _Binder(schema, case_sensitive, time_zone).bind(rewrite_not(expr))


class _Binder:
    def __init__(self, schema: RowType, case_sensitive: bool, time_zone: str) -> None:
        self.schema = schema
        self.case_sensitive = case_sensitive
        self.time_zone = time_zone

    def bind(self, expr: BooleanExpression) -> BooleanExpression:
        if isinstance(expr, (AlwaysTrue, AlwaysFalse, BoundPredicate)):
            return expr
        if isinstance(expr, And):
            return And(self.bind(expr.left), self.bind(expr.right))
        if isinstance(expr, Or):
            return Or(self.bind(expr.left), self.bind(expr.right))
        if isinstance(expr, Not):  # only reachable when called without rewrite_not
            return Not(self.bind(expr.child))
        if isinstance(expr, UnboundPredicate):
            return self.leaf(expr)
        raise InvalidArgumentError(f"cannot bind {expr!r}")

    def reference(self, ref: Reference) -> BoundReference:
        if self.case_sensitive:
            matches = [f for f in self.schema if f.name == ref.name]
            if not matches:
                self.schema.field(f"\x00{ref.name}")  # raises ColumnNotFoundError
            f = matches[0] if matches else self.schema.field(ref.name)
        else:
            f = self.schema.field(ref.name)
        if ref.key is None:
            return BoundReference(f, f.type)
        t = f.type
        if t.root is not TypeRoot.MAP or t.key is None or t.key.root is not TypeRoot.STRING:
            raise TypeMismatchError(
                f"{ref.display}: column {f.name} is {t}, not a MAP<STRING, ...>"
            )
        assert t.value is not None
        return BoundReference(f, t.value.with_nullable(True), ref.key)

    def leaf(self, p: UnboundPredicate) -> BooleanExpression:
        term = self.reference(p.term)
        op = _OPS[type(p)]
        t = term.type
        nullable = t.nullable or term.key is not None
        if op == "is_null":
            return BoundPredicate(op, term) if nullable else AlwaysFalse()
        if op == "not_null":
            return BoundPredicate(op, term) if nullable else AlwaysTrue()
        not_null = BoundPredicate("not_null", term) if nullable else AlwaysTrue()
        if t.is_nested:
            raise TypeMismatchError(f"cannot compare {term.name} of type {t} with a literal")
        if op in ("starts_with", "not_starts_with"):
            if t.root is not TypeRoot.STRING or not isinstance(p.value, str):  # type: ignore[attr-defined]
                raise TypeMismatchError(
                    f"{term.name}: LIKE prefix needs a STRING column and literal"
                )
            prefix = p.value  # type: ignore[attr-defined]
            if prefix == "":
                return not_null if op == "starts_with" else AlwaysFalse()
            return BoundPredicate(op, term, prefix)
        if op in ("in", "not_in"):
            kept = []
            for v in p.values:  # type: ignore[attr-defined]
                c = self.coerce(term, v)
                if c[0] == "exact":
                    kept.append(c[1])
            values = frozenset(kept)
            if op == "in":
                if not values:
                    return AlwaysFalse()
                if len(values) == 1:
                    return BoundPredicate("eq", term, next(iter(values)))
                return BoundPredicate("in", term, None, values)
            if not values:
                return not_null
            if len(values) == 1:
                return BoundPredicate("ne", term, next(iter(values)))
            return BoundPredicate("not_in", term, None, values)
        kind, x, y = self.coerce(term, p.value)  # type: ignore[attr-defined]
        if kind == "exact":
            return BoundPredicate(op, term, x)
        if kind == "between":  # x < literal < y, both representable or None
            if op == "eq":
                return AlwaysFalse()
            if op == "ne":
                return not_null
            if op in ("lt", "le"):
                return BoundPredicate("le", term, x) if x is not None else AlwaysFalse()
            return BoundPredicate("ge", term, y) if y is not None else AlwaysFalse()
        below = kind == "below"
        if op == "eq":
            return AlwaysFalse()
        if op == "ne":
            return not_null
        if op in ("lt", "le"):
            return AlwaysFalse() if below else not_null
        return not_null if below else AlwaysFalse()

    # -- literal coercion -------------------------------------------------------------------

    def coerce(self, term: BoundReference, value: Any) -> tuple[str, Any, Any]:
        """("exact", v, None) | ("between", floor, ceil) | ("below"|"above", None, None)."""
        t = term.type
        r = t.root
        bad = TypeMismatchError(f"cannot compare {term.name} ({t}) with {value!r}")
        if t.is_integer:
            if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
                raise bad
            return _integral(value, *_INT_RANGES[r])
        if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
                raise bad
            return ("exact", float(value), None)
        if r is TypeRoot.DECIMAL:
            if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal, str)):
                raise bad
            return _decimal(t, value, bad)
        if r is TypeRoot.TIMESTAMP or r is TypeRoot.TIMESTAMP_LTZ:
            micros = self.timestamp_micros(t, value, bad)
            if t.timestamp_unit == "us":
                return ("exact", micros, None)
            lo, rem = divmod(micros, 1000)
            return ("exact", lo, None) if rem == 0 else ("between", lo, lo + 1)
        try:
            return ("exact", to_internal(t, value), None)
        except TypeMismatchError as e:
            raise TypeMismatchError(f"cannot compare {term.name} ({t}) with {value!r}: {e}") from e

    def timestamp_micros(self, t: DataType, value: Any, bad: Exception) -> int:
        if isinstance(value, str):
            try:
                value = datetime.datetime.fromisoformat(value.strip().replace(" ", "T", 1))
            except ValueError as e:
                raise bad from e
        elif isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            value = datetime.datetime(value.year, value.month, value.day)
        if not isinstance(value, datetime.datetime):
            raise bad
        if t.root is TypeRoot.TIMESTAMP_LTZ:
            if value.tzinfo is None:
                value = value.replace(tzinfo=zoneinfo.ZoneInfo(self.time_zone))
            delta = value - EPOCH_UTC
        else:
            if value.tzinfo is not None:
                raise bad
            delta = value - EPOCH_NAIVE
        return int((delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds)


def _integral(value: Any, lo: int, hi: int) -> tuple[str, Any, Any]:
    if isinstance(value, float):
        if math.isnan(value) or value == math.inf:
            return ("above", None, None)  # Spark orders NaN above every number
        if value == -math.inf:
            return ("below", None, None)
        value = decimal.Decimal(repr(value))
    if isinstance(value, decimal.Decimal):
        if value.is_nan():
            return ("above", None, None)
        f = int(value.to_integral_value(rounding=decimal.ROUND_FLOOR))
        c = int(value.to_integral_value(rounding=decimal.ROUND_CEILING))
    else:
        f = c = int(value)
    if c < lo:
        return ("below", None, None)
    if f > hi:
        return ("above", None, None)
    if f == c:
        return ("exact", f, None)
    return ("between", f if f >= lo else None, c if c <= hi else None)


def _decimal(t: DataType, value: Any, bad: Exception) -> tuple[str, Any, Any]:
    assert t.precision is not None and t.scale is not None
    try:
        d = decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)
    except decimal.InvalidOperation as e:
        raise bad from e
    if d.is_nan():
        return ("above", None, None)
    if d.is_infinite():
        return ("above", None, None) if d > 0 else ("below", None, None)
    quantum = decimal.Decimal(1).scaleb(-t.scale)
    limit = decimal.Decimal(10) ** (t.precision - t.scale)
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        f = d.quantize(quantum, rounding=decimal.ROUND_FLOOR)
        c = d.quantize(quantum, rounding=decimal.ROUND_CEILING)
    if c <= -limit:
        return ("below", None, None)
    if f >= limit:
        return ("above", None, None)
    if f == c:
        return ("exact", f, None)
    return ("between", f if f > -limit else None, c if c < limit else None)
