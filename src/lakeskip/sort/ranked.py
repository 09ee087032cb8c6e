"""Rank-normalised curve keys: every column gets an equal share of the curve's bits.

Paimon's z-order interleaves each column's raw ordered bytes, so the column with the widest
range owns every leading bit: a key up to 6,000,000 beside a day number over 2,500 days
leaves the days unclustered (every file spans all of them). Delta (``range_partition_id``)
and Hudi (sample-based) first map each column to its *rank* among the boundaries of a
sample of the data, then interleave the ranks. This module does the same::

    sample (bounded, drawn in tasks)  ->  per column: up to MAX_RANKS - 1 boundaries
                                          (quantiles of the sample, ties merged)
    every value                       ->  r = number of boundaries <= value   (0 .. B)
    level                             ->  null: 0, value: r + 1         (B + 2 levels)
    coordinate (RANK_BITS bits)       ->  level * 2**RANK_BITS // (B + 2)
    key                               ->  z-order: coordinates' bits interleaved MSB first
                                          Hilbert: Skilling's transform of the coordinates

Levels are spread over the whole coordinate range, so a column with three distinct values
still splits the curve at its top bits. Values are compared in an order-preserving byte
encoding (:func:`ordered_matrix`): integers, dates and timestamps by value, floats by
IEEE total order (NaN last), decimals by unscaled value, strings and binaries by their first
``prefix`` bytes (unsigned), booleans false < true.

Keys are short (2 bytes per column for z-order, ``ceil(2 * columns)`` bytes for Hilbert)
and compare as unsigned bytes, like Paimon's. They are *not* Paimon's keys: the table option
``sort.curve-keys = paimon`` keeps Paimon's raw-byte curve (:mod:`lakeskip.sort.zorder`,
:mod:`lakeskip.sort.hilbert`) for users who want its exact layout.

Example:
    >>> import pyarrow as pa
    >>> from lakeskip.types import BIGINT, INT
    >>> big, small = pa.array([0, 5_000_000, 0, 5_000_000]), pa.array([0, 0, 9, 9])
    >>> bounds = column_bounds([big, small], [BIGINT, INT])
    >>> [k.hex() for k in ranked_keys([big, small], [BIGINT, INT], bounds, "zorder").to_pylist()]
    ['c0000000', 'e0000000', 'd0000000', 'f0000000']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
    null_mask,
    prefix_matrix,
    prepare_columns,
    unsupported,
)
from lakeskip.sort.hilbert import hilbert_transpose
from lakeskip.sort.zorder import interleave_bits
from lakeskip.types import DataType, TypeRoot

__all__ = [
    "CURVE_KEYS",
    "MAX_RANKS",
    "PAIMON_KEYS",
    "RANK_BITS",
    "RANK_KEYS",
    "SAMPLE_ROWS",
    "ColumnBounds",
    "column_bounds",
    "column_levels",
    "ordered_matrix",
    "ranked_keys",
    "sample_rows",
]

#: ``sort.curve-keys`` values: ``rank`` (this module, default) or ``paimon`` (raw bytes).
RANK_KEYS = "rank"
PAIMON_KEYS = "paimon"
CURVE_KEYS = (RANK_KEYS, PAIMON_KEYS)
#: Bits of every column's coordinate on the curve.
RANK_BITS = 16
#: Most distinct ranks a column gets (boundaries + 1); finer than any file layout needs.
MAX_RANKS = 4096
#: Rows of the sample the boundaries are drawn from (per sort partition), about 64 per rank.
SAMPLE_ROWS = 64 * MAX_RANKS

_SIGN = np.int64(-(2**63))
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
_VAR_ROOTS = frozenset({TypeRoot.STRING, TypeRoot.BINARY})


def ordered_matrix(column: pa.Array | pa.ChunkedArray, dtype: DataType, prefix: int = 8) -> U8:
    """Order-preserving big-endian bytes of every value (``(n, width)``; nulls all zero).

    Rows compare as unsigned bytes in the column's own order. ``prefix``: bytes kept of a
    STRING/BINARY value.

    Raises:
        TypeMismatchError: a nested type.

    Example:
        >>> import pyarrow as pa
        >>> from lakeskip.types import DOUBLE
        >>> m = ordered_matrix(pa.array([-2.0, -1.0, 0.0, float("nan")]), DOUBLE)
        >>> sorted(range(4), key=lambda i: bytes(m[i]))
        [0, 1, 2, 3]
    """
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    root = dtype.root
    if root in _VAR_ROOTS:
        return prefix_matrix(arr, prefix)
    if root in _LONG_ROOTS:
        if dtype.is_timestamp and pa.types.is_timestamp(arr.type):
            # microseconds whatever the Arrow unit (Spark's batches and Parquet's may differ)
            raw = np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)
            unit = arr.type.unit
            if unit in ("s", "ms"):
                raw = raw * np.int64(1_000_000 if unit == "s" else 1000)
            elif unit == "ns":
                raw = np.floor_divide(raw, np.int64(1000))
        else:
            raw = long_values(arr, dtype)
        out = longs_to_be_bytes(raw ^ _SIGN)
    elif root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        bits = double_bits(arr)  # IEEE total order: flip all bits of negatives, the sign of others
        out = longs_to_be_bytes(bits ^ ((bits >> np.int64(63)) | _SIGN))
    elif root == TypeRoot.BOOLEAN:
        out = boolean_values(arr).astype(np.uint8).reshape(len(arr), 1)
    elif root == TypeRoot.DECIMAL:
        out = decimal_be(arr)  # one scale per column: unscaled two's complement orders it
        out[:, 0] ^= 0x80
    else:
        raise unsupported(dtype, "curve sort")
    if arr.null_count:
        out[null_mask(arr)] = 0
    return out


def _sortable(matrix: U8) -> npt.NDArray[np.generic]:
    """Rows as a 1-D array numpy compares like the bytes (uint64 for 8-byte rows)."""
    n, width = matrix.shape
    if width == 8:
        return np.ascontiguousarray(matrix).view(">u8").reshape(n).astype(np.uint64)
    return np.ascontiguousarray(matrix).view(f"S{width}").reshape(n)


@dataclass(frozen=True, slots=True)
class ColumnBounds:
    """One column's sample boundaries as fixed-width ordered bytes (picklable, small)."""

    width: int
    data: bytes  # len(boundaries) * width bytes, ascending, distinct
    prefix: int = 8  # bytes kept of a STRING/BINARY value

    @property
    def count(self) -> int:
        return len(self.data) // self.width if self.width else 0

    def values(self) -> npt.NDArray[np.generic]:
        matrix = np.frombuffer(self.data, dtype=np.uint8).reshape(self.count, self.width)
        return _sortable(matrix)


