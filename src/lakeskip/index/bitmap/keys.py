"""Bitmap-index keys: how each type's values are keyed, encoded and ordered (Java semantics),
for the reader one key at a time (:class:`KeyCodec`) and for the writer a whole column at once
(:func:`group_column`).

Keys are Java's boxed values: integers (DATE as epoch days, TIMESTAMP as millis/micros), FLOAT
and DOUBLE as their IEEE bits with NaN canonical (``Float.equals``: ``-0.0`` and ``0.0`` are
two keys), BOOLEAN, and STRING as UTF-8 bytes. Encoded big-endian (``_CODECS``), strings as
``i32 length | bytes``; ordered as Java's ``compareTo`` (strings by unsigned bytes, floats by
``Float.compare``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lakeskip.index.primitives.binary import ByteReader, Field, fixed_field, length_prefixed
from lakeskip.index.primitives.floats import (
    bits_to_float,
    canonical_bits,
    compare_key,
    float_to_bits,
    float_width,
)
from lakeskip.index.primitives.grouping import Grouping, group_by_key
from lakeskip.index.primitives.java import hash_binary_strings, long_hash_code
from lakeskip.types import DataType, TypeRoot

__all__ = ["ColumnGroups", "KeyCodec", "group_column", "supported"]

# value codec per type (struct format)
_CODECS: dict[TypeRoot, str] = {
    TypeRoot.TINYINT: ">b",
    TypeRoot.SMALLINT: ">h",
    TypeRoot.INT: ">i",
    TypeRoot.DATE: ">i",
    TypeRoot.BIGINT: ">q",
    TypeRoot.TIMESTAMP: ">q",
    TypeRoot.TIMESTAMP_LTZ: ">q",
    TypeRoot.FLOAT: ">i",  # keys are IEEE bit patterns (Java Float.equals semantics)
    TypeRoot.DOUBLE: ">q",
    TypeRoot.BOOLEAN: ">?",
}
_BOOLEAN_HASH = np.array([1237, 1231], dtype=np.int64)  # Boolean.hashCode of false, true


def supported(t: DataType) -> bool:
    return t.root in _CODECS or t.root is TypeRoot.STRING


class KeyCodec:
    """Encodes, decodes, sizes and orders keys of one type (Java semantics)."""

    def __init__(self, t: DataType) -> None:
        self.t = t
        self.is_str = t.root is TypeRoot.STRING
        self.is_float = t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE)
        self.width = float_width(t)
        self.fmt = None if self.is_str else struct.Struct(_CODECS[t.root])

    def key(self, value: Any) -> Any:
        """A dict key: UTF-8 bytes for strings, IEEE bits for floats (NaN canonical, so
        -0.0 and 0.0 stay apart as in Java's ``Float.equals``)."""
        if self.is_str:
            return value.encode("utf-8") if isinstance(value, str) else bytes(value)
        if self.is_float:
            return float_to_bits(float(value), self.width)
        if self.t.root is TypeRoot.BOOLEAN:
            return bool(value)
        return int(value)

    def is_zero(self, key: Any) -> bool:
        """A float key equal to 0 in SQL (``0.0`` or ``-0.0``)."""
        return self.is_float and bits_to_float(key, self.width) == 0

    def zeros(self) -> list[int]:
        """The two float keys SQL's ``0.0`` stands for."""
        return [float_to_bits(0.0, self.width), float_to_bits(-0.0, self.width)]

    def sort_key(self, key: Any) -> Any:
        """Java compareTo order: unsigned bytes; Float.compare (-0.0 < 0.0 < ... < NaN)."""
        if self.is_float:
            return compare_key(key, self.width)
        return key

    def read(self, r: ByteReader) -> Any:
        if self.is_str:
            return r.sized_bytes("bitmap key")
        assert self.fmt is not None
        v = self.fmt.unpack(r.take(self.fmt.size, "bitmap key"))[0]
        if self.is_float:  # canonicalise NaN payloads
            return canonical_bits(v, self.width)
        return v


@dataclass(frozen=True, slots=True)
class ColumnGroups:
    """The distinct non-null keys of a column, in Java ``compareTo`` order.

    ``keys``: their encoded bytes (a field, see :func:`~lakeskip.index.primitives.binary.pack_records`);
    ``hashes``: their Java ``hashCode()`` (int64); ``rows``: the non-null row numbers;
    ``groups``: which of ``rows`` hold each key (``groups.order[bounds[i]:bounds[i + 1]]``,
    ascending)."""

    keys: Field
    hashes: Any
    rows: Any
    groups: Grouping

    def first_rows(self) -> Any:
        return self.rows[self.groups.first]

    def rows_of(self, i: int) -> Any:
        g = self.groups
        return self.rows[g.order[g.bounds[i] : g.bounds[i + 1]]]


def group_column(t: DataType, valid: Any, present: pa.Array) -> ColumnGroups:
    """Group the non-null values ``present`` (at rows ``valid``) of a column by key."""
    rows = np.flatnonzero(valid)
    root = t.root
    kg = group_by_key(t, present)
    if kg.strings is not None:
        hashes = hash_binary_strings(kg.strings.to_pylist()).astype(np.int64)
        return ColumnGroups(length_prefixed(kg.strings), hashes, rows, kg.groups)
    keys = kg.bits
    if root is TypeRoot.BOOLEAN:
        hashes = _BOOLEAN_HASH[keys]
    elif root in (TypeRoot.BIGINT, TypeRoot.DOUBLE) or t.is_timestamp:
        hashes = long_hash_code(keys).astype(np.int64)
    else:  # Byte/Short/Integer/Float bits: the value itself
        hashes = keys
    dtype = _CODECS[root][1:]
    field = fixed_field(keys, ">" + ("u1" if dtype == "?" else dtype))
    return ColumnGroups(field, hashes, rows, kg.groups)
