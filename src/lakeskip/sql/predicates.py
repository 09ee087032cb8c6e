"""SQL boolean expressions -> :mod:`lakeskip.expressions` trees, never-wrong.

The one rule: NOT is pushed down *while translating* (a polarity flag travels down the tree),
and only then is anything not understood replaced by ``AlwaysTrue`` ("might match"). In SQL's
three-valued logic ``NOT (a = 1)`` selects exactly the rows ``a <> 1`` selects, so negating a
leaf is exact; but ``NOT <unknown>`` must not become ``NOT AlwaysTrue``.

Each leaf is also bound alone against the table's row type: when our coercion of the literal
fails (e.g. ``string_col = 5``, which Spark may coerce differently), the leaf becomes unknown.

Example:
    >>> import sqlglot
    >>> from lakeskip import types as T
    >>> from lakeskip.expressions import Reference
    >>> rt = T.RowType.of(("a", T.INT), ("s", T.STRING))
    >>> def col(n):
    ...     return Reference(n.name) if n.__class__.__name__ == "Column" else None
    >>> def tr(sql):
    ...     return to_expression(sqlglot.parse_one(sql, read="spark"), col, rt)
    >>> tr("NOT (a IN (1, NULL))")
    AlwaysFalse()
    >>> tr("NOT (a < 3 OR upper(s) = 'X')") == tr("a >= 3")
    True
    >>> tr("NOT (a < 3 AND upper(s) = 'X')")
    AlwaysTrue()
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from lakeskip.errors import LakeskipError
from lakeskip.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
    EqualTo,
    IsNotNull,
    IsNull,
    NotEqualTo,
    NotStartsWith,
    Operator,
    Reference,
    StartsWith,
    and_,
    bind,
    in_,
    literal_predicate,
    not_in,
    or_,
)
from lakeskip.sql.literals import NULL, try_literal
from lakeskip.types import RowType

__all__ = ["ColumnResolver", "to_expression"]

ColumnResolver = Callable[[exp.Expression], Reference | None]

# sqlglot comparison node -> (operator, null-safe); ``a <=> b`` is EQ made null-safe and
# ``a IS DISTINCT FROM b`` NE made null-safe
_CMP: dict[type[exp.Expression], tuple[Operator, bool]] = {
    exp.EQ: (Operator.EQ, False),
    exp.NEQ: (Operator.NE, False),
    exp.LT: (Operator.LT, False),
    exp.LTE: (Operator.LE, False),
    exp.GT: (Operator.GT, False),
    exp.GTE: (Operator.GE, False),
    exp.NullSafeEQ: (Operator.EQ, True),
    exp.NullSafeNEQ: (Operator.NE, True),
}


def to_expression(
    node: exp.Expression,
    column_of: ColumnResolver,
    row_type: RowType,
    time_zone: str = "UTC",
) -> BooleanExpression:
    """Translate a SQL predicate for one table (see the module docstring)."""
    return _Translator(column_of, row_type, time_zone).translate(node, False)


class _Translator:
    def __init__(self, column_of: ColumnResolver, row_type: RowType, time_zone: str) -> None:
        self.column_of = column_of
        self.row_type = row_type
        self.time_zone = time_zone

    def checked(self, leaf: BooleanExpression) -> BooleanExpression:
        """The leaf if it binds against the table; unknown (AlwaysTrue) otherwise."""
        try:
            bind(self.row_type, leaf, time_zone=self.time_zone)
        except (LakeskipError, ValueError, TypeError, ArithmeticError):
            return AlwaysTrue()
        return leaf

    def translate(self, node: exp.Expression, neg: bool) -> BooleanExpression:
        if isinstance(node, exp.Paren):
            return self.translate(node.this, neg)
        if isinstance(node, exp.Not):
            return self.translate(node.this, not neg)
        if isinstance(node, (exp.And, exp.Or)):
            left = self.translate(node.this, neg)
            right = self.translate(node.expression, neg)
            conj = isinstance(node, exp.And) != neg  # De Morgan
            return and_(left, right) if conj else or_(left, right)
        if isinstance(node, exp.Boolean):
            return AlwaysTrue() if bool(node.this) != neg else AlwaysFalse()
        if isinstance(node, exp.Null):
            return AlwaysFalse()  # WHERE NULL and WHERE NOT NULL select nothing
        cmp = _CMP.get(type(node))
        if cmp is not None:
            return self.comparison(node.this, cmp[0], node.expression, neg, null_safe=cmp[1])
        if isinstance(node, exp.In):
            return self.in_list(node, neg)
        if isinstance(node, exp.Between):
            both = exp.And(
                this=exp.GTE(this=node.this, expression=node.args["low"]),
                expression=exp.LTE(this=node.this, expression=node.args["high"]),
            )
            return self.translate(both, neg)
        if isinstance(node, (exp.Is, exp.Like)) and node.args.get("negate"):
            # sqlglot spells ``s NOT LIKE p`` as Like(negate=True), not Not(Like(...))
            neg = not neg
        if isinstance(node, exp.Is):
            ref = self.column_of(node.this)
            if ref is not None and isinstance(node.expression, exp.Null):
                return self.checked(IsNotNull(ref) if neg else IsNull(ref))
            return AlwaysTrue()
        if isinstance(node, exp.Like):
            return self.like(node, neg)
        ref = self.column_of(node)
        if ref is not None:  # a bare boolean column
            return self.checked(EqualTo(ref, not neg))
        return AlwaysTrue()

    def comparison(
        self,
        left: exp.Expression,
        op: Operator,
        right: exp.Expression,
        neg: bool,
        null_safe: bool = False,
    ) -> BooleanExpression:
        ref = self.column_of(left)
        other = right
        if ref is None:
            ref = self.column_of(right)
            other = left
            op = op.mirrored
        if ref is None:
            return AlwaysTrue()
        ok, value = try_literal(other)
        if not ok:
            return AlwaysTrue()
        if neg:
            op = op.negated  # null-safe ones too: NOT (a <=> b) is a IS DISTINCT FROM b
        if null_safe and op is Operator.EQ:
            return self.checked(IsNull(ref) if value is NULL else EqualTo(ref, value))
        if null_safe:  # IS DISTINCT FROM: also true when exactly one side is NULL
            if value is NULL:
                return self.checked(IsNotNull(ref))
            leaf = self.checked(NotEqualTo(ref, value))
            return AlwaysTrue() if isinstance(leaf, AlwaysTrue) else or_(IsNull(ref), leaf)
        if value is NULL:
            return AlwaysFalse()  # any comparison with NULL is NULL, negated or not
        return self.checked(literal_predicate(op, ref, value))

    def in_list(self, node: exp.In, neg: bool) -> BooleanExpression:
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            return AlwaysTrue()
        ref = self.column_of(node.this)
        if ref is None:
            return AlwaysTrue()
        values = []
        has_null = False
        for e in node.expressions:
            ok, v = try_literal(e)
            if not ok:
                return AlwaysTrue()
            if v is NULL:
                has_null = True
            else:
                values.append(v)
        if neg:
            # a NOT IN (..., NULL) is never true; a NOT IN (x, y) is a <> x AND a <> y
            return AlwaysFalse() if has_null else self.checked(not_in(ref, values))
        if not values:
            return AlwaysFalse()
        return self.checked(in_(ref, values))

    def like(self, node: exp.Like, neg: bool) -> BooleanExpression:
        if node.args.get("escape") is not None:
            return AlwaysTrue()
        ref = self.column_of(node.this)
        ok, pattern = try_literal(node.expression)
        if ref is None or not ok or not isinstance(pattern, str) or "\\" in pattern:
            return AlwaysTrue()
        if "_" in pattern:
            return AlwaysTrue()
        body = pattern.rstrip("%")
        if "%" in body:
            return AlwaysTrue()
        if body == pattern:  # no wildcard: plain equality
            return self.checked(NotEqualTo(ref, body) if neg else EqualTo(ref, body))
        if body == "":  # LIKE '%' matches every non-null string
            return AlwaysFalse() if neg else self.checked(IsNotNull(ref))
        return self.checked(NotStartsWith(ref, body) if neg else StartsWith(ref, body))
