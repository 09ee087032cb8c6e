"""When a file's indexes cannot skip it: proofs from the stats, and a memory of what indexes did.

A file index answers "these rows may match" (a superset of the true rows) or "skip". So when
the stats already *prove* that some row of a file matches the whole predicate, no index can
skip it, and opening the file's indexes is wasted work. :func:`stats_prove_match` decides that
for every file at once from :class:`~lakeskip.planner.columnar_stats.ColumnarStats`:

* a comparison leaf holds for some row when the file's exact ``min`` or ``max`` satisfies it
  (``x < 5`` with ``min = 3``): ``min`` and ``max`` are values of the column's rows;
* it holds for *every* row when both bounds satisfy a one-sided comparison and no value is NULL;
* ``a AND b`` holds for some row when one side holds for some row and the other for all rows;
  ``a OR b`` when either side does.

Only types whose stats are exact values count: integers, DATE, TIMESTAMP (int64 columns) and
DECIMAL. Strings may be truncated prefixes, floats have NaN: those leaves prove nothing.
A proof that some row matches only ever *keeps* a file (it decides that no index is opened),
so a mistake there could cost pruning but never a row. :func:`stats_prove_all_match` (every
row matches) lets a pushed top-N count a file's rows as rows of the answer's input
(:mod:`lakeskip.planner.top_n`): there a mistake would cost rows, so its caller passes only
stats of exact types and partition values.

:func:`predicate_shape` names a predicate with its literals left out: the planner remembers,
per snapshot and shape, whether evaluating indexes skipped any file (:class:`IndexGain`), and
evaluates a small probe of files before all of them when it did not.

>>> from lakeskip import types as T
>>> from lakeskip.expressions import LessThan, bind
>>> from lakeskip.planner.stats import ColumnStats, FileStats
>>> rt = T.RowType.of(("id", T.BIGINT))
>>> cs = ColumnarStats.from_file_stats(
...     [FileStats(10, {"id": ColumnStats(0, 79, 0)}), FileStats(10, {"id": ColumnStats(50, 90, 0)})], rt)
>>> stats_prove_match(bind(rt, LessThan("id", 40)), cs).tolist()
[True, False]
>>> predicate_shape(bind(rt, LessThan("id", 40))) == predicate_shape(bind(rt, LessThan("id", 7)))
True
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from lakeskip.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Operator,
    Or,
    and_,
    or_,
)
from lakeskip.planner.columnar_stats import ColumnArrays, ColumnarStats
from lakeskip.types import TypeRoot

__all__ = [
    "DENSE_ROWS",
    "IndexGain",
    "drop_decided_leaves",
    "predicate_shape",
    "stats_prove_all_match",
    "stats_prove_match",
]

#: a kept file whose index narrowed it to at least this many rows counts as "dense": the
#: indexes found plenty of matches, so files like it are unlikely to be skipped either
DENSE_ROWS = 16


class IndexGain(enum.Enum):
    """What evaluating the indexes of a predicate shape did on one snapshot."""

    SKIPPED = "skipped"  # some file was skipped: evaluate every file
    NOTHING = "nothing"  # every file evaluated was kept, densely: probe one file first


_CMP: dict[Operator, Callable[[Any, Any], Any]] = {
    Operator.LT: lambda a, b: a < b,
    Operator.LE: lambda a, b: a <= b,
    Operator.GT: lambda a, b: a > b,
    Operator.GE: lambda a, b: a >= b,
    Operator.EQ: lambda a, b: a == b,
    Operator.NE: lambda a, b: a != b,
}


def _exact(col: ColumnArrays, root: TypeRoot) -> bool:
    return col.min.dtype == np.int64 or root is TypeRoot.DECIMAL


def _test(values: np.ndarray, known: np.ndarray, test: Callable[[Any], Any]) -> np.ndarray:
    out = np.zeros(len(known), dtype=np.bool_)
    if values.dtype != object:
        out[:] = np.asarray(test(values), dtype=np.bool_) & known
        return out
    sel = np.flatnonzero(known)
    if len(sel):
        out[sel] = [bool(test(x)) for x in values[sel].tolist()]
    return out


def _leaf(
    p: BoundPredicate, stats: ColumnarStats, exact: frozenset[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(some row matches, every row matches) per file, for one leaf; ``exact``: columns whose
    stats are exact whatever their type (partition values)."""
    n = len(stats)
    none = np.zeros(n, dtype=np.bool_)
    col = stats.columns.get(p.term.column)
    if p.term.key is not None or col is None:
        return none, none
    nulls, rows = col.null_count, stats.row_count
    op = p.op
    if op is Operator.IS_NULL:
        return (nulls > 0) & (rows > 0), (nulls >= 0) & (nulls >= rows)
    if op is Operator.NOT_NULL:
        return (nulls >= 0) & (nulls < rows), nulls == 0
    if p.term.column not in exact and not _exact(col, p.term.type.root):
        return none, none
    no_nulls = nulls == 0
    if op in _CMP:
        test = _CMP[op]
        lo = _test(col.min, col.min_known, lambda v: test(v, p.value))
        hi = _test(col.max, col.max_known, lambda v: test(v, p.value))
        some = lo | hi
        if op is Operator.NE:  # every row: the value lies outside [min, max]
            every = _test(col.min, col.min_known, lambda v: v > p.value)
            every |= _test(col.max, col.max_known, lambda v: v < p.value)
            return some, every & no_nulls
        # EQ: min = max = the value; one-sided: both bounds hold, so does every value between
        return some, lo & hi & no_nulls
    if op is Operator.IN:
        values = p.values
        lo = _test(col.min, col.min_known, lambda v: v in values)
        hi = _test(col.max, col.max_known, lambda v: v in values)
        # every row: min = max, a listed value
        same = (
            lo
            & hi
            & np.fromiter(
                (a == b for a, b in zip(col.min.tolist(), col.max.tolist(), strict=True)),
                dtype=np.bool_,
                count=n,
            )
        )
        return lo | hi, same & no_nulls
    if op is Operator.NOT_IN:
        values = p.values
        lo = _test(col.min, col.min_known, lambda v: v not in values)
        hi = _test(col.max, col.max_known, lambda v: v not in values)
        return lo | hi, none
    return none, none


