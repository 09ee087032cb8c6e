"""Snapshots, manifests and the commit protocol of FileStoreTable."""

from __future__ import annotations

import dataclasses
import json
import pickle
from typing import Any

import pytest

from lakeskip.catalog import (
    Catalog,
    CommitKind,
    FileKind,
    FileStoreTable,
    Snapshot,
    TableSchema,
)
from lakeskip.catalog.format.manifest import read_manifest, read_manifest_list, write_manifest
from lakeskip.catalog.partitions import partition_path
from lakeskip.catalog.table import retry_on_conflict
from lakeskip.errors import CommitConflictError
from lakeskip.types import BIGINT, DATE, INT, STRING, RowType, decimal_type

ROW = RowType.of(("id", BIGINT), ("name", STRING), ("dt", STRING))


def _table(catalog: Catalog, options: dict[str, str] | None = None) -> FileStoreTable:
    catalog.create_database("db", ignore_if_exists=True)
    return catalog.create_table(
        "db.t",
        ROW,
        partition_keys=["dt"],
        options=options or {},
    )


def _rows(ids: range, dt: str) -> dict[str, list[Any]]:
    return {"id": list(ids), "name": [f"n{i}" for i in ids], "dt": [dt] * len(ids)}


def test_layout_after_first_commit(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog)
    e = write_file(t, _rows(range(5), "2024-01-01"), ("2024-01-01",))
    snap = t.commit([e])
    assert snap is not None and snap.id == 1 and snap.commit_kind is CommitKind.APPEND
    assert snap.total_record_count == 5 and snap.delta_record_count == 5
    io = t.file_io
    for rel in (
        "schema/schema-0",
        "snapshot/snapshot-1",
        "snapshot/LATEST",
        "snapshot/EARLIEST",
        f"manifest/{snap.base_manifest_list}",
        f"manifest/{snap.delta_manifest_list}",
        f"dt=2024-01-01/bucket-0/{e.file.file_name}",
    ):
        assert io.exists(f"{t.path}/{rel}"), f"{rel} should exist after the first commit"
    assert io.read_bytes(f"{t.path}/snapshot/LATEST") == b"1"
    raw = json.loads(io.read_bytes(f"{t.path}/snapshot/snapshot-1"))
    assert raw["version"] == 3 and raw["commitKind"] == "APPEND" and raw["schemaId"] == 0
    schema = json.loads(io.read_bytes(f"{t.path}/schema/schema-0"))
    assert schema["fields"][1] == {"id": 1, "name": "name", "type": "STRING"}
    assert schema["partitionKeys"] == ["dt"] and schema["primaryKeys"] == []


def test_reading_is_base_plus_delta(catalog: Catalog, write_file: Any, read_rows: Any) -> None:
    t = _table(catalog)
    e1 = write_file(t, _rows(range(0, 3), "a"), ("a",))
    e2 = write_file(t, _rows(range(3, 7), "b"), ("b",))
    s1 = t.commit([e1])
    s2 = t.commit([e2])
    assert s1 is not None and s2 is not None
    base = read_manifest_list(t.file_io, t.path, s2.base_manifest_list)
    delta = read_manifest_list(t.file_io, t.path, s2.delta_manifest_list)
    assert [m.num_added_files for m in delta] == [1], "delta holds only snapshot 2's file"
    assert sum(m.num_added_files for m in base) == 1, "base holds snapshot 1's state"
    assert {e.file.file_name for e in t.scan_files(s1)} == {e1.file.file_name}
    assert {e.file.file_name for e in t.scan_files(s2)} == {e1.file.file_name, e2.file.file_name}
    assert s2.total_record_count == 7 and s2.delta_record_count == 4
    assert [r["id"] for r in read_rows(t)] == sorted(range(7), key=lambda i: repr({"id": i}))


