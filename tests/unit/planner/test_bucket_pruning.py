"""Bucket pruning on fixed-bucket tables: never wrong, and it does prune.

Random tables with a random ``bucket-key`` (one or two columns of several types, including
types the selector refuses to prune on) are written through the real
:class:`~lakeskip.catalog.write.data_writer.DataWriter` (rows split by Paimon's bucket function),
random predicates -- plain ones and ones pinning the key columns with ``=``/``IN`` literals,
including literals of foreign Python types that binding must coerce -- are planned, and every
skipped file is checked against the oracle (``evaluate_arrow`` over the file's rows)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.expressions.strategies import SCALARS, _literal, column_values, predicates

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.bucket import bucket_ids, bucket_of
from lakeskip.catalog.write.data_writer import write_all
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.planner.report import SkipTier
from lakeskip.planner.scan import ScanPlanner

COLUMNS = ["i8", "i32", "i64", "s", "d", "dec", "b", "f64", "ts"]


def _read(table: Any, entry: Any) -> pa.Table:
    with table.file_io.open_input(table.data_file_path(entry)) as f:
        return pq.read_table(f)


@st.composite
def _key_filter(draw: Any, key: list[str], values: dict[str, list[Any]]) -> E.BooleanExpression:
    parts: list[E.BooleanExpression] = []
    for k in key:
        t = SCALARS[k][0]
        lits = draw(st.lists(_literal(t, values[k]), min_size=1, max_size=3))
        parts.append(E.EqualTo(k, lits[0]) if len(lits) == 1 else E.In(k, lits))
        if draw(st.integers(0, 5)) == 0:
            parts[-1] = E.Or(parts[-1], E.IsNull(k))
    return parts[0] if len(parts) == 1 else E.And(*parts)


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "40")), deadline=None)
@given(data=st.data())
def test_bucket_pruning_never_skips_a_matching_file(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp: Path = tmp_path_factory.mktemp("bk")
    cat = Catalog(str(tmp / "wh"))
    row_type = T.RowType.of(*[(c, SCALARS[c][0]) for c in COLUMNS])
    key = data.draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=2, unique=True))
    n_buckets = data.draw(st.integers(1, 6), label="buckets")
    free = [c for c in ("b", "i8") if c not in key]
    parts: list[str] = (
        data.draw(st.lists(st.sampled_from(free), max_size=1), label="partition") if free else []
    )
    table = cat.create_table(
        "t",
        row_type,
        partition_keys=parts,
        options={"bucket": str(n_buckets), "bucket-key": ",".join(key)},
    )
    n = data.draw(st.integers(1, 30), label="rows")
    cols = {c: data.draw(column_values(c, n), label=c) for c in COLUMNS}
    rows = pa.table({c: pa.array(cols[c], SCALARS[c][0].to_arrow()) for c in COLUMNS})
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    entries = write_all(spec, [rows])
    table.commit(entries)
    files = {e.file.file_name: _read(table, e) for e in entries}
    for e in entries:  # every row is in the bucket Paimon's function gives it
        got = files[e.file.file_name]
        ids = bucket_ids([got[k] for k in key], [SCALARS[k][0] for k in key], n_buckets)
        assert set(ids.tolist()) == {e.bucket} and e.total_buckets == n_buckets
    assert sum(f.num_rows for f in files.values()) == n
    planner = ScanPlanner(table)
    for _ in range(4):
        pred = data.draw(
            st.one_of(
                _key_filter(key, cols),
                predicates({k: cols[k] for k in key}, depth=2),
                predicates(cols, depth=2),
                _key_filter(key, cols).flatmap(
                    lambda p: predicates(cols, depth=1).map(lambda q: E.And(p, q))
                ),
            ),
            label="predicate",
        )
        plan = planner.plan(pred)
        bound = E.bind(table.schema.row_type, pred)
        if plan.kept is not None and plan.report.total_files:
            # decided on the live files' columns: as the per-file path decides each file
            snap = table.latest_snapshot()
            by_file = planner.plan_files(table.scan_files(snap), pred, snap)
            assert [(d.entry.file.file_name, d.keep, d.tier) for d in plan.decisions] == [
                (d.entry.file.file_name, d.keep, d.tier) for d in by_file.decisions
            ], pred
        for d in plan.decisions:
            matches = E.evaluate_arrow(bound, files[d.entry.file.file_name]).to_pylist()
            if not d.keep:
                assert not any(matches), (
                    f"skipped bucket {d.entry.bucket} ({d.entry.file.file_name}) by {d.reason} "
                    f"but rows {[i for i, m in enumerate(matches) if m]} match {pred!r}"
                )


def _point_table(tmp_path: Path, key_type: T.DataType, values: list[Any]) -> Any:
    cat = Catalog(str(tmp_path / "wh"))
    rt = T.RowType.of(("k", key_type), ("v", T.INT))
    table = cat.create_table("p", rt, options={"bucket": "8", "bucket-key": "k"})
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    data = pa.table({"k": pa.array(values, key_type.to_arrow()), "v": list(range(len(values)))})
    table.commit(write_all(spec, [data]))
    return table


def test_point_lookup_keeps_one_bucket(tmp_path: Path) -> None:
    table = _point_table(tmp_path, T.BIGINT, list(range(400)))
    entries = table.scan_files()
    assert sorted(e.bucket for e in entries) == list(range(8))
    assert {e.total_buckets for e in entries} == {8}
    assert all(f"/bucket-{e.bucket}/" in table.data_file_path(e) for e in entries)
    metas = table.manifest_metas(table.latest_snapshot())
    assert [(m.min_bucket, m.max_bucket) for m in metas if m.num_added_files] == [(0, 7)]
    plan = ScanPlanner(table).plan(E.EqualTo("k", 123))
    assert plan.kept is not None  # decided on the live files' columns (buckets included)
    want = bucket_of((123,), (T.BIGINT,), 8)
    assert [e.bucket for e in plan.files] == [want]
    assert plan.report.skipped_by_bucket == 7
    assert ("files skipped by bucket", "7") in plan.report.lines()
    assert "bucket 7" in plan.report.summary()
    skipped = [d for d in plan.decisions if not d.keep]
    assert {d.tier for d in skipped} == {SkipTier.BUCKET}
    in_plan = ScanPlanner(table).plan(E.In("k", [1, 2, 3]))
    assert {e.bucket for e in in_plan.files} == {bucket_of((v,), (T.BIGINT,), 8) for v in (1, 2, 3)}


@pytest.mark.parametrize(
    "pred",
    [
        E.GreaterThan("k", 5),
        E.NotEqualTo("k", 5),
        E.Or(E.EqualTo("k", 5), E.EqualTo("v", 1)),
        E.Not(E.EqualTo("k", 5)),
        E.In("k", list(range(2000))),
        E.EqualTo("v", 3),
    ],
    ids=repr,
)
def test_filters_that_do_not_pin_the_key_keep_every_bucket(tmp_path: Path, pred: Any) -> None:
    table = _point_table(tmp_path, T.BIGINT, list(range(400)))
    assert ScanPlanner(table).plan(pred).report.skipped_by_bucket == 0


def test_double_keys_are_written_by_bucket_but_never_pruned(tmp_path: Path) -> None:
    table = _point_table(tmp_path, T.DOUBLE, [float(i) / 4 for i in range(200)])
    assert len(table.scan_files()) == 8
    assert ScanPlanner(table).plan(E.EqualTo("k", 1.25)).report.skipped_by_bucket == 0


def test_char_keys_are_never_pruned(tmp_path: Path) -> None:
    char5 = T.parse_sql_type("CHAR(5)")
    table = _point_table(tmp_path, char5, [f"k{i}" for i in range(100)])
    assert len(table.scan_files()) == 8
    assert ScanPlanner(table).plan(E.EqualTo("k", "k7")).report.skipped_by_bucket == 0


def test_entries_of_another_bucket_count_are_kept(tmp_path: Path) -> None:
    import dataclasses

    table = _point_table(tmp_path, T.BIGINT, list(range(100)))
    entries = table.scan_files()
    # as if written before a rescale: same files, another total_buckets
    moved = [dataclasses.replace(e, total_buckets=4) for e in entries]
    table.commit(moved, deleted=entries, kind=_compact())
    plan = ScanPlanner(table).plan(E.EqualTo("k", 7))
    assert plan.kept is not None
    assert plan.report.skipped_by_bucket == 0
    assert bucket_of((7,), (T.BIGINT,), 8) in {e.bucket for e in plan.files}


def _compact() -> Any:
    from lakeskip.catalog.format.snapshot import CommitKind

    return CommitKind.COMPACT
