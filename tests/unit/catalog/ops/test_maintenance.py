"""Snapshot expiry and orphan-file removal (``lakeskip.catalog.ops.maintenance``).

The oracles are independent of the code under test:

* every snapshot that still exists reads exactly the rows it read before (each of its
  data and ``.index`` files exists, row counts match ``totalRecordCount``);
* after expiry, the files in the bucket directories and ``manifest/`` are *exactly* those
  the remaining snapshots reference, computed by reading each one in full with
  ``scan_files``/``manifest_metas`` (nothing leaked, nothing needed deleted).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip.catalog import (
    Catalog,
    CommitKind,
    FileIO,
    FileKind,
    FileStoreTable,
    ManifestEntry,
    Snapshot,
    collect_stats,
    make_data_file_meta,
)
from lakeskip.catalog.format.manifest import write_manifest, write_manifest_list
from lakeskip.catalog.ops.maintenance import SPILL_DIR_PREFIX, expire_snapshots, remove_orphan_files
from lakeskip.errors import CorruptMetadataError, InvalidArgumentError
from lakeskip.types import BIGINT, STRING, RowType

ROW = RowType.of(("id", BIGINT), ("dt", STRING))
DAY_MS = 86_400_000


# -- helpers -------------------------------------------------------------------------------


def _new_table(root: str, **options: str) -> FileStoreTable:
    catalog = Catalog(root)
    catalog.create_database("db", ignore_if_exists=True)
    return catalog.create_table("db.t", ROW, partition_keys=["dt"], options=options)


def _write(
    table: FileStoreTable, ids: range | list[int], dt: str | None, index: bool = False
) -> ManifestEntry:
    """Write one Parquet data file (and a ``.index`` extra file) into the table's layout;
    return its ADD entry. Nothing is committed."""
    arrow = pa.table({"id": list(ids), "dt": [dt] * len(ids)}).cast(ROW.to_arrow())
    name = table.new_data_file_name()
    directory = f"{table.path}/{table.partition_path((dt,))}"
    with table.file_io.open_output(f"{directory}/{name}") as out:
        pq.write_table(arrow, out)
    extra: tuple[str, ...] = ()
    if index:
        extra = (f"{name}.index",)
        table.file_io.write_bytes(f"{directory}/{extra[0]}", b"index bytes of " + name.encode())
    stats, cols = collect_stats(arrow, ROW, "full")
    size = table.file_io.file_size(f"{directory}/{name}")
    meta = make_data_file_meta(name, size, len(ids), stats, cols, table.schema.id, None, extra)
    return ManifestEntry(FileKind.ADD, (dt,), 0, -1, meta)


def _reindex(table: FileStoreTable, entry: ManifestEntry) -> ManifestEntry:
    """The same data file with a new ``.index`` file (as ``sys.rewrite_file_index`` does)."""
    name = entry.file.file_name
    new = f"{name}-{uuid.uuid4().hex[:8]}.index"
    table.file_io.write_bytes(f"{table.data_file_dir(entry)}/{new}", b"new index")
    return dataclasses.replace(entry, file=dataclasses.replace(entry.file, extra_files=(new,)))


def _snapshot_rows(table: FileStoreTable, snap: Snapshot) -> list[int]:
    """Every id the snapshot reads; asserts each of its files exists."""
    ids: list[int] = []
    for e in table.scan_files(snap):
        path = table.data_file_path(e)
        assert os.path.exists(path), f"snapshot {snap.id} lost data file {e.file.file_name}"
        for x in e.file.extra_files:
            extra = f"{table.data_file_dir(e)}/{x}"
            assert os.path.exists(extra), f"snapshot {snap.id} lost extra file {x}"
        ids += pq.read_table(path).column("id").to_pylist()
    assert len(ids) == snap.total_record_count, (
        f"snapshot {snap.id}: {len(ids)} rows read, totalRecordCount {snap.total_record_count}"
    )
    return sorted(ids)


def _all_rows(table: FileStoreTable) -> dict[int, list[int]]:
    return {s.id: _snapshot_rows(table, s) for s in table.list_snapshots()}


def _referenced(table: FileStoreTable) -> set[str]:
    """Names of every manifest, data and extra file the existing snapshots read."""
    names: set[str] = set()
    for s in table.list_snapshots():
        names |= {s.base_manifest_list, s.delta_manifest_list}
        names |= {m.file_name for m in table.manifest_metas(s)}
        for e in table.scan_files(s):
            names.add(e.file.file_name)
            names.update(e.file.extra_files)
    return names


def _table_files(table: FileStoreTable) -> Iterator[str]:
    for f in table.file_io.walk_files(table.path):
        rel = f.path[len(table.path) + 1 :]
        if not rel.startswith(("schema/", "snapshot/")):
            yield rel


def _assert_exactly_referenced(table: FileStoreTable) -> None:
    on_disk = {rel.rsplit("/", 1)[-1] for rel in _table_files(table)}
    wanted = _referenced(table)
    assert not wanted - on_disk, f"referenced files missing: {sorted(wanted - on_disk)}"
    assert not on_disk - wanted, f"unreferenced files left: {sorted(on_disk - wanted)}"


def _age_all(table: FileStoreTable, seconds: float) -> None:
    old = time.time() - seconds
    for f in table.file_io.walk_files(table.path):
        os.utime(f.path, (old, old))


def _age(path: str, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def _now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture
def table(tmp_path: Path) -> FileStoreTable:
    return _new_table(str(tmp_path / "wh"))


def _history(table: FileStoreTable) -> dict[str, ManifestEntry]:
    """s1 APPEND a(x, .index) b(y); s2 APPEND c(x, .index); s3 COMPACT a+c -> ac(x, .index);
    s4 OVERWRITE partition y with b2; s5 APPEND d(x)."""
    f = {
        "a": _write(table, range(0, 10), "x", index=True),
        "b": _write(table, range(10, 20), "y"),
    }
    table.commit([f["a"], f["b"]])
    f["c"] = _write(table, range(20, 25), "x", index=True)
    table.commit([f["c"]])
    f["ac"] = _write(table, [*range(0, 10), *range(20, 25)], "x", index=True)
    table.commit([f["ac"]], deleted=[f["a"], f["c"]], kind=CommitKind.COMPACT)
    f["b2"] = _write(table, range(100, 103), "y")
    table.commit([f["b2"]], kind=CommitKind.OVERWRITE, overwrite_partitions=[("y",)])
    f["d"] = _write(table, range(30, 32), "x")
    table.commit([f["d"]])
    return f


# -- expiry --------------------------------------------------------------------------------


def test_expire_deletes_only_what_expired_snapshots_used(table: FileStoreTable) -> None:
    f = _history(table)
    before = _all_rows(table)
    assert [len(before[i]) for i in range(1, 6)] == [20, 25, 25, 18, 20], "history as built"
    _assert_exactly_referenced(table)

    r = expire_snapshots(table, retain_last=2)
    assert r.snapshots_deleted == 3, "snapshots 1-3 expire"
    assert r.data_files_deleted == 3, "a and c (compacted away in 3), b (overwritten in 4)"
    assert r.index_files_deleted == 2, "a.index and c.index"
    # no merge (30 manifests needed): every manifest is in 4's base; only the lists go
    assert r.manifest_files_deleted == 6, "base and delta lists of snapshots 1-3"
    assert [s.id for s in table.list_snapshots()] == [4, 5]
    assert _all_rows(table) == {4: before[4], 5: before[5]}, "retained snapshots read the same"
    for gone in ("a", "b", "c"):
        assert not os.path.exists(table.data_file_path(f[gone])), f"{gone} only used by 1-3"
    _assert_exactly_referenced(table)
    assert table.snapshot_manager.earliest_id() == 4
    assert table.file_io.read_bytes(f"{table.snapshot_manager.dir}/EARLIEST") == b"4"

    again = expire_snapshots(table, retain_last=2)
    assert again == type(again)(0, 0, 0, 0), "nothing left to expire"
    r = expire_snapshots(table, retain_last=1)
    assert (r.snapshots_deleted, r.data_files_deleted) == (1, 0), "5 adds d, deletes nothing"
    assert _all_rows(table) == {5: before[5]}
    _assert_exactly_referenced(table)


def test_expire_with_merged_manifests_deletes_unused_manifests(tmp_path: Path) -> None:
    table = _new_table(str(tmp_path / "wh"), **{"manifest.merge-min-count": "2"})
    f = _history(table)
    before = _all_rows(table)
    r = expire_snapshots(table, retain_last=1)
    assert r.snapshots_deleted == 4
    assert r.manifest_files_deleted > 8, f"merged-away manifests go too: {r}"
    assert _all_rows(table) == {5: before[5]}
    assert os.path.exists(table.data_file_path(f["ac"])) and os.path.exists(
        f"{table.data_file_dir(f['ac'])}/{f['ac'].file.extra_files[0]}"
    ), "ac and its index are live"
    _assert_exactly_referenced(table)


def test_rewritten_index_keeps_data_file_and_drops_old_index(table: FileStoreTable) -> None:
    e = _write(table, range(5), "x", index=True)
    table.commit([e])
    new = _reindex(table, e)
    table.commit([new], deleted=[e], kind=CommitKind.COMPACT)
    r = expire_snapshots(table, retain_last=1)
    assert (r.data_files_deleted, r.index_files_deleted) == (0, 1), (
        f"the data file is still live, only its old index goes: {r}"
    )
    old_index = f"{table.data_file_dir(e)}/{e.file.extra_files[0]}"
    assert not os.path.exists(old_index), "old .index only used by snapshot 1"
    assert _all_rows(table) == {2: list(range(5))}
    _assert_exactly_referenced(table)


def test_older_than_keeps_the_snapshot_current_at_that_time(table: FileStoreTable) -> None:
    for i in range(5):
        table.commit([_write(table, range(i, i + 1), "x")])
        time.sleep(0.003)  # distinct commit times
    snaps = table.list_snapshots()
    times = [s.time_millis for s in snaps]
    assert times == sorted(set(times)), "commit times strictly increase"
    # at times[2] (snapshot 3's commit), snapshot 3 is current: 1 and 2 may go, 3 stays
    r = expire_snapshots(table, retain_last=1, older_than_millis=times[2])
    assert r.snapshots_deleted == 1, "snapshot 2 was current until times[2], so it stays"
    r = expire_snapshots(table, retain_last=1, older_than_millis=times[2] + 1)
    assert [s.id for s in table.list_snapshots()] == [3, 4, 5], "2 replaced before threshold"
    r = expire_snapshots(table, retain_last=2, older_than_millis=_now_ms() + DAY_MS)
    assert [s.id for s in table.list_snapshots()] == [4, 5], "retain_last wins over older_than"
    assert _all_rows(table)[5] == [0, 1, 2, 3, 4]
    _assert_exactly_referenced(table)


def test_retain_last_must_be_positive(table: FileStoreTable) -> None:
    table.commit([_write(table, range(3), "x")])
    with pytest.raises(InvalidArgumentError, match="retain_last must be at least 1, got 0"):
        expire_snapshots(table, retain_last=0)
    assert [s.id for s in table.list_snapshots()] == [1]


def test_empty_table_expires_nothing(table: FileStoreTable) -> None:
    assert expire_snapshots(table, 1).snapshots_deleted == 0
    assert remove_orphan_files(table, _now_ms()).files_deleted == 0


def test_unreadable_retained_snapshot_stops_expiry(table: FileStoreTable) -> None:
    _history(table)
    snap5 = table.snapshot(5)
    before = set(_table_files(table))
    table.file_io.delete(f"{table.path}/manifest/{snap5.delta_manifest_list}")
    with pytest.raises(CorruptMetadataError, match="snapshot-5 exists but cannot be read"):
        expire_snapshots(table, retain_last=2)
    after = set(_table_files(table))
    assert before - after == {f"manifest/{snap5.delta_manifest_list}"}, "nothing else deleted"
    assert [s.id for s in table.list_snapshots()] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("crash_at", range(1, 16))
def test_crash_during_expiry_keeps_retained_snapshots(
    table: FileStoreTable, crash_at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deletions: 3 snapshot files, then 5 data/index files and 6 manifest lists (14 in
    all). (tests/unit/catalog/test_crash.py kills a process at every step of every
    operation; this one stays to pin the order.)"""
    _history(table)
    before = _all_rows(table)
    real_delete = FileIO.delete
    calls = 0

    def failing_delete(self: FileIO, path: str) -> bool:
        nonlocal calls
        calls += 1
        if calls == crash_at:
            raise OSError(f"simulated crash at deletion {calls}")
        return real_delete(self, path)

    monkeypatch.setattr(FileIO, "delete", failing_delete)
    try:
        expire_snapshots(table, retain_last=2)
        crashed = False
    except OSError:
        crashed = True
    monkeypatch.setattr(FileIO, "delete", real_delete)
    assert crashed == (crash_at <= 14), f"{calls} deletions attempted"
    ids = [s.id for s in table.list_snapshots()]
    assert ids == list(range(min(crash_at, 4), 6)), "snapshot files go first, oldest first"
    for sid in ids:
        assert _snapshot_rows(table, table.snapshot(sid)) == before[sid], (
            f"snapshot {sid} must stay whole after a crash at deletion {crash_at}"
        )
    orphans = remove_orphan_files(table, _now_ms()).files_deleted
    assert (orphans > 0) == (2 <= crash_at <= 14), "what the crash left is unreferenced"
    _assert_exactly_referenced(table)
    expire_snapshots(table, retain_last=2)  # the re-run finishes the job
    assert remove_orphan_files(table, _now_ms()).files_deleted == 0, "nothing leaked"
    assert _all_rows(table) == {4: before[4], 5: before[5]}
    _assert_exactly_referenced(table)


