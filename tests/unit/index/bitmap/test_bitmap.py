"""Bitmap index (V1/V2): exact answers against a Python oracle, Java byte identity (Paimon
0.9.0 vectors and paimon-cpp's Java-made vectors), HashMap-order emulation, corrupt bytes."""

from __future__ import annotations

import contextlib
import json
import math
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyroaring import BitMap

from lakeskip import types as T
from lakeskip.errors import CorruptIndexError, InvalidOptionError
from lakeskip.index.bitmap import BitmapIndexer
from lakeskip.index.primitives import java as _java
from lakeskip.index.result import BitmapResult
from lakeskip.types import DataType

GOLDEN = Path(__file__).resolve().parents[3] / "golden"
IX = BitmapIndexer()


def _arrow(dtype: DataType, values: list[Any]) -> pa.Array:
    vals = [float(v) if v in ("NaN", "Infinity", "-Infinity") else v for v in values]
    if dtype.root is T.TypeRoot.DATE:
        return pa.array(vals, pa.int32()).cast(pa.date32())
    if dtype.is_timestamp:
        return pa.array(vals, pa.int64()).cast(dtype.to_arrow())
    return pa.array(vals, dtype.to_arrow())


def _write(dtype: DataType, values: list[Any], opts: dict[str, str], chunks: int = 1) -> bytes:
    w = IX.create_writer(dtype, opts)
    step = max(1, math.ceil(len(values) / chunks))
    for i in range(0, len(values), step):
        w.write(_arrow(dtype, values[i : i + step]))
    return w.serialize()


def _all_rows(result: Any) -> set[int]:
    assert isinstance(result, BitmapResult), f"bitmap must answer with rows, got {result!r}"
    return set(result.bitmap)


def _same(dtype: DataType, a: Any, b: Any) -> bool:
    """SQL equality on internal values (Spark: NaN = NaN, 0.0 = -0.0)."""
    if dtype.root in (T.TypeRoot.FLOAT, T.TypeRoot.DOUBLE):
        fa, fb = float(a), float(b)
        return (fa != fa and fb != fb) or fa == fb
    return bool(a == b)


def _check_exact(
    dtype: DataType, values: list[Any], reader: Any, probes: list[Any], past_end: bool = False
) -> None:
    """``past_end``: rows at or after ``len(values)`` are tolerated in answers (a row count
    corrupted upwards; no data row is there, so nothing is dropped)."""
    n = len(values)
    nn = {i for i, v in enumerate(values) if v is not None}

    def _rows(result: Any) -> set[int]:
        if past_end and isinstance(result, BitmapResult):
            return set(result.bitmap & BitMap(range(n)))
        return _all_rows(result)

    assert _rows(reader.visit_is_null()) == set(range(len(values))) - nn, "IS NULL not exact"
    assert _rows(reader.visit_not_null()) == nn, "IS NOT NULL not exact"
    for p in probes:
        eq = {i for i in nn if _same(dtype, values[i], p)}
        assert _rows(reader.visit_equal(p)) == eq, f"= {p!r} not exact on {values}"
        assert _rows(reader.visit_not_equal(p)) == nn - eq, f"<> {p!r} not exact on {values}"
    for k in range(0, len(probes), 3):
        lits = probes[k : k + 3]
        hit = {i for i in nn if any(_same(dtype, values[i], p) for p in lits)}
        assert _rows(reader.visit_in(lits)) == hit, f"IN {lits!r} not exact on {values}"
        assert _rows(reader.visit_not_in(lits)) == nn - hit, f"NOT IN {lits!r} not exact"


# -- Java HashMap / hashCode emulation ------------------------------------------------------


