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
from lakeskip.expressions.visitors import BoundPredicateVisitor
from lakeskip.types import TypeRoot

__all__ = ["evaluate_arrow", "evaluate_arrow_3vl"]

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


_Compare = Callable[[pa.Array, pa.Scalar], pa.Array]


def _float_compare(
    compare: _Compare, col: pa.Array, value: float, nan_literal: pa.Array, nan_above: bool
) -> pa.Array:
    """``compare`` with Spark's float rules. ``nan_literal``: the answer for a NaN literal
    (NaN equals NaN and sorts above every number); ``nan_above``: NaN rows satisfy the
    comparison with any number (``<>``, ``>``, ``>=``), though IEEE says false."""
    if value != value:
        return _with_nulls(col, nan_literal)
    base = compare(col, pa.scalar(value, pa.float64()))
    if nan_above:
        base = pc.or_kleene(base, _nan(col))
    return base


def _nan(col: pa.Array) -> pa.Array:
    return pc.fill_null(pc.is_nan(col), False)


def _float_in(col: pa.Array, values: frozenset[Any]) -> pa.Array:
    # not pc.is_in: it keys floats by bit pattern, but in SQL 0.0 = -0.0 and NaN = NaN
    hit = _constant(False, len(col))
    for x in values:
        eq = pc.is_nan(col) if x != x else pc.equal(col, pa.scalar(float(x), pa.float64()))
        hit = pc.or_(hit, pc.fill_null(eq, False))
    return hit


def _is_float(term: BoundReference) -> bool:
    return term.type.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE)


class _Leaves(BoundPredicateVisitor[pa.Array]):
    """Each leaf over the whole column, three-valued (null where the answer is unknown)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def _compare(
        self,
        term: BoundReference,
        value: Any,
        compare: _Compare,
        nan_literal: Callable[[pa.Array], pa.Array],
        nan_above: bool,
    ) -> pa.Array:
        col = _column(term, self.table)
        if _is_float(term):
            return _float_compare(compare, col, value, nan_literal(col), nan_above)
        return compare(col, pa.scalar(value, col.type))

    def visit_equal(self, term: BoundReference, value: Any) -> pa.Array:
        return self._compare(term, value, pc.equal, _nan, nan_above=False)

    def visit_not_equal(self, term: BoundReference, value: Any) -> pa.Array:
        return self._compare(term, value, pc.not_equal, lambda c: pc.invert(_nan(c)), True)

    def visit_less_than(self, term: BoundReference, value: Any) -> pa.Array:
        return self._compare(term, value, pc.less, lambda c: pc.invert(_nan(c)), False)

    def visit_less_than_or_equal(self, term: BoundReference, value: Any) -> pa.Array:
        return self._compare(
            term, value, pc.less_equal, lambda c: _constant(True, len(c)), nan_above=False
        )

    def visit_greater_than(self, term: BoundReference, value: Any) -> pa.Array:
        return self._compare(
            term, value, pc.greater, lambda c: _constant(False, len(c)), nan_above=True
        )

    def visit_greater_than_or_equal(self, term: BoundReference, value: Any) -> pa.Array:
        return self._compare(term, value, pc.greater_equal, _nan, nan_above=True)

    def _member(self, term: BoundReference, values: frozenset[Any]) -> tuple[pa.Array, pa.Array]:
        col = _column(term, self.table)
        if _is_float(term):
            return col, _float_in(col, values)
        value_set = pa.array(list(values), col.type)
        return col, pc.is_in(col, value_set=value_set, skip_nulls=True)

    def visit_in(self, term: BoundReference, values: frozenset[Any]) -> pa.Array:
        col, hit = self._member(term, values)
        return _with_nulls(col, hit)

    def visit_not_in(self, term: BoundReference, values: frozenset[Any]) -> pa.Array:
        col, hit = self._member(term, values)
        return _with_nulls(col, pc.invert(hit))

    def visit_is_null(self, term: BoundReference) -> pa.Array:
        return pc.is_null(_column(term, self.table))

    def visit_not_null(self, term: BoundReference) -> pa.Array:
        return pc.is_valid(_column(term, self.table))

    def visit_starts_with(self, term: BoundReference, prefix: str) -> pa.Array:
        return pc.starts_with(_column(term, self.table), prefix)

    def visit_not_starts_with(self, term: BoundReference, prefix: str) -> pa.Array:
        return pc.invert(pc.starts_with(_column(term, self.table), prefix))


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
        out = expr.accept(_Leaves(table))
        return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out
    raise InvalidArgumentError(f"evaluate_arrow needs a bound expression, got {expr!r}")


def evaluate_arrow(expr: BooleanExpression, table: pa.Table) -> pa.BooleanArray:
    """WHERE semantics: True where the row is selected, False otherwise (never null).

    Args:
        expr: a bound expression.
        table: rows whose column names are the schema's field names.
    """
    return pc.fill_null(evaluate_arrow_3vl(expr, table), False)
