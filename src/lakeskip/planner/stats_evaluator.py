"""Tier 1: can a file hold matching rows, judging by its min/max/null counts?

An inclusive evaluator (pyiceberg's ``_InclusiveMetricsEvaluator`` is the model): it answers
:data:`ROWS_CANNOT_MATCH` only when no row can satisfy the predicate; anything unknown
(missing stats, map keys, NaN bounds) might match.

Floats: Spark orders NaN above every number and ``NaN = NaN``. Stats writers differ on
NaN (Paimon's Java collector makes it the max; Arrow's min/max skip it), so for FLOAT/DOUBLE
columns the evaluator never prunes a predicate that NaN satisfies (``>``, ``>=``, ``<>``,
``NOT IN``, comparisons with a NaN literal) on the strength of ``max``.

>>> from lakeskip import types as T
>>> from lakeskip.expressions import bind, GreaterThan
>>> ev = StatsEvaluator(bind(T.RowType.of(("id", T.BIGINT)), GreaterThan("id", 85)))
>>> ev.evaluate(FileStats(10, {"id": ColumnStats(0, 79, 0)}))
False
"""

from __future__ import annotations

from typing import Any

from lakeskip.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Or,
)
from lakeskip.planner.stats import ColumnStats, FileStats
from lakeskip.types import TypeRoot

__all__ = ["IN_LIST_LIMIT", "ROWS_CANNOT_MATCH", "ROWS_MIGHT_MATCH", "StatsEvaluator"]

ROWS_MIGHT_MATCH = True
ROWS_CANNOT_MATCH = False
IN_LIST_LIMIT = 200


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


class StatsEvaluator:
    """Built once per query from a bound, NOT-free expression; stateless per file."""

    def __init__(self, bound: BooleanExpression) -> None:
        self.expr = bound

    def evaluate(self, stats: FileStats) -> bool:
        """``False`` (ROWS_CANNOT_MATCH) only when no row of the file can match."""
        return self._eval(self.expr, stats)

    def _eval(self, e: BooleanExpression, stats: FileStats) -> bool:
        if isinstance(e, AlwaysTrue):
            return ROWS_MIGHT_MATCH
        if isinstance(e, AlwaysFalse):
            return ROWS_CANNOT_MATCH
        if isinstance(e, And):
            return self._eval(e.left, stats) and self._eval(e.right, stats)
        if isinstance(e, Or):
            return self._eval(e.left, stats) or self._eval(e.right, stats)
        if isinstance(e, BoundPredicate):
            return _leaf(e, stats)
        return ROWS_MIGHT_MATCH  # anything else (e.g. Not) is not decided here


def _leaf(p: BoundPredicate, stats: FileStats) -> bool:
    if p.term.key is not None:
        return ROWS_MIGHT_MATCH  # no stats for map values
    cs: ColumnStats | None = stats.columns.get(p.term.field.name)
    if cs is None:
        return ROWS_MIGHT_MATCH
    nulls = cs.null_count
    all_null = nulls is not None and nulls >= stats.row_count
    op = p.op
    if op == "is_null":
        return nulls != 0
    if op == "not_null":
        return not all_null
    if all_null:
        return ROWS_CANNOT_MATCH  # only IS NULL matches a null
    lo, hi = cs.min, cs.max
    if lo is None or hi is None or _is_nan(lo) or _is_nan(hi):
        return ROWS_MIGHT_MATCH
    is_float = p.term.type.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE)
    try:
        return _compare(op, p, lo, hi, is_float)
    except TypeError:  # incomparable stats (foreign writer): unknown
        return ROWS_MIGHT_MATCH


def _compare(op: str, p: BoundPredicate, lo: Any, hi: Any, is_float: bool) -> bool:
    v = p.value
    if is_float and (op in ("ne", "gt", "ge", "not_in") or _is_nan(v)):
        return ROWS_MIGHT_MATCH  # NaN rows satisfy these; max may not reflect them
    if op == "eq":
        return bool(lo <= v <= hi)
    if op == "ne":
        return not (lo == hi == v)
    if op == "lt":
        return bool(lo < v)
    if op == "le":
        return bool(lo <= v)
    if op == "gt":
        return bool(hi > v)
    if op == "ge":
        return bool(hi >= v)
    if op == "in":
        if len(p.values) > IN_LIST_LIMIT:
            return ROWS_MIGHT_MATCH
        if is_float and any(_is_nan(x) for x in p.values):
            return ROWS_MIGHT_MATCH
        return any(lo <= x <= hi for x in p.values)
    if op == "not_in":
        return not (lo == hi and lo in p.values)
    if op == "starts_with":
        n = len(v)
        return not (hi[:n] < v or lo[:n] > v)
    if op == "not_starts_with":
        return not (lo.startswith(v) and hi.startswith(v))
    return ROWS_MIGHT_MATCH
