"""``FileStoreTable``: one table directory, its snapshots, live files and the commit protocol.

Layout (Paimon's, for append-only tables with unaware buckets)::

    <warehouse>/<db>.db/<table>/
      schema/schema-0, schema-1, ...
      snapshot/snapshot-1, ..., LATEST, EARLIEST
      manifest/manifest-list-<uuid>-0, manifest-<uuid>-0, ...
      <k1>=<v1>/<k2>=<v2>/bucket-0/data-<uuid>-<n>.parquet [.index]

Commit protocol (nothing lost, nothing half-visible):

1. data and index files are written first (by the caller), then the delta manifest;
2. the committer reads the latest snapshot, checks conflicts (a COMPACT's deleted files
   must still be live, else :class:`~lakeskip.errors.CommitConflictError`), computes an
   OVERWRITE's deletions against it, and writes the base and delta manifest lists;
3. it publishes ``snapshot-(latest+1)`` with an atomic create-if-absent. Losing the race
   means another commit got that id: it deletes its manifest lists, backs off, re-reads
   the latest snapshot and tries again (``commit.max-retries``, then
   ``CommitConflictError``).

A crash before step 3 leaves the table at its previous snapshot; the orphan files it wrote
are referenced by no snapshot, so readers never see them. Only the snapshot file decides
visibility; ``LATEST`` is a hint.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
from pyroaring import BitMap

from lakeskip.catalog import manifest_disk_cache
from lakeskip.catalog.cache import CacheSection, paused_gc, shared_cache
from lakeskip.catalog.dv_commit import deletion_files
from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.deletion_vectors import DeletionFile, DeletionVectorUpdate, read_vector
from lakeskip.catalog.format.hash_index import HashIndexChange
from lakeskip.catalog.format.index_manifest import IndexManifestEntry, read_index_manifest
from lakeskip.catalog.format.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    read_manifest_columns,
    read_manifest_list,
)
from lakeskip.catalog.format.manifest_columns import LiveColumns, ManifestColumns
from lakeskip.catalog.format.schema import SchemaManager, TableSchema
from lakeskip.catalog.format.snapshot import (
    CommitIdentity,
    CommitKind,
    Snapshot,
    SnapshotManager,
    tag_files,
)
from lakeskip.catalog.kind import TableKind, schema_kind
from lakeskip.catalog.options import check_writable, commit_max_retries
from lakeskip.catalog.partitions import normalize_partition, partition_path
from lakeskip.catalog.snapshot_commit import SnapshotCommit, back_off
from lakeskip.errors import CommitConflictError, CorruptMetadataError, InvalidArgumentError
from lakeskip.types import DataType

__all__ = ["FileStoreTable", "merge_entries", "retry_on_conflict"]


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Live files: every ADD not cancelled by a later DELETE of the same file."""
    live: dict[tuple[object, ...], ManifestEntry] = {}
    for e in entries:
        key = e.identifier
        if e.kind is FileKind.ADD:
            live[key] = e
        else:
            live.pop(key, None)
    return list(live.values())


def _only_adds(entries: list[ManifestEntry]) -> list[ManifestEntry] | None:
    """``entries`` when :func:`merge_entries` would return them as they are: every entry an
    ADD of a file no other entry names (the identifier holds the file name); else None."""
    add = FileKind.ADD
    if not all(e.kind is add for e in entries):
        return None
    if len({e.file.file_name for e in entries}) != len(entries):
        return None
    return entries


_ENTRY_OVERHEAD = 1200  # a decoded ManifestEntry's Python objects, besides its byte fields


