"""The ``bsi`` (bit-sliced index) file index, Paimon's ``BitSliceIndexBitmapFileIndex``.

Values become longs (integers, DATE, TIMESTAMP millis/micros, DECIMAL unscaled) and are split
into a positive half and a half of absolute values of negatives. Layout (big-endian; RB = a
RoaringBitmap in the portable format, run-optimised)::

    u8 version=1 | i32 rowCount
    bool hasPositive | [BSI of values >= 0]
    bool hasNegative | [BSI of |values| < 0]

    BSI: u8 version=1 | i64 min | i64 max | RB ebm | i32 sliceCount | RB slice[0..sliceCount)

``ebm`` holds the rows with a value in that half; row ``r`` is in ``slice[b]`` when bit ``b``
of ``value - min`` is set; ``sliceCount = bit_length(max - min)``. Paimon's writer always
leaves ``min = 0`` (its collector starts at 0); we do the same. ``Long.MIN_VALUE`` has no
absolute value, so Paimon cannot index it; a file holding it gets no BSI (the index is
omitted, never wrong).

Comparisons use the min/max fast path, then O'Neil's bit-sliced algorithm; negatives are
answered with mirrored operators on the negative half. Results are exact row sets.

>>> import pyarrow as pa
>>> from lakeskip import types as T
>>> ix = BsiIndexer()
>>> w = ix.create_writer(T.BIGINT, {})
>>> w.write(pa.array([5, -3, None, 12, 0]))
>>> r = ix.create_reader(T.BIGINT, {}, w.serialize())
>>> list(r.visit_less_than(5).bitmap), list(r.visit_greater_than_or_equal(-3).bitmap)
([1, 4], [0, 1, 3, 4])
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import BitMap

from lakeskip.errors import CorruptIndexError
from lakeskip.expressions.operators import Operator
from lakeskip.index.base import (
    BufferedWriter,
    FileIndexer,
    FileIndexReader,
    FileIndexWriter,
)
from lakeskip.index.primitives.binary import ByteReader, ByteWriter
from lakeskip.index.primitives.bitslice import compare, serialize_slices
from lakeskip.index.primitives.hashing import long_values
from lakeskip.index.primitives.roaring import read_bitmap, roaring_size, serialize_mask
from lakeskip.index.result import BitmapResult, FileIndexResult
from lakeskip.types import DataType, TypeRoot

__all__ = ["BsiIndexer"]

VERSION_1 = 1
LONG_MIN = -(2**63)


def _supported(t: DataType) -> bool:
    if t.root is TypeRoot.DECIMAL:
        return (t.precision or 38) <= 18
    return t.is_integer or t.root is TypeRoot.DATE or t.is_timestamp


def _to_long(t: DataType, value: Any) -> int:
    if t.root is TypeRoot.DECIMAL:
        assert t.scale is not None
        return int(decimal.Decimal(value).scaleb(t.scale).to_integral_value())
    return int(value)


def _encode_half(w: ByteWriter, rows: Any, magnitudes: Any) -> None:
    """One half: ``rows`` (bool per row) hold a value in this half, ``magnitudes`` (int64 per
    row, 0 outside the half) its absolute value."""
    max_v = int(magnitudes.max())
    w.u8(VERSION_1)
    w.i64(0)
    w.i64(max_v)
    w.raw(serialize_mask(rows))
    n = max_v.bit_length()
    w.i32(n)
    for s in serialize_slices(magnitudes, n):
        w.raw(s)


class _Writer(BufferedWriter):
    def __init__(self, t: DataType) -> None:
        super().__init__()
        self.t = t
        self._cached: tuple[int, Any, Any] | None = None

    def _data(self) -> tuple[Any, Any]:
        """(valid: bool per row, value: int64 per row, 0 where null)."""
        if self._cached is not None and self._cached[0] == self.rows:
            return self._cached[1], self._cached[2]
        valid, present = self.split_nulls(self.t)
        values = long_values(present, self.t)
        if len(present) < len(valid):
            present_values = values
            values = np.zeros(len(valid), dtype=np.int64)
            values[valid] = present_values
        self._cached = (self.rows, valid, values)
        return valid, values

    @property
    def usable(self) -> bool:
        _, values = self._data()
        return not bool(np.any(values == np.int64(LONG_MIN)))

    def serialize(self) -> bytes:
        valid, values = self._data()
        if np.any(values == np.int64(LONG_MIN)):
            raise ValueError("BSI cannot index Long.MIN_VALUE")
        w = ByteWriter()
        w.u8(VERSION_1)
        w.i32(self.rows)
        negative = values < 0
        zero = np.int64(0)
        for half, magnitudes in (
            (valid & ~negative, np.where(negative, zero, values)),
            (negative, np.where(negative, -values, zero)),
        ):
            w.boolean(bool(half.any()))
            if half.any():
                _encode_half(w, half, magnitudes)
        return w.getvalue()


@dataclass(frozen=True, slots=True)
class _Half:
    min: int
    max: int
    ebm: BitMap
    slices: tuple[BitMap, ...]

    def compare(self, op: Operator, v: int) -> BitMap:
        lo, hi = self.min, self.max
        all_, none = self.ebm, BitMap()
        if op is Operator.EQ:
            if lo == hi == v:
                return BitMap(all_)
            if v < lo or v > hi:
                return none
        elif op is Operator.GE:
            if v <= lo:
                return BitMap(all_)
            if v > hi:
                return none
        elif op is Operator.GT:
            if v < lo:
                return BitMap(all_)
            if v >= hi:
                return none
        elif op is Operator.LE:
            if v >= hi:
                return BitMap(all_)
            if v < lo:
                return none
        elif op is Operator.LT:
            if v > hi:
                return BitMap(all_)
            if v <= lo:
                return none
        c = compare(self.ebm, self.slices, v - lo, above=op in (Operator.GT, Operator.GE))
        if op is Operator.EQ:
            return c.eq
        if op is Operator.GT:
            return c.gt
        if op is Operator.LT:
            return c.lt
        if op is Operator.LE:
            return c.lt | c.eq
        return c.gt | c.eq


_EMPTY = _Half(0, 0, BitMap(), ())


def _read_bitmap(r: ByteReader, rows: int) -> BitMap:
    start = r.pos
    length = roaring_size(r.buf, start)
    bm = read_bitmap(r.buf, start, rows, length)
    r.skip(length)
    return bm


def _read_half(r: ByteReader, rows: int) -> _Half:
    version = r.u8()
    if version != VERSION_1:
        raise CorruptIndexError(r.pos - 1, f"unsupported BSI version {version}")
    lo, hi = r.i64(), r.i64()
    if lo < 0 or lo > hi:
        raise CorruptIndexError(r.pos - 16, f"bad BSI min/max {lo}/{hi}")
    ebm = _read_bitmap(r, rows)
    n = r.i32()
    if not 0 <= n <= 64:
        raise CorruptIndexError(r.pos - 4, f"bad BSI slice count {n}")
    slices = tuple(_read_bitmap(r, rows) for _ in range(n))
    return _Half(lo, hi, ebm, slices)


class _Reader(FileIndexReader):
    def __init__(self, t: DataType, data: bytes | memoryview) -> None:
        self.t = t
        r = ByteReader(bytes(data))
        version = r.u8()
        if version != VERSION_1:
            raise CorruptIndexError(0, f"unsupported BSI index version {version}")
        self.rows = r.i32()
        if self.rows < 0:
            raise CorruptIndexError(1, f"negative row count {self.rows}")
        self.pos = _read_half(r, self.rows) if r.boolean() else _EMPTY
        self.neg = _read_half(r, self.rows) if r.boolean() else _EMPTY
        if r.remaining:
            raise CorruptIndexError(r.pos, f"{r.remaining} trailing bytes after BSI")

    def _not_null(self) -> BitMap:
        return self.pos.ebm | self.neg.ebm

    def _cmp(self, op: Operator, value: Any) -> BitMap:
        v = _to_long(self.t, value)
        if v < LONG_MIN or v > 2**63 - 1:  # outside what any stored value can be
            above = v > 0
            if op is Operator.EQ:
                return BitMap()
            if op in (Operator.LT, Operator.LE):
                return self._not_null() if above else BitMap()
            return BitMap() if above else self._not_null()
        if v < 0:
            a = -v
            if op in (Operator.LT, Operator.LE):
                return self.neg.compare(op.mirrored, a)
            if op in (Operator.GT, Operator.GE):
                return self.pos.ebm | self.neg.compare(op.mirrored, a)
            return self.neg.compare(Operator.EQ, a)
        if op in (Operator.LT, Operator.LE):
            return self.pos.compare(op, v) | self.neg.ebm
        return self.pos.compare(op, v)

    def _eq_any(self, values: Sequence[Any]) -> BitMap:
        out = BitMap()
        for v in values:
            out |= self._cmp(Operator.EQ, v)
        return out

    def visit_equal(self, value: Any) -> FileIndexResult:
        return BitmapResult(self._cmp(Operator.EQ, value))

    def visit_not_equal(self, value: Any) -> FileIndexResult:
        return BitmapResult(self._not_null() - self._cmp(Operator.EQ, value))

    def visit_in(self, values: Sequence[Any]) -> FileIndexResult:
        return BitmapResult(self._eq_any(values))

    def visit_not_in(self, values: Sequence[Any]) -> FileIndexResult:
        return BitmapResult(self._not_null() - self._eq_any(values))

    def visit_less_than(self, value: Any) -> FileIndexResult:
        return BitmapResult(self._cmp(Operator.LT, value))

    def visit_less_than_or_equal(self, value: Any) -> FileIndexResult:
        return BitmapResult(self._cmp(Operator.LE, value))

    def visit_greater_than(self, value: Any) -> FileIndexResult:
        return BitmapResult(self._cmp(Operator.GT, value))

    def visit_greater_than_or_equal(self, value: Any) -> FileIndexResult:
        return BitmapResult(self._cmp(Operator.GE, value))

    def visit_is_null(self) -> FileIndexResult:
        return BitmapResult(BitMap(range(self.rows)) - self._not_null())

    def visit_not_null(self) -> FileIndexResult:
        return BitmapResult(self._not_null())


class BsiIndexer(FileIndexer):
    """Paimon's ``bsi`` index type (no options; deprecated upstream for range-bitmap)."""

    name = "bsi"
    option_keys = frozenset()
    reader_type = _Reader

    def supports(self, data_type: DataType) -> bool:
        return _supported(data_type)

    def create_writer(self, data_type: DataType, options: Mapping[str, str]) -> FileIndexWriter:
        return _Writer(data_type)

    def row_count(self, data: bytes | memoryview) -> int:
        r = ByteReader(memoryview(data))
        r.u8()  # version
        return r.i32()

    def create_reader(
        self, data_type: DataType, options: Mapping[str, str], data: bytes | memoryview
    ) -> FileIndexReader:
        return _Reader(data_type, data)
