"""The bitmap index writer: groups a column by key once, lays out the body in Java's
``HashMap`` order, then writes the V1 or the V2 meta (see :mod:`.file_index` for both
layouts). Vectorised: keys, hash codes, the HashMap order, inlined single-row entries and the
V1 entries / V2 index blocks are whole-column numpy; Python steps once per stored bitmap
(keys on two or more rows) and once per V2 block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lakeskip.index.base import BufferedWriter
from lakeskip.index.bitmap.keys import ColumnGroups, group_column
from lakeskip.index.primitives.binary import ByteWriter, fixed_field, pack_records, take_field
from lakeskip.index.primitives.java import hashmap_iteration
from lakeskip.index.primitives.roaring import bitmap_of, serialize_bitmap
from lakeskip.types import DataType

__all__ = ["VERSION_1", "VERSION_2", "BitmapWriter"]

VERSION_1 = 1
VERSION_2 = 2


@dataclass(frozen=True, slots=True)
class _Layout:
    """What both versions share: the keys (in ``compareTo`` order) with each one's body
    ``offset``/``length`` (``-1 - row``/``-1`` when inlined), Java's iteration order over
    them, the null bitmap, and the body bytes."""

    column: ColumnGroups
    offsets: Any
    lengths: Any
    java_order: Any
    nulls: bytes
    null_count: int
    null_offset: int
    body: bytes


def _layout(column: ColumnGroups, null_rows: Any) -> _Layout:
    g = column.groups
    m = len(g.keys)
    counts = np.diff(g.bounds)
    first = column.first_rows()
    # Java inserts keys in first-occurrence order, and that order drives the HashMap layout
    by_first = np.argsort(first, kind="stable")
    pending = bool(m) and int(column.rows[-1]) > int(first[by_first[-1]])
    java_order = by_first[hashmap_iteration(column.hashes[by_first], by_first, pending)]
    nulls = serialize_bitmap(bitmap_of(null_rows))
    null_count = len(null_rows)
    parts = [nulls] if null_count > 1 else []
    offsets = -1 - first
    lengths = np.full(m, -1, dtype=np.int64)
    stored = java_order[counts[java_order] > 1]
    bitmaps = [serialize_bitmap(bitmap_of(column.rows_of(int(i)))) for i in stored]
    if len(stored):
        sizes = np.fromiter((len(b) for b in bitmaps), dtype=np.int64, count=len(stored))
        lengths[stored] = sizes
        offsets[stored] = len(parts[0]) if parts else 0
        offsets[stored] += np.cumsum(sizes) - sizes
    null_offset = -1 - int(null_rows[0]) if null_count == 1 else 0
    return _Layout(
        column,
        offsets,
        lengths,
        java_order,
        nulls,
        null_count,
        null_offset,
        b"".join(parts + bitmaps),
    )


def _serialize_v1(w: ByteWriter, lay: _Layout) -> None:
    if lay.null_count > 0:
        w.i32(lay.null_offset)
    order = lay.java_order
    if len(order):
        entries, _ = pack_records(
            [take_field(lay.column.keys, order), fixed_field(lay.offsets[order], ">i4")]
        )
        w.raw(entries)


def _serialize_v2(w: ByteWriter, lay: _Layout, block_size: int) -> None:
    if lay.null_count > 0:
        w.i32(lay.null_offset)
        w.i32(len(lay.nulls))
    keys = lay.column.keys
    m = len(keys[1])
    entries, at = pack_records(
        [keys, fixed_field(lay.offsets, ">i4"), fixed_field(lay.lengths, ">i4")]
    )
    # greedy blocks in key order: 4 bytes of count, then entries while they fit
    starts: list[int] = []
    s = 0
    while s < m:
        starts.append(s)
        fit = int(np.searchsorted(at, at[s] + block_size - 4, side="right")) - 1
        s = max(s + 1, min(fit, m))
    bounds = np.array([*starts, m], dtype=np.int64)
    sizes = 4 + at[bounds[1:]] - at[bounds[:-1]]
    block_offsets = np.cumsum(sizes) - sizes
    w.i32(len(starts))
    if starts:
        table, _ = pack_records([take_field(keys, bounds[:-1]), fixed_field(block_offsets, ">i4")])
        w.raw(table)
    w.i32(int(sizes.sum()))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        w.i32(hi - lo)
        w.raw(entries[int(at[lo]) : int(at[hi])])


class BitmapWriter(BufferedWriter):
    def __init__(self, t: DataType, version: int, block_size: int) -> None:
        super().__init__()
        self.t = t
        self.version = version
        self.block_size = block_size

    def serialize(self) -> bytes:
        valid, present = self.split_nulls(self.t)
        column = group_column(self.t, valid, present)
        lay = _layout(column, np.flatnonzero(~valid))
        w = ByteWriter()
        w.u8(self.version)
        w.i32(self.rows)
        w.i32(len(column.groups.keys))
        w.boolean(lay.null_count > 0)
        if self.version == VERSION_1:
            _serialize_v1(w, lay)
        else:
            _serialize_v2(w, lay, self.block_size)
        w.raw(lay.body)
        return w.getvalue()
