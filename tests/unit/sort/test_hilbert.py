"""Hilbert keys: vectorised Skilling transform versus a per-row transcription of the Java."""

from __future__ import annotations

import decimal
import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip.errors import InvalidArgumentError, TypeMismatchError
from lakeskip.sort import (
    KEY_BYTES,
    hilbert_column_longs,
    hilbert_index_matrix,
    hilbert_keys,
    hilbert_transpose,
)
from lakeskip.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DOUBLE,
    FLOAT,
    INT,
    STRING,
    TINYINT,
    decimal_type,
    map_of,
    parse_sql_type,
)

MASK64 = (1 << 64) - 1
LONG_MAX = 2**63 - 1

# -- oracle: davidmoten HilbertCurve.index + Paimon's paddingToNByte, one row at a time ----------


def _oracle_key(point: list[int], bits: int = 63) -> bytes:
    x = [p & MASK64 for p in point]  # Java longs as unsigned 64-bit patterns
    n = len(x)
    q = 1 << (bits - 1)
    while q > 1:  # inverse undo
        p = q - 1
        for i in range(n):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = 0
    q = 1 << (bits - 1)
    while q > 1:
        if x[n - 1] & q:
            t ^= q - 1
        q >>= 1
    x = [v ^ t for v in x]
    index = 0  # toIndex: bit `bits-1` of every dimension first
    for b in range(bits - 1, -1, -1):
        for v in x:
            index = (index << 1) | ((v >> b) & 1)
    raw = index.to_bytes(index.bit_length() // 8 + 1, "big")  # BigInteger.toByteArray()
    return raw[:KEY_BYTES] if len(raw) > KEY_BYTES else raw.rjust(KEY_BYTES, b"\0")


_longs = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-5, 5),
    st.sampled_from([LONG_MAX, -(2**63), 2**62, -(2**62)]),
)


@given(st.integers(2, 9).flatmap(lambda d: st.lists(st.lists(_longs, min_size=d, max_size=d))))
def test_vectorised_index_equals_java_transcription(points: list[list[int]]) -> None:
    if not points:
        return
    d = len(points[0])
    x = np.array([[p & MASK64 for p in row] for row in points], dtype=np.uint64).T
    got = hilbert_index_matrix(hilbert_transpose(x))
    for r, row in enumerate(points):
        assert bytes(got[r]) == _oracle_key(row), f"{d}-d point {row}: key differs from Java"


def test_curve_walks_the_corner_cube_in_unit_steps() -> None:
    """Sorted by key, the 16x16 (and 4x4x4) corner cells form a path of unit steps."""
    for dims, side in ((2, 16), (3, 4)):
        cells = list(itertools.product(range(side), repeat=dims))
        cols = [pa.array([c[i] for c in cells], pa.int32()) for i in range(dims)]
        keys = hilbert_keys(cols, [INT] * dims).to_pylist()
        path = [c for _, c in sorted(zip(keys, cells, strict=True))]
        assert path[0] == (0,) * dims, "the curve starts at the origin"
        for a, b in itertools.pairwise(path):
            step = sum(abs(i - j) for i, j in zip(a, b, strict=True))
            assert step == 1, f"{dims}-d Hilbert path jumps from {a} to {b}"


def test_column_longs_per_type() -> None:
    assert hilbert_column_longs(pa.array([-1, 5, None], pa.int8()), TINYINT).tolist() == [
        255,
        5,
        LONG_MAX,
    ], "TINYINT is read unsigned, null is Long.MAX_VALUE"
    assert hilbert_column_longs(pa.array([True, False, None]), BOOLEAN).tolist() == [
        LONG_MAX,
        0,
        LONG_MAX,
    ], "BOOLEAN true -> Long.MAX_VALUE"
    strings = pa.array(["", "a", "abcdefgh", "abcdefghij", None])
    assert hilbert_column_longs(strings, STRING).tolist() == [
        0,
        0x61,
        0x6162636465666768,
        0x6162636465666768,
        LONG_MAX,
    ], "strings: first 8 bytes, shorter ones left-padded"
    assert hilbert_column_longs(pa.array([b"\xff" * 8], pa.binary()), BINARY).tolist() == [-1]
    nan_bits = 0x7FF8000000000000
    doubles = hilbert_column_longs(pa.array([float("nan"), -0.0, 1.0]), DOUBLE).tolist()
    assert doubles == [nan_bits, -(2**63), 0x3FF0000000000000], "doubleToLongBits"
    floats = hilbert_column_longs(pa.array([1.0, float("nan")], pa.float32()), FLOAT).tolist()
    assert floats == [0x3FF0000000000000, nan_bits], "FLOAT widened to double"
    dec = decimal_type(38, 4)
    big = decimal.Decimal("12345678901234567890123.4567")
    values = [decimal.Decimal("-1.9999"), decimal.Decimal("2.5"), big]
    got = hilbert_column_longs(pa.array(values, dec.to_arrow()), dec).tolist()
    wrapped = int(big) & MASK64
    wrapped = wrapped - (1 << 64) if wrapped >= 1 << 63 else wrapped
    assert got == [-1, 2, wrapped], "BigDecimal.longValue(): truncate, keep low 64 bits"
    ts = parse_sql_type("TIMESTAMP(6)")
    micros = pa.array([-1, 1999], pa.int64()).cast(ts.to_arrow())
    assert hilbert_column_longs(micros, ts).tolist() == [-1, 1], "micros floored to millis"


def test_nulls_and_negatives_keys() -> None:
    keys = hilbert_keys(
        [pa.array([None, -1, LONG_MAX]), pa.array([None, -1, LONG_MAX])], [BIGINT, BIGINT]
    ).to_pylist()
    assert keys[0] == keys[2], "null feeds Long.MAX_VALUE, like the value itself"
    assert keys[1] == keys[2], "-1 and Long.MAX_VALUE agree on the 63 bits the curve reads"
    assert all(len(k) == KEY_BYTES for k in keys), "63-byte keys"


def test_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="at least two columns"):
        hilbert_keys([pa.array([1])], [INT])
    with pytest.raises(InvalidArgumentError, match="differ in length"):
        hilbert_keys([pa.array([1]), pa.array([1, 2])], [INT, INT])
    attrs = map_of(STRING, STRING)
    with pytest.raises(TypeMismatchError, match="MAP"):
        hilbert_keys([pa.array([1]), pa.array([[("k", "v")]], attrs.to_arrow())], [INT, attrs])
    with pytest.raises(InvalidArgumentError, match="bits"):
        hilbert_transpose(np.zeros((2, 1), np.uint64), bits=64)
