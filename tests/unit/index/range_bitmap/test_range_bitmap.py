"""range-bitmap: byte identity with Paimon's Java writer, SQL-exact answers on Java's bytes,
options, chunking and corrupt input. (Random data against the oracle: test_index_oracle.)"""

from __future__ import annotations

import decimal
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyroaring import BitMap
from tests.unit.expressions.strategies import ALL_SCALARS, column_values, to_arrow

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.errors import CorruptIndexError, InvalidOptionError
from lakeskip.index.primitives.bitslice import below, compare
from lakeskip.index.range_bitmap import RangeBitmapIndexer
from lakeskip.index.range_bitmap.bit_slice import _holds_code_above
from lakeskip.index.registry import get_indexer
from lakeskip.index.result import BitmapResult, FileIndexResult
from lakeskip.planner.index_evaluator import reader_answer

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[3] / "golden" / "java" / "range_bitmap.json").read_text()
)["cases"]
IX = RangeBitmapIndexer()


def _value(dtype: T.DataType, v: Any) -> Any:
    """JSON fixture value -> internal form (floats from raw bits, so -0.0/NaN survive)."""
    if v is None:
        return None
    if isinstance(v, dict):
        if "f32bits" in v:
            return struct.unpack(">f", int(v["f32bits"], 16).to_bytes(4, "big"))[0]
        return struct.unpack(">d", int(v["f64bits"], 16).to_bytes(8, "big"))[0]
    if dtype.root is T.TypeRoot.DECIMAL:
        return decimal.Decimal(v)
    return v


def _arrow(dtype: T.DataType, case: dict[str, Any]) -> pa.Array:
    values = case["values"]
    if dtype.root in (T.TypeRoot.FLOAT, T.TypeRoot.DOUBLE):
        width, np_int, np_float = (
            (32, np.uint32, np.float32)
            if dtype.root is T.TypeRoot.FLOAT
            else (64, np.uint64, np.float64)
        )
        key = f"f{width}bits"
        bits = np.array([int(v[key], 16) if v else 0 for v in values], dtype=np_int)
        mask = np.array([v is None for v in values])
        return pa.array(bits.view(np_float), mask=mask, type=dtype.to_arrow())
    if dtype.is_timestamp:
        return pa.array(values, pa.int64()).cast(dtype.to_arrow())
    if dtype.root is T.TypeRoot.DATE:
        return pa.array(values, pa.int32()).cast(pa.date32())
    return pa.array([_value(dtype, v) for v in values], dtype.to_arrow())


def _sql_key(dtype: T.DataType, v: Any) -> Any:
    """Sort key with SQL (Spark) semantics: -0.0 = 0.0, NaN = NaN above every number,
    strings by UTF-8 bytes."""
    if dtype.root in (T.TypeRoot.FLOAT, T.TypeRoot.DOUBLE):
        return (1, 0.0) if v != v else (0, v + 0.0)
    if isinstance(v, str):
        return v.encode()
    return v


def _oracle(dtype: T.DataType, values: list[Any], q: dict[str, Any]) -> set[int]:
    op = q["op"]
    rows = [(i, _sql_key(dtype, v)) for i, v in enumerate(values) if v is not None]
    if op == "isNull":
        return {i for i, v in enumerate(values) if v is None}
    if op == "isNotNull":
        return {i for i, _ in rows}
    if op in ("in", "notIn"):
        lits = {_sql_key(dtype, _value(dtype, x)) for x in q["literals"]}
        hit = {i for i, k in rows if k in lits}
        return hit if op == "in" else {i for i, _ in rows} - hit
    lit = _sql_key(dtype, _value(dtype, q["literal"]))
    test = {
        "eq": lambda k: k == lit,
        "neq": lambda k: k != lit,
        "lt": lambda k: k < lit,
        "lte": lambda k: k <= lit,
        "gt": lambda k: k > lit,
        "gte": lambda k: k >= lit,
    }[op]
    return {i for i, k in rows if test(k)}


