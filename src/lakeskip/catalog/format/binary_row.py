"""Paimon's ``BinaryRow`` codec: the bytes of partitions and min/max stats in manifests.

A manifest stores a row as ``SerializationUtils.serializeBinaryRow``: a big-endian ``i32``
arity, then the ``BinaryRow`` itself, whose numbers are **little-endian** (Java's
``MemorySegment`` native order on x86)::

    +-----------+-------------------------------------------------------------------+
    | i32 BE    | BinaryRow (sizeInBytes)                                           |
    | arity     |                                                                   |
    +-----------+---------------------+-----------------------+---------------------+
                | null bits           | fixed part            | variable part       |
                | ((arity+71)//64)*8  | 8 bytes per field     | 8-byte aligned      |
                | byte 0 = RowKind    |                       | chunks              |
                | bit (8+i) = field i |                       |                     |
                | is null             |                       |                     |
                +---------------------+-----------------------+---------------------+

Fixed slot of field ``i`` (8 bytes at ``null_bits + 8*i``), by type:

* BOOLEAN / TINYINT: 1 byte; SMALLINT: i16; INT / DATE: i32; BIGINT: i64; FLOAT: f32;
  DOUBLE: f64 (little-endian, rest of the slot zero);
* DECIMAL(p <= 18): unscaled i64; DECIMAL(p > 18): ``offset << 32 | length`` pointing at a
  16-byte variable chunk holding ``BigInteger.toByteArray()`` (big-endian two's complement,
  minimal length) -- reserved even when the value is null (length 0);
* TIMESTAMP(p <= 3): epoch millis i64; TIMESTAMP(p > 3): ``offset << 32 | nanoOfMillisecond``
  pointing at an 8-byte chunk holding the epoch millis -- also reserved when null;
* STRING / BINARY of at most 7 bytes: inline, bytes at the start of the slot and
  ``0x80 | length`` in its last byte; longer: ``offset << 32 | length`` into the variable part
  (zero-padded to 8 bytes).
* null: the null bit, and a zero slot (except the reserved cases above).

Offsets are relative to the start of the ``BinaryRow`` (after the arity prefix). Values use
lakeskip's internal form (see :mod:`lakeskip.types`); MAP/ARRAY fields may only be null
(statistics carry null counts for them, never values).

Example:
    >>> from lakeskip.types import INT, STRING
    >>> data = serialize_row((7, "ab"), (INT, STRING))
    >>> data.hex()
    '00000002000000000000000007000000000000006162000000000082'
    >>> deserialize_row(data, (INT, STRING))
    (7, 'ab')
"""

from __future__ import annotations

import decimal
import struct
from collections.abc import Sequence
from typing import Any

from lakeskip.errors import CorruptMetadataError, TypeMismatchError
from lakeskip.types import DataType, TypeRoot

__all__ = [
    "EMPTY_ROW_BYTES",
    "deserialize_row",
    "null_bits_width",
    "serialize_row",
]

HEADER_BITS = 8
MAX_INLINE = 7
COMPACT_DECIMAL_PRECISION = 18
COMPACT_TIMESTAMP_PRECISION = 3
DECIMAL_CHUNK = 16
ROW_KIND_INSERT = 0

# Java's Decimal rounds HALF_UP; 38 digits exceed the default 28-digit context
_CTX = decimal.Context(prec=80, rounding=decimal.ROUND_HALF_UP)
_ARITY = struct.Struct(">i")
_I8 = struct.Struct("<b")
_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


