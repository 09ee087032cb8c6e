"""The ``range-bitmap`` file index, Paimon's ``RangeBitmapFileIndex`` (Paimon >= 1.3).

Every distinct non-null value gets a *code*: its rank in the sorted dictionary. A bit-sliced
index (BSI) over the codes answers ``=``/``<``/``<=``/``>``/``>=`` with a handful of bitmap
operations; the dictionary, split into chunks, turns a literal into a code range. Unlike
``bsi`` it indexes strings and floats, and its size grows with ``log2(distinct values)``.

Layout (big-endian; ``RB`` = a RoaringBitmap in the portable format, run-optimised; ``key`` is
the type's fixed-size big-endian value, or ``i32 length | UTF-8 bytes`` for strings)::

    i32 headerLength | u8 version=1 | i32 rowCount | i32 cardinality
                     | [key min | key max]            (only when cardinality > 0)
                     | i32 dictionaryLength
    dictionary       (dictionaryLength bytes)
    bsi

    dictionary: i32 headerLength=13 | u8 version=1 | i32 chunkCount | i32 offsetsLength
                | i32 chunksLength
                | i32 chunkOffset[chunkCount]           (into the chunk headers)
                | chunk header[chunkCount]
                | chunk keys[chunkCount]
    chunk header, fixed-size keys:
                u8 version=1 | key first | i32 code | i32 keysOffset | i32 size
                | i32 keysLength | i32 fixedLength
    chunk header, strings:
                u8 version=1 | key first | i32 code | i32 keysOffset | i32 size
                | i32 offsetsLength | i32 keysLength
    chunk keys: the chunk's ``size`` keys after ``first`` (codes ``code+1 ..``); for strings
                ``i32 offset[size]`` (into the keys) then the keys.

    bsi:        i32 headerLength | u8 version=1 | u8 sliceCount | i32 ebmLength
                | i32 indexesLength | (i32 offset, i32 length)[sliceCount]
                | RB ebm | RB slice[0..sliceCount)

``ebm`` holds the non-null rows; row ``r`` is in ``slice[b]`` when bit ``b`` of its code is
set. A chunk holds its first key in the header and then as many keys as fit in ``chunk-size``
bytes (strings: also at most ``chunk-size / 4`` of them). ``sliceCount`` is the bit length of
``cardinality - 1`` (at least 1); Java writes 64 empty slices when every value is null.

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

import bisect
import itertools
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lakeskip.errors import CorruptIndexError, InvalidOptionError
from lakeskip.expressions.operators import Operator
from lakeskip.index._binary import ByteReader, ByteWriter
from lakeskip.index._roaring import roaring_size, serialize_bitmap
from lakeskip.index.base import (
    BufferedWriter,
    FileIndexer,
    FileIndexReader,
    FileIndexWriter,
    parse_memory_size,
)
from lakeskip.index.hashing import long_values
from lakeskip.index.result import BitmapResult, FileIndexResult
from lakeskip.types import DataType, TypeRoot

__all__ = ["DEFAULT_CHUNK_SIZE", "RangeBitmapIndexer"]

VERSION_1 = 1
DICTIONARY_HEADER_LENGTH = 13
DEFAULT_CHUNK_SIZE = "16kb"
CHUNK_SIZE = "chunk-size"
_MAX_SLICES = 64
_INT32_MAX = 2**31 - 1

#: struct format of each fixed-size key type, as Java's ``ByteBuffer.put*``
_FIXED = {
    TypeRoot.BOOLEAN: ">b",
    TypeRoot.TINYINT: ">b",
    TypeRoot.SMALLINT: ">h",
    TypeRoot.INT: ">i",
    TypeRoot.DATE: ">i",
    TypeRoot.BIGINT: ">q",
    TypeRoot.DECIMAL: ">q",
    TypeRoot.TIMESTAMP: ">q",
    TypeRoot.TIMESTAMP_LTZ: ">q",
    TypeRoot.FLOAT: ">i",  # raw IEEE bits, as putFloat(Float.intBitsToFloat(bits))
    TypeRoot.DOUBLE: ">q",
}
_UNCHUNKED = (TypeRoot.BOOLEAN, TypeRoot.TINYINT, TypeRoot.SMALLINT)


def _supported(t: DataType) -> bool:
    if t.root is TypeRoot.DECIMAL:
        return (t.precision if t.precision is not None else 38) <= 18
    if t.is_timestamp:
        return (t.precision if t.precision is not None else 6) <= 6
    return t.root is TypeRoot.STRING or t.root in _FIXED


def _chunk_size(t: DataType, options: Mapping[str, str]) -> int:
    default = "0b" if t.root in _UNCHUNKED else DEFAULT_CHUNK_SIZE
    size = parse_memory_size(options.get(CHUNK_SIZE, default), CHUNK_SIZE)
    if size > _INT32_MAX:
        raise InvalidOptionError(f"{CHUNK_SIZE} must be below 2 GB, got {options[CHUNK_SIZE]!r}")
    return size


# -- keys: the order Java compares them in ------------------------------------------------
#
# Fixed-size keys are handled as int64 "sort keys" whose integer order is Java's comparator
# order; floats map their IEEE bits (NaN canonical) to a monotone integer so that
# -0.0 < 0.0 and NaN sorts last. Strings are UTF-8 bytes (Python compares bytes unsigned).


def _float_sort_keys(bits: Any, width: int) -> Any:
    """IEEE bits (canonical NaN) -> int64 keys in ``Float.compare`` order."""
    flip = np.int64(0x7FFFFFFF if width == 32 else 0x7FFFFFFFFFFFFFFF)
    return np.where(bits < 0, bits ^ flip, bits)


def _float_bits(t: DataType, arr: pa.Array) -> tuple[Any, Any]:
    """(raw bits, canonical bits) of a float array without nulls, as int64."""
    if t.root is TypeRoot.FLOAT:
        v = arr.to_numpy(zero_copy_only=False).astype(np.float32)
        raw = v.view(np.int32).astype(np.int64)
        return raw, np.where(np.isnan(v), np.int64(0x7FC00000), raw)
    v = arr.to_numpy(zero_copy_only=False).astype(np.float64)
    raw = v.view(np.int64)
    return raw, np.where(np.isnan(v), np.int64(0x7FF8000000000000), raw)


def _literal_range(t: DataType, value: Any) -> tuple[Any, Any] | None:
    """The keys a literal equals in SQL, as (lowest, highest) sort key; ``None`` if the
    literal cannot be placed exactly (the reader then keeps every row)."""
    r = t.root
    if r is TypeRoot.STRING:
        if not isinstance(value, str):
            return None
        b = value.encode("utf-8")
        return b, b
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        f = float(value)
        if f != f:
            bits = 0x7FC00000 if r is TypeRoot.FLOAT else 0x7FF8000000000000
            key = int(_float_sort_keys(np.int64(bits), 32 if r is TypeRoot.FLOAT else 64))
            return key, key
        width = 32 if r is TypeRoot.FLOAT else 64
        if r is TypeRoot.FLOAT:
            f32 = np.float32(f)
            if float(f32) != f:
                return None  # not a FLOAT value: the binder never sends one
            bits = int(np.array([f32]).view(np.int32)[0])
        else:
            bits = int(np.array([f]).view(np.int64)[0])
        if f == 0:  # SQL: -0.0 = 0.0, two adjacent keys in Java's order
            return -1, 0
        key = int(_float_sort_keys(np.int64(bits), width))
        return key, key
    if r is TypeRoot.DECIMAL:
        assert t.scale is not None
        unscaled = Decimal(value).scaleb(t.scale)
        if unscaled != unscaled.to_integral_value():
            return None
        k = int(unscaled)
        return k, k
    if r is TypeRoot.BOOLEAN:
        return int(bool(value)), int(bool(value))
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value, value


# -- writer ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Dictionary:
    """Sorted distinct keys: ``raw`` (int64 array of serialised values, or a list of UTF-8
    bytes) in code order, and every non-null row's code."""

    raw: Any
    codes: Any
    cardinality: int


