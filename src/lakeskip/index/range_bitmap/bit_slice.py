"""Range-bitmap's bit-sliced index over dictionary codes (Paimon's ``BitSliceIndexBitmap``).

Layout (big-endian; ``RB`` = a RoaringBitmap in the portable format, run-optimised)::

    i32 headerLength | u8 version=1 | u8 sliceCount | i32 ebmLength
    | i32 indexesLength | (i32 offset, i32 length)[sliceCount]
    | RB ebm | RB slice[0..sliceCount)

``ebm`` holds the non-null rows; row ``r`` is in ``slice[b]`` when bit ``b`` of its code is
set. ``sliceCount`` is the bit length of ``cardinality - 1`` (at least 1); Java writes 64 empty
slices when every value is null. Building and comparing are the shared
:mod:`lakeskip.index.primitives.bitslice`; this module is only the layout.
"""

from __future__ import annotations

from typing import Any

from pyroaring import BitMap

from lakeskip.errors import CorruptIndexError
from lakeskip.index.primitives.binary import ByteReader, ByteWriter
from lakeskip.index.primitives.bitslice import below, serialize_slices
from lakeskip.index.primitives.roaring import (
    CONTAINER_BITS,
    read_bitmap,
    read_first_container,
    serialize_mask,
)

__all__ = ["WINDOW_ROWS", "BitSliceIndex", "serialize_bit_slices"]

VERSION_1 = 1
MAX_SLICES = 64
#: rows a windowed read covers: ``0 .. WINDOW_ROWS - 1``, each bitmap's first container
WINDOW_ROWS = CONTAINER_BITS


def serialize_bit_slices(valid: Any, codes: Any, cardinality: int) -> bytes:
    """``valid``: bool per row; ``codes``: int64 code per row (0 where null)."""
    n = max((cardinality - 1).bit_length(), 1) if cardinality else MAX_SLICES
    ebm = serialize_mask(valid)
    slices = serialize_slices(codes, n)
    w = ByteWriter()
    w.i32(1 + 1 + 4 + 4 + 8 * n)
    w.u8(VERSION_1)
    w.u8(n)
    w.i32(len(ebm))
    w.i32(8 * n)
    offset = 0
    for s in slices:
        w.i32(offset)
        w.i32(len(s))
        offset += len(s)
    return w.getvalue() + ebm + b"".join(slices)


def _holds_code_above(ebm: BitMap, slices: tuple[BitMap, ...], top: int) -> bool:
    """Whether some row of ``ebm`` has a code above ``top`` (``top >= 0``). Walks the slices
    from the highest bit down, keeping the rows equal to ``top`` so far: a row with a bit
    set where ``top``'s is clear is above it (an intersection test, no bitmap built);
    stops when no row is left equal to ``top``'s prefix."""
    if top >> len(slices):
        return False  # every code the slices can hold is below top
    if any(s.intersect(ebm) for s in slices[top.bit_length() :]):
        return True  # a bit above top's highest: the row's code is above top
    eq = ebm
    for i in range(top.bit_length() - 1, -1, -1):
        if not eq:
            return False
        s = slices[i]
        if (top >> i) & 1:
            eq = eq & s
        elif eq.intersect(s):
            return True
    return False


class BitSliceIndex:
    """Rows by code, read (and checked against the dictionary's cardinality) on first use."""

    def __init__(self, buf: memoryview, pos: int, rows: int, cardinality: int) -> None:
        self.buf = buf
        self.pos = pos
        self.rows = rows
        self.cardinality = cardinality
        self._ebm: BitMap | None = None
        self._slices: tuple[BitMap, ...] = ()
        self._window: tuple[BitMap, tuple[BitMap, ...]] | None = None

    def _layout(self) -> tuple[int, int, list[tuple[int, int]]]:
        """Where the bitmaps are: the body's position, the ebm's length, each slice's
        (offset from the end of the ebm, length)."""
        base = self.pos
        r = ByteReader(self.buf[base:], base=base)
        head_len = r.i32()
        h = ByteReader(r.take(head_len, "bsi header"), base + 4)
        if h.u8() != VERSION_1:
            raise CorruptIndexError(base + 4, "unsupported range-bitmap BSI version")
        n, ebm_len, indexes_len = h.u8(), h.i32(), h.i32()
        if not 1 <= n <= MAX_SLICES or indexes_len != 8 * n:
            raise CorruptIndexError(base + 5, f"bad BSI slice count {n}")
        spans = [(h.i32(), h.i32()) for _ in range(n)]
        if h.remaining:
            raise CorruptIndexError(h.base + h.pos, "trailing bytes in BSI header")
        return base + 4 + head_len, ebm_len, spans

    def _read(self) -> tuple[BitMap, tuple[BitMap, ...]]:
        if self._ebm is not None:
            return self._ebm, self._slices
        body, ebm_len, spans = self._layout()
        ebm = read_bitmap(self.buf, body, self.rows, ebm_len)
        slices = tuple(
            read_bitmap(self.buf, body + ebm_len + off, self.rows, length) for off, length in spans
        )
        if self.cardinality and _holds_code_above(ebm, slices, self.cardinality - 1):
            raise CorruptIndexError(body, "BSI holds codes beyond the dictionary")
        if not self.cardinality and len(ebm):
            raise CorruptIndexError(body, "BSI holds rows but the dictionary is empty")
        self._ebm, self._slices = ebm, slices
        return ebm, slices

    def _read_window(self) -> tuple[BitMap, tuple[BitMap, ...]]:
        """:meth:`_read` of the rows below :data:`WINDOW_ROWS` only: each bitmap's first
        container (checked as :meth:`_read` checks the whole)."""
        got = self._window
        if got is not None:
            return got
        body, ebm_len, spans = self._layout()
        ebm = read_first_container(self.buf, body, self.rows, ebm_len)
        slices = tuple(
            read_first_container(self.buf, body + ebm_len + off, self.rows, length)
            for off, length in spans
        )
        if self.cardinality and _holds_code_above(ebm, slices, self.cardinality - 1):
            raise CorruptIndexError(body, "BSI holds codes beyond the dictionary")
        if not self.cardinality and len(ebm):
            raise CorruptIndexError(body, "BSI holds rows but the dictionary is empty")
        self._window = (ebm, slices)
        return ebm, slices

    def not_null(self, window: bool = False) -> BitMap:
        """Non-null rows (``window``: of the rows below :data:`WINDOW_ROWS` only)."""
        return BitMap((self._read_window() if window else self._read())[0])

    def below(self, code: int, window: bool = False) -> BitMap:
        """Non-null rows whose code is ``< code`` (``window``: of the rows below
        :data:`WINDOW_ROWS` only)."""
        ebm, slices = self._read_window() if window else self._read()
        if code <= 0:
            return BitMap()
        if code >= self.cardinality:
            return BitMap(ebm)
        return below(ebm, slices, code)