def _ask(reader: Any, dtype: T.DataType, q: dict[str, Any]) -> FileIndexResult:
    op = q["op"]
    if op == "isNull":
        return reader.visit_is_null()  # type: ignore[no-any-return]
    if op == "isNotNull":
        return reader.visit_not_null()  # type: ignore[no-any-return]
    if op in ("in", "notIn"):
        lits = [_value(dtype, x) for x in q["literals"]]
        return reader.visit_in(lits) if op == "in" else reader.visit_not_in(lits)  # type: ignore[no-any-return]
    method = {
        "eq": reader.visit_equal,
        "neq": reader.visit_not_equal,
        "lt": reader.visit_less_than,
        "lte": reader.visit_less_than_or_equal,
        "gt": reader.visit_greater_than,
        "gte": reader.visit_greater_than_or_equal,
    }[op]
    return method(_value(dtype, q["literal"]))  # type: ignore[no-any-return]


def _is_signed_zero_query(dtype: T.DataType, q: dict[str, Any]) -> bool:
    if dtype.root not in (T.TypeRoot.FLOAT, T.TypeRoot.DOUBLE):
        return False
    lits = q.get("literals") or ([q["literal"]] if "literal" in q else [])
    return any(_value(dtype, x) == 0.0 for x in lits)


def _options(case: dict[str, Any]) -> dict[str, str]:
    return {} if case["chunk_size"] is None else {"chunk-size": case["chunk_size"]}


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_writer_reproduces_java_bytes(case: dict[str, Any]) -> None:
    dtype = T.parse_sql_type(case["type"])
    w = IX.create_writer(dtype, _options(case))
    arr = _arrow(dtype, case)
    half = len(arr) // 2  # written in two batches: the writer must not care
    w.write(arr.slice(0, half))
    w.write(arr.slice(half))
    got = w.serialize().hex()
    assert got == case["hex"], f"{case['name']}: bytes differ from Paimon's Java writer"


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_reader_on_java_bytes_is_sql_exact(case: dict[str, Any]) -> None:
    """Every answer equals the SQL oracle, and Java's answer except where Java's
    ``Float.compare`` keeps -0.0 apart from 0.0 (SQL says they are equal)."""
    dtype = T.parse_sql_type(case["type"])
    reader = IX.create_reader(dtype, {}, bytes.fromhex(case["hex"]))
    values = [_value(dtype, v) for v in case["values"]]
    differ = 0
    for q in case["queries"]:
        got = _ask(reader, dtype, q)
        assert isinstance(got, BitmapResult), f"{case['name']} {q['op']}: not a bitmap answer"
        rows = set(got.bitmap)
        assert rows == _oracle(dtype, values, q), f"{case['name']}: wrong rows for {q}"
        if rows != set(q["rows"]):
            assert _is_signed_zero_query(dtype, q), f"{case['name']}: differs from Java on {q}"
            differ += 1
    if case["name"] == "float_zero_signs_only":
        assert differ > 0, "the fixture should show Java's -0.0 / 0.0 split"


def _build(dtype: T.DataType, values: list[Any], options: dict[str, str] | None = None) -> bytes:
    w = IX.create_writer(dtype, options or {})
    w.write(pa.array(values, dtype.to_arrow()))
    return w.serialize()


def test_all_null_and_empty_files_match_java_size() -> None:
    """Java writes 64 empty slices when there is no key: 1,080 bytes whatever the row count."""
    assert len(_build(T.INT, [None] * 7)) == len(_build(T.INT, [])) == 1080
    r = IX.create_reader(T.INT, {}, _build(T.INT, [None] * 3))
    assert list(r.visit_is_null().bitmap) == [0, 1, 2]  # type: ignore[attr-defined]
    assert list(r.visit_less_than(5).bitmap) == []  # type: ignore[attr-defined]


def test_options_are_validated() -> None:
    IX.validate_options(T.INT, {"chunk-size": "8kb"})
    with pytest.raises(InvalidOptionError, match="chunk-size"):
        IX.validate_options(T.INT, {"chunk-size": "lots"})
    with pytest.raises(InvalidOptionError, match="2 GB"):
        IX.validate_options(T.INT, {"chunk-size": "3gb"})
    with pytest.raises(InvalidOptionError, match="unknown option 'items'"):
        IX.validate_options(T.INT, {"items": "3"})


