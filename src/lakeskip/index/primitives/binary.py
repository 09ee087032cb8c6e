"""Big-endian binary primitives shared by the file-index formats.

Java's ``DataOutputStream`` writes every integer big-endian; ``writeUTF`` writes a u16 byte
length followed by *modified* UTF-8 (NUL as ``C0 80``, supplementary characters as CESU-8
surrogate pairs). :class:`ByteReader` reads them back from a ``memoryview`` with bounds
checks, so truncated or garbage input raises :class:`~lakeskip.errors.CorruptIndexError`
with the offset instead of ``struct.error`` or a silent wrong answer.

Example:
    >>> w = ByteWriter()
    >>> w.i32(7); w.utf("a\\x00b")
    >>> bytes(w.buf).hex()
    '00000007000461c08062'
    >>> r = ByteReader(bytes(w.buf))
    >>> (r.i32(), r.utf())
    (7, 'a\\x00b')
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lakeskip.errors import CorruptIndexError

__all__ = [
    "ByteReader",
    "ByteWriter",
    "Field",
    "decode_modified_utf8",
    "encode_modified_utf8",
    "fixed_field",
    "length_prefixed",
    "pack_records",
    "take_field",
]

I8 = struct.Struct(">b")
U8 = struct.Struct(">B")
I16 = struct.Struct(">h")
U16 = struct.Struct(">H")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
F32 = struct.Struct(">f")
F64 = struct.Struct(">d")


def encode_modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8 (the body of ``DataOutput.writeUTF``, without the length)."""
    if text.isascii() and "\x00" not in text:
        return text.encode("ascii")
    out = bytearray()
    # UTF-16 code units: supplementary characters become surrogate pairs, each encoded
    # as its own 3-byte sequence (CESU-8).
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        if 0x0001 <= c <= 0x007F:
            out.append(c)
        elif c <= 0x07FF:  # includes NUL -> C0 80
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    return bytes(out)


