"""Table maintenance: expire old snapshots, remove orphan files (Paimon's semantics).

**Expiry** follows Paimon's ``ExpireSnapshotsImpl``. With snapshots 1..6 and
``retain_last=2``, snapshots ``[begin, end) = [1, 5)`` expire::

    snapshot     1     2     3     4  |  5     6        end = 5, the first one kept
    data files   DELETE entries in the deltas of 2..5: a file snapshot k deletes is
                 dead from k on, so once k-1 is gone no expired snapshot needs it
    manifests    manifest lists and manifests of 1..4
    minus        every file a kept snapshot still reads: all retained snapshots'
                 live files and manifests, Paimon tags (tag/tag-*) and branches
    order        snapshot-1..4 (oldest first) -> EARLIEST hint -> data + .index files
                 -> deletion-vector index files -> manifests

Everything a kept snapshot reads is computed *before* anything is deleted, and a kept
snapshot whose metadata cannot be read stops the expiry (nothing deleted). What makes an
expired snapshot visible (its ``snapshot-N`` file) goes before anything it uses, so a crash
at any point leaves every snapshot that still exists whole and readable; what the crash
left of the expired snapshots' files is referenced by no snapshot, and
``remove_orphan_files`` deletes it (a re-run of the expiry no longer sees it).

``older_than`` uses Paimon's rule: a snapshot expires only if its *successor* was committed
before ``older_than``, so the snapshot that was current at ``older_than`` stays and time
travel to that instant keeps working.

**Orphan removal** follows Paimon's ``LocalOrphanFilesClean``: it lists the files where
Paimon writes them -- ``manifest/``, ``index/`` (deletion vectors), the bucket directories
(``k=v/.../bucket-N/``) and the hidden temp files a crashed atomic write left in
``snapshot/`` and ``tag/`` -- keeps those modified at or after ``older_than`` (a commit may
still be writing them), *then* reads every snapshot, tag and branch (with their index
manifests) and deletes the listed files none of them references. Files are matched by
name (names hold a UUID), never by a path recomputed from the current options.
``schema/``, snapshot files, hints, tag files, ``branch/``,
``statistics/`` and ``changelog/`` are never touched. lakeskip's own leftovers go too: a
``.sort-tmp-<uuid>/`` spill directory of a sort compaction that crashed (a live one deletes
its own, failed or not) is removed whole once it and every file in it are older than
``older_than``; no snapshot ever references one. So are the hidden tables a crashed
``CREATE`` / ``REPLACE TABLE ... AS SELECT`` left in the table's database
(:mod:`lakeskip.catalog.ops.staging`): a staged table never published, a replaced one never
dropped.

Deletion vectors: an expired snapshot's index manifest and the index files it lists go
unless a kept snapshot, tag or branch lists them too.

Example:
    >>> ExpireResult(2, 3, 1, 6).files_deleted
    10
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pyarrow.fs as pafs

from lakeskip.catalog.catalog import REPLACED_PREFIX, hidden_owner
from lakeskip.catalog.dv_commit import index_file_path
from lakeskip.catalog.file_io import FileIO, FileStatus
from lakeskip.catalog.format.deletion_vectors import INDEX_DIR
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry, read_manifest_list
from lakeskip.catalog.format.schema import SchemaManager
from lakeskip.catalog.format.snapshot import (
    EARLIEST,
    LATEST,
    SNAPSHOT_PREFIX,
    TAG_DIR,
    Snapshot,
    SnapshotManager,
    tag_files,
)
from lakeskip.catalog.partitions import BUCKET_DIR_PREFIX
from lakeskip.catalog.table import FileStoreTable, merge_entries
from lakeskip.errors import CorruptMetadataError, InvalidArgumentError

__all__ = [
    "SPILL_DIR_PREFIX",
    "ExpireResult",
    "OrphanResult",
    "expire_snapshots",
    "remove_orphan_files",
]

#: ``<table>/.sort-tmp-<uuid>/``: a curve-sort compaction's spill files
#: (:mod:`lakeskip.procedures.sort_rewrite`)
SPILL_DIR_PREFIX = ".sort-tmp-"
BRANCH_DIR = "branch"
BRANCH_PREFIX = "branch-"
MANIFEST_DIR = "manifest"


@dataclass(frozen=True, slots=True)
class ExpireResult:
    """What :func:`expire_snapshots` deleted (files counted only if they existed)."""

    snapshots_deleted: int
    data_files_deleted: int
    index_files_deleted: int  # extra files of data files (their ``.index`` files)
    manifest_files_deleted: int  # manifests, manifest lists and index manifests
    dv_files_deleted: int = 0  # deletion-vector index files under index/

    @property
    def files_deleted(self) -> int:
        return (
            self.data_files_deleted
            + self.index_files_deleted
            + self.manifest_files_deleted
            + self.dv_files_deleted
        )


@dataclass(frozen=True, slots=True)
class OrphanResult:
    """What :func:`remove_orphan_files` deleted (or, with ``dry_run``, would delete).

    ``paths`` are paths within the table's filesystem, sorted.
    """

    files_deleted: int
    bytes_deleted: int
    paths: tuple[str, ...]


@dataclass(slots=True)
class _Refs:
    """Names of the files kept snapshots read."""

    files: set[str] = field(default_factory=set)  # data files and their extra files
    metadata: set[str] = field(default_factory=set)  # manifest lists, manifests, index, stats

    @property
    def names(self) -> set[str]:
        return self.files | self.metadata


# A snapshot together with the file that holds it (snapshot-N or tag-x), so a read failure
# can tell a snapshot that vanished meanwhile (skip it) from a broken one (stop).
_Held = tuple[str, Snapshot]


def _missing(e: CorruptMetadataError) -> bool:
    return isinstance(e.__cause__, FileNotFoundError)


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


# -- which snapshots are kept --------------------------------------------------------------


def _main_chain(table: FileStoreTable, snapshots: Iterable[Snapshot]) -> list[_Held]:
    sm = table.snapshot_manager
    return [(sm.path(s.id), s) for s in snapshots]


def _read_tags(io: FileIO, root: str) -> list[_Held]:
    held = []
    for _, path, data in tag_files(io, root):
        try:
            held.append((path, Snapshot.from_json(data)))
        except CorruptMetadataError as e:
            raise CorruptMetadataError(f"tag file {path}: {e}") from e
    return sorted(held, key=lambda h: h[1].id)


def _read_snapshots(io: FileIO, root: str) -> list[_Held]:
    sm = SnapshotManager(io, root)
    held = []
    for sid in sm.list_ids():
        try:
            held.append((sm.path(sid), sm.read(sid)))
        except CorruptMetadataError as e:
            if not (_missing(e) and not io.exists(sm.path(sid))):
                raise
            # expired while we listed
    return held


def _protected_chains(table: FileStoreTable) -> list[list[_Held]]:
    """Paimon tags and branches: snapshots that must survive whatever the main branch does.

    Branches keep their own ``snapshot/`` and ``tag/`` under ``branch/branch-<name>/`` but
    their manifests and data files live in this table's directories.
    """
    io = table.file_io
    chains = [_read_tags(io, table.path)]
    for st in io.list_dir(f"{table.path}/{BRANCH_DIR}"):
        if st.is_dir and st.name.startswith(BRANCH_PREFIX):
            chains += [_read_snapshots(io, st.path), _read_tags(io, st.path)]
    return [c for c in chains if c]


# -- what kept snapshots reference ---------------------------------------------------------


def _entries(table: FileStoreTable, manifest_names: Iterable[str]) -> list[ManifestEntry]:
    # the table's manifest cache: consecutive snapshots share most of their manifests
    return list(itertools.chain.from_iterable(table._manifest(n) for n in manifest_names))


def _add_chain(table: FileStoreTable, chain: Sequence[_Held], refs: _Refs) -> None:
    """Add every file the snapshots of one chain (ordered by id) read to ``refs``.

    The live files of consecutive snapshots are computed incrementally: when snapshot s's
    base manifests are exactly snapshot s-1's base + delta (how every commit builds them
    unless it merges manifests), live(s) = live(s-1) - deletes + adds, so the union over
    the chain only needs s's surviving delta ADDs. Otherwise s's manifests are merged.

    Raises:
        CorruptMetadataError: a snapshot that still exists cannot be read completely.
    """
    io = table.file_io
    prev: tuple[int, list[str]] | None = None
    for holder, s in chain:
        lists = [x for x in (s.changelog_manifest_list,) if x]
        try:
            index_files = [e.index_file.file_name for e in table.index_entries(s)]
            base = [m.file_name for m in read_manifest_list(io, table.path, s.base_manifest_list)]
            delta = [m.file_name for m in read_manifest_list(io, table.path, s.delta_manifest_list)]
            incremental = prev is not None and prev[0] == s.id - 1 and prev[1] == base
            live = merge_entries(_entries(table, delta if incremental else base + delta))
            changelog = [m.file_name for x in lists for m in read_manifest_list(io, table.path, x)]
            # changelog files are the ADDs of their own manifests (append tables have none)
            live += [e for e in _entries(table, changelog) if e.kind is FileKind.ADD]
        except CorruptMetadataError as err:
            if _missing(err) and not io.exists(holder):
                prev = None
                continue  # the snapshot or tag was removed while we read it
            raise CorruptMetadataError(
                f"{_basename(holder)} exists but cannot be read ({err}); nothing was deleted"
            ) from err
        refs.metadata.update(
            [s.base_manifest_list, s.delta_manifest_list, *lists, *base, *delta, *changelog]
        )
        # the index manifest and the index files it lists (deletion vectors; Paimon's hash
        # indexes), and statistics (never deleted here, only named)
        refs.metadata.update(x for x in (s.index_manifest, s.statistics) if x)
        refs.metadata.update(index_files)
        for entry in live:
            f = entry.file
            refs.files.add(_basename(f.external_path) if f.external_path else f.file_name)
            refs.files.update(f.extra_files)
        prev = (s.id, base + delta)


def _references(table: FileStoreTable, chains: Iterable[Sequence[_Held]]) -> _Refs:
    refs = _Refs()
    for chain in chains:
        _add_chain(table, chain, refs)
    return refs


# -- expiry --------------------------------------------------------------------------------


def _expire_count(
    snaps: Sequence[Snapshot],
    retain_min: int,
    older_than: int | None,
    retain_max: int | None = None,
    max_deletes: int | None = None,
) -> int:
    """How many of the oldest snapshots expire, by Paimon's ``ExpireSnapshotsImpl.expire``:
    everything beyond the newest ``retain_max`` goes; of the rest, the newest
    ``retain_min`` stay, and an older one goes only once its successor was committed
    before ``older_than`` (``None``: every snapshot is old enough); at most
    ``max_deletes`` go in one call."""
    total = len(snaps)
    first = 0 if retain_max is None else max(total - retain_max, 0)  # Paimon's `min`
    stop = total - retain_min  # Paimon's `maxExclusive`, as a list index
    if max_deletes is not None:
        stop = min(stop, max_deletes)
    for i in range(first, stop):
        if older_than is not None and snaps[i + 1].time_millis >= older_than:
            return i
    return max(stop, 0)


def _try_list(table: FileStoreTable, name: str | None) -> list[str]:
    """Manifest names of a list of an *expired* snapshot; [] when already gone (a crashed
    earlier expiry may have deleted it)."""
    if not name:
        return []
    try:
        return [m.file_name for m in read_manifest_list(table.file_io, table.path, name)]
    except CorruptMetadataError as e:
        if _missing(e):
            return []
        raise


def _try_entries(table: FileStoreTable, manifest_names: Iterable[str]) -> list[ManifestEntry]:
    out: list[ManifestEntry] = []
    for name in manifest_names:
        try:
            out += table._manifest(name)
        except CorruptMetadataError as e:
            if not _missing(e):
                raise
    return out


def expire_snapshots(
    table: FileStoreTable,
    retain_last: int,
    older_than_millis: int | None = None,
    *,
    retain_max: int | None = None,
    max_deletes: int | None = None,
) -> ExpireResult:
    """Expire the oldest snapshots and delete the files only they used.

    Args:
        table: the table.
        retain_last: keep at least this many of the newest snapshots (>= 1; Paimon's
            ``retain_min``).
        older_than_millis: epoch millis; if given, also keep every snapshot whose successor
            was committed at or after it (so the snapshot current at that instant stays).
        retain_max: keep at most this many (older ones go whatever their age).
        max_deletes: expire at most this many snapshots in this call.

    Returns:
        Counts of the snapshot, data, ``.index`` and manifest files deleted.

    Raises:
        InvalidArgumentError: ``retain_last`` < 1, ``retain_max`` < ``retain_last``, or
            ``max_deletes`` < 1.
        CorruptMetadataError: a snapshot, tag or branch that is kept cannot be read (then
            nothing is deleted).
    """
    if retain_last < 1:
        raise InvalidArgumentError(f"retain_last must be at least 1, got {retain_last}")
    if retain_max is not None and retain_max < retain_last:
        raise InvalidArgumentError(
            f"retain_max ({retain_max}) must not be less than retain_min ({retain_last})"
        )
    if max_deletes is not None and max_deletes < 1:
        raise InvalidArgumentError(f"max_deletes must be at least 1, got {max_deletes}")
    snaps = table.list_snapshots()
    n = _expire_count(snaps, retain_last, older_than_millis, retain_max, max_deletes)
    if n == 0:
        return ExpireResult(0, 0, 0, 0)
    expired, retained = snaps[:n], snaps[n:]
    keep = _references(table, [_main_chain(table, retained), *_protected_chains(table)])

    # Data: files DELETEd in the deltas of (begin, end]; a file re-added meanwhile (a
    # rewritten index keeps its data file) or held by a tag/branch is in `keep`.
    data: dict[str, None] = {}
    index: dict[str, None] = {}
    for s in [*expired[1:], retained[0]]:
        for e in _try_entries(table, _try_list(table, s.delta_manifest_list)):
            if e.kind is not FileKind.DELETE:
                continue
            path = table.data_file_path(e)
            if _basename(path) not in keep.files:
                data[path] = None
            directory = table.data_file_dir(e)
            index.update(
                (f"{directory}/{x}", None) for x in e.file.extra_files if x not in keep.files
            )

    manifests: dict[str, None] = {}
    dv_files: dict[str, None] = {}
    for s in expired:
        if s.index_manifest and s.index_manifest not in keep.metadata:
            try:
                entries = table.index_entries(s)
            except CorruptMetadataError as e:
                if not _missing(e):
                    raise
                entries = []  # removed by an earlier, interrupted expiry
            dv_files.update(
                (index_file_path(table.path, e.index_file), None)
                for e in entries
                if e.index_file.file_name not in keep.metadata
            )
            manifests[f"{table.path}/{MANIFEST_DIR}/{s.index_manifest}"] = None
        for name in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list):
            if not name:
                continue
            for m in [*_try_list(table, name), name]:
                if m not in keep.metadata:
                    manifests[f"{table.path}/{MANIFEST_DIR}/{m}"] = None

    io = table.file_io
    sm = table.snapshot_manager
    # First what makes the expired snapshots visible, then what they used: a crash at any
    # point leaves every snapshot that still exists whole, and at worst files no snapshot
    # references, which remove_orphan_files deletes.
    for s in expired:  # oldest first: what remains is always a contiguous range
        io.delete(sm.path(s.id))
    with contextlib.suppress(OSError):  # the hint is advisory; readers probe around it
        io.write_bytes(f"{sm.dir}/{EARLIEST}", str(retained[0].id).encode())
    data_deleted = sum(io.delete(p) for p in data)
    index_deleted = sum(io.delete(p) for p in index)
    dv_deleted = sum(io.delete(p) for p in dv_files)
    manifests_deleted = sum(io.delete(p) for p in manifests)
    return ExpireResult(len(expired), data_deleted, index_deleted, manifests_deleted, dv_deleted)


# -- orphans -------------------------------------------------------------------------------


def _files(io: FileIO, directory: str) -> list[pafs.FileInfo]:
    selector = pafs.FileSelector(directory, allow_not_found=True, recursive=False)
    return [i for i in io.filesystem.get_file_info(selector) if i.type == pafs.FileType.File]


def _bucket_dirs(io: FileIO, root: str, partition_levels: int) -> list[str]:
    """``<root>/k1=v1/.../bucket-N`` directories, as Paimon's ``listFileDirs`` finds them."""
    dirs = [root]
    for _ in range(partition_levels):
        dirs = [st.path for d in dirs for st in io.list_dir(d) if st.is_dir and "=" in st.name]
    return [
        st.path
        for d in dirs
        for st in io.list_dir(d)
        if st.is_dir and st.name.startswith(BUCKET_DIR_PREFIX)
    ]