def _build_dictionary(t: DataType, present: pa.Array) -> _Dictionary:
    if t.root is TypeRoot.STRING:
        binary = present.cast(pa.binary())
        uniq = pc.unique(binary)
        uniq = uniq.take(pc.sort_indices(uniq))
        codes = pc.index_in(binary, uniq).to_numpy(zero_copy_only=False).astype(np.int64)
        return _Dictionary(uniq.to_pylist(), codes, len(uniq))
    if t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        raw, canonical = _float_bits(t, present)
        keys = _float_sort_keys(canonical, 32 if t.root is TypeRoot.FLOAT else 64)
        uniq, first, codes = np.unique(keys, return_index=True, return_inverse=True)
        # Java's TreeMap keeps the first-inserted key object (the first NaN's payload)
        return _Dictionary(raw[first], codes.astype(np.int64), len(uniq))
    keys = long_values(present, t)
    uniq, codes = np.unique(keys, return_inverse=True)
    return _Dictionary(uniq, codes.astype(np.int64), len(uniq))


def _key_bytes(t: DataType, d: _Dictionary) -> list[bytes]:
    """Serialised keys in code order (strings: ``i32 length | bytes``)."""
    if t.root is TypeRoot.STRING:
        return [struct.pack(">i", len(b)) + b for b in d.raw]
    fmt = np.dtype(_FIXED[t.root][1:]).newbyteorder(">")
    data = np.asarray(d.raw).astype(fmt).tobytes()
    size = fmt.itemsize
    return [data[i : i + size] for i in range(0, len(data), size)]