def decode_modified_utf8(data: bytes | memoryview, offset: int = 0) -> str:
    """Inverse of :func:`encode_modified_utf8`; ``offset`` is only used in errors."""
    raw = bytes(data)
    if raw.isascii():
        return raw.decode("ascii")
    units = bytearray()
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b < 0x80:
            c, i = b, i + 1
        elif b & 0xE0 == 0xC0 and i + 1 < n and raw[i + 1] & 0xC0 == 0x80:
            c, i = ((b & 0x1F) << 6) | (raw[i + 1] & 0x3F), i + 2
        elif (
            b & 0xF0 == 0xE0
            and i + 2 < n
            and raw[i + 1] & 0xC0 == 0x80
            and raw[i + 2] & 0xC0 == 0x80
        ):
            c = ((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F)
            i += 3
        else:
            raise CorruptIndexError(offset + i, "malformed modified UTF-8")
        units += c.to_bytes(2, "big")
    try:
        return (
            units.decode("utf-16-be", "surrogatepass")
            .encode("utf-16", "surrogatepass")
            .decode("utf-16")
        )
    except UnicodeError as e:
        raise CorruptIndexError(offset, f"malformed modified UTF-8: {e}") from e


class ByteReader:
    """Sequential big-endian reader with bounds checks.

    Args:
        data: the bytes to read.
        base: absolute offset of ``data[0]`` in the enclosing buffer, for error messages.
    """

    __slots__ = ("base", "buf", "pos")

    def __init__(self, data: bytes | bytearray | memoryview, base: int = 0) -> None:
        self.buf = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        self.pos = 0
        self.base = base

    def __len__(self) -> int:
        return len(self.buf)

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def _need(self, n: int, what: str) -> int:
        if n < 0 or self.pos + n > len(self.buf):
            raise CorruptIndexError(
                self.base + self.pos, f"{what}: need {n} bytes, {self.remaining} left"
            )
        p = self.pos
        self.pos += n
        return p

    def seek(self, pos: int) -> None:
        if not 0 <= pos <= len(self.buf):
            raise CorruptIndexError(self.base + pos, f"seek outside {len(self.buf)} bytes")
        self.pos = pos

    def skip(self, n: int) -> None:
        self._need(n, "skip")

    def u8(self) -> int:
        return int(U8.unpack_from(self.buf, self._need(1, "u8"))[0])

    def i8(self) -> int:
        return int(I8.unpack_from(self.buf, self._need(1, "i8"))[0])

    def boolean(self) -> bool:
        return self.u8() != 0

    def i16(self) -> int:
        return int(I16.unpack_from(self.buf, self._need(2, "i16"))[0])

    def u16(self) -> int:
        return int(U16.unpack_from(self.buf, self._need(2, "u16"))[0])

    def i32(self) -> int:
        return int(I32.unpack_from(self.buf, self._need(4, "i32"))[0])

    def i64(self) -> int:
        return int(I64.unpack_from(self.buf, self._need(8, "i64"))[0])

    def f32(self) -> float:
        return float(F32.unpack_from(self.buf, self._need(4, "f32"))[0])

    def f64(self) -> float:
        return float(F64.unpack_from(self.buf, self._need(8, "f64"))[0])

    def take(self, n: int, what: str = "bytes") -> memoryview:
        p = self._need(n, what)
        return self.buf[p : p + n]

    def sized_bytes(self, what: str = "bytes") -> bytes:
        """``i32 length | bytes`` (how Paimon's indexes store a string key)."""
        n = self.i32()
        if n < 0:
            raise CorruptIndexError(self.base + self.pos - 4, f"negative {what} length {n}")
        return bytes(self.take(n, what))

    def utf(self) -> str:
        """Java ``readUTF``: u16 length + modified UTF-8."""
        n = self.u16()
        start = self.base + self.pos
        return decode_modified_utf8(self.take(n, "utf"), start)


class ByteWriter:
    """Append-only big-endian writer (Java ``DataOutputStream``)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def __len__(self) -> int:
        return len(self.buf)

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def u8(self, v: int) -> None:
        self.buf += U8.pack(v & 0xFF)

    def i8(self, v: int) -> None:
        self.buf += I8.pack(v)

    def boolean(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def i16(self, v: int) -> None:
        self.buf += I16.pack(v)

    def i32(self, v: int) -> None:
        self.buf += I32.pack(v)

    def i64(self, v: int) -> None:
        self.buf += I64.pack(v)

    def f32(self, v: float) -> None:
        self.buf += F32.pack(v)

    def f64(self, v: float) -> None:
        self.buf += F64.pack(v)

    def raw(self, b: bytes | bytearray | memoryview) -> None:
        self.buf += b

    def utf(self, text: str) -> None:
        """Java ``writeUTF``."""
        body = encode_modified_utf8(text)
        if len(body) > 0xFFFF:
            raise ValueError(f"string too long for writeUTF: {len(body)} bytes")
        self.buf += U16.pack(len(body))
        self.buf += body


# -- whole columns of records, assembled with numpy -------------------------------------------

#: one field of ``m`` records: (uint8 data, where record ``i``'s bytes start, their length)
Field = tuple[Any, Any, Any]


def fixed_field(values: Any, dtype: str) -> Field:
    """A field holding each of ``values`` encoded as ``dtype`` (e.g. ``">i4"``)."""
    data = np.ascontiguousarray(values).astype(dtype).view(np.uint8)
    size = np.dtype(dtype).itemsize
    m = len(values)
    return data, np.arange(m, dtype=np.int64) * size, np.full(m, size, dtype=np.int64)


def length_prefixed(binary: pa.Array) -> Field:
    """``i32 length | bytes`` of every value of a binary array (Java's key encoding for
    strings), as a field.

    >>> data, at, length = length_prefixed(pa.array([b"ab", b""]))
    >>> bytes(data).hex(), at.tolist(), length.tolist()
    ('00000002616200000000', [0, 6], [6, 4])
    """
    n = len(binary)
    offsets = np.frombuffer(
        binary.buffers()[1], dtype=np.int32, count=n + 1, offset=4 * binary.offset
    ).astype(np.int64)
    payload = np.frombuffer(binary.buffers()[2] or b"", dtype=np.uint8)[offsets[0] : offsets[-1]]
    lengths = np.diff(offsets)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths + 4, out=starts[1:])
    out = np.empty(int(starts[-1]), dtype=np.uint8)
    prefix = np.zeros(len(out), dtype=np.bool_)
    at = (starts[:-1, None] + np.arange(4)).ravel()
    prefix[at] = True
    out[at] = lengths.astype(">i4").view(np.uint8)
    out[~prefix] = payload
    return out, starts[:-1], lengths + 4


def take_field(field: Field, index: Any) -> Field:
    """The records ``index`` of a field (no bytes are copied)."""
    data, at, length = field
    return data, at[index], length[index]


def _fixed_rows(field: Field) -> Any:
    """A fixed-size field's records as an (m, size) uint8 matrix, or None."""
    data, at, length = field
    if not len(at):
        return np.empty((0, 0), dtype=np.uint8)
    size = int(length[0])
    if size <= 0 or len(data) % size or np.any(length != size) or np.any(at % size):
        return None
    return np.asarray(data, dtype=np.uint8).reshape(-1, size)[at // size]


def pack_records(fields: Sequence[Field]) -> tuple[bytes, Any]:
    """Record ``i`` is field 0's ``i``-th bytes, then field 1's, ...; returns the records
    concatenated and where each starts (plus the end). One gather, no per-record Python.

    >>> data, starts = pack_records([fixed_field([1, 2], ">i2"), fixed_field([3, 4], ">i1")])
    >>> data.hex(), starts.tolist()
    ('000103000204', [0, 3, 6])
    """
    m = len(fields[0][1])
    columns = [_fixed_rows(f) for f in fields]
    if all(c is not None for c in columns):  # fixed-size fields: one copy per field
        out = np.hstack(columns) if m else np.empty((0, 0), dtype=np.uint8)
        return out.tobytes(), np.arange(m + 1, dtype=np.int64) * out.shape[1]
    bases = np.cumsum([0] + [len(f[0]) for f in fields])
    source = np.concatenate([np.asarray(f[0], dtype=np.uint8) for f in fields])
    seg_at = np.stack([f[1] + base for f, base in zip(fields, bases, strict=False)], axis=1).ravel()
    seg_len = np.stack([f[2] for f in fields], axis=1).ravel().astype(np.int64)
    seg_out = np.cumsum(seg_len) - seg_len
    total = int(seg_len.sum())
    gather = np.repeat(seg_at - seg_out, seg_len) + np.arange(total, dtype=np.int64)
    starts = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(seg_len.reshape(m, len(fields)).sum(axis=1), out=starts[1:])
    return source[gather].tobytes(), starts