def test_compact_replaces_files_and_detects_conflicts(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog)
    e1 = write_file(t, _rows(range(3), "a"), ("a",))
    e2 = write_file(t, _rows(range(3, 6), "a"), ("a",))
    t.commit([e1])
    t.commit([e2])
    merged = write_file(t, _rows(range(6), "a"), ("a",))
    snap = t.commit([merged], deleted=[e1, e2], kind=CommitKind.COMPACT)
    assert snap is not None and snap.commit_kind is CommitKind.COMPACT
    assert snap.delta_record_count == 0 and snap.total_record_count == 6
    assert [e.file.file_name for e in t.scan_files()] == [merged.file.file_name]
    delta = read_manifest(
        t.file_io,
        t.path,
        read_manifest_list(t.file_io, t.path, snap.delta_manifest_list)[0].file_name,
        t.partition_types,
    )
    assert sorted(e.kind for e in delta) == [FileKind.ADD, FileKind.DELETE, FileKind.DELETE]
    # a second compaction of the same (no longer live) files must fail, leaving the table as is
    again = write_file(t, _rows(range(6), "a"), ("a",))
    with pytest.raises(CommitConflictError, match="no longer live"):
        t.commit([again], deleted=[e1], kind=CommitKind.COMPACT)
    assert t.latest_snapshot() == snap, "a conflicting compaction publishes nothing"


def test_overwrite_partitions_and_whole_table(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog)
    a, b = (
        write_file(t, _rows(range(3), "a"), ("a",)),
        write_file(t, _rows(range(3, 8), "b"), ("b",)),
    )
    t.commit([a, b])
    a2 = write_file(t, _rows(range(100, 102), "a"), ("a",))
    snap = t.commit([a2], kind=CommitKind.OVERWRITE, overwrite_partitions=[("a",)])
    assert snap is not None and snap.commit_kind is CommitKind.OVERWRITE
    live = {e.file.file_name for e in t.scan_files()}
    assert live == {a2.file.file_name, b.file.file_name}, "only partition a was replaced"
    assert snap.total_record_count == 7 and snap.delta_record_count == -1
    snap = t.commit([], kind=CommitKind.OVERWRITE)
    assert snap is not None and t.scan_files() == [] and snap.total_record_count == 0
    assert t.commit([], kind=CommitKind.OVERWRITE) is None, "overwriting nothing with nothing"


def test_noop_commit_returns_none(catalog: Catalog) -> None:
    t = _table(catalog)
    assert t.commit([]) is None and t.latest_snapshot() is None


def test_crash_before_publish_is_invisible(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog)
    s1 = t.commit([write_file(t, _rows(range(3), "a"), ("a",))])
    # a crashed committer: data file and manifests written, snapshot never published
    orphan = write_file(t, _rows(range(50, 60), "a"), ("a",))
    write_manifest(t.file_io, t.path, [orphan], t.partition_types, 0)
    fresh = catalog.get_table("db.t")
    assert fresh.latest_snapshot() == s1
    assert orphan.file.file_name not in {e.file.file_name for e in fresh.scan_files()}
    assert sum(e.file.row_count for e in fresh.scan_files()) == 3


def test_stale_or_garbage_latest_hint_is_tolerated(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog)
    for i in range(3):
        t.commit([write_file(t, _rows(range(i, i + 1), "a"), ("a",))])
    latest = f"{t.path}/snapshot/LATEST"
    t.file_io.write_bytes(latest, b"1")  # a committer crashed before updating the hint
    assert t.latest_snapshot() is not None and t.latest_snapshot().id == 3  # type: ignore[union-attr]
    t.file_io.write_bytes(latest, b"garbage")
    assert t.snapshot_manager.latest_id() == 3
    t.file_io.delete(latest)
    assert t.snapshot_manager.latest_id() == 3
    snap = t.commit([write_file(t, _rows(range(9, 10), "a"), ("a",))])
    assert snap is not None and snap.id == 4 and snap.total_record_count == 4


def test_manifests_merge_past_threshold(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog, {"manifest.merge-min-count": "3"})
    names = set()
    for i in range(6):
        e = write_file(t, _rows(range(i, i + 1), "a"), ("a",))
        names.add(e.file.file_name)
        snap = t.commit([e])
    assert snap is not None
    base = read_manifest_list(t.file_io, t.path, snap.base_manifest_list)
    assert len(base) < 3, f"base manifests should have been merged, got {len(base)}"
    assert {e.file.file_name for e in t.scan_files()} == names
    assert snap.total_record_count == 6


