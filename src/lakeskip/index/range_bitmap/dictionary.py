"""Range-bitmap's chunked dictionary (Paimon's ``ChunkedDictionary``): the sorted distinct
keys, split into chunks so a reader finds a literal's code by reading one chunk.

Layout (big-endian; ``key`` as in :mod:`.keys`)::

    i32 headerLength=13 | u8 version=1 | i32 chunkCount | i32 offsetsLength | i32 chunksLength
    | i32 chunkOffset[chunkCount]           (into the chunk headers)
    | chunk header[chunkCount]
    | chunk keys[chunkCount]
    chunk header, fixed-size keys:
        u8 version=1 | key first | i32 code | i32 keysOffset | i32 size | i32 keysLength
        | i32 fixedLength
    chunk header, strings:
        u8 version=1 | key first | i32 code | i32 keysOffset | i32 size | i32 offsetsLength
        | i32 keysLength
    chunk keys: the chunk's ``size`` keys after ``first`` (codes ``code+1 ..``); for strings
        ``i32 offset[size]`` (into the keys) then the keys.

A chunk holds its first key in the header and then as many keys as fit in ``chunk-size``
bytes (strings: also at most ``chunk-size / 4`` of them).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from lakeskip.errors import CorruptIndexError
from lakeskip.index.primitives.binary import ByteReader, ByteWriter
from lakeskip.index.range_bitmap.keys import Dictionary, KeyCodec

__all__ = ["HEADER_LENGTH", "ChunkedDictionary", "serialize_dictionary"]

VERSION_1 = 1
HEADER_LENGTH = 13
_CHUNK_INTS = 5  # i32 fields after the first key in a chunk header


def _chunk_starts(d: Dictionary, fixed: bool, limit: int) -> Any:
    """Start code of every chunk: a chunk is its first key plus the keys that still fit in
    ``limit`` bytes (strings: and ``4 * count <= limit``)."""
    n = d.cardinality
    if fixed:
        per = 1 + (limit // int(d.starts[1]) if n else 0)
        return np.arange(0, n, per, dtype=np.int64)
    cum = d.starts
    max_count = limit // 4
    s = 0
    starts = []
    while s < n:
        starts.append(s)
        by_bytes = int(np.searchsorted(cum, cum[s + 1] + limit, side="right")) - 1
        s = max(s + 1, min(by_bytes, s + 1 + max_count, n))
    return np.array(starts, dtype=np.int64)


def serialize_dictionary(d: Dictionary, fixed: bool, limit: int) -> bytes:
    """The chunked dictionary over ``d`` (fixed-size keys or strings), chunks of ``limit``
    bytes."""
    starts = _chunk_starts(d, fixed, limit)
    ends = np.append(starts[1:], d.cardinality)[: len(starts)]
    if fixed:
        headers, areas = _fixed_chunks(d, starts, ends)
    else:
        headers, areas = _string_chunks(d, starts, ends)
    lengths = np.fromiter((len(h) for h in headers), dtype=np.int64, count=len(headers))
    w = ByteWriter()
    w.i32(HEADER_LENGTH)
    w.u8(VERSION_1)
    w.i32(len(headers))
    w.i32(4 * len(headers))
    w.i32(int(lengths.sum()))
    w.raw((np.cumsum(lengths) - lengths).astype(">i4").tobytes())
    return w.getvalue() + b"".join(headers) + areas


def _fixed_chunks(d: Dictionary, starts: Any, ends: Any) -> tuple[list[bytes], bytes]:
    """Chunk headers (all the same length) and the keys area, assembled with numpy."""
    size = int(d.starts[1]) if d.cardinality else 0
    keys = np.frombuffer(d.data, dtype=np.uint8).reshape(d.cardinality, size)
    counts = ends - starts - 1
    keys_length = counts * size
    fields = np.stack(
        [
            starts,
            np.cumsum(keys_length) - keys_length,
            counts,
            keys_length,
            np.full_like(starts, size),
        ],
        axis=1,
    ).astype(">i4")
    header = np.empty((len(starts), 1 + size + 4 * _CHUNK_INTS), dtype=np.uint8)
    header[:, 0] = VERSION_1
    header[:, 1 : 1 + size] = keys[starts]
    header[:, 1 + size :] = fields.view(np.uint8).reshape(len(starts), 4 * _CHUNK_INTS)
    rest = np.ones(d.cardinality, dtype=np.bool_)
    rest[starts] = False
    body = keys.view(f"V{size}").ravel()[rest].tobytes() if size else b""
    return [row.tobytes() for row in header], body


def _string_chunks(d: Dictionary, starts: Any, ends: Any) -> tuple[list[bytes], bytes]:
    """Chunk headers and the keys area for strings (one Python step per chunk)."""
    at = d.starts
    headers: list[bytes] = []
    areas: list[bytes] = []
    keys_offset = 0
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        lo, hi = int(at[start + 1]), int(at[end])
        offsets = (at[start + 1 : end] - lo).astype(">i4").tobytes()
        h = ByteWriter()
        h.u8(VERSION_1)
        h.raw(d.key(start))
        h.i32(start)
        h.i32(keys_offset)
        h.i32(end - start - 1)
        h.i32(len(offsets))
        h.i32(hi - lo)
        headers.append(h.getvalue())
        areas.append(offsets)
        areas.append(d.data[lo:hi])
        keys_offset += len(offsets) + hi - lo
    return headers, b"".join(areas)


# -- reading -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Chunk:
    first: Any
    code: int
    size: int
    area: memoryview
    area_base: int
    offsets_length: int
    keys: Any = None


class ChunkedDictionary:
    """Finds a key's code in the dictionary at ``buf[pos]``, parsing the chunk table on first
    use and a chunk's keys only when a lookup lands in it."""

    def __init__(
        self, buf: memoryview, pos: int, codec: KeyCodec, cardinality: int, lo: Any, hi: Any
    ) -> None:
        self.buf = buf
        self.pos = pos
        self.codec = codec
        self.cardinality = cardinality
        self.min = lo
        self.max = hi
        self._chunks: list[_Chunk] | None = None
        self._firsts: list[Any] = []

    def _parse(self) -> list[_Chunk]:
        if self._chunks is not None:
            return self._chunks
        base = self.pos
        r = ByteReader(self.buf[base:], base=base)
        if r.i32() != HEADER_LENGTH or r.u8() != VERSION_1:
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

    def count_below(self, key: Any, inclusive: bool) -> int:
        """How many dictionary keys are ``< key`` (``<= key`` when inclusive)."""
        if key < self.min or (not inclusive and key == self.min):
            return 0
        if key > self.max or (inclusive and key == self.max):
            return self.cardinality
        chunks = self._parse()
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