def _old_enough(info: pafs.FileInfo, older_than: int) -> bool:
    # no modification time (some object stores): never old enough
    return info.mtime_ns is not None and info.mtime_ns // 1_000_000 < older_than


def _orphan_candidates(table: FileStoreTable, older_than: int) -> list[pafs.FileInfo]:
    io = table.file_io
    infos = _files(io, f"{table.path}/{MANIFEST_DIR}")
    infos += _files(io, f"{table.path}/{INDEX_DIR}")  # deletion-vector index files
    for d in _bucket_dirs(io, table.path, len(table.schema.partition_keys)):
        infos += _files(io, d)
    # snapshot/: only hidden temp files a crashed publish left (never snapshot-N or hints)
    infos += [
        i
        for i in _files(io, table.snapshot_manager.dir)
        if i.base_name.startswith(".")
        and not i.base_name.startswith(SNAPSHOT_PREFIX)
        and i.base_name not in (EARLIEST, LATEST)
    ]
    # tag/: likewise only the hidden temp files of a crashed tag write (never tag-<name>)
    infos += [i for i in _files(io, f"{table.path}/{TAG_DIR}") if i.base_name.startswith(".")]
    return [i for i in infos if _old_enough(i, older_than)]


def _stale_spill_dirs(
    table: FileStoreTable, older_than: int
) -> list[tuple[str, list[pafs.FileInfo]]]:
    """(directory, its files) of the spill directories a crashed sort compaction left: the
    directory and every file under it last modified before ``older_than`` (a compaction
    still running keeps writing and reading there)."""
    dirs = [st for st in table.file_io.list_dir(table.path) if st.name.startswith(SPILL_DIR_PREFIX)]
    return _stale_dirs(table.file_io, dirs, older_than)