def _entry_nbytes(e: ManifestEntry) -> int:
    f = e.file
    stats = f.value_stats
    return (
        _ENTRY_OVERHEAD
        + len(f.file_name)
        + len(f.min_key)
        + len(f.max_key)
        + len(stats.min_values)
        + len(stats.max_values)
        + 8 * len(stats.null_counts)
        + len(f.embedded_index or b"")
        + sum(map(len, f.extra_files))
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _UserScan:
    """How far back the snapshots were searched for one commit user's latest: up to
    snapshot ``to_id`` (whose ``uuid`` and commit time tell a rolled-back and re-committed
    id apart; Paimon 0.9 writes no uuid), and the identifier of the newest snapshot of that
    user found (``None``: none)."""

    to_id: int
    to_uuid: str | None
    to_millis: int
    identifier: int | None


_USER_SCANS: dict[tuple[str, str], _UserScan] = {}
_USER_SCANS_LOCK = threading.Lock()
_USER_SCANS_MAX = 256


class FileStoreTable:
    """A Paimon-layout append-only table.

    Args:
        identifier: ``db.table``.
        path: the table directory within ``file_io``'s filesystem.
        file_io: the table's filesystem.
        schema: the latest schema (re-read with :meth:`refresh`).
    """

    def __init__(self, identifier: str, path: str, file_io: FileIO, schema: TableSchema) -> None:
        self.identifier = identifier
        self.path = path
        self.file_io = file_io
        self.schema = schema
        self.schema_manager = SchemaManager(file_io, path)
        self.snapshot_manager = SnapshotManager(file_io, path)
        self._schemas: dict[int, TableSchema] = {schema.id: schema}
        self._manifests: CacheSection[list[ManifestEntry]] = shared_cache().section(
            "catalog.manifests"
        )
        self._index_manifests: CacheSection[list[IndexManifestEntry]] = shared_cache().section(
            "catalog.index_manifests"
        )
        self._live: CacheSection[tuple[ManifestEntry, ...]] = shared_cache().section(
            "catalog.live-files"
        )
        self._manifest_lists: CacheSection[list[ManifestFileMeta]] = shared_cache().section(
            "catalog.manifest-lists"
        )
        self._manifest_columns: CacheSection[ManifestColumns] = shared_cache().section(
            "catalog.manifest-columns"
        )
        self._live_columns: CacheSection[LiveColumns] = shared_cache().section(
            "catalog.live-columns"
        )
        self._file_prefix = str(uuid.uuid4())
        self._file_counter = itertools.count()
        self._dirs: dict[tuple[str, int], str] = {}
        self._dirs_schema: TableSchema | None = None
        self._kind: tuple[TableSchema, TableKind] | None = None

    def __repr__(self) -> str:
        return f"FileStoreTable({self.identifier!r}, {self.path!r})"

    # -- schemas ---------------------------------------------------------------------------

    def refresh(self) -> FileStoreTable:
        """Re-read the latest schema (after an ALTER TABLE elsewhere)."""
        latest = self.schema_manager.latest()
        if latest is not None:
            self.schema = latest
            self._schemas[latest.id] = latest
        return self

    def schema_by_id(self, schema_id: int) -> TableSchema:
        """The schema a data file was written with (cached; schema files never change)."""
        if schema_id not in self._schemas:
            self._schemas[schema_id] = self.schema_manager.read(schema_id)
        return self._schemas[schema_id]

    @property
    def partition_types(self) -> tuple[DataType, ...]:
        return self.schema.partition_types()

    @property
    def kind(self) -> TableKind:
        """The kind of the table at its current schema (:mod:`lakeskip.catalog.kind`),
        decided once per schema.

        Raises:
            InvalidOptionError: options of a table written elsewhere that lakeskip cannot read.
        """
        decided = self._kind
        if decided is None or decided[0] is not self.schema:
            decided = (self.schema, schema_kind(self.schema))
            self._kind = decided
        return decided[1]

    # -- snapshots -------------------------------------------------------------------------

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """The snapshot with this id; an expired one that a tag holds is read from the tag
        (a Paimon tag file is the whole snapshot, and expiry keeps the files it uses).

        Raises:
            CorruptMetadataError: no such snapshot (nor a tag of it), or unreadable.
        """
        try:
            return self.snapshot_manager.read(snapshot_id)
        except CorruptMetadataError:
            if self.file_io.exists(self.snapshot_manager.path(snapshot_id)):
                raise
            tagged = self._tagged_snapshot(snapshot_id)
            if tagged is None:
                raise
            return tagged

    def _tagged_snapshot(self, snapshot_id: int) -> Snapshot | None:
        for _, _, data in tag_files(self.file_io, self.path):
            try:
                snap = Snapshot.from_json(data)
            except CorruptMetadataError:
                continue  # not ours to judge here
            if snap.id == snapshot_id:
                return snap
        return None

    def latest_identifier(self, user: str, latest: Snapshot | None = None) -> int | None:
        """The ``commitIdentifier`` of the newest snapshot committed by ``user``, searching
        back from ``latest`` (default: the latest snapshot) to the earliest one that still
        exists, as Paimon's ``SnapshotManager.latestSnapshotOfUser``; ``None`` when there is
        none (or it has expired). A streaming query asks this before every batch: the search
        is remembered per (table, user), and the next one reads only the snapshots committed
        since, unless the one it stopped at has changed (a rollback): then it searches anew.
        """
        if latest is None:
            latest = self.latest_snapshot()
            if latest is None:
                return None
        key = (self.path, user)
        with _USER_SCANS_LOCK:
            known = _USER_SCANS.get(key)
        stop = 0  # search down to this id (exclusive)
        if known is not None and known.to_id <= latest.id:
            try:
                then = self.snapshot_manager.read(known.to_id)
                same = (then.uuid, then.time_millis) == (known.to_uuid, known.to_millis)
            except CorruptMetadataError:
                same = False
            if same:
                stop = known.to_id
        found: int | None = None
        sid = latest.id
        while sid > stop:
            try:
                snap = latest if sid == latest.id else self.snapshot_manager.read(sid)
            except CorruptMetadataError:
                if self.file_io.exists(self.snapshot_manager.path(sid)):
                    raise
                break  # expired: Paimon stops searching here too
            if snap.commit_user == user:
                found = snap.commit_identifier
                break
            sid -= 1
        if found is None and stop:
            assert known is not None
            found = known.identifier
        with _USER_SCANS_LOCK:
            if len(_USER_SCANS) >= _USER_SCANS_MAX:
                _USER_SCANS.clear()
            _USER_SCANS[key] = _UserScan(latest.id, latest.uuid, latest.time_millis, found)
        return found

    def committed(self, identity: CommitIdentity, latest: Snapshot | None = None) -> bool:
        """Whether a commit of ``identity`` is already in the table (at ``latest``): a
        snapshot of its user with an identifier at least its own
        (:class:`~lakeskip.catalog.format.snapshot.CommitIdentity`)."""
        last = self.latest_identifier(identity.user, latest)
        return last is not None and last >= identity.identifier

    def list_snapshots(self) -> list[Snapshot]:
        return [self.snapshot_manager.read(i) for i in self.snapshot_manager.list_ids()]

    # -- reading ---------------------------------------------------------------------------

    def _manifest(self, name: str, meta: ManifestFileMeta | None = None) -> list[ManifestEntry]:
        # manifest files are immutable (new name per write): cached process-wide, in bytes,
        # and large ones (``meta`` from the manifest list says how large) on local disk for
        # the next process (lakeskip.catalog.manifest_disk_cache)
        key = (self.path, name, self.partition_types)
        entries = self._manifests.get(key)
        if entries is None:
            on_disk = meta is not None and (
                meta.num_added_files + meta.num_deleted_files >= manifest_disk_cache.min_entries()
            )
            cached = None
            # columns already decoded in memory (a plan of some partitions read them) make
            # the entries faster than the disk cache loads them (100,000 entries: 0.28 vs
            # 0.47-0.50 s CPU); and a local manifest the column decoder reads is decoded
            # again about as fast as the disk cache loads it (0.52-0.54 s) while storing it
            # costs 0.21 s on the background thread (and its collections): not stored then
            in_memory = self._manifest_columns.get((self.path, name))
            if on_disk and in_memory is None:
                assert meta is not None
                cached = manifest_disk_cache.load(
                    self.path, name, meta.file_size, self.partition_types
                )
            if cached is not None:
                entries, nbytes = cached
                nbytes += _ENTRY_OVERHEAD * len(entries)
            else:
                got = in_memory if in_memory is not None else self._columns_of(name)
                if isinstance(got, ManifestColumns):
                    entries = got.entries(np.arange(got.n), self.partition_types)
                    nbytes = len(got.raw) + _ENTRY_OVERHEAD * got.n  # as the disk cache's
                else:
                    entries = got
                    nbytes = sum(map(_entry_nbytes, got))
                if on_disk and not (in_memory is not None and self.file_io.is_local):
                    assert meta is not None
                    manifest_disk_cache.store_later(
                        self.path, name, meta.file_size, entries, self.partition_types
                    )
            self._manifests.put(key, entries, nbytes)
        return entries

    def _columns_of(self, name: str) -> ManifestColumns | list[ManifestEntry]:
        """Manifest ``name`` decoded column-wise, from the cache or read now; its entries where
        the column-wise decoder does not take it (:func:`read_manifest_columns`)."""
        got = self._manifest_columns.get((self.path, name))
        if got is None:
            return read_manifest_columns(self.file_io, self.path, name, self.partition_types)
        return got

    def _manifest_of(
        self, meta: ManifestFileMeta, partitions: Callable[[list[tuple[Any, ...]]], Sequence[bool]]
    ) -> tuple[list[ManifestEntry], tuple[int, int, int]]:
        """The entries of one manifest in the partitions ``partitions`` selects (from the
        manifest's distinct partitions), and the live files the others hold: how many, their
        bytes and rows (ADDs less DELETEs). A manifest not yet decoded is decoded column-wise
        and only the selected entries are made
        (:mod:`lakeskip.catalog.format.manifest_columns`)."""
        name = meta.file_name
        entries = self._manifests.get((self.path, name, self.partition_types))
        if entries is None:
            got = self._columns_of(name)
            if isinstance(got, ManifestColumns):
                keep = np.asarray(partitions(got.partitions(self.partition_types)), dtype=bool)
                rows, left_out = got.rows_in(keep)
                made = got.entries(rows, self.partition_types)
                # cached (again) with the entries made: its size counts them
                self._manifest_columns.put((self.path, name), got, got.nbytes())
                return made, left_out
            entries = self._manifest(name, meta)
        distinct = list(dict.fromkeys(e.partition for e in entries))
        chosen = {p for p, k in zip(distinct, partitions(distinct), strict=True) if k}
        kept = [e for e in entries if e.partition in chosen]
        files = size = count = 0
        for e in entries:
            if e.partition not in chosen:
                sign = 1 if e.kind is FileKind.ADD else -1
                files += sign
                size += sign * e.file.file_size
                count += sign * e.file.row_count
        return kept, (files, size, count)

    def manifest(self, meta: ManifestFileMeta) -> list[ManifestEntry]:
        """The entries of one manifest file (cached as the scans' are)."""
        return self._manifest(meta.file_name, meta)

    def manifest_metas(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """Base then delta manifests of a snapshot."""
        return [
            *read_manifest_list(self.file_io, self.path, snapshot.base_manifest_list),
            *read_manifest_list(self.file_io, self.path, snapshot.delta_manifest_list),
        ]

    def scan_files(self, snapshot: Snapshot | None = None) -> list[ManifestEntry]:
        """Live data files of a snapshot (default: the latest): base + delta ADD - DELETE."""
        if snapshot is None:
            snapshot = self.latest_snapshot()
            if snapshot is None:
                return []
        # a snapshot's manifest lists are immutable (new names per commit): its live files
        # are merged once and kept (a copy of the list is returned: callers may change it)
        key = (
            self.path,
            snapshot.base_manifest_list,
            snapshot.delta_manifest_list,
            self.partition_types,
        )
        live = self._live.get(key)
        if live is None:
            metas = self.manifest_metas(snapshot)
            with paused_gc():
                entries = list(
                    itertools.chain.from_iterable(self._manifest(m.file_name, m) for m in metas)
                )
                live = tuple(_only_adds(entries) or merge_entries(entries))
            self._live.put(key, live, 200 + 8 * len(live))
        return list(live)

    def live_columns(self, snapshot: Snapshot) -> LiveColumns | None:
        """The live files of ``snapshot`` as columns (:class:`LiveColumns`, merged as
        :meth:`scan_files` merges entries; its :meth:`~LiveColumns.entries` are the same
        files), kept per snapshot; None where a manifest is not decoded column-wise (the
        column decoder does not take it) or not read column-wise here (a table in an object
        store whose manifests are not in memory: their entries come from the local disk
        cache instead)."""
        key = (
            "columns",
            self.path,
            snapshot.base_manifest_list,
            snapshot.delta_manifest_list,
            self.partition_types,
        )
        got = self._live_columns.get(key)
        if got is not None:
            return got
        parts: list[tuple[ManifestColumns, np.ndarray]] = []
        local = self.file_io.is_local
        for m in self.manifest_metas(snapshot):
            in_memory = self._manifest_columns.get((self.path, m.file_name))
            if in_memory is None and not local:
                return None
            mc = in_memory if in_memory is not None else self._columns_of(m.file_name)
            if not isinstance(mc, ManifestColumns):
                return None
            if in_memory is None:
                self._manifest_columns.put((self.path, m.file_name), mc, mc.nbytes())
            parts.append((mc, np.arange(mc.n)))
        with paused_gc():
            got = LiveColumns.merged(parts, self.partition_types)
        self._live_columns.put(key, got, 200 + 16 * len(got))
        return got

    def scan_files_in(
        self,
        snapshot: Snapshot,
        keep: Callable[[Sequence[ManifestFileMeta]], Sequence[bool]],
        partitions: Callable[[list[tuple[Any, ...]]], Sequence[bool]] | None = None,
    ) -> tuple[list[ManifestEntry], list[ManifestFileMeta], tuple[int, int, int]]:
        """Live data files of the manifests ``keep`` selects (from the manifest list's
        metadata, e.g. its partition stats) and, with ``partitions``, of the partitions it
        selects (from each manifest's distinct partitions: a large manifest is decoded
        column-wise and only those entries are made); the manifests it left unread; and the live
        files of the partitions left out: how many, their bytes and rows (ADDs less DELETEs,
        as an unread manifest's files are counted).

        Every entry of one file (its ADD, a later DELETE) carries the file's partition, so
        a selection by partition that keeps every manifest which may hold a partition keeps
        all entries of that partition's files: their merge is the same as in
        :meth:`scan_files`. (Files of other partitions may lose a DELETE; such a file is of
        a partition the selection rules out.)
        """
        # manifest lists are immutable (a new name per commit): read once per process
        metas: list[ManifestFileMeta] = []
        for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
            got = self._manifest_lists.get((self.path, name))
            if got is None:
                got = read_manifest_list(self.file_io, self.path, name)
                self._manifest_lists.put((self.path, name), got, 300 + 300 * len(got))
            metas += got
        picked = list(keep(metas))
        if all(picked) and partitions is None:
            return self.scan_files(snapshot), [], (0, 0, 0)
        kept = [m for m, k in zip(metas, picked, strict=True) if k]
        skipped = [m for m, k in zip(metas, picked, strict=True) if not k]
        if partitions is None:
            key = (self.path, tuple(m.file_name for m in kept), self.partition_types)
            live = self._live.get(key)
            if live is None:
                with paused_gc():
                    entries = list(
                        itertools.chain.from_iterable(self._manifest(m.file_name, m) for m in kept)
                    )
                    live = tuple(_only_adds(entries) or merge_entries(entries))
                self._live.put(key, live, 200 + 8 * len(live))
            return list(live), skipped, (0, 0, 0)
        left_out = [0, 0, 0]
        read: list[ManifestEntry] = []
        with paused_gc():
            for m in kept:
                some, out = self._manifest_of(m, partitions)
                read += some
                left_out = [a + b for a, b in zip(left_out, out, strict=True)]
            files, size, count = left_out
            return _only_adds(read) or merge_entries(read), skipped, (files, size, count)

    def index_entries(self, snapshot: Snapshot | None) -> list[IndexManifestEntry]:
        """The index files a snapshot lists (its ``indexManifest``; none without one)."""
        if snapshot is None or not snapshot.index_manifest:
            return []
        key = (self.path, snapshot.index_manifest, self.partition_types)
        entries = self._index_manifests.get(key)
        if entries is None:
            entries = read_index_manifest(
                self.file_io, self.path, snapshot.index_manifest, self.partition_types
            )
            self._index_manifests.put(key, entries, 400 * (1 + len(entries)))
        return entries

    def deletion_files(self, snapshot: Snapshot | None = None) -> dict[str, DeletionFile]:
        """Data file name -> where its deletion vector is, in a snapshot (default: latest)."""
        if snapshot is None:
            snapshot = self.latest_snapshot()
        return deletion_files(self.path, self.index_entries(snapshot))

    def read_deletion_vector(self, ref: DeletionFile, rows: int | None = None) -> BitMap:
        """The deleted positions of one data file (raises CorruptDeletionVectorError)."""
        return read_vector(self.file_io, ref.path, ref.meta, rows)

    def partition_path(self, partition_values: Sequence[Any], bucket: int = 0) -> str:
        """Relative directory of a partition's bucket, e.g. ``dt=2024-01-01/bucket-0``."""
        # memoised per schema: a scan asks for every file's directory, and files share few
        # (partition, bucket) pairs; formatting each value was a tenth of planning a query
        schema = self.schema
        if self._dirs_schema is not schema:
            self._dirs = {}
            self._dirs_schema = schema
        # by repr, not value: 0.0 == -0.0 and Decimal("1.0") == Decimal("1.00") name
        # different directories
        key = (repr(tuple(partition_values)), bucket)
        hit = self._dirs.get(key)
        if hit is None:
            hit = self._dirs[key] = partition_path(schema, partition_values, bucket)
        return hit

    def data_file_dir(self, entry: ManifestEntry) -> str:
        """Directory holding the entry's data file and its extra (index) files."""
        if entry.file.external_path:
            return entry.file.external_path.rsplit("/", 1)[0]
        return f"{self.path}/{self.partition_path(entry.partition, entry.bucket)}"

    def data_file_path(self, entry: ManifestEntry) -> str:
        """Path of the entry's data file within the table's filesystem."""
        if entry.file.external_path:
            return entry.file.external_path
        return f"{self.data_file_dir(entry)}/{entry.file.file_name}"

    def new_data_file_name(self, extension: str = "parquet") -> str:
        """``data-<uuid>-<n>.<extension>``, unique per table object."""
        return f"data-{self._file_prefix}-{next(self._file_counter)}.{extension}"

    # -- committing ------------------------------------------------------------------------

    def commit(
        self,
        added: Sequence[ManifestEntry],
        deleted: Sequence[ManifestEntry] = (),
        kind: CommitKind = CommitKind.APPEND,
        overwrite_partitions: Sequence[tuple[Any, ...]] | None = None,
        deletion_vectors: DeletionVectorUpdate | None = None,
        *,
        merge_manifests: bool = False,
        concurrent_check: Callable[[Snapshot | None], None] | None = None,
        hash_index: HashIndexChange | None = None,
        identity: CommitIdentity | None = None,
    ) -> Snapshot | None:
        """Publish one snapshot adding and deleting files.

        Args:
            added: entries of new files (written already).
            deleted: live entries to remove (COMPACT: the files it rewrote).
            kind: APPEND, COMPACT or OVERWRITE.
            overwrite_partitions: OVERWRITE only: the partitions (full value tuples) whose
                files are replaced; ``None`` replaces the whole table.
            deletion_vectors: DVs to set in the same snapshot (DELETE/UPDATE on a
                deletion-vector table) and the DVs the writer read. Deleted data files lose
                their DVs in any case (see :mod:`lakeskip.catalog.dv_commit`).
            merge_manifests: write the base as one merged manifest of the live files (no
                DELETE entries left in it) whatever ``manifest.merge-min-count`` says. A
                commit that adds back a file an earlier snapshot deleted needs it: pypaimon
                drops every ADD of a file whose identifier any manifest of the snapshot
                deletes.
            hash_index: dynamic-bucket tables: the buckets' new HASH index files (and the
                ones the write read, checked; see :mod:`lakeskip.catalog.format.hash_index`). An
                OVERWRITE drops the HASH files of the partitions it replaces.
            concurrent_check: called with the snapshot this commit would follow, before every
                attempt to publish; raises :class:`CommitConflictError` when a commit that
                landed since the writer read the table invalidates what it wrote (a
                DELETE/UPDATE whose condition may match rows a concurrent writer added).
            identity: the snapshot's commit user and identifier (a streaming query's id and
                batch id); before every attempt to publish, a commit whose identity is
                already in the table (:meth:`committed`) publishes nothing: a replayed
                batch commits once. Default: a fresh user, the batch identifier.

        Returns:
            The new snapshot, or ``None`` when nothing was added or deleted, or when
            ``identity`` was committed already (the caller's files are then unpublished).

        Raises:
            CommitConflictError: a file to delete is no longer live, a DV the writer read was
                changed, or the race for the next snapshot was lost ``commit.max-retries``
                times.
        """
        if kind is CommitKind.ANALYZE:
            raise InvalidArgumentError("ANALYZE commits are not supported")
        check_writable(self.schema.options)  # (writes check it first: write_entries)
        adds = [self._entry(e, FileKind.ADD) for e in added]
        deletes = [self._entry(e, FileKind.DELETE) for e in deleted]
        overwrite = kind is CommitKind.OVERWRITE
        if not overwrite and not adds and not deletes and deletion_vectors is None:
            return None
        return SnapshotCommit(
            self,
            adds,
            deletes,
            kind,
            self._overwrite_matcher(overwrite_partitions) if overwrite else None,
            deletion_vectors,
            merge_manifests=merge_manifests,
            concurrent_check=concurrent_check,
            hash_index=hash_index,
            identity=identity,
        ).run()

    def remove_unpublished(self, entries: Iterable[ManifestEntry]) -> None:
        """Best effort: delete the data files (and their extra files) of entries no snapshot
        references (a failed commit's output); what is left is an orphan for
        ``sys.remove_orphan_files``."""
        for e in entries:
            directory = self.data_file_dir(e)
            for path in (self.data_file_path(e), *(f"{directory}/{x}" for x in e.file.extra_files)):
                with contextlib.suppress(OSError):
                    self.file_io.delete(path)

    def _entry(self, e: ManifestEntry, kind: FileKind) -> ManifestEntry:
        partition = normalize_partition(self.schema, e.partition)
        if e.kind is kind and partition == e.partition:
            return e
        return dataclasses.replace(e, kind=kind, partition=partition)

    def _overwrite_matcher(self, partitions: Sequence[tuple[Any, ...]] | None) -> Any:
        if partitions is None:
            return lambda p: True
        wanted = {normalize_partition(self.schema, p) for p in partitions}
        return lambda p: p in wanted

    def verify(self, snapshot: Snapshot | None = None) -> None:
        """Check that every manifest of a snapshot can be read (raises CorruptMetadataError)."""
        snap = snapshot or self.latest_snapshot()
        if snap is None:
            return
        for m in self.manifest_metas(snap):
            if not self.file_io.exists(f"{self.path}/manifest/{m.file_name}"):
                raise CorruptMetadataError(f"snapshot {snap.id}: manifest {m.file_name} missing")


T = TypeVar("T")


def retry_on_conflict(table: FileStoreTable, run: Callable[[], T]) -> T:
    """Run a whole write again while its commit conflicts with a concurrent one, at most
    ``commit.max-retries`` more times, backing off between ``commit.min-retry-wait`` and
    ``commit.max-retry-wait`` (Paimon's options, the same as for a lost snapshot race).

    Sound because a :class:`CommitConflictError` means nothing was published and the
    attempt removed what it wrote, and every attempt plans against the latest snapshot: a
    DELETE/UPDATE/MERGE reads again the files and DVs another commit changed, a
    primary-key write looks its keys up again in the buckets that gained files, so
    same-key writes resolve in commit order. The last conflict is raised as it is.
    """
    attempt = 0
    while True:
        try:
            return run()
        except CommitConflictError:
            options = table.schema.options  # read now: the statement may have altered them
            if attempt >= commit_max_retries(options):
                raise
            back_off(attempt, options)
            table.refresh()
            attempt += 1
