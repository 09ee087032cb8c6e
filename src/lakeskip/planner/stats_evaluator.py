"""Tier 1: can a file hold matching rows, judging by its min/max/null counts?

An inclusive evaluator (pyiceberg's ``_InclusiveMetricsEvaluator`` is the model): it answers
:data:`ROWS_CANNOT_MATCH` only when no row can satisfy the predicate, and
:data:`ROWS_MIGHT_MATCH` whenever it cannot tell (missing stats, map keys, odd stats).
The expression is bound and NOT-free once per query; each file gets a fresh visitor, so no
state leaks from one file to the next.

What it assumes of :class:`~lakeskip.planner.stats.ColumnStats`: ``min``/``max`` are
inclusive bounds of the column's non-null values in internal form (truncated string bounds
are fine as long as they still bound), ``null_count`` is exact; ``None`` is unknown.

Floats: Spark orders NaN above every number and ``NaN = NaN``. Parquet and Arrow leave NaN
out of min/max, Paimon's Java collector may make it the max, lakeskip's writer drops
min/max when a NaN is present. So a NaN bound is unknown, and on FLOAT/DOUBLE columns the
evaluator never prunes, on the strength of ``max``, a predicate NaN satisfies (``>``,
``>=``, ``<>``, ``NOT IN``, comparisons with a NaN literal, ``IN`` lists holding NaN).
Predicates NaN cannot satisfy (``=``, ``<``, ``<=`` a number) are decided from the bounds:
NaN rows never match them, whatever the stats say about NaN.

>>> from lakeskip import types as T
>>> from lakeskip.expressions import bind, GreaterThan
>>> ev = StatsEvaluator(bind(T.RowType.of(("id", T.BIGINT)), GreaterThan("id", 85)))
>>> ev.evaluate(FileStats(10, {"id": ColumnStats(0, 79, 0)}))  # max(id)=79 < 85
False
>>> ev.evaluate(FileStats(10, {"id": ColumnStats(0, 90, 0)}))
True
"""

from __future__ import annotations

from typing import Any

from lakeskip.expressions import (
    BooleanExpression,
    BoundPredicate,
    BoundPredicateVisitor,
    BoundReference,
    rewrite_not,
    visit,
)
from lakeskip.planner.stats import ColumnStats, FileStats
from lakeskip.types import TypeRoot

__all__ = ["ROWS_CANNOT_MATCH", "ROWS_MIGHT_MATCH", "StatsEvaluator"]

ROWS_MIGHT_MATCH = True
ROWS_CANNOT_MATCH = False


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _is_float(term: BoundReference) -> bool:
    return term.type.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE)


class StatsEvaluator:
    """Built once per query from a bound expression; :meth:`evaluate` per file.

    Args:
        bound: a bound expression (NOT is pushed down here again, so any bound tree works).
    """

    def __init__(self, bound: BooleanExpression) -> None:
        self.expr = rewrite_not(bound)

    def evaluate(self, stats: FileStats) -> bool:
        """:data:`ROWS_CANNOT_MATCH` (False) only when no row of the file can match."""
        return visit(self.expr, _MetricsVisitor(stats))


