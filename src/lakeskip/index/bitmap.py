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

Body order: Java writes bitmaps in ``HashMap`` iteration order; we write them in sorted
order. Readers do not depend on it (offsets say where each bitmap is), so our files are
read by Paimon and Paimon's by us; the bytes differ from Java's only in that order.

Answers are exact row sets under SQL semantics: ``=``/``IN`` the value bitmaps; ``<>``/
``NOT IN`` the non-null rows minus those (Paimon's own flip keeps null rows -- merely
conservative); ``IS [NOT] NULL`` the null bitmap or its complement.

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
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lakeskip.errors import CorruptIndexError, InvalidOptionError
from lakeskip.index._binary import ByteReader, ByteWriter
from lakeskip.index._roaring import serialize_bitmap
from lakeskip.index.base import FileIndexer, FileIndexReader, FileIndexWriter, parse_memory_size
from lakeskip.index.result import BitmapResult, FileIndexResult
from lakeskip.types import DataType, TypeRoot

__all__ = ["VERSION_1", "VERSION_2", "BitmapIndexer"]

VERSION_1 = 1
VERSION_2 = 2
DEFAULT_BLOCK_SIZE = 16 * 1024

# value codec per type: (struct format or "str", size)
_CODECS: dict[TypeRoot, str] = {
    TypeRoot.TINYINT: ">b",
    TypeRoot.SMALLINT: ">h",
    TypeRoot.INT: ">i",
    TypeRoot.DATE: ">i",
    TypeRoot.BIGINT: ">q",
    TypeRoot.TIMESTAMP: ">q",
    TypeRoot.TIMESTAMP_LTZ: ">q",
    TypeRoot.FLOAT: ">i",  # keys are IEEE bit patterns (Java Float.equals semantics)
    TypeRoot.DOUBLE: ">q",
    TypeRoot.BOOLEAN: ">?",
}


def _supported(t: DataType) -> bool:
    return t.root in _CODECS or t.root is TypeRoot.STRING


class _Codec:
    """Encodes, decodes, sizes and orders keys of one type (Java semantics)."""

    def __init__(self, t: DataType) -> None:
        self.t = t
        self.is_str = t.root is TypeRoot.STRING
        self.is_float = t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE)
        self.fmt = None if self.is_str else struct.Struct(_CODECS[t.root])

    def key(self, value: Any) -> Any:
        """A dict key: UTF-8 bytes for strings, IEEE bits for floats (NaN canonical, so
        -0.0 and 0.0 stay apart as in Java's ``Float.equals``)."""
        if self.is_str:
            return value.encode("utf-8") if isinstance(value, str) else bytes(value)
        if self.is_float:
            return _float_bits(self.t, float(value))
        if self.t.root is TypeRoot.BOOLEAN:
            return bool(value)
        return int(value)

    def sort_key(self, key: Any) -> Any:
        """Java compareTo order: unsigned bytes; Float.compare (-0.0 < 0.0 < ... < NaN)."""
        if self.is_float:
            f = _bits_float(self.t, key)
            if f != f:
                return (3, 0.0)
            if f == 0:
                return (1, 0.0) if key != 0 else (2, 0.0)  # -0.0 has non-zero bits
            return (0 if f < 0 else 2, f)
        return key

    def write(self, w: ByteWriter, key: Any) -> None:
        if self.is_str:
            w.i32(len(key))
            w.raw(key)
        else:
            assert self.fmt is not None
            w.raw(self.fmt.pack(key))

    def read(self, r: ByteReader) -> Any:
        if self.is_str:
            n = r.i32()
            if n < 0:
                raise CorruptIndexError(r.base + r.pos - 4, f"negative string length {n}")
            return bytes(r.take(n, "bitmap key"))
        assert self.fmt is not None
        v = self.fmt.unpack(r.take(self.fmt.size, "bitmap key"))[0]
        if self.is_float:  # canonicalise NaN payloads
            return _float_bits(self.t, _bits_float(self.t, v))
        return v

    def size(self, key: Any) -> int:
        return 4 + len(key) if self.is_str else (self.fmt.size if self.fmt else 0)


