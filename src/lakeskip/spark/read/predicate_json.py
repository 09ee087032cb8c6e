"""Spark's pushed predicates (JSON from the catalog's Java side) -> lakeskip expressions.

The Java side transcribes Spark's V2 predicate tree without interpreting it (see
``jvm/java/lakeskip/jvm/read/PredicateJson.java``; its keys and tags are the protocol's
:class:`~lakeskip.spark.jvm.protocol.PredicateKey`, ``PredicateOp`` and ``LiteralType``).
Here it becomes a :class:`~lakeskip.expressions.BooleanExpression` under one rule: the
result must hold for every row the Spark predicate selects (a file is never skipped that
Spark would read a row from). Anything not understood is "might match":

* each translation is either *exact* (selects exactly the same rows) or a *superset*;
* ``AND`` with one untranslatable side keeps the other side, as a superset;
* ``OR`` needs both sides; ``NOT`` needs an exact child (NOT of a superset is not safe);
* ``a <=> 5`` is ``a IS NOT NULL AND a = 5`` (never NULL, so exact also under NOT).

>>> from lakeskip.types import BIGINT, STRING, RowType
>>> rt = RowType.of(("id", BIGINT), ("s", STRING))
>>> ref = {"ref": ["id"]}
>>> lit = {"lit": 5, "type": "integer"}
>>> predicate_from_json([{"op": "=", "args": [ref, lit]}, None], rt)
EqualTo(Reference('id'), 5)
>>> upper = {"op": "=", "args": [{"other": "UPPER(s)"}, {"lit": "X", "type": "string"}]}
>>> predicate_from_json([{"op": "NOT", "args": [{"op": "AND", "args": [
...     {"op": "=", "args": [ref, lit]}, upper]}]}], rt) is None
True
"""

from __future__ import annotations

import base64
import datetime
import decimal
from collections.abc import Callable, Sequence
from typing import Any

from lakeskip.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    Reference,
    StartsWith,
    and_,
    in_,
    not_,
    or_,
)
from lakeskip.spark.jvm.protocol import MAP_KEY_SEPARATOR, LiteralType, PredicateKey, PredicateOp
from lakeskip.spark.read.function_ranges import UTC, function_comparison, month_ranges
from lakeskip.types import EPOCH_DATE, EPOCH_NAIVE, EPOCH_UTC, RowType, TypeRoot

__all__ = ["filters_exact", "literal_from_json", "predicate_from_json", "translate"]

_NO_LITERAL = object()

_COMPARISONS: dict[str, Callable[[Reference, Any], BooleanExpression]] = {
    PredicateOp.EQ: EqualTo,
    PredicateOp.NE: NotEqualTo,
    PredicateOp.LT: LessThan,
    PredicateOp.LE: LessThanOrEqual,
    PredicateOp.GT: GreaterThan,
    PredicateOp.GE: GreaterThanOrEqual,
}
# the comparison seen from the other side: 5 < a is a > 5
_FLIPPED: dict[str, PredicateOp] = {
    PredicateOp.EQ: PredicateOp.EQ,
    PredicateOp.NE: PredicateOp.NE,
    PredicateOp.LT: PredicateOp.GT,
    PredicateOp.LE: PredicateOp.GE,
    PredicateOp.GT: PredicateOp.LT,
    PredicateOp.GE: PredicateOp.LE,
}

Translated = tuple[BooleanExpression, bool]  # (expression, exact)


def literal_from_json(node: Any) -> Any:
    """A JSON literal node as a Python value lakeskip's binder understands.

    >>> literal_from_json({"lit": 19723, "type": "date"})
    datetime.date(2024, 1, 1)
    >>> literal_from_json({"lit": "NaN", "type": "double"})
    nan
    """
    if not isinstance(node, dict) or PredicateKey.LIT not in node:
        return _NO_LITERAL
    value, kind = node[PredicateKey.LIT], node.get(PredicateKey.TYPE)
    if value is None:
        return None
    if kind == LiteralType.INTEGER:
        return int(value)
    if kind == LiteralType.BOOLEAN:
        return bool(value)
    if kind in (LiteralType.FLOAT, LiteralType.DOUBLE):
        return float(value)
    if kind == LiteralType.DECIMAL:
        return decimal.Decimal(value)
    if kind == LiteralType.STRING:
        return str(value)
    if kind == LiteralType.DATE:
        return EPOCH_DATE + datetime.timedelta(days=int(value))
    if kind == LiteralType.TIMESTAMP_LTZ:
        return EPOCH_UTC + datetime.timedelta(microseconds=int(value))
    if kind == LiteralType.TIMESTAMP_NTZ:
        return EPOCH_NAIVE + datetime.timedelta(microseconds=int(value))
    if kind == LiteralType.BINARY:
        return base64.b64decode(value)
    return _NO_LITERAL


def _column(node: Any, row_type: RowType) -> Reference | None:
    if not isinstance(node, dict) or PredicateKey.REF not in node:
        return None
    names = node[PredicateKey.REF]
    if len(names) != 1:
        return None
    name, sep, key = str(names[0]).partition(MAP_KEY_SEPARATOR)
    if not row_type.has(name):
        return None
    field = row_type.field(name)
    if sep:
        if field.type.root is not TypeRoot.MAP:
            return None
        return Reference(field.name, key=key)
    return Reference(field.name)