def test_entries_and_metadata_are_picklable(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog)
    e = write_file(t, _rows(range(3), "a"), ("a",))
    assert pickle.loads(pickle.dumps(e)) == e
    io2 = pickle.loads(pickle.dumps(t.file_io))
    assert io2.exists(f"{t.path}/schema/schema-0")


def test_manifest_round_trip_keeps_every_field(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog)
    e = write_file(t, _rows(range(3), "a"), ("a",))
    meta = dataclasses.replace(
        e.file,
        extra_files=("x.parquet.index",),
        file_source=1,
        delete_row_count=0,
        value_stats_cols=("id", "name"),
        first_row_id=5,
        write_cols=("id",),
        write_cols_sequences=(1, 2),
    )
    e2 = dataclasses.replace(e, file=meta)
    e3 = dataclasses.replace(e, kind=FileKind.DELETE)
    m = write_manifest(t.file_io, t.path, [e2, e3], t.partition_types, 0)
    back = read_manifest(t.file_io, t.path, m.file_name, t.partition_types)
    assert back == [e2, e3], "manifest round trip must preserve every DataFileMeta field"
    assert (m.num_added_files, m.num_deleted_files) == (1, 1)


def test_snapshot_and_schema_json_round_trip() -> None:
    s = Snapshot(7, 1, "b", "d", CommitKind.OVERWRITE, 10, -2, "u", 3, 99, uuid="x")
    assert Snapshot.from_json(s.to_json()) == s
    rt = RowType.of(("a", INT), ("d", decimal_type(20, 3)), ("day", DATE))
    sch = TableSchema.create(2, rt, ["day"], {"k": "v"}, "c")
    assert TableSchema.from_json(sch.to_json()) == sch


def test_partition_paths_follow_paimon() -> None:
    rt = RowType.of(("v", INT), ("s", STRING), ("d", DATE), ("n", INT))
    sch = TableSchema.create(0, rt, ["s", "d", "n"], {}, None)
    assert partition_path(sch, ("a/b", 19723, None)) == (
        "s=a%2Fb/d=19723/n=__DEFAULT_PARTITION__/bucket-0"
    ), "legacy names: DATE as epoch days, '/' escaped, null as default name"
    sch2 = TableSchema.create(0, rt, ["s", "d", "n"], {"partition.legacy-name": "false"}, None)
    assert (
        partition_path(sch2, ("", 19723, 1)) == "s=__DEFAULT_PARTITION__/d=2024-01-01/n=1/bucket-0"
    )


def test_schema_evolution_old_files_stay_readable(
    catalog: Catalog, write_file: Any, read_rows: Any
) -> None:
    t = _table(catalog)
    t.commit([write_file(t, _rows(range(3), "a"), ("a",))])
    new_schema = catalog.alter_table("db.t", set_options={"metadata.stats-mode": "full"})
    assert new_schema.id == 1
    t = catalog.get_table("db.t")
    assert t.schema.id == 1 and t.schema.options["metadata.stats-mode"] == "full"
    t.commit([write_file(t, _rows(range(3, 5), "b"), ("b",))])
    ids = sorted(e.file.schema_id for e in t.scan_files())
    assert ids == [0, 1], "old files keep their schema id"
    assert t.latest_snapshot().schema_id == 1  # type: ignore[union-attr]
    assert t.schema_by_id(0).options == {}
    assert len(read_rows(t)) == 5


