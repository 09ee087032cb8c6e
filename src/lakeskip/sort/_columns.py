"""Arrow column -> numpy helpers shared by the z-order and Hilbert key encoders.

Everything here works on whole columns at once (numpy/pyarrow), never per row. Null slots are
reported by :func:`null_mask`; the value helpers fill them with zeros and leave the encoders to
substitute their own null encoding.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.errors import InvalidArgumentError, TypeMismatchError
from lakeskip.types import DataType, TypeRoot

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
BOOL = npt.NDArray[np.bool_]

#: Java ``Double.doubleToLongBits`` collapses every NaN to this pattern.
CANONICAL_NAN_BITS = 0x7FF8000000000000

#: Rows per chunk for the bit-matrix work: keeps the temporaries cache-sized and the memory flat.
CHUNK_ROWS = 1 << 16

_MAX_BINARY_BYTES = 2**31 - 1


def prepare_columns(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]
) -> tuple[list[pa.Array], int]:
    """Combine chunks and check that columns and types line up.

    Returns:
        The columns as plain arrays and their common length.

    Raises:
        InvalidArgumentError: no columns, a count mismatch, or columns of different lengths.
    """
    if len(columns) == 0:
        raise InvalidArgumentError("sort keys need at least one column")
    if len(columns) != len(types):
        raise InvalidArgumentError(f"got {len(columns)} columns but {len(types)} types")
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    lengths = {len(a) for a in arrays}
    if len(lengths) != 1:
        raise InvalidArgumentError(f"sort key columns differ in length: {sorted(lengths)}")
    return arrays, lengths.pop()


def unsupported(dtype: DataType, what: str) -> TypeMismatchError:
    return TypeMismatchError(f"{what} does not support column type {dtype.root.value}")


def null_mask(arr: pa.Array) -> BOOL:
    """Boolean mask of the null slots."""
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=np.bool_)
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)


def _filled(arr: pa.Array, cast_to: pa.DataType) -> pa.Array:
    out = arr.cast(cast_to) if arr.type != cast_to else arr
    return out.fill_null(0) if out.null_count else out


def long_values(arr: pa.Array, dtype: DataType) -> I64:
    """The Java ``long`` Paimon derives for integer-like types (nulls as 0).

    TINYINT..BIGINT and DATE give the value itself; TIMESTAMP / TIMESTAMP_LTZ give epoch
    milliseconds, floored like Paimon's ``Timestamp.getMillisecond()`` (so -1 us is -1 ms).
    """
    root = dtype.root
    if pa.types.is_date32(arr.type):
        return np.asarray(_filled(arr, pa.int32()).to_numpy(), dtype=np.int64)
    if pa.types.is_date64(arr.type):
        millis = np.asarray(_filled(arr, pa.int64()).to_numpy(), dtype=np.int64)
        return np.floor_divide(millis, np.int64(86_400_000))
    if dtype.is_integer or root == TypeRoot.DATE:
        return np.asarray(_filled(arr, pa.int64()).to_numpy(), dtype=np.int64)
    if dtype.is_timestamp:
        if not pa.types.is_timestamp(arr.type):
            raise TypeMismatchError(f"expected an Arrow timestamp column, got {arr.type}")
        raw = np.asarray(_filled(arr, pa.int64()).to_numpy(), dtype=np.int64)
        unit = arr.type.unit
        if unit == "s":
            return raw * np.int64(1000)
        divisor = {"ms": 1, "us": 1000, "ns": 1_000_000}[unit]
        return raw if divisor == 1 else np.floor_divide(raw, np.int64(divisor))
    raise TypeMismatchError(f"not an integer-like type: {root.value}")


def double_bits(arr: pa.Array) -> I64:
    """Java ``Double.doubleToLongBits((double) v)``: FLOAT widened, every NaN canonical."""
    values = np.asarray(_filled(arr, pa.float64()).to_numpy(), dtype=np.float64)
    bits = values.view(np.int64).copy()
    bits[np.isnan(values)] = CANONICAL_NAN_BITS
    return bits


def boolean_values(arr: pa.Array) -> BOOL:
    """True slots (nulls read as False)."""
    filled = arr.fill_null(False) if arr.null_count else arr
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.bool_)


def _binary_parts(arr: pa.Array) -> tuple[I64, I64, U8]:
    """(starts, lengths, data) of a string/binary column; null slots get length 0."""
    t = arr.type
    if not pa.types.is_large_binary(t):
        castable = (
            pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_string_view(t)
            or pa.types.is_binary(t)
            or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t)
        )
        if not castable:
            raise TypeMismatchError(f"expected a string/binary Arrow column, got {t}")
        arr = arr.cast(pa.large_binary())
    n = len(arr)
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data_buf = buffers[2]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8)
        if data_buf is not None and data_buf.size
        else np.zeros(0, np.uint8)
    )
    starts = offsets[:-1].astype(np.int64)
    lengths = np.diff(offsets).astype(np.int64)
    if arr.null_count:
        lengths[null_mask(arr)] = 0
    return starts, lengths, data


def prefix_matrix(arr: pa.Array, width: int, *, right_align: bool = False) -> U8:
    """First ``width`` bytes of every value as an ``(n, width)`` matrix, zero-filled.

    Left-aligned (zero padding on the right) like Paimon's ``byteTruncateOrFill``; with
    ``right_align`` the kept bytes end at the last column (zero padding on the left) like
    ``ConvertBinaryUtil.paddingTo8Byte``. Null slots are all zeros.
    """
    starts, lengths, data = _binary_parts(arr)
    n = len(starts)
    kept = np.minimum(lengths, width)
    cols = np.arange(width, dtype=np.int64)
    if right_align:
        rel = cols[None, :] - (width - kept)[:, None]
    else:
        rel = np.broadcast_to(cols[None, :], (n, width))
    valid = (rel >= 0) & (rel < kept[:, None])
    if data.size == 0:
        return np.zeros((n, width), dtype=np.uint8)
    idx = np.where(valid, starts[:, None] + rel, 0)
    out = data[idx]
    out[~valid] = 0
    return np.ascontiguousarray(out, dtype=np.uint8)


def decimal_be(arr: pa.Array) -> U8:
    """Unscaled decimal values as big-endian two's complement rows (16 or 32 bytes wide)."""
    if not pa.types.is_decimal(arr.type):
        raise TypeMismatchError(f"expected an Arrow decimal column, got {arr.type}")
    width = arr.type.byte_width
    buf = arr.buffers()[1]
    raw = np.frombuffer(buf, dtype=np.uint8)[arr.offset * width : (arr.offset + len(arr)) * width]
    le = raw.reshape(len(arr), width)
    be = np.ascontiguousarray(le[:, ::-1])
    if arr.null_count:
        be[null_mask(arr)] = 0
    return be