def test_supported_types_follow_paimon() -> None:
    ok = [T.INT, T.BIGINT, T.STRING, T.DOUBLE, T.FLOAT, T.DATE, T.TIMESTAMP, T.BOOLEAN]
    assert all(IX.supports(t) for t in ok)
    assert IX.supports(T.decimal_type(18, 2)) and not IX.supports(T.decimal_type(19, 2))
    assert not IX.supports(T.BINARY)
    assert not IX.supports(T.DataType(T.TypeRoot.TIMESTAMP, precision=9))
    assert not IX.supports(T.map_of(T.STRING, T.INT))
    assert get_indexer("range-bitmap") is get_indexer("range-bitmap")


def test_starts_with_is_exact_across_chunks() -> None:
    words = ["", "a", "ab", "abc", "abd", "b", "é", "éa", "ü", "\U0001f600x", None]
    data = _build(T.STRING, words * 3, {"chunk-size": "12b"})
    r = IX.create_reader(T.STRING, {}, data)
    for prefix in ["", "a", "ab", "abc", "abz", "b", "é", "\U0001f600", "zz"]:
        got = r.visit_starts_with(prefix)
        assert isinstance(got, BitmapResult)
        want = {i for i, w in enumerate(words * 3) if w is not None and w.startswith(prefix)}
        assert set(got.bitmap) == want, f"LIKE '{prefix}%'"


def test_float_literal_not_a_float32_keeps_non_null_rows() -> None:
    """The binder never sends one; if it did, the reader must not guess."""
    r = IX.create_reader(T.FLOAT, {}, _build(T.FLOAT, [0.5, None, 1.0]))
    got = r.visit_equal(0.1)
    assert isinstance(got, BitmapResult) and list(got.bitmap) == [0, 2]


def _bsi_start(data: bytes) -> int:
    head = struct.unpack_from(">i", data, 0)[0]
    dict_len = struct.unpack_from(">i", data, 4 + head - 4)[0]
    return 4 + head + dict_len


def test_codes_beyond_the_dictionary_are_corrupt() -> None:
    """A's header and dictionary (5 keys) with B's bit slices (row 5 has code 5)."""
    a = _build(T.INT, [1, 2, 3, 4, 5, None])
    b = _build(T.INT, [1, 2, 3, 4, 5, 6])
    spliced = a[: _bsi_start(a)] + b[_bsi_start(b) :]
    r = IX.create_reader(T.INT, {}, spliced)
    with pytest.raises(CorruptIndexError, match="beyond the dictionary"):
        r.visit_equal(3)


@given(
    codes=st.lists(st.integers(0, 127), max_size=40),
    valid=st.lists(st.booleans(), min_size=40, max_size=40),
    slices=st.integers(1, 7),
    cardinality=st.integers(1, 140),
)
def test_codes_beyond_the_dictionary_found_as_a_full_comparison_finds_them(
    codes: list[int], valid: list[bool], slices: int, cardinality: int
) -> None:
    """The early-stopping check agrees with the comparison it replaced: some non-null row
    has a code the slices hold at or above ``cardinality`` (NULL rows' bits do not count)."""
    ebm = BitMap(r for r in range(len(codes)) if valid[r])
    bits = tuple(BitMap(r for r, c in enumerate(codes) if c >> b & 1) for b in range(slices))
    oracle = compare(ebm, bits, cardinality, above=False).lt != ebm
    assert _holds_code_above(ebm, bits, cardinality - 1) == oracle


@given(
    codes=st.lists(st.integers(0, 127), max_size=40),
    valid=st.lists(st.booleans(), min_size=40, max_size=40),
    value=st.integers(0, 300),
)
def test_rows_below_a_code_are_those_with_a_smaller_code(
    codes: list[int], valid: list[bool], value: int
) -> None:
    """The slice walk that stops at the literal's lowest set bit, against the codes."""
    ebm = BitMap(r for r in range(len(codes)) if valid[r])
    bits = tuple(BitMap(r for r, c in enumerate(codes) if c >> b & 1) for b in range(7))
    assert list(below(ebm, bits, value)) == [r for r in ebm if codes[r] < value]


def test_dictionary_out_of_order_is_corrupt() -> None:
    data = bytearray(_build(T.INT, [10, 20, 30, 40], {"chunk-size": "0b"}))
    # the dictionary's first chunk key follows the 17 + 4-byte-header: swap two chunk keys
    blob = bytes(data)
    i, j = blob.index(struct.pack(">i", 20), 30), blob.index(struct.pack(">i", 30), 30)
    data[i : i + 4], data[j : j + 4] = blob[j : j + 4], blob[i : i + 4]
    r = IX.create_reader(T.INT, {}, bytes(data))
    with pytest.raises(CorruptIndexError):
        r.visit_equal(25)