def test_paimon_tag_protects_its_files(table: FileStoreTable) -> None:
    f = _history(table)
    before = _all_rows(table)
    # a Paimon tag is the tagged snapshot's JSON (plus tag fields) in tag/tag-<name>
    snap1 = table.snapshot(1).to_json()[:-2] + ',\n  "tagCreateTime": [2024, 1, 1, 0, 0]\n}'
    table.file_io.write_bytes(f"{table.path}/tag/tag-v1", snap1.encode())
    r = expire_snapshots(table, retain_last=1)
    assert r.snapshots_deleted == 4
    assert (r.data_files_deleted, r.index_files_deleted) == (1, 1), (
        f"a and b are held by tag v1; only c (added in 2, compacted in 3) goes: {r}"
    )
    assert not os.path.exists(table.data_file_path(f["c"]))
    tag = Snapshot.from_json(table.file_io.read_bytes(f"{table.path}/tag/tag-v1"))
    assert _snapshot_rows(table, tag) == before[1], "the tag still reads"
    _age_all(table, 7200)
    assert remove_orphan_files(table, _now_ms()).files_deleted == 0, "tag files referenced"
    assert _snapshot_rows(table, tag) == before[1]
    table.file_io.delete(f"{table.path}/tag/tag-v1")
    assert remove_orphan_files(table, _now_ms()).files_deleted == 5, (
        "without the tag: a, a.index, b and snapshot 1's two manifest lists are orphans"
    )
    assert not os.path.exists(table.data_file_path(f["a"]))
    _assert_exactly_referenced(table)