def _float_bits(t: DataType, f: float) -> int:
    if t.root is TypeRoot.FLOAT:
        return 0x7FC00000 if f != f else int(struct.unpack(">i", struct.pack(">f", f))[0])
    return 0x7FF8000000000000 if f != f else int(struct.unpack(">q", struct.pack(">d", f))[0])


def _bits_float(t: DataType, bits: int) -> float:
    if t.root is TypeRoot.FLOAT:
        return float(struct.unpack(">f", struct.pack(">i", bits))[0])
    return float(struct.unpack(">d", struct.pack(">q", bits))[0])


# -- writer --------------------------------------------------------------------------------


class _Writer(FileIndexWriter):
    def __init__(self, t: DataType, version: int, block_size: int) -> None:
        self.t = t
        self.codec = _Codec(t)
        self.version = version
        self.block_size = block_size
        self.chunks: list[pa.Array] = []
        self.rows = 0

    @property
    def empty(self) -> bool:
        return self.rows == 0

    def write(self, values: pa.Array | pa.ChunkedArray) -> None:
        arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        self.chunks.append(arr)
        self.rows += len(arr)

    def _groups(self) -> tuple[dict[Any, BitMap], BitMap]:
        arr = pa.concat_arrays(self.chunks) if len(self.chunks) != 1 else self.chunks[0]
        nulls = BitMap(
            np.flatnonzero(pc.is_null(arr).to_numpy(zero_copy_only=False)).astype(np.uint32)
        )
        valid = np.flatnonzero(pc.is_valid(arr).to_numpy(zero_copy_only=False))
        groups: dict[Any, BitMap] = {}
        if len(valid) == 0:
            return groups, nulls
        present = arr.take(pa.array(valid))
        if self.t.is_timestamp:
            present = present.cast(pa.timestamp(self.t.timestamp_unit, tz=present.type.tz)).cast(
                pa.int64()
            )
        elif self.t.root is TypeRoot.DATE:
            present = present.cast(pa.int32())
        if self.codec.is_str:
            enc = pc.dictionary_encode(present.cast(pa.binary()))
            dictionary = enc.dictionary.to_pylist()
            inverse = enc.indices.to_numpy(zero_copy_only=False)
            keys = [bytes(d) for d in dictionary]
        else:
            np_vals = present.to_numpy(zero_copy_only=False)
            if self.codec.is_float:
                canon = np.float32 if self.t.root is TypeRoot.FLOAT else np.float64
                np_vals = np_vals.astype(canon)
                bits = np_vals.view(np.int32 if canon is np.float32 else np.int64).copy()
                bits[np.isnan(np_vals)] = np.array([np.nan], dtype=canon).view(bits.dtype)[0]
                uniq, inverse = np.unique(bits, return_inverse=True)
                keys = [int(x) for x in uniq]  # type: ignore[misc]
            else:
                uniq, inverse = np.unique(np_vals, return_inverse=True)
                keys = [self.codec.key(x.item()) for x in uniq]
        order = np.argsort(inverse, kind="stable")
        rows_sorted = valid[order].astype(np.uint32)
        counts = np.bincount(inverse, minlength=len(keys))
        bounds = np.concatenate(([0], np.cumsum(counts)))
        for i, k in enumerate(keys):
            groups[k] = BitMap(rows_sorted[bounds[i] : bounds[i + 1]])
        return groups, nulls

    def serialize(self) -> bytes:
        groups, nulls = self._groups()
        codec = self.codec
        ordered = sorted(groups, key=codec.sort_key)
        null_bytes = serialize_bitmap(nulls)
        null_card = len(nulls)
        offset = null_len_in_body = len(null_bytes) if null_card > 1 else 0
        offsets: dict[Any, int] = {}
        lengths: dict[Any, int] = {}
        body = bytearray(null_bytes if null_card > 1 else b"")
        for k in ordered:
            bm = groups[k]
            if len(bm) == 1:
                offsets[k] = -1 - bm.min()
                lengths[k] = -1
            else:
                data = serialize_bitmap(bm)
                offsets[k] = offset
                lengths[k] = len(data)
                body += data
                offset += len(data)
        del null_len_in_body
        null_offset = -1 - nulls.min() if null_card == 1 else 0
        w = ByteWriter()
        w.u8(self.version)
        w.i32(self.rows)
        w.i32(len(groups))
        w.boolean(null_card > 0)
        if self.version == VERSION_1:
            if null_card > 0:
                w.i32(null_offset)
            for k in ordered:
                codec.write(w, k)
                w.i32(offsets[k])
        else:
            if null_card > 0:
                w.i32(null_offset)
                w.i32(len(null_bytes))
            blocks: list[tuple[Any, int, list[Any]]] = []  # first key, offset, keys
            size = 4
            for k in ordered:
                entry = 8 + codec.size(k)
                if not blocks or size + entry > self.block_size:
                    start = blocks[-1][1] + size if blocks else 0
                    blocks.append((k, start, []))
                    size = 4
                blocks[-1][2].append(k)
                size += entry
            w.i32(len(blocks))
            total = 0
            for first, start, keys in blocks:
                codec.write(w, first)
                w.i32(start)
                total = start + 4 + sum(8 + codec.size(k) for k in keys)
            w.i32(total)
            for _, _, keys in blocks:
                w.i32(len(keys))
                for k in keys:
                    codec.write(w, k)
                    w.i32(offsets[k])
                    w.i32(lengths[k])
        w.raw(body)
        return w.getvalue()


