"""Paimon's fixed-bucket function: which ``bucket-<n>/`` a row of a bucketed table lands in.

Paimon (``FixedBucketRowKeyExtractor``) projects the ``bucket-key`` columns of a row into a
``BinaryRow`` (see :mod:`lakeskip.catalog.format.binary_row`) and hashes its bytes::

    hash   = MurmurHashUtils.hashBytesByWords(row bytes)   # 32-bit murmur3, seed 42, by words
    bucket = Math.abs(hash % numBuckets)                    # Java's truncating remainder

The row bytes are the ``BinaryRow`` without the arity prefix a manifest adds; their length is
a multiple of 8. Keys of fixed-width types, STRING and BINARY are laid out for whole Arrow
columns at once with numpy (strings of more than 7 bytes go to the variable part, so rows
differ in length: the hash walks the rows sorted by length); keys with DECIMAL(p > 18) or
TIMESTAMP(p > 3) columns are serialised row by row. Checked against Paimon
0.9.0's own extractor (``tests/golden/java/buckets.json``).

Example:
    >>> import pyarrow as pa
    >>> from lakeskip.types import INT
    >>> bucket_ids([pa.array([0, 42, None], pa.int32())], (INT,), 8).tolist()
    [3, 5, 0]
    >>> row_hash((42,), (INT,))
    907821237
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lakeskip.catalog.format.binary_row import MAX_INLINE, null_bits_width, serialize_row
from lakeskip.errors import InvalidOptionError
from lakeskip.types import DataType, RowType, TypeRoot

__all__ = [
    "BucketSpec",
    "bucket_ids",
    "bucket_of",
    "bucket_spec",
    "murmur_words",
    "row_hash",
]

BUCKET = "bucket"
BUCKET_KEY = "bucket-key"
SEED = 42
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_M5 = np.uint32(5)
_N1 = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)

# types whose value a bucket-key equality can be turned into the writer's bytes exactly
PRUNABLE_ROOTS = frozenset(
    {
        TypeRoot.BOOLEAN,
        TypeRoot.TINYINT,
        TypeRoot.SMALLINT,
        TypeRoot.INT,
        TypeRoot.BIGINT,
        TypeRoot.DATE,
        TypeRoot.STRING,
        TypeRoot.DECIMAL,
    }
)
_FIXED_WIDTH = {
    TypeRoot.BOOLEAN: (np.uint8, 1),
    TypeRoot.TINYINT: (np.int8, 1),
    TypeRoot.SMALLINT: (np.int16, 2),
    TypeRoot.INT: (np.int32, 4),
    TypeRoot.DATE: (np.int32, 4),
    TypeRoot.BIGINT: (np.int64, 8),
    TypeRoot.FLOAT: (np.float32, 4),
    TypeRoot.DOUBLE: (np.float64, 8),
}


@dataclass(frozen=True, slots=True)
class BucketSpec:
    """A fixed-bucket table's ``bucket`` count and ``bucket-key`` columns (names and types)."""

    num_buckets: int
    key: tuple[str, ...]
    types: tuple[DataType, ...]


def bucket_spec(
    options: Mapping[str, str], row_type: RowType, default_key: Sequence[str] = ()
) -> BucketSpec | None:
    """The table's bucket spec, or ``None`` for an unaware-bucket (``bucket = -1``) table.

    ``default_key``: the bucket key when ``bucket-key`` is not set (a primary-key table's
    trimmed primary key, as in Paimon).

    Raises:
        InvalidOptionError: ``bucket`` is not -1 or a positive integer, or ``bucket-key``
            is missing or names an unknown column.
    """
    raw = str(options.get(BUCKET, "-1")).strip()
    try:
        n = int(raw)
    except ValueError:
        raise InvalidOptionError(f"option 'bucket' = {raw!r}: not an integer") from None
    if n == -1:
        return None
    if n <= 0:
        raise InvalidOptionError(f"option 'bucket' = {raw!r}: must be -1 or > 0")
    key = tuple(k.strip() for k in str(options.get(BUCKET_KEY, "")).split(",") if k.strip())
    if not key:
        key = tuple(default_key)
    if not key:
        raise InvalidOptionError(
            f"option 'bucket' = {raw!r} needs option 'bucket-key' on an append table"
        )
    fields = []
    for k in key:
        if not row_type.has(k):
            raise InvalidOptionError(f"option 'bucket-key': unknown column {k!r}")
        fields.append(row_type.field(k))
    return BucketSpec(n, tuple(f.name for f in fields), tuple(f.type for f in fields))