def test_hashmap_order_documented_examples() -> None:
    ints = [-1, 0, 1, 2, -2]
    order = [ints[i] for i in _java.hashmap_order(ints, ints)]
    assert order == [0, -1, -2, 1, 2], (
        f"Java iterates {{-1,0,1,2,-2}} as [0,-1,-2,1,2], got {order}"
    )
    bools = [True, False]
    hashes = [_java.boolean_hash(b) for b in bools]
    got = [bools[i] for i in _java.hashmap_order(hashes, bools)]
    assert got == [False, True], f"Java iterates Boolean keys as [false, true], got {got}"


@given(st.lists(st.binary(max_size=40), max_size=30))
def test_binary_string_hash_vectorised_matches_scalar(values: list[bytes]) -> None:
    got = _java.hash_binary_strings(values).tolist()
    assert got == [_java.binary_string_hash(v) for v in values], "vectorised murmur differs"


@given(
    keys=st.lists(st.integers(-(2**31), 2**31 - 1), unique=True, max_size=200),
    shift=st.sampled_from([0, 4, 10, 16, 20]),
    pending=st.booleans(),
)
def test_hashmap_fast_path_matches_node_emulation(
    keys: list[int], shift: int, pending: bool
) -> None:
    """The vectorised order (bin, newest first) equals the node-by-node emulation whenever
    no bin treeifies; with colliding hashes (shifted keys) the emulation must still return
    a permutation."""
    hashes = [(k << shift) & 0xFFFFFFFF for k in keys]
    hashes = [h - (1 << 32) if h >= 1 << 31 else h for h in hashes]
    slow = _java._HashMap(keys, [int(h) for h in _java._spread(hashes)]).fill(pending)
    assert sorted(slow) == list(range(len(keys))), "emulation lost or duplicated keys"
    assert _java.hashmap_order(hashes, keys, pending) == slow, "fast path disagrees"


