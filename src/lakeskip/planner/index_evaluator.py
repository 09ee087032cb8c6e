"""Tiers 3/4: what a data file's indexes say about a bound, NOT-free predicate.

Paimon's ``FileIndexPredicate`` rules: a leaf ANDs the results of every index on its column
(stopping at the first that does not remain); AND folds with ``and_`` and short-circuits;
OR folds with ``or_``. Negation never reaches here (it was pushed into the leaves).
A SKIP, or a bitmap with no rows, means no row of the file can match.

Cheapest first: an AND's conjuncts are evaluated in order of the cost of the indexes they
use (none, bloom filter, bitmap, then the bit-sliced ones), as are the indexes of one leaf,
and evaluation stops at the first that rules the file out. The folds are commutative, so
the order changes the work done, never the verdict.

Leaves an index cannot decide are REMAIN (``FileIndexReader`` defaults; no index decides
``NOT STARTS WITH`` today). Each leaf dispatches itself to the reader method of the same
name as the :class:`~lakeskip.expressions.BoundPredicateVisitor` method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyroaring import BitMap

from lakeskip.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    BoundPredicateVisitor,
    BoundReference,
    Or,
)
from lakeskip.expressions.visitors import conjuncts
from lakeskip.index.base import FileIndexReader
from lakeskip.index.file_index import FileIndexFile
from lakeskip.index.result import REMAIN, SKIP, BitmapResult, FileIndexResult

__all__ = ["IndexVerdict", "evaluate_file_index", "evaluate_window", "reader_answer"]


@dataclass(slots=True)
class IndexVerdict:
    """The outcome for one file: skip it, or keep it (optionally only ``rows``)."""

    skip: bool
    index_type: str | None = None  # first index that excluded rows (for the report)
    column: str | None = None
    rows: BitMap | None = None
    warnings: list[str] = field(default_factory=list)


class _ReaderLeaves(BoundPredicateVisitor[FileIndexResult]):
    """One index reader seen through the visitor protocol: the reader answers the same
    method names for its one column, so each leaf forwards without the term."""

    def __init__(self, reader: FileIndexReader) -> None:
        self.reader = reader

    def visit_equal(self, term: BoundReference, value: Any) -> FileIndexResult:
        return self.reader.visit_equal(value)

    def visit_not_equal(self, term: BoundReference, value: Any) -> FileIndexResult:
        return self.reader.visit_not_equal(value)

    def visit_less_than(self, term: BoundReference, value: Any) -> FileIndexResult:
        return self.reader.visit_less_than(value)

    def visit_less_than_or_equal(self, term: BoundReference, value: Any) -> FileIndexResult:
        return self.reader.visit_less_than_or_equal(value)

    def visit_greater_than(self, term: BoundReference, value: Any) -> FileIndexResult:
        return self.reader.visit_greater_than(value)

    def visit_greater_than_or_equal(self, term: BoundReference, value: Any) -> FileIndexResult:
        return self.reader.visit_greater_than_or_equal(value)

    def visit_in(self, term: BoundReference, values: frozenset[Any]) -> FileIndexResult:
        return self.reader.visit_in(sorted(values, key=repr))

    def visit_not_in(self, term: BoundReference, values: frozenset[Any]) -> FileIndexResult:
        return self.reader.visit_not_in(sorted(values, key=repr))

    def visit_is_null(self, term: BoundReference) -> FileIndexResult:
        return self.reader.visit_is_null()

    def visit_not_null(self, term: BoundReference) -> FileIndexResult:
        return self.reader.visit_not_null()

    def visit_starts_with(self, term: BoundReference, prefix: str) -> FileIndexResult:
        return self.reader.visit_starts_with(prefix)

    def visit_not_starts_with(self, term: BoundReference, prefix: str) -> FileIndexResult:
        return self.reader.visit_not_starts_with(prefix)


def reader_answer(reader: FileIndexReader, leaf: BoundPredicate) -> FileIndexResult:
    """What one index reader says about one bound leaf on its column."""
    return leaf.accept(_ReaderLeaves(reader))


#: relative cost of asking one index type (probing a bloom filter is a few hashes; a bitmap
#: reads one or a few row bitmaps; bsi and range-bitmap combine a bitmap per bit slice)
_COST = {"bloom-filter": 1, "bitmap": 2}
_OTHER_COST = 3


class _NoWindow(Exception):
    """A leaf's index cannot answer for the first rows alone (:func:`evaluate_window`)."""


