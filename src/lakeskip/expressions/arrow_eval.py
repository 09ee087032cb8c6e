"""Evaluate a bound predicate over an Arrow table with Spark's semantics: the test oracle.

Three-valued logic inside (Kleene AND/OR, a comparison with a null is null), null ->
not selected at the top (WHERE semantics). Floats follow Spark: FLOAT is widened to DOUBLE
before comparing, ``NaN = NaN`` is true, NaN sorts above every number (``+inf`` included)
and ``-0.0 = 0.0``. Map-key references look the key up (a missing key, or a null map, is
null). Every operation is a whole-column ``pyarrow.compute`` kernel.

>>> import pyarrow as pa
>>> from lakeskip import types as T
>>> from lakeskip.expressions import bind, Or, EqualTo, IsNull, GreaterThan
>>> rt = T.RowType.of(("a", T.BIGINT), ("f", T.DOUBLE))
>>> t = pa.table({"a": [1, 2, None], "f": [float("nan"), 1.0, None]})
>>> evaluate_arrow(bind(rt, Or(EqualTo("a", 1), IsNull("a"))), t).to_pylist()
[True, False, True]
>>> evaluate_arrow_3vl(bind(rt, GreaterThan("f", 5.0)), t).to_pylist()
[True, False, None]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.errors import InvalidArgumentError
from lakeskip.expressions.bound import BoundPredicate, BoundReference
from lakeskip.expressions.tree import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or
from lakeskip.types import TypeRoot

__all__ = ["evaluate_arrow", "evaluate_arrow_3vl"]

_COMPARE: dict[str, Callable[..., Any]] = {
    "eq": pc.equal,
    "ne": pc.not_equal,
    "lt": pc.less,
    "le": pc.less_equal,
    "gt": pc.greater,
    "ge": pc.greater_equal,
}
_NULL_BOOL = pa.scalar(None, pa.bool_())


def _column(term: BoundReference, table: pa.Table) -> pa.Array:
    col = table[term.column]
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if term.key is not None:
        col = pc.map_lookup(col, pa.scalar(term.key, pa.string()), "first")
    if term.type.root is TypeRoot.FLOAT:
        col = pc.cast(col, pa.float64())  # Spark widens FLOAT to DOUBLE to compare
    return col


def _constant(value: bool, n: int) -> pa.BooleanArray:
    return pa.array(np.full(n, value, dtype=bool), pa.bool_())


def _with_nulls(col: pa.Array, result: pa.Array) -> pa.Array:
    """``result`` where ``col`` is valid, null where it is null."""
    return pc.if_else(pc.is_null(col), _NULL_BOOL, result)


def _float_compare(op: str, col: pa.Array, value: float) -> pa.Array:
    nan = pc.fill_null(pc.is_nan(col), False)
    if value != value:  # NaN literal: equal to NaN, above every number
        result = {
            "eq": nan,
            "ne": pc.invert(nan),
            "lt": pc.invert(nan),
            "le": _constant(True, len(col)),
            "gt": _constant(False, len(col)),
            "ge": nan,
        }[op]
        return _with_nulls(col, result)
    base = _COMPARE[op](col, pa.scalar(value, pa.float64()))
    if op in ("ne", "gt", "ge"):
        base = pc.or_kleene(base, nan)  # IEEE says false; Spark: NaN > x and NaN <> x
    return base


def _float_in(col: pa.Array, values: frozenset[Any]) -> pa.Array:
    # not pc.is_in: it keys floats by bit pattern, but in SQL 0.0 = -0.0 and NaN = NaN
    hit = _constant(False, len(col))
    for x in values:
        eq = pc.is_nan(col) if x != x else pc.equal(col, pa.scalar(float(x), pa.float64()))
        hit = pc.or_(hit, pc.fill_null(eq, False))
    return hit


def _leaf(p: BoundPredicate, table: pa.Table) -> pa.Array:
    col = _column(p.term, table)
    op = p.op
    if op == "is_null":
        return pc.is_null(col)
    if op == "not_null":
        return pc.is_valid(col)
    is_float = p.term.type.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE)
    if op in ("in", "not_in"):
        if is_float:
            hit = _float_in(col, p.values)
        else:
            value_set = pa.array(list(p.values), col.type)
            hit = pc.is_in(col, value_set=value_set, skip_nulls=True)
        return _with_nulls(col, hit if op == "in" else pc.invert(hit))
    if op in ("starts_with", "not_starts_with"):
        hit = pc.starts_with(col, p.value)
        return hit if op == "starts_with" else pc.invert(hit)
    if is_float:
        return _float_compare(op, col, p.value)
    return _COMPARE[op](col, pa.scalar(p.value, col.type))


def evaluate_arrow_3vl(expr: BooleanExpression, table: pa.Table) -> pa.BooleanArray:
    """Three-valued result per row: true, false or null (unknown).

    Args:
        expr: a bound expression (``Not`` nodes are allowed).
        table: rows whose column names are the schema's field names.

    Raises:
        InvalidArgumentError: ``expr`` has an unbound leaf.
    """
    n = table.num_rows
    if isinstance(expr, AlwaysTrue):
        return _constant(True, n)
    if isinstance(expr, AlwaysFalse):
        return _constant(False, n)
    if isinstance(expr, And):
        return pc.and_kleene(
            evaluate_arrow_3vl(expr.left, table), evaluate_arrow_3vl(expr.right, table)
        )
    if isinstance(expr, Or):
        return pc.or_kleene(
            evaluate_arrow_3vl(expr.left, table), evaluate_arrow_3vl(expr.right, table)
        )
    if isinstance(expr, Not):
        return pc.invert(evaluate_arrow_3vl(expr.child, table))
    if isinstance(expr, BoundPredicate):
        out = _leaf(expr, table)
        return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out
    raise InvalidArgumentError(f"evaluate_arrow needs a bound expression, got {expr!r}")


def evaluate_arrow(expr: BooleanExpression, table: pa.Table) -> pa.BooleanArray:
    """WHERE semantics: True where the row is selected, False otherwise (never null).

    Args:
        expr: a bound expression.
        table: rows whose column names are the schema's field names.
    """
    return pc.fill_null(evaluate_arrow_3vl(expr, table), False)
