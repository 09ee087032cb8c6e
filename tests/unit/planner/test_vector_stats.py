"""The vectorised stats tier keeps exactly the files the per-file evaluator keeps.

Random files of every scalar type (nulls, NaN, infinities, truncated strings, files with
no stats or only counts, mixed stats modes in one table, so several stats layouts at once)
are turned into real manifest stats bytes; random predicates (nested AND/OR/NOT, IN lists,
foreign literal types) are evaluated both ways:

* the per-file path: :func:`file_column_stats` + :class:`StatsEvaluator`, file by file;
* the columnar path: :func:`decode_file_stats` (numpy over the ``BinaryRow`` bytes of all
  files) + :class:`VectorStatsEvaluator`, and the same evaluator over
  :meth:`ColumnarStats.from_file_stats`.

All three must agree file for file. (That the per-file path never skips a match is
``test_never_wrong.py``'s job; the planner runs the columnar path.)
"""

from __future__ import annotations

import os
from typing import Any, get_args

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.expressions.strategies import ALL_SCALARS, column_values, predicates

from lakeskip import types as T
from lakeskip.catalog.format.data_file import make_data_file_meta
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.stats import collect_stats, file_column_stats
from lakeskip.expressions import Operator, bind
from lakeskip.planner.columnar_stats import (
    ColumnArrays,
    ColumnarStats,
    FileStatsColumns,
    _null_counts,
    _set,
    decode_file_stats,
)
from lakeskip.planner.stats import ColumnStats, FileStats
from lakeskip.planner.stats_evaluator import StatsEvaluator
from lakeskip.planner.vector_evaluator import (
    VectorStatsEvaluator,
    _arrow_kernel,
    _Comparison,
    _python_compare,
)

COLUMNS = list(ALL_SCALARS)
MODES = ["full", "truncate(2)", "counts", "none"]


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "60")), deadline=None)
@given(data=st.data())
def test_columnar_stats_keep_what_the_per_file_evaluator_keeps(data: st.DataObject) -> None:
    names = data.draw(
        st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=4, unique=True), label="cols"
    )
    row_type = T.RowType.of(*[(c, ALL_SCALARS[c][0]) for c in names])
    schema = TableSchema.create(0, row_type, (), {}, None)
    metas = []
    values: dict[str, list[Any]] = {c: [] for c in names}
    for f in range(data.draw(st.integers(1, 6), label="files")):
        n = data.draw(st.integers(0, 6), label="rows")
        cols = {c: data.draw(column_values(c, n), label=c) for c in names}
        for c in names:
            values[c] += cols[c]
        table = pa.table({c: pa.array(cols[c], ALL_SCALARS[c][0].to_arrow()) for c in names})
        mode = data.draw(st.sampled_from(MODES), label="mode")
        stats, stats_cols = collect_stats(table, row_type, mode)
        if stats_cols is None and data.draw(st.booleans(), label="dense subset"):
            # a dense store naming a subset of the columns, in another order
            keep = data.draw(st.permutations(names), label="order")[: max(1, len(names) - 1)]
            stats, stats_cols = collect_stats(
                table.select(keep), T.RowType.of(*[(c, ALL_SCALARS[c][0]) for c in keep]), mode
            )
            stats_cols = tuple(keep) if stats_cols is None else stats_cols
        metas.append(make_data_file_meta(f"f{f}", 1, n, stats, stats_cols, 0, None, ()))
    per_file = [file_column_stats(m, schema, schema) for m in metas]
    file_stats = [
        FileStats(m.row_count, {k: ColumnStats(*v) for k, v in s.items()})
        for m, s in zip(metas, per_file, strict=True)
    ]
    decoded = decode_file_stats(
        FileStatsColumns.of_metas(metas), lambda _: schema, schema, lambda i: per_file[i]
    )
    generic = ColumnarStats.from_file_stats(file_stats, row_type)
    for _ in range(5):
        pred = data.draw(predicates({c: values[c] or [None] for c in names}), label="pred")
        try:
            bound = bind(row_type, pred, time_zone="UTC")
        except Exception:
            continue  # literals binding rejects are not this test's concern
        scalar = [StatsEvaluator(bound).evaluate(fs) for fs in file_stats]
        vector = VectorStatsEvaluator(bound)
        assert vector.evaluate(decoded).tolist() == scalar, (pred, per_file)
        assert vector.evaluate(generic).tolist() == scalar, (pred, per_file)