def _stale_hidden_tables(
    table: FileStoreTable, older_than: int
) -> list[tuple[str, list[pafs.FileInfo]]]:
    """(directory, its files) of what a crashed CREATE / REPLACE ... AS SELECT left in this
    table's database (:mod:`lakeskip.catalog.ops.staging`): a staged table never published
    (whichever table it was for: that one may not exist), a replaced table not dropped
    (only while the table it belonged to exists: else it is the one a lookup moves back)."""
    io = table.file_io
    parent = table.path.rsplit("/", 1)[0]
    dirs = []
    for st in io.list_dir(parent):
        owner = hidden_owner(st.name)
        if owner is None:
            continue
        if owner[0] == REPLACED_PREFIX and not SchemaManager(io, f"{parent}/{owner[1]}").list_ids():
            continue
        dirs.append(st)
    return _stale_dirs(io, dirs, older_than)


def _stale_dirs(
    io: FileIO, dirs: Iterable[FileStatus], older_than: int
) -> list[tuple[str, list[pafs.FileInfo]]]:
    """The directories (with their files) that, and every file under which, were last
    modified before ``older_than``."""
    out = []
    for st in dirs:
        if not st.is_dir:
            continue
        selector = pafs.FileSelector(st.path, allow_not_found=True, recursive=True)
        infos = io.filesystem.get_file_info(selector)
        files = [i for i in infos if i.type == pafs.FileType.File]
        # object stores have no directory times: their files decide; nothing dated: kept
        dated = [
            i
            for i in [io.filesystem.get_file_info(st.path), *infos]
            if i.type == pafs.FileType.File or i.mtime_ns is not None
        ]
        if dated and all(_old_enough(i, older_than) for i in dated):
            out.append((st.path, files))
    return out


