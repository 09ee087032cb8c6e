"""Binding: resolve columns against a schema and coerce literals -- without changing results.

:func:`bind` first pushes NOT to the leaves (:func:`rewrite_not`), then resolves each leaf
and coerces its literal (:mod:`lakeskip.expressions.literals`). A literal the column type
cannot hold is rewritten exactly, which is correct in SQL's three-valued logic *because*
NOT is gone by then: ``int_col = 1.5`` becomes ``AlwaysFalse`` (no row is selected),
``int_col <> 1.5`` becomes ``IsNotNull`` (every non-null row), ``int_col < 1.5`` becomes
``int_col <= 1``. Constants are never folded on a column's declared nullability: data files
written by other engines may still hold nulls there, and a wrong answer is worse than a test.

>>> from lakeskip import types as T
>>> from lakeskip.expressions import EqualTo, GreaterThan, In, LessThan, Not
>>> rt = T.RowType.of(("a", T.TINYINT), ("d", T.decimal_type(5, 2)))
>>> bind(rt, LessThan("a", 1.5))
BoundLessThanOrEqual(a, 1)
>>> bind(rt, Not(EqualTo("a", 1000)))
BoundIsNotNull(a)
>>> bind(rt, GreaterThan("d", "1.555"))
BoundGreaterThanOrEqual(d, Decimal('1.56'))
>>> bind(rt, In("a", [1, 2.5, 1000]))
BoundEqualTo(a, 1)
"""

from __future__ import annotations

from lakeskip.errors import ColumnNotFoundError, InvalidArgumentError, TypeMismatchError
from lakeskip.expressions.bound import (
    BoundEqualTo,
    BoundGreaterThanOrEqual,
    BoundIsNotNull,
    BoundIsNull,
    BoundLessThanOrEqual,
    BoundNotEqualTo,
    BoundPredicate,
    BoundReference,
    bound_predicate,
)
from lakeskip.expressions.literals import coerce_literal
from lakeskip.expressions.operators import Operator
from lakeskip.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    LiteralPredicate,
    Not,
    Or,
    Reference,
    SetPredicate,
    UnboundPredicate,
    and_,
    not_,
    or_,
)
from lakeskip.types import RowType, TypeRoot

__all__ = ["bind", "bind_expression", "rewrite_not"]


def rewrite_not(expr: BooleanExpression) -> BooleanExpression:
    """Push every NOT down to the leaves (De Morgan; leaves negate exactly).

    Works on unbound and bound trees; the result contains no :class:`Not`.

    >>> from lakeskip.expressions import EqualTo, IsNull
    >>> rewrite_not(Not(And(EqualTo("a", 1), IsNull("b"))))
    Or(NotEqualTo(Reference('a'), 1), IsNotNull(Reference('b')))
    """
    if isinstance(expr, Not):
        return rewrite_not(expr.child.negate())
    if isinstance(expr, And):
        return and_(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Or):
        return or_(rewrite_not(expr.left), rewrite_not(expr.right))
    return expr


def bind(
    schema: RowType,
    expr: BooleanExpression,
    case_sensitive: bool = False,
    time_zone: str = "UTC",
) -> BooleanExpression:
    """Resolve ``expr`` against ``schema``; NOT is pushed to the leaves first.

    The literal rewrites (``int_col <> 1.5`` -> ``IsNotNull``) are exact only on NOT-free
    trees: under a NOT, ``AlwaysFalse`` standing for "no row" would turn into "every row",
    nulls included. That is why this function calls :func:`rewrite_not` itself; the result
    never contains a :class:`Not`. (:func:`bind_expression` binds without the push-down.)

    Args:
        schema: the table's row type.
        expr: an unbound (or partly bound) expression.
        case_sensitive: match column names exactly (default: like Spark, case-insensitive;
            an exact match wins over a case-insensitive one).
        time_zone: Spark's session time zone: naive datetimes and strings compared with
            TIMESTAMP_LTZ columns are wall-clock times there; aware datetimes compared with
            TIMESTAMP (NTZ) columns are converted to its wall clock.

    Returns:
        A bound tree of ``And``/``Or``/``AlwaysTrue``/``AlwaysFalse`` and
        :class:`~lakeskip.expressions.bound.BoundPredicate` leaves.

    Raises:
        ColumnNotFoundError: a column does not exist (the message names it).
        TypeMismatchError: a literal cannot be compared with its column, a map-key
            reference is not on a ``MAP<STRING, ...>`` column, or a prefix test is not on a
            STRING column.
    """
    return bind_expression(schema, rewrite_not(expr), case_sensitive, time_zone)


def bind_expression(
    schema: RowType,
    expr: BooleanExpression,
    case_sensitive: bool = False,
    time_zone: str = "UTC",
) -> BooleanExpression:
    """Bind without pushing NOT down: each ``Not`` becomes ``Not`` of its bound child.

    Exact when ``expr`` has no ``Not`` over a leaf whose literal is rewritten; prefer
    :func:`bind`. Arguments and errors as for :func:`bind`.
    """
    return _Binder(schema, case_sensitive, time_zone).bind(expr)


