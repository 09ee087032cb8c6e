"""Tier 3 for many files at once: every embedded bloom filter of a column probed together.

A point lookup on a bloom-indexed column used to open each file's index container and
probe its filter file by file. Here the filters of one column are gathered once per
snapshot (cached) into one ``uint8`` matrix per filter size (files whose filters have the
same ``k`` and bit count, as one table's options make them); a query hashes its literal
once per size and tests its ``k`` bit positions across every row of the matrix in one array
operation.

The answer is a *pre-filter*, sound by Paimon's ``FileIndexPredicate`` rules: a leaf ANDs
every index on its column, so a bloom SKIP makes the leaf SKIP whatever the other indexes
say, and AND/OR fold monotonically, so a predicate the blooms alone rule out is ruled out
by the full per-file evaluation too. Files it keeps go on to the per-file evaluation (other
index types, row bitmaps) -- unless the only indexes on the predicate's columns are bloom
filters, where the per-file answer would be the same REMAIN. Files whose container or
filter does not parse here, that were written with another schema, or whose container
holds an index counting other rows than the file has (another file's container: its
blooms are not this file's either), are left to the per-file path (which keeps them and
warns when they are corrupt).

>>> BloomColumns.build([], {}).files
0
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lakeskip.errors import CorruptIndexError, UnknownIndexTypeError
from lakeskip.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundEqualTo,
    BoundIn,
    BoundPredicate,
    Or,
)
from lakeskip.index.base import FileIndexer
from lakeskip.index.bloom_filter import MAX_HASH_FUNCTIONS, BloomFilterIndexer, bloom_positions
from lakeskip.index.format import MAGIC, VERSION, FileIndexContainer
from lakeskip.index.primitives.hashing import hash_value
from lakeskip.index.registry import get_indexer
from lakeskip.types import DataType, TypeRoot

__all__ = ["BloomColumns", "BloomVerdict"]

BLOOM = "bloom-filter"
_HEAD = struct.Struct(">qii")


def _counted(container: FileIndexContainer) -> list[tuple[FileIndexer, int, int]]:
    """The stored indexes of ``container`` whose format records the rows they cover."""
    out = []
    for e in container.entries:
        if e.start < 0 or e.index_type == BLOOM:
            continue
        try:
            indexer = get_indexer(e.index_type)
        except UnknownIndexTypeError:
            continue
        if type(indexer).row_count is not FileIndexer.row_count:
            out.append((indexer, e.start, e.length))
    return out


def _counts(data: bytes, counted: list[tuple[FileIndexer, int, int]], rows: int) -> bool:
    """Whether every index of ``counted`` in ``data`` counts ``rows`` rows."""
    try:
        return all(
            ix.row_count(memoryview(data)[start : start + length]) == rows
            for ix, start, length in counted
        )
    except CorruptIndexError:
        return False


@dataclass(slots=True)
class _Group:
    """Filters of one size: ``bits[j]`` is the filter of file ``files[j]``."""

    k: int
    num_bits: int
    files: np.ndarray
    bits: np.ndarray


@dataclass(slots=True)
class BloomVerdict:
    """``keep[i]``: the blooms cannot rule file ``i`` out; ``column[i]``: the column whose
    bloom ruled it out (where not kept); ``decided[i]``: kept files whose per-file
    evaluation would say nothing more (only blooms index the predicate's columns)."""

    keep: np.ndarray
    column: list[str | None]
    decided: np.ndarray


@dataclass(slots=True)
class BloomColumns:
    """The bloom filters of ``files`` files, by column, plus each file's index layout."""

    files: int
    groups: dict[str, list[_Group]] = field(default_factory=dict)
    layout: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    layouts: list[dict[str, frozenset[str]] | None] = field(default_factory=list)
    nbytes: int = 0

    @classmethod
    def build(
        cls,
        indexes: Sequence[bytes | None],
        types: dict[str, DataType],
        row_counts: Sequence[int] | None = None,
    ) -> BloomColumns:
        """Gather the filters of the columns in ``types`` (the table schema's, for files
        written with it) from the embedded containers ``indexes`` (``None``: not gathered)
        of files of ``row_counts`` rows (``None``: not checked)."""
        n = len(indexes)
        layout = np.full(n, -1, dtype=np.int64)
        layouts: list[dict[str, frozenset[str]] | None] = []
        by_head: dict[bytes, int] = {}
        entries_of: list[list[tuple[str, str, int, int]]] = []
        # per layout: the indexes that record their rows (indexer, start, length)
        counted_of: list[list[tuple[FileIndexer, int, int]]] = []
        parts: dict[tuple[str, int, int], tuple[list[int], list[bytes]]] = {}
        indexer = BloomFilterIndexer()
        supported = {c: indexer.supports(t) for c, t in types.items()}
        for i, data in enumerate(indexes):
            if data is None or len(data) < 24:
                continue
            magic, version, head_len = _HEAD.unpack_from(data, 0)
            if magic != MAGIC or version != VERSION or not 24 <= head_len <= len(data):
                continue
            head = data[:head_len]
            lid = by_head.get(head)
            if lid is None:
                try:
                    container = FileIndexContainer.decode(data)
                except Exception:
                    continue
                lid = len(layouts)
                by_head[head] = lid
                cols: dict[str, set[str]] = {}
                for e in container.entries:
                    cols.setdefault(e.column, set()).add(e.index_type)
                layouts.append({c: frozenset(t) for c, t in cols.items()})
                entries_of.append(
                    [
                        (e.column, e.index_type, e.start, e.length)
                        for e in container.entries
                        if e.index_type == BLOOM and e.column in types and e.start >= 0
                    ]
                )
                counted_of.append(_counted(container))
            layout[i] = lid
            if row_counts is not None and not _counts(data, counted_of[lid], row_counts[i]):
                layout[i] = -1  # not this file's index, or damaged: the per-file path says
                continue
            for column, _, start, length in entries_of[lid]:
                if start + length > len(data) or length < 5:
                    layout[i] = -1  # let the per-file path look at it
                    break
                k = int.from_bytes(data[start : start + 4], "big", signed=True)
                if not 1 <= k <= MAX_HASH_FUNCTIONS or not supported[column]:
                    layout[i] = -1
                    break
                key = (column, k, length - 4)
                got = parts.get(key)
                if got is None:
                    got = parts[key] = ([], [])
                got[0].append(i)
                got[1].append(data[start + 4 : start + length])
        out = cls(n, {}, layout, layouts)
        valid = layout >= 0
        for (column, k, nbytes), (rows, chunks) in parts.items():
            files = np.asarray(rows, dtype=np.int64)
            keep = valid[files]
            bits = np.frombuffer(b"".join(chunks), dtype=np.uint8).reshape(len(rows), nbytes)
            group = _Group(k, nbytes * 8, files[keep], bits[keep])
            out.groups.setdefault(column, []).append(group)
            out.nbytes += group.bits.nbytes + group.files.nbytes
        out.nbytes += layout.nbytes + 200 * len(layouts)
        return out

    # -- probing -------------------------------------------------------------------------

    def _might_contain(self, column: str, dtype: DataType, value: Any) -> np.ndarray:
        """Per file: False where the column's bloom proves ``value`` absent."""
        out = np.ones(self.files, dtype=np.bool_)
        h = np.array([hash_value(dtype, value)], dtype=np.int64)
        for g in self.groups.get(column, ()):
            pos = bloom_positions(h, g.k, g.num_bits)
            hit = np.ones(len(g.files), dtype=np.bool_)
            for p in pos.tolist():
                hit &= (g.bits[:, p >> 3] & (1 << (p & 7))) != 0
            out[g.files] = hit
        return out

    def _equal(self, p: BoundPredicate, value: Any) -> np.ndarray:
        dtype = p.term.type
        if dtype.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE) and value == 0:
            # SQL: 0.0 = -0.0, but their bits (and so their hashes) differ
            zero: np.ndarray = self._might_contain(p.term.name, dtype, 0.0)
            zero |= self._might_contain(p.term.name, dtype, -0.0)
            return zero
        return self._might_contain(p.term.name, dtype, value)

    def evaluate(self, bound: BooleanExpression) -> BloomVerdict:
        """What the blooms alone say about every file (see the module docstring)."""
        column: list[str | None] = [None] * self.files
        leaves: list[BoundPredicate] = []

        def walk(e: BooleanExpression) -> np.ndarray:
            if isinstance(e, AlwaysFalse):
                return np.zeros(self.files, dtype=np.bool_)
            if isinstance(e, And):
                out: np.ndarray = walk(e.left) & walk(e.right)
                return out
            if isinstance(e, Or):
                out = walk(e.left) | walk(e.right)
                return out
            if isinstance(e, BoundPredicate):
                leaves.append(e)
                if e.term.key is None and e.term.name in self.groups:
                    if isinstance(e, BoundEqualTo):
                        hit = self._equal(e, e.value)
                    elif isinstance(e, BoundIn):
                        hit = np.zeros(self.files, dtype=np.bool_)
                        for v in sorted(e.values, key=repr):
                            hit |= self._equal(e, v)
                    else:
                        return np.ones(self.files, dtype=np.bool_)
                    for i in np.flatnonzero(~hit).tolist():
                        if column[i] is None:
                            column[i] = e.term.name
                    return hit
            if isinstance(e, (AlwaysTrue, BoundPredicate)):
                return np.ones(self.files, dtype=np.bool_)
            return np.ones(self.files, dtype=np.bool_)  # anything else: no opinion

        keep = walk(bound) & np.ones(self.files, dtype=np.bool_)
        names = {leaf.term.name for leaf in leaves}
        only_bloom = np.zeros(len(self.layouts) + 1, dtype=np.bool_)
        for lid, cols in enumerate(self.layouts):
            only_bloom[lid] = (
                cols is not None
                and all(cols.get(n, frozenset()) <= {BLOOM} for n in names)
                and all(leaf.term.key is None for leaf in leaves)
            )
        decided = keep & (self.layout >= 0) & only_bloom[self.layout]
        return BloomVerdict(keep, column, decided)
