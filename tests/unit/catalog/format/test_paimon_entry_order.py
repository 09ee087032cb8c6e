"""Manifest entry order and file identity as Apache Paimon's Java reads them.

Paimon merges manifest entries with ``FileEntry.mergeEntries``: an ADD of an identifier that
is already in the map fails (``Trying to add file ... which is already added``), a DELETE
removes it (or is kept when the ADD is not in the merged range). Paimon 0.9 identifies a file
by (partition, bucket, level, file name); Paimon >= 1.0 adds extra files, embedded index and
external path. Paimon's expiry (``FileDeletionBase.getDataFileToDelete``) walks a delta
manifest in order: a DELETE marks the data file for deletion, a later ADD of the same path
unmarks it. Both only work if a commit lists its DELETE entries before its ADD entries, as
``FileStoreCommitImpl`` writes them. These tests replay both rules on every commit kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from lakeskip.catalog import Catalog, CommitKind, FileKind, FileStoreTable, ManifestEntry, Snapshot
from lakeskip.catalog.format.manifest import read_manifest, read_manifest_list
from lakeskip.catalog.ops.maintenance import expire_snapshots
from lakeskip.types import BIGINT, STRING, RowType

ROW = RowType.of(("id", BIGINT), ("name", STRING), ("dt", STRING))
Identity = Callable[[ManifestEntry], tuple[object, ...]]


def _identity_0_9(e: ManifestEntry) -> tuple[object, ...]:
    return (e.partition, e.bucket, e.file.level, e.file.file_name)


def _identity_1_x(e: ManifestEntry) -> tuple[object, ...]:
    f = e.file
    return (e.partition, e.bucket, f.level, f.file_name, f.extra_files, f.embedded_index,
            f.external_path)  # fmt: skip


IDENTITIES = {"paimon-0.9": _identity_0_9, "paimon-1.x": _identity_1_x}


class AlreadyAddedError(AssertionError):
    pass


def _java_merge(entries: Iterable[ManifestEntry], identity: Identity) -> list[ManifestEntry]:
    """``FileEntry.mergeEntries`` (0.9 and current): strict about a second ADD."""
    merged: dict[tuple[object, ...], ManifestEntry] = {}
    for e in entries:
        key = identity(e)
        if e.kind is FileKind.ADD:
            if key in merged:
                raise AlreadyAddedError(f"Trying to add file {key} which is already added")
            merged[key] = e
        elif key in merged:
            del merged[key]
        else:
            merged[key] = e
    return list(merged.values())


def _manifest_entries(t: FileStoreTable, manifest_list: str) -> list[ManifestEntry]:
    out: list[ManifestEntry] = []
    for m in read_manifest_list(t.file_io, t.path, manifest_list):
        out += read_manifest(t.file_io, t.path, m.file_name, t.partition_types)
    return out


def _java_plan(t: FileStoreTable, snap: Snapshot, identity: Identity) -> set[str]:
    """The data files Paimon's scan plans for a snapshot (base + delta, merged)."""
    entries = [
        *_manifest_entries(t, snap.base_manifest_list),
        *_manifest_entries(t, snap.delta_manifest_list),
    ]
    merged = _java_merge(entries, identity)
    assert all(e.kind is FileKind.ADD for e in merged), "a DELETE without its ADD in the plan"
    return {e.file.file_name for e in merged}


def _java_expire_deletes(t: FileStoreTable, snap: Snapshot) -> set[str]:
    """Data files Paimon's expiry deletes for a snapshot's delta (``getDataFileToDelete``)."""
    marked: dict[tuple[object, ...], str] = {}
    for e in _manifest_entries(t, snap.delta_manifest_list):
        path = (e.partition, e.bucket, e.file.file_name)
        if e.kind is FileKind.ADD:
            marked.pop(path, None)
        else:
            marked[path] = e.file.file_name
    return set(marked.values())


def _check_history(t: FileStoreTable) -> None:
    """Every snapshot: DELETE before ADD, Paimon's plan == lakeskip's, expiry keeps live files."""
    for snap in t.list_snapshots():
        delta = _manifest_entries(t, snap.delta_manifest_list)
        kinds = [e.kind for e in delta]
        assert kinds == sorted(kinds, key=lambda k: k is FileKind.ADD), (
            f"snapshot {snap.id} ({snap.commit_kind.name}): DELETE entries must precede ADD "
            f"entries, got {[k.name for k in kinds]}"
        )
        ours = {e.file.file_name for e in t.scan_files(snap)}
        for name, identity in IDENTITIES.items():
            assert _java_plan(t, snap, identity) == ours, (
                f"snapshot {snap.id}: {name} plans other files than lakeskip"
            )
        dropped = _java_expire_deletes(t, snap)
        assert not dropped & ours, (
            f"snapshot {snap.id}: Paimon's expiry would delete live data files {dropped & ours}"
        )


def _table(catalog: Catalog, options: dict[str, str] | None = None) -> FileStoreTable:
    catalog.create_database("db", ignore_if_exists=True)
    return catalog.create_table("db.t", ROW, partition_keys=["dt"], options=options or {})