class _MetricsVisitor(BoundPredicateVisitor[bool]):
    """One file's verdicts; every ``visit_*`` leaf method answers for one predicate."""

    def __init__(self, stats: FileStats) -> None:
        self.stats = stats

    # -- tree --------------------------------------------------------------------------

    def visit_true(self) -> bool:
        return ROWS_MIGHT_MATCH

    def visit_false(self) -> bool:
        return ROWS_CANNOT_MATCH

    def visit_not(self, child_result: bool) -> bool:
        return ROWS_MIGHT_MATCH  # "might match" does not negate; rewrite_not removed these

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def visit_bound_predicate(self, predicate: BoundPredicate) -> bool:
        if predicate.term.key is not None:
            return ROWS_MIGHT_MATCH  # no stats for map values
        try:
            return super().visit_bound_predicate(predicate)
        except TypeError:  # stats of another type than the literal (foreign writer)
            return ROWS_MIGHT_MATCH

    # -- helpers -----------------------------------------------------------------------

    def _col(self, term: BoundReference) -> ColumnStats | None:
        return self.stats.columns.get(term.column)

    def _all_null(self, term: BoundReference) -> bool:
        cs = self._col(term)
        return (
            cs is not None and cs.null_count is not None and cs.null_count >= self.stats.row_count
        )

    def _bounds(self, term: BoundReference) -> tuple[Any, Any]:
        """(lower, upper) bound of the non-null values; ``None`` where unknown."""
        cs = self._col(term)
        if cs is None:
            return None, None
        lo = None if _is_nan(cs.min) else cs.min
        hi = None if _is_nan(cs.max) else cs.max
        return lo, hi

    # -- leaves ------------------------------------------------------------------------

    def visit_is_null(self, term: BoundReference) -> bool:
        cs = self._col(term)
        if cs is not None and cs.null_count == 0:
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH

    def visit_not_null(self, term: BoundReference) -> bool:
        return ROWS_CANNOT_MATCH if self._all_null(term) else ROWS_MIGHT_MATCH

    def visit_equal(self, term: BoundReference, value: Any) -> bool:
        if self._all_null(term):
            return ROWS_CANNOT_MATCH  # only IS NULL matches a null
        if _is_float(term) and _is_nan(value):
            return ROWS_MIGHT_MATCH
        lo, hi = self._bounds(term)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH

    def visit_not_equal(self, term: BoundReference, value: Any) -> bool:
        if self._all_null(term):
            return ROWS_CANNOT_MATCH
        if _is_float(term):
            return ROWS_MIGHT_MATCH  # NaN rows are <> every number, and hide from max
        lo, hi = self._bounds(term)
        if lo is not None and hi is not None and lo == hi == value:
            return ROWS_CANNOT_MATCH  # every non-null value equals the literal
        return ROWS_MIGHT_MATCH

    def _below(self, term: BoundReference, value: Any, inclusive: bool) -> bool:
        if self._all_null(term):
            return ROWS_CANNOT_MATCH
        if _is_float(term) and _is_nan(value):
            return ROWS_MIGHT_MATCH
        lo, _ = self._bounds(term)
        if lo is not None and (lo > value if inclusive else lo >= value):
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH

    def _above(self, term: BoundReference, value: Any, inclusive: bool) -> bool:
        if self._all_null(term):
            return ROWS_CANNOT_MATCH
        if _is_float(term):
            return ROWS_MIGHT_MATCH  # NaN rows are above every number, and hide from max
        _, hi = self._bounds(term)
        if hi is not None and (hi < value if inclusive else hi <= value):
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH

    def visit_less_than(self, term: BoundReference, value: Any) -> bool:
        return self._below(term, value, inclusive=False)

    def visit_less_than_or_equal(self, term: BoundReference, value: Any) -> bool:
        return self._below(term, value, inclusive=True)

    def visit_greater_than(self, term: BoundReference, value: Any) -> bool:
        return self._above(term, value, inclusive=False)

    def visit_greater_than_or_equal(self, term: BoundReference, value: Any) -> bool:
        return self._above(term, value, inclusive=True)

    def visit_in(self, term: BoundReference, values: frozenset[Any]) -> bool:
        if self._all_null(term):
            return ROWS_CANNOT_MATCH
        if _is_float(term) and any(map(_is_nan, values)):
            return ROWS_MIGHT_MATCH
        lo, hi = self._bounds(term)
        inside = [v for v in values if (lo is None or v >= lo) and (hi is None or v <= hi)]
        return ROWS_MIGHT_MATCH if inside else ROWS_CANNOT_MATCH

    def visit_not_in(self, term: BoundReference, values: frozenset[Any]) -> bool:
        if self._all_null(term):
            return ROWS_CANNOT_MATCH
        if _is_float(term):
            return ROWS_MIGHT_MATCH
        lo, hi = self._bounds(term)
        if lo is not None and hi is not None and lo == hi and lo in values:
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH

    def visit_starts_with(self, term: BoundReference, prefix: str) -> bool:
        if self._all_null(term):
            return ROWS_CANNOT_MATCH
        lo, hi = self._bounds(term)
        n = len(prefix)
        # a value v with lo <= v <= hi starting with prefix forces lo[:n] <= prefix <= hi[:n]
        if lo is not None and lo[:n] > prefix:
            return ROWS_CANNOT_MATCH
        if hi is not None and hi[:n] < prefix:
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH

    def visit_not_starts_with(self, term: BoundReference, prefix: str) -> bool:
        if self._all_null(term):
            return ROWS_CANNOT_MATCH
        lo, hi = self._bounds(term)
        # strings with a given prefix form an interval: both bounds in it => all values in it
        if lo is not None and hi is not None and lo.startswith(prefix) and hi.startswith(prefix):
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH
