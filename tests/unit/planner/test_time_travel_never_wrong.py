"""Time travel and streaming reads never answer from the wrong files: random histories
(appends, overwrites, an added column), every snapshot planned by id and by its commit time;
random histories of appends and compactions cut into random micro-batches of a streaming read
(``lakeskip.planner.stream``), which deliver each appended file once. Oracles independent of
the code under test: the live files of each snapshot (the files each commit added) as the
history built them, and ``evaluate_arrow`` over each skipped file's rows (with that snapshot's
schema)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples
from tests.unit.expressions.strategies import column_values, predicates

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.ops.time_travel import TimeTravel, resolve_snapshot, table_at
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import InvalidOptionError, SnapshotNotFoundError, StreamReadError
from lakeskip.planner.scan import ScanPlanner
from lakeskip.planner.stream import StreamOffset, plan_stream_batch, stream_end, stream_start

OPTIONS = {
    "file-index.bloom-filter.columns": "s",
    "file-index.bitmap.columns": "i32",
    "file-index.bsi.columns": "i64",
    "metadata.stats-mode": "full",
}


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "25")), deadline=None)
@given(data=st.data())
def test_every_snapshot_plans_its_own_files_and_never_skips_a_match(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp: Path = tmp_path_factory.mktemp("tt")
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    table = cat.create_table(
        "db.t", T.RowType.of(("i32", T.INT), ("i64", T.BIGINT), ("s", T.STRING)), options=OPTIONS
    )
    rows_of: dict[str, pa.Table] = {}  # file name -> its rows
    live_at: dict[int, set[str]] = {}  # snapshot id -> live file names (the oracle)
    live: set[str] = set()
    n_steps = data.draw(st.integers(1, 5), label="steps")
    for step in range(n_steps):
        action = data.draw(st.sampled_from(["append", "append", "overwrite", "add"]))
        if action == "add" and "i8" not in table.schema.row_type.names:
            cat.add_columns("db.t", [T.Field(0, "i8", T.TINYINT)])
            table.refresh()
            continue
        names = table.schema.row_type.names
        n = data.draw(st.integers(1, 8), label="rows")
        cols = {c: data.draw(column_values(c, n), label=c) for c in names}
        t = pa.table(
            {c: pa.array(cols[c], table.schema.row_type.field(c).type.to_arrow()) for c in names}
        )
        spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
        entry = write_data_file(spec, t, (), f"data-tt-{step}.parquet")
        rows_of[entry.file.file_name] = t
        kind = CommitKind.OVERWRITE if action == "overwrite" else CommitKind.APPEND
        snap = table.commit([entry], kind=kind)
        assert snap is not None
        live = (
            {entry.file.file_name}
            if kind is CommitKind.OVERWRITE
            else live | {entry.file.file_name}
        )
        live_at[snap.id] = set(live)
    for sid, expected in live_at.items():
        snap = resolve_snapshot(table, TimeTravel(snapshot_id=sid))
        at_time = resolve_snapshot(table, TimeTravel(timestamp_millis=snap.time_millis))
        newest = max(i for i in live_at if table.snapshot(i).time_millis <= snap.time_millis)
        assert at_time.id == newest, f"TIMESTAMP AS OF {snap.time_millis}: {at_time.id} != {newest}"
        old = table_at(table, snap)
        values: dict[str, list[Any]] = {}
        for name in expected:
            for c in old.schema.row_type.names:
                if c in rows_of[name].column_names:
                    values.setdefault(c, []).extend(rows_of[name][c].to_pylist())
        pred = data.draw(predicates(values, depth=2), label="predicate")
        plan = ScanPlanner(old).plan(pred, snapshot_id=sid)
        planned = {d.entry.file.file_name for d in plan.decisions}
        assert planned == expected, f"snapshot {sid}: planned {planned}, live {expected}"
        bound = E.bind(old.schema.row_type, pred)
        for d in plan.decisions:
            rows = rows_of[d.entry.file.file_name]
            for f in old.schema.row_type:  # a column added later reads as NULL
                if f.name not in rows.column_names:
                    rows = rows.append_column(f.name, pa.nulls(rows.num_rows, f.type.to_arrow()))
            matches = E.evaluate_arrow(bound, rows).to_pylist()
            assert d.keep or not any(matches), (
                f"snapshot {sid}: skipped {d.entry.file.file_name} by {d.reason} but it has "
                f"matching rows for {pred!r}"
            )


# -- streaming reads (lakeskip.planner.stream): offsets and micro-batch plans ----------------

ROW = T.RowType.of(("i32", T.INT), ("s", T.STRING))


def _table(tmp: Path, options: dict[str, str] | None = None) -> FileStoreTable:
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", ROW, options=options or {"metadata.stats-mode": "full"})


def _append(table: FileStoreTable, rows: pa.Table, name: str, kind: CommitKind) -> str:
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    entry = write_data_file(spec, rows, (), name)
    deleted = table.scan_files() if kind is CommitKind.COMPACT else ()
    assert table.commit([entry], deleted, kind=kind) is not None
    return entry.file.file_name


def _rows(values: list[int]) -> pa.Table:
    return pa.table(
        {
            "i32": pa.array(values, pa.int32()),
            "s": pa.array([f"s{v}" for v in values], pa.string()),
        }
    )


def test_start_modes(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert stream_start(table, {}) == StreamOffset(0)  # no snapshot yet: every one to come
    for i in range(3):
        _append(table, _rows([i]), f"f{i}.parquet", CommitKind.APPEND)
    assert stream_start(table, {}) == StreamOffset(3, full=True)
    assert stream_start(table, {"scan.mode": "latest"}) == StreamOffset(3)
    assert stream_start(table, {"scan.snapshot-id": "2"}) == StreamOffset(1)
    assert stream_start(
        table, {"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"}
    ) == StreamOffset(2, full=True)
    t2 = table.snapshot(2).time_millis
    assert stream_start(table, {"scan.timestamp-millis": str(t2)}).snapshot <= 1
    with pytest.raises(InvalidOptionError, match="not supported"):
        stream_start(table, {"scan.mode": "compacted-full"})
    with pytest.raises(InvalidOptionError, match="needs the option"):
        stream_start(table, {"scan.mode": "from-snapshot"})
    with pytest.raises(SnapshotNotFoundError):
        stream_start(table, {"scan.mode": "from-snapshot-full", "scan.snapshot-id": "9"})


@pytest.mark.parametrize("engine", ["partial-update", "aggregation", "first-row"])
def test_primary_key_tables_without_a_changelog_are_refused(tmp_path: Path, engine: str) -> None:
    """As Paimon: these merge engines need a changelog producer to be read as a stream."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    options = {"primary-key": "i32", "bucket": "1", "merge-engine": engine}
    table = cat.create_table("db.k", ROW, options=options)
    with pytest.raises(StreamReadError, match=f"merge-engine '{engine}' is not supported"):
        stream_start(table, {})
    dedupe = cat.create_table("db.d", ROW, options={"primary-key": "i32", "bucket": "1"})
    assert stream_start(dedupe, {}) == StreamOffset(0)


