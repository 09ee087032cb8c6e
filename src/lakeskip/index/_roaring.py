"""RoaringBitmap helpers shared by the bitmap and BSI formats.

Paimon's ``RoaringBitmap32.serialize()`` runs ``runOptimize()`` first and writes the portable
format (RoaringFormatSpec; cookies 12346/12347), which pyroaring reads and writes too.

>>> from pyroaring import BitMap
>>> serialize_bitmap(BitMap([1, 2, 3, 4])).hex()
'3b3000000100000300010001000300'
>>> roaring_size(memoryview(serialize_bitmap(BitMap([7])) + b"trailing"), 0)
18
"""

from __future__ import annotations

import struct

from pyroaring import BitMap

from lakeskip.errors import CorruptIndexError

__all__ = ["roaring_size", "serialize_bitmap"]

_SERIAL_COOKIE = 12347
_SERIAL_COOKIE_NO_RUN = 12346
_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")


def serialize_bitmap(bm: BitMap) -> bytes:
    """Portable bytes, run-optimised as Java's ``RoaringBitmap32.serialize()``."""
    bm = BitMap(bm)
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
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        n = (cookie >> 16) + 1
        pos += 4
        flag_len = (n + 7) // 8
        runs = bytes(buf[pos : pos + flag_len])
        pos += flag_len
        has_offsets = n >= 4
    elif cookie == _SERIAL_COOKIE_NO_RUN:
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
        elif card > 4096:
            pos += 8192
        else:
            pos += 2 * card
    if pos > len(buf):
        raise CorruptIndexError(start, "truncated roaring bitmap")
    return pos - start
