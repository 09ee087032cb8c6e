"""Roll a table back to an earlier snapshot (or a tag) by committing a new snapshot.

Paimon's ``rollbackTo`` deletes every newer snapshot and the files only they used; a
writer committing meanwhile can then lose its commit, and time travel to the newer
snapshots is gone. lakeskip commits instead one OVERWRITE snapshot whose files are the
target's (the files the newer snapshots added are deleted from the table, the files they
removed are added back, entries unchanged), as Delta's RESTORE does: atomic like any commit,
nothing is lost (the newer snapshots stay readable until ``expire_snapshots``), and Paimon
readers see an ordinary snapshot.

* A commit racing the rollback that removed or rewrote a file the rollback deletes is a
  :class:`CommitConflictError` (the table is unchanged); files *appended* by a racing commit
  stay, as with any concurrent append.
* Deletion vectors are restored too: each of the target's files gets back the DV it had
  there (a DELETE committed meanwhile on one of them is a conflict, not a lost delete).
* The target's files must still exist: a snapshot that is neither current nor tagged may
  have been expired, and its files with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyroaring import BitMap

from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import CommitKind, Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CorruptMetadataError, InvalidArgumentError

__all__ = ["RollbackResult", "rollback_to"]


@dataclass(frozen=True, slots=True)
class RollbackResult:
    """``snapshot``: the new snapshot (``None``: the table already had the target's files)."""

    snapshot: Snapshot | None
    files_added: int
    files_deleted: int


def _vectors(
    table: FileStoreTable,
    latest: Snapshot,
    target: Snapshot,
    want: dict[tuple[object, ...], ManifestEntry],
    have: dict[tuple[object, ...], ManifestEntry],
) -> DeletionVectorUpdate | None:
    """The DVs that make the target's files read as they did in the target: its DV for a
    file added back, and for a file in both snapshots its DV where the latest's differs
    (an empty bitmap removes one the target did not have). ``base`` and ``read`` carry
    the latest's DVs, so a DELETE committed meanwhile is a conflict, not lost."""
    ours = table.deletion_files(target)
    theirs = table.deletion_files(latest)
    if not ours and not theirs:
        return None
    vectors: dict[str, BitMap] = {}
    base: dict[str, str | None] = {}
    read: dict[str, BitMap] = {}
    for key, e in want.items():
        name = e.file.file_name
        ref = ours.get(name)
        if key in have and ref == theirs.get(name):
            continue  # the same DV (or none) in both snapshots: nothing to read or restore
        dv = table.read_deletion_vector(ref, e.file.row_count) if ref is not None else BitMap()
        now_ref = theirs.get(name) if key in have else None
        now = (
            table.read_deletion_vector(now_ref, e.file.row_count)
            if now_ref is not None
            else BitMap()
        )
        if dv == now:
            continue
        vectors[name] = dv
        base[name] = now_ref.index_file if now_ref is not None else None
        if now_ref is not None:
            read[name] = now
    return DeletionVectorUpdate(vectors, base, read) if vectors else None


def rollback_to(table: FileStoreTable, target: Snapshot) -> RollbackResult:
    """Make the table's files (and deletion vectors) those of ``target`` again, in one new
    snapshot.

    Raises:
        InvalidArgumentError: the table has no snapshot.
        CorruptMetadataError: a file of the target no longer exists.
        CorruptDeletionVectorError: a DV of the target cannot be read.
        CommitConflictError: a concurrent commit removed a file this one deletes, or
            changed a DV this one restores.
    """
    latest = table.latest_snapshot()
    if latest is None:
        raise InvalidArgumentError(f"{table.identifier} has no snapshot to roll back")
    want = {e.identifier: e for e in table.scan_files(target)}
    have = {e.identifier: e for e in table.scan_files(latest)}
    added = [e for k, e in want.items() if k not in have]
    deleted = [e for k, e in have.items() if k not in want]
    for e in added:
        path = table.data_file_path(e)
        if not table.file_io.exists(path):
            raise CorruptMetadataError(
                f"rollback of {table.identifier} to snapshot {target.id}: its file {path} "
                "no longer exists (expired?)"
            )
    dv = _vectors(table, latest, target, want, have)
    # merged base manifest: the files added back were DELETEd in earlier manifests, and
    # pypaimon drops an ADD whose identifier any manifest of the snapshot deletes
    snapshot = table.commit(
        added,
        deleted,
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=[],
        deletion_vectors=dv,
        merge_manifests=bool(added),
    )
    return RollbackResult(snapshot, len(added), len(deleted))
