"""Runtime filters (:mod:`lakeskip.planner.runtime`) never skip a file holding a row that
matches the scan's predicate AND the join's keys, and only narrow the plan.

Random tables (clustered or shuffled keys, NULL keys, duplicates, every index type,
partitioned and bucketed), a random scan predicate, then runtime IN lists as Spark's
dynamic pruning sends them (the distinct keys of a filtered dimension: a few values or
thousands, some absent from the fact table, of the key's type or another numeric type).
The oracle is ``evaluate_arrow`` over each skipped file's own rows, with no stats or index.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.expressions.strategies import SCALARS, column_values, predicates

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.bucket import bucket_ids
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.planner.columnar_stats import ColumnArrays
from lakeskip.planner.report import SkipTier
from lakeskip.planner.runtime import (
    INDEX_VALUES_LIMIT,
    narrowing_columns,
    prunable_columns,
    refine_plan,
    runtime_columns,
)
from lakeskip.planner.scan import ScanPlanner
from lakeskip.planner.vector_evaluator import _any_in_range

EXAMPLES = int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "25"))

OPTIONS = {
    "file-index.bloom-filter.columns": "k,s",
    "file-index.bloom-filter.k.items": "50",
    "file-index.bitmap.columns": "i32",
    "file-index.bsi.columns": "d",
    "file-index.range-bitmap.columns": "f64",
    "metadata.stats-mode": "full",
}


def _rows_of(table: Any, e: Any) -> pa.Table:
    """A data file's own rows (the partition column from its entry if the file lacks it)."""
    rows = pq.read_table(table.data_file_path(e))
    if "p" not in rows.column_names:
        rows = rows.append_column("p", pa.array([e.partition[0]] * rows.num_rows, pa.int32()))
    return rows


def _keys(draw: Any, n: int, lo: int, hi: int) -> list[int | None]:
    return draw(
        st.lists(st.one_of(st.none(), st.integers(lo, hi)), min_size=n, max_size=n), label="k"
    )