class _Evaluator:
    def __init__(self, index: FileIndexFile, window: bool = False) -> None:
        self.index = index
        self.window = window
        self._costs: dict[str, int] | None = None
        self.culprit: tuple[str, str] | None = None
        # indexes that answered something (row bitmaps whose AND/OR may end up empty)
        self.answered: list[tuple[str, str]] = []

    def cost(self, e: BooleanExpression) -> int:
        """What evaluating ``e`` costs: the dearest index on a column it tests."""
        if self._costs is None:
            costs: dict[str, int] = {}
            for entry in self.index.container.entries:
                c = _COST.get(entry.index_type, _OTHER_COST)
                costs[entry.column] = max(costs.get(entry.column, 0), c)
            self._costs = costs
        if isinstance(e, (And, Or)):
            return max(self.cost(e.left), self.cost(e.right))
        if isinstance(e, BoundPredicate):
            return self._costs.get(e.term.name, 0)
        return 0

    def leaf(self, p: BoundPredicate) -> FileIndexResult:
        result: FileIndexResult = REMAIN
        readers = sorted(
            self.index.typed_readers(p.term.name), key=lambda t: _COST.get(t[0], _OTHER_COST)
        )
        for index_type, reader in readers:
            if self.window:
                windowed = getattr(reader, "windowed", None)
                if windowed is None:
                    raise _NoWindow
                reader = windowed()
            r = reader_answer(reader, p)
            if r is not REMAIN and (index_type, p.term.name) not in self.answered:
                self.answered.append((index_type, p.term.name))
            result = result.and_(r)
            if not r.remain() and self.culprit is None:
                self.culprit = (index_type, p.term.name)
            if not result.remain():
                break
        return result

    def eval(self, e: BooleanExpression) -> FileIndexResult:
        if isinstance(e, AlwaysTrue):
            return REMAIN
        if isinstance(e, AlwaysFalse):
            return SKIP
        if isinstance(e, And):
            result: FileIndexResult = REMAIN
            for c in sorted(conjuncts(e), key=self.cost):
                result = result.and_(self.eval(c))
                if not result.remain():
                    return result
            return result
        if isinstance(e, Or):
            return self.eval(e.left).or_(self.eval(e.right))
        if isinstance(e, BoundPredicate):
            return self.leaf(e)
        return REMAIN


def evaluate_file_index(bound: BooleanExpression, index: FileIndexFile) -> IndexVerdict:
    """Evaluate ``bound`` on one file's indexes (exceptions propagate: the caller keeps
    the file and warns)."""
    ev = _Evaluator(index)
    result = ev.eval(bound)
    if not result.remain():
        # no single leaf skipped (e.g. a bsi range: two row bitmaps whose AND is empty):
        # name the first index that answered
        culprit = ev.culprit or (ev.answered[0] if ev.answered else None)
        index_type, column = culprit if culprit else ("index", None)
        return IndexVerdict(True, index_type, column)
    rows = result.bitmap if isinstance(result, BitmapResult) else None
    return IndexVerdict(False, rows=rows)


def evaluate_window(bound: BooleanExpression, index: FileIndexFile) -> BitMap | None:
    """The rows below ``WINDOW_ROWS`` (65,536) that ``bound`` may match, by one file's
    indexes each reading only the first Roaring container of its bitmaps: the rows
    :func:`evaluate_file_index` would give, less those from ``WINDOW_ROWS`` on. ``None``
    when that is not a set of rows: a leaf with an index that answers only for the whole
    file (every type but ``range-bitmap``), or a predicate the indexes leave undecided.

    Only ever a reason to keep a file (rows found here are rows the whole evaluation finds):
    an empty window says nothing about the rows after it.
    """
    try:
        result = _Evaluator(index, window=True).eval(bound)
    except _NoWindow:
        return None
    return result.bitmap if isinstance(result, BitmapResult) else None
