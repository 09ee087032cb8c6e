"""Never wrong, per index: on random data (nulls, duplicates, edges) and random leaf
predicates, an index may keep rows it need not, but never drop a matching one. Bitmap, BSI
and range-bitmap answers must be exact row sets. The oracle is ``evaluate_arrow`` (Spark
semantics)."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.expressions.strategies import ALL_SCALARS, SCALARS, column_values, leaf, to_arrow

from lakeskip import expressions as E
from lakeskip.errors import CorruptIndexError
from lakeskip.index.file_index import FileIndexFile, build_file_index
from lakeskip.index.format import FileIndexContainer
from lakeskip.index.options import parse_file_index_options
from lakeskip.index.registry import get_indexer
from lakeskip.index.result import REMAIN, SKIP, BitmapResult
from lakeskip.planner.index_evaluator import evaluate_file_index, reader_answer
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
    # rows at n or beyond are no rows of the file: a damaged row count may claim 2^31 of
    # them (IS NULL's complement of the non-null rows), and a set of them fills the
    # machine's memory (an xdist worker was OOM-killed on bsi, 12.5 GB)
    return set(itertools.takewhile(lambda r: r < n, result.bitmap))


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
        prefix_op = bound.op in (E.Operator.STARTS_WITH, E.Operator.NOT_STARTS_WITH)
        if index_type in EXACT and (EXACT[index_type] or not prefix_op):
            result = reader_answer(reader, bound)
            if isinstance(result, BitmapResult):
                assert got == expected, (
                    f"{index_type} on {col} is not exact for {bound!r}: got {sorted(got)}, "
                    f"expected {sorted(expected)}; values={values}"
                )


_PROBES = (0, 1, -1, 50)


def _answers(reader: Any, n: int) -> list[set[int]]:
    """Row sets for a fixed list of questions; raises what the reader raises."""
    out = []
    for v in _PROBES:
        out.append(_rows(reader.visit_equal(v), n))
        out.append(_rows(reader.visit_less_than(v), n))
    out.append(_rows(reader.visit_is_null(), n))
    return out


@pytest.mark.parametrize("index_type", ["bloom-filter", "bitmap", "bsi", "range-bitmap"])
@given(data=st.data())
def test_garbage_splice_raises_corrupt_index_or_answers_safely(
    index_type: str, data: st.DataObject
) -> None:
    """Truncated, bit-flipped or spliced bytes: CorruptIndexError, or answers that are still
    answers (REMAIN, SKIP or a row bitmap; ``_rows`` rejects anything else), never another
    exception type. The format has no checksum, so damage inside a bitmap or a row count can
    change answers undetectably (the planner relies on the container's lengths and its other
    tiers). Damage that leaves the index's own bytes intact -- garbage appended after it --
    must be rejected or answered exactly as the undamaged index, for the self-delimiting
    formats; a bloom filter's size *is* its byte length, so there it changes the filter."""
    col = "i32"
    dtype = SCALARS[col][0]
    n = 20
    values = data.draw(column_values(col, n))
    indexer = get_indexer(index_type)
    w = indexer.create_writer(dtype, {})
    w.write(to_arrow(col, values))
    original = w.serialize()
    raw = bytearray(original)
    mode = data.draw(st.sampled_from(["truncate", "flip", "splice", "append"]))
    if mode == "truncate":
        raw = raw[: data.draw(st.integers(0, max(0, len(raw) - 1)))]
    elif mode == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= 1 << data.draw(st.integers(0, 7))
    elif mode == "splice":
        i = data.draw(st.integers(0, len(raw)))
        raw[i:i] = data.draw(st.binary(min_size=1, max_size=8))
    else:
        raw += data.draw(st.binary(min_size=1, max_size=8))
    try:
        answers = _answers(indexer.create_reader(dtype, {}, bytes(raw)), n)
    except CorruptIndexError:
        return
    if mode == "append" and index_type != "bloom-filter":
        want = _answers(indexer.create_reader(dtype, {}, original), n)
        assert answers == want, f"{index_type}: garbage after the index changed its answers"


@given(data=st.data())
def test_garbage_in_one_index_of_a_container_leaves_the_others_exact(
    data: st.DataObject,
) -> None:
    """Two columns' indexes in one container: overwriting bytes inside the first column's
    payload must not change what the second column's index answers (each is read from its
    own offset and length), and the planner's evaluator then keeps or skips exactly as the
    oracle allows."""
    n = 20
    a_vals = data.draw(column_values("i32", n), label="a")
    b_vals = data.draw(column_values("i64", n), label="b")
    schema = RowType.of(("a", SCALARS["i32"][0]), ("b", SCALARS["i64"][0]))
    table = pa.table({"a": to_arrow("i32", a_vals), "b": to_arrow("i64", b_vals)})
    opts = parse_file_index_options(
        {
            "file-index.bitmap.columns": "a,b",
            "file-index.in-manifest-threshold": "0",
        },
        schema,
    )
    built = build_file_index(table, schema, opts)
    assert built.external is not None
    entry = next(e for e in FileIndexContainer.decode(built.external).entries if e.column == "a")
    raw = bytearray(built.external)
    at = data.draw(st.integers(entry.start, entry.start + entry.length - 1), label="at")
    junk = data.draw(st.binary(min_size=1, max_size=8), label="junk")
    end = min(at + len(junk), entry.start + entry.length)
    raw[at:end] = junk[: end - at]
    damaged = FileIndexFile.from_bytes(bytes(raw), schema)
    present = [v for v in b_vals if v is not None]
    for v in [*present[:3], 10**12]:
        bound = E.bind(schema, E.EqualTo("b", v))
        expected = {i for i, m in enumerate(E.evaluate_arrow(bound, table).to_pylist()) if m}
        (reader,) = damaged.readers("b")
        got = _rows(reader_answer(reader, bound), n)
        assert got == expected, f"b = {v}: damage in a's bytes changed b's rows to {got}"
        verdict = evaluate_file_index(bound, damaged)
        assert verdict.skip == (not expected), f"b = {v}: skip={verdict.skip}, rows {expected}"
