"""bloom-filter index: paimon-cpp golden bytes, no false negatives, FPP bound, corrupt input."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip import types as T
from lakeskip.errors import CorruptIndexError, InvalidOptionError
from lakeskip.index.bloom_filter import bloom_size
from lakeskip.index.registry import get_indexer
from lakeskip.index.result import REMAIN, SKIP

BLOOM = get_indexer("bloom-filter")


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


_CASES = [
    (T.INT, pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    (T.BIGINT, pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    (T.DOUBLE, pa.float64(), st.floats(allow_nan=False)),
    (T.FLOAT, pa.float32(), st.floats(width=32, allow_nan=False)),
    (T.STRING, pa.string(), st.text(max_size=10)),
    (T.BINARY, pa.binary(), st.binary(max_size=10)),
    (T.DATE, pa.date32(), st.integers(-100_000, 100_000)),
]


@pytest.mark.parametrize(("dtype", "atype", "strategy"), _CASES, ids=lambda c: str(c)[:12])
def test_no_false_negatives(
    dtype: T.DataType, atype: pa.DataType, strategy: st.SearchStrategy
) -> None:  # type: ignore[type-arg]
    @given(st.lists(st.one_of(st.none(), strategy), max_size=40))
    def check(values: list[object]) -> None:
        arr = (
            pa.array(values, pa.int32()).cast(atype) if dtype is T.DATE else pa.array(values, atype)
        )
        data = _build(dtype, arr, {"items": "20", "fpp": "0.05"})
        reader = BLOOM.create_reader(dtype, {}, data)
        for v in arr.to_pylist():
            if v is None:
                continue
            lit = (v - __import__("datetime").date(1970, 1, 1)).days if dtype is T.DATE else v
            assert reader.visit_equal(lit) is REMAIN, f"present value {lit!r} must REMAIN"
            assert reader.visit_in([lit]) is REMAIN, f"IN containing {lit!r} must REMAIN"

    check()


def test_zero_matches_negative_zero() -> None:
    data = _build(T.DOUBLE, pa.array([-0.0]), {"items": "10", "fpp": "0.01"})
    assert BLOOM.create_reader(T.DOUBLE, {}, data).visit_equal(0.0) is REMAIN, "SQL 0.0 = -0.0"


def test_measured_fpp_within_bound() -> None:
    items, fpp = 2000, 0.05
    data = _build(
        T.BIGINT, pa.array(range(items), pa.int64()), {"items": str(items), "fpp": str(fpp)}
    )
    reader = BLOOM.create_reader(T.BIGINT, {}, data)
    probes = range(10**9, 10**9 + 5000)  # deterministic, all absent
    false_pos = sum(reader.visit_equal(v) is REMAIN for v in probes)
    assert false_pos / 5000 < 2 * fpp, f"measured fpp {false_pos / 5000} far above {fpp}"
    assert reader.visit_in([10**12, 10**12 + 1]) in (SKIP, REMAIN)


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
        b"\x00\x00\x01\x00\x01",
    ],
)
def test_corrupt_payload(data: bytes) -> None:
    with pytest.raises(CorruptIndexError):
        BLOOM.create_reader(T.INT, {}, data)
