"""RoaringBitmap helpers shared by the bitmap, bsi and range-bitmap formats: build, serialise,
and read-and-validate, each in one place.

Paimon's ``RoaringBitmap32.serialize()`` runs ``runOptimize()`` first and writes the portable
format (RoaringFormatSpec; cookies 12347 with run containers, 12346 without), which pyroaring
reads and writes too::

    12346: u32 cookie | u32 containerCount | (u16 key, u16 card-1)[n] | u32 offset[n]
           | container[n]        (array: u16 values; bitmap: 1024 little-endian u64 words)
    12347: u16 cookie | u16 n-1 | run flags[(n+7)/8] | (u16 key, u16 card-1)[n]
           | [u32 offset[n] when n >= 4] | container[n]   (run: u16 count, (u16 start, u16 len-1))

Builders take numpy arrays and never loop over values in Python: :func:`bitmap_of` hands
sorted row numbers to CRoaring in one call, :func:`serialize_mask` assembles the 12346 form of
a boolean row mask with numpy (a bitmap container is the mask's packed bits) and lets CRoaring
run-optimise it, so the bytes are those of ``serialize_bitmap(BitMap(rows))``.

>>> from pyroaring import BitMap
>>> serialize_bitmap(BitMap([1, 2, 3, 4])).hex()
'3b3000000100000300010001000300'
>>> roaring_size(memoryview(serialize_bitmap(BitMap([7])) + b"trailing"), 0)
18
>>> import numpy as np
>>> serialize_mask(np.array([False, True, True, True, True])) == serialize_bitmap(BitMap([1, 2, 3, 4]))
True
"""

from __future__ import annotations

import array
import struct
from typing import Any

import numpy as np
from pyroaring import BitMap

from lakeskip.errors import CorruptIndexError

__all__ = [
    "bitmap_of",
    "read_bitmap",
    "read_first_container",
    "roaring_size",
    "serialize_bitmap",
    "serialize_mask",
]

SERIAL_COOKIE = 12347
SERIAL_COOKIE_NO_RUN = 12346
CONTAINER_BITS = 1 << 16
ARRAY_MAX = 4096
CHUNK_BYTES = CONTAINER_BITS // 8
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")


def bitmap_of(rows: Any) -> BitMap:
    """A BitMap of non-negative row numbers (numpy), in one C call."""
    values = array.array("I")
    values.frombytes(np.ascontiguousarray(rows, dtype=np.uint32).tobytes())
    return BitMap(values)


def serialize_bitmap(bm: BitMap) -> bytes:
    """Portable bytes, run-optimised as Java's ``RoaringBitmap32.serialize()``."""
    bm = BitMap(bm)
    bm.run_optimize()
    return bytes(bm.serialize())


