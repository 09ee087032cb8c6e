"""Time travel never answers from the wrong files: random histories (appends, overwrites, an
added column), every snapshot planned by id and by its commit time. Oracles independent of
the code under test: the live files of each snapshot as the history built them, and
``evaluate_arrow`` over each skipped file's rows (with that snapshot's schema)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.expressions.strategies import column_values, predicates

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.ops.time_travel import TimeTravel, resolve_snapshot, table_at
from lakeskip.catalog.write.data_writer import WriteSpec, write_data_file
from lakeskip.planner.scan import ScanPlanner

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