def translate(node: Any, row_type: RowType, time_zone: str = UTC) -> Translated | None:
    """One predicate node -> ``(expression, exact)``, or ``None`` when it does not translate.

    ``time_zone``: the session's, for functions of TIMESTAMP columns that depend on it
    (:mod:`~lakeskip.spark.read.function_ranges`)."""
    if not isinstance(node, dict) or PredicateKey.OP not in node:
        return None
    op, args = node[PredicateKey.OP], node.get(PredicateKey.ARGS, [])
    if op == PredicateOp.ALWAYS_TRUE:
        return AlwaysTrue(), True
    if op == PredicateOp.ALWAYS_FALSE:
        return AlwaysFalse(), True
    if op == PredicateOp.AND and len(args) == 2:
        left, right = (
            translate(args[0], row_type, time_zone),
            translate(args[1], row_type, time_zone),
        )
        if left is None and right is None:
            return None
        if left is None or right is None:
            return (left or right)[0], False  # type: ignore[index]
        return and_(left[0], right[0]), left[1] and right[1]
    if op == PredicateOp.OR and len(args) == 2:
        left, right = (
            translate(args[0], row_type, time_zone),
            translate(args[1], row_type, time_zone),
        )
        if left is None or right is None:
            return None
        return or_(left[0], right[0]), left[1] and right[1]
    if op == PredicateOp.NOT and len(args) == 1:
        child = translate(args[0], row_type, time_zone)
        if child is None or not child[1]:
            return None
        return not_(child[0]), True
    if op in (PredicateOp.IS_NULL, PredicateOp.IS_NOT_NULL) and len(args) == 1:
        col = _column(args[0], row_type)
        if col is None:
            return None
        return (IsNull(col) if op == PredicateOp.IS_NULL else IsNotNull(col)), True
    if op in _COMPARISONS and len(args) == 2:
        col, value = _column(args[0], row_type), literal_from_json(args[1])
        if col is None and PredicateKey.FN in args[0]:  # a function of a column
            return function_comparison(op, args[0], value, row_type, time_zone)
        if col is None:
            col, value, op = _column(args[1], row_type), literal_from_json(args[0]), _FLIPPED[op]
            if col is None and PredicateKey.FN in args[1]:
                return function_comparison(op, args[1], value, row_type, time_zone)
        if col is None or value is _NO_LITERAL or value is None:
            return None
        return _COMPARISONS[op](col, value), True
    if op == PredicateOp.NULL_SAFE_EQ and len(args) == 2:
        col, value = _column(args[0], row_type), literal_from_json(args[1])
        if col is None:
            col, value = _column(args[1], row_type), literal_from_json(args[0])
        if col is None or value is _NO_LITERAL:
            return None
        if value is None:
            return IsNull(col), True
        # never NULL itself: false where the column is NULL, also under NOT
        return and_(IsNotNull(col), EqualTo(col, value)), True
    if op == PredicateOp.IN and len(args) == 1:
        # ``a IN ()``: Spark's runtime filter of a join whose other side is empty; true for
        # no row (inexact: Spark's legacy rule makes ``NULL IN ()`` NULL, not FALSE)
        return (AlwaysFalse(), False) if _column(args[0], row_type) is not None else None
    if op == PredicateOp.IN and len(args) >= 2:
        col = _column(args[0], row_type)
        values = [literal_from_json(a) for a in args[1:]]
        if col is None or any(v is _NO_LITERAL for v in values):
            return None
        non_null = [v for v in values if v is not None]
        if not non_null:
            # ``a IN (NULL, ...)``: NULL or FALSE, true for no row (a join whose other side
            # holds only NULL keys); inexact, since NOT of it is NULL too
            return AlwaysFalse(), False
        return in_(col, non_null), len(non_null) == len(values)
    if op == PredicateOp.STARTS_WITH and len(args) == 2:
        col, value = _column(args[0], row_type), literal_from_json(args[1])
        if col is None or not isinstance(value, str):
            return None
        return StartsWith(col, value), True
    return None


def predicate_from_json(
    filters: Sequence[Any],
    row_type: RowType,
    check: Callable[[BooleanExpression], bool] | None = None,
    time_zone: str = UTC,
) -> BooleanExpression | None:
    """The conjunction of every filter that translates (``None``: nothing does), and of the
    column ranges ``year(x) = y AND month(x) = m`` conjuncts imply together.

    Args:
        filters: Spark's conjuncts as JSON (``None`` for one Spark could not express).
        row_type: the table's columns.
        check: optional test a conjunct must pass (e.g. that it binds); failures are dropped,
            which only widens the result.
        time_zone: the session's (functions of TIMESTAMP columns depend on it).
    """
    out: BooleanExpression | None = None
    translated = [translate(f, row_type, time_zone) for f in filters]
    implied = [(e, False) for e in month_ranges(filters, row_type, time_zone)]
    for t in [*translated, *implied]:
        if t is None:
            continue
        if check is not None and not check(t[0]):
            continue
        out = t[0] if out is None else and_(out, t[0])
    return out


def filters_exact(
    filters: Sequence[Any],
    row_type: RowType,
    check: Callable[[BooleanExpression], bool] | None = None,
    time_zone: str = UTC,
) -> bool:
    """Whether :func:`predicate_from_json` of the same arguments selects exactly the rows of
    ``filters`` (every conjunct translates exactly and passes ``check``), not a superset:
    only then may a file the predicate holds on in every row stand for rows of the answer
    (a pushed top-N, :mod:`lakeskip.planner.top_n`). No filter: exact.

    >>> from lakeskip.types import BIGINT, RowType
    >>> rt = RowType.of(("id", BIGINT))
    >>> ref = {"ref": ["id"]}
    >>> eq = {"op": "=", "args": [ref, {"lit": 5, "type": "integer"}]}
    >>> filters_exact([eq], rt), filters_exact([eq, None], rt)
    (True, False)
    """
    for f in filters:
        t = translate(f, row_type, time_zone)
        if t is None or not t[1] or (check is not None and not check(t[0])):
            return False
    return True
