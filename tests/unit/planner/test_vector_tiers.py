"""The planner's vectorised tiers (columnar stats, blooms probed together) keep exactly the
files the per-file path keeps: stats by :class:`StatsEvaluator` file by file, then each
file's embedded index container opened and evaluated on its own.

Random tables (several files, nulls, NaN, duplicates), bloom filters on some columns and a
bitmap beside a bloom on one (so some files are decided by the blooms alone and some go on
to the per-file evaluation), random predicates; every file's keep/skip must agree."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.expressions.strategies import SCALARS, column_values, predicates

from lakeskip import types as T
from lakeskip.catalog import manifest_disk_cache
from lakeskip.catalog.cache import shared_cache
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.expressions import AlwaysFalse, AlwaysTrue, bind, evaluate_arrow
from lakeskip.expressions.visitors import referenced_names
from lakeskip.index.file_index import FileIndexFile
from lakeskip.planner.index_evaluator import evaluate_file_index
from lakeskip.planner.scan import ScanPlanner
from lakeskip.planner.stats import ColumnStats, FileStats
from lakeskip.planner.stats_evaluator import StatsEvaluator
from lakeskip.planner.tiers.columns import SnapshotColumns
from lakeskip.planner.tiers.files import COLUMN_TIERS
from lakeskip.planner.tiers.notes import PlanNotes

COLUMNS = ["i32", "i64", "f64", "s", "b"]
OPTIONS = {
    "file-index.bloom-filter.columns": "s,i64,i32,f64",
    "file-index.bloom-filter.s.items": "4",
    "file-index.bloom-filter.i64.items": "8",
    "file-index.bloom-filter.i32.items": "3",
    "file-index.bloom-filter.f64.items": "5",
    "file-index.bitmap.columns": "i32",
    "file-index.in-manifest-threshold": "1 mb",
    "metadata.stats-mode": "full",
}


def _reference_keep(table: Any, entry: Any, bound: Any) -> bool:
    schema = table.schema
    raw = file_column_stats(entry.file, schema, schema)
    stats = FileStats(entry.file.row_count, {k: ColumnStats(*v) for k, v in raw.items()})
    if not StatsEvaluator(bound).evaluate(stats):
        return False
    if entry.file.embedded_index is None:
        return True
    index = FileIndexFile.from_bytes(entry.file.embedded_index, schema.row_type)
    return not evaluate_file_index(bound, index).skip


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "25")), deadline=None)
@given(data=st.data())
def test_vectorised_tiers_keep_what_the_per_file_path_keeps(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp: Path = tmp_path_factory.mktemp("vt")
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    row_type = T.RowType.of(*[(c, SCALARS[c][0]) for c in COLUMNS])
    table = cat.create_table("db.t", row_type, options=OPTIONS)
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    values: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    entries = []
    for f in range(data.draw(st.integers(1, 8), label="files")):
        n = data.draw(st.integers(1, 8), label="rows")
        cols = {c: data.draw(column_values(c, n), label=c) for c in COLUMNS}
        for c in COLUMNS:
            values[c] += cols[c]
        t = pa.table({c: pa.array(cols[c], SCALARS[c][0].to_arrow()) for c in COLUMNS})
        entries.append(write_data_file(spec, t, (), f"data-vt-{f}.parquet"))
    table.commit(entries)
    planner = ScanPlanner(table)
    by_entries = 0  # fresh plans made from manifest entries (not from the manifests' columns)
    for _ in range(4):
        pred = data.draw(predicates(values, depth=2), label="predicate")
        bound = bind(row_type, pred, time_zone="UTC")
        if isinstance(bound, (AlwaysTrue, AlwaysFalse)):
            continue
        plan = planner.plan(pred)
        got = {d.entry.file.file_name: d.keep for d in plan.decisions}
        want = {
            d.entry.file.file_name: _reference_keep(table, d.entry, bound) for d in plan.decisions
        }
        assert got == want, pred
        # a fresh process: nothing in memory, manifests decoded from the Avro files (and
        # stored on local disk), then a second one reading them back from that disk cache
        env = {
            "LAKESKIP_MANIFEST_CACHE_DIR": str(tmp / "manifest-cache"),
            "LAKESKIP_MANIFEST_CACHE_MIN_ENTRIES": "0",
        }
        with mock.patch.dict(os.environ, env):
            for fresh in ("decoded", "from the disk cache"):
                shared_cache().clear()
                again = ScanPlanner(cat.get_table("db.t")).plan(pred)
                manifest_disk_cache.flush()  # stored in the background: on disk now
                kept = {d.entry.file.file_name: d.keep for d in again.decisions}
                assert kept == want, (fresh, pred)
                by_entries += again.kept is None
    # the disk cache holds entries: a plan from the manifests' columns (a predicate no
    # index is asked) decodes the Avro files column-wise and does not use it
    if by_entries:
        assert list((tmp / "manifest-cache").glob("*.lsmc")), "the disk cache was used"


STATS_COLUMNS = ["i32", "i64", "f64", "s", "dec"]


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "25")), deadline=None)
@given(data=st.data())
def test_stats_plans_from_columns_keep_what_the_per_file_path_keeps(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """A partitioned append table without indexes, of several commits (some deleting files:
    live files merged from ADDs and DELETEs), random predicates. A predicate on no partition
    column is planned from the live files' columns (``plan.kept`` set; no per-file object):
    its decisions, in order, and its report are the per-file path's (``plan_files`` over the
    same entries), and no skipped file holds a matching row (``evaluate_arrow`` over its
    rows). Tiers 1-2 from columns (``decide_columns``) decide every predicate, partition
    column included, as ``decide`` does file by file."""
    tmp: Path = tmp_path_factory.mktemp("sc")
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    row_type = T.RowType.of(*[(c, SCALARS[c][0]) for c in STATS_COLUMNS], ("p", T.INT))
    table = cat.create_table(
        "db.t", row_type, partition_keys=["p"], options={"metadata.stats-mode": "full"}
    )
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    rows: dict[str, pa.Table] = {}
    values: dict[str, list[Any]] = {c: [] for c in [*STATS_COLUMNS, "p"]}
    live: list[Any] = []
    for c in range(data.draw(st.integers(1, 3), label="commits")):
        added = []
        for f in range(data.draw(st.integers(1, 4), label="files")):
            n = data.draw(st.integers(1, 6), label="rows")
            p = data.draw(st.one_of(st.none(), st.integers(0, 2)), label="partition")
            cols = {k: data.draw(column_values(k, n), label=k) for k in STATS_COLUMNS}
            cols["p"] = [p] * n
            for k, v in cols.items():
                values[k] += v
            name = f"data-sc-{c}-{f}.parquet"
            rows[name] = pa.table(
                {k: pa.array(v, row_type.field(k).type.to_arrow()) for k, v in cols.items()}
            )
            added.append(write_data_file(spec, rows[name], (p,), name))
        gone = [e for e in live if data.draw(st.booleans(), label="delete")]
        table.commit(added, gone, kind=CommitKind.COMPACT if gone else CommitKind.APPEND)
        live = [e for e in live if e not in gone] + added
    table = cat.get_table("db.t")
    snapshot = table.latest_snapshot()
    assert snapshot is not None
    planner = ScanPlanner(table)
    types = {f.name: f.type for f in row_type}
    for _ in range(4):
        pred = data.draw(predicates(values, depth=2, types=types), label="predicate")
        bound = bind(row_type, pred, time_zone="UTC")
        if isinstance(bound, (AlwaysTrue, AlwaysFalse)):
            continue
        on_partition = "p" in {n.lower() for n in referenced_names(bound)}
        plan = planner.plan(pred)
        assert (plan.kept is not None) == (not on_partition), pred
        want = planner.plan_files(table.scan_files(snapshot), pred, snapshot)
        got = [(d.entry.file.file_name, d.keep, d.tier) for d in plan.decisions]
        assert [e.file.file_name for e in plan.files] == [n for n, k, _ in got if k]
        assert plan.files == want.files, pred
        if not on_partition:  # else only the partitions kept are decided, the rest counted
            assert got == [(d.entry.file.file_name, d.keep, d.tier) for d in want.decisions]
            report = dataclasses.replace(
                want.report,
                planning_ms=plan.report.planning_ms,
                planning_cpu_ms=plan.report.planning_cpu_ms,
            )
            assert plan.report == report, pred
        for name, keep, _ in got:
            assert keep or not any(evaluate_arrow(bound, rows[name]).to_pylist()), (name, pred)
        # tiers 1-2 from columns, the partition tier included, against the per-file tiers
        columns = table.live_columns(snapshot)
        assert columns is not None
        notes = PlanNotes()
        tiers = planner.file_tiers(snapshot, notes)
        cols = SnapshotColumns(table, shared_cache()).of(snapshot, columns, columns, notes)
        codes = tiers.decide_columns(columns, cols, bound, row_type)
        decided, _ = tiers.decide(columns.entries(), cols, bound, row_type, False)
        assert [COLUMN_TIERS[c] for c in codes.tolist()] == [
            None if d.keep else d.tier for d in decided
        ], pred