def minimal_length(be: U8) -> I64:
    """Length of Java ``BigInteger.toByteArray()`` for big-endian two's complement rows.

    That is ``bitLength // 8 + 1`` where ``bitLength`` ignores the sign (for negatives it is the
    bit length of ``~v``).
    """
    n, width = be.shape
    negative = (be[:, 0] & 0x80) != 0 if width else np.zeros(n, np.bool_)
    mag = np.where(negative[:, None], ~be, be).astype(np.uint8)
    nonzero = mag != 0
    any_nz = nonzero.any(axis=1)
    first = np.argmax(nonzero, axis=1)
    top = mag[np.arange(n), first]
    top_bits = np.zeros(n, dtype=np.int64)
    for b in range(8):  # bit length of one byte: 8 vectorised steps, not per row
        top_bits = np.where(top >= (1 << b), b + 1, top_bits)
    bit_length = np.where(any_nz, (width - first - 1) * 8 + top_bits, 0)
    return (bit_length // 8 + 1).astype(np.int64)


def longs_to_be_bytes(values: U64 | I64) -> U8:
    """``(n,)`` 64-bit integers -> ``(n, 8)`` big-endian bytes."""
    return np.ascontiguousarray(values.astype(">u8").view(np.uint8).reshape(len(values), 8))


def binary_array_from_matrix(matrix: U8) -> pa.BinaryArray:
    """Fixed-width rows -> a ``pa.binary()`` array without nulls (one buffer, no copies per row)."""
    n, width = matrix.shape
    if n * width > _MAX_BINARY_BYTES:
        raise InvalidArgumentError(
            f"{n} keys of {width} bytes exceed the 2 GiB limit of one binary array; "
            "encode in batches"
        )
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    data = np.ascontiguousarray(matrix, dtype=np.uint8)
    arr = pa.Array.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())]
    )
    assert isinstance(arr, pa.BinaryArray)
    return arr


def truncate_toward_zero_long(arr: pa.Array) -> I64:
    """Java ``BigDecimal.longValue()``: drop the fraction, keep the low 64 bits (nulls as 0)."""
    whole = pa.decimal256(76, 0) if pa.types.is_decimal256(arr.type) else pa.decimal128(38, 0)
    # safe=False rescaling truncates toward zero, as BigDecimal.longValue() does
    scaled = pc.cast(arr, whole, safe=False) if arr.type.scale else arr
    be = decimal_be(scaled)
    return np.ascontiguousarray(be[:, -8:]).view(">i8").reshape(len(arr)).astype(np.int64)
