"""Hilbert-curve sort keys, byte-compatible with Paimon's ``HilbertIndexer``.

Paimon: ``paimon-common/.../sort/hilbert/HilbertIndexer.java`` and
``utils/ConvertBinaryUtil.java``; the curve is davidmoten ``hilbert-curve`` 0.2.2
(``HilbertCurve.bits(63).dimensions(n).index(longs)``, John Skilling's transform)::

    per column, one Java long (nulls -> Long.MAX_VALUE):
      SMALLINT, INT, BIGINT, DATE   the value
      TINYINT                       the byte read unsigned (0 .. 255)
      FLOAT, DOUBLE                 Double.doubleToLongBits((double) v)   (canonical NaN)
      TIMESTAMP[_LTZ]               epoch millis (micros floored)
      DECIMAL                       BigDecimal.longValue(): fraction dropped, low 64 bits
      STRING, BINARY                first 8 bytes big-endian, shorter values left-padded
      BOOLEAN                       true -> Long.MAX_VALUE, false -> 0

    index (n >= 2 dimensions, 63 bits each; bit 63 of every long is ignored):
      Skilling AxesToTranspose over X[0..n-1], then the transposed bits read MSB-first:
      bit 62 of X[0], bit 62 of X[1], ..., bit 62 of X[n-1], bit 61 of X[0], ...
      -> a non-negative integer H of 63*n bits

    key = BigInteger(H).toByteArray()  (minimal, with a sign bit: bitLength // 8 + 1 bytes)
          left-padded with zeros to KEY_BYTES = 63 bytes, or cut to its FIRST 63 bytes if longer

The last step is Paimon's own quirk (``BITS_NUM`` reused as a byte count): up to 7 columns the
key is simply H in 63 big-endian bytes; with 8 columns a key whose top bit is set is 64 bytes
long and loses its last byte; from 9 columns on keys are prefixes. We reproduce it for byte
identity; sorting stays consistent with Paimon's.

Example:
    >>> import pyarrow as pa
    >>> from lakeskip.types import INT
    >>> keys = hilbert_keys([pa.array([0, 1]), pa.array([0, 1])], [INT, INT])
    >>> [k[-1] for k in keys.to_pylist()]
    [0, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakeskip.errors import InvalidArgumentError
from lakeskip.sort._columns import (
    CHUNK_ROWS,
    I64,
    U8,
    U64,
    binary_array_from_matrix,
    boolean_values,
    double_bits,
    long_values,
    longs_to_be_bytes,
    null_mask,
    prefix_matrix,
    prepare_columns,
    truncate_toward_zero_long,
    unsupported,
)
from lakeskip.types import DataType, TypeRoot

__all__ = [
    "BITS_PER_DIMENSION",
    "KEY_BYTES",
    "hilbert_column_longs",
    "hilbert_index_matrix",
    "hilbert_keys",
    "hilbert_transpose",
]

#: Bits per dimension of Paimon's curve (``HilbertIndexer.BITS_NUM``).
BITS_PER_DIMENSION = 63
#: Key length in bytes (Paimon pads/cuts ``toByteArray()`` to ``BITS_NUM`` bytes).
KEY_BYTES = 63
#: What Paimon feeds the curve for a null (``HilbertIndexer.PRIMITIVE_EMPTY``).
NULL_LONG = np.int64(2**63 - 1)

_MASK63 = np.uint64(2**63 - 1)
_INT_ROOTS = frozenset(
    {
        TypeRoot.SMALLINT,
        TypeRoot.INT,
        TypeRoot.BIGINT,
        TypeRoot.DATE,
        TypeRoot.TIMESTAMP,
        TypeRoot.TIMESTAMP_LTZ,
    }
)
_SUPPORTED = _INT_ROOTS | {
    TypeRoot.TINYINT,
    TypeRoot.FLOAT,
    TypeRoot.DOUBLE,
    TypeRoot.DECIMAL,
    TypeRoot.STRING,
    TypeRoot.BINARY,
    TypeRoot.BOOLEAN,
}


def hilbert_column_longs(column: pa.Array | pa.ChunkedArray, dtype: DataType) -> I64:
    """The Java long ``HilbertIndexer`` derives for every value of one column.

    Raises:
        TypeMismatchError: a type Paimon cannot put on the curve (MAP, ARRAY).

    Example:
        >>> import pyarrow as pa
        >>> from lakeskip.types import STRING, TINYINT
        >>> hilbert_column_longs(pa.array(["ab", None]), STRING).tolist()
        [24930, 9223372036854775807]
        >>> hilbert_column_longs(pa.array([-1], pa.int8()), TINYINT).tolist()
        [255]
    """
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    root = dtype.root
    if root in _INT_ROOTS:
        out = long_values(arr, dtype)
    elif root == TypeRoot.TINYINT:
        out = long_values(arr, dtype) & np.int64(0xFF)
    elif root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        out = double_bits(arr)
    elif root == TypeRoot.DECIMAL:
        out = truncate_toward_zero_long(arr)
    elif root in (TypeRoot.STRING, TypeRoot.BINARY):
        matrix = prefix_matrix(arr, 8, right_align=True)
        out = matrix.view(">i8").reshape(len(arr)).astype(np.int64)
    elif root == TypeRoot.BOOLEAN:
        out = np.where(boolean_values(arr), NULL_LONG, np.int64(0)).astype(np.int64)
    else:
        raise unsupported(dtype, "hilbert")
    if arr.null_count:
        out = out.copy()
        out[null_mask(arr)] = NULL_LONG
    return np.ascontiguousarray(out, dtype=np.int64)


def hilbert_transpose(points: U64, bits: int = BITS_PER_DIMENSION) -> U64:
    """Skilling's AxesToTranspose, vectorised over rows.

    Args:
        points: ``(d, n)`` uint64 coordinates, one row per dimension (only the low ``bits``
            bits matter; higher bits are masked off, which is what Java's result amounts to).
        bits: bits per dimension, 1..63.

    Returns:
        ``(d, n)`` transposed Hilbert index (a new array).

    Example:
        >>> import numpy as np
        >>> hilbert_transpose(np.array([[0, 0, 1, 1], [0, 1, 1, 0]], np.uint64), bits=1).tolist()
        [[0, 0, 1, 1], [0, 1, 0, 1]]
    """
    if not 1 <= bits <= 63:
        raise InvalidArgumentError(f"bits must be in 1..63, got {bits}")
    x = np.array(points, dtype=np.uint64, copy=True) & np.uint64((1 << bits) - 1)
    d = x.shape[0]
    x0 = x[0]
    t = np.empty_like(x0)
    m = np.empty_like(x0)
    one = np.uint64(1)
    # Inverse undo: q = 2^(bits-1) .. 2; p = q - 1. Branch-free: m is all-ones where bit q set.
    for b in range(bits - 1, 0, -1):
        p = np.uint64((1 << b) - 1)
        shift = np.uint64(b)
        for i in range(d):
            xi = x[i]
            np.right_shift(xi, shift, out=m)
            np.bitwise_and(m, one, out=m)
            np.negative(m, out=m)  # 0 or 0xFFFF...: uint64 wraps
            if i == 0:
                np.bitwise_and(m, p, out=m)
                np.bitwise_xor(x0, m, out=x0)
                continue
            # t = (x0 ^ xi) & p & ~m ;  x0 ^= (p & m) | t ;  xi ^= t
            np.bitwise_xor(x0, xi, out=t)
            np.bitwise_and(t, p, out=t)
            np.bitwise_and(t, ~m, out=t)
            np.bitwise_and(m, p, out=m)
            np.bitwise_or(m, t, out=m)
            np.bitwise_xor(x0, m, out=x0)
            np.bitwise_xor(xi, t, out=xi)
    # Gray encode
    for i in range(1, d):
        np.bitwise_xor(x[i], x[i - 1], out=x[i])
    # t = XOR of (q - 1) over the set bits q > 1 of x[d-1]: a suffix-XOR of its bits above 0
    z = (x[d - 1] & ~one) >> one
    for s in (1, 2, 4, 8, 16, 32):
        z ^= z >> np.uint64(s)
    x ^= z[None, :]
    return x


def hilbert_index_matrix(transposed: U64, bits: int = BITS_PER_DIMENSION) -> U8:
    """Paimon's key bytes from a transposed index: ``toByteArray()`` then pad/cut to 63 bytes.

    Args:
        transposed: ``(d, n)`` transposed index from :func:`hilbert_transpose`.
        bits: bits per dimension (63 for Paimon).

    Returns:
        ``(n, KEY_BYTES)`` uint8 matrix.
    """
    d, n = transposed.shape
    total_bits = bits * d
    value_bytes = (total_bits + 7) // 8
    pad = value_bytes * 8 - total_bits
    # bits of every dimension, MSB first, without the unused high bits: (n, d, bits)
    be = longs_to_be_bytes(np.ascontiguousarray(transposed.T).reshape(-1)).reshape(n, d * 8)
    per_dim = np.unpackbits(be, axis=1).reshape(n, d, 64)[:, :, 64 - bits :]
    # H = the per-dimension bits read bit-major, right-aligned in value_bytes bytes
    index_bits = np.empty((n, value_bytes * 8), dtype=np.uint8)
    index_bits[:, :pad] = 0
    index_bits[:, pad:].reshape(n, bits, d)[...] = per_dim.transpose(0, 2, 1)
    value = np.packbits(index_bits, axis=1)  # (n, value_bytes), big-endian H
    if value_bytes < KEY_BYTES:  # toByteArray() has at most value_bytes + 1 <= 63 bytes
        out = np.zeros((n, KEY_BYTES), dtype=np.uint8)
        out[:, KEY_BYTES - value_bytes :] = value
        return out
    # toByteArray() may be longer than 63 bytes: Paimon keeps its first 63 bytes
    width = value_bytes + 1
    matrix = np.zeros((n, width), dtype=np.uint8)
    matrix[:, 1:] = value
    nonzero = index_bits.any(axis=1)
    bit_length = np.where(nonzero, value_bytes * 8 - np.argmax(index_bits, axis=1), 0)
    length = bit_length // 8 + 1  # BigInteger.toByteArray() of a non-negative value
    start = width - np.maximum(length, KEY_BYTES)
    idx = start[:, None] + np.arange(KEY_BYTES, dtype=np.int64)[None, :]
    return np.ascontiguousarray(np.take_along_axis(matrix, idx, axis=1))


def hilbert_keys(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]
) -> pa.BinaryArray:
    """Paimon Hilbert keys, one per row, byte-identical to ``HilbertIndexer.index``.

    Keys compare as unsigned bytes, so sorting rows by key walks the Hilbert curve.

    Args:
        columns: two or more sort columns of the same length.
        types: their lakeskip types.

    Returns:
        A ``pa.binary()`` array of 63-byte keys (never null).

    Raises:
        InvalidArgumentError: fewer than two columns, or mismatched lengths/types.
        TypeMismatchError: a column type Paimon cannot put on the curve (MAP, ARRAY).
    """
    if len(columns) < 2:
        raise InvalidArgumentError(f"Hilbert sort needs at least two columns, got {len(columns)}")
    arrays, n = prepare_columns(columns, types)
    for t in types:
        if t.root not in _SUPPORTED:
            raise unsupported(t, "hilbert")
    longs = np.stack([hilbert_column_longs(a, t) for a, t in zip(arrays, types, strict=True)]).view(
        np.uint64
    )
    out = np.empty((n, KEY_BYTES), dtype=np.uint8)
    for lo in range(0, n, CHUNK_ROWS):
        hi = min(n, lo + CHUNK_ROWS)
        out[lo:hi] = hilbert_index_matrix(hilbert_transpose(longs[:, lo:hi] & _MASK63))
    return binary_array_from_matrix(out)
