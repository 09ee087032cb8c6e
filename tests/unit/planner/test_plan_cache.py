"""The planner's plan cache: a repeated query on an unchanged snapshot reuses its plan, and
anything that can change the answer -- a new commit (also by another writer), another
predicate (also one that is equal in Python but not in SQL), the time zone, ``use_indexes``,
an ALTER -- plans afresh. Each case is checked against a planner with a cache of its own."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.cache import MetadataCache
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import DataWriter
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.planner.report import FileDecision, SkipTier, same_decisions
from lakeskip.planner.scan import ScanPlanner

SCHEMA = T.RowType.of(("id", T.BIGINT), ("d", T.DOUBLE), ("s", T.STRING))


def _append(table: FileStoreTable, ids: list[int]) -> None:
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    data = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "d": pa.array([float(i) for i in ids], pa.float64()),
            "s": pa.array([f"s{i}" for i in ids], pa.string()),
        }
    )
    table.commit(DataWriter(spec).write_batches(iter([data])))


@pytest.fixture
def table(tmp_path: Path) -> FileStoreTable:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, options={"file-index.bloom-filter.columns": "s"})
    for lo in (0, 10, 20):
        _append(t, list(range(lo, lo + 10)))
    return cat.get_table("db.t")


def _kept(plan: object) -> list[str]:
    return sorted(e.file.file_name for e in plan.files)  # type: ignore[attr-defined]


def _fresh(table: FileStoreTable, pred: E.BooleanExpression, **kw: object) -> list[str]:
    return _kept(ScanPlanner(table, cache=MetadataCache()).plan(pred, **kw))  # type: ignore[arg-type]


def test_repeated_query_reuses_the_plan(table: FileStoreTable) -> None:
    cache = MetadataCache()
    pred = E.EqualTo("s", "s15")
    first = ScanPlanner(table, cache=cache).plan(pred)
    second = ScanPlanner(table, cache=cache).plan(pred)
    assert second.decisions is first.decisions, "same snapshot, same predicate: cached"
    assert second.report.kept_files == first.report.kept_files == 1
    assert _kept(second) == _fresh(table, pred)


def test_new_commit_plans_afresh(table: FileStoreTable, tmp_path: Path) -> None:
    cache = MetadataCache()
    pred = E.GreaterThanOrEqual("id", 25)
    assert len(ScanPlanner(table, cache=cache).plan(pred).files) == 1
    # another writer: its own catalog object, files and commit
    _append(Catalog(str(tmp_path / "wh")).get_table("db.t"), [40, 41])
    again = ScanPlanner(table, cache=cache).plan(pred)
    assert len(again.files) == 2, "the next plan reads the new snapshot"
    assert _kept(again) == _fresh(table, pred)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (E.EqualTo("s", "s15"), E.EqualTo("s", "s25")),
        (E.GreaterThan("d", 0.0), E.GreaterThan("d", -0.0)),  # equal floats, other literals
        (E.EqualTo("id", 15), E.EqualTo("id", 15.5)),
    ],
)
def test_other_predicates_do_not_share_a_plan(
    table: FileStoreTable, a: E.BooleanExpression, b: E.BooleanExpression
) -> None:
    cache = MetadataCache()
    ScanPlanner(table, cache=cache).plan(a)
    got = ScanPlanner(table, cache=cache).plan(b)
    assert got.report.predicate == repr(b)
    assert _kept(got) == _fresh(table, b)


def test_use_indexes_and_alter_are_part_of_the_key(tmp_path: Path, table: FileStoreTable) -> None:
    cache = MetadataCache()
    pred = E.EqualTo("s", "s15")
    assert len(ScanPlanner(table, cache=cache).plan(pred).files) == 1
    no_index = ScanPlanner(table, cache=cache).plan(pred, use_indexes=False)
    # min/max of s: ["s0", "s9"] holds "s15" as a string, ["s20", "s29"] does not
    assert len(no_index.files) == 2, "min/max alone keeps a file the bloom filter skips"
    cat = Catalog(str(tmp_path / "wh"))
    cat.alter_table("db.t", set_options={"file-index.read.enabled": "false"})
    altered = cat.get_table("db.t")
    assert len(ScanPlanner(altered, cache=cache).plan(pred).files) == 2, "index reads off"


def test_decisions_alike_equal_those_made_one_by_one(table: FileStoreTable) -> None:
    """A plan that decides every file alike (nothing to skip, or a predicate always false)
    builds its decisions field-wise (same_decisions): equal to the constructor's, file for
    file, and so the same kept files and report."""
    on_disk = sorted(e.file.file_name for e in table.scan_files(table.latest_snapshot()))
    assert len(on_disk) == 3
    for pred, keep in ((None, True), (E.AlwaysTrue(), True), (E.AlwaysFalse(), False)):
        plan = ScanPlanner(table, cache=MetadataCache()).plan(pred)
        entries = [d.entry for d in plan.decisions]
        assert sorted(e.file.file_name for e in entries) == on_disk
        tier = None if keep else SkipTier.PREDICATE
        assert list(plan.decisions) == [FileDecision(e, keep=keep, tier=tier) for e in entries]
        assert [d.reason for d in plan.decisions] == ["kept" if keep else "predicate"] * 3
        assert _kept(plan) == (on_disk if keep else [])
    made = same_decisions([], False, SkipTier.STATS)
    assert made == []


def test_reports_tell_cpu_from_waiting(table: FileStoreTable) -> None:
    """A plan's report carries its call's wall and CPU milliseconds: time spent waiting
    (here for storage: each index read sleeps 30 ms) counts in the wall time only; a plan
    from the cache reports what the cached call took, not the first planning."""
    from unittest import mock

    from lakeskip.catalog.file_io import FileIO

    original = FileIO.read_range

    def slow(self: FileIO, path: str, offset: int, length: int) -> bytes:
        time.sleep(0.03)
        return original(self, path, offset, length)

    cache = MetadataCache()
    with mock.patch.object(FileIO, "read_range", slow):
        first = ScanPlanner(table, cache=cache).plan(E.EqualTo("s", "s15")).report
    assert first.index_files_read == 2  # the stats skip the third file
    assert first.planning_ms >= 60
    assert 0 < first.planning_cpu_ms < first.planning_ms - 45
    again = ScanPlanner(table, cache=cache).plan(E.EqualTo("s", "s15")).report
    assert 0 < again.planning_cpu_ms <= again.planning_ms + 1 < 30