def _runtime_values(draw: Any, present: list[Any], numeric: bool) -> list[Any]:
    """A join's keys: some that the table holds, some it does not, maybe thousands."""
    size = draw(st.sampled_from([1, 3, 20, INDEX_VALUES_LIMIT + 1, 3000]), label="size")
    picked = (
        draw(st.lists(st.sampled_from(present), max_size=5), label="present") if present else []
    )
    if numeric:
        rng = np.random.default_rng(draw(st.integers(0, 2**16), label="seed"))
        far = rng.integers(-10_000, 10_000, size=size).tolist()
        out: list[Any] = [*picked, *far]
        if draw(st.booleans(), label="mixed"):  # keys of another numeric type
            out = [float(v) if i % 2 else v for i, v in enumerate(out)]
            out.append(0.5)
        return out
    extra = draw(st.lists(st.text(alphabet="abcé", max_size=3), max_size=size), label="strs")
    return [*picked, *extra]


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_runtime_filter_never_skips_a_matching_file(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp: Path = tmp_path_factory.mktemp("rt")
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    cols = ["i32", "f64", "s", "d"]
    row_type = T.RowType.of(("k", T.BIGINT), ("p", T.INT), *[(c, SCALARS[c][0]) for c in cols])
    layout = data.draw(st.sampled_from(["plain", "partitioned", "bucketed"]), label="layout")
    options = dict(OPTIONS)
    partition_keys: tuple[str, ...] = ()
    if layout == "partitioned":
        partition_keys = ("p",)
    if layout == "bucketed":
        options |= {"bucket": "3", "bucket-key": "k"}
    threshold = data.draw(st.sampled_from(["0 b", "1 mb"]), label="threshold")
    options["file-index.in-manifest-threshold"] = threshold
    table = cat.create_table("db.t", row_type, partition_keys=partition_keys, options=options)
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    clustered = data.draw(st.booleans(), label="clustered")
    files: list[pa.Table] = []
    entries = []
    for f in range(data.draw(st.integers(1, 6), label="files")):
        n = data.draw(st.integers(1, 10), label="rows")
        lo, hi = (f * 100, f * 100 + 99) if clustered else (-50, 700)
        part = data.draw(st.integers(0, 2), label="part")
        arrays: dict[str, pa.Array] = {
            "k": pa.array(_keys(data.draw, n, lo, hi), pa.int64()),
            "p": pa.array([part] * n, pa.int32()),
        }
        for c in cols:
            arrays[c] = pa.array(data.draw(column_values(c, n), label=c), SCALARS[c][0].to_arrow())
        t = pa.table(arrays)
        files.append(t)
        if layout != "bucketed":
            entries.append(
                write_data_file(spec, t, (part,) if partition_keys else (), f"data-rt-{f}.parquet")
            )
            continue
        # every row in the bucket Paimon's function gives its key
        ids = bucket_ids([t["k"]], [T.BIGINT], 3)
        for b in sorted(set(ids.tolist())):
            rows = t.filter(pa.array(ids == b))
            entries.append(write_data_file(spec, rows, (), f"data-rt-{f}-{b}.parquet", None, b, 3))
    table.commit(entries)
    values = {c: [v for t in files for v in t[c].to_pylist()] for c in ["k", "p", *cols]}
    planner = ScanPlanner(table)
    snapshot = table.latest_snapshot()
    base = data.draw(
        st.one_of(st.none(), predicates({c: values[c] for c in cols}, depth=1)), label="base"
    )
    plan = planner.plan(base, snapshot=snapshot)
    present_keys = [v for v in values["k"] if v is not None]
    runtime: E.BooleanExpression = E.In("k", _runtime_values(data.draw, present_keys, True))
    if data.draw(st.booleans(), label="second key"):
        which = data.draw(st.sampled_from(["s", "p", "i32"]), label="second")
        present = [v for v in values[which] if v is not None]
        vals = _runtime_values(data.draw, present, which != "s")
        if which == "s":
            vals = [v for v in vals if isinstance(v, str)]
        if vals:
            runtime = E.And(runtime, E.In(which, vals))
    refined = refine_plan(planner, plan, snapshot, runtime)
    kept_before = {e.file.file_name for e in plan.files}
    kept_after = {e.file.file_name for e in refined.files}
    assert kept_after <= kept_before
    assert len(refined.decisions) == len(plan.decisions)
    full = runtime if base is None else E.And(base, runtime)
    bound = E.bind(table.schema.row_type, full)
    for d in refined.decisions:
        if d.keep:
            continue
        rows = _rows_of(table, d.entry)
        matches = E.evaluate_arrow(bound, rows).to_pylist()
        assert not any(matches), f"skipped {d.entry.file.file_name} by {d.reason}: {full!r}"


def test_thousands_of_keys_prune_a_clustered_table_by_stats(tmp_path: Path) -> None:
    """A date-clustered fact table and a month of keys out of years: only the files whose
    [min, max] holds a key stay; the report names the runtime tier and column."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    table = cat.create_table("db.f", T.RowType.of(("k", T.BIGINT), ("v", T.INT)))
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    entries = [
        write_data_file(
            spec,
            pa.table(
                {
                    "k": pa.array(range(f * 1000, f * 1000 + 1000), pa.int64()),
                    "v": pa.array([f] * 1000, pa.int32()),
                }
            ),
            (),
            f"data-{f}.parquet",
        )
        for f in range(20)
    ]
    table.commit(entries)
    planner = ScanPlanner(table)
    snap = table.latest_snapshot()
    plan = planner.plan(None, snapshot=snap)
    keys = [*range(5500, 6700, 1), 99_999_999]  # files 5 and 6, plus a key no file holds
    refined = refine_plan(planner, plan, snap, E.In("k", keys))
    assert sorted(e.file.file_name for e in refined.files) == ["data-5.parquet", "data-6.parquet"]
    assert refined.report.skipped_at_runtime == {"stats(k)": 18}
    assert ("files skipped at run time by stats(k)", "18") in refined.report.lines()
    assert "In(k, 1201 values)" in refined.report.predicate
    assert all(d.tier is SkipTier.RUNTIME for d in refined.decisions if not d.keep)


def _table_of_files(tmp_path: Path, name: str, files: list[pa.Table], options: Any = None) -> Any:
    cat = Catalog(str(tmp_path / "wh"))
    if "db" not in cat.list_databases():
        cat.create_database("db")
    table = cat.create_table(
        f"db.{name}",
        T.RowType.of(("k", T.BIGINT), ("v", T.INT), ("s", T.STRING)),
        options=options or {},
    )
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    table.commit(
        [write_data_file(spec, rows, (), f"data-{i}.parquet") for i, rows in enumerate(files)]
    )
    return table


def _declared(table: Any, predicate: Any = None) -> tuple[str, ...]:
    planner = ScanPlanner(table)
    snap = table.latest_snapshot()
    plan = planner.plan(predicate, snapshot=snap)
    return narrowing_columns(planner, plan, snap, prunable_columns(table.schema, table.kind))


def test_a_scan_declares_only_columns_that_can_narrow_its_files(tmp_path: Path) -> None:
    """What a scan offers Spark's runtime filtering (``filterAttributes``): the column its
    files are clustered by, not a column in every file's range (v: 0..6 in each file) nor
    one whose ranges all overlap (s); with one file left, nothing -- every declared column is
    a dynamic pruning subquery Spark copies into the plan, and the copies of a many-way join
    grow exponentially (TPC-DS q64)."""
    files = [
        pa.table(
            {
                "k": pa.array(range(f * 100, f * 100 + 100), pa.int64()),
                "v": pa.array([i % 7 for i in range(100)], pa.int32()),
                "s": pa.array([f"x{f}" if i else "a" for i in range(100)]),
                # "a" in every file: every range of s holds "a"
            }
        )
        for f in range(4)
    ]
    fact = _table_of_files(tmp_path, "f", files)
    assert prunable_columns(fact.schema, fact.kind) == ("k", "v", "s")
    assert _declared(fact) == ("k",)
    # the scan's own filter leaves one file: nothing to narrow
    assert _declared(fact, E.EqualTo("k", 150)) == ()
    one = _table_of_files(tmp_path, "d", [pa.concat_tables(files)])
    assert _declared(one) == ()
    # a file index answers by value: its column stays, overlapping ranges or not
    indexed = _table_of_files(tmp_path, "i", files, {"file-index.bloom-filter.columns": "v"})
    assert _declared(indexed) == ("k", "v")


def test_a_list_longer_than_the_index_answers_is_left_to_stats(tmp_path: Path) -> None:
    """A column only its file index narrows (``v``: every file's range overlaps the
    others', each file holds its own values) is declared with :data:`INDEX_VALUES_LIMIT`,
    the JVM's bound on the runtime IN lists it asks about: up to it the index narrows the
    files, beyond it :func:`refine_plan` answers by stats alone and keeps every file the
    plan kept -- so not asking (TPC-H's joins send 450,000+ order keys) loses nothing. The
    clustered key ``k`` is declared without a bound."""
    files = [
        pa.table(
            {
                "k": pa.array(range(f * 100, f * 100 + 100), pa.int64()),
                "v": pa.array([f + 4 * i for i in range(100)], pa.int32()),
                "s": pa.array(["x"] * 100),
            }
        )
        for f in range(4)
    ]
    table = _table_of_files(
        tmp_path,
        "b",
        files,
        {"file-index.bitmap.columns": "v", "file-index.bloom-filter.columns": "k"},
    )
    planner = ScanPlanner(table)
    snap = table.latest_snapshot()
    plan = planner.plan(None, snapshot=snap)
    declared, by_index = runtime_columns(
        planner, plan, snap, prunable_columns(table.schema, table.kind)
    )
    assert declared == narrowing_columns(
        planner, plan, snap, prunable_columns(table.schema, table.kind)
    )
    assert declared == ("k", "v")
    assert by_index == {"v": INDEX_VALUES_LIMIT}
    # every value of file 0 (v = 0, 4, 8, ...): a short list skips the other files by index
    few = refine_plan(planner, plan, snap, E.In("v", [0, 4, 8]))
    assert len(few.files) == 1
    many = [4 * i for i in range(INDEX_VALUES_LIMIT + 1)]
    assert len(refine_plan(planner, plan, snap, E.In("v", many)).files) == len(plan.files) == 4
    # one file kept: nothing declared, nothing bounded
    one = planner.plan(E.EqualTo("k", 150), snapshot=snap)
    assert runtime_columns(planner, one, snap, ("k", "v")) == ((), {})


@settings(max_examples=EXAMPLES * 4, deadline=None)
@given(
    lows=st.lists(st.one_of(st.none(), st.integers(-30, 30)), min_size=1, max_size=12),
    spans=st.lists(st.integers(0, 10), min_size=12, max_size=12),
    values=st.lists(st.integers(-40, 40), min_size=1, max_size=60),
    as_float=st.booleans(),
)
def test_sorted_in_matches_value_by_value(
    lows: list[int | None], spans: list[int], values: list[int], as_float: bool
) -> None:
    """The searchsorted path answers what comparing each value with [min, max] answers."""
    n = len(lows)
    dtype = np.float64 if as_float else np.int64
    t = T.DOUBLE if as_float else T.BIGINT
    col = ColumnArrays.empty(n, t)
    for i, lo in enumerate(lows):
        if lo is not None:
            col.min[i], col.max[i] = lo, lo + spans[i]
            col.min_known[i] = col.max_known[i] = True
        elif spans[i] % 2:  # max known alone
            col.max[i], col.max_known[i] = spans[i], True
    vals = frozenset(float(v) for v in values) if as_float else frozenset(values)
    got = _any_in_range(col, vals)
    want = [
        any(
            (not col.min_known[i] or v >= col.min[i]) and (not col.max_known[i] or v <= col.max[i])
            for v in vals
        )
        for i in range(n)
    ]
    assert got.tolist() == want
    assert col.min.dtype == dtype
