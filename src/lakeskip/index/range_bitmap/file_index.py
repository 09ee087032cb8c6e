"""The ``range-bitmap`` file index, Paimon's ``RangeBitmapFileIndex`` (Paimon >= 1.3).

Every distinct non-null value gets a *code*: its rank in the sorted dictionary. A bit-sliced
index (BSI) over the codes answers ``=``/``<``/``<=``/``>``/``>=`` with a handful of bitmap
operations; the dictionary, split into chunks, turns a literal into a code range. Unlike
``bsi`` it indexes strings and floats, and its size grows with ``log2(distinct values)``.

Layout (big-endian; ``key`` as in :mod:`.keys`)::

    i32 headerLength | u8 version=1 | i32 rowCount | i32 cardinality
                     | [key min | key max]            (only when cardinality > 0)
                     | i32 dictionaryLength
    dictionary       (dictionaryLength bytes; :mod:`.dictionary`)
    bsi              (the codes, bit-sliced; :mod:`.bit_slice`)

The writer is vectorised end to end: codes from one ``np.unique`` (or Arrow's for strings),
the dictionary assembled from one buffer of serialised keys, the slices from numpy masks.

Keys are Paimon's: integers, DATE (epoch days), DECIMAL(p <= 18) unscaled longs, TIMESTAMP(p
<= 3) millis and TIMESTAMP(p <= 6) micros (floored), FLOAT/DOUBLE, BOOLEAN and STRING (UTF-8,
compared bytewise). Java orders floats by ``Float.compare``, so ``-0.0`` and ``0.0`` are two
keys and NaN (one key, whatever its payload) sorts last; the reader answers in SQL's terms
(``-0.0 = 0.0``; NaN = NaN, above every number) by turning a literal into the run of keys
equal to it. Answers are exact row sets; ``LIKE 'p%'`` on strings is answered too.

Option ``chunk-size`` (memory size; default ``16kb``, ``0b`` for BOOLEAN/TINYINT/SMALLINT).

>>> import pyarrow as pa
>>> from lakeskip import types as T
>>> ix = RangeBitmapIndexer()
>>> w = ix.create_writer(T.STRING, {})
>>> w.write(pa.array(["b", None, "a", "c", "b"]))
>>> r = ix.create_reader(T.STRING, {}, w.serialize())
>>> list(r.visit_greater_than("a").bitmap), list(r.visit_equal("b").bitmap)
([0, 3, 4], [0, 4])
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pyroaring import BitMap

from lakeskip.errors import CorruptIndexError, InvalidOptionError
from lakeskip.expressions.operators import Operator
from lakeskip.index.base import (
    BufferedWriter,
    FileIndexer,
    FileIndexReader,
    FileIndexWriter,
    parse_memory_size,
)
from lakeskip.index.primitives.binary import ByteReader, ByteWriter
from lakeskip.index.range_bitmap.bit_slice import WINDOW_ROWS, BitSliceIndex, serialize_bit_slices
from lakeskip.index.range_bitmap.dictionary import ChunkedDictionary, serialize_dictionary
from lakeskip.index.range_bitmap.keys import (
    UNCHUNKED,
    KeyCodec,
    build_dictionary,
    literal_range,
    supported,
)
from lakeskip.index.result import BitmapResult, FileIndexResult
from lakeskip.types import DataType, TypeRoot

__all__ = ["DEFAULT_CHUNK_SIZE", "RangeBitmapIndexer"]

VERSION_1 = 1
DEFAULT_CHUNK_SIZE = "16kb"
CHUNK_SIZE = "chunk-size"
_INT32_MAX = 2**31 - 1


def _chunk_size(t: DataType, options: Mapping[str, str]) -> int:
    default = "0b" if t.root in UNCHUNKED else DEFAULT_CHUNK_SIZE
    size = parse_memory_size(options.get(CHUNK_SIZE, default), CHUNK_SIZE)
    if size > _INT32_MAX:
        raise InvalidOptionError(f"{CHUNK_SIZE} must be below 2 GB, got {options[CHUNK_SIZE]!r}")
    return size


# -- writer ------------------------------------------------------------------------------


class _Writer(BufferedWriter):
    def __init__(self, t: DataType, chunk_size: int) -> None:
        super().__init__()
        self.t = t
        self.chunk_size = chunk_size

    def serialize(self) -> bytes:
        valid, present = self.split_nulls(self.t)
        d = build_dictionary(self.t, present)
        codes = d.codes
        if len(present) < len(valid):
            codes = np.zeros(len(valid), dtype=np.int64)
            codes[valid] = d.codes
        header = ByteWriter()
        header.u8(VERSION_1)
        header.i32(self.rows)
        header.i32(d.cardinality)
        if d.cardinality:  # min and max
            header.raw(d.key(0))
            header.raw(d.key(d.cardinality - 1))
        fixed = self.t.root is not TypeRoot.STRING
        dictionary = serialize_dictionary(d, fixed, self.chunk_size)
        header.i32(len(dictionary))
        head = header.getvalue()
        bsi = serialize_bit_slices(valid, codes, d.cardinality)
        return b"".join((len(head).to_bytes(4, "big"), head, dictionary, bsi))


# -- reader ------------------------------------------------------------------------------


class _Reader(FileIndexReader):
    def __init__(self, t: DataType, data: bytes | memoryview) -> None:
        self.t = t
        self.codec = KeyCodec(t)
        view = memoryview(data)
        # a read-only view (the container's bytes) is kept as it is; anything writable is
        # copied, so what the reader decodes later cannot change under it
        self.buf = view.cast("B") if view.readonly else memoryview(bytes(view))
        r = ByteReader(self.buf)
        head_len = r.i32()
        head = ByteReader(r.take(head_len, "range-bitmap header"), base=4)
        version = head.u8()
        if version != VERSION_1:
            raise CorruptIndexError(4, f"unsupported range-bitmap version {version}")
        self.rows = head.i32()
        self.cardinality = head.i32()
        if self.rows < 0 or not 0 <= self.cardinality <= self.rows:
            raise CorruptIndexError(5, f"bad counts: {self.cardinality} keys, {self.rows} rows")
        self.min = self.max = None
        if self.cardinality:
            self.min, self.max = self.codec.read(head), self.codec.read(head)
            if self.max < self.min or (self.cardinality == 1) != (self.min == self.max):
                raise CorruptIndexError(head.base, "range-bitmap min/max out of order")
        dictionary_length = head.i32()
        if head.remaining:
            raise CorruptIndexError(head.base + head.pos, "trailing bytes in header")
        dictionary_pos = r.pos
        r.skip(dictionary_length)
        self.dictionary = ChunkedDictionary(
            self.buf, dictionary_pos, self.codec, self.cardinality, self.min, self.max
        )
        self.bsi = BitSliceIndex(self.buf, r.pos, self.rows, self.cardinality)
        self.window = False

    def windowed(self) -> _Reader:
        """This reader answering for the rows below ``WINDOW_ROWS`` only (each bitmap's
        first container read: :meth:`BitSliceIndex.below`): the same answers as this
        reader's, less the rows from ``WINDOW_ROWS`` on."""
        view = copy.copy(self)
        view.window = True
        return view

    def _not_null(self) -> BitMap:
        if not self.cardinality:
            return BitMap()
        return self.bsi.not_null(self.window)

    def _codes(self, lo: int, hi: int) -> BitMap:
        """Non-null rows whose code is in ``[lo, hi)``."""
        if hi <= lo:
            return BitMap()
        if lo <= 0 and hi >= self.cardinality:
            return self._not_null()
        return self.bsi.below(hi, self.window) - self.bsi.below(lo, self.window)

    def _range(self, value: Any) -> tuple[int, int] | None:
        """Codes ``[lo, hi)`` of the keys SQL-equal to ``value``; ``None``: cannot tell."""
        keys = literal_range(self.t, value)
        if keys is None:
            return None
        if not self.cardinality:
            return 0, 0
        below = self.dictionary.count_below
        return below(keys[0], False), below(keys[1], True)

    def _answer(self, op: Operator, value: Any) -> FileIndexResult:
        if not self.cardinality:
            return BitmapResult(BitMap())
        span = self._range(value)
        if span is None:  # a comparison never holds on NULL: the non-null rows are safe
            return BitmapResult(self._not_null())
        lo, hi = span
        n = self.cardinality
        codes = {
            Operator.EQ: (lo, hi),
            Operator.LT: (0, lo),
            Operator.LE: (0, hi),
            Operator.GT: (hi, n),
            Operator.GE: (lo, n),
        }
        a, b = codes[op]
        return BitmapResult(self._codes(a, b))

    def visit_equal(self, value: Any) -> FileIndexResult:
        return self._answer(Operator.EQ, value)

    def visit_not_equal(self, value: Any) -> FileIndexResult:
        return self.visit_not_in([value])

    def visit_less_than(self, value: Any) -> FileIndexResult:
        return self._answer(Operator.LT, value)

    def visit_less_than_or_equal(self, value: Any) -> FileIndexResult:
        return self._answer(Operator.LE, value)

    def visit_greater_than(self, value: Any) -> FileIndexResult:
        return self._answer(Operator.GT, value)

    def visit_greater_than_or_equal(self, value: Any) -> FileIndexResult:
        return self._answer(Operator.GE, value)

    def _in(self, values: Sequence[Any]) -> BitMap | None:
        out = BitMap()
        for v in values:
            span = self._range(v) if self.cardinality else (0, 0)
            if span is None:
                return None
            out |= self._codes(*span)
        return out

    def visit_in(self, values: Sequence[Any]) -> FileIndexResult:
        rows = self._in(values)
        return BitmapResult(self._not_null() if rows is None else rows)

    def visit_not_in(self, values: Sequence[Any]) -> FileIndexResult:
        rows = self._in(values)
        return BitmapResult(self._not_null() - (rows or BitMap()))

    def visit_is_null(self) -> FileIndexResult:
        rows = min(self.rows, WINDOW_ROWS) if self.window else self.rows
        return BitmapResult(BitMap(range(rows)) - self._not_null())

    def visit_not_null(self) -> FileIndexResult:
        return BitmapResult(self._not_null())

    def visit_starts_with(self, prefix: Any) -> FileIndexResult:
        if not self.codec.is_str or not isinstance(prefix, str):
            return super().visit_starts_with(prefix)
        if not self.cardinality:
            return BitmapResult(BitMap())
        p = prefix.encode("utf-8")
        lo = self.dictionary.count_below(p, False)
        after = _successor(p)
        hi = self.cardinality if after is None else self.dictionary.count_below(after, False)
        return BitmapResult(self._codes(lo, hi))


def _successor(prefix: bytes) -> bytes | None:
    """The smallest byte string above every string starting with ``prefix`` (None: none)."""
    p = prefix.rstrip(b"\xff")
    if not p:
        return None
    return p[:-1] + bytes([p[-1] + 1])


class RangeBitmapIndexer(FileIndexer):
    """Paimon's ``range-bitmap`` index type (option ``chunk-size``)."""

    name = "range-bitmap"
    option_keys = frozenset({CHUNK_SIZE})
    reader_type = _Reader

    def supports(self, data_type: DataType) -> bool:
        return supported(data_type)

    def validate_options(self, data_type: DataType, options: Mapping[str, str]) -> None:
        super().validate_options(data_type, options)
        _chunk_size(data_type, options)

    def create_writer(self, data_type: DataType, options: Mapping[str, str]) -> FileIndexWriter:
        return _Writer(data_type, _chunk_size(data_type, options))

    def row_count(self, data: bytes | memoryview) -> int:
        r = ByteReader(memoryview(data))
        r.i32()  # header length
        r.u8()  # version
        return r.i32()

    def create_reader(
        self, data_type: DataType, options: Mapping[str, str], data: bytes | memoryview
    ) -> FileIndexReader:
        return _Reader(data_type, data)
