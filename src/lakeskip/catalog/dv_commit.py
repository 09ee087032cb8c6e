"""The index-manifest side of a commit: which DVs a snapshot keeps, replaces or drops.

Called by :meth:`~lakeskip.catalog.table.FileStoreTable.commit` for every attempt, against
the latest snapshot of that attempt::

    previous index manifest ──► drop DVs of data files deleted (and not re-added) by the commit
                            ──► replace DVs the commit sets (DeletionVectorUpdate.vectors)
                            ──► every index file touched is rewritten: its other DVs are
                                copied (re-checked) into one new index file per
                                (partition, bucket), with the new DVs
                            ──► new index manifest = untouched entries + new ADD entries

Index files are never modified in place; a touched one simply leaves the list (expiry and
orphan removal delete it once no snapshot names it). Conflicts: a DV the writer read
(``DeletionVectorUpdate.base``) that another commit replaced since, or a DV for a data file
that is no longer live, is :class:`~lakeskip.errors.CommitConflictError` -- merging blindly
would lose or resurrect deletes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.deletion_vectors import (
    DELETION_VECTORS_INDEX,
    INDEX_DIR,
    DeletionFile,
    DeletionVectorUpdate,
    IndexFileMeta,
    decode_vector,
    write_index_file,
)
from lakeskip.catalog.format.index_manifest import IndexManifestEntry, write_index_manifest
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry
from lakeskip.errors import CommitConflictError, CorruptDeletionVectorError
from lakeskip.types import DataType

__all__ = ["IndexChange", "deletion_files", "index_file_path", "plan_index_change"]


def index_file_path(table_path: str, f: IndexFileMeta) -> str:
    return f.external_path or f"{table_path}/{INDEX_DIR}/{f.file_name}"


def deletion_files(
    table_path: str, entries: Iterable[IndexManifestEntry]
) -> dict[str, DeletionFile]:
    """Data file name -> where its DV is, over a snapshot's index manifest entries."""
    out: dict[str, DeletionFile] = {}
    for e in entries:
        f = e.index_file
        if e.kind is not FileKind.ADD or f.index_type != DELETION_VECTORS_INDEX:
            continue
        path = index_file_path(table_path, f)
        for m in f.dv_ranges or ():
            out[m.data_file_name] = DeletionFile(path, f.file_name, m)
    return out


def _same_vector(file_io: FileIO, now: DeletionFile | None, read: BitMap | None) -> bool:
    """Whether a DV that moved to another index file still holds what the writer read."""
    if now is None or read is None or now.meta.cardinality not in (None, len(read)):
        return False
    try:
        data = file_io.read_bytes(now.path)
    except FileNotFoundError:
        return False
    return bool(decode_vector(data, now.meta, None, now.path) == read)


@dataclass(frozen=True, slots=True)
class IndexChange:
    """The index manifest a snapshot gets, and what this attempt wrote (to clean up)."""

    index_manifest: str | None
    written: tuple[str, ...]
    deleted_positions: int


def plan_index_change(
    file_io: FileIO,
    table_path: str,
    identifier: str,
    previous_manifest: str | None,
    previous: Sequence[IndexManifestEntry],
    live: Callable[[], list[ManifestEntry]],
    adds: Sequence[ManifestEntry],
    deletes: Sequence[ManifestEntry],
    update: DeletionVectorUpdate | None,
    partition_types: Sequence[DataType],
    codec: str,
) -> IndexChange:
    """Compute (and write) the index manifest of the next snapshot.

    Raises:
        CommitConflictError: a DV changed under the writer, or its data file is gone.
        CorruptDeletionVectorError: a DV to carry over cannot be read.
    """
    current = deletion_files(table_path, previous)
    added_names = {e.file.file_name for e in adds}
    if update is not None and update.seen is not None and adds:
        into = {(e.partition, e.bucket) for e in adds}
        other = sorted(
            e.file.file_name
            for e in live()
            if (e.partition, e.bucket) in into
            and e.file.file_name not in update.seen
            and e.file.file_name not in added_names
        )
        if other:
            raise CommitConflictError(
                f"commit to {identifier} conflicts: another commit wrote {len(other)} file(s) "
                f"into a bucket this write looked up (e.g. {other[0]})"
            )
    dropped = {e.file.file_name for e in deletes} - added_names
    if (update is None or not (update.vectors or update.base)) and not (dropped & current.keys()):
        return IndexChange(previous_manifest, (), 0)
    vectors = dict(update.vectors) if update is not None else {}
    by_name: dict[str, ManifestEntry] = {}
    if update is not None:
        for name, base in update.base.items():
            now = current[name].index_file if name in current else None
            if now != base and not _same_vector(file_io, current.get(name), update.read.get(name)):
                raise CommitConflictError(
                    f"commit to {identifier} conflicts: the deletion vector of {name} was "
                    "changed by another commit"
                )
        if vectors:
            by_name = {e.file.file_name: e for e in live()}
            by_name.update({e.file.file_name: e for e in adds})
            gone = sorted(n for n in vectors if n not in by_name or n in dropped)
            if gone:
                raise CommitConflictError(
                    f"commit to {identifier} conflicts: {len(gone)} data file(s) with new "
                    f"deletion vectors are no longer live (e.g. {gone[0]})"
                )
    changed = set(vectors) | (dropped & current.keys())
    touched = {current[n].index_file for n in changed if n in current}
    groups: dict[tuple[tuple[Any, ...], int], list[tuple[str, BitMap]]] = {}
    kept: list[IndexManifestEntry] = []
    cache: dict[str, bytes] = {}
    for e in previous:
        f = e.index_file
        if f.file_name not in touched:
            kept.append(e)
            continue
        path = index_file_path(table_path, f)
        for m in f.dv_ranges or ():
            if m.data_file_name in changed:
                continue
            if path not in cache:
                try:
                    cache[path] = file_io.read_bytes(path)
                except FileNotFoundError as err:
                    raise CorruptDeletionVectorError(
                        f"deletion vector index file {path} is missing"
                    ) from err
            bm = decode_vector(cache[path], m, None, path)
            groups.setdefault((e.partition, e.bucket), []).append((m.data_file_name, bm))
    deleted_positions = 0
    for name in sorted(vectors):
        bm = vectors[name]
        old = current.get(name)
        deleted_positions += len(bm) - (old.meta.cardinality or 0 if old is not None else 0)
        if len(bm):
            entry = by_name[name]
            groups.setdefault((entry.partition, entry.bucket), []).append((name, bm))
    written: list[str] = []
    new_entries: list[IndexManifestEntry] = []
    try:
        for (partition, bucket), items in groups.items():
            meta = write_index_file(file_io, table_path, items)
            written.append(f"{table_path}/{INDEX_DIR}/{meta.file_name}")
            new_entries.append(IndexManifestEntry(FileKind.ADD, partition, bucket, meta))
        entries = kept + new_entries
        manifest = None
        if entries:
            manifest = write_index_manifest(file_io, table_path, entries, partition_types, codec)
            written.append(f"{table_path}/manifest/{manifest}")
    except BaseException:
        for p in written:
            file_io.delete(p)
        raise
    return IndexChange(manifest, tuple(written), deleted_positions)