@given(data=st.data())
def test_damaged_bytes_raise_corrupt_index_only(data: st.DataObject) -> None:
    """Bit flips, truncation and spliced garbage on every key family: a reader either raises
    CorruptIndexError or answers; no other exception escapes (found: a flipped slice offset
    gave a negative position and a struct.error)."""
    col = data.draw(st.sampled_from(["s", "f64", "i64", "f32"]), label="column")
    dtype = ALL_SCALARS[col][0]
    values = data.draw(column_values(col, data.draw(st.integers(1, 30))), label="values")
    w = IX.create_writer(dtype, {"chunk-size": data.draw(st.sampled_from(["0b", "8b", "16kb"]))})
    w.write(to_arrow(col, values))
    raw = bytearray(w.serialize())
    mode = data.draw(st.sampled_from(["flip", "truncate", "splice"]), label="mode")
    if mode == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= 1 << data.draw(st.integers(0, 7))
    elif mode == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    else:
        i = data.draw(st.integers(0, len(raw)))
        raw[i:i] = data.draw(st.binary(min_size=1, max_size=8))
    probes = [v for v in values if v is not None][:3]
    try:
        r = IX.create_reader(dtype, {}, bytes(raw))
        row_type = T.RowType.of((col, dtype))
        for p in probes:
            for cls in (E.EqualTo, E.LessThan, E.GreaterThanOrEqual, E.NotEqualTo):
                bound = E.bind(row_type, cls(col, p))
                if isinstance(bound, E.BoundPredicate):
                    reader_answer(r, bound)
        r.visit_is_null()
        r.visit_starts_with("a")
    except CorruptIndexError:
        pass


def test_negative_slice_offset_is_corrupt() -> None:
    """Regression: a flipped sign bit in a slice offset once escaped as struct.error."""
    data = bytearray(_build(T.STRING, ["a", "b", None, "c"]))
    at = _bsi_start(bytes(data)) + 14  # first (offset, length) pair of the BSI header
    data[at] |= 0x80
    r = IX.create_reader(T.STRING, {}, bytes(data))
    with pytest.raises(CorruptIndexError):
        r.visit_equal("b")


_WINDOW_OPS = ("eq", "lt", "lte", "gt", "gte", "in", "notIn", "isNull", "isNotNull")


@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.sampled_from([65_535, 65_536, 65_537, 140_000]),
    domain=st.sampled_from([2, 11, 50, 3000]),
    null_share=st.sampled_from([0.0, 0.1, 0.9]),
    sorted_=st.booleans(),
    op=st.sampled_from(_WINDOW_OPS),
    literal=st.integers(-2, 3002),
    literals=st.lists(st.integers(-2, 3002), min_size=1, max_size=4),
)
def test_windowed_reader_answers_the_first_rows_as_a_plain_evaluation(
    seed: int,
    rows: int,
    domain: int,
    null_share: float,
    sorted_: bool,
    op: str,
    literal: int,
    literals: list[int],
) -> None:
    """``windowed()`` reads only each bitmap's first Roaring container: its answer is the
    rows below 65,536 that match, by a plain evaluation of the values, and equals the whole
    reader's answer cut at 65,536 (random, sorted (runs) and mostly-NULL columns)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, domain, rows)
    if sorted_:
        values = np.sort(values)
    nulls = rng.random(rows) < null_share
    column: list[Any] = [None if n else int(v) for v, n in zip(values, nulls, strict=True)]
    reader = IX.create_reader(T.INT, {}, _build(T.INT, column))
    q: dict[str, Any] = {"op": op, "literal": literal, "literals": literals}
    window = 65_536
    oracle = {r for r in _oracle(T.INT, column[:window], q) if r < window}
    got = _ask(reader.windowed(), T.INT, q)  # type: ignore[attr-defined]
    assert isinstance(got, BitmapResult)
    assert set(got.bitmap) == oracle
    whole = _ask(reader, T.INT, q)
    assert isinstance(whole, BitmapResult)
    assert set(whole.bitmap) == set(_oracle(T.INT, column, q))
    assert BitMap(r for r in whole.bitmap if r < window) == got.bitmap
