"""Evaluate a bound predicate over an Arrow table with Spark's semantics: the test oracle.

Three-valued logic inside (Kleene AND/OR), NULL -> not selected at the top. Floats follow
Spark: NaN equals NaN and sorts above every number. Map-key references look the key up
(a missing key is NULL).

>>> import pyarrow as pa
>>> from lakeskip import types as T
>>> from lakeskip.expressions import bind, Or, EqualTo, IsNull
>>> rt = T.RowType.of(("a", T.BIGINT))
>>> evaluate_arrow(bind(rt, Or(EqualTo("a", 1), IsNull("a"))), pa.table({"a": [1, 2, None]})).to_pylist()
[True, False, True]
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.errors import InvalidArgumentError
from lakeskip.expressions.binding import BoundPredicate, BoundReference
from lakeskip.expressions.tree import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or
from lakeskip.types import TypeRoot

__all__ = ["evaluate_arrow", "evaluate_arrow_3vl"]


def _column(term: BoundReference, table: pa.Table) -> pa.Array:
    col = table[term.field.name].combine_chunks()
    if term.key is not None:
        col = pc.map_lookup(col, pa.scalar(term.key, pa.string()), "first")
    return col


def _scalar(term: BoundReference, value: Any, arrow_type: pa.DataType) -> pa.Scalar:
    return pa.scalar(value, arrow_type)


def _is_float(term: BoundReference) -> bool:
    return term.type.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE)


def _leaf(p: BoundPredicate, table: pa.Table) -> pa.Array:
    col = _column(p.term, table)
    op = p.op
    if op == "is_null":
        return pc.is_null(col)
    if op == "not_null":
        return pc.is_valid(col)
    null_mask = pc.is_null(col)
    if op in ("in", "not_in"):
        if _is_float(p.term):
            # not is_in: it keys floats by bits, but in SQL 0.0 = -0.0 (and NaN = NaN)
            hit = pa.array([False] * len(col), pa.bool_())
            for x in p.values:
                eq = pc.is_nan(col) if x != x else pc.equal(col, pa.scalar(x, col.type))
                hit = pc.or_(hit, pc.fill_null(eq, False))
        else:
            values = pa.array(list(p.values), col.type)
            hit = pc.is_in(col, value_set=values, skip_nulls=True)
        result = hit if op == "in" else pc.invert(hit)
        return pc.if_else(null_mask, pa.scalar(None, pa.bool_()), result)
    if op in ("starts_with", "not_starts_with"):
        hit = pc.starts_with(col, p.value)
        return hit if op == "starts_with" else pc.invert(hit)
    v = _scalar(p.term, p.value, col.type)
    if not _is_float(p.term):
        fn = {
            "eq": pc.equal,
            "ne": pc.not_equal,
            "lt": pc.less,
            "le": pc.less_equal,
            "gt": pc.greater,
            "ge": pc.greater_equal,
        }[op]
        return fn(col, v)
    # Spark float semantics: NaN = NaN, NaN above everything
    col_nan = pc.is_nan(col)
    lit_nan = p.value != p.value
    if lit_nan:
        result = {
            "eq": col_nan,
            "ne": pc.invert(col_nan),
            "lt": pc.invert(col_nan),
            "le": pc.is_valid(col),
            "gt": pc.and_(col_nan, pa.scalar(False)),
            "ge": col_nan,
        }[op]
        return pc.if_else(null_mask, pa.scalar(None, pa.bool_()), result)
    base = {
        "eq": pc.equal,
        "ne": pc.not_equal,
        "lt": pc.less,
        "le": pc.less_equal,
        "gt": pc.greater,
        "ge": pc.greater_equal,
    }[op](col, v)
    if op in ("ne", "gt", "ge"):
        base = pc.or_(base, col_nan)  # NaN <> x, NaN > x, NaN >= x for every number x
    return base


def evaluate_arrow_3vl(expr: BooleanExpression, table: pa.Table) -> pa.Array:
    """Three-valued result (true / false / null) per row."""
    n = table.num_rows
    if isinstance(expr, AlwaysTrue):
        return pa.array([True] * n, pa.bool_())
    if isinstance(expr, AlwaysFalse):
        return pa.array([False] * n, pa.bool_())
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
    """WHERE semantics: True where the row is selected, False otherwise (never null)."""
    return pc.fill_null(evaluate_arrow_3vl(expr, table), False)
