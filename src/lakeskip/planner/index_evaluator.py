"""Tiers 3/4: what a data file's indexes say about a bound, NOT-free predicate.

Paimon's ``FileIndexPredicate`` rules: a leaf ANDs the results of every index on its column
(stopping at the first that does not remain); AND folds with ``and_`` and short-circuits;
OR folds with ``or_``. Negation never reaches here (it was pushed into the leaves).
A SKIP, or a bitmap with no rows, means no row of the file can match.

Leaves an index cannot decide are REMAIN (``FileIndexReader`` defaults). ``NOT STARTS WITH``
has no reader method and stays REMAIN.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyroaring import BitMap

from lakeskip.expressions import AlwaysFalse, AlwaysTrue, And, BooleanExpression, BoundPredicate, Or
from lakeskip.index.base import FileIndexReader
from lakeskip.index.file_index import FileIndexFile
from lakeskip.index.result import REMAIN, SKIP, BitmapResult, FileIndexResult

__all__ = ["IndexVerdict", "evaluate_file_index"]


@dataclass(slots=True)
class IndexVerdict:
    """The outcome for one file: skip it, or keep it (optionally only ``rows``)."""

    skip: bool
    index_type: str | None = None  # first index that excluded rows (for the report)
    column: str | None = None
    rows: BitMap | None = None
    warnings: list[str] = field(default_factory=list)


def _visit(reader: FileIndexReader, p: BoundPredicate) -> FileIndexResult:
    op, v = p.op, p.value
    if op == "eq":
        return reader.visit_equal(v)
    if op == "ne":
        return reader.visit_not_equal(v)
    if op == "lt":
        return reader.visit_less_than(v)
    if op == "le":
        return reader.visit_less_or_equal(v)
    if op == "gt":
        return reader.visit_greater_than(v)
    if op == "ge":
        return reader.visit_greater_or_equal(v)
    if op == "in":
        return reader.visit_in(sorted(p.values, key=repr))
    if op == "not_in":
        return reader.visit_not_in(sorted(p.values, key=repr))
    if op == "is_null":
        return reader.visit_is_null()
    if op == "not_null":
        return reader.visit_is_not_null()
    if op == "starts_with":
        return reader.visit_starts_with(v)
    return REMAIN


class _Evaluator:
    def __init__(self, index: FileIndexFile) -> None:
        self.index = index
        self.culprit: tuple[str, str] | None = None
        # indexes that answered something (row bitmaps whose AND/OR may end up empty)
        self.answered: list[tuple[str, str]] = []

    def leaf(self, p: BoundPredicate) -> FileIndexResult:
        result: FileIndexResult = REMAIN
        for index_type, reader in self.index.typed_readers(p.term.name):
            r = _visit(reader, p)
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
            left = self.eval(e.left)
            if not left.remain():
                return left
            return left.and_(self.eval(e.right))
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