def _bounds_of(matrix: U8, prefix: int, max_ranks: int) -> ColumnBounds:
    width = matrix.shape[1]
    ordered = np.sort(_sortable(matrix)) if len(matrix) else _sortable(matrix)
    distinct = np.unique(ordered)
    if len(distinct) <= max_ranks - 1:
        picks = distinct
    else:
        m = len(ordered)
        picks = np.unique(ordered[(np.arange(1, max_ranks, dtype=np.int64) * m) // max_ranks])
    if picks.dtype == np.uint64:
        data = picks.astype(">u8").tobytes()
    else:  # numpy 'S' strips trailing NULs on item access, never in the raw buffer
        data = np.ascontiguousarray(picks).tobytes()
    return ColumnBounds(width, data, prefix)


def column_bounds(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
    prefix: int = 8,
    max_ranks: int = MAX_RANKS,
) -> tuple[ColumnBounds, ...]:
    """Every column's rank boundaries from a sample of its values (nulls ignored).

    Args:
        columns: the sample (a few hundred thousand rows at most: it is sorted on one core).
        types: the columns' lakeskip types.
        prefix: bytes of a STRING/BINARY value that count.
        max_ranks: the most ranks a column gets (at most ``2**RANK_BITS - 1``).

    Example:
        >>> import pyarrow as pa
        >>> from lakeskip.types import INT
        >>> column_bounds([pa.array([3, 1, None, 3])], [INT])[0].count
        2
    """
    if not 2 <= max_ranks < 2**RANK_BITS:
        raise InvalidArgumentError(f"max_ranks must be in 2..{2**RANK_BITS - 1}, got {max_ranks}")
    arrays, _ = prepare_columns(columns, types)
    out = []
    for arr, t in zip(arrays, types, strict=True):
        matrix = ordered_matrix(arr, t, prefix)
        if arr.null_count:
            matrix = matrix[~null_mask(arr)]
        out.append(_bounds_of(matrix, prefix, max_ranks))
    return tuple(out)


def column_levels(
    column: pa.Array | pa.ChunkedArray, dtype: DataType, bounds: ColumnBounds
) -> npt.NDArray[np.uint64]:
    """Every value's coordinate on the curve: its rank level spread over ``RANK_BITS`` bits.

    Example:
        >>> import pyarrow as pa
        >>> from lakeskip.types import INT
        >>> b = column_bounds([pa.array([10, 20, 30])], [INT])[0]
        >>> column_levels(pa.array([None, 5, 10, 25, 99]), INT, b).tolist()
        [0, 13107, 26214, 39321, 52428]
    """
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    values = _sortable(ordered_matrix(arr, dtype, bounds.prefix))
    edges = bounds.values()
    if values.dtype != edges.dtype:  # both sides come from the same encoding of one type
        raise InvalidArgumentError("rank boundaries do not match the column's type")
    rank = np.searchsorted(edges, values, side="right").astype(np.uint64) + np.uint64(1)
    if arr.null_count:
        rank[null_mask(arr)] = 0
    levels = np.uint64(bounds.count + 2)
    return (rank << np.uint64(RANK_BITS)) // levels


def _hilbert_bytes(coords: npt.NDArray[np.uint64]) -> U8:
    """Transposed Hilbert index of ``(d, n)`` RANK_BITS-bit coordinates as big-endian bytes."""
    d, n = coords.shape
    t = hilbert_transpose(coords, bits=RANK_BITS)
    be = np.ascontiguousarray(t.astype(">u2").T).view(np.uint8).reshape(n, d * 2)
    bits = np.unpackbits(be, axis=1).reshape(n, d, 2 * 8)  # (n, d, RANK_BITS) MSB first
    return np.packbits(bits.transpose(0, 2, 1).reshape(n, d * RANK_BITS), axis=1)


def ranked_keys(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
    bounds: Sequence[ColumnBounds],
    strategy: str,
) -> pa.BinaryArray:
    """Rank-normalised z-order or Hilbert keys (fixed width, compare as unsigned bytes).

    Args:
        columns: the sort columns, all of the same length.
        types: their lakeskip types.
        bounds: from :func:`column_bounds` on a sample of the same columns.
        strategy: ``zorder`` or ``hilbert``.

    Raises:
        InvalidArgumentError: mismatched columns/bounds, an unknown strategy.
        TypeMismatchError: a nested column type.
    """
    arrays, n = prepare_columns(columns, types)
    if len(bounds) != len(arrays):
        raise InvalidArgumentError(f"got {len(arrays)} columns but {len(bounds)} bounds")
    if strategy not in ("zorder", "hilbert"):
        raise InvalidArgumentError(f"no curve key for strategy {strategy!r}")
    coords = np.stack(
        [column_levels(a, t, b) for a, t, b in zip(arrays, types, bounds, strict=True)]
    )
    d = len(arrays)
    if strategy == "zorder" or d == 1:
        matrices = [
            np.ascontiguousarray(c.astype(">u2")).view(np.uint8).reshape(n, 2) for c in coords
        ]
        return binary_array_from_matrix(interleave_bits(matrices))
    out = np.empty((n, (d * RANK_BITS + 7) // 8), dtype=np.uint8)
    for lo in range(0, n, CHUNK_ROWS):
        hi = min(n, lo + CHUNK_ROWS)
        out[lo:hi] = _hilbert_bytes(coords[:, lo:hi])
    return binary_array_from_matrix(out)


def sample_rows(num_rows: int, wanted: int, seed: int = 0) -> npt.NDArray[np.int64]:
    """Sorted row indexes of a uniform sample of ``min(wanted, num_rows)`` rows
    (deterministic for a seed).

    >>> sample_rows(5, 10).tolist()
    [0, 1, 2, 3, 4]
    >>> len(sample_rows(1000, 10))
    10
    """
    if wanted >= num_rows:
        return np.arange(num_rows, dtype=np.int64)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(num_rows, size=max(0, wanted), replace=False)).astype(np.int64)