# -- orphans -------------------------------------------------------------------------------


def test_remove_orphan_files(table: FileStoreTable) -> None:
    _history(table)
    expire_snapshots(table, retain_last=2)
    before = _all_rows(table)
    io = table.file_io
    # a failed write: data + .index written, never committed
    lost = _write(table, range(50, 60), "z", index=True)
    lost_paths = [
        table.data_file_path(lost),
        f"{table.data_file_dir(lost)}/{lost.file.extra_files[0]}",
    ]
    # a commit that crashed before publishing: its delta manifest and manifest lists
    meta = write_manifest(io, table.path, [lost], table.partition_types, 0)
    list_name, _ = write_manifest_list(io, table.path, [meta])
    # a crashed publish's temp file, a stray temp manifest, a schema temp file
    for rel in (
        "snapshot/.snapshot-9.abc.tmp",
        "manifest/.manifest-x.tmp",
        "schema/.schema-1.y.tmp",
    ):
        io.write_bytes(f"{table.path}/{rel}", b"junk")
    # an index file no index manifest lists (a crashed DV commit): an orphan as in Paimon
    io.write_bytes(f"{table.path}/index/index-1", b"junk")
    # files Paimon-only features own: never candidates
    for rel in ("statistics/stat-1", "x=1/other.parquet"):
        io.write_bytes(f"{table.path}/{rel}", b"not ours")
    _age_all(table, 3 * 86_400)
    # a write in flight: newer than the threshold
    fresh = _write(table, range(70, 71), "x")
    planted = {
        *lost_paths,
        f"{table.path}/manifest/{meta.file_name}",
        f"{table.path}/manifest/{list_name}",
        f"{table.path}/snapshot/.snapshot-9.abc.tmp",
        f"{table.path}/manifest/.manifest-x.tmp",
        f"{table.path}/index/index-1",
    }
    threshold = _now_ms() - DAY_MS

    dry = remove_orphan_files(table, threshold, dry_run=True)
    assert set(dry.paths) == planted, f"dry run reports the orphans: {sorted(dry.paths)}"
    assert dry.files_deleted == len(planted) and dry.bytes_deleted == sum(
        os.path.getsize(p) for p in planted
    ), "size of what would go"
    assert all(os.path.exists(p) for p in planted), "dry run deletes nothing"

    r = remove_orphan_files(table, threshold)
    assert set(r.paths) == planted and r.files_deleted == len(planted)
    assert not any(os.path.exists(p) for p in planted), "orphans deleted"
    assert os.path.exists(table.data_file_path(fresh)), "newer than the threshold: kept"
    for rel in (
        "schema/.schema-1.y.tmp",
        "statistics/stat-1",
        "x=1/other.parquet",
    ):
        assert io.exists(f"{table.path}/{rel}"), f"{rel} is outside what orphan removal owns"
    for rel in ("schema/schema-0", "snapshot/EARLIEST", "snapshot/LATEST", "snapshot/snapshot-4"):
        assert io.exists(f"{table.path}/{rel}"), f"{rel} must never be touched"
    assert _all_rows(table) == before, "every snapshot still reads"
    assert remove_orphan_files(table, threshold).files_deleted == 0, "idempotent"


