"""Range-bitmap keys (Paimon's ``KeyFactory``): which types, how a key is serialised, and
the order Java compares keys in.

Fixed-size keys are the type's big-endian value (``ByteBuffer.put*``): integers, DATE (epoch
days), DECIMAL(p <= 18) unscaled longs, TIMESTAMP(p <= 6) floored millis/micros, BOOLEAN as a
byte, FLOAT/DOUBLE as raw IEEE bits. STRING keys are ``i32 length | UTF-8 bytes``.

In memory, fixed-size keys are int64 *sort keys* whose integer order is Java's comparator
order (floats through :func:`~lakeskip.index.primitives.floats.compare_keys`, so ``-0.0 < 0.0`` and NaN,
one key whatever its payload, sorts last); strings are ``bytes`` (Python compares them
unsigned, as Paimon does).

>>> from lakeskip import types as T
>>> literal_range(T.DOUBLE, -0.0)      # SQL: -0.0 = 0.0, two adjacent keys in Java's order
(-1, 0)
>>> literal_range(T.STRING, "b")
(b'b', b'b')
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from lakeskip.errors import CorruptIndexError
from lakeskip.index.primitives.binary import ByteReader, length_prefixed
from lakeskip.index.primitives.floats import (
    compare_key,
    compare_keys,
    float_bits_array,
    float_to_bits,
    float_width,
)
from lakeskip.index.primitives.grouping import group_by_key
from lakeskip.types import DataType, TypeRoot

__all__ = ["FIXED", "UNCHUNKED", "Dictionary", "KeyCodec", "build_dictionary", "literal_range"]

#: struct format of each fixed-size key type, as Java's ``ByteBuffer.put*``
FIXED = {
    TypeRoot.BOOLEAN: ">b",
    TypeRoot.TINYINT: ">b",
    TypeRoot.SMALLINT: ">h",
    TypeRoot.INT: ">i",
    TypeRoot.DATE: ">i",
    TypeRoot.BIGINT: ">q",
    TypeRoot.DECIMAL: ">q",
    TypeRoot.TIMESTAMP: ">q",
    TypeRoot.TIMESTAMP_LTZ: ">q",
    TypeRoot.FLOAT: ">i",  # raw IEEE bits, as putFloat(Float.intBitsToFloat(bits))
    TypeRoot.DOUBLE: ">q",
}
#: types whose default ``chunk-size`` is ``0b`` (one key per chunk)
UNCHUNKED = (TypeRoot.BOOLEAN, TypeRoot.TINYINT, TypeRoot.SMALLINT)
_FLOATS = (TypeRoot.FLOAT, TypeRoot.DOUBLE)


def supported(t: DataType) -> bool:
    if t.root is TypeRoot.DECIMAL:
        return (t.precision if t.precision is not None else 38) <= 18
    if t.is_timestamp:
        return (t.precision if t.precision is not None else 6) <= 6
    return t.root is TypeRoot.STRING or t.root in FIXED


def literal_range(t: DataType, value: Any) -> tuple[Any, Any] | None:
    """The keys a literal equals in SQL, as (lowest, highest) sort key; ``None`` if the
    literal cannot be placed exactly (the reader then keeps every row)."""
    r = t.root
    if r is TypeRoot.STRING:
        if not isinstance(value, str):
            return None
        b = value.encode("utf-8")
        return b, b
    if r in _FLOATS:
        width = float_width(t)
        f = float(value)
        if f == f and r is TypeRoot.FLOAT and float(np.float32(f)) != f:
            return None  # not a FLOAT value: the binder never sends one
        if f == 0:  # SQL: -0.0 = 0.0, two adjacent keys in Java's order
            return -1, 0
        key = compare_key(float_to_bits(f, width), width)
        return key, key
    if r is TypeRoot.DECIMAL:
        assert t.scale is not None
        unscaled = Decimal(value).scaleb(t.scale)
        if unscaled != unscaled.to_integral_value():
            return None
        k = int(unscaled)
        return k, k
    if r is TypeRoot.BOOLEAN:
        return int(bool(value)), int(bool(value))
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value, value


# -- writing -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dictionary:
    """Sorted distinct keys of one column, serialised: key ``i`` (code ``i``) is
    ``data[starts[i]:starts[i + 1]]``; ``codes`` is every non-null row's code."""

    data: bytes
    starts: Any
    codes: Any

    @property
    def cardinality(self) -> int:
        return len(self.starts) - 1

    def key(self, i: int) -> bytes:
        return self.data[int(self.starts[i]) : int(self.starts[i + 1])]


def build_dictionary(t: DataType, present: pa.Array) -> Dictionary:
    """The dictionary of the non-null values ``present``, vectorised."""
    kg = group_by_key(t, present)
    if kg.strings is not None:
        data, at, _ = length_prefixed(kg.strings)
        return Dictionary(data.tobytes(), np.append(at, len(data)), kg.groups.codes)
    # Java's TreeMap keeps the first-inserted key object (a NaN keeps its payload)
    values = kg.raw_bits
    fmt = np.dtype(FIXED[t.root][1:]).newbyteorder(">")
    starts = np.arange(len(values) + 1, dtype=np.int64) * fmt.itemsize
    return Dictionary(values.astype(fmt).tobytes(), starts, kg.groups.codes)


# -- reading -------------------------------------------------------------------------------


class KeyCodec:
    """Reads keys of one type from index bytes, as sort keys."""

    def __init__(self, t: DataType) -> None:
        self.t = t
        self.is_str = t.root is TypeRoot.STRING
        self.fmt = None if self.is_str else struct.Struct(FIXED[t.root])
        self.width = float_width(t)

    @property
    def fixed_length(self) -> int:
        return self.fmt.size if self.fmt is not None else -1

    def _sort(self, v: int) -> int:
        if self.t.root in _FLOATS:
            return compare_key(v, self.width)
        if self.t.root is TypeRoot.BOOLEAN:
            return int(v != 0)
        return v

    def read(self, r: ByteReader) -> Any:
        if self.is_str:
            return r.sized_bytes("range-bitmap key")
        assert self.fmt is not None
        return self._sort(int(self.fmt.unpack(r.take(self.fmt.size, "range-bitmap key"))[0]))

    def read_many(self, data: memoryview, count: int, base: int) -> Any:
        """``count`` fixed-size keys packed in ``data`` -> int64 sort keys (numpy)."""
        assert self.fmt is not None
        dtype = np.dtype(self.fmt.format[1:]).newbyteorder(">")
        if len(data) != count * dtype.itemsize:
            raise CorruptIndexError(base, f"{len(data)} key bytes for {count} keys")
        v = np.frombuffer(data, dtype=dtype).astype(np.int64)
        if self.t.root in _FLOATS:
            f = v.astype(np.int32).view(np.float32) if self.width == 32 else v.view(np.float64)
            return compare_keys(float_bits_array(f, self.width)[1], self.width)
        if self.t.root is TypeRoot.BOOLEAN:
            return (v != 0).astype(np.int64)
        return v
