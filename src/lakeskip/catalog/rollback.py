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
* Tables whose current or target snapshot has deletion vectors are refused (the DV state
  would have to be restored too; not done yet).
* The target's files must still exist: a snapshot that is neither current nor tagged may
  have been expired, and its files with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakeskip.catalog.deletion_vectors import DELETION_VECTORS_INDEX
from lakeskip.catalog.snapshot import CommitKind, Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CorruptMetadataError, InvalidArgumentError

__all__ = ["RollbackResult", "rollback_to"]


@dataclass(frozen=True, slots=True)
class RollbackResult:
    """``snapshot``: the new snapshot (``None``: the table already had the target's files)."""

    snapshot: Snapshot | None
    files_added: int
    files_deleted: int


def _has_dvs(table: FileStoreTable, snapshot: Snapshot | None) -> bool:
    return any(
        e.index_file.index_type == DELETION_VECTORS_INDEX for e in table.index_entries(snapshot)
    )


def rollback_to(table: FileStoreTable, target: Snapshot) -> RollbackResult:
    """Make the table's files those of ``target`` again, in one new snapshot.

    Raises:
        InvalidArgumentError: deletion vectors in the current or target snapshot.
        CorruptMetadataError: a file of the target no longer exists.
        CommitConflictError: a concurrent commit removed a file this one deletes.
    """
    latest = table.latest_snapshot()
    if latest is None:
        raise InvalidArgumentError(f"{table.identifier} has no snapshot to roll back")
    if _has_dvs(table, latest) or _has_dvs(table, target):
        raise InvalidArgumentError(
            f"rollback of {table.identifier}: tables with deletion vectors are not supported "
            "yet (read the old version with VERSION AS OF and INSERT OVERWRITE it)"
        )
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
    snapshot = table.commit(added, deleted, kind=CommitKind.OVERWRITE, overwrite_partitions=[])
    return RollbackResult(snapshot, len(added), len(deleted))
