"""bloom-filter index: paimon-cpp golden bytes, no false negatives, FPP bound, corrupt input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip import types as T
from lakeskip.errors import CorruptIndexError, InvalidOptionError
from lakeskip.index.bloom_filter import MAX_HASH_FUNCTIONS, bloom_positions, bloom_size
from lakeskip.index.registry import get_indexer
from lakeskip.index.result import REMAIN, SKIP

BLOOM = get_indexer("bloom-filter")
_CPP = json.loads(
    (Path(__file__).parents[2] / "golden/paimon_cpp/bloom_filter.json").read_text(encoding="utf-8")
)


def _golden_array(dtype: T.DataType, values: list[object]) -> pa.Array:
    if dtype.root is T.TypeRoot.DATE:
        return pa.array(values, pa.int32()).cast(pa.date32())
    if dtype.is_timestamp:
        return pa.array(values, pa.int64()).cast(dtype.to_arrow())
    return pa.array(values, dtype.to_arrow())


def _build(dtype: T.DataType, arr: pa.Array, opts: dict[str, str]) -> bytes:
    w = BLOOM.create_writer(dtype, opts)
    w.write(arr)
    return w.serialize()


def test_paimon_cpp_string_example() -> None:
    # apache/paimon-cpp bloom_filter_file_index_test.cpp: "a","b","" items=10 fpp=0.02
    data = _build(T.STRING, pa.array(["a", "b", ""]), {"items": "10", "fpp": "0.02"})
    assert len(data) == 15, "4-byte k + 11 bytes of bits"
    assert data.hex() == "0000000600202003d02000404910c9"


def test_sizing_matches_java() -> None:
    # numBits = nb + (8 - nb % 8), k = round(numBits/items*ln2)
    assert bloom_size(10, 0.02) == (88, 6)
    assert bloom_size(1_000_000, 0.1)[0] % 8 == 0


def test_split_writes_equal_one_write() -> None:
    opts = {"items": "100", "fpp": "0.01"}
    vals = list(range(-50, 50))
    w = BLOOM.create_writer(T.BIGINT, opts)
    w.write(pa.array(vals[:30], pa.int64()))
    w.write(pa.array(vals[30:], pa.int64()))
    assert w.serialize() == _build(T.BIGINT, pa.array(vals, pa.int64()), opts)


@pytest.mark.parametrize("case", _CPP["cases"], ids=lambda c: c["case"])
def test_paimon_cpp_golden(case: dict) -> None:  # type: ignore[type-arg]
    """Java-written payloads from paimon-cpp: byte-identical writer, reader keeps every value."""
    dtype = T.parse_sql_type(case["type"])
    arr = _golden_array(dtype, case["values"])
    got = _build(dtype, arr, case["options"]).hex()
    assert got == case["hex"], f"{case['case']}: writer bytes differ from Java's"
    reader = BLOOM.create_reader(dtype, {}, bytes.fromhex(case["hex"]))
    for v in case["values"]:
        lit = float(np.float32(v)) if dtype.root is T.TypeRoot.FLOAT else v
        assert reader.visit_equal(lit) is REMAIN, f"{case['case']}: Java wrote {v!r}"


def test_nanosecond_input_floors_like_java() -> None:
    # paimon-cpp TestTimestampType writes Timestamp(-1745 ms, 123000 ns): micros = -1744877;
    # from Arrow nanos -1744877000 + 1 ns, Java's toMicros floors (nanoOfMillisecond >= 0)
    ts9 = T.parse_sql_type("TIMESTAMP(9)")
    case = next(c for c in _CPP["cases"] if c["case"] == "TestTimestampType")
    nanos = [v * 1000 + 1 for v in case["values"]]
    got = _build(ts9, pa.array(nanos, pa.timestamp("ns")), case["options"]).hex()
    assert got == case["hex"], "sub-microsecond digits must floor, not fail or truncate to 0"


_CASES = [
    (T.TINYINT, pa.int8(), st.integers(-128, 127)),
    (T.SMALLINT, pa.int16(), st.integers(-(2**15), 2**15 - 1)),
    (T.INT, pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    (T.BIGINT, pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    (T.DOUBLE, pa.float64(), st.floats(allow_nan=False)),
    (T.FLOAT, pa.float32(), st.floats(width=32, allow_nan=False)),
    (T.STRING, pa.string(), st.text(max_size=10)),
    (T.BINARY, pa.binary(), st.binary(max_size=10)),
    (T.DATE, pa.date32(), st.integers(-100_000, 100_000)),
    (T.TIMESTAMP, pa.timestamp("us"), st.integers(-(6 * 10**16), 6 * 10**16)),
    (T.parse_sql_type("TIMESTAMP(3)"), pa.timestamp("ms"), st.integers(-(6 * 10**13), 6 * 10**13)),
    (T.TIMESTAMP_LTZ, pa.timestamp("us", tz="UTC"), st.integers(-(6 * 10**16), 6 * 10**16)),
]


@pytest.mark.parametrize(("dtype", "atype", "strategy"), _CASES, ids=lambda c: str(c)[:12])
def test_no_false_negatives(
    dtype: T.DataType, atype: pa.DataType, strategy: st.SearchStrategy
) -> None:  # type: ignore[type-arg]
    @given(st.lists(st.one_of(st.none(), strategy), max_size=40))
    def check(values: list[object]) -> None:
        if dtype is T.DATE:
            arr = pa.array(values, pa.int32()).cast(atype)
        elif dtype.is_timestamp:
            arr = pa.array(values, pa.int64()).cast(atype)
        else:
            arr = pa.array(values, atype)
        data = _build(dtype, arr, {"items": "20", "fpp": "0.05"})
        reader = BLOOM.create_reader(dtype, {}, data)
        for v in arr.to_pylist():
            if v is None:
                continue
            lit = T.to_internal(dtype, v)
            assert reader.visit_equal(lit) is REMAIN, f"present value {lit!r} must REMAIN"
            assert reader.visit_in([lit]) is REMAIN, f"IN containing {lit!r} must REMAIN"

    check()


def test_zero_matches_negative_zero() -> None:
    data = _build(T.DOUBLE, pa.array([-0.0]), {"items": "10", "fpp": "0.01"})
    assert BLOOM.create_reader(T.DOUBLE, {}, data).visit_equal(0.0) is REMAIN, "SQL 0.0 = -0.0"


def _random_values(dtype: T.DataType, rng: np.random.Generator, n: int) -> list[object]:
    if dtype.root is T.TypeRoot.STRING:
        return [f"s{x:x}" for x in rng.integers(0, 2**62, n)]
    if dtype.root is T.TypeRoot.BINARY:
        return [x.tobytes() for x in rng.integers(0, 2**62, n)]
    if dtype.root in (T.TypeRoot.DOUBLE, T.TypeRoot.FLOAT):
        width = np.float32 if dtype.root is T.TypeRoot.FLOAT else np.float64
        return [float(x) for x in rng.normal(0, 1e6, n).astype(width)]
    return [int(x) for x in rng.integers(-(2**31), 2**31 - 1, n)]


@pytest.mark.parametrize("dtype", [T.INT, T.BIGINT, T.DOUBLE, T.FLOAT, T.STRING, T.BINARY], ids=str)
@pytest.mark.parametrize("fpp", [0.01, 0.1])
def test_measured_fpp_within_bound(dtype: T.DataType, fpp: float) -> None:
    """Fixed seed, so deterministic: with `items` = the real count, the false-positive rate on
    absent values stays near the configured fpp (Paimon's sizing gives ~fpp)."""
    rng = np.random.default_rng(20240611)
    items, probes = 2000, 3000
    values = _random_values(dtype, rng, items + probes)
    present = values[:items]
    seen = set(present)
    absent = [v for v in values[items:] if v not in seen]
    data = _build(
        dtype, pa.array(present, dtype.to_arrow()), {"items": str(items), "fpp": str(fpp)}
    )
    reader = BLOOM.create_reader(dtype, {}, data)
    assert all(reader.visit_equal(v) is REMAIN for v in present), "no false negatives"
    measured = sum(reader.visit_equal(v) is REMAIN for v in absent) / len(absent)
    assert measured < 2 * fpp + 0.005, f"{dtype}: measured fpp {measured:.4f}, configured {fpp}"
    in_remain = reader.visit_in(absent[:1] + present[:1])
    assert in_remain is REMAIN, "IN with one present value must REMAIN"


def test_in_is_or_of_equal() -> None:
    data = _build(T.BIGINT, pa.array([1, 2, 3], pa.int64()), {"items": "1000", "fpp": "0.001"})
    reader = BLOOM.create_reader(T.BIGINT, {}, data)
    absent = [v for v in range(10**6, 10**6 + 50) if reader.visit_equal(v) is SKIP][:5]
    assert len(absent) == 5, "fpp 0.001: almost every probe is a definite miss"
    assert reader.visit_in(absent) is SKIP, "no value present: SKIP"
    assert reader.visit_in([*absent, 2]) is REMAIN, "2 is present"


def test_tiny_fpp_many_hash_functions_round_trip() -> None:
    # k ~ log2(1/fpp): 1e-30 gives k=100 (> 64); our own output must read back
    items, fpp = 5, 1e-30
    num_bits, k = bloom_size(items, fpp)
    assert 64 < k <= MAX_HASH_FUNCTIONS, k
    data = _build(T.STRING, pa.array(["x", "y"]), {"items": str(items), "fpp": str(fpp)})
    assert len(data) == 4 + num_bits // 8
    reader = BLOOM.create_reader(T.STRING, {}, data)
    assert reader.visit_equal("x") is REMAIN and reader.visit_equal("z") is SKIP
    assert bloom_size(1, 5e-324)[1] <= MAX_HASH_FUNCTIONS, "smallest fpp still readable"


def test_null_only_and_nan() -> None:
    data = _build(T.DOUBLE, pa.array([None, None], pa.float64()), {"items": "10", "fpp": "0.01"})
    reader = BLOOM.create_reader(T.DOUBLE, {}, data)
    assert reader.visit_equal(1.0) is SKIP, "nulls are not added"
    nan_bits = np.array([0x7FF0000000000001], dtype=np.int64).view(np.float64)
    data = _build(T.DOUBLE, pa.array(nan_bits), {"items": "10", "fpp": "0.01"})
    reader = BLOOM.create_reader(T.DOUBLE, {}, data)
    assert reader.visit_equal(float("nan")) is REMAIN, "doubleToLongBits: one canonical NaN"


def test_unsupported_types() -> None:
    assert not BLOOM.supports(T.BOOLEAN)
    assert not BLOOM.supports(T.decimal_type(10, 2))
    assert not BLOOM.supports(T.map_of(T.STRING, T.INT))
    assert BLOOM.supports(T.STRING) and BLOOM.supports(T.TIMESTAMP)


@pytest.mark.parametrize(
    ("opts", "key"),
    [
        ({"fpp": "0"}, "fpp"),
        ({"fpp": "1.5"}, "fpp"),
        ({"fpp": "x"}, "fpp"),
        ({"items": "0"}, "items"),
        ({"items": "-3"}, "items"),
        ({"items": "1.5"}, "items"),
        ({"items": str(2**31)}, "items"),
        ({"items": str(2**31 - 1), "fpp": "0.01"}, "items"),
    ],
)
def test_invalid_options(opts: dict[str, str], key: str) -> None:
    with pytest.raises(InvalidOptionError, match=key):
        BLOOM.validate_options(T.INT, opts)
    with pytest.raises(InvalidOptionError, match=key):
        BLOOM.create_writer(T.INT, opts)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\x00",
        b"\x00\x00\x00\x06",
        b"\x00\x00\x00\x00\xff",
        b"\xff\xff\xff\xff\x01",
        b"\x00\x00\x10\x00\x01",
        b"\x00\x00\x08\x01" + b"\x00" * 8,
    ],
)
def test_corrupt_payload(data: bytes) -> None:
    with pytest.raises(CorruptIndexError):
        BLOOM.create_reader(T.INT, {}, data)


def _java_positions(hash_: int, k: int, num_bits: int) -> list[int]:
    """BloomFilter64's probes in plain Python ints with Java int semantics (oracle)."""

    def to_int(x: int) -> int:
        x &= 0xFFFFFFFF
        return x - (1 << 32) if x >> 31 else x

    h1 = to_int(hash_)
    h2 = to_int(hash_ >> 32)
    out = []
    for i in range(1, k + 1):
        c = to_int(h1 + i * h2)
        if c < 0:
            c = ~c
        out.append(c % num_bits)
    return out


@given(
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=30),
    st.integers(1, 40),
    st.integers(1, 2**31 - 1),
)
def test_positions_match_java_oracle(hashes: list[int], k: int, num_bits: int) -> None:
    got = bloom_positions(np.array(hashes, dtype=np.int64), k, num_bits).reshape(k, -1)
    for j, h in enumerate(hashes):
        assert got[:, j].tolist() == _java_positions(h, k, num_bits)