class _Binder:
    def __init__(self, schema: RowType, case_sensitive: bool, time_zone: str) -> None:
        self.schema = schema
        self.case_sensitive = case_sensitive
        self.time_zone = time_zone

    def bind(self, expr: BooleanExpression) -> BooleanExpression:
        if isinstance(expr, (AlwaysTrue, AlwaysFalse, BoundPredicate)):
            return expr
        if isinstance(expr, And):
            return and_(self.bind(expr.left), self.bind(expr.right))
        if isinstance(expr, Or):
            return or_(self.bind(expr.left), self.bind(expr.right))
        if isinstance(expr, Not):
            return not_(self.bind(expr.child))
        if isinstance(expr, UnboundPredicate):
            return self.leaf(expr)
        raise InvalidArgumentError(f"cannot bind {expr!r}")

    def reference(self, ref: Reference) -> BoundReference:
        if self.case_sensitive:
            found = [f for f in self.schema if f.name == ref.name]
            if not found:
                raise ColumnNotFoundError(
                    f"column not found: {ref.name} (columns: {', '.join(self.schema.names)})"
                )
            f = found[0]
        else:
            f = self.schema.field(ref.name)
        if ref.key is None:
            return BoundReference(f, f.type)
        t = f.type
        if t.root is not TypeRoot.MAP or t.key is None or t.key.root is not TypeRoot.STRING:
            raise TypeMismatchError(f"{ref.display}: column {f.name} is {t}, not MAP<STRING, ...>")
        assert t.value is not None
        return BoundReference(f, t.value.with_nullable(True), ref.key)

    def leaf(self, p: UnboundPredicate) -> BooleanExpression:
        term = self.reference(p.term)
        op = p.op
        if op is Operator.IS_NULL:
            return BoundIsNull(term)
        if op is Operator.NOT_NULL:
            return BoundIsNotNull(term)
        t = term.type
        if t.is_nested:
            raise TypeMismatchError(f"cannot compare {term.name} ({t}) with a literal")
        if isinstance(p, SetPredicate):
            return self.set_leaf(op, term, p)
        assert isinstance(p, LiteralPredicate)
        if op in (Operator.STARTS_WITH, Operator.NOT_STARTS_WITH):
            if t.root is not TypeRoot.STRING or not isinstance(p.value, str):
                raise TypeMismatchError(
                    f"cannot test {term.name} ({t}) for prefix {p.value!r}: "
                    "STARTS WITH needs a STRING column and a string prefix"
                )
            if p.value == "":  # every non-null string starts with ""
                return BoundIsNotNull(term) if op is Operator.STARTS_WITH else AlwaysFalse()
            return bound_predicate(op, term, p.value)
        c = coerce_literal(t, p.value, term.name, self.time_zone)
        if c.kind == "exact":
            return bound_predicate(op, term, c.value)
        match op:
            case Operator.EQ:
                return AlwaysFalse()
            case Operator.NE:
                return BoundIsNotNull(term)
            case Operator.LT | Operator.LE if c.kind == "between":
                # floor < literal < ceil, with no value in between
                return AlwaysFalse() if c.floor is None else BoundLessThanOrEqual(term, c.floor)
            case Operator.GT | Operator.GE if c.kind == "between":
                return AlwaysFalse() if c.ceil is None else BoundGreaterThanOrEqual(term, c.ceil)
            case Operator.LT | Operator.LE:
                return AlwaysFalse() if c.kind == "below" else BoundIsNotNull(term)
            case Operator.GT | Operator.GE:
                return BoundIsNotNull(term) if c.kind == "below" else AlwaysFalse()
            case _:
                raise InvalidArgumentError(f"cannot bind {p!r}: {op} takes no single literal")

    def set_leaf(self, op: Operator, term: BoundReference, p: SetPredicate) -> BooleanExpression:
        is_in = op is Operator.IN
        if not p.values:  # a node built without in_/not_in: IN () is false, NOT IN () true
            return AlwaysFalse() if is_in else AlwaysTrue()
        # a list value the type cannot hold never equals a row value: drop it (for NOT IN
        # too: ``a <> 1.5`` holds for every non-null ``a``, the AND's identity)
        kept = set()
        for v in p.values:
            c = coerce_literal(term.type, v, term.name, self.time_zone)
            if c.kind == "exact":
                kept.add(c.value)
        if not kept:
            return AlwaysFalse() if is_in else BoundIsNotNull(term)
        if len(kept) == 1:
            v = next(iter(kept))
            return BoundEqualTo(term, v) if is_in else BoundNotEqualTo(term, v)
        return bound_predicate(op, term, values=kept)