def _prove(
    e: BooleanExpression, stats: ColumnarStats, exact: frozenset[str] = frozenset()
) -> tuple[np.ndarray, np.ndarray]:
    n = len(stats)
    if isinstance(e, AlwaysTrue):
        return stats.row_count > 0, np.ones(n, dtype=np.bool_)
    if isinstance(e, AlwaysFalse):
        return np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
    if isinstance(e, And):
        ls, la = _prove(e.left, stats, exact)
        rs, ra = _prove(e.right, stats, exact)
        return (ls & ra) | (la & rs), la & ra
    if isinstance(e, Or):
        ls, la = _prove(e.left, stats, exact)
        rs, ra = _prove(e.right, stats, exact)
        return ls | rs, la | ra
    if isinstance(e, BoundPredicate):
        return _leaf(e, stats, exact)
    none = np.zeros(n, dtype=np.bool_)
    return none, none


def stats_prove_match(bound: BooleanExpression, stats: ColumnarStats) -> np.ndarray:
    """Per file: True where the stats prove some row matches ``bound`` (a bound, NOT-free
    predicate), so no index of the file can skip it."""
    try:
        with np.errstate(invalid="ignore"):
            some, _ = _prove(bound, stats)
    except (TypeError, ValueError, OverflowError):  # stats of another type than a literal
        return np.zeros(len(stats), dtype=np.bool_)
    return some


def stats_prove_all_match(
    bound: BooleanExpression, stats: ColumnarStats, exact: frozenset[str] = frozenset()
) -> np.ndarray:
    """Per file: True where the stats prove *every* row matches ``bound`` (a bound, NOT-free
    predicate). Unlike :func:`stats_prove_match` this decides answers (a pushed top-N counts
    such a file's rows as rows of the answer's input), so it holds only what the stats of
    exact types (and the ``exact`` columns: partition values) prove; anything else: False."""
    try:
        with np.errstate(invalid="ignore"):
            _, every = _prove(bound, stats, exact)
    except (TypeError, ValueError, OverflowError):  # stats of another type than a literal
        return np.zeros(len(stats), dtype=np.bool_)
    return every


def drop_decided_leaves(
    bound: BooleanExpression, stats: ColumnarStats, files: np.ndarray
) -> BooleanExpression:
    """``bound`` with each leaf the stats prove to hold on *every* row of each of the files
    ``files`` (positions in ``stats``) replaced by TRUE, folded: what is left for their
    indexes to decide (``IS NOT NULL`` on a column without NULLs needs no index).

    ``bound`` is NOT-free, so TRUE in place of any leaf can only widen what it selects: the
    index answer of the result holds every row the original's did, whatever the proof."""
    if not len(files):
        return bound

    def walk(e: BooleanExpression) -> BooleanExpression:
        if isinstance(e, And):
            return and_(walk(e.left), walk(e.right))
        if isinstance(e, Or):
            return or_(walk(e.left), walk(e.right))
        if isinstance(e, BoundPredicate):
            _, every = _leaf(e, stats, frozenset())
            return AlwaysTrue() if bool(every[files].all()) else e
        return e

    try:
        with np.errstate(invalid="ignore"):
            return walk(bound)
    except (TypeError, ValueError, OverflowError):  # stats of another type than a literal
        return bound


def predicate_shape(bound: BooleanExpression) -> Hashable:
    """``bound`` without its literals: its tree of operators and columns (and list sizes)."""
    if isinstance(bound, (And, Or)):
        return (type(bound).__name__, predicate_shape(bound.left), predicate_shape(bound.right))
    if isinstance(bound, BoundPredicate):
        return (bound.op.value, bound.term.name, len(bound.values))
    return type(bound).__name__