def test_orphan_threshold_must_not_be_in_the_future(table: FileStoreTable) -> None:
    with pytest.raises(InvalidArgumentError, match="must not be in the future"):
        remove_orphan_files(table, _now_ms() + 60_000)


def test_orphans_with_unpartitioned_table_and_null_partition(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    flat = catalog.create_table("db.flat", ROW)
    arrow = pa.table({"id": [1, 2], "dt": ["a", None]}).cast(ROW.to_arrow())
    entries = []
    for name in ("data-kept-0.parquet", "data-orphan-0.parquet"):
        path = f"{flat.path}/bucket-0/{name}"
        with flat.file_io.open_output(path) as out:
            pq.write_table(arrow, out)
        stats, cols = collect_stats(arrow, ROW, "full")
        meta = make_data_file_meta(name, os.path.getsize(path), 2, stats, cols, 0, None, ())
        entries.append(ManifestEntry(FileKind.ADD, (), 0, -1, meta))
    flat.commit(entries[:1])
    _age_all(flat, 7200)
    r = remove_orphan_files(flat, _now_ms() - 3_600_000)
    assert r.paths == (f"{flat.path}/bucket-0/data-orphan-0.parquet",), r.paths
    parted = _new_table(str(tmp_path / "wh2"))
    kept = _write(parted, range(3), None)
    parted.commit([kept])
    orphan = _write(parted, range(3), None)
    assert "__DEFAULT_PARTITION__" in parted.data_file_path(orphan)
    _age_all(parted, 7200)
    r = remove_orphan_files(parted, _now_ms() - 3_600_000)
    assert r.paths == (parted.data_file_path(orphan),), r.paths
    assert os.path.exists(parted.data_file_path(kept))


# -- random histories ----------------------------------------------------------------------

_OPS = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 2), st.sampled_from("xy"), st.booleans()),
    st.tuples(st.just("compact"), st.integers(0, 2**16)),
    st.tuples(st.just("overwrite"), st.sampled_from(["x", "y", None])),
    st.tuples(st.just("reindex"), st.integers(0, 2**16)),
    st.tuples(st.just("expire"), st.integers(1, 4), st.integers(-1, 6)),
    st.tuples(st.just("plant"), st.sampled_from("xyz")),
    st.tuples(st.just("orphans"), st.booleans()),
)


