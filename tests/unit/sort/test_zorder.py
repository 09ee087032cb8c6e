"""Z-order keys: vectorised encoder versus a literal per-row transcription of Paimon's Java."""

from __future__ import annotations

import datetime
import decimal
import math
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip.errors import InvalidArgumentError, TypeMismatchError
from lakeskip.sort import interleave_bits, zorder_column_bytes, zorder_key_size, zorder_keys
from lakeskip.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TINYINT,
    DataType,
    TypeRoot,
    decimal_type,
    map_of,
    parse_sql_type,
)

MASK64 = (1 << 64) - 1
MIN64 = 1 << 63
TS3 = parse_sql_type("TIMESTAMP(3)")
TS6 = parse_sql_type("TIMESTAMP(6)")
DEC10 = decimal_type(10, 2)
DEC38 = decimal_type(38, 4)
_EXACT = decimal.Context(prec=100)

# -- the oracle: ZOrderByteUtils / ZIndexer, one row at a time -----------------------------------


def _long_bytes(v: int) -> bytes:
    return struct.pack(">Q", (v & MASK64) ^ MIN64)


def _double_bytes(v: float) -> bytes:
    bits = 0x7FF8000000000000 if math.isnan(v) else struct.unpack(">q", struct.pack(">d", v))[0]
    bits ^= (bits >> 31) | -(1 << 63)  # Python >> on negative ints is arithmetic, like Java's
    return struct.pack(">Q", bits & MASK64)


def _decimal_bytes(v: decimal.Decimal, scale: int) -> bytes:
    unscaled = int(v.scaleb(scale, context=_EXACT))
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    raw = unscaled.to_bytes(length, "big", signed=True)  # BigInteger.toByteArray()
    return raw[:8].ljust(8, b"\0")


def _oracle_column(dtype: DataType, v: Any, var_size: int) -> bytes:
    root = dtype.root
    width = var_size if root in (TypeRoot.STRING, TypeRoot.BINARY) else 8
    if v is None:
        return bytes(width)
    if root in (TypeRoot.STRING, TypeRoot.BINARY):
        raw = v.encode("utf-8") if isinstance(v, str) else v
        return raw[:width].ljust(width, b"\0")
    if root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        return _double_bytes(float(v))
    if root == TypeRoot.BOOLEAN:
        return (b"\x81" if v else b"\0") + bytes(7)
    if root == TypeRoot.DECIMAL:
        assert dtype.scale is not None
        return _decimal_bytes(v, dtype.scale)
    if root == TypeRoot.DATE:
        return _long_bytes((v - datetime.date(1970, 1, 1)).days)
    if dtype.is_timestamp:
        micros = (v - datetime.datetime(1970, 1, 1)) // datetime.timedelta(microseconds=1)
        return _long_bytes(micros // 1000)
    return _long_bytes(int(v))


def _oracle_interleave(columns: list[bytes], size: int) -> bytes:
    """``ZOrderByteUtils.interleaveBits``, transcribed loop for loop."""
    out = bytearray(size)
    src_col = src_byte = 0
    src_bit = out_bit = 7
    out_byte = 0
    while out_byte < size:
        out[out_byte] |= ((columns[src_col][src_byte] >> src_bit) & 1) << out_bit
        out_bit -= 1
        if out_bit == -1:
            out_byte += 1
            out_bit = 7
        if out_byte == size:
            break
        while True:
            src_col += 1
            if src_col == len(columns):
                src_col = 0
                src_bit -= 1
                if src_bit == -1:
                    src_byte += 1
                    src_bit = 7
            if len(columns[src_col]) > src_byte:
                break
    return bytes(out)


def _oracle_keys(cols: list[list[Any]], types: list[DataType], var_size: int) -> list[bytes]:
    size = zorder_key_size(types, var_size)
    return [
        _oracle_interleave(
            [_oracle_column(t, col[r], var_size) for t, col in zip(types, cols, strict=True)], size
        )
        for r in range(len(cols[0]))
    ]


# -- strategies ----------------------------------------------------------------------------------

_INT_RANGES = {TINYINT: 7, SMALLINT: 15, INT: 31, BIGINT: 63}


def _values(dtype: DataType) -> st.SearchStrategy[Any]:
    if dtype in _INT_RANGES:
        bits = _INT_RANGES[dtype]
        return st.integers(-(2**bits), 2**bits - 1)
    if dtype == FLOAT:
        return st.floats(width=32)
    if dtype == DOUBLE:
        return st.floats()
    if dtype == BOOLEAN:
        return st.booleans()
    if dtype == STRING:
        return st.text(max_size=12)
    if dtype == BINARY:
        return st.binary(max_size=12)
    if dtype == DATE:
        return st.dates()
    if dtype in (TS3, TS6):
        return st.datetimes(
            min_value=datetime.datetime(1000, 1, 1), max_value=datetime.datetime(9000, 1, 1)
        ).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000) if dtype == TS3 else d)
    digits = 10 if dtype == DEC10 else 38
    scale = 2 if dtype == DEC10 else 4
    return st.integers(-(10**digits) + 1, 10**digits - 1).map(
        lambda u: decimal.Decimal(u).scaleb(-scale, context=_EXACT)
    )


