"""Never wrong, per index: on random data (nulls, duplicates, edges) and random leaf
predicates, an index may keep rows it need not, but never drop a matching one. Bitmap, BSI
and range-bitmap answers must be exact row sets. The oracle is ``evaluate_arrow`` (Spark
semantics)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.expressions.strategies import ALL_SCALARS, SCALARS, column_values, leaf, to_arrow

from lakeskip import expressions as E
from lakeskip.errors import CorruptIndexError
from lakeskip.index.registry import get_indexer
from lakeskip.index.result import REMAIN, SKIP, BitmapResult
from lakeskip.planner.index_evaluator import reader_answer
from lakeskip.types import RowType

CASES = [
    (index, col)
    for index in ("bloom-filter", "bitmap", "bsi", "range-bitmap")
    for col in (ALL_SCALARS if index == "range-bitmap" else SCALARS)
    if get_indexer(index).supports(ALL_SCALARS[col][0])
]
#: indexes whose bitmap answers must be exact (range-bitmap: LIKE 'p%' too)
EXACT = {"bitmap": False, "bsi": False, "range-bitmap": True}


def _rows(result: Any, n: int) -> set[int]:
    if result is REMAIN:
        return set(range(n))
    if result is SKIP:
        return set()
    assert isinstance(result, BitmapResult), f"unexpected result {result!r}"
    return set(result.bitmap)


@pytest.mark.parametrize(("index_type", "col"), CASES, ids=[f"{i}-{c}" for i, c in CASES])
@given(data=st.data())
def test_index_never_drops_a_matching_row(index_type: str, col: str, data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 40), label="rows")
    values = data.draw(column_values(col, n), label="values")
    dtype = ALL_SCALARS[col][0]
    arr = to_arrow(col, values)
    indexer = get_indexer(index_type)
    options = {"items": "50", "fpp": "0.05"} if index_type == "bloom-filter" else {}
    if index_type == "bitmap":
        options = {"version": data.draw(st.sampled_from(["1", "2"])), "index-block-size": "64b"}
    if index_type == "range-bitmap":  # tiny chunks: many dictionary chunks per file
        size = data.draw(st.sampled_from(["0b", "5b", "9b", "16b", "16kb"]), label="chunk-size")
        options = {"chunk-size": size}
    writer = indexer.create_writer(dtype, options)
    writer.write(arr)
    if not writer.usable:
        return
    reader = indexer.create_reader(dtype, {}, writer.serialize())
    row_type = RowType.of((col, dtype))
    table = pa.table({col: arr})
    for _ in range(5):
        pred = leaf(data.draw, col, values)
        bound = E.bind(row_type, pred)
        if not isinstance(bound, E.BoundPredicate):
            continue
        expected = {i for i, m in enumerate(E.evaluate_arrow(bound, table).to_pylist()) if m}
        got = _rows(reader_answer(reader, bound), n)
        assert expected <= got, (
            f"{index_type} on {col} dropped matching rows {sorted(expected - got)} for {bound!r}; "
            f"values={values}"
        )
        prefix_op = bound.op in ("starts_with", "not_starts_with")
        if index_type in EXACT and (EXACT[index_type] or not prefix_op):
            result = reader_answer(reader, bound)
            if isinstance(result, BitmapResult):
                assert got == expected, (
                    f"{index_type} on {col} is not exact for {bound!r}: got {sorted(got)}, "
                    f"expected {sorted(expected)}; values={values}"
                )


@pytest.mark.parametrize("index_type", ["bloom-filter", "bitmap", "bsi", "range-bitmap"])
@given(data=st.data())
def test_garbage_splice_raises_corrupt_index_or_answers_safely(
    index_type: str, data: st.DataObject
) -> None:
    """Truncated or bit-flipped bytes: CorruptIndexError, or (if still decodable) a reader
    whose answers are only ever used after the planner's own validation -- never another
    exception type."""
    col = "i32"
    dtype = SCALARS[col][0]
    values = data.draw(column_values(col, 20))
    indexer = get_indexer(index_type)
    w = indexer.create_writer(dtype, {})
    w.write(to_arrow(col, values))
    raw = bytearray(w.serialize())
    mode = data.draw(st.sampled_from(["truncate", "flip", "splice"]))
    if mode == "truncate":
        raw = raw[: data.draw(st.integers(0, max(0, len(raw) - 1)))]
    elif mode == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= 1 << data.draw(st.integers(0, 7))
    else:
        i = data.draw(st.integers(0, len(raw)))
        raw[i:i] = data.draw(st.binary(min_size=1, max_size=8))
    try:
        reader = indexer.create_reader(dtype, {}, bytes(raw))
        for v in (0, 1, -1, 50):
            reader.visit_equal(v)
            reader.visit_less_than(v)
        reader.visit_is_null()
    except CorruptIndexError:
        pass
