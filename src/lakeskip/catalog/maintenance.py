"""Table maintenance: expire old snapshots, remove orphan files.

``expire_snapshots`` deletes the oldest snapshots beyond ``retain_last`` (and, with
``older_than_millis``, only those older than it), then every data file, ``.index`` file,
manifest and manifest list that only expired snapshots used. The set of files still in use is
computed from *all* retained snapshots, so a retained snapshot never points at a deleted file.
Order, as Paimon: data files, then manifests, then the snapshot files (oldest first), then the
EARLIEST hint -- a crash part-way leaves at worst an expired snapshot that can no longer be
read, never a retained one.

``remove_orphan_files`` deletes files under the table directory that no snapshot references
(left by failed or concurrent writes) and that are older than a threshold, which protects
files of commits still in flight. Schema, snapshot and hint files are never touched.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow.fs as pafs

from lakeskip.catalog.snapshot import Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError

__all__ = [
    "ExpireResult",
    "OrphanResult",
    "expire_snapshots",
    "referenced_files",
    "remove_orphan_files",
]


@dataclass(frozen=True, slots=True)
class ExpireResult:
    snapshots_deleted: int
    data_files_deleted: int
    index_files_deleted: int
    manifest_files_deleted: int


@dataclass(frozen=True, slots=True)
class OrphanResult:
    files_deleted: int
    bytes_deleted: int
    paths: tuple[str, ...]


def _snapshot_files(table: FileStoreTable, snap: Snapshot) -> tuple[set[str], set[str], set[str]]:
    """(data files, index files, manifest + manifest-list files) a snapshot reads."""
    data: set[str] = set()
    index: set[str] = set()
    manifests: set[str] = {
        f"{table.path}/manifest/{snap.base_manifest_list}",
        f"{table.path}/manifest/{snap.delta_manifest_list}",
    }
    if snap.changelog_manifest_list:
        manifests.add(f"{table.path}/manifest/{snap.changelog_manifest_list}")
    for m in table.manifest_metas(snap):
        manifests.add(f"{table.path}/manifest/{m.file_name}")
    for e in table.scan_files(snap):
        data.add(table.data_file_path(e))
        directory = table.data_file_dir(e)
        index.update(f"{directory}/{x}" for x in e.file.extra_files)
    return data, index, manifests


def referenced_files(table: FileStoreTable, snapshots: Iterable[Snapshot]) -> set[str]:
    out: set[str] = set()
    for s in snapshots:
        d, i, m = _snapshot_files(table, s)
        out |= d | i | m
    return out


def expire_snapshots(
    table: FileStoreTable, retain_last: int, older_than_millis: int | None = None
) -> ExpireResult:
    """Expire the oldest snapshots, keeping at least ``retain_last`` (>= 1)."""
    if retain_last < 1:
        raise InvalidArgumentError(f"retain_last must be at least 1, got {retain_last}")
    snaps = table.list_snapshots()
    expire: list[Snapshot] = []
    for s in snaps[: max(0, len(snaps) - retain_last)]:
        if older_than_millis is not None and s.time_millis >= older_than_millis:
            break
        expire.append(s)
    if not expire:
        return ExpireResult(0, 0, 0, 0)
    retained = snaps[len(expire) :]
    keep: set[str] = set()
    for s in retained:
        d, i, m = _snapshot_files(table, s)
        keep |= d | i | m
    data_del: set[str] = set()
    index_del: set[str] = set()
    manifest_del: set[str] = set()
    for s in expire:
        d, i, m = _snapshot_files(table, s)
        data_del |= d - keep
        index_del |= i - keep
        manifest_del |= m - keep
    io = table.file_io
    for path in sorted(data_del | index_del):
        io.delete(path)
    for path in sorted(manifest_del):
        io.delete(path)
    sm = table.snapshot_manager
    for s in expire:
        io.delete(sm.path(s.id))
    with contextlib.suppress(OSError):  # the hint is advisory
        io.write_bytes(f"{sm.dir}/EARLIEST", str(retained[0].id).encode())
    return ExpireResult(len(expire), len(data_del), len(index_del), len(manifest_del))


_PROTECTED_DIRS = ("/schema/", "/snapshot/")


def remove_orphan_files(
    table: FileStoreTable, older_than_millis: int | None = None, dry_run: bool = False
) -> OrphanResult:
    """Delete unreferenced files older than ``older_than_millis`` (default: one day ago)."""
    if older_than_millis is None:
        older_than_millis = int(time.time() * 1000) - 86_400_000
    keep = referenced_files(table, table.list_snapshots())
    io = table.file_io
    selector = pafs.FileSelector(table.path, allow_not_found=True, recursive=True)
    victims: list[tuple[str, int]] = []
    for info in io.filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        path = info.path
        if any(p in path[len(table.path) :] + "/" for p in _PROTECTED_DIRS) or path in keep:
            continue
        mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else None
        if mtime is None or mtime >= older_than_millis:
            continue
        victims.append((path, info.size or 0))
    if not dry_run:
        for path, _ in victims:
            io.delete(path)
    return OrphanResult(len(victims), sum(s for _, s in victims), tuple(p for p, _ in victims))