def remove_orphan_files(
    table: FileStoreTable, older_than_millis: int, dry_run: bool = False
) -> OrphanResult:
    """Delete files under the table that no snapshot, tag or branch references.

    Only files last modified before ``older_than_millis`` are considered, so the files
    of a commit still in flight (written, not yet published) survive.

    Args:
        table: the table.
        older_than_millis: epoch millis; must not be in the future.
        dry_run: only report what would be deleted.

    Raises:
        InvalidArgumentError: ``older_than_millis`` in the future.
        CorruptMetadataError: a snapshot, tag or branch cannot be read (nothing deleted).
    """
    now = int(time.time() * 1000)
    if older_than_millis > now:
        raise InvalidArgumentError(
            "older_than must not be in the future: files of commits in flight would be deleted"
        )
    # List first, then read the snapshots: a file committed between the two is then seen
    # as referenced (the reverse order could delete it).
    candidates = _orphan_candidates(table, older_than_millis)
    spills = _stale_spill_dirs(table, older_than_millis)
    spills += _stale_hidden_tables(table, older_than_millis)
    victims: list[pafs.FileInfo] = []
    if candidates:
        snapshots = _read_snapshots(table.file_io, table.path)
        used = _references(table, [snapshots, *_protected_chains(table)]).names
        victims = [i for i in candidates if i.base_name not in used]
        if not dry_run:
            victims = [i for i in victims if table.file_io.delete(i.path)]
    for directory, files in spills:
        if not dry_run:
            table.file_io.delete_dir(directory)
        victims += files
    victims.sort(key=lambda i: i.path)
    return OrphanResult(
        len(victims), sum(i.size or 0 for i in victims), tuple(i.path for i in victims)
    )
