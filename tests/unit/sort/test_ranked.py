"""Rank-normalised curve keys: the encoding orders every type, every column gets an equal
share of the curve, and curve-sort compaction with them clusters every column."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples

from lakeskip.catalog import Catalog
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.write.data_writer import write_all
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import InvalidArgumentError
from lakeskip.procedures.base import SortSpec
from lakeskip.procedures.sort_rewrite import rewrite_sorted_in_tasks
from lakeskip.sort.cuts import key_bytes
from lakeskip.sort.ranked import (
    RANK_BITS,
    column_bounds,
    column_levels,
    ordered_matrix,
    ranked_keys,
)
from lakeskip.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    STRING,
    DataType,
    RowType,
    decimal_type,
    parse_sql_type,
)


def _sort_key(v: Any) -> tuple[int, Any]:
    """Python's order of the values as Spark orders them ascending (NaN above numbers)."""
    if isinstance(v, float) and math.isnan(v):
        return (1, 0.0)
    return (0, v)


TS6 = parse_sql_type("TIMESTAMP(6)")
CASES: list[tuple[DataType, st.SearchStrategy[Any], pa.DataType]] = [
    (BIGINT, st.integers(-(2**63), 2**63 - 1), pa.int64()),
    (INT, st.integers(-(2**31), 2**31 - 1), pa.int32()),
    (DOUBLE, st.floats(allow_nan=True, width=64), pa.float64()),
    (BOOLEAN, st.booleans(), pa.bool_()),
    (DATE, st.dates(), pa.date32()),
    (TS6, st.datetimes(), pa.timestamp("us")),
    (
        decimal_type(20, 3),
        st.decimals(min_value=-(10**16), max_value=10**16, places=3),
        pa.decimal128(20, 3),
    ),
    (STRING, st.text(max_size=6), pa.string()),
]


@pytest.mark.parametrize(("dtype", "values", "arrow"), CASES, ids=[str(c[0]) for c in CASES])
def test_ordered_bytes_follow_the_values_order(
    dtype: DataType, values: st.SearchStrategy[Any], arrow: pa.DataType
) -> None:
    @settings(max_examples=unit_examples(60), deadline=None)
    @given(st.lists(values, min_size=2, max_size=30))
    def check(xs: list[Any]) -> None:
        if dtype == DOUBLE:
            xs = [0.0 if x == 0 else x for x in xs]  # -0.0 and 0.0 are equal values
        m = ordered_matrix(pa.array(xs, arrow), dtype, prefix=32)
        encoded = [bytes(r) for r in m]
        for i in range(len(xs)):
            for j in range(len(xs)):
                a, b = _sort_key(xs[i]), _sort_key(xs[j])
                if dtype == STRING:  # the key is the UTF-8 prefix padded with zero bytes
                    a, b = ((0, x.encode()[:32].ljust(32, b"\0")) for x in (xs[i], xs[j]))
                if a < b:
                    assert encoded[i] < encoded[j], (xs[i], xs[j])

    check()


