"""Publishing one snapshot: the commit of :meth:`FileStoreTable.commit
<lakeskip.catalog.table.FileStoreTable.commit>` as one object, one method per step of an
attempt (as pyiceberg's ``_SnapshotProducer``).

What a commit writes before it publishes (its delta manifest, then per attempt the manifest
lists, a merged base manifest, index files) is new files; publishing is the atomic create of
the next snapshot file (:meth:`SnapshotManager.try_publish
<lakeskip.catalog.format.snapshot.SnapshotManager.try_publish>`). An attempt that loses the
race for the snapshot id deletes what it wrote for that id and tries again against the new
latest snapshot, backing off as Paimon does; a conflict (a file to delete is gone, a DV the
writer read changed, a concurrent check fails) deletes everything the commit wrote and
raises: nothing is published.
"""

from __future__ import annotations

import dataclasses
import random
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from lakeskip.catalog.dv_commit import IndexChange, plan_index_change
from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate
from lakeskip.catalog.format.hash_index import HashIndexChange
from lakeskip.catalog.format.index_manifest import IndexManifestEntry
from lakeskip.catalog.format.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    write_manifest,
    write_manifest_list,
)
from lakeskip.catalog.format.schema import SchemaManager, TableSchema
from lakeskip.catalog.format.snapshot import (
    BATCH_COMMIT_IDENTIFIER,
    CommitIdentity,
    CommitKind,
    Snapshot,
    SnapshotManager,
)
from lakeskip.catalog.options import (
    commit_max_retries,
    manifest_compression,
    option_int,
    option_millis,
)
from lakeskip.errors import CommitConflictError
from lakeskip.types import DataType

__all__ = ["CommitTarget", "SnapshotCommit", "back_off"]

#: which partitions an OVERWRITE replaces (``None``: not an overwrite)
PartitionMatch = Callable[[tuple[Any, ...]], bool]


class CommitTarget(Protocol):
    """What a commit needs of its table (:class:`~lakeskip.catalog.table.FileStoreTable`)."""

    identifier: str
    path: str
    file_io: FileIO
    schema: TableSchema
    schema_manager: SchemaManager
    snapshot_manager: SnapshotManager

    @property
    def partition_types(self) -> tuple[DataType, ...]: ...

    def manifest_metas(self, snapshot: Snapshot) -> list[ManifestFileMeta]: ...

    def scan_files(self, snapshot: Snapshot | None = None) -> list[ManifestEntry]: ...

    def index_entries(self, snapshot: Snapshot | None) -> list[IndexManifestEntry]: ...

    def committed(self, identity: CommitIdentity, latest: Snapshot | None = None) -> bool: ...


def back_off(attempt: int, options: Any) -> None:
    """Sleep before attempt ``attempt + 1``: exponential between ``commit.min-retry-wait``
    and ``commit.max-retry-wait``, jittered (Paimon's options)."""
    low = option_millis(options, "commit.min-retry-wait")
    high = option_millis(options, "commit.max-retry-wait")
    wait = min(high, low * (2 ** min(attempt, 16)))
    time.sleep(random.uniform(low, max(low, wait)) / 1000.0)