ALL_TYPES = [TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, BOOLEAN, STRING, BINARY, DATE]
ALL_TYPES += [TS3, TS6, DEC10, DEC38]


@st.composite
def _tables(draw: st.DrawFn) -> tuple[list[list[Any]], list[DataType]]:
    types = draw(st.lists(st.sampled_from(ALL_TYPES), min_size=1, max_size=4))
    n = draw(st.integers(0, 25))
    cols = [draw(st.lists(st.none() | _values(t), min_size=n, max_size=n)) for t in types]
    return cols, types


def _arrow(values: list[Any], dtype: DataType) -> pa.Array:
    return pa.array(values, dtype.to_arrow())


# -- tests ---------------------------------------------------------------------------------------


@given(_tables(), st.integers(1, 16))
def test_keys_equal_the_per_row_java_transcription(
    table: tuple[list[list[Any]], list[DataType]], var_size: int
) -> None:
    cols, types = table
    keys = zorder_keys([_arrow(c, t) for c, t in zip(cols, types, strict=True)], types, var_size)
    expected = _oracle_keys(cols, types, var_size)
    got = keys.to_pylist()
    for row, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g == e, f"row {row} {[c[row] for c in cols]} types {types}: {g!r} != {e!r}"


@pytest.mark.parametrize(
    ("dtype", "strategy"),
    [
        (INT, st.integers(-(2**31), 2**31 - 1)),
        (BIGINT, st.integers(-(2**63), 2**63 - 1)),
        (SMALLINT, st.integers(-(2**15), 2**15 - 1)),
        (DATE, st.dates()),
    ],
    ids=["int", "bigint", "smallint", "date"],
)
def test_single_integer_column_key_order_is_value_order(
    dtype: DataType, strategy: st.SearchStrategy[Any]
) -> None:
    @given(st.lists(strategy, min_size=2, max_size=40))
    def check(values: list[Any]) -> None:
        keys = zorder_keys([_arrow(values, dtype)], [dtype]).to_pylist()
        for a, ka in zip(values, keys, strict=True):
            for b, kb in zip(values, keys, strict=True):
                assert (a < b) == (ka < kb), f"{dtype.root.value} {a} < {b} but keys disagree"

    check()


@given(st.lists(st.binary(max_size=12), min_size=2, max_size=30), st.integers(1, 10))
def test_single_binary_column_orders_by_zero_padded_prefix(values: list[bytes], size: int) -> None:
    keys = zorder_keys([pa.array(values, pa.binary())], [BINARY], size).to_pylist()
    for a, ka in zip(values, keys, strict=True):
        for b, kb in zip(values, keys, strict=True):
            pa_, pb = a[:size].ljust(size, b"\0"), b[:size].ljust(size, b"\0")
            assert (pa_ < pb) == (ka < kb), f"prefix order of {a!r} vs {b!r} (size {size})"


def _hi32(v: float) -> int:
    return int(struct.unpack(">q", struct.pack(">d", v))[0]) >> 32


@given(st.lists(st.floats(allow_nan=False), min_size=2, max_size=30))
def test_single_double_column_orders_by_value_across_high_words(values: list[float]) -> None:
    """The ``>> 31`` quirk keeps order whenever the two doubles differ in their top 32 bits."""
    keys = zorder_keys([pa.array(values, pa.float64())], [DOUBLE]).to_pylist()
    for a, ka in zip(values, keys, strict=True):
        for b, kb in zip(values, keys, strict=True):
            if a < b and _hi32(a) != _hi32(b):
                assert ka < kb, f"{a} < {b} (different high words) but key order disagrees"
            if a >= 0 and b >= 0 and a < b:
                assert ka < kb, f"non-negative {a} < {b} but key order disagrees"


