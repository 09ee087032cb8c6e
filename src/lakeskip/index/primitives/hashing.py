"""Paimon's bloom-filter hashes (``FastHash``), vectorised over Arrow arrays.

* STRING / BINARY: XXH64 with seed 0 over the UTF-8 / raw bytes
  (``net.openhft LongHashFunction.xx()``).
* Integer-like types: Thomas Wang's 64-bit integer hash (``getLongHash``) of the value
  sign-extended to a Java long -- TINYINT..BIGINT as is, FLOAT as ``Float.floatToIntBits``,
  DOUBLE as ``Double.doubleToLongBits`` (both canonicalise NaN), DATE as epoch day,
  TIMESTAMP as millis (precision <= 3) or micros.

Java's ``long`` arithmetic wraps; numpy's uint64 does too, and Java's arithmetic ``>>`` is
numpy's ``>>`` on int64.

>>> import numpy as np
>>> int(long_hash(np.array([1], dtype=np.int64))[0])
6614235796240398542
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from lakeskip.index.primitives.floats import float_bits_array, float_to_bits, float_width
from lakeskip.index.primitives.xxh64 import xxh64_binary
from lakeskip.types import DataType, TypeRoot

__all__ = [
    "hash_array",
    "hash_value",
    "long_hash",
    "long_values",
    "supports_hash",
    "timestamp_ints",
]

_U64 = np.uint64

_LONG_LIKE = {
    TypeRoot.TINYINT,
    TypeRoot.SMALLINT,
    TypeRoot.INT,
    TypeRoot.BIGINT,
    TypeRoot.DATE,
    TypeRoot.TIMESTAMP,
    TypeRoot.TIMESTAMP_LTZ,
}


def supports_hash(t: DataType) -> bool:
    """Whether ``FastHash`` hashes this type (not BOOLEAN, DECIMAL or nested types)."""
    return t.root in _LONG_LIKE or t.root in (
        TypeRoot.FLOAT,
        TypeRoot.DOUBLE,
        TypeRoot.STRING,
        TypeRoot.BINARY,
    )


def long_hash(keys: np.ndarray) -> Any:
    """Thomas Wang's 64-bit hash of int64 keys, as Java computes it (returns int64)."""
    with np.errstate(over="ignore"):
        k = keys.astype(np.int64).view(_U64)
        k = (~k) + (k << _U64(21))
        k = k ^ (k.view(np.int64) >> np.int64(24)).view(_U64)
        k = (k + (k << _U64(3))) + (k << _U64(8))
        k = k ^ (k.view(np.int64) >> np.int64(14)).view(_U64)
        k = (k + (k << _U64(2))) + (k << _U64(4))
        k = k ^ (k.view(np.int64) >> np.int64(28)).view(_U64)
        k = k + (k << _U64(31))
    return k.view(np.int64)


_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def timestamp_ints(arr: pa.Array, unit: str) -> Any:
    """Timestamps (non-null) as int64 in ``unit`` ("ms"/"us"), rounding toward -infinity.

    Paimon's ``Timestamp`` keeps ``millisecond`` plus a non-negative ``nanoOfMillisecond``, so
    ``getMillisecond()``/``toMicros()`` floor; Arrow's cast would refuse to drop sub-unit digits
    (and truncates toward zero when told to), hence the explicit floor division.

    >>> timestamp_ints(pa.array([-1_744_877_000, 1_500], pa.timestamp("ns")), "us").tolist()
    [-1744877, 1]
    >>> timestamp_ints(pa.array([-1], pa.timestamp("us")), "ms").tolist()
    [-1]
    """
    src = _UNIT_NANOS[arr.type.unit]
    dst = _UNIT_NANOS[unit]
    ints = arr.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)
    if src == dst:
        return ints
    if src > dst:  # coarser source: exact multiply (Java would overflow the same way)
        with np.errstate(over="ignore"):
            return ints * np.int64(src // dst)
    return np.floor_divide(ints, np.int64(dst // src))


def long_values(arr: pa.Array, t: DataType) -> Any:
    """Non-null integer-like values as the int64 longs Paimon keys them by: integers and
    BOOLEAN as themselves, DATE as epoch days, TIMESTAMP as floored millis/micros
    (:func:`timestamp_ints`), DECIMAL (precision <= 18) as its unscaled value.

    >>> import decimal
    >>> long_values(pa.array([decimal.Decimal("-1.25")], pa.decimal128(5, 2)),
    ...             DataType(TypeRoot.DECIMAL, precision=5, scale=2)).tolist()
    [-125]
    """
    if t.root is TypeRoot.DECIMAL:
        assert t.scale is not None
        dec = arr.cast(pa.decimal128(t.precision or 18, t.scale))
        # decimal128 is 16-byte little-endian two's complement; precision <= 18 fits 8 bytes
        words = np.frombuffer(dec.buffers()[1], dtype=np.int64, count=2 * (dec.offset + len(dec)))
        return words[2 * dec.offset :: 2].copy()
    if t.is_timestamp:
        return timestamp_ints(arr, t.timestamp_unit)
    if t.root is TypeRoot.DATE:
        return arr.cast(pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64)
    return arr.to_numpy(zero_copy_only=False).astype(np.int64)


def _long_keys(arr: pa.Array, t: DataType) -> Any:
    """Non-null values of ``arr`` as the int64 keys Java hashes."""
    if t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        return float_bits_array(arr, float_width(t))[1]
    return long_values(arr, t)


def hash_array(arr: pa.Array | pa.ChunkedArray, t: DataType) -> Any:
    """int64 hashes of the non-null values of ``arr`` (nulls are dropped), in row order."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = pc.drop_null(arr)
    if len(arr) == 0:
        return np.empty(0, dtype=np.int64)
    if t.root in (TypeRoot.STRING, TypeRoot.BINARY):
        # numpy XXH64 grouped by value length (see _xxh64): 4x one xxhash call per value on
        # 7-byte keys, never slower on long or ragged ones
        large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
        return xxh64_binary(arr.cast(pa.large_binary() if large else pa.binary())).view(np.int64)
    return long_hash(_long_keys(arr, t))


def hash_value(t: DataType, value: Any) -> int:
    """The hash of one internal-form value (reader literals), equal to :func:`hash_array`'s.

    >>> from lakeskip import types as T
    >>> hash_value(T.DOUBLE, -0.0) == hash_value(T.DOUBLE, 0.0)  # doubleToLongBits differs
    False
    """
    r = t.root
    if r is TypeRoot.STRING:
        return int(np.uint64(xxhash.xxh64_intdigest(value.encode("utf-8"))).view(np.int64))
    if r is TypeRoot.BINARY:
        return int(np.uint64(xxhash.xxh64_intdigest(bytes(value))).view(np.int64))
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        key = float_to_bits(float(value), float_width(t))
    else:
        key = int(value)
    return int(long_hash(np.array([key], dtype=np.int64))[0])