class SnapshotCommit:
    """One commit of ``adds`` and ``deletes`` (entries already normalised to the table's
    partitions and kinds); see :meth:`FileStoreTable.commit
    <lakeskip.catalog.table.FileStoreTable.commit>` for the arguments."""

    def __init__(
        self,
        table: CommitTarget,
        adds: list[ManifestEntry],
        deletes: list[ManifestEntry],
        kind: CommitKind,
        match: PartitionMatch | None,
        deletion_vectors: DeletionVectorUpdate | None,
        *,
        merge_manifests: bool,
        concurrent_check: Callable[[Snapshot | None], None] | None,
        hash_index: HashIndexChange | None,
        identity: CommitIdentity | None,
    ) -> None:
        self.table = table
        self.adds = adds
        self.explicit_deletes = deletes
        self.kind = kind
        self.match = match
        self.dv = deletion_vectors
        self.merge_manifests = merge_manifests
        self.concurrent_check = concurrent_check
        self.hash_index = hash_index
        self.replay_check = identity is not None
        self.identity = identity or CommitIdentity(str(uuid.uuid4()), BATCH_COMMIT_IDENTIFIER)
        self.options = table.schema.options
        self.codec = manifest_compression(self.options)
        #: the delta manifest, written once (again when an overwrite's base changed)
        self.delta_meta: ManifestFileMeta | None = None

    def run(self) -> Snapshot | None:
        """Publish the snapshot: the new snapshot, or ``None`` (nothing to commit, or the
        identity is committed already)."""
        retries = commit_max_retries(self.options)
        last_error = ""
        try:
            for attempt in range(retries + 1):
                latest = self.table.snapshot_manager.latest()
                if self.replay_check and self.table.committed(self.identity, latest):
                    self._discard_delta()
                    return None
                if self.concurrent_check is not None:
                    self.concurrent_check(latest)
                deletes = self._deletes(latest)
                if self._nothing_to_do(deletes):
                    return None
                snapshot = self._attempt(latest, deletes)
                if snapshot is not None:
                    return snapshot
                last_error = f"snapshot {self._next_id(latest)} was taken by another commit"
                back_off(attempt, self.options)
        except CommitConflictError:
            self._discard_delta()
            raise
        self._discard_delta()
        raise CommitConflictError(
            f"commit to {self.table.identifier} failed after {retries + 1} attempts: {last_error}"
        )

    # -- the steps of an attempt -----------------------------------------------------------

    def _deletes(self, latest: Snapshot | None) -> list[ManifestEntry]:
        """The DELETE entries against ``latest``: the explicit ones (each still live, else a
        conflict) and, for an overwrite, every live file of the partitions it replaces."""
        if not self.explicit_deletes and self.match is None:
            return self.explicit_deletes
        live = self.table.scan_files(latest) if latest is not None else []
        live_keys = {e.identifier for e in live}
        gone = [e.file.file_name for e in self.explicit_deletes if e.identifier not in live_keys]
        if gone:
            raise CommitConflictError(
                f"commit to {self.table.identifier} conflicts: {len(gone)} file(s) to delete "
                f"are no longer live (e.g. {gone[0]}); another commit changed them"
            )
        if self.match is None:
            return self.explicit_deletes
        seen = {e.identifier for e in self.explicit_deletes}
        self._discard_delta()  # deletions depend on the base
        return self.explicit_deletes + [
            dataclasses.replace(e, kind=FileKind.DELETE)
            for e in live
            if self.match(e.partition) and e.identifier not in seen
        ]

    def _nothing_to_do(self, deletes: list[ManifestEntry]) -> bool:
        return (
            not self.adds
            and not deletes
            and (self.dv is None or not self.dv.vectors)
            and (self.hash_index is None or not self.hash_index.replace_all)
        )

    def _attempt(self, latest: Snapshot | None, deletes: list[ManifestEntry]) -> Snapshot | None:
        """Write what the snapshot after ``latest`` needs and try to publish it; ``None``
        (its files deleted again) when another commit took that id."""
        table = self.table
        base_metas = table.manifest_metas(latest) if latest is not None else []
        index = self._index_change(latest, deletes)
        if self.delta_meta is None and (self.adds or deletes):
            # a commit of deletion vectors or HASH files only lists no manifest in its delta
            # (as Paimon's rolling manifest writer opens no file for no entries). DELETE
            # entries first, as Paimon's commit writes them: Paimon < 1.0 identifies a file by
            # (partition, bucket, level, name) only, so a rewritten index (same data file)
            # listed ADD-first reads as a second ADD of a live file, and Paimon's expiry would
            # delete that live data file
            self.delta_meta = write_manifest(
                table.file_io,
                table.path,
                [*deletes, *self.adds],
                table.partition_types,
                table.schema.id,
                self.codec,
            )
        snapshot, written = self._prepare(latest, base_metas, deletes)
        snapshot = dataclasses.replace(snapshot, index_manifest=index.index_manifest)
        if table.snapshot_manager.try_publish(snapshot):
            return snapshot
        for name in written:
            table.file_io.delete(f"{table.path}/manifest/{name}")
        for path in index.written:
            table.file_io.delete(path)
        return None

    def _index_change(self, latest: Snapshot | None, deletes: list[ManifestEntry]) -> IndexChange:
        table = self.table
        return plan_index_change(
            table.file_io,
            table.path,
            table.identifier,
            latest.index_manifest if latest is not None else None,
            table.index_entries(latest),
            lambda: table.scan_files(latest) if latest is not None else [],
            self.adds,
            deletes,
            self.dv,
            table.partition_types,
            self.codec,
            self.hash_index,
            self.match,
        )

    def _prepare(
        self,
        latest: Snapshot | None,
        base_metas: list[ManifestFileMeta],
        deletes: list[ManifestEntry],
    ) -> tuple[Snapshot, list[str]]:
        """The snapshot after ``latest`` (its manifest lists written; the base merged into
        one manifest when ``manifest.merge-min-count`` says so) and the manifest files it
        wrote."""
        table = self.table
        written: list[str] = []
        previous_total: int | None = latest.total_record_count if latest is not None else 0
        merge = self.merge_manifests or len(base_metas) >= option_int(
            table.schema.options, "manifest.merge-min-count"
        )
        if latest is not None and (merge or previous_total is None):
            live = table.scan_files(latest)
            previous_total = sum(e.file.row_count for e in live)
            if merge:
                merged = write_manifest(
                    table.file_io,
                    table.path,
                    live,
                    table.partition_types,
                    table.schema.id,
                    self.codec,
                )
                written.append(merged.file_name)
                base_metas = [merged]
        base_name, base_size = write_manifest_list(
            table.file_io, table.path, base_metas, self.codec
        )
        delta_name, delta_size = write_manifest_list(
            table.file_io,
            table.path,
            [self.delta_meta] if self.delta_meta is not None else [],
            self.codec,
        )
        written += [base_name, delta_name]
        delta_records = sum(e.file.row_count for e in self.adds) - sum(
            e.file.row_count for e in deletes
        )
        schema_ids = table.schema_manager.list_ids()
        snapshot = Snapshot(
            id=self._next_id(latest),
            schema_id=schema_ids[-1] if schema_ids else table.schema.id,
            base_manifest_list=base_name,
            delta_manifest_list=delta_name,
            commit_kind=self.kind,
            total_record_count=(previous_total or 0) + delta_records,
            delta_record_count=delta_records,
            commit_user=self.identity.user,
            commit_identifier=self.identity.identifier,
            time_millis=int(time.time() * 1000),
            base_manifest_list_size=base_size,
            delta_manifest_list_size=delta_size,
            changelog_record_count=0,
            uuid=str(uuid.uuid4()),
        )
        return snapshot, written

    @staticmethod
    def _next_id(latest: Snapshot | None) -> int:
        return (latest.id + 1) if latest is not None else 1

    def _discard_delta(self) -> None:
        if self.delta_meta is not None:
            self.table.file_io.delete(f"{self.table.path}/manifest/{self.delta_meta.file_name}")
            self.delta_meta = None