def test_end_paces_by_whole_snapshots(tmp_path: Path) -> None:
    table = _table(tmp_path)
    for i in range(4):
        _append(table, _rows([i]), f"f{i}.parquet", CommitKind.APPEND)
    assert stream_end(table, StreamOffset(4, full=True)) == StreamOffset(4)
    assert stream_end(table, StreamOffset(4)) == StreamOffset(4)  # nothing new
    assert stream_end(table, StreamOffset(0)) == StreamOffset(4)
    assert stream_end(table, StreamOffset(0), until=2) == StreamOffset(2)
    assert stream_end(table, StreamOffset(1), max_files=2) == StreamOffset(3)
    assert stream_end(table, StreamOffset(1), max_files=1) == StreamOffset(2)


@settings(max_examples=unit_examples(25), deadline=None)
@given(data=st.data())
def test_each_batch_delivers_the_appended_files_and_never_skips_a_match(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Random histories of appends and compactions cut into random micro-batches: together
    the batches plan exactly the files the APPEND commits added (a compaction's files are
    never delivered again), and a skipped file holds no row of the predicate."""
    table = _table(
        tmp_path_factory.mktemp("stream"),
        {"metadata.stats-mode": "full", "file-index.bloom-filter.columns": "s"},
    )
    rows_of: dict[str, pa.Table] = {}
    appended: list[str] = []
    values: dict[str, list[Any]] = {"i32": [], "s": []}
    for step in range(data.draw(st.integers(1, 6), label="steps")):
        n = data.draw(st.integers(1, 6), label="rows")
        cols = {c: data.draw(column_values(c, n), label=c) for c in ROW.names}
        rows = pa.table({c: pa.array(cols[c], ROW.field(c).type.to_arrow()) for c in ROW.names})
        kind = (
            CommitKind.COMPACT
            if step and data.draw(st.booleans(), label="compact")
            else CommitKind.APPEND
        )
        name = _append(table, rows, f"f{step}.parquet", kind)
        rows_of[name] = rows
        if kind is CommitKind.APPEND:
            appended.append(name)
            for c in ROW.names:
                values[c].extend(cols[c])
    pred = data.draw(predicates(values, depth=2), label="predicate")
    bound = E.bind(ROW, pred)
    latest = table.snapshot_manager.latest_id()
    assert latest is not None
    cuts = sorted(data.draw(st.sets(st.integers(1, latest)), label="cuts") | {latest})
    planned: list[str] = []
    start = StreamOffset(0)
    for end_id in cuts:
        batch = plan_stream_batch(ScanPlanner(table), start, StreamOffset(end_id), pred)
        assert batch.changes is None, "an append table's files are read whole"
        plan = batch.plan
        for d in plan.decisions:
            planned.append(d.entry.file.file_name)
            matches = E.evaluate_arrow(bound, rows_of[d.entry.file.file_name]).to_pylist()
            assert d.keep or not any(matches), f"skipped {d.entry.file.file_name}: {d.reason}"
        start = StreamOffset(end_id)
    assert planned == appended, "every appended file once, in commit order, no compacted one"
