"""Primary-key tables: pruning never changes the merged result.

Random upserts and deletes are written as real key-value files (stats, bloom and bitmap
indexes on value columns, several buckets and partitions); random predicates are planned,
and the rows a reader gets by merging only the kept files ("newest version per key, deletes
dropped", recomputed here in pyarrow) are compared, after the predicate, with the same merge
over every file. A skipped file that held the newest version of a key would resurrect an
older one or lose a row: both fail here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.pk_tables import write_pk, write_pk_dv
from tests.unit.expressions.strategies import predicates
from tests.unit.planner.pk_versions import draw_rows

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND, RowKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.planner.scan import ScanPlanner

ROW_TYPE = T.RowType.of(("k", T.INT), ("p", T.STRING), ("i32", T.INT), ("s", T.STRING))
OPTIONS = {
    "primary-key": "k,p",
    "bucket": "2",
    "metadata.stats-mode": "full",
    "file-index.bloom-filter.columns": "s,k",
    "file-index.bitmap.columns": "i32",
}
KEYS = ["p", "k"]


def merged(table: FileStoreTable, entries: list[Any]) -> pa.Table:
    """Newest version per (partition, key) over ``entries``' files, deletes dropped."""
    names = ROW_TYPE.names
    parts = [pq.read_table(table.data_file_path(e)) for e in entries]
    if not parts:
        return pa.table({n: pa.array([], ROW_TYPE.field(n).type.to_arrow()) for n in names})
    kv = pa.concat_tables(parts)
    newest = kv.group_by(KEYS).aggregate([(SEQUENCE_NUMBER, "max")])
    joined = kv.join(newest, keys=KEYS)
    latest = joined.filter(pc.equal(joined[SEQUENCE_NUMBER], joined[SEQUENCE_NUMBER + "_max"]))
    alive = latest.filter(pc.is_in(latest[VALUE_KIND], pa.array([0, 2], pa.int8())))
    return alive.select(names).cast(ROW_TYPE.to_arrow())


def _key(rows: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in rows.to_pylist())


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "40")))
@given(data=st.data())
def test_pruning_never_changes_the_merged_rows(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp: Path = tmp_path_factory.mktemp("nwpk")
    cat = Catalog(str(tmp / "wh"))
    table = cat.create_table("default.t", ROW_TYPE, partition_keys=["p"], options=OPTIONS)
    for w in range(data.draw(st.integers(1, 5), label="writes")):
        n = data.draw(st.integers(1, 10), label="rows")
        rows = draw_rows(data, n, keys=10)
        kind = data.draw(st.sampled_from([RowKind.INSERT, RowKind.INSERT, RowKind.DELETE]))
        write_pk(table, rows, kind, f"w{w}", row_type=ROW_TYPE)
    table = table.refresh()
    every = table.scan_files()
    full = merged(table, every)
    planner = ScanPlanner(table)
    values: dict[str, list[Any]] = {
        "k": list(range(-1, 11)),
        "p": ["x", "y", "z"],
        "i32": [*full["i32"].to_pylist(), None, 0, 3, 6],
        "s": [*full["s"].to_pylist(), None, "a", "b", "d"],
    }
    types = {c: ROW_TYPE.field(c).type for c in values}
    for _ in range(4):
        pred = data.draw(predicates(values, depth=2, types=types), label="predicate")
        plan = planner.plan(pred)
        bound = E.bind(ROW_TYPE, pred)
        want = full.filter(pc.fill_null(E.evaluate_arrow(bound, full), False))
        got_all = merged(table, list(plan.files))
        got = got_all.filter(pc.fill_null(E.evaluate_arrow(bound, got_all), False))
        assert _key(got) == _key(want), f"{pred!r}: kept {len(plan.files)}/{len(every)} files"


def _raw(table: FileStoreTable, entries: list[Any]) -> pa.Table:
    """What Paimon's DV read returns from ``entries``: each file at level > 0 as it is,
    minus the positions its DV deletes, no merge."""
    refs = table.deletion_files()
    parts = []
    for e in entries:
        if e.file.level == 0:
            continue
        data = pq.read_table(table.data_file_path(e)).select(ROW_TYPE.names)
        ref = refs.get(e.file.file_name)
        if ref is not None:
            dead = table.read_deletion_vector(ref, e.file.row_count)
            data = data.filter(pa.array([i not in dead for i in range(data.num_rows)]))
        parts.append(data.cast(ROW_TYPE.to_arrow()))
    if not parts:
        return pa.table(
            {n: pa.array([], ROW_TYPE.field(n).type.to_arrow()) for n in ROW_TYPE.names}
        )
    return pa.concat_tables(parts)


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "40")))
@given(data=st.data())
def test_deletion_vector_pruning_never_changes_the_rows(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Deletion vectors on: random upserts, updates and deletes go through the DV write
    (:mod:`lakeskip.catalog.write.pk_dv_write`, as a Spark task runs it); the files read raw minus
    their DVs equal a "latest row per key" model kept here in Python, and a plan's kept
    files, read the same way and filtered, equal the model filtered (per-file pruning by
    value stats and indexes must never drop a live row)."""

    tmp: Path = tmp_path_factory.mktemp("nwpkdv")
    cat = Catalog(str(tmp / "wh"))
    table = cat.create_table(
        "default.t",
        ROW_TYPE,
        partition_keys=["p"],
        options={**OPTIONS, "deletion-vectors.enabled": "true"},
    )
    model: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for w in range(data.draw(st.integers(1, 7), label="writes")):
        n = data.draw(st.integers(1, 10), label="rows")
        rows = draw_rows(data, n, keys=10, unique_keys=True)
        kind = data.draw(
            st.sampled_from([RowKind.INSERT, RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE])
        )
        table = table.refresh()
        write_pk_dv(table, [pa.table(rows, schema=ROW_TYPE.to_arrow())], kind, prefix=f"w{w}")
        for r in pa.table(rows).to_pylist():
            key = (r["p"], r["k"])
            if kind is RowKind.DELETE:
                model.pop(key, None)
            else:
                model[key] = (r["k"], r["p"], r["i32"], r["s"])
    table = table.refresh()
    every = table.scan_files()
    assert all(e.file.level > 0 and not e.file.delete_row_count for e in every)
    full = _raw(table, every)
    assert _key(full) == sorted(model.values())
    planner = ScanPlanner(table)
    values: dict[str, list[Any]] = {
        "k": list(range(-1, 11)),
        "p": ["x", "y", "z"],
        "i32": [*full["i32"].to_pylist(), None, 0, 3, 6],
        "s": [*full["s"].to_pylist(), None, "a", "b", "d"],
    }
    types = {c: ROW_TYPE.field(c).type for c in values}
    for _ in range(4):
        pred = data.draw(predicates(values, depth=2, types=types), label="predicate")
        plan = planner.plan(pred)
        bound = E.bind(ROW_TYPE, pred)
        want = full.filter(pc.fill_null(E.evaluate_arrow(bound, full), False))
        got_all = _raw(table, list(plan.files))
        got = got_all.filter(pc.fill_null(E.evaluate_arrow(bound, got_all), False))
        assert _key(got) == _key(want), f"{pred!r}: kept {len(plan.files)}/{len(every)} files"