PARTITION_VALUES = {
    T.BIGINT: st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.integers(2**63, 2**64)),
    T.INT: st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1), st.booleans()),
    T.DATE: st.one_of(st.none(), st.integers(-1000, 1000)),
    T.STRING: st.one_of(st.none(), st.text(max_size=3)),
    T.DOUBLE: st.one_of(st.none(), st.floats(allow_nan=True)),
}


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "60")))
@given(data=st.data())
def test_partition_values_as_columns_set_file_by_file(data: st.DataObject) -> None:
    """ColumnarStats.of_values (all files at once where every value is an int, a str or
    None) holds what setting each file's value one by one (_set) holds: values, known masks,
    null counts; values beyond int64, booleans, floats and NaN included."""
    t = data.draw(st.sampled_from(list(PARTITION_VALUES)), label="type")
    vals = data.draw(st.lists(PARTITION_VALUES[t], max_size=8), label="values")
    rc = np.asarray(data.draw(st.lists(st.integers(0, 9), min_size=len(vals), max_size=len(vals))))
    got = ColumnarStats.of_values(rc.astype(np.int64), {"c": vals}, {"c": t}).columns["c"]
    want = ColumnArrays.empty(len(vals), t)
    for i, v in enumerate(vals):
        _set(want, i, v, v, int(rc[i]) if v is None else 0)
    for side in ("min", "max"):
        known = getattr(want, f"{side}_known")
        assert getattr(got, f"{side}_known").tolist() == known.tolist()
        assert getattr(got, side)[known].tolist() == getattr(want, side)[known].tolist()
    assert got.null_count.tolist() == want.null_count.tolist()


def test_decoded_columns_match_file_by_file() -> None:
    """Strings inline and out of line, nulls, NaN bounds dropped, a column added later."""
    rt = T.RowType.of(("id", T.BIGINT), ("s", T.STRING), ("x", T.DOUBLE))
    schema = TableSchema.create(0, rt, (), {}, None)
    t = pa.table(
        {
            "id": [3, None, -7],
            "s": ["short", "a much longer string", None],
            "x": [1.5, float("nan"), None],
        }
    )
    stats, cols = collect_stats(t, rt, "full")
    meta = make_data_file_meta("f", 1, 3, stats, cols, 0, None, ())
    cs = decode_file_stats(
        FileStatsColumns.of_metas([meta, meta]), lambda _: schema, schema, lambda i: None
    )
    assert cs.columns["id"].min.tolist() == [-7, -7]
    assert cs.columns["id"].max.tolist() == [3, 3]
    assert cs.columns["s"].min.tolist() == ["a much longer string"] * 2
    assert cs.columns["s"].max.tolist() == ["short"] * 2
    assert cs.columns["x"].min_known.tolist() == [False, False]  # NaN: no bounds
    assert cs.columns["x"].null_count.tolist() == [1, 1]
    assert cs.columns["s"].null_count.tolist() == [1, 1]


@pytest.mark.parametrize("op", get_args(_Comparison))
def test_each_comparison_reads_the_same_in_arrow_and_python(op: Operator) -> None:
    """The leaves compare string bounds in Arrow and other bounds in Python, both chosen by
    the typed operator: the two must give the same verdicts (code point order, equality)."""
    bounds = ["", "a", "ab", "b", "é", "\U0001f600"]
    for value in bounds:
        arrow = pc.call_function(_arrow_kernel(op), [pa.array(bounds), pa.scalar(value)])
        assert arrow.to_pylist() == [_python_compare(op)(b, value) for b in bounds], (op, value)


@pytest.mark.parametrize("counts", [(0, 0, 0), (2, None, 0), (None,), (5, 1)])
def test_one_shared_null_count_tuple_reads_as_separate_ones(counts: tuple[int | None, ...]) -> None:
    """The manifest decoder shares one null-count tuple among files (converted once): the
    same array as the files' own equal tuples, one by one."""
    shared = [counts] * 4
    apart = [tuple(v for v in counts) for _ in range(4)]
    assert apart[0] is not apart[1]
    width = len(counts)
    got = _null_counts(shared, width)
    assert got.tolist() == _null_counts(apart, width).tolist()
    assert got.tolist() == [[-1 if v is None else v for v in counts]] * 4