def serialize_mask(mask: Any) -> bytes:
    """Portable run-optimised bytes of ``{i : mask[i]}`` for a boolean numpy array."""
    n = len(mask)
    chunks = -(-n // CONTAINER_BITS)
    packed = np.zeros(chunks * CHUNK_BYTES, dtype=np.uint8)
    packed[: -(-n // 8)] = np.packbits(mask, bitorder="little")
    by_chunk = packed.reshape(chunks, CHUNK_BYTES)
    cards = _POPCOUNT[by_chunk].sum(axis=1, dtype=np.int64)
    keys = np.flatnonzero(cards)
    if not len(keys):
        return serialize_bitmap(BitMap())
    bodies: list[bytes] = []
    for k in keys.tolist():
        if cards[k] > ARRAY_MAX:  # a bitmap container is the packed mask itself
            bodies.append(by_chunk[k].tobytes())
        else:
            within = np.flatnonzero(mask[k * CONTAINER_BITS : (k + 1) * CONTAINER_BITS])
            bodies.append(within.astype("<u2").tobytes())
    m = len(keys)
    sizes = np.fromiter((len(b) for b in bodies), dtype=np.int64, count=m)
    offsets = 8 + 8 * m + np.concatenate(([0], np.cumsum(sizes)[:-1]))
    descriptors = np.empty((m, 2), dtype="<u2")
    descriptors[:, 0] = keys
    descriptors[:, 1] = cards[keys] - 1
    data = b"".join(
        (
            _U32.pack(SERIAL_COOKIE_NO_RUN),
            _U32.pack(m),
            descriptors.tobytes(),
            offsets.astype("<u4").tobytes(),
            *bodies,
        )
    )
    bm = BitMap.deserialize(data)
    bm.run_optimize()
    return bytes(bm.serialize())


def roaring_size(buf: memoryview, pos: int) -> int:
    """Byte length of the portable-format RoaringBitmap starting at ``buf[pos]``."""
    start = pos

    def u32(at: int) -> int:
        if at + 4 > len(buf):
            raise CorruptIndexError(at, "truncated roaring bitmap")
        return int(_U32.unpack_from(buf, at)[0])

    def u16(at: int) -> int:
        if at + 2 > len(buf):
            raise CorruptIndexError(at, "truncated roaring bitmap")
        return int(_U16.unpack_from(buf, at)[0])

    cookie = u32(pos)
    runs: bytes = b""
    if cookie & 0xFFFF == SERIAL_COOKIE:
        n = (cookie >> 16) + 1
        pos += 4
        flag_len = (n + 7) // 8
        runs = bytes(buf[pos : pos + flag_len])
        pos += flag_len
        has_offsets = n >= 4
    elif cookie == SERIAL_COOKIE_NO_RUN:
        n = u32(pos + 4)
        pos += 8
        has_offsets = True
    else:
        raise CorruptIndexError(pos, f"not a roaring bitmap (cookie {cookie})")
    if n > 65536:
        raise CorruptIndexError(start, f"roaring bitmap with {n} containers")
    cards = [u16(pos + 4 * i + 2) + 1 for i in range(n)]
    pos += 4 * n
    if has_offsets:
        pos += 4 * n
    for i, card in enumerate(cards):
        if runs and runs[i // 8] & (1 << (i % 8)):
            pos += 2 + 4 * u16(pos)
        elif card > ARRAY_MAX:
            pos += 8192
        else:
            pos += 2 * card
    if pos > len(buf):
        raise CorruptIndexError(start, "truncated roaring bitmap")
    return pos - start


def read_bitmap(
    buf: memoryview, pos: int, rows: int, length: int | None = None, *, empty_ok: bool = True
) -> BitMap:
    """Read and validate the bitmap at ``buf[pos]``: it must be well-formed portable Roaring,
    ``length`` bytes long when given (else as long as its header says), hold only rows
    ``< rows``, and (unless ``empty_ok``) at least one row. Anything else is
    :class:`~lakeskip.errors.CorruptIndexError` at ``pos``."""
    if pos < 0 or (length is not None and (length < 0 or pos + length > len(buf))):
        raise CorruptIndexError(pos, f"bitmap of {length} bytes outside the index")
    end = len(buf) if length is None else pos + length
    size = roaring_size(buf[:end], pos)
    if length is not None and size != length:
        raise CorruptIndexError(pos, f"roaring bitmap is not {length} bytes long")
    try:
        # no copy: deserialize takes any buffer (its stub says bytes)
        bm = BitMap.deserialize(buf[pos : pos + size])  # type: ignore[arg-type]
    except Exception as err:  # pyroaring raises ValueError or others on bad input
        raise CorruptIndexError(pos, f"bad roaring bitmap: {err}") from err
    if not len(bm):
        if not empty_ok:
            raise CorruptIndexError(pos, "empty bitmap where rows are expected")
    elif bm.max() >= rows:
        raise CorruptIndexError(pos, f"row {bm.max()} beyond {rows} rows")
    return bm


def read_first_container(buf: memoryview, pos: int, rows: int, length: int) -> BitMap:
    """The rows below ``CONTAINER_BITS`` (65,536) of the bitmap of ``length`` bytes at
    ``buf[pos]``, reading its header and first container only (a bitmap of 500,000 rows
    holds 8 containers: the others' bytes are neither copied nor decoded). The container's
    bytes are checked as :func:`read_bitmap` checks a whole bitmap (well-formed, rows below
    ``rows``); the other containers are not looked at.

    >>> bm = BitMap([3, 70_000])
    >>> data = memoryview(serialize_bitmap(bm))
    >>> read_first_container(data, 0, 100_000, len(data))
    BitMap([3])
    """
    if pos < 0 or length < 0 or pos + length > len(buf):
        raise CorruptIndexError(pos, f"bitmap of {length} bytes outside the index")
    end = pos + length

    def need(at: int, n: int) -> None:
        if at + n > end:
            raise CorruptIndexError(pos, "truncated roaring bitmap")

    need(pos, 4)
    cookie = int(_U32.unpack_from(buf, pos)[0])
    if cookie & 0xFFFF == SERIAL_COOKIE:
        n = (cookie >> 16) + 1
        need(pos + 4, (n + 7) // 8)
        run = bool(buf[pos + 4] & 1)
        at = pos + 4 + (n + 7) // 8
        header = 4 * n + (4 * n if n >= 4 else 0)
    elif cookie == SERIAL_COOKIE_NO_RUN:
        need(pos + 4, 4)
        n = int(_U32.unpack_from(buf, pos + 4)[0])
        if n == 0:
            return BitMap()
        run = False
        at = pos + 8
        header = 8 * n
    else:
        raise CorruptIndexError(pos, f"not a roaring bitmap (cookie {cookie})")
    if n > 65536:
        raise CorruptIndexError(pos, f"roaring bitmap with {n} containers")
    need(at, header)
    key, card = _U16.unpack_from(buf, at)[0], _U16.unpack_from(buf, at + 2)[0] + 1
    if key != 0:
        return BitMap()  # no row below 65,536
    body = at + header
    if run:
        need(body, 2)
        size = 2 + 4 * int(_U16.unpack_from(buf, body)[0])
    else:
        size = 8192 if card > ARRAY_MAX else 2 * card
    need(body, size)
    # the same container as a bitmap of its own: one container, so no offsets
    head = struct.pack("<HHBHH", SERIAL_COOKIE, 0, 1 if run else 0, 0, card - 1)
    return read_bitmap(memoryview(head + bytes(buf[body : body + size])), 0, rows)