def test_double_quirk_misorders_negatives_sharing_a_high_word() -> None:
    """Pinned Paimon behaviour (``lval >> 31``), not a bug of ours: keep byte identity."""
    a, b = -1.0000000000000002, -1.0
    ka, kb = zorder_keys([pa.array([a, b])], [DOUBLE]).to_pylist()
    assert a < b
    assert ka > kb, "Paimon's float transform orders these two negatives backwards"


def test_nan_infinities_and_signed_zero() -> None:
    values = [float("-inf"), -1.5, -0.0, 0.0, 1.5, float("inf"), float("nan"), None]
    keys = zorder_keys([pa.array(values, pa.float64())], [DOUBLE]).to_pylist()
    assert keys[-1] == bytes(8), "null encodes as zero bytes"
    assert keys[:6] == sorted(keys[:6]), "-inf < -1.5 < -0 < 0 < 1.5 < inf in key order"
    assert keys[2] != keys[3], "-0.0 and 0.0 have different bits, as in Java"
    assert keys[6] > keys[5], "canonical NaN sorts above +inf"
    other_nan = struct.unpack(">d", bytes.fromhex("7ff0000000000001"))[0]
    assert zorder_keys([pa.array([other_nan])], [DOUBLE]).to_pylist() == [keys[6]], (
        "every NaN payload is canonicalised like Double.doubleToLongBits"
    )
    f32 = zorder_keys([pa.array([1.5, None], pa.float32())], [FLOAT]).to_pylist()
    assert f32[0] == keys[4], "FLOAT is widened to double first"


def test_nulls_are_zero_bytes_and_collide_with_the_smallest_bigint() -> None:
    keys = zorder_keys(
        [pa.array([None, -(2**63), None]), pa.array([None, "", ""])], [BIGINT, STRING]
    ).to_pylist()
    assert keys[0] == bytes(16), "all-null row is all zero bytes"
    assert keys[1] == keys[0] == keys[2], "Paimon: null and Long.MIN_VALUE share a key"


def test_boolean_and_decimal_bytes() -> None:
    assert zorder_column_bytes(pa.array([True, False, None]), BOOLEAN).tolist() == [
        [0x81, 0, 0, 0, 0, 0, 0, 0],
        [0] * 8,
        [0] * 8,
    ], "BOOLEAN: 0x81 for true"
    dec = pa.array([decimal.Decimal("1.00"), decimal.Decimal("-0.01"), None], DEC10.to_arrow())
    got = zorder_column_bytes(dec, DEC10).tolist()
    assert got[0] == [0x64, 0, 0, 0, 0, 0, 0, 0], "unscaled 100 is one byte, left-aligned"
    assert got[1] == [0xFF, 0, 0, 0, 0, 0, 0, 0], "unscaled -1 is 0xff"
    assert got[2] == [0] * 8, "null decimal is zero bytes"


def test_interleave_matches_transcription_for_uneven_widths() -> None:
    rng = np.random.default_rng(7)
    widths = [8, 3, 12, 1]
    mats = [rng.integers(0, 256, (50, w), dtype=np.uint8) for w in widths]
    got = interleave_bits(mats)
    for r in range(50):
        expected = _oracle_interleave([bytes(m[r]) for m in mats], sum(widths))
        assert bytes(got[r]) == expected, f"row {r}: uneven-width interleave differs"


def test_empty_input_gives_empty_keys() -> None:
    keys = zorder_keys([pa.array([], pa.int32()), pa.array([], pa.string())], [INT, STRING])
    assert len(keys) == 0 and keys.type == pa.binary(), "no rows, no keys"


def test_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="at least one column"):
        zorder_keys([], [])
    with pytest.raises(InvalidArgumentError, match="2 columns but 1 types"):
        zorder_keys([pa.array([1]), pa.array([2])], [INT])
    with pytest.raises(InvalidArgumentError, match="differ in length"):
        zorder_keys([pa.array([1]), pa.array([2, 3])], [INT, INT])
    with pytest.raises(InvalidArgumentError, match="var_length_contribution"):
        zorder_keys([pa.array(["a"])], [STRING], var_length_contribution=0)
    attrs = map_of(STRING, STRING)
    with pytest.raises(TypeMismatchError, match="MAP"):
        zorder_keys([pa.array([[("k", "v")]], attrs.to_arrow())], [attrs])