@given(
    n=st.integers(60, 3000),
    colliding=st.integers(8, 40),
    stride=st.sampled_from([64, 256, 1024]),
    pending=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_hashmap_partial_emulation_matches_full_emulation(
    n: int, colliding: int, stride: int, pending: bool, seed: int
) -> None:
    """With some bins treeified and most not, only the keys of the treeified lineages are
    emulated node by node: the result must equal emulating every key."""
    # hashes below 2**16 are their own spread: `colliding` share one bin while capacity <= stride
    hashes = _collision_hashes(n, colliding, stride, seed)
    keys = list(range(n))
    full = _java._HashMap(keys, [int(h) for h in _java._spread(hashes)]).fill(pending)
    assert _java.hashmap_order(hashes, keys, pending) == full, "partial emulation disagrees"


def _collision_hashes(n: int, colliding: int, stride: int, seed: int) -> list[int]:
    """The hashes of the partial-emulation test above (and of ``java/hashmap_order.json``)."""
    rng = random.Random(seed)
    hashes = [5 + stride * j for j in range(colliding)]
    hashes += rng.sample(range(1 << 16, 1 << 31), n - colliding)
    rng.shuffle(hashes)
    return hashes


_HASHMAP_GOLDEN: list[dict[str, Any]] = json.loads(
    (GOLDEN / "java" / "hashmap_order.json").read_text()
)["cases"]


def test_partial_emulation_regression_resize_after_last_tainted_key() -> None:
    """Found by hypothesis: bin 5 treeifies at capacity 64 and its keys end before the resize
    to 128, which splits and re-treeifies that bin. The partial emulation used to stop at 64
    and kept the old in-bin order. Expected order from real Java (HashMapOrder.java)."""
    hashes = _collision_hashes(60, 8, 256, 134)
    keys = list(range(60))
    golden = _HASHMAP_GOLDEN[0]
    assert golden["case"] == "regression_n60_c8_s256_seed134", "golden file reordered"
    assert golden["hashes"] == hashes, "test generator and golden hashes diverged"
    got = _java.hashmap_order(hashes, keys, False)
    assert got[:6] == [57, 13, 38, 17, 28, 33], f"partial emulation order starts {got[:6]}"
    assert got == golden["order"], "partial emulation differs from java.util.HashMap"


@pytest.mark.parametrize("case", _HASHMAP_GOLDEN, ids=[c["case"] for c in _HASHMAP_GOLDEN])
def test_hashmap_order_matches_java(case: dict[str, Any]) -> None:
    """Both emulations against ``java.util.HashMap`` iteration order (OpenJDK 17), on maps
    with no treeified bin, with one treeified below capacity 64 and with tree bins split by
    later resizes."""
    hashes, keys, pending = case["hashes"], list(range(case["n"])), case["pending"]
    full = _java._HashMap(keys, [int(h) for h in _java._spread(hashes)]).fill(pending)
    assert full == case["order"], f"{case['case']}: node emulation differs from Java"
    got = _java.hashmap_order(hashes, keys, pending)
    assert got == case["order"], f"{case['case']}: hashmap_order differs from Java"


def test_treeified_bin_is_a_permutation_with_root_first() -> None:
    keys = [k * 4096 for k in range(40)]  # spread hash low bits collide -> tree bins
    order = _java.hashmap_order(keys, keys)
    assert sorted(order) == list(range(40)), "tree-bin emulation lost keys"


# -- golden bytes --------------------------------------------------------------------------


JAVA_V1 = list(json.loads((GOLDEN / "java" / "bitmap_v1.json").read_text())["cases"])
CPP = (
    json.loads((GOLDEN / "paimon_cpp" / "bitmap_more.json").read_text())["cases"]
    + json.loads((GOLDEN / "paimon_cpp" / "bitmap.json").read_text())["cases"]
)


def _probes(dtype: DataType, values: list[Any]) -> list[Any]:
    present = [float(v) if v == "NaN" else v for v in values if v is not None]
    absent: list[Any] = {
        T.TypeRoot.STRING: ["zz", ""],
        T.TypeRoot.BOOLEAN: [],
        T.TypeRoot.FLOAT: [2.0, float("nan")],
        T.TypeRoot.DOUBLE: [2.0, float("nan")],
    }.get(dtype.root, [7, -3])
    return present + absent


@pytest.mark.parametrize("case", JAVA_V1, ids=[c["case"] for c in JAVA_V1])
def test_writer_byte_identical_to_paimon_090_v1(case: dict[str, Any]) -> None:
    dtype = T.parse_sql_type(case["type"])
    got = _write(dtype, case["values"], {"version": "1"}, chunks=2)
    assert got.hex() == case["hex"], f"{case['case']}: V1 bytes differ from Paimon 0.9.0"
    values = [
        float(v) if isinstance(v, str) and dtype.root is T.TypeRoot.DOUBLE else v
        for v in case["values"]
    ]
    _check_exact(dtype, values, IX.create_reader(dtype, {}, got), _probes(dtype, case["values"]))


@pytest.mark.parametrize("case", CPP, ids=[c["case"] for c in CPP])
def test_paimon_cpp_java_vectors_byte_identical_and_exact(case: dict[str, Any]) -> None:
    dtype = T.parse_sql_type(case["type"])
    got = _write(dtype, case["values"], {"version": case["version"]})
    assert got.hex() == case["hex"], f"{case['case']}: bytes differ from Java's"
    values = [float(v) if v == "NaN" else v for v in case["values"]]
    reader = IX.create_reader(dtype, {}, bytes.fromhex(case["hex"]))
    _check_exact(dtype, values, reader, _probes(dtype, case["values"]))


# -- oracle --------------------------------------------------------------------------------

_I = st.integers
TYPES: dict[str, tuple[DataType, st.SearchStrategy[Any]]] = {
    "tinyint": (T.TINYINT, _I(-128, 127)),
    "smallint": (T.SMALLINT, _I(-(2**15), 2**15 - 1)),
    "int": (T.INT, st.one_of(_I(-(2**31), 2**31 - 1), _I(-40, 40).map(lambda x: x * 65536))),
    "bigint": (T.BIGINT, st.one_of(_I(-(2**63), 2**63 - 1), _I(-40, 40).map(lambda x: x << 32))),
    "date": (T.DATE, _I(-30000, 30000)),
    "timestamp3": (T.parse_sql_type("TIMESTAMP(3)"), _I(-(10**13), 10**13)),
    "timestamp_ltz6": (T.TIMESTAMP_LTZ, _I(-(10**16), 10**16)),
    "string": (T.STRING, st.text(alphabet="ab\x00é日😀", max_size=5)),
    "boolean": (T.BOOLEAN, st.booleans()),
    "float": (T.FLOAT, st.one_of(st.floats(width=32), st.sampled_from([0.0, -0.0, 1.5]))),
    "double": (T.DOUBLE, st.one_of(st.floats(), st.sampled_from([0.0, -0.0, float("nan")]))),
}


@pytest.mark.parametrize("name", list(TYPES))
@given(data=st.data())
def test_answers_equal_python_oracle(name: str, data: st.DataObject) -> None:
    dtype, scalar = TYPES[name]
    pool = data.draw(st.lists(scalar, min_size=1, max_size=8), label="pool")
    values = data.draw(
        st.lists(st.one_of(st.none(), st.sampled_from(pool), scalar), max_size=60), label="values"
    )
    opts = {
        "version": data.draw(st.sampled_from(["1", "2"])),
        "index-block-size": data.draw(st.sampled_from(["16b", "40b", "100b", "16kb"])),
    }
    raw = _write(dtype, values, opts, chunks=data.draw(st.integers(1, 3)))
    reader = IX.create_reader(dtype, {}, raw)
    probes = [*pool, *data.draw(st.lists(scalar, max_size=4), label="absent-or-present")]
    _check_exact(dtype, values, reader, probes)
    again = _write(dtype, values, opts)
    assert again == raw, "chunked and one-shot writes must give identical bytes"


def test_many_blocks_are_used_and_found() -> None:
    values = [f"key-{i % 300:04d}" for i in range(900)] + [None]
    raw = _write(T.STRING, values, {"index-block-size": "64b"})
    reader: Any = IX.create_reader(T.STRING, {}, raw)
    assert len(reader.blocks) == 100, (
        f"64-byte blocks hold 3 entries of 20 bytes: 100 blocks, got {len(reader.blocks)}"
    )
    assert _all_rows(reader.visit_equal("key-0123")) == {123, 423, 723}, "key in a middle block"
    assert _all_rows(reader.visit_equal("key-0299")) == {299, 599, 899}, "key in the last block"
    assert _all_rows(reader.visit_equal("a")) == set(), "key before the first block"
    assert len(reader._block_cache) <= 3, "only the blocks a query needs are parsed"


def test_options_and_types() -> None:
    with pytest.raises(InvalidOptionError):
        IX.validate_options(T.INT, {"version": "3"})
    with pytest.raises(InvalidOptionError):
        IX.validate_options(T.INT, {"nope": "1"})
    assert not IX.supports(T.BINARY) and not IX.supports(T.decimal_type(10, 2)), (
        "Paimon's BitmapTypeVisitor rejects binary and decimal"
    )


# -- corrupt bytes -------------------------------------------------------------------------


def _sweep(dtype: DataType, values: list[Any], raw: bytes, past_end: bool = False) -> None:
    """Open and ask about every value: raises CorruptIndexError or answers exactly."""
    reader = IX.create_reader(dtype, {}, raw)
    probes = sorted({v for v in values if v is not None})
    _check_exact(dtype, values, reader, probes, past_end)


_RNG = random.Random(7)
SAMPLE = [_RNG.choice([None, 1, 2, 3, 300, -5, 70000]) for _ in range(200)]


@pytest.mark.parametrize("version", ["1", "2"])
def test_truncation_always_raises_corrupt_index(version: str) -> None:
    raw = _write(T.INT, SAMPLE, {"version": version, "index-block-size": "32b"})
    for cut in range(len(raw)):
        with pytest.raises(CorruptIndexError):
            _sweep(T.INT, SAMPLE, raw[:cut])


@pytest.mark.parametrize("version", ["1", "2"])
def test_header_flips_raise_or_stay_exact(version: str) -> None:
    """Bit flips in the fixed header (version, counts, flags, null entry, V2 block table and
    body offset): CorruptIndexError or still-exact answers, never a wrong one. A row count
    flipped upwards is consistent with every bitmap and shows up only as rows past the
    file's end in complement answers (IS NOT NULL, <>, NOT IN): tolerated, as no data row
    is there; the planner knows the file's true row count."""
    raw = _write(T.INT, SAMPLE, {"version": version, "index-block-size": "32b"})
    header = 10 + (8 if version == "2" else 4)
    for pos in [*range(header), *(range(header, header + 4) if version == "2" else [])]:
        for bit in range(8):
            bad = bytearray(raw)
            bad[pos] ^= 1 << bit
            with contextlib.suppress(CorruptIndexError):
                _sweep(T.INT, SAMPLE, bytes(bad), past_end=True)


def test_bogus_offsets_raise() -> None:
    raw = bytearray(_write(T.INT, [1, 1, 2, 2], {"version": "1"}))
    # V1: u8 | i32 rows | i32 n | bool | (int key, i32 offset) * 2; point key 2 far away
    raw[22:26] = (10_000).to_bytes(4, "big")
    with pytest.raises(CorruptIndexError):
        IX.create_reader(T.INT, {}, bytes(raw))
    inl = bytearray(_write(T.INT, [1, 2], {"version": "1"}))
    inl[14:18] = (-1 - 50).to_bytes(4, "big", signed=True)  # inlined row beyond rowCount
    with pytest.raises(CorruptIndexError):
        IX.create_reader(T.INT, {}, bytes(inl))


@given(data=st.data())
def test_garbage_splice_only_raises_corrupt_index(data: st.DataObject) -> None:
    """Any damage: only CorruptIndexError may escape. (Damage to key bytes or bitmap
    contents that leaves a well-formed index cannot be detected: the format has no
    checksum; such answers are not checked here.)"""
    version = data.draw(st.sampled_from(["1", "2"]))
    raw = bytearray(
        _write(
            T.STRING, [str(v) for v in SAMPLE[:80]], {"version": version, "index-block-size": "48b"}
        )
    )
    mode = data.draw(st.sampled_from(["flip", "splice", "overwrite"]))
    i = data.draw(st.integers(0, len(raw) - 1))
    if mode == "flip":
        raw[i] ^= 1 << data.draw(st.integers(0, 7))
    elif mode == "splice":
        raw[i:i] = data.draw(st.binary(min_size=1, max_size=8))
    else:
        raw[i : i + 4] = data.draw(st.binary(min_size=4, max_size=4))
    try:
        r = IX.create_reader(T.STRING, {}, bytes(raw))
        for v in ["1", "2", "3", "300", "-5", "70000", "None", "x"]:
            r.visit_equal(v)
            r.visit_not_equal(v)
        r.visit_is_null()
        r.visit_not_null()
    except CorruptIndexError:
        pass


def test_timestamp_millis_key_is_floored_like_paimon() -> None:
    """TIMESTAMP(3) keys are Paimon's ``getMillisecond()`` (floored), as in bsi and
    range-bitmap; sub-millisecond input used to fail the Arrow cast."""
    t = T.DataType(T.TypeRoot.TIMESTAMP, precision=3)
    w = IX.create_writer(t, {})
    w.write(pa.array([-1001, 1001, None, 1999], pa.timestamp("us")))
    r = IX.create_reader(t, {}, w.serialize())
    got = {ms: list(r.visit_equal(ms).bitmap) for ms in (-2, -1, 1)}
    assert got == {-2: [0], -1: [], 1: [1, 3]}, f"floored millis -2, 1, 1 expected, got {got}"