def test_levels_spread_over_the_whole_coordinate() -> None:
    b = column_bounds([pa.array(["x", "y", "z"])], [STRING])[0]
    levels = column_levels(pa.array(["x", "y", "z", None]), STRING, b).tolist()
    # three values and null: four levels, evenly over 16 bits, so the top bit splits them
    assert levels == [2 * 2**RANK_BITS // 5, 3 * 2**RANK_BITS // 5, 4 * 2**RANK_BITS // 5, 0]
    with pytest.raises(InvalidArgumentError, match="max_ranks"):
        column_bounds([pa.array([1])], [INT], max_ranks=1)


@settings(max_examples=unit_examples(40), deadline=None)
@given(
    st.lists(st.integers(-50, 50), min_size=1, max_size=200),
    st.lists(st.integers(-(10**12), 10**12), min_size=1, max_size=200),
    st.sampled_from(["zorder", "hilbert"]),
)
def test_keys_are_monotone_in_every_column(a: list[int], b: list[int], strategy: str) -> None:
    """Raising one coordinate never lowers the z-order key (equal ranks, equal keys)."""
    n = min(len(a), len(b))
    xa, xb = pa.array(a[:n], pa.int32()), pa.array(b[:n], pa.int64())
    bounds = column_bounds([xa, xb], [INT, BIGINT], max_ranks=16)
    keys = key_bytes(ranked_keys([xa, xb], [INT, BIGINT], bounds, strategy))
    assert len(keys) == n
    if strategy == "zorder":
        for i in range(n):
            for j in range(n):
                if a[i] <= a[j] and b[i] <= b[j]:
                    assert keys[i] <= keys[j]


def _kept(mins: np.ndarray, maxs: np.ndarray, lo: float, hi: float) -> int:  # type: ignore[type-arg]
    return int(((mins <= hi) & (maxs >= lo)).sum())


class _Local:
    parallelism = 2

    def map(self, fn: Any, items: Any, description: str) -> list[Any]:
        return [fn(i) for i in items]


def _files_kept(
    tmp_path: Path, curve: str, strategy: str, ranges: tuple[int, int]
) -> tuple[int, list[float]]:
    """Compact 120k rows of (a, b) with a in [0, ranges[0]), b in [0, ranges[1]) into 16
    files; per column, the mean number of files a random 1% range of it keeps."""
    rng = np.random.default_rng(7)
    n = 120_000
    data = pa.table(
        {
            "a": pa.array(rng.integers(0, ranges[0], n), pa.int64()),
            "b": pa.array(rng.integers(0, ranges[1], n), pa.int32()),
            "pad": pa.array(rng.random(n)),
        }
    )
    row = RowType.of(("a", BIGINT), ("b", INT), ("pad", DOUBLE))
    catalog = Catalog(str(tmp_path / f"wh-{curve}-{strategy}"))
    probe = catalog.create_table("probe", row)
    spec = WriteSpec(file_io=probe.file_io, table_path=probe.path, schema=probe.schema)
    slices = [data.slice(i, 20_000) for i in range(0, n, 20_000)]
    size = sum(e.file.file_size for s in slices for e in write_all(spec, [s]))
    # a target that cuts the same input files (written unrolled) into exactly 16 key ranges
    table = catalog.create_table("t", row, options={"target-file-size": str(math.ceil(size / 16))})
    unrolled = dataclasses.replace(table.schema, options={})
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=unrolled)
    old = [e for s in slices for e in write_all(spec, [s])]
    assert sum(e.file.file_size for e in old) == size
    table.commit(old, kind=CommitKind.APPEND)
    new = rewrite_sorted_in_tasks(table, old, SortSpec(strategy, ("a", "b"), 8, curve), _Local())
    files = [pq.read_table(table.data_file_path(e), columns=["a", "b"]) for e in new]
    assert sum(f.num_rows for f in files) == n
    kept = []
    for c, top in zip(("a", "b"), ranges, strict=True):
        mins = np.array([f[c].to_numpy().min() for f in files])
        maxs = np.array([f[c].to_numpy().max() for f in files])
        starts = np.random.default_rng(1).uniform(0, top * 0.99, 100)
        kept.append(float(np.mean([_kept(mins, maxs, s, s + top * 0.01) for s in starts])))
    return len(files), kept


@pytest.mark.parametrize("strategy", ["zorder", "hilbert"])
def test_rank_keys_cluster_both_columns_of_different_ranges(tmp_path: Path, strategy: str) -> None:
    count, (on_a, on_b) = _files_kept(tmp_path, "rank", strategy, (6_000_000, 2_500))
    assert count == 16
    grid = math.sqrt(count)  # an even 4 x 4 split keeps 4 files (5 across a boundary)
    assert on_a <= 2 * grid and on_b <= 2 * grid, (on_a, on_b)


def test_rank_keys_cluster_equal_ranges_like_a_grid(tmp_path: Path) -> None:
    count, (on_a, on_b) = _files_kept(tmp_path, "rank", "zorder", (1_000_000, 1_000_000))
    assert count == 16
    assert on_a <= 1.5 * 4 and on_b <= 1.5 * 4, (on_a, on_b)


def test_paimon_keys_leave_the_narrow_column_unclustered(tmp_path: Path) -> None:
    """Paimon's raw-byte curve (``sort.curve-keys = paimon``) is kept as it is: the wide
    column owns the leading bits, so a 1% range of the narrow one keeps every file."""
    count, (on_a, on_b) = _files_kept(tmp_path, "paimon", "zorder", (6_000_000, 2_500))
    assert on_b > 0.9 * count and on_a <= 2, (count, on_a, on_b)


def test_ordered_matrix_of_timestamps_ignores_the_arrow_unit() -> None:
    t = datetime.datetime(2024, 1, 2, 3, 4, 5, 6000)
    us = ordered_matrix(pa.array([t], pa.timestamp("us")), TS6)
    ms = ordered_matrix(pa.array([t], pa.timestamp("ms")), TS6)
    assert us.tolist() == ms.tolist()
    dec = ordered_matrix(
        pa.array([decimal.Decimal("-1.5")], pa.decimal128(5, 1)), decimal_type(5, 1)
    )
    assert dec.shape == (1, 16)