# -- reader --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    offset: int
    length: int  # -1: unknown (V1 last) or inlined


class _Reader(FileIndexReader):
    def __init__(self, t: DataType, data: bytes | memoryview) -> None:
        self.codec = _Codec(t)
        self.t = t
        self.buf = memoryview(bytes(data))
        r = ByteReader(self.buf)
        self.version = r.u8()
        if self.version not in (VERSION_1, VERSION_2):
            raise CorruptIndexError(0, f"unsupported bitmap index version {self.version}")
        self.rows = r.i32()
        n = r.i32()
        if self.rows < 0 or n < 0 or n > max(self.rows, 0):
            raise CorruptIndexError(1, f"bad counts: {self.rows} rows, {n} values")
        self.has_null = r.boolean()
        self.null_entry: _Entry | None = None
        self.entries: dict[Any, _Entry] = {}
        self.blocks: list[tuple[Any, int]] = []
        self._block_cache: dict[int, dict[Any, _Entry]] = {}
        if self.version == VERSION_1:
            null_offset = r.i32() if self.has_null else 0
            keyed = [(self.codec.read(r), r.i32()) for _ in range(n)]
            self.body = r.pos
            body_len = len(self.buf) - self.body
            starts = sorted(
                {o for _, o in keyed if o >= 0}
                | ({null_offset} if self.has_null and null_offset >= 0 else set())
            )
            ends = dict(zip(starts, [*starts[1:], body_len], strict=False))
            for k, o in keyed:
                self.entries[k] = _Entry(o, ends[o] - o if o >= 0 else -1)
            if self.has_null:
                self.null_entry = _Entry(
                    null_offset, ends[null_offset] - null_offset if null_offset >= 0 else -1
                )
        else:
            if self.has_null:
                null_offset, null_len = r.i32(), r.i32()
                self.null_entry = _Entry(null_offset, null_len)
            n_blocks = r.i32()
            if n_blocks < 0 or n_blocks > n + 1:
                raise CorruptIndexError(r.pos - 4, f"bad block count {n_blocks}")
            for _ in range(n_blocks):
                self.blocks.append((self.codec.read(r), r.i32()))
            body_offset = r.i32()
            self.block_start = r.pos
            self.body = self.block_start + body_offset
            if body_offset < 0 or self.body > len(self.buf):
                raise CorruptIndexError(r.pos - 4, f"bitmap body offset {body_offset} out of range")
            self._sort_keys = [self._sk(k) for k, _ in self.blocks]

    def _sk(self, key: Any) -> Any:
        return self.codec.sort_key(key)

    def _block(self, i: int) -> dict[Any, _Entry]:
        got = self._block_cache.get(i)
        if got is None:
            start = self.block_start + self.blocks[i][1]
            if not self.block_start <= start < self.body:
                raise CorruptIndexError(start, "bitmap index block outside the index")
            r = ByteReader(self.buf[start : self.body], base=start)
            count = r.i32()
            if count < 0:
                raise CorruptIndexError(start, f"negative entry count {count}")
            got = {}
            for _ in range(count):
                k = self.codec.read(r)
                got[k] = _Entry(r.i32(), r.i32())
            self._block_cache[i] = got
        return got

    def _entry(self, key: Any) -> _Entry | None:
        if self.version == VERSION_1:
            return self.entries.get(key)
        i = bisect.bisect_right(self._sort_keys, self._sk(key)) - 1
        if i < 0:
            return None
        return self._block(i).get(key)

    def _bitmap(self, e: _Entry | None) -> BitMap:
        if e is None:
            return BitMap()
        if e.offset < 0:
            row = -1 - e.offset
            if row >= self.rows:
                raise CorruptIndexError(-1, f"inlined row {row} beyond {self.rows} rows")
            return BitMap([row])
        start = self.body + e.offset
        end = len(self.buf) if e.length < 0 else start + e.length
        if not self.body <= start <= end <= len(self.buf):
            raise CorruptIndexError(start, "bitmap outside the index body")
        try:
            bm = BitMap.deserialize(bytes(self.buf[start:end]))
        except Exception as err:
            raise CorruptIndexError(start, f"bad roaring bitmap: {err}") from err
        if len(bm) and bm.max() >= self.rows:
            raise CorruptIndexError(start, f"row {bm.max()} beyond {self.rows} rows")
        return bm

    def _keys_for(self, value: Any) -> list[Any]:
        k = self.codec.key(value)
        if self.codec.is_float and _bits_float(self.t, k) == 0:
            # SQL: 0.0 = -0.0, but Java keys them apart
            return [_float_bits(self.t, 0.0), _float_bits(self.t, -0.0)]
        return [k]

    def _value_rows(self, values: Sequence[Any]) -> BitMap:
        out = BitMap()
        for v in values:
            for k in self._keys_for(v):
                out |= self._bitmap(self._entry(k))
        return out

    def _nulls(self) -> BitMap:
        return self._bitmap(self.null_entry) if self.has_null else BitMap()

    def _non_null(self) -> BitMap:
        return BitMap(range(self.rows)) - self._nulls()

    def visit_equal(self, value: Any) -> FileIndexResult:
        return BitmapResult(self._value_rows([value]))

    def visit_in(self, values: Sequence[Any]) -> FileIndexResult:
        return BitmapResult(self._value_rows(values))

    def visit_not_equal(self, value: Any) -> FileIndexResult:
        return BitmapResult(self._non_null() - self._value_rows([value]))

    def visit_not_in(self, values: Sequence[Any]) -> FileIndexResult:
        return BitmapResult(self._non_null() - self._value_rows(values))

    def visit_is_null(self) -> FileIndexResult:
        return BitmapResult(self._nulls())

    def visit_is_not_null(self) -> FileIndexResult:
        return BitmapResult(self._non_null())


class BitmapIndexer(FileIndexer):
    """Paimon's ``bitmap`` index type (options ``version`` 1|2, ``index-block-size``)."""

    name = "bitmap"
    option_keys = frozenset({"version", "index-block-size"})

    def supports(self, data_type: DataType) -> bool:
        return _supported(data_type)

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
        return _Writer(data_type, version, size)

    def create_reader(
        self, data_type: DataType, options: Mapping[str, str], data: bytes | memoryview
    ) -> FileIndexReader:
        return _Reader(data_type, data)