def test_lost_race_rebases_and_retries(
    catalog: Catalog, write_file: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(catalog)
    other = catalog.get_table("db.t")
    t.commit([write_file(t, _rows(range(2), "a"), ("a",))])
    mine = write_file(t, _rows(range(10, 13), "a"), ("a",))
    theirs = write_file(other, _rows(range(20, 24), "b"), ("b",))
    real = t.snapshot_manager.try_publish
    calls: list[int] = []

    def racing_publish(snapshot: Snapshot) -> bool:
        calls.append(snapshot.id)
        if len(calls) == 1:  # another writer publishes the same id first
            assert other.commit([theirs]) is not None
        return real(snapshot)

    monkeypatch.setattr(t.snapshot_manager, "try_publish", racing_publish)
    manifests_before = len(t.file_io.list_dir(f"{t.path}/manifest"))
    snap = t.commit([mine])
    assert calls == [2, 3], "lost snapshot 2, rebased and published 3"
    assert snap is not None and snap.id == 3 and snap.total_record_count == 2 + 4 + 3
    assert {e.file.file_name for e in t.scan_files()} >= {
        mine.file.file_name,
        theirs.file.file_name,
    }
    # the loser deleted its two manifest lists; kept its delta manifest (reused)
    after = len(t.file_io.list_dir(f"{t.path}/manifest"))
    assert after == manifests_before + 3 + 3, "theirs: manifest + 2 lists; mine: same, no orphans"


def test_a_publish_whose_answer_was_lost_is_not_published_twice(
    catalog: Catalog, write_file: Any, read_rows: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an object store client retried the create-only PUT of snapshot-2 after a timeout: the
    # first attempt had created it, the retry hears "exists"
    t = _table(catalog)
    t.commit([write_file(t, _rows(range(2), "a"), ("a",))])
    real = type(t.file_io).try_create

    def lost_answer(io: Any, path: str, data: bytes) -> bool:
        assert real(io, path, data)
        return "/snapshot/snapshot-" not in path

    monkeypatch.setattr(type(t.file_io), "try_create", lost_answer)
    snap = t.commit([write_file(t, _rows(range(10, 13), "a"), ("a",))])
    monkeypatch.undo()
    assert snap is not None and snap.id == 2
    again = catalog.get_table("db.t")
    assert [s.id for s in again.list_snapshots()] == [1, 2], "published once, not again as 3"
    assert sorted(r["id"] for r in read_rows(again)) == [0, 1, 10, 11, 12], "its lists kept"

    # another writer's snapshot at that id (other bytes) is still a lost race
    t.commit([write_file(t, _rows(range(20, 21), "b"), ("b",))])
    taken = t.snapshot_manager.read(3)
    assert not t.snapshot_manager.try_publish(dataclasses.replace(taken, time_millis=1))


def test_retries_exhausted_raise_and_publish_nothing(
    catalog: Catalog, write_file: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(catalog, {"commit.max-retries": "2", "commit.min-retry-wait": "1 ms"})
    s1 = t.commit([write_file(t, _rows(range(2), "a"), ("a",))])
    monkeypatch.setattr(t.snapshot_manager, "try_publish", lambda s: False)
    with pytest.raises(CommitConflictError, match="after 3 attempts"):
        t.commit([write_file(t, _rows(range(5, 6), "a"), ("a",))])
    assert catalog.get_table("db.t").latest_snapshot() == s1


def test_python_partition_values_are_normalised(catalog: Catalog, write_file: Any) -> None:
    import datetime

    catalog.create_database("db")
    rt = RowType.of(("id", BIGINT), ("day", DATE))
    t = catalog.create_table("db.d", rt, partition_keys=["day"])
    day = datetime.date(2024, 1, 1)
    e = write_file(t, {"id": [1], "day": [day]}, (day,))
    assert t.partition_path((day,)) == t.partition_path((19723,)) == "day=19723/bucket-0"
    t.commit([e])
    (live,) = t.scan_files()
    assert live.partition == (19723,), "partitions are stored in internal form"
    assert t.file_io.exists(t.data_file_path(live))
    t.commit([], kind=CommitKind.OVERWRITE, overwrite_partitions=[(day,)])
    assert t.scan_files() == []


def test_retry_on_conflict_is_bounded_by_commit_max_retries(catalog: Catalog) -> None:
    t = _table(catalog, {"commit.max-retries": "2", "commit.min-retry-wait": "1 ms"})
    calls = []

    def conflicts_twice() -> str:
        calls.append(1)
        if len(calls) <= 2:
            raise CommitConflictError("another commit changed them")
        return "done"

    assert retry_on_conflict(t, conflicts_twice) == "done" and len(calls) == 3
    calls.clear()

    def always() -> str:
        calls.append(1)
        raise CommitConflictError("another commit changed them")

    with pytest.raises(CommitConflictError, match="another commit"):
        retry_on_conflict(t, always)
    assert len(calls) == 3, "one run and commit.max-retries = 2 more"