def _chunk_bounds(t: DataType, sizes: Any, limit: int) -> list[int]:
    """Start index of every chunk (plus the end): a chunk is its first key plus the keys
    that still fit in ``limit`` bytes (strings: and ``4 * count <= limit``)."""
    n = len(sizes)
    if t.root is not TypeRoot.STRING:
        per = 1 + (limit // int(sizes[0]) if n else 0)
        starts = list(range(0, n, per))
    else:
        cum = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        max_count = limit // 4
        s = 0
        starts = []
        while s < n:
            starts.append(s)
            by_bytes = int(np.searchsorted(cum, cum[s + 1] + limit, side="right")) - 1
            s = max(s + 1, min(by_bytes, s + 1 + max_count, n))
    return [*starts, n]


def _serialize_dictionary(t: DataType, keys: list[bytes], limit: int) -> bytes:
    """The dictionary over ``keys`` (serialised, in code order)."""
    sizes = np.fromiter((len(k) for k in keys), dtype=np.int64, count=len(keys))
    bounds = _chunk_bounds(t, sizes, limit) if keys else [0]
    headers: list[bytes] = []
    areas: list[bytes] = []
    keys_offset = 0
    for start, end in itertools.pairwise(bounds):
        extra = keys[start + 1 : end]
        h = ByteWriter()
        h.u8(VERSION_1)
        h.raw(keys[start])
        h.i32(start)
        h.i32(keys_offset)
        h.i32(len(extra))
        body = b"".join(extra)
        if t.root is TypeRoot.STRING:
            offsets = np.concatenate([[0], np.cumsum(sizes[start + 1 : end - 1])])[: len(extra)]
            offsets_bytes = offsets.astype(">i4").tobytes()
            h.i32(len(offsets_bytes))
            h.i32(len(body))
            area = offsets_bytes + body
        else:
            h.i32(len(body))
            h.i32(len(keys[start]))
            area = body
        headers.append(h.getvalue())
        areas.append(area)
        keys_offset += len(area)
    chunk_offsets = np.concatenate([[0], np.cumsum([len(h) for h in headers])])[:-1]
    w = ByteWriter()
    w.i32(DICTIONARY_HEADER_LENGTH)
    w.u8(VERSION_1)
    w.i32(len(headers))
    w.i32(4 * len(headers))
    w.i32(sum(len(h) for h in headers))
    w.raw(np.asarray(chunk_offsets, dtype=">i4").tobytes())
    for part in (*headers, *areas):
        w.raw(part)
    return w.getvalue()


def _serialize_bsi(rows: Any, codes: Any, cardinality: int) -> bytes:
    n = max((cardinality - 1).bit_length(), 1) if cardinality else _MAX_SLICES
    ebm = serialize_bitmap(BitMap(rows.astype(np.uint32)))
    slices = [
        serialize_bitmap(BitMap(rows[((codes >> b) & 1) == 1].astype(np.uint32))) for b in range(n)
    ]
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
    w.raw(ebm)
    for s in slices:
        w.raw(s)
    return w.getvalue()


class _Writer(BufferedWriter):
    def __init__(self, t: DataType, chunk_size: int) -> None:
        super().__init__()
        self.t = t
        self.chunk_size = chunk_size

    def serialize(self) -> bytes:
        arr = self.column()
        if arr is None:
            arr = pa.array([], self.t.to_arrow())
        valid = np.flatnonzero(pc.is_valid(arr).to_numpy(zero_copy_only=False))
        present = pc.drop_null(arr)
        d = _build_dictionary(self.t, present)
        w = ByteWriter()
        header = ByteWriter()
        header.u8(VERSION_1)
        header.i32(self.rows)
        header.i32(d.cardinality)
        keys = _key_bytes(self.t, d)
        if keys:  # min and max
            header.raw(keys[0])
            header.raw(keys[-1])
        dictionary = _serialize_dictionary(self.t, keys, self.chunk_size)
        header.i32(len(dictionary))
        head = header.getvalue()
        w.i32(len(head))
        w.raw(head)
        w.raw(dictionary)
        w.raw(_serialize_bsi(valid, d.codes, d.cardinality))
        return w.getvalue()


# -- reader ------------------------------------------------------------------------------


class _KeyCodec:
    """Reads keys of one type from index bytes, as sort keys (see the section above)."""

    def __init__(self, t: DataType) -> None:
        self.t = t
        self.is_str = t.root is TypeRoot.STRING
        self.fmt = None if self.is_str else struct.Struct(_FIXED[t.root])
        self.width = 32 if t.root is TypeRoot.FLOAT else 64

    @property
    def fixed_length(self) -> int:
        return self.fmt.size if self.fmt is not None else -1

    def _sort(self, v: int) -> int:
        if self.t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            canonical = _canonical_bits(v, self.width)
            return int(_float_sort_keys(np.int64(canonical), self.width))
        if self.t.root is TypeRoot.BOOLEAN:
            return int(v != 0)
        return v

    def read(self, r: ByteReader) -> Any:
        if self.is_str:
            n = r.i32()
            if n < 0:
                raise CorruptIndexError(r.base + r.pos - 4, f"negative key length {n}")
            return bytes(r.take(n, "range-bitmap key"))
        assert self.fmt is not None
        return self._sort(int(self.fmt.unpack(r.take(self.fmt.size, "range-bitmap key"))[0]))

    def read_many(self, data: memoryview, count: int, base: int) -> Any:
        """``count`` fixed-size keys packed in ``data`` -> int64 sort keys (numpy)."""
        assert self.fmt is not None
        dtype = np.dtype(self.fmt.format[1:]).newbyteorder(">")
        if len(data) != count * dtype.itemsize:
            raise CorruptIndexError(base, f"{len(data)} key bytes for {count} keys")
        v = np.frombuffer(data, dtype=dtype).astype(np.int64)
        if self.t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            f = v.astype(np.int32).view(np.float32) if self.width == 32 else v.view(np.float64)
            nan = np.int64(0x7FC00000 if self.width == 32 else 0x7FF8000000000000)
            return _float_sort_keys(np.where(np.isnan(f), nan, v), self.width)
        if self.t.root is TypeRoot.BOOLEAN:
            return (v != 0).astype(np.int64)
        return v


def _canonical_bits(bits: int, width: int) -> int:
    if width == 32:
        f = struct.unpack(">f", struct.pack(">i", bits))[0]
        return 0x7FC00000 if f != f else bits
    d = struct.unpack(">d", struct.pack(">q", bits))[0]
    return 0x7FF8000000000000 if d != d else bits


@dataclass(slots=True)
class _Chunk:
    first: Any
    code: int
    size: int
    area: memoryview
    area_base: int
    offsets_length: int
    keys: Any = None


def _read_bitmap(buf: memoryview, pos: int, length: int, rows: int) -> BitMap:
    if pos < 0 or length < 0 or pos + length > len(buf):
        raise CorruptIndexError(pos, f"bitmap of {length} bytes outside the index")
    if roaring_size(buf[: pos + length], pos) != length:
        raise CorruptIndexError(pos, "bitmap length does not match its header")
    try:
        bm = BitMap.deserialize(bytes(buf[pos : pos + length]))
    except Exception as err:
        raise CorruptIndexError(pos, f"bad roaring bitmap: {err}") from err
    if len(bm) and bm.max() >= rows:
        raise CorruptIndexError(pos, f"row {bm.max()} beyond {rows} rows")
    return bm


class _Reader(FileIndexReader):
    def __init__(self, t: DataType, data: bytes | memoryview) -> None:
        self.t = t
        self.codec = _KeyCodec(t)
        self.buf = memoryview(bytes(data))
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
        self.dictionary_pos = r.pos
        r.skip(dictionary_length)
        self.bsi_pos = r.pos
        self._chunks: list[_Chunk] | None = None
        self._firsts: list[Any] = []
        self._ebm: BitMap | None = None
        self._slices: tuple[BitMap, ...] = ()
        self._nulls: BitMap | None = None

    # -- dictionary ------------------------------------------------------------------

    def _dictionary(self) -> list[_Chunk]:
        if self._chunks is not None:
            return self._chunks
        base = self.dictionary_pos
        r = ByteReader(self.buf[base:], base=base)
        if r.i32() != DICTIONARY_HEADER_LENGTH or r.u8() != VERSION_1:
            raise CorruptIndexError(base, "bad range-bitmap dictionary header")
        count, offsets_len, chunks_len = r.i32(), r.i32(), r.i32()
        if count < 0 or offsets_len != 4 * count or chunks_len < 0:
            raise CorruptIndexError(base + 5, "bad range-bitmap dictionary sizes")
        starts = [r.i32() for _ in range(count)]
        headers_pos = r.pos
        keys_base = headers_pos + chunks_len
        r.take(chunks_len, "chunk headers")
        chunks: list[_Chunk] = []
        expected_code = 0
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < count else chunks_len
            if not 0 <= start <= end <= chunks_len:
                raise CorruptIndexError(base + headers_pos, f"bad offset of chunk {i}")
            h = ByteReader(r.buf[headers_pos + start : headers_pos + end], base + headers_pos)
            if h.u8() != VERSION_1:
                raise CorruptIndexError(h.base, "unsupported chunk version")
            first = self.codec.read(h)
            code, keys_offset, size = h.i32(), h.i32(), h.i32()
            if self.codec.is_str:
                offsets_length, keys_length = h.i32(), h.i32()
                area_length = offsets_length + keys_length
                if offsets_length != 4 * size:
                    raise CorruptIndexError(h.base, f"chunk {i}: bad offsets length")
            else:
                keys_length, fixed = h.i32(), h.i32()
                offsets_length, area_length = 0, keys_length
                if fixed != self.codec.fixed_length or keys_length != size * fixed:
                    raise CorruptIndexError(h.base, f"chunk {i}: bad key length")
            if code != expected_code or size < 0 or keys_offset < 0 or area_length < 0:
                raise CorruptIndexError(h.base, f"chunk {i}: code {code}, expected {expected_code}")
            if chunks and not chunks[-1].first < first:
                raise CorruptIndexError(h.base, f"chunk {i}: keys out of order")
            at = keys_base + keys_offset
            if at + area_length > len(r.buf):
                raise CorruptIndexError(base + at, f"chunk {i}: keys outside the dictionary")
            area = r.buf[at : at + area_length]
            chunks.append(_Chunk(first, code, size, area, base + at, offsets_length))
            expected_code = code + 1 + size
        if expected_code != self.cardinality:
            raise CorruptIndexError(
                base, f"dictionary holds {expected_code} keys, header says {self.cardinality}"
            )
        if chunks and (chunks[0].first != self.min):
            raise CorruptIndexError(base, "dictionary does not start at the minimum")
        self._chunks = chunks
        self._firsts = [c.first for c in chunks]
        return chunks

    def _chunk_keys(self, c: _Chunk) -> Any:
        if c.keys is not None:
            return c.keys
        if self.codec.is_str:
            offs = np.frombuffer(c.area[: c.offsets_length], dtype=">i4").astype(np.int64)
            r = ByteReader(c.area[c.offsets_length :], c.area_base + c.offsets_length)
            keys = []
            for i in range(c.size):
                if offs[i] != r.pos:
                    raise CorruptIndexError(r.base + r.pos, "string key offsets out of step")
                keys.append(self.codec.read(r))
            if r.remaining:
                raise CorruptIndexError(r.base + r.pos, "trailing bytes after chunk keys")
            ordered = all(a < b for a, b in itertools.pairwise([c.first, *keys]))
        else:
            keys = self.codec.read_many(c.area, c.size, c.area_base)
            ordered = not c.size or bool(keys[0] > c.first and np.all(keys[1:] > keys[:-1]))
        if not ordered:
            raise CorruptIndexError(c.area_base, "chunk keys out of order")
        c.keys = keys
        return keys

    def _count_below(self, key: Any, inclusive: bool) -> int:
        """How many dictionary keys are ``< key`` (``<= key`` when inclusive)."""
        assert self.min is not None and self.max is not None
        if key < self.min or (not inclusive and key == self.min):
            return 0
        if key > self.max or (inclusive and key == self.max):
            return self.cardinality
        chunks = self._dictionary()
        i = bisect.bisect_right(self._firsts, key) - 1  # the chunk whose range holds key
        c = chunks[i]
        if c.first == key:
            return c.code + (1 if inclusive else 0)
        keys = self._chunk_keys(c)
        if self.codec.is_str:
            pos = (bisect.bisect_right if inclusive else bisect.bisect_left)(keys, key)
        else:
            pos = int(np.searchsorted(keys, key, side="right" if inclusive else "left"))
        return c.code + 1 + pos

    # -- bit-sliced codes --------------------------------------------------------------

    def _bsi(self) -> tuple[BitMap, tuple[BitMap, ...]]:
        if self._ebm is not None:
            return self._ebm, self._slices
        base = self.bsi_pos
        r = ByteReader(self.buf[base:], base=base)
        head_len = r.i32()
        h = ByteReader(r.take(head_len, "bsi header"), base + 4)
        if h.u8() != VERSION_1:
            raise CorruptIndexError(base + 4, "unsupported range-bitmap BSI version")
        n, ebm_len, indexes_len = h.u8(), h.i32(), h.i32()
        if not 1 <= n <= _MAX_SLICES or indexes_len != 8 * n:
            raise CorruptIndexError(base + 5, f"bad BSI slice count {n}")
        spans = [(h.i32(), h.i32()) for _ in range(n)]
        if h.remaining:
            raise CorruptIndexError(h.base + h.pos, "trailing bytes in BSI header")
        body = base + 4 + head_len
        ebm = _read_bitmap(self.buf, body, ebm_len, self.rows)
        slices = tuple(
            _read_bitmap(self.buf, body + ebm_len + off, length, self.rows) for off, length in spans
        )
        self._ebm, self._slices = ebm, slices
        if self.cardinality and self._below(self.cardinality, check=False) != ebm:
            raise CorruptIndexError(body, "BSI holds codes beyond the dictionary")
        if not self.cardinality and len(ebm):
            raise CorruptIndexError(body, "BSI holds rows but the dictionary is empty")
        return ebm, slices

    def _below(self, code: int, check: bool = True) -> BitMap:
        """Non-null rows whose code is ``< code``."""
        ebm, slices = self._bsi() if check else (self._ebm, self._slices)
        assert ebm is not None
        if code <= 0:
            return BitMap()
        if code >= self.cardinality and check:
            return BitMap(ebm)
        if code >= 1 << len(slices):
            return BitMap(ebm)
        lt, eq = BitMap(), BitMap(ebm)
        for i in range(len(slices) - 1, -1, -1):
            s = slices[i]
            if (code >> i) & 1:
                lt |= eq - s
                eq &= s
            else:
                eq -= s
        return lt

    def _not_null(self) -> BitMap:
        if not self.cardinality:
            return BitMap()
        ebm, _ = self._bsi()
        return BitMap(ebm)

    def _codes(self, lo: int, hi: int) -> BitMap:
        """Non-null rows whose code is in ``[lo, hi)``."""
        if hi <= lo:
            return BitMap()
        if lo <= 0 and hi >= self.cardinality:
            return self._not_null()
        return self._below(hi) - self._below(lo)

    def _range(self, value: Any) -> tuple[int, int] | None:
        """Codes ``[lo, hi)`` of the keys SQL-equal to ``value``; ``None``: cannot tell."""
        keys = _literal_range(self.t, value)
        if keys is None:
            return None
        if not self.cardinality:
            return 0, 0
        return self._count_below(keys[0], False), self._count_below(keys[1], True)

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
        return BitmapResult(BitMap(range(self.rows)) - self._not_null())

    def visit_not_null(self) -> FileIndexResult:
        return BitmapResult(self._not_null())

    def visit_starts_with(self, prefix: Any) -> FileIndexResult:
        if not self.codec.is_str or not isinstance(prefix, str):
            return super().visit_starts_with(prefix)
        if not self.cardinality:
            return BitmapResult(BitMap())
        p = prefix.encode("utf-8")
        lo = self._count_below(p, False)
        after = _successor(p)
        hi = self.cardinality if after is None else self._count_below(after, False)
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

    def supports(self, data_type: DataType) -> bool:
        return _supported(data_type)

    def validate_options(self, data_type: DataType, options: Mapping[str, str]) -> None:
        super().validate_options(data_type, options)
        _chunk_size(data_type, options)

    def create_writer(self, data_type: DataType, options: Mapping[str, str]) -> FileIndexWriter:
        return _Writer(data_type, _chunk_size(data_type, options))

    def create_reader(
        self, data_type: DataType, options: Mapping[str, str], data: bytes | memoryview
    ) -> FileIndexReader:
        return _Reader(data_type, data)
