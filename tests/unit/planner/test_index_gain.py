"""The planner opens no index that cannot help: stats proofs and the probe.

* :func:`stats_prove_match` says "some row matches" only where one does: checked against
  :func:`evaluate_arrow` over the rows of files written by lakeskip's writer (its stats),
  on hypothesis-generated data and predicates, NULLs, NaN and duplicates included.
* A file the stats prove is kept without opening its indexes; a predicate whose indexes keep
  every file with many rows stops after a probe (and, remembered per snapshot and shape,
  after one file the next time); one whose indexes skip files evaluates every file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.expressions.strategies import ALL_SCALARS, column_values, predicates

from lakeskip import types as T
from lakeskip.catalog.cache import MetadataCache
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    EqualTo,
    GreaterThanOrEqual,
    IsNotNull,
    LessThan,
    and_,
    bind,
    evaluate_arrow,
)
from lakeskip.planner.columnar_stats import ColumnarStats
from lakeskip.planner.index_gain import drop_decided_leaves, stats_prove_match
from lakeskip.planner.scan import ScanPlanner
from lakeskip.planner.stats import ColumnStats, FileStats
from lakeskip.planner.tiers.files import PROBE

COLUMNS = ["i32", "i64", "dec", "d", "ts", "f64", "s", "i16", "ntz"]


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "40")), deadline=None)
@given(data=st.data())
def test_a_stats_proof_means_a_row_matches(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp: Path = tmp_path_factory.mktemp("gain")
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    row_type = T.RowType.of(*[(c, ALL_SCALARS[c][0]) for c in COLUMNS])
    table = cat.create_table("db.t", row_type, options={"metadata.stats-mode": "full"})
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    values: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    files: list[pa.Table] = []
    stats: list[FileStats] = []
    for f in range(data.draw(st.integers(1, 4), label="files")):
        n = data.draw(st.integers(1, 6), label="rows")
        cols = {c: data.draw(column_values(c, n), label=c) for c in COLUMNS}
        for c in COLUMNS:
            values[c] += cols[c]
        t = pa.table({c: pa.array(cols[c], ALL_SCALARS[c][0].to_arrow()) for c in COLUMNS})
        entry = write_data_file(spec, t, (), f"data-gain-{f}.parquet")
        raw = file_column_stats(entry.file, table.schema, table.schema)
        stats.append(FileStats(entry.file.row_count, {k: ColumnStats(*v) for k, v in raw.items()}))
        files.append(t)
    columnar = ColumnarStats.from_file_stats(stats, row_type)
    for _ in range(6):
        pred = data.draw(predicates(values, depth=3), label="predicate")
        bound = bind(row_type, pred, time_zone="UTC")
        if isinstance(bound, (AlwaysTrue, AlwaysFalse)):
            continue
        proved = stats_prove_match(bound, columnar).tolist()
        for t, sure in zip(files, proved, strict=True):
            if sure:
                assert any(evaluate_arrow(bound, t).to_pylist()), (
                    f"stats proved a match of {bound!r} in a file where no row matches"
                )
        # the leaves dropped for a set of files hold on every row of each: on those files
        # what is left selects exactly the rows the whole predicate selects
        subset = [i for i in range(len(files)) if data.draw(st.booleans(), label="in subset")]
        left = drop_decided_leaves(bound, columnar, np.asarray(subset, np.int64))
        for i in subset:
            want = evaluate_arrow(bound, files[i]).to_pylist()
            got = [True] * files[i].num_rows if isinstance(left, AlwaysTrue) else None
            got = got if got is not None else evaluate_arrow(left, files[i]).to_pylist()
            assert got == want, f"{bound!r} -> {left!r} selects other rows of file {i}"


def _table(tmp: Path, rows_per_file: int, files: int) -> Any:
    """``id`` ascending across files (stats prune it), ``v`` = id % 10 in every file
    (indexed by range-bitmap and bitmap, kept in an ``.index`` file), ``k`` = id % 1000."""
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    rt = T.RowType.of(("id", T.BIGINT), ("v", T.INT), ("k", T.INT))
    options = {
        "file-index.range-bitmap.columns": "v",
        "file-index.bitmap.columns": "k",
        "file-index.in-manifest-threshold": "1 b",
    }
    table = cat.create_table("db.t", rt, options=options)
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    entries = []
    for f in range(files):
        ids = list(range(f * rows_per_file, (f + 1) * rows_per_file))
        t = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "v": pa.array([i % 10 for i in ids], pa.int32()),
                "k": pa.array([i % 1000 for i in ids], pa.int32()),
            }
        )
        entries.append(write_data_file(spec, t, (), f"data-{f}.parquet"))
    table.commit(entries)
    return cat.get_table("db.t")


def test_indexes_that_keep_everything_are_probed_not_read(tmp_path: Path) -> None:
    table = _table(tmp_path, rows_per_file=2000, files=10)
    planner = ScanPlanner(table, cache=MetadataCache(2**28))
    # v < 3: every file's min (0) matches: the stats prove it, no index is opened
    plan = planner.plan(LessThan("v", 3))
    assert (plan.report.kept_files, plan.report.index_files_read) == (10, 0), (
        "min(v) = 0 < 3 in every file: no index can skip one"
    )
    # 3 <= v < 5: the range-bitmap keeps ~400 rows of every file: a probe, then the rest kept
    two_sided = and_(GreaterThanOrEqual("v", 3), LessThan("v", 5))
    plan = planner.plan(two_sided)
    assert (plan.report.kept_files, plan.report.index_files_read) == (10, PROBE), (
        f"the first {PROBE} files kept ~400 rows each: the other files are kept unread"
    )
    # the same shape again on this snapshot: one file is enough to tell
    plan = planner.plan(and_(GreaterThanOrEqual("v", 2), LessThan("v", 6)))
    assert (plan.report.kept_files, plan.report.index_files_read) == (10, 1)


def test_indexes_that_skip_are_evaluated_on_every_file(tmp_path: Path) -> None:
    table = _table(tmp_path, rows_per_file=2000, files=10)
    planner = ScanPlanner(table, cache=MetadataCache(2**28))
    # k = 5 AND v = 3: k = 5 rows have v = 5, the bitmap and range-bitmap intersect empty
    plan = planner.plan(and_(EqualTo("k", 5), EqualTo("v", 3)))
    assert (plan.report.kept_files, plan.report.index_files_read) == (0, 10), (
        "no row has k = 5 and v = 3: every file is skipped by its indexes"
    )
    # a sparse match: k = 7 AND v = 7 holds in two rows per file; not dense, so every file
    # is read; the shape skipped before, so no probe ever stops it
    plan = planner.plan(and_(EqualTo("k", 7), EqualTo("v", 7)))
    assert (plan.report.kept_files, plan.report.index_files_read) == (10, 10)
    plan = planner.plan(and_(EqualTo("k", 8), EqualTo("v", 9)))
    assert (plan.report.kept_files, plan.report.index_files_read) == (0, 10)


def test_leaves_the_stats_decide_are_not_asked_of_indexes(tmp_path: Path) -> None:
    """``k IS NOT NULL`` holds on every row (no NULLs in the stats): the planner keeps and
    skips what it does without it, and reads no index section of ``k``."""
    table = _table(tmp_path, rows_per_file=2000, files=4)
    ranged = and_(GreaterThanOrEqual("v", 3), LessThan("v", 5))
    plans = [
        ScanPlanner(table, cache=MetadataCache(2**28)).plan(p)
        for p in (ranged, and_(IsNotNull("k"), ranged))
    ]
    kept = [sorted(d.entry.file.file_name for d in p.decisions if d.keep) for p in plans]
    assert kept[0] == kept[1] and len(kept[0]) == 4
    reads = [(p.report.index_files_read, p.report.index_bytes_read) for p in plans]
    assert reads[0] == reads[1] and reads[0][1] > 0, (
        f"k IS NOT NULL read index sections of k: {reads}"
    )


def test_a_probe_of_large_files_decides_on_their_first_rows_never_skipping_a_match(
    tmp_path: Path,
) -> None:
    """Files of more than 65,536 rows: a probed file whose first 65,536 rows already hold
    dense matches is kept on that window alone (no row bitmap, counted as all its rows);
    one whose first rows do not match is evaluated whole, so a file matching only past the
    window is kept and one matching nowhere is skipped. Kept files against the rows."""
    n = 70_000
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    rt = T.RowType.of(("id", T.BIGINT), ("v", T.INT))
    table = cat.create_table(
        "db.t",
        rt,
        options={"file-index.range-bitmap.columns": "v", "file-index.in-manifest-threshold": "1 b"},
    )
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    columns: list[np.ndarray] = []
    for f in range(6):
        v = np.arange(n, dtype=np.int64) % 10  # 0..9 throughout
        v[-1] = 30  # the same min and max in every file: the stats decide nothing
        if f in (1, 4):
            v[66_000:66_100] = 20 + f  # 20+f only past the first 65,536 rows
        columns.append(v)
        t = pa.table(
            {
                "id": pa.array(np.arange(f * n, (f + 1) * n), pa.int64()),
                "v": pa.array(v, pa.int32()),
            }
        )
        spec_entry = write_data_file(spec, t, (), f"data-{f}.parquet")
        table.commit([spec_entry])
    table = cat.get_table("db.t")
    names = {f"data-{f}.parquet": f for f in range(6)}

    def kept(plan: Any) -> set[int]:
        return {names[d.entry.file.file_name] for d in plan.decisions if d.keep}

    # 3 <= v < 5 holds on 20 % of every file's rows, the first 65,536 included: the probe
    # decides on the window, the rest are kept unread
    plan = ScanPlanner(table, cache=MetadataCache(2**28)).plan(
        and_(GreaterThanOrEqual("v", 3), LessThan("v", 5))
    )
    assert kept(plan) == set(range(6)) and plan.report.index_files_read == PROBE
    windowed = [d for d in plan.decisions if d.keep and d.rows is None]
    assert len(windowed) == 6, "probed files decided on their window carry no row bitmap"
    # 21 <= v < 25: only past the window of files 1 and 4; every other file has no such row
    for lo, hi in ((21, 25), (20, 22), (24, 30)):
        planner = ScanPlanner(table, cache=MetadataCache(2**28))
        plan = planner.plan(and_(GreaterThanOrEqual("v", lo), LessThan("v", hi)))
        want = {f for f, v in enumerate(columns) if ((v >= lo) & (v < hi)).any()}
        assert kept(plan) == want, (lo, hi, kept(plan), want)
        assert plan.report.index_files_read == 6, "nothing dense in a window: all read whole"