def null_bits_width(arity: int) -> int:
    """Bytes of the header + null bit set for a row of ``arity`` fields.

    >>> null_bits_width(0), null_bits_width(56), null_bits_width(57)
    (8, 8, 16)
    """
    return ((arity + 63 + HEADER_BITS) // 64) * 8


def _round_up(n: int) -> int:
    return (n + 7) & ~7


def _precision(t: DataType, default: int) -> int:
    return t.precision if t.precision is not None else default


def _is_compact_decimal(t: DataType) -> bool:
    return _precision(t, 10) <= COMPACT_DECIMAL_PRECISION


def _is_compact_timestamp(t: DataType) -> bool:
    return _precision(t, 6) <= COMPACT_TIMESTAMP_PRECISION


def _unscaled(t: DataType, value: Any) -> int:
    if not isinstance(value, decimal.Decimal):
        value = decimal.Decimal(value)
    scale = t.scale or 0
    q = value.quantize(decimal.Decimal(1).scaleb(-scale, context=_CTX), context=_CTX)
    return int(q.scaleb(scale, context=_CTX))


def _java_big_integer_bytes(n: int) -> bytes:
    """``BigInteger.toByteArray()``: minimal big-endian two's complement, at least 1 byte."""
    bits = n.bit_length() if n >= 0 else (~n).bit_length()
    return n.to_bytes(bits // 8 + 1, "big", signed=True)


def serialize_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """Encode a row of internal-form values as Paimon serializes it into manifests.

    Args:
        values: one internal-form value (or ``None``) per field.
        types: the field types (nullability is ignored, as Paimon's stats rows do).

    Raises:
        TypeMismatchError: a value does not fit its type (or a MAP/ARRAY value is not null).
    """
    if len(values) != len(types):
        raise TypeMismatchError(f"row has {len(values)} values for {len(types)} fields")
    arity = len(types)
    fixed_size = null_bits_width(arity) + 8 * arity
    fixed = bytearray(fixed_size)
    fixed[0] = ROW_KIND_INSERT
    var = bytearray()

    def set_null(i: int) -> None:
        bit = i + HEADER_BITS
        fixed[bit // 8] |= 1 << (bit % 8)

    def var_chunk(data: bytes, size: int) -> int:
        offset = fixed_size + len(var)
        var.extend(data)
        var.extend(b"\x00" * (size - len(data)))
        return offset

    for i, (v, t) in enumerate(zip(values, types, strict=True)):
        slot = null_bits_width(arity) + 8 * i
        r = t.root
        try:
            if r is TypeRoot.DECIMAL and not _is_compact_decimal(t):
                if v is None:
                    set_null(i)
                    off = var_chunk(b"", DECIMAL_CHUNK)
                    _U64.pack_into(fixed, slot, off << 32)
                else:
                    raw = _java_big_integer_bytes(_unscaled(t, v))
                    if len(raw) > DECIMAL_CHUNK:
                        raise TypeMismatchError(f"{v} does not fit {t}")
                    off = var_chunk(raw, DECIMAL_CHUNK)
                    _U64.pack_into(fixed, slot, (off << 32) | len(raw))
                continue
            if t.is_timestamp and not _is_compact_timestamp(t):
                if v is None:
                    set_null(i)
                    off = var_chunk(b"", 8)
                    _U64.pack_into(fixed, slot, off << 32)
                else:
                    micros = v if t.timestamp_unit == "us" else v * 1000
                    millis, sub_micros = divmod(int(micros), 1000)
                    off = var_chunk(_I64.pack(millis), 8)
                    _U64.pack_into(fixed, slot, (off << 32) | (sub_micros * 1000))
                continue
            if v is None:
                set_null(i)
                continue
            if r in (TypeRoot.STRING, TypeRoot.BINARY):
                raw = v.encode("utf-8") if r is TypeRoot.STRING else bytes(v)
                if len(raw) <= MAX_INLINE:
                    fixed[slot : slot + len(raw)] = raw
                    fixed[slot + 7] = 0x80 | len(raw)
                else:
                    off = var_chunk(raw, _round_up(len(raw)))
                    _U64.pack_into(fixed, slot, (off << 32) | len(raw))
            elif r is TypeRoot.BOOLEAN:
                fixed[slot] = 1 if v else 0
            elif r is TypeRoot.TINYINT:
                _I8.pack_into(fixed, slot, v)
            elif r is TypeRoot.SMALLINT:
                _I16.pack_into(fixed, slot, v)
            elif r in (TypeRoot.INT, TypeRoot.DATE):
                _I32.pack_into(fixed, slot, v)
            elif r is TypeRoot.BIGINT:
                _I64.pack_into(fixed, slot, v)
            elif r is TypeRoot.FLOAT:
                _F32.pack_into(fixed, slot, v)
            elif r is TypeRoot.DOUBLE:
                _F64.pack_into(fixed, slot, v)
            elif r is TypeRoot.DECIMAL:
                _I64.pack_into(fixed, slot, _unscaled(t, v))
            elif t.is_timestamp:
                _I64.pack_into(fixed, slot, v)
            else:
                raise TypeMismatchError(f"BinaryRow cannot hold a non-null {t} value")
        except (struct.error, AttributeError, TypeError, decimal.InvalidOperation) as e:
            raise TypeMismatchError(f"cannot encode {v!r} as {t}: {e}") from e
    return _ARITY.pack(arity) + bytes(fixed) + bytes(var)


EMPTY_ROW_BYTES = serialize_row((), ())


def deserialize_row(data: bytes, types: Sequence[DataType]) -> tuple[Any, ...]:
    """Decode a serialized row (arity prefix + ``BinaryRow``) into internal-form values.

    Raises:
        CorruptMetadataError: the bytes do not hold a row of these types.
    """
    buf = memoryview(data)
    if len(buf) < 4:
        raise CorruptMetadataError(f"BinaryRow of {len(buf)} bytes has no arity")
    (arity,) = _ARITY.unpack_from(buf, 0)
    if arity != len(types):
        raise CorruptMetadataError(f"BinaryRow arity {arity} != {len(types)} expected fields")
    row = buf[4:]
    width = null_bits_width(arity)
    if len(row) < width + 8 * arity:
        raise CorruptMetadataError(
            f"BinaryRow of {len(row)} bytes is shorter than its fixed part ({width + 8 * arity})"
        )
    out: list[Any] = []
    for i, t in enumerate(types):
        bit = i + HEADER_BITS
        if row[bit // 8] & (1 << (bit % 8)):
            out.append(None)
            continue
        slot = width + 8 * i
        out.append(_read_field(row, slot, t))
    return tuple(out)


def _var_slice(row: memoryview, slot: int) -> tuple[int, int]:
    (word,) = _U64.unpack_from(row, slot)
    return word >> 32, word & 0xFFFFFFFF


def _read_var(row: memoryview, slot: int) -> bytes:
    (word,) = _U64.unpack_from(row, slot)
    if word & (1 << 63):
        length = (word >> 56) & 0x7F
        if length > MAX_INLINE:
            raise CorruptMetadataError(f"BinaryRow inline length {length} > 7 at byte {slot}")
        return bytes(row[slot : slot + length])
    off, length = word >> 32, word & 0xFFFFFFFF
    if off + length > len(row):
        raise CorruptMetadataError(
            f"BinaryRow variable data [{off}, {off + length}) beyond {len(row)} bytes"
        )
    return bytes(row[off : off + length])


def _read_field(row: memoryview, slot: int, t: DataType) -> Any:
    r = t.root
    if r is TypeRoot.STRING:
        raw = _read_var(row, slot)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptMetadataError(f"BinaryRow string is not UTF-8: {e}") from e
    if r is TypeRoot.BINARY:
        return _read_var(row, slot)
    if r is TypeRoot.BOOLEAN:
        return row[slot] != 0
    if r is TypeRoot.TINYINT:
        return _I8.unpack_from(row, slot)[0]
    if r is TypeRoot.SMALLINT:
        return _I16.unpack_from(row, slot)[0]
    if r in (TypeRoot.INT, TypeRoot.DATE):
        return _I32.unpack_from(row, slot)[0]
    if r is TypeRoot.BIGINT:
        return _I64.unpack_from(row, slot)[0]
    if r is TypeRoot.FLOAT:
        return _F32.unpack_from(row, slot)[0]
    if r is TypeRoot.DOUBLE:
        return _F64.unpack_from(row, slot)[0]
    if r is TypeRoot.DECIMAL:
        scale = t.scale or 0
        if _is_compact_decimal(t):
            unscaled = _I64.unpack_from(row, slot)[0]
        else:
            off, length = _var_slice(row, slot)
            if length == 0 or length > DECIMAL_CHUNK or off + length > len(row):
                raise CorruptMetadataError(f"BinaryRow decimal bytes ({off}, {length}) invalid")
            unscaled = int.from_bytes(row[off : off + length], "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-scale, context=_CTX)
    if t.is_timestamp:
        if _is_compact_timestamp(t):
            millis = _I64.unpack_from(row, slot)[0]
            return millis if t.timestamp_unit == "ms" else millis * 1000
        off, nanos = _var_slice(row, slot)
        if off + 8 > len(row) or nanos >= 1_000_000:
            raise CorruptMetadataError(f"BinaryRow timestamp ({off}, {nanos}) invalid")
        millis = _I64.unpack_from(row, off)[0]
        micros = millis * 1000 + nanos // 1000
        return micros if t.timestamp_unit == "us" else micros // 1000
    raise CorruptMetadataError(f"BinaryRow holds a non-null value of unsupported type {t}")
