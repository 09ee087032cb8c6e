"""``merge-engine = partial-update``: merging and pruning never change the merged rows.

An independent model of Paimon's ``PartialUpdateMergeFunction`` (a plain per-key loop over
the versions, oldest first, written from the Java source, not from
``lakeskip.catalog.pk.merge_engine``) is fed every *input* record in arrival order (arrival order
is sequence order: sequence numbers rise per write and per row). Random writes (+I/+U rows with
NULLs, duplicate keys within one write, -D and -U rows) go through the real writer; then

* the library's vectorised merge of all files equals the model (the writer's in-write merge
  and ``MergeEngine.merge_versions`` are both checked), and
* for random predicates, the model's merge of only the files the planner keeps, filtered,
  equals the full result filtered: a pruned bucket that could hold a matching merged row
  (``a = 1`` from one version, ``b = 2`` from another) fails here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.pk_tables import write_pk
from tests.unit.expressions.strategies import predicates
from tests.unit.planner import pk_versions
from tests.unit.planner.pk_versions import draw_rows, filter_rows

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND, RowKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.planner.scan import ScanPlanner

ROW_TYPE = T.RowType.of(("k", T.INT), ("p", T.STRING), ("i32", T.INT), ("s", T.STRING))
NAMES = ROW_TYPE.names
VALUES = ("i32", "s")
BASE_OPTIONS = {
    "primary-key": "k,p",
    "bucket": "3",
    "merge-engine": "partial-update",
    "metadata.stats-mode": "full",
    "file-index.bloom-filter.columns": "s,k",
    "file-index.bitmap.columns": "i32",
}


def model(
    versions: list[tuple[int, int, dict[str, Any]]], ignore: bool, remove: bool
) -> dict[str, Any] | None:
    """Paimon's PartialUpdateMergeFunction.add/getResult for one key (no sequence groups)."""
    row: dict[str, Any] = {}
    filled = meet_insert = deleted = False
    for _, kind, value in sorted(versions, key=lambda v: v[0]):
        deleted = False
        if kind in (1, 3):
            if not filled:
                row = dict(value)
                filled = True
            if ignore:
                continue
            assert remove, "the model never sees retracts without a delete option"
            if kind == 3:
                deleted = True
                row = dict(value)
            continue
        for c, v in value.items():
            if v is not None:
                row[c] = v
            elif c not in row:
                row[c] = None
        meet_insert = filled = True
    if deleted or not meet_insert:
        return None
    return {c: row.get(c) for c in NAMES}


def model_rows(
    records: list[tuple[int, int, dict[str, Any]]], ignore: bool, remove: bool
) -> list[tuple[Any, ...]]:
    by_key: dict[tuple[Any, ...], list[tuple[int, int, dict[str, Any]]]] = {}
    for r in records:
        by_key.setdefault((r[2]["p"], r[2]["k"]), []).append(r)
    out = []
    for versions in by_key.values():
        row = model(versions, ignore, remove)
        if row is not None:
            out.append(tuple(row[c] for c in NAMES))
    return sorted(out, key=repr)


def file_records(
    table: FileStoreTable, entries: list[Any]
) -> list[tuple[Any, int, dict[str, Any]]]:
    return pk_versions.file_records(table, entries, NAMES)


def _filter(rows: list[tuple[Any, ...]], bound: Any) -> list[tuple[Any, ...]]:
    return filter_rows(rows, bound, ROW_TYPE)


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "40")))
@given(data=st.data())
def test_partial_update_merge_and_pruning_match_the_model(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp: Path = tmp_path_factory.mktemp("nwpu")
    mode = data.draw(st.sampled_from(["plain", "ignore", "remove"]), label="delete mode")
    ignore, remove = mode == "ignore", mode == "remove"
    options = dict(BASE_OPTIONS)
    if ignore:
        options["ignore-delete"] = "true"
    if remove:
        options["partial-update.remove-record-on-delete"] = "true"
    cat = Catalog(str(tmp / "wh"))
    table = cat.create_table("default.t", ROW_TYPE, partition_keys=["p"], options=options)
    records: list[tuple[int, int, dict[str, Any]]] = []
    arrival = 0
    for w in range(data.draw(st.integers(1, 6), label="writes")):
        n = data.draw(st.integers(1, 6), label="rows")
        rows = draw_rows(data, n, keys=5)
        kinds = [RowKind.INSERT, RowKind.INSERT, RowKind.UPDATE_AFTER]
        if mode != "plain":
            kinds += [RowKind.DELETE, RowKind.UPDATE_BEFORE]
        kind = data.draw(st.sampled_from(kinds), label="kind")
        for i in range(n):
            records.append((arrival, int(kind), {c: rows[c][i] for c in NAMES}))
            arrival += 1
        write_pk(table, rows, kind, f"w{w}", row_type=ROW_TYPE)
    table = table.refresh()
    every = table.scan_files()
    want_all = model_rows(records, ignore, remove)
    # the files (after the writer's in-write merge) merge to the same rows
    assert model_rows(file_records(table, every), ignore, remove) == want_all
    # so does the library's vectorised merge (compaction's)
    kv = pa.concat_tables([pq.read_table(table.data_file_path(e)) for e in every])
    lib = MergeEngine.of(table.schema.options).merge_versions(
        kv, ["p", "k"], SEQUENCE_NUMBER, VALUE_KIND
    )
    assert sorted((tuple(r[c] for c in NAMES) for r in lib.to_pylist()), key=repr) == want_all
    planner = ScanPlanner(table)
    values: dict[str, list[Any]] = {
        "k": list(range(-1, 7)),
        "p": ["x", "y", "z"],
        "i32": [*(r[2] for r in want_all), None, 0, 3, 6],
        "s": [*(r[3] for r in want_all), None, "a", "b", "d"],
    }
    types = {c: ROW_TYPE.field(c).type for c in values}
    for _ in range(6):
        pred = data.draw(predicates(values, depth=2, types=types), label="predicate")
        plan = planner.plan(pred)
        bound = E.bind(ROW_TYPE, pred)
        want = _filter(want_all, bound)
        got = _filter(model_rows(file_records(table, list(plan.files)), ignore, remove), bound)
        assert got == want, f"{pred!r}: kept {len(plan.files)}/{len(every)} files"


def test_mixed_versions_are_not_pruned_by_a_two_column_predicate(tmp_path: Path) -> None:
    """``i32 = 1`` comes from one version and ``s = 'a'`` from another: each file alone fails
    ``i32 = 1 AND s = 'a'``, the merged row matches; the bucket must be kept."""
    cat = Catalog(str(tmp_path / "wh"))
    table = cat.create_table("default.t", ROW_TYPE, partition_keys=["p"], options=BASE_OPTIONS)
    for w, row in enumerate(
        [{"k": 1, "p": "x", "i32": 1, "s": None}, {"k": 1, "p": "x", "i32": None, "s": "a"}]
    ):
        write_pk(table, [row], prefix=f"w{w}", row_type=ROW_TYPE)
    table = table.refresh()
    pred = E.And(E.EqualTo("i32", 1), E.EqualTo("s", "a"))
    plan = ScanPlanner(table).plan(pred)
    assert len(plan.files) == 2
    # a single-column conjunct no file can satisfy still drops the bucket
    assert len(ScanPlanner(table).plan(E.And(E.EqualTo("i32", 4), E.EqualTo("s", "a"))).files) == 0
