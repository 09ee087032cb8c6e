"""Z-order (Morton) sort keys, byte-compatible with Paimon's ``ZIndexer``.

Paimon: ``paimon-core/.../sort/zorder/ZIndexer.java`` and ``utils/ZOrderByteUtils.java``
(unchanged since release-0.9.0). Every column contributes a fixed number of *ordered* bytes, and
the key is their bits interleaved MSB-first, round-robin over the columns::

    column bytes (ZOrderByteUtils), each big-endian, nulls = all zero bytes:
      TINYINT..BIGINT, DATE   8 bytes  (long) v ^ 0x8000000000000000
      TIMESTAMP[_LTZ]         8 bytes  epoch millis ^ 0x8000000000000000 (micros floored)
      FLOAT, DOUBLE           8 bytes  l = doubleToLongBits((double) v); l ^ ((l >> 31) | MIN)
      BOOLEAN                 8 bytes  0x81 00 .. 00 if true, else 00 .. 00
      DECIMAL                 8 bytes  unscaled BigInteger.toByteArray(), first 8 bytes,
                                       zero-filled on the right when shorter
      STRING, BINARY          V bytes  first V bytes of the UTF-8 / raw bytes, zero-filled

    interleave (ZOrderByteUtils.interleaveBits), V = var_length_contribution:
      for byte b = 0, 1, ...: for bit 7 .. 0: for each column c with width(c) > b:
          emit bit `bit` of byte b of column c
      key length = 8 * (#fixed columns) + V * (#string/binary columns)

Quirks reproduced on purpose:

* FLOAT/DOUBLE use ``l >> 31`` (an Iceberg-inherited slip for ``>> 63``): negative values are
  still ordered by their high word, but not exactly reversed; NaN is canonicalised first.
* DECIMAL bytes are the *minimal* two's complement bytes left-aligned, so they do not order
  decimals numerically across byte lengths; we follow Paimon for byte identity.
* ``var_length_contribution`` below 8 makes string columns shorter than the fixed ones; they
  drop out of the round robin once exhausted, exactly as Java does.

Paimon's Spark path (``SparkZOrderUDF``) differs from ``ZIndexer`` in ways that are not
byte-compatible with each other: it encodes strings with a ``CharsetEncoder`` (a multi-byte
character that does not fit is dropped rather than cut), casts TIMESTAMP to *seconds* and DATE
through a long cast, rejects DECIMAL, and caps the key at ``zorder.max-output-size``. We follow
``ZIndexer`` (the engine-neutral reference) and pin it with Java-generated vectors.

Example:
    >>> import pyarrow as pa
    >>> from lakeskip.types import INT
    >>> keys = zorder_keys([pa.array([1, None]), pa.array([2, -1])], [INT, INT])
    >>> [k.hex() for k in keys.to_pylist()]
    ['c0000000000000000000000000000006', '15555555555555555555555555555555']
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lakeskip.errors import InvalidArgumentError
from lakeskip.sort._columns import (
    CHUNK_ROWS,
    U8,
    binary_array_from_matrix,
    boolean_values,
    decimal_be,
    double_bits,
    long_values,
    longs_to_be_bytes,
    minimal_length,
    null_mask,
    prefix_matrix,
    prepare_columns,
    unsupported,
)
from lakeskip.types import DataType, TypeRoot

__all__ = [
    "DEFAULT_VAR_LENGTH_CONTRIBUTION",
    "PRIMITIVE_BUFFER_SIZE",
    "interleave_bits",
    "zorder_column_bytes",
    "zorder_key_size",
    "zorder_keys",
]

#: Bytes every fixed-width column contributes (``ZOrderByteUtils.PRIMITIVE_BUFFER_SIZE``).
PRIMITIVE_BUFFER_SIZE = 8
#: Paimon's default ``zorder.var-length-contribution``.
DEFAULT_VAR_LENGTH_CONTRIBUTION = 8

_SIGN = np.int64(-(2**63))
_VAR_ROOTS = frozenset({TypeRoot.STRING, TypeRoot.BINARY})
_LONG_ROOTS = frozenset(
    {
        TypeRoot.TINYINT,
        TypeRoot.SMALLINT,
        TypeRoot.INT,
        TypeRoot.BIGINT,
        TypeRoot.DATE,
        TypeRoot.TIMESTAMP,
        TypeRoot.TIMESTAMP_LTZ,
    }
)
_SUPPORTED = (
    _VAR_ROOTS
    | _LONG_ROOTS
    | {
        TypeRoot.FLOAT,
        TypeRoot.DOUBLE,
        TypeRoot.BOOLEAN,
        TypeRoot.DECIMAL,
    }
)


def _width(dtype: DataType, var_length_contribution: int) -> int:
    return var_length_contribution if dtype.root in _VAR_ROOTS else PRIMITIVE_BUFFER_SIZE


def zorder_key_size(types: Sequence[DataType], var_length_contribution: int = 8) -> int:
    """Length in bytes of every z-order key for these column types (``ZIndexer.size()``).

    Example:
        >>> from lakeskip.types import INT, STRING
        >>> zorder_key_size([INT, STRING], var_length_contribution=3)
        11
    """
    return sum(_width(t, var_length_contribution) for t in types)


def _decimal_bytes(arr: pa.Array) -> U8:
    be = decimal_be(arr)
    n, width = be.shape
    length = minimal_length(be)
    padded = np.concatenate([be, np.zeros((n, PRIMITIVE_BUFFER_SIZE), np.uint8)], axis=1)
    idx = (width - length)[:, None] + np.arange(PRIMITIVE_BUFFER_SIZE, dtype=np.int64)[None, :]
    return np.ascontiguousarray(np.take_along_axis(padded, idx, axis=1))


def zorder_column_bytes(
    column: pa.Array | pa.ChunkedArray, dtype: DataType, var_length_contribution: int = 8
) -> U8:
    """Paimon's ordered bytes of one column as an ``(n, width)`` uint8 matrix.

    Args:
        column: the column's values (nulls allowed).
        dtype: its lakeskip type.
        var_length_contribution: bytes kept from STRING/BINARY values.

    Raises:
        TypeMismatchError: a type ``ZIndexer`` cannot encode (MAP, ARRAY).

    Example:
        >>> import pyarrow as pa
        >>> from lakeskip.types import BIGINT
        >>> zorder_column_bytes(pa.array([-1, 0]), BIGINT).tolist()
        [[127, 255, 255, 255, 255, 255, 255, 255], [128, 0, 0, 0, 0, 0, 0, 0]]
    """
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    root = dtype.root
    n = len(arr)
    if root in _VAR_ROOTS:
        return prefix_matrix(arr, var_length_contribution)
    if root in _LONG_ROOTS:
        out = longs_to_be_bytes(long_values(arr, dtype) ^ _SIGN)
    elif root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        bits = double_bits(arr)
        out = longs_to_be_bytes(bits ^ ((bits >> np.int64(31)) | _SIGN))
    elif root == TypeRoot.BOOLEAN:
        out = np.zeros((n, PRIMITIVE_BUFFER_SIZE), dtype=np.uint8)
        out[boolean_values(arr), 0] = 0x81
    elif root == TypeRoot.DECIMAL:
        out = _decimal_bytes(arr)
    else:
        raise unsupported(dtype, "z-order")
    if arr.null_count:
        out[null_mask(arr)] = 0
    return out


def _segments(widths: Sequence[int]) -> list[tuple[int, int, list[int]]]:
    """Byte ranges ``[lo, hi)`` over which the set of columns still contributing is constant."""
    cuts = sorted({0, *widths})
    return [
        (lo, hi, [c for c, w in enumerate(widths) if w >= hi])
        for lo, hi in itertools.pairwise(cuts)
    ]


_MAX_SPREAD_COLUMNS = 8  # k spread bytes fill k * 8 <= 64 bits


def _spread_table(k: int) -> npt.NDArray[np.uint64]:
    """``table[b]`` has bit ``i`` of byte ``b`` at bit ``i * k``: k-1 zero bits between."""
    b = np.arange(256, dtype=np.uint64)
    out = np.zeros(256, dtype=np.uint64)
    for i in range(8):
        out |= ((b >> np.uint64(i)) & np.uint64(1)) << np.uint64(i * k)
    return out


_SPREAD = {k: _spread_table(k) for k in range(1, _MAX_SPREAD_COLUMNS + 1)}


def _interleave_spread(blocks: Sequence[U8]) -> U8:
    """Interleave k <= 8 ``(rows, nbytes)`` blocks: for each byte position the k bytes
    become k output bytes whose bits run MSB first, column by column (spread each byte with
    a 256-entry table, shift by the column's place, OR, write big-endian)."""
    k = len(blocks)
    rows, nbytes = blocks[0].shape
    table = _SPREAD[k]
    acc = np.zeros((rows, nbytes), dtype=np.uint64)
    for c, block in enumerate(blocks):
        acc |= table[block] << np.uint64(k - 1 - c)
    be = acc.astype(">u8").view(np.uint8).reshape(rows, nbytes, 8)[:, :, 8 - k :]
    return be.reshape(rows, nbytes * k)


def _interleave_unpacked(blocks: Sequence[U8], rows: int, nbytes: int) -> U8:
    """The general case through an explicit bit matrix (more than 8 columns)."""
    # (rows, |live|, bytes, 8 bits) -> byte-major, then bit, then column: Java's order
    block = np.stack(blocks, axis=1)
    bits = np.unpackbits(block, axis=2).reshape(rows, len(blocks), nbytes, 8)
    return np.packbits(bits.transpose(0, 2, 3, 1).reshape(rows, -1), axis=1)


def interleave_bits(matrices: Sequence[U8]) -> U8:
    """Interleave column byte matrices like ``ZOrderByteUtils.interleaveBits``.

    Args:
        matrices: one ``(n, width_c)`` uint8 matrix per column (widths may differ, each >= 1).

    Returns:
        ``(n, sum(width_c))`` uint8 matrix of keys.

    Example:
        >>> import numpy as np
        >>> a = np.array([[0xFF]], dtype=np.uint8)
        >>> b = np.array([[0x00, 0xFF]], dtype=np.uint8)
        >>> interleave_bits([a, b]).tolist()
        [[170, 170, 255]]
    """
    if not matrices:
        raise InvalidArgumentError("interleave_bits needs at least one column")
    widths = [m.shape[1] for m in matrices]
    if min(widths) < 1:
        raise InvalidArgumentError("every z-order column must contribute at least one byte")
    n = matrices[0].shape[0]
    out = np.empty((n, sum(widths)), dtype=np.uint8)
    segments = _segments(widths)
    for lo_row in range(0, n, CHUNK_ROWS):
        hi_row = min(n, lo_row + CHUNK_ROWS)
        rows = hi_row - lo_row
        col = 0
        for lo, hi, live in segments:
            blocks = [matrices[c][lo_row:hi_row, lo:hi] for c in live]
            if len(live) <= _MAX_SPREAD_COLUMNS:
                packed = _interleave_spread(blocks)
            else:
                packed = _interleave_unpacked(blocks, rows, hi - lo)
            out[lo_row:hi_row, col : col + packed.shape[1]] = packed
            col += packed.shape[1]
    return out


def zorder_keys(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
    var_length_contribution: int = DEFAULT_VAR_LENGTH_CONTRIBUTION,
) -> pa.BinaryArray:
    """Paimon z-order keys, one per row, byte-identical to ``ZIndexer.index``.

    Keys compare as unsigned bytes (how Spark orders ``BinaryType``), so sorting rows by key
    walks the Z curve. Null values encode as zero bytes, so the key itself is never null.

    Args:
        columns: the sort columns, all of the same length.
        types: their lakeskip types.
        var_length_contribution: bytes each STRING/BINARY column contributes
            (``zorder.var-length-contribution``, default 8).

    Returns:
        A ``pa.binary()`` array of keys of :func:`zorder_key_size` bytes each.

    Raises:
        InvalidArgumentError: no columns, mismatched lengths/types, or a contribution < 1.
        TypeMismatchError: a column type z-order cannot encode (MAP, ARRAY).
    """
    if var_length_contribution < 1:
        raise InvalidArgumentError(
            f"var_length_contribution must be >= 1, got {var_length_contribution}"
        )
    arrays, _ = prepare_columns(columns, types)
    for t in types:
        if t.root not in _SUPPORTED:
            raise unsupported(t, "z-order")
    matrices = [
        zorder_column_bytes(a, t, var_length_contribution)
        for a, t in zip(arrays, types, strict=True)
    ]
    return binary_array_from_matrix(interleave_bits(matrices))