def _apply(
    table: FileStoreTable, op: tuple[Any, ...], planted: set[str], counter: list[int]
) -> None:
    kind = op[0]
    live = sorted(table.scan_files(), key=lambda e: e.file.file_name)

    def ids(n: int) -> range:
        counter[0] += n
        return range(counter[0] - n, counter[0])

    if kind == "append":
        table.commit([_write(table, ids(3), op[2], index=op[3]) for _ in range(op[1])])
    elif kind == "compact" and live:
        picked = [e for i, e in enumerate(live) if (op[1] >> i) & 1] or live[:1]
        for dt in {e.partition[0] for e in picked}:
            group = [e for e in picked if e.partition[0] == dt]
            rows = [
                i for e in group for i in pq.read_table(table.data_file_path(e))["id"].to_pylist()
            ]
            merged = _write(table, rows, dt, index=True)
            table.commit([merged], deleted=group, kind=CommitKind.COMPACT)
    elif kind == "overwrite":
        dt = op[1] or "x"
        parts = [(op[1],)] if op[1] else None
        table.commit(
            [_write(table, ids(2), dt)], kind=CommitKind.OVERWRITE, overwrite_partitions=parts
        )
    elif kind == "reindex" and live:
        e = live[op[1] % len(live)]
        table.commit([_reindex(table, e)], deleted=[e], kind=CommitKind.COMPACT)
    elif kind == "expire":
        snaps = table.list_snapshots()
        retain, at = op[1], op[2]
        older = None if at < 0 or not snaps else snaps[min(at, len(snaps) - 1)].time_millis
        expected = 0
        while expected < len(snaps) - retain and (
            older is None or snaps[expected + 1].time_millis < older
        ):
            expected += 1
        rows = {s.id: _snapshot_rows(table, s) for s in snaps}
        r = expire_snapshots(table, retain, older)
        assert r.snapshots_deleted == expected, f"{op}: {r} on {[s.id for s in snaps]}"
        left = [s.id for s in table.list_snapshots()]
        assert left == [s.id for s in snaps[expected:]], f"{op}: kept {left}"
        assert _all_rows(table) == {i: rows[i] for i in left}, "retained snapshots read the same"
    elif kind == "plant":
        e = _write(table, ids(1), op[1], index=True)
        planted.update(
            {table.data_file_path(e), f"{table.data_file_dir(e)}/{e.file.extra_files[0]}"}
        )
    elif kind == "orphans":
        rows = _all_rows(table)
        _age_all(table, 7200)
        r = remove_orphan_files(table, _now_ms() - 3_600_000, dry_run=op[1])
        assert set(r.paths) == planted, f"exactly the planted files: {sorted(r.paths)}"
        if not op[1]:
            planted.clear()
        assert _all_rows(table) == rows, "orphan removal never breaks a snapshot"