def _rotl(x: Any, r: int) -> Any:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def murmur_words(words: np.ndarray) -> np.ndarray:
    """``MurmurHashUtils.hashBytesByWords`` of each row of a ``(rows, n)`` little-endian
    uint32 matrix (``4 * n`` bytes per row): int32 hashes."""
    words = np.ascontiguousarray(words, dtype=np.uint32)
    h = np.full(words.shape[0], SEED, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            k = words[:, j] * _C1
            k = _rotl(k, 15) * _C2
            h = _rotl(h ^ k, 13) * _M5 + _N1
        h ^= np.uint32(4 * words.shape[1])
        h ^= h >> np.uint32(16)
        h *= _F1
        h ^= h >> np.uint32(13)
        h *= _F2
        h ^= h >> np.uint32(16)
    return h.view(np.int32)


def _java_bucket(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """``Math.abs(hash % n)`` with Java's truncating remainder."""
    return np.abs(np.fmod(hashes.astype(np.int64), num_buckets)).astype(np.int32)


def row_hash(values: Sequence[Any], types: Sequence[DataType]) -> int:
    """Paimon's ``BinaryRow.hashCode()`` of one row of internal-form values."""
    data = serialize_row(values, types)[4:]
    return int(murmur_words(np.frombuffer(data, dtype="<u4").reshape(1, -1))[0])


def bucket_of(values: Sequence[Any], types: Sequence[DataType], num_buckets: int) -> int:
    """The bucket of one bucket-key row of internal-form values."""
    return int(_java_bucket(np.array([row_hash(values, types)], np.int32), num_buckets)[0])


def _is_fixed(t: DataType) -> bool:
    if t.root in _FIXED_WIDTH:
        return True
    if t.root is TypeRoot.DECIMAL:
        return (t.precision if t.precision is not None else 10) <= 18
    if t.is_timestamp:
        return t.timestamp_unit == "ms"
    return False


def _fixed_slots(arr: pa.Array, t: DataType) -> tuple[np.ndarray, np.ndarray]:
    """(rows, 8) uint8 slots of a fixed-width column and its null mask."""
    from lakeskip.index.primitives.hashing import long_values

    n = len(arr)
    nulls = arr.is_null().to_numpy(zero_copy_only=False).astype(bool)
    slots = np.zeros((n, 8), dtype=np.uint8)
    if n == 0:
        return slots, nulls
    valid = arr.drop_null() if arr.null_count else arr
    if t.root in _FIXED_WIDTH:
        dtype, width = _FIXED_WIDTH[t.root]
        if t.root is TypeRoot.DATE:
            vals = valid.cast(pa.int32()).to_numpy(zero_copy_only=False)
        else:
            vals = valid.to_numpy(zero_copy_only=False)
        raw = np.ascontiguousarray(vals.astype(np.dtype(dtype).newbyteorder("<")))
    else:  # compact decimal (unscaled) or TIMESTAMP(p <= 3) (millis): an i64
        raw = np.ascontiguousarray(long_values(valid, t).astype("<i8"))
        width = 8
    slots[~nulls, :width] = raw.view(np.uint8).reshape(-1, width)
    return slots, nulls


def _internal_values(arr: pa.Array, t: DataType) -> list[Any]:
    if t.root is TypeRoot.DATE:
        return list(arr.cast(pa.int32()).to_pylist())
    if t.is_timestamp:
        return list(arr.cast(pa.int64()).to_pylist())
    return list(arr.to_pylist())


def murmur_rows(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`murmur_words` of rows of different lengths in one flat byte buffer.

    Args:
        buf: uint8 bytes, length a multiple of 4.
        starts: byte offset of each row (a multiple of 4).
        lengths: byte length of each row (a multiple of 4).
    """
    words = buf.view("<u4")
    n_words = lengths // 4
    order = np.argsort(-n_words, kind="stable")
    ws = (starts // 4)[order]
    nw = n_words[order]
    h = np.full(len(order), SEED, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for j in range(int(nw[0]) if len(nw) else 0):
            active = int(np.searchsorted(-nw, -j, side="left"))  # rows with more than j words
            k = words[ws[:active] + j] * _C1
            k = _rotl(k, 15) * _C2
            h[:active] = _rotl(h[:active] ^ k, 13) * _M5 + _N1
        h ^= lengths[order].astype(np.uint32)
        h ^= h >> np.uint32(16)
        h *= _F1
        h ^= h >> np.uint32(13)
        h *= _F2
        h ^= h >> np.uint32(16)
    out = np.empty(len(order), dtype=np.int32)
    out[order] = h.view(np.int32)
    return out


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + l)`` for every (s, l)."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    before = np.cumsum(lengths) - lengths
    out: np.ndarray = np.arange(total, dtype=np.int64) + np.repeat(starts - before, lengths)
    return out


def _hash_var_rows(columns: Sequence[pa.Array], types: Sequence[DataType]) -> np.ndarray:
    """Rows of fixed-width and STRING/BINARY fields, laid out with numpy."""
    n = len(columns[0])
    arity = len(types)
    head = null_bits_width(arity)
    fixed_size = head + 8 * arity
    # per string column: null mask, source byte offsets, lengths, variable-part sizes, bytes
    strings: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
    row_len = np.full(n, fixed_size, dtype=np.int64)
    for i, (arr, t) in enumerate(zip(columns, types, strict=True)):
        if t.root not in (TypeRoot.STRING, TypeRoot.BINARY):
            continue
        big = arr.cast(pa.large_binary())
        nulls = big.is_null().to_numpy(zero_copy_only=False).astype(bool)
        offs = np.frombuffer(big.buffers()[1], dtype=np.int64)[big.offset : big.offset + n + 1]
        raw = big.buffers()[2]
        data = np.frombuffer(raw, np.uint8) if raw is not None else np.empty(0, np.uint8)
        lens = np.where(nulls, 0, offs[1:] - offs[:-1])
        var = np.where(lens > MAX_INLINE, (lens + 7) & ~7, 0)
        strings[i] = (nulls, offs[:-1], lens, var, data)
        row_len += var
    starts = np.zeros(n, dtype=np.int64)
    if n:
        starts[1:] = np.cumsum(row_len)[:-1]
    buf = np.zeros(int(row_len.sum()), dtype=np.uint8)
    var_cursor = starts + fixed_size
    eight = np.arange(8, dtype=np.int64)
    for i, (arr, t) in enumerate(zip(columns, types, strict=True)):
        slot = starts + head + 8 * i
        bit = i + 8
        if i in strings:
            nulls, src, lens, var, data = strings[i]
            long = var > 0
            dest = np.where(long, var_cursor, slot)
            buf[_ranges(dest, lens)] = data[_ranges(src, lens)]
            inline = ~long & ~nulls
            buf[slot[inline] + 7] = (0x80 | lens[inline]).astype(np.uint8)
            # offset << 32 | length, the offset relative to the row's start
            rel = (var_cursor[long] - starts[long]).astype(np.uint64)
            word = (rel << np.uint64(32)) | lens[long].astype(np.uint64)
            word_bytes = word.astype("<u8").view(np.uint8).reshape(-1, 8)
            buf[slot[long][:, None] + eight] = word_bytes
            var_cursor = var_cursor + var
        else:
            slots, nulls = _fixed_slots(arr, t)
            buf[slot[:, None] + eight] = slots
        buf[starts[nulls] + bit // 8] |= np.uint8(1 << (bit % 8))
    return murmur_rows(buf, starts, row_len)


def _hash_rows(columns: Sequence[pa.Array], types: Sequence[DataType]) -> np.ndarray:
    n = len(columns[0]) if columns else 0
    arity = len(types)
    head = null_bits_width(arity)
    if all(_is_fixed(t) for t in types):
        data = np.zeros((n, head + 8 * arity), dtype=np.uint8)
        for i, (arr, t) in enumerate(zip(columns, types, strict=True)):
            slots, nulls = _fixed_slots(arr, t)
            data[:, head + 8 * i : head + 8 * i + 8] = slots
            bit = i + 8
            data[nulls, bit // 8] |= np.uint8(1 << (bit % 8))
        return murmur_words(data.view("<u4"))
    if all(_is_fixed(t) or t.root in (TypeRoot.STRING, TypeRoot.BINARY) for t in types):
        return _hash_var_rows(columns, types)
    # wide decimals / timestamps: serialise each row, hash rows of equal length together
    rows = zip(*(_internal_values(a, t) for a, t in zip(columns, types, strict=True)), strict=True)
    encoded = [serialize_row(r, types)[4:] for r in rows]
    out = np.empty(n, dtype=np.int32)
    by_len: dict[int, list[int]] = {}
    for i, b in enumerate(encoded):
        by_len.setdefault(len(b), []).append(i)
    for length, idx in by_len.items():
        buf = np.frombuffer(b"".join(encoded[i] for i in idx), dtype="<u4")
        out[idx] = murmur_words(buf.reshape(len(idx), length // 4))
    return out


def bucket_ids(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], num_buckets: int
) -> np.ndarray:
    """Bucket of every row, from the bucket-key columns (Arrow, in bucket-key order).

    Columns must hold the Arrow form of their types (``DataType.to_arrow()``).
    """
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    return _java_bucket(_hash_rows(arrays, types), num_buckets)


def buckets_of_literals(
    value_sets: Sequence[Iterable[Any]], types: Sequence[DataType], num_buckets: int
) -> set[int]:
    """Buckets of every combination of per-column internal-form values."""
    return {
        bucket_of(combo, types, num_buckets)
        for combo in itertools.product(*(list(v) for v in value_sets))
    }
