"""Java's float rules, in one place, for every index format that keys or hashes floats.

* ``Float.floatToIntBits`` / ``Double.doubleToLongBits`` map every NaN to one canonical bit
  pattern (``0x7fc00000`` / ``0x7ff8000000000000``); the bloom filter hashes those bits, the
  bitmap index keys its ``HashMap`` by them (``Float.equals``), range-bitmap orders them.
* ``Float.compare`` / ``Double.compare`` order: ``-inf < ... < -0.0 < 0.0 < ... < inf < NaN``,
  so ``-0.0`` and ``0.0`` are two keys. :func:`compare_keys` maps bits to int64 keys whose
  integer order is that order (negative patterns have their magnitude bits flipped).

Bits are carried as int64 numbers: a FLOAT's bits sign-extended from int32, a DOUBLE's as is.

>>> float_to_bits(float("nan"), 32) == CANONICAL_NAN_32, float_to_bits(-0.0, 64) < 0
(True, True)
>>> keys = [compare_key(float_to_bits(f, 64), 64) for f in (-1.0, -0.0, 0.0, 2.0, float("nan"))]
>>> keys == sorted(keys)
True
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa

from lakeskip.types import DataType, TypeRoot

__all__ = [
    "CANONICAL_NAN_32",
    "CANONICAL_NAN_64",
    "bits_to_float",
    "canonical_bits",
    "compare_key",
    "compare_keys",
    "float_bits_array",
    "float_to_bits",
    "float_width",
]

CANONICAL_NAN_32 = 0x7FC00000
CANONICAL_NAN_64 = 0x7FF8000000000000

_PACK = {
    32: (struct.Struct(">f"), struct.Struct(">i")),
    64: (struct.Struct(">d"), struct.Struct(">q")),
}
_NUMPY = {32: (np.float32, np.int32), 64: (np.float64, np.int64)}


def float_width(t: DataType) -> int:
    """32 for FLOAT, 64 for DOUBLE."""
    return 32 if t.root is TypeRoot.FLOAT else 64


def float_to_bits(value: float, width: int) -> int:
    """``floatToIntBits`` / ``doubleToLongBits`` (NaN canonical) as a signed int."""
    if value != value:
        return CANONICAL_NAN_32 if width == 32 else CANONICAL_NAN_64
    f, i = _PACK[width]
    return int(i.unpack(f.pack(value))[0])


def bits_to_float(bits: int, width: int) -> float:
    """``intBitsToFloat`` / ``longBitsToDouble`` of signed bits."""
    f, i = _PACK[width]
    return float(f.unpack(i.pack(bits))[0])


def canonical_bits(bits: int, width: int) -> int:
    """Raw bits with any NaN payload replaced by the canonical NaN."""
    return float_to_bits(bits_to_float(bits, width), width)


def float_bits_array(arr: pa.Array | np.ndarray, width: int) -> tuple[Any, Any]:
    """(raw bits, canonical bits) of float values without nulls, both int64 numpy arrays."""
    ftype, itype = _NUMPY[width]
    v = arr if isinstance(arr, np.ndarray) else arr.to_numpy(zero_copy_only=False)
    v = np.ascontiguousarray(v, dtype=ftype)
    raw = v.view(itype).astype(np.int64)
    nan = CANONICAL_NAN_32 if width == 32 else CANONICAL_NAN_64
    return raw, np.where(np.isnan(v), np.int64(nan), raw)


def compare_keys(bits: Any, width: int) -> Any:
    """Canonical bits (int64 numpy) -> int64 keys in ``Float.compare``/``Double.compare``
    order."""
    flip = np.int64(0x7FFFFFFF if width == 32 else 0x7FFFFFFFFFFFFFFF)
    return np.where(bits < 0, bits ^ flip, bits)


def compare_key(bits: int, width: int) -> int:
    """:func:`compare_keys` of one (possibly non-canonical) bit pattern."""
    return int(compare_keys(np.int64(canonical_bits(bits, width)), width))
