"""Tier 1 for every file at once: :class:`StatsEvaluator`'s verdicts over :class:`ColumnarStats`.

Same rules, leaf by leaf, as :mod:`lakeskip.planner.stats_evaluator` (read its docstring
for the NaN and truncation reasoning); each leaf here is a few array operations over all
files instead of a visitor call per file. A leaf whose literal cannot be compared with the
column's stats (a foreign writer's types) answers "might match" for every file, where the
scalar evaluator does so file by file: never a skip the scalar path would not make.

>>> from lakeskip import types as T
>>> from lakeskip.expressions import bind, GreaterThan
>>> from lakeskip.planner.stats import ColumnStats, FileStats
>>> rt = T.RowType.of(("id", T.BIGINT))
>>> cs = ColumnarStats.from_file_stats(
...     [FileStats(10, {"id": ColumnStats(0, 79, 0)}), FileStats(10, {"id": ColumnStats(0, 90, 0)})], rt)
>>> VectorStatsEvaluator(bind(rt, GreaterThan("id", 85))).evaluate(cs).tolist()
[False, True]
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.expressions import (
    BooleanExpression,
    BoundPredicate,
    BoundPredicateVisitor,
    BoundReference,
    Operator,
    rewrite_not,
    visit,
)
from lakeskip.expressions.operators import unreachable
from lakeskip.planner.columnar_stats import ColumnArrays, ColumnarStats
from lakeskip.types import TypeRoot

__all__ = ["SORTED_IN_FROM", "VectorStatsEvaluator"]

#: IN lists longer than this are answered as one sorted array against every file's
#: [min, max] (``np.searchsorted``: O((files + values) log values)) instead of one comparison
#: pass per value. Runtime filters (a join's keys, thousands of values) take this path.
SORTED_IN_FROM = 8

#: the comparisons a bound of the stats is put to; the leaves name them by the typed operator
_Comparison = Literal[Operator.LT, Operator.LE, Operator.GT, Operator.GE, Operator.EQ]


def _arrow_kernel(op: _Comparison) -> str:
    """The Arrow compute function of ``op`` (strings and binaries, compared whole-column)."""
    match op:
        case Operator.LT:
            return "less"
        case Operator.LE:
            return "less_equal"
        case Operator.GT:
            return "greater"
        case Operator.GE:
            return "greater_equal"
        case Operator.EQ:
            return "equal"
        case _:
            unreachable(op)


def _python_compare(op: _Comparison) -> Callable[[Any, Any], bool]:
    """``op`` on two Python values (the other types, compared one by one)."""
    match op:
        case Operator.LT:
            return operator.lt
        case Operator.LE:
            return operator.le
        case Operator.GT:
            return operator.gt
        case Operator.GE:
            return operator.ge
        case Operator.EQ:
            return operator.eq
        case _:
            unreachable(op)


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _is_float(term: BoundReference) -> bool:
    return term.type.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE)


class VectorStatsEvaluator:
    """Built once per query from a bound expression; :meth:`evaluate` answers all files.

    Args:
        bound: a bound expression (NOT is pushed down here again).
    """

    def __init__(self, bound: BooleanExpression) -> None:
        self.expr = rewrite_not(bound)

    def evaluate(self, stats: ColumnarStats) -> np.ndarray:
        """A bool per file: False only where no row of the file can match."""
        out = visit(self.expr, _Leaves(stats))
        return np.broadcast_to(out, (len(stats),)).copy()


class _Leaves(BoundPredicateVisitor[np.ndarray]):
    def __init__(self, stats: ColumnarStats) -> None:
        self.stats = stats
        self.n = len(stats)

    def _all(self, value: bool) -> np.ndarray:
        return np.full(self.n, value, dtype=np.bool_)

    # -- tree --------------------------------------------------------------------------

    def visit_true(self) -> np.ndarray:
        return self._all(True)

    def visit_false(self) -> np.ndarray:
        return self._all(False)

    def visit_not(self, child_result: np.ndarray) -> np.ndarray:
        return self._all(True)

    def visit_and(self, left_result: np.ndarray, right_result: np.ndarray) -> np.ndarray:
        out: np.ndarray = left_result & right_result
        return out

    def visit_or(self, left_result: np.ndarray, right_result: np.ndarray) -> np.ndarray:
        out: np.ndarray = left_result | right_result
        return out

    def visit_bound_predicate(self, predicate: BoundPredicate) -> np.ndarray:
        if predicate.term.key is not None or predicate.term.column not in self.stats.columns:
            return self._all(True)
        try:
            with np.errstate(invalid="ignore"):
                out: np.ndarray = super().visit_bound_predicate(predicate)
                return out
        except (TypeError, ValueError, OverflowError):  # stats of another type than the literal
            return self._all(True)

    # -- helpers -----------------------------------------------------------------------

    def _col(self, term: BoundReference) -> ColumnArrays:
        return self.stats.columns[term.column]

    def _all_null(self, col: ColumnArrays) -> np.ndarray:
        nc = col.null_count
        return (nc >= 0) & (nc >= self.stats.row_count)

    @staticmethod
    def _where(known: np.ndarray, values: np.ndarray, test: Callable[[Any], Any]) -> np.ndarray:
        """``test`` of the known values (the whole array at once for numbers, value by
        value for Python objects); False where unknown."""
        out = np.zeros(len(known), dtype=np.bool_)
        if values.dtype != object:
            with np.errstate(invalid="ignore"):
                out[:] = np.asarray(test(values), dtype=np.bool_) & known
            return out
        # Python objects one by one: numpy would turn a str literal into its own string
        # type, which drops trailing NULs ("\x00" < "\x00" as "" < "\x00")
        sel = np.flatnonzero(known)
        if len(sel):
            out[sel] = [bool(test(x)) for x in values[sel].tolist()]
        return out

    def _cmp(self, col: ColumnArrays, side: str, op: _Comparison, value: Any) -> np.ndarray:
        """``bound <op> value`` for the ``min`` or ``max`` of every file (False where that
        bound is unknown). Strings and binaries compare in Arrow (byte order of UTF-8 is
        code point order, Python's), other objects one by one."""
        values, known = (col.min, col.min_known) if side == "min" else (col.max, col.max_known)
        if values.dtype == object and isinstance(value, (str, bytes)):
            arr = col.arrow(side)
            if arr is not None and (pa.types.is_large_string(arr.type) == isinstance(value, str)):
                res = pc.call_function(_arrow_kernel(op), [arr, pa.scalar(value, arr.type)])
                out: np.ndarray = pc.fill_null(res, False).to_numpy(zero_copy_only=False)
                out &= known
                return out
        compare = _python_compare(op)
        return self._where(known, values, lambda bound: compare(bound, value))

    # -- leaves (True = might match) ------------------------------------------------------

    def visit_is_null(self, term: BoundReference) -> np.ndarray:
        out: np.ndarray = self._col(term).null_count != 0
        return out

    def visit_not_null(self, term: BoundReference) -> np.ndarray:
        return ~self._all_null(self._col(term))

    def visit_equal(self, term: BoundReference, value: Any) -> np.ndarray:
        col = self._col(term)
        cannot = self._all_null(col)
        if not (_is_float(term) and _is_nan(value)):
            cannot |= self._cmp(col, "min", Operator.GT, value)
            cannot |= self._cmp(col, "max", Operator.LT, value)
        return ~cannot

    def visit_not_equal(self, term: BoundReference, value: Any) -> np.ndarray:
        col = self._col(term)
        cannot = self._all_null(col)
        if not _is_float(term):
            same = self._cmp(col, "min", Operator.EQ, value) & col.max_known
            same &= self._cmp(col, "max", Operator.EQ, value) & col.min_known
            cannot |= same
        return ~cannot

    def _below(self, term: BoundReference, value: Any, inclusive: bool) -> np.ndarray:
        col = self._col(term)
        cannot = self._all_null(col)
        if not (_is_float(term) and _is_nan(value)):
            if inclusive:
                cannot |= self._cmp(col, "min", Operator.GT, value)
            else:
                cannot |= self._cmp(col, "min", Operator.GE, value)
        return ~cannot

    def _above(self, term: BoundReference, value: Any, inclusive: bool) -> np.ndarray:
        col = self._col(term)
        cannot = self._all_null(col)
        if not _is_float(term):
            if inclusive:
                cannot |= self._cmp(col, "max", Operator.LT, value)
            else:
                cannot |= self._cmp(col, "max", Operator.LE, value)
        return ~cannot

    def visit_less_than(self, term: BoundReference, value: Any) -> np.ndarray:
        return self._below(term, value, inclusive=False)

    def visit_less_than_or_equal(self, term: BoundReference, value: Any) -> np.ndarray:
        return self._below(term, value, inclusive=True)

    def visit_greater_than(self, term: BoundReference, value: Any) -> np.ndarray:
        return self._above(term, value, inclusive=False)

    def visit_greater_than_or_equal(self, term: BoundReference, value: Any) -> np.ndarray:
        return self._above(term, value, inclusive=True)

    def visit_in(self, term: BoundReference, values: frozenset[Any]) -> np.ndarray:
        col = self._col(term)
        cannot = self._all_null(col)
        if _is_float(term) and any(map(_is_nan, values)):
            return ~cannot
        if len(values) > SORTED_IN_FROM:
            out: np.ndarray = _any_in_range(col, values) & ~cannot
            return out
        inside = np.zeros(self.n, dtype=np.bool_)
        for v in values:
            ok = ~self._cmp(col, "min", Operator.GT, v)  # v < lo
            ok &= ~self._cmp(col, "max", Operator.LT, v)  # v > hi
            inside |= ok
        return ~(cannot | ~inside)

    def visit_not_in(self, term: BoundReference, values: frozenset[Any]) -> np.ndarray:
        col = self._col(term)
        cannot = self._all_null(col)
        if not _is_float(term):
            sel = np.flatnonzero(col.min_known & col.max_known)
            member = np.zeros(self.n, dtype=np.bool_)
            if len(sel):
                lows, highs = col.min[sel].tolist(), col.max[sel].tolist()
                member[sel] = [
                    lo == hi and lo in values for lo, hi in zip(lows, highs, strict=True)
                ]
            cannot |= member
        return ~cannot

    def visit_starts_with(self, term: BoundReference, prefix: str) -> np.ndarray:
        col = self._col(term)
        cannot = self._all_null(col)
        n = len(prefix)
        cannot |= self._where(col.min_known, col.min, lambda lo: lo[:n] > prefix)
        cannot |= self._where(col.max_known, col.max, lambda hi: hi[:n] < prefix)
        return ~cannot

    def visit_not_starts_with(self, term: BoundReference, prefix: str) -> np.ndarray:
        col = self._col(term)
        cannot = self._all_null(col)
        both = col.min_known & col.max_known
        lo_in = self._where(both, col.min, lambda lo: lo.startswith(prefix))
        hi_in = self._where(both, col.max, lambda hi: hi.startswith(prefix))
        out: np.ndarray = ~(cannot | (lo_in & hi_in))
        return out


def _any_in_range(col: ColumnArrays, values: frozenset[Any]) -> np.ndarray:
    """Per file: whether some value lies in [min, max] (an unknown bound is no bound).

    For each file, the smallest value >= its min (``searchsorted``) is the only candidate
    that matters: some value is in range iff that one is <= its max. Values that cannot be
    ordered against the stats (a foreign writer's types) answer True for every file."""
    n = len(col.min)
    try:
        if col.min.dtype == np.int64:
            if not all(type(v) is int for v in values):
                return np.ones(n, dtype=np.bool_)
            vals = np.array(sorted(values), dtype=np.int64)
        elif col.min.dtype == np.float64:
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                return np.ones(n, dtype=np.bool_)
            vals = np.array(sorted(values), dtype=np.float64)
        else:
            return _any_in_range_objects(col, values)
    except (TypeError, ValueError, OverflowError):
        return np.ones(n, dtype=np.bool_)
    at = np.where(col.min_known, np.searchsorted(vals, col.min, side="left"), 0)
    exists = at < len(vals)
    candidate = vals[np.minimum(at, len(vals) - 1)]
    with np.errstate(invalid="ignore"):
        out: np.ndarray = exists & (~col.max_known | (candidate <= col.max))
    return out


def _any_in_range_objects(col: ColumnArrays, values: frozenset[Any]) -> np.ndarray:
    """:func:`_any_in_range` for Python objects (strings, decimals...): a bisection per
    file, in Python's order (code point order for strings, as the Arrow path)."""
    n = len(col.min)
    try:
        vals = sorted(values)
    except TypeError:
        return np.ones(n, dtype=np.bool_)
    out = np.ones(n, dtype=np.bool_)
    lows, highs = col.min.tolist(), col.max.tolist()
    lo_known, hi_known = col.min_known.tolist(), col.max_known.tolist()
    for i in range(n):
        try:
            at = bisect.bisect_left(vals, lows[i]) if lo_known[i] else 0
            out[i] = at < len(vals) and (not hi_known[i] or vals[at] <= highs[i])
        except TypeError:  # stats of another type than the values
            out[i] = True
    return out