@given(ops=st.lists(_OPS, min_size=1, max_size=10), merge=st.sampled_from(["2", "3", "30"]))
def test_random_histories_keep_every_retained_snapshot(
    ops: list[tuple[Any, ...]], merge: str
) -> None:
    with tempfile.TemporaryDirectory() as root:
        table = _new_table(root, **{"manifest.merge-min-count": merge})
        planted: set[str] = set()
        counter = [0]
        for op in ops:
            _apply(table, op, planted, counter)
        rows = _all_rows(table)
        planted_names = {p.rsplit("/", 1)[-1] for p in planted}
        on_disk = {rel.rsplit("/", 1)[-1] for rel in _table_files(table)} - planted_names
        wanted = _referenced(table)
        assert on_disk == wanted, (
            f"left {sorted(on_disk - wanted)}, missing {sorted(wanted - on_disk)} after {ops}"
        )
        expire_snapshots(table, 1)
        latest = table.latest_snapshot()
        assert latest is None or _all_rows(table) == {latest.id: rows[latest.id]}


def test_stale_sort_spill_directories_are_removed(table: FileStoreTable) -> None:
    """A sort compaction that died leaves ``.sort-tmp-<uuid>/``: removed once it and every
    file in it are older than the threshold; a newer one (a compaction running) stays."""
    _history(table)
    before = _all_rows(table)
    io = table.file_io
    stale = f"{table.path}/{SPILL_DIR_PREFIX}dead"
    running = f"{table.path}/{SPILL_DIR_PREFIX}live"
    for d in (stale, running):
        io.write_bytes(f"{d}/map-0.arrow", b"spill")
        io.write_bytes(f"{d}/map-1.arrow", b"spill!")
    _age_all(table, 3 * 86_400)
    for d in (stale, running):
        _age(d, 3 * 86_400)
    io.write_bytes(f"{running}/map-2.arrow", b"new")  # still being written
    empty = f"{table.path}/{SPILL_DIR_PREFIX}empty"
    io.mkdirs(empty)
    _age(empty, 3 * 86_400)
    threshold = _now_ms() - DAY_MS

    dry = remove_orphan_files(table, threshold, dry_run=True)
    assert dry.paths == (f"{stale}/map-0.arrow", f"{stale}/map-1.arrow")
    assert (dry.files_deleted, dry.bytes_deleted) == (2, 11)
    assert io.exists(stale) and io.exists(empty), "a dry run deletes nothing"

    r = remove_orphan_files(table, threshold)
    assert r.paths == dry.paths and r.files_deleted == 2
    assert not io.exists(stale) and not io.exists(empty), "stale spill directories removed"
    assert io.exists(f"{running}/map-0.arrow"), "a spill directory in use is kept whole"
    assert _all_rows(table) == before
    assert remove_orphan_files(table, threshold).files_deleted == 0, "idempotent"