def _rows(ids: range, dt: str) -> dict[str, list[Any]]:
    return {"id": list(ids), "name": [f"n{i}" for i in ids], "dt": [dt] * len(ids)}


def _reindexed(e: ManifestEntry, extra: tuple[str, ...], embedded: bytes | None) -> ManifestEntry:
    """The same data file with a rebuilt index (what rewrite_file_index commits)."""
    file = dataclasses.replace(e.file, extra_files=extra, embedded_index=embedded)
    return dataclasses.replace(e, file=file)


def test_rewritten_index_keeps_the_file_for_paimon(catalog: Catalog, write_file: Any) -> None:
    """The issue 17 repro: ADD-before-DELETE of the same file name broke Paimon 0.9's scan."""
    t = _table(catalog)
    a = write_file(t, _rows(range(3), "a"), ("a",))
    b = write_file(t, _rows(range(3, 6), "b"), ("b",))
    t.commit([a, b])
    # embedded -> file, and none -> embedded: both rewrites keep the data file name
    a2 = _reindexed(a, (f"{a.file.file_name}.index",), None)
    b2 = _reindexed(b, (), b"\x00\x05")
    snap = t.commit([a2, b2], deleted=[a, b], kind=CommitKind.COMPACT)
    assert snap is not None
    assert {e.file.file_name for e in t.scan_files()} == {a.file.file_name, b.file.file_name}
    _check_history(t)
    # and a second rewrite on top (x.index -> x-1.index)
    a3 = _reindexed(a2, (f"{a.file.file_name}-1.index",), None)
    t.commit([a3], deleted=[a2], kind=CommitKind.COMPACT)
    assert [e.file.extra_files for e in t.scan_files() if e.file.file_name == a.file.file_name] == [
        (f"{a.file.file_name}-1.index",)
    ]
    _check_history(t)


def test_every_commit_kind_reads_the_same_in_paimon(
    catalog: Catalog, write_file: Any, read_rows: Any
) -> None:
    t = _table(catalog, {"manifest.merge-min-count": "3"})
    a = write_file(t, _rows(range(3), "a"), ("a",))
    b = write_file(t, _rows(range(3, 6), "b"), ("b",))
    t.commit([a])  # append
    t.commit([b])  # append
    a_new = write_file(t, _rows(range(10, 12), "a"), ("a",))
    t.commit([a_new], kind=CommitKind.OVERWRITE, overwrite_partitions=[("a",)])
    # bin-pack / sort compaction: several files in, fewer (new names) out
    c = write_file(t, _rows(range(20, 22), "b"), ("b",))
    t.commit([c])
    live_b = [e for e in t.scan_files() if e.partition == ("b",)]
    packed = write_file(t, _rows(range(100, 105), "b"), ("b",))
    t.commit([packed], deleted=live_b, kind=CommitKind.COMPACT)
    # rewrite_file_index of every live file
    live = t.scan_files()
    t.commit(
        [_reindexed(e, (f"{e.file.file_name}.index",), None) for e in live],
        deleted=live,
        kind=CommitKind.COMPACT,
    )
    # whole-table overwrite that keeps nothing, then an append after it
    d = write_file(t, _rows(range(50, 53), "a"), ("a",))
    t.commit([d], kind=CommitKind.OVERWRITE)
    _check_history(t)
    assert len(t.list_snapshots()) == 7
    assert sorted(r["id"] for r in read_rows(t)) == [50, 51, 52]


def test_expiry_then_paimon_still_plans_every_kept_snapshot(
    catalog: Catalog, write_file: Any
) -> None:
    t = _table(catalog)
    a = write_file(t, _rows(range(3), "a"), ("a",))
    t.commit([a])
    a2 = _reindexed(a, (f"{a.file.file_name}.index",), None)
    t.commit([a2], deleted=[a], kind=CommitKind.COMPACT)
    b = write_file(t, _rows(range(3, 6), "b"), ("b",))
    t.commit([b])
    result = expire_snapshots(t, retain_last=1)
    assert result.snapshots_deleted == 2
    assert t.file_io.exists(t.data_file_path(t.scan_files()[0])), "live data file kept"
    _check_history(t)


@pytest.mark.parametrize("identity", list(IDENTITIES))
def test_add_before_delete_is_what_paimon_rejects(
    identity: str, catalog: Catalog, write_file: Any
) -> None:
    """The replay itself must fail on the old order, or the tests above prove nothing."""
    old = write_file(_table(catalog), _rows(range(3), "a"), ("a",))
    new = _reindexed(old, (f"{old.file.file_name}.index",), None)
    gone = dataclasses.replace(old, kind=FileKind.DELETE)
    merged = _java_merge([old, gone, new], IDENTITIES[identity])
    assert [e.file.extra_files for e in merged] == [new.file.extra_files]
    if identity == "paimon-0.9":
        with pytest.raises(AlreadyAddedError):
            _java_merge([old, new, gone], IDENTITIES[identity])
