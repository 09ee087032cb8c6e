"""The ``bitmap`` file index (Paimon's ``BitmapFileIndex``, V1 and V2): a RoaringBitmap of row
positions per distinct value, plus one for nulls.

V1 layout (big-endian; ``value`` = the type's encoding, strings as ``i32 len + UTF-8``)::

    u8 version=1 | i32 rowCount | i32 nonNullBitmapNumber | bool hasNull | [i32 nullOffset]
    repeat nonNullBitmapNumber: value | i32 offset
    BODY: [null bitmap if cardinality > 1] then value bitmaps

V2 layout (the default)::

    u8 version=2 | i32 rowCount | i32 nonNullBitmapNumber | bool hasNull
    [i32 nullOffset | i32 nullBitmapLength]
    i32 blockCount | repeat blockCount: value firstKey | i32 blockOffset
    i32 bitmapBodyOffset  (= total bytes of the index blocks)
    INDEX BLOCKS: repeat: i32 entryCount, repeat: value | i32 offset | i32 length
    BODY

Offsets are relative to the body; a bitmap of cardinality 1 is not stored but inlined as
``offset = -1 - row`` (length -1). V2 entries are sorted by value (strings by unsigned bytes)
and packed greedily into blocks of at most ``index-block-size`` bytes (4 + per entry
8 + value size); block offsets are relative to the first block. Bitmaps are serialised
run-optimised in the portable Roaring format, as Java's ``RoaringBitmap32.serialize``.

Body order (and V1 header order): Java's ``HashMap`` iteration order, emulated in
:mod:`lakeskip.index.primitives.java`, so our bytes equal Java's. Readers do not depend on it.

Answers are exact row sets under SQL semantics: ``=``/``IN`` the value bitmaps; ``<>``/
``NOT IN`` the non-null rows minus those (Paimon's own flip keeps null rows -- merely
conservative); ``IS [NOT] NULL`` the null bitmap or its complement. Complement answers
trust ``rowCount``, so the first one checks that the bitmaps partition ``[0, rowCount)``
(reading the whole index once). Corrupt structure raises ``CorruptIndexError`` from
``create_reader`` (header, V2 block table) or from ``visit_*`` (blocks, bitmaps).

>>> import pyarrow as pa
>>> from lakeskip import types as T
>>> ix = BitmapIndexer()
>>> w = ix.create_writer(T.STRING, {})
>>> w.write(pa.array(["a", "b", None, "a", "c"]))
>>> r = ix.create_reader(T.STRING, {}, w.serialize())
>>> list(r.visit_equal("a").bitmap), list(r.visit_not_equal("a").bitmap), list(r.visit_is_null().bitmap)
([0, 3], [1, 4], [2])
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap

from lakeskip.errors import CorruptIndexError, InvalidOptionError
from lakeskip.index.base import (
    FileIndexer,
    FileIndexReader,
    FileIndexWriter,
    parse_memory_size,
)
from lakeskip.index.bitmap.keys import KeyCodec, supported
from lakeskip.index.bitmap.writer import VERSION_1, VERSION_2, BitmapWriter
from lakeskip.index.primitives.binary import ByteReader
from lakeskip.index.primitives.roaring import read_bitmap
from lakeskip.index.result import BitmapResult, FileIndexResult
from lakeskip.types import DataType

__all__ = ["VERSION_1", "VERSION_2", "BitmapIndexer"]

DEFAULT_BLOCK_SIZE = 16 * 1024


# -- reader --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    offset: int  # into the body, or -1 - row when inlined
    length: int  # -1 when inlined


class _Reader(FileIndexReader):
    """Parses the header eagerly (validating every structural field), V2 index blocks on
    first use, and a bitmap only when a query needs it (each at most once)."""

    def __init__(self, t: DataType, data: bytes | memoryview) -> None:
        self.codec = KeyCodec(t)
        self.t = t
        self.buf = memoryview(bytes(data))
        r = ByteReader(self.buf)
        self.version = r.u8()
        if self.version not in (VERSION_1, VERSION_2):
            raise CorruptIndexError(0, f"unsupported bitmap index version {self.version}")
        self.rows = r.i32()
        n = r.i32()
        flag = r.u8()
        if flag > 1:
            raise CorruptIndexError(9, f"bad hasNull flag {flag}")
        self.has_null = flag == 1
        if self.rows < 0 or n < 0 or n + self.has_null > self.rows:
            raise CorruptIndexError(1, f"bad counts: {self.rows} rows, {n} values")
        self.n = n
        self.null_entry: _Entry | None = None
        self.entries: dict[Any, _Entry] = {}
        self.blocks: list[tuple[Any, int]] = []
        self._block_cache: dict[int, dict[Any, _Entry]] = {}
        self._bitmaps: dict[Any, BitMap] = {}
        self._partition_ok = False
        if self.version == VERSION_1:
            self._parse_v1(r)
        else:
            self._parse_v2(r)

    def _parse_v1(self, r: ByteReader) -> None:
        null_offset = r.i32() if self.has_null else 0
        keyed = []
        for _ in range(self.n):
            at = r.pos
            k = self.codec.read(r)
            o = r.i32()
            if k in self.entries:
                raise CorruptIndexError(at, "duplicate bitmap key")
            keyed.append((k, o))
            self.entries[k] = _Entry(o, -1)
        self.body = r.pos
        body_len = len(self.buf) - self.body
        stored = [o for _, o in keyed if o >= 0]
        if self.has_null and null_offset >= 0:
            stored.append(null_offset)
        starts = sorted(set(stored))
        if (
            len(starts) != len(stored)
            or (starts and starts[0] != 0)
            or (starts and starts[-1] >= body_len)
        ):
            raise CorruptIndexError(self.body, "bitmap offsets do not tile the body")
        if not starts and body_len:
            raise CorruptIndexError(self.body, f"{body_len} stray bytes after the header")
        ends = dict(zip(starts, [*starts[1:], body_len], strict=False))
        for k, o in keyed:
            self.entries[k] = self._checked(o, ends[o] - o if o >= 0 else -1, self.body)
        if self.has_null:
            length = ends[null_offset] - null_offset if null_offset >= 0 else -1
            self.null_entry = self._checked(null_offset, length, self.body)

    def _parse_v2(self, r: ByteReader) -> None:
        if self.has_null:
            null_offset, null_len = r.i32(), r.i32()
            if null_len < 0:
                raise CorruptIndexError(r.pos - 4, f"negative null bitmap length {null_len}")
            self.null_entry = _Entry(null_offset, null_len if null_offset >= 0 else -1)
        n_blocks = r.i32()
        if n_blocks < 0 or n_blocks > self.n or (n_blocks == 0) != (self.n == 0):
            raise CorruptIndexError(r.pos - 4, f"bad block count {n_blocks} for {self.n} keys")
        for _ in range(n_blocks):
            self.blocks.append((self.codec.read(r), r.i32()))
        body_offset = r.i32()
        self.block_start = r.pos
        self.body = self.block_start + body_offset
        if body_offset < 4 * n_blocks or self.body > len(self.buf):
            raise CorruptIndexError(r.pos - 4, f"bitmap body offset {body_offset} out of range")
        offsets = [o for _, o in self.blocks]
        self._sort_keys = [self.codec.sort_key(k) for k, _ in self.blocks]
        ends = [*offsets[1:], body_offset]
        if (offsets[:1] not in ([], [0])) or (not offsets and body_offset != 0):
            raise CorruptIndexError(self.block_start, "index blocks do not start at 0")
        for j in range(n_blocks):
            if ends[j] - offsets[j] < 12 or (
                j + 1 < n_blocks and self._sort_keys[j + 1] <= self._sort_keys[j]
            ):
                raise CorruptIndexError(self.block_start, "index blocks out of order")
        if self.null_entry is not None:
            self.null_entry = self._checked(
                self.null_entry.offset, self.null_entry.length, self.body
            )

    def _checked(self, offset: int, length: int, at: int) -> _Entry:
        if offset < 0:
            if -1 - offset >= self.rows or length != -1:
                raise CorruptIndexError(at, f"bad inlined bitmap entry ({offset}, {length})")
        elif length <= 0 or self.body + offset + length > len(self.buf):
            raise CorruptIndexError(at, f"bitmap ({offset}, {length}) outside the index body")
        return _Entry(offset, length)

    def _block(self, i: int) -> dict[Any, _Entry]:
        got = self._block_cache.get(i)
        if got is None:
            start = self.block_start + self.blocks[i][1]
            stop = (
                self.block_start + self.blocks[i + 1][1] if i + 1 < len(self.blocks) else self.body
            )
            r = ByteReader(self.buf[start:stop], base=start)
            count = r.i32()
            if not 0 < count <= self.n:
                raise CorruptIndexError(start, f"bad entry count {count}")
            got = {}
            last = None
            for j in range(count):
                at = r.base + r.pos
                k = self.codec.read(r)
                sk = self.codec.sort_key(k)
                if (j == 0 and k != self.blocks[i][0]) or (last is not None and sk <= last):
                    raise CorruptIndexError(at, "index block keys out of order")
                last = sk
                got[k] = self._checked(r.i32(), r.i32(), at)
            if r.remaining:
                raise CorruptIndexError(r.base + r.pos, "index block longer than its entries")
            if i + 1 < len(self.blocks) and last is not None and last >= self._sort_keys[i + 1]:
                raise CorruptIndexError(start, "index block overlaps the next one")
            self._block_cache[i] = got
        return got

    def _entry(self, key: Any) -> _Entry | None:
        if self.version == VERSION_1:
            return self.entries.get(key)
        i = bisect.bisect_right(self._sort_keys, self.codec.sort_key(key)) - 1
        if i < 0:
            return None
        return self._block(i).get(key)

    def _bitmap(self, e: _Entry | None) -> BitMap:
        if e is None:
            return BitMap()
        if e.offset < 0:
            return BitMap([-1 - e.offset])
        start = self.body + e.offset
        if not self.body <= start < start + e.length <= len(self.buf):
            raise CorruptIndexError(start, "bitmap outside the index body")
        return read_bitmap(self.buf, start, self.rows, e.length, empty_ok=False)

    def _keys_for(self, value: Any) -> list[Any]:
        k = self.codec.key(value)
        if self.codec.is_zero(k):  # SQL: 0.0 = -0.0, but Java keys them apart
            return self.codec.zeros()
        return [k]

    def _key_rows(self, k: Any) -> BitMap:
        got = self._bitmaps.get(k)
        if got is None:
            got = self._bitmaps[k] = self._bitmap(self._entry(k))
        return got

    def _value_rows(self, values: Sequence[Any]) -> BitMap:
        out = BitMap()
        for v in values:
            for k in self._keys_for(v):
                out |= self._key_rows(k)
        return out

    def _nulls(self) -> BitMap:
        if not self.has_null:
            return BitMap()
        got = self._bitmaps.get(_NULL)
        if got is None:
            got = self._bitmaps[_NULL] = self._bitmap(self.null_entry)
        return got

    def _all_keys(self) -> list[Any]:
        if self.version == VERSION_1:
            return list(self.entries)
        return [k for i in range(len(self.blocks)) for k in self._block(i)]

    def _check_partition(self) -> None:
        """Complement answers trust ``rowCount``: check once that the bitmaps partition
        exactly ``[0, rowCount)`` (reads the whole index, only for <>, NOT IN, IS NOT NULL)."""
        if self._partition_ok:
            return
        seen = BitMap(self._nulls())
        total = len(seen)
        keys = self._all_keys()
        if len(keys) != self.n:
            raise CorruptIndexError(-1, f"{len(keys)} keys in the blocks, header says {self.n}")
        for k in keys:
            bm = self._key_rows(k)
            total += len(bm)
            seen |= bm
        if total != self.rows or len(seen) != self.rows:
            raise CorruptIndexError(-1, f"bitmaps do not partition {self.rows} rows")
        self._partition_ok = True

    def _non_null(self, minus: BitMap | None = None) -> BitMap:
        self._check_partition()
        nulls = self._nulls()
        if minus is not None and minus.intersect(nulls):
            raise CorruptIndexError(-1, "a value bitmap overlaps the null bitmap")
        out = BitMap()
        out.add_range(0, self.rows)
        out -= nulls
        if minus is not None:
            out -= minus
        return out

    def visit_equal(self, value: Any) -> FileIndexResult:
        return BitmapResult(self._value_rows([value]))

    def visit_in(self, values: Sequence[Any]) -> FileIndexResult:
        return BitmapResult(self._value_rows(values))

    def visit_not_equal(self, value: Any) -> FileIndexResult:
        return BitmapResult(self._non_null(self._value_rows([value])))

    def visit_not_in(self, values: Sequence[Any]) -> FileIndexResult:
        return BitmapResult(self._non_null(self._value_rows(values)))

    def visit_is_null(self) -> FileIndexResult:
        return BitmapResult(BitMap(self._nulls()))

    def visit_not_null(self) -> FileIndexResult:
        return BitmapResult(self._non_null())


_NULL = object()


class BitmapIndexer(FileIndexer):
    """Paimon's ``bitmap`` index type (options ``version`` 1|2, ``index-block-size``)."""

    name = "bitmap"
    option_keys = frozenset({"version", "index-block-size"})
    reader_type = _Reader

    def supports(self, data_type: DataType) -> bool:
        return supported(data_type)

    @staticmethod
    def _params(options: Mapping[str, str]) -> tuple[int, int]:
        v = str(options.get("version", VERSION_2)).strip()
        if v not in ("1", "2"):
            raise InvalidOptionError(f"bitmap option version must be 1 or 2, got {v!r}")
        size = parse_memory_size(str(options.get("index-block-size", "16kb")), "index-block-size")
        if size < 16:
            raise InvalidOptionError(f"bitmap option index-block-size too small: {size} bytes")
        return int(v), size

    def validate_options(self, data_type: DataType, options: Mapping[str, str]) -> None:
        super().validate_options(data_type, options)
        self._params(options)

    def create_writer(self, data_type: DataType, options: Mapping[str, str]) -> FileIndexWriter:
        version, size = self._params(options)
        return BitmapWriter(data_type, version, size)

    def row_count(self, data: bytes | memoryview) -> int:
        r = ByteReader(memoryview(data))
        r.u8()  # version (V1 and V2 alike)
        return r.i32()

    def create_reader(
        self, data_type: DataType, options: Mapping[str, str], data: bytes | memoryview
    ) -> FileIndexReader:
        return _Reader(data_type, data)
