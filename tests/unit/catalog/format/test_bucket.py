"""The fixed-bucket function against Paimon 0.9.0's own FixedBucketRowKeyExtractor.

Vectors: ``tests/golden/java/buckets.json`` (made by ``tests/golden/java/GenBuckets.java``, see
``tests/golden/README.md``): for each case the table's columns, ``bucket``, ``bucket-key``, and
per row the values, the hash of the projected key row and the bucket Paimon chose.
"""

from __future__ import annotations

import decimal
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples

from lakeskip.catalog.format.bucket import (
    bucket_ids,
    bucket_of,
    bucket_spec,
    murmur_words,
    row_hash,
)
from lakeskip.errors import InvalidOptionError
from lakeskip.types import INT, STRING, DataType, RowType, parse_sql_type

GOLDEN = Path(__file__).parents[3] / "golden" / "java" / "buckets.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"]


def _internal(t: DataType, v: Any) -> Any:
    if v is None:
        return None
    if t.is_timestamp:  # the vectors carry epoch micros
        return v // 1000 if t.timestamp_unit == "ms" else v
    if t.root.name == "DECIMAL":
        return decimal.Decimal(v)
    return v


def _arrow(t: DataType, values: list[Any]) -> pa.Array:
    if t.root.name == "DATE":
        return pa.array(values, pa.int32()).cast(pa.date32())
    if t.is_timestamp:
        return pa.array(values, pa.int64()).cast(t.to_arrow())
    return pa.array(values, t.to_arrow())


def _case(case: dict[str, Any]) -> tuple[list[str], list[DataType], list[list[Any]]]:
    names = [c[0] for c in case["columns"]]
    types = [parse_sql_type(c[1]) for c in case["columns"]]
    rows = [
        [_internal(t, v) for t, v in zip(types, r["values"], strict=True)] for r in case["rows"]
    ]
    return names, types, rows


def test_vectors_cover_the_types_asked_for() -> None:
    kinds = {c[1] for case in CASES for c in case["columns"]}
    assert {"INT", "BIGINT", "STRING", "DATE", "DECIMAL(10,2)", "DECIMAL(38,4)"} <= kinds
    assert sum(len(case["rows"]) for case in CASES) >= 300
    assert any("," in case["bucket_key"] for case in CASES)
    assert any(None in r["values"] for case in CASES for r in case["rows"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_row_hash_and_bucket_match_paimon(case: dict[str, Any]) -> None:
    names, types, rows = _case(case)
    key = case["bucket_key"].split(",")
    idx = [names.index(k) for k in key]
    key_types = [types[i] for i in idx]
    for row, want in zip(rows, case["rows"], strict=True):
        values = [row[i] for i in idx]
        assert row_hash(values, key_types) == want["hash"], values
        assert bucket_of(values, key_types, case["buckets"]) == want["bucket"], values


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vectorised_buckets_match_paimon(case: dict[str, Any]) -> None:
    names, types, rows = _case(case)
    key = case["bucket_key"].split(",")
    idx = [names.index(k) for k in key]
    columns = [_arrow(types[i], [r[i] for r in rows]) for i in idx]
    got = bucket_ids(columns, [types[i] for i in idx], case["buckets"])
    assert got.tolist() == [r["bucket"] for r in case["rows"]]
    # chunked input and slices (non-zero Arrow offsets) give the same answer
    sliced = bucket_ids([c.slice(3) for c in columns], [types[i] for i in idx], case["buckets"])
    assert sliced.tolist() == got.tolist()[3:]


@settings(max_examples=unit_examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
            st.one_of(st.none(), st.text(max_size=20)),
        ),
        max_size=40,
    ),
    st.integers(1, 64),
)
def test_vectorised_equals_row_by_row(rows: list[tuple[int | None, str | None]], n: int) -> None:
    ints = pa.array([r[0] for r in rows], pa.int32())
    strs = pa.array([r[1] for r in rows], pa.string())
    got = bucket_ids([ints, strs], [INT, STRING], n).tolist()
    assert got == [bucket_of(r, (INT, STRING), n) for r in rows]
    assert bucket_ids([ints], [INT], n).tolist() == [bucket_of((r[0],), (INT,), n) for r in rows]


@settings(max_examples=unit_examples(100), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.binary(max_size=19)),
            st.one_of(st.none(), st.dates()),
            st.one_of(st.none(), st.text(max_size=12)),
        ),
        max_size=30,
    ),
    st.integers(0, 5),
)
def test_vectorised_binary_date_string_keys(rows: list[tuple[Any, ...]], cut: int) -> None:
    from lakeskip.types import BINARY, DATE, to_internal

    types = (BINARY, DATE, STRING)
    cols = [pa.array([r[i] for r in rows], t.to_arrow()) for i, t in enumerate(types)]
    cols = [c.slice(min(cut, len(rows))) for c in cols]  # non-zero Arrow offsets
    want = [
        bucket_of(tuple(to_internal(t, v) for t, v in zip(types, r, strict=True)), types, 7)
        for r in rows[min(cut, len(rows)) :]
    ]
    assert bucket_ids(cols, types, 7).tolist() == want


def test_murmur_of_no_words_is_the_seeded_finaliser() -> None:
    # fmix32(42 ^ 0), worked out by hand in plain Python integers
    assert murmur_words(np.zeros((2, 0), np.uint32)).tolist() == [142593372, 142593372]


def test_bucket_spec() -> None:
    rt = RowType.of(("a", INT), ("s", STRING))
    assert bucket_spec({}, rt) is None
    assert bucket_spec({"bucket": "-1"}, rt) is None
    spec = bucket_spec({"bucket": "8", "bucket-key": "s, a"}, rt)
    assert spec is not None and spec.num_buckets == 8 and spec.key == ("s", "a")
    assert spec.types == (STRING, INT)
    with pytest.raises(InvalidOptionError, match="bucket-key"):
        bucket_spec({"bucket": "8"}, rt)
    with pytest.raises(InvalidOptionError, match="unknown column 'x'"):
        bucket_spec({"bucket": "8", "bucket-key": "x"}, rt)
    with pytest.raises(InvalidOptionError, match="must be -1 or > 0"):
        bucket_spec({"bucket": "0", "bucket-key": "a"}, rt)
