"""Paimon FastHash: vectorised hashes equal the scalar (reader-literal) hashes and Java's."""

from __future__ import annotations

import math
import struct

import numpy as np
import pyarrow as pa
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from lakeskip import types as T
from lakeskip.index.primitives.hashing import hash_array, hash_value, long_hash, timestamp_ints

_M64 = (1 << 64) - 1


def _java_long_hash(key: int) -> int:
    """Thomas Wang's hash in plain Python ints, Java long semantics (independent oracle)."""

    def s(x: int) -> int:
        x &= _M64
        return x - (1 << 64) if x >> 63 else x

    k = s(key)
    k = s((~k) + (k << 21))
    k = s(k ^ (k >> 24))
    k = s(k + (k << 3) + (k << 8))
    k = s(k ^ (k >> 14))
    k = s(k + (k << 2) + (k << 4))
    k = s(k ^ (k >> 28))
    k = s(k + (k << 31))
    return k


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_long_hash_matches_python_oracle(values: list[int]) -> None:
    got = long_hash(np.array(values, dtype=np.int64)).tolist()
    assert got == [_java_long_hash(v) for v in values], "numpy wraparound must equal Java long"


def test_long_hash_known_value() -> None:
    assert int(long_hash(np.array([1], dtype=np.int64))[0]) == _java_long_hash(1)


@given(st.lists(st.one_of(st.none(), st.text(max_size=20)), max_size=30))
def test_string_array_equals_scalar_and_xxh64(values: list[str | None]) -> None:
    got = hash_array(pa.array(values, pa.string()), T.STRING).tolist()
    present = [v for v in values if v is not None]
    assert got == [hash_value(T.STRING, v) for v in present], "array vs scalar hash"
    want = [int(np.uint64(xxhash.xxh64_intdigest(v.encode())).view(np.int64)) for v in present]
    assert got == want, "STRING hash is XXH64 seed 0 of UTF-8 bytes"


@given(st.lists(st.one_of(st.none(), st.binary(max_size=20)), max_size=30))
def test_binary_array_equals_scalar(values: list[bytes | None]) -> None:
    got = hash_array(pa.array(values, pa.binary()), T.BINARY).tolist()
    assert got == [hash_value(T.BINARY, v) for v in values if v is not None]


@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)), max_size=30))
def test_double_array_equals_scalar(values: list[float | None]) -> None:
    got = hash_array(pa.array(values, pa.float64()), T.DOUBLE).tolist()
    assert got == [hash_value(T.DOUBLE, v) for v in values if v is not None]


@given(st.lists(st.one_of(st.none(), st.floats(width=32)), max_size=30))
def test_float_array_equals_scalar(values: list[float | None]) -> None:
    got = hash_array(pa.array(values, pa.float32()), T.FLOAT).tolist()
    assert got == [hash_value(T.FLOAT, v) for v in values if v is not None]


def test_double_bits_follow_java() -> None:
    # doubleToLongBits: -0.0 and 0.0 differ; every NaN is the canonical one
    assert hash_value(T.DOUBLE, -0.0) != hash_value(T.DOUBLE, 0.0), "-0.0 has its own bits"
    nan_other = struct.unpack(">d", struct.pack(">q", 0x7FF8000000000001))[0]
    assert math.isnan(nan_other)
    assert hash_value(T.DOUBLE, nan_other) == _java_long_hash(0x7FF8000000000000)
    assert hash_value(T.DOUBLE, 1.5) == _java_long_hash(
        struct.unpack(">q", struct.pack(">d", 1.5))[0]
    )
    # floatToIntBits, sign-extended to long
    assert hash_value(T.FLOAT, -1.0) == _java_long_hash(
        struct.unpack(">i", struct.pack(">f", -1.0))[0]
    )


@given(st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=30))
def test_int_and_date_array_equal_scalar(values: list[int | None]) -> None:
    got = hash_array(pa.array(values, pa.int32()), T.INT).tolist()
    assert got == [_java_long_hash(v) for v in values if v is not None]
    dates = [None if v is None else v % 100000 for v in values]
    got_d = hash_array(pa.array(dates, pa.int32()).cast(pa.date32()), T.DATE).tolist()
    assert got_d == [_java_long_hash(v) for v in dates if v is not None], "DATE = epoch day"


def test_timestamp_units() -> None:
    micros = [0, 1_700_000_000_123_456, -5]
    arr6 = pa.array(micros, pa.timestamp("us"))
    assert hash_array(arr6, T.TIMESTAMP).tolist() == [_java_long_hash(v) for v in micros]
    ts3 = T.DataType(root=T.TypeRoot.TIMESTAMP, precision=3)
    arr3 = pa.array([1_700_000_000_123, None], pa.timestamp("ms"))
    assert hash_array(arr3, ts3).tolist() == [_java_long_hash(1_700_000_000_123)], "millis"
    assert hash_value(ts3, 1_700_000_000_123) == _java_long_hash(1_700_000_000_123)


@given(st.lists(st.integers(-(2**62), 2**62), max_size=30))
def test_timestamp_ints_floor_like_java(nanos: list[int]) -> None:
    # Paimon's Timestamp: millisecond + nanoOfMillisecond in [0, 999_999] -> floor division
    arr = pa.array(nanos, pa.timestamp("ns"))
    assert timestamp_ints(arr, "us").tolist() == [n // 1000 for n in nanos], "toMicros floors"
    assert timestamp_ints(arr, "ms").tolist() == [n // 1_000_000 for n in nanos], "millis floor"
    secs = pa.array([n // 10**9 for n in nanos], pa.timestamp("s"))
    assert timestamp_ints(secs, "ms").tolist() == [n // 10**9 * 1000 for n in nanos]


def test_float_negative_zero_and_nan_follow_java() -> None:
    # floatToIntBits (not the raw variant): -0.0f keeps its sign bit, NaNs collapse
    assert hash_value(T.FLOAT, -0.0) == _java_long_hash(-(2**31)), "0x80000000 sign-extended"
    quiet = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)
    got = hash_array(pa.array(quiet, pa.float32()), T.FLOAT).tolist()
    assert got == [_java_long_hash(0x7FC00000)], "every float NaN hashes as 0x7fc00000"
