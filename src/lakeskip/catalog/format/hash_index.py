"""Paimon's ``HASH`` index files: the key hashes of one bucket of a dynamic-bucket table.

A primary-key table with ``bucket = -1`` (dynamic bucket mode) has no bucket function: which
bucket a key lives in is recorded, per (partition, bucket), in one index file holding the
``BinaryRow.hashCode()`` of every trimmed primary key written to that bucket (Paimon's
``HashIndexFile``; ``DynamicBucketIndexMaintainer`` restores the bucket's file, adds the hashes
of a write's keys and writes a new file when any was new)::

    <table>/index/index-<uuid>-0
    +------------+------------+-----+------------+
    | hash int32 | hash int32 | ... | hash int32 |   big-endian, no header, no order
    +------------+------------+-----+------------+

    index manifest entry: {_KIND 0 ADD, _PARTITION, _BUCKET, _INDEX_TYPE "HASH",
                           _FILE_NAME, _FILE_SIZE (bytes), _ROW_COUNT (hashes),
                           _DELETIONS_VECTORS_RANGES null}

A snapshot's index manifest lists one ``HASH`` file per (partition, bucket) that has ever had a
key written (a deleted key keeps its hash, as in Paimon: it would come back to the same bucket).
The bucket assigner (:mod:`lakeskip.catalog.pk.dynamic_bucket`) loads them to keep every key in
the bucket it already has. Readers of the data need none of it.

Example:
    >>> import numpy as np
    >>> decode_hashes(encode_hashes(np.array([1, -2], np.int32)), "f").tolist()
    [1, -2]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.bucket import _hash_rows
from lakeskip.catalog.format.deletion_vectors import INDEX_DIR, IndexFileMeta, new_index_file_name
from lakeskip.catalog.format.index_manifest import IndexManifestEntry
from lakeskip.catalog.format.manifest import FileKind
from lakeskip.errors import CommitConflictError, CorruptMetadataError
from lakeskip.types import DataType

__all__ = [
    "HASH_INDEX",
    "HashIndexChange",
    "combine_hash_entries",
    "decode_hashes",
    "encode_hashes",
    "hash_entries",
    "key_hashes",
    "merge_hash_changes",
    "read_hash_index",
    "write_hash_index",
]

HASH_INDEX = "HASH"
_BE_INT32 = np.dtype(">i4")

BucketKey = tuple[tuple[Any, ...], int]


def encode_hashes(hashes: np.ndarray) -> bytes:
    """The bytes of a ``HASH`` index file."""
    return np.ascontiguousarray(hashes, dtype=_BE_INT32).tobytes()


def decode_hashes(data: bytes, name: str) -> np.ndarray:
    """The int32 hashes of a ``HASH`` index file's bytes.

    Raises:
        CorruptMetadataError: the length is not a multiple of 4.
    """
    if len(data) % 4:
        raise CorruptMetadataError(
            f"hash index {name}: {len(data)} bytes is not a whole number of int32 hashes"
        )
    out: np.ndarray = np.frombuffer(data, dtype=_BE_INT32).astype(np.int32)
    return out


def write_hash_index(file_io: FileIO, table_path: str, hashes: np.ndarray) -> IndexFileMeta:
    """Write a new ``HASH`` index file under ``<table>/index/``; returns its record."""
    data = encode_hashes(hashes)
    name = new_index_file_name()
    file_io.write_bytes(f"{table_path}/{INDEX_DIR}/{name}", data)
    return IndexFileMeta(HASH_INDEX, name, len(data), len(hashes))


def read_hash_index(file_io: FileIO, table_path: str, meta: IndexFileMeta) -> np.ndarray:
    """The hashes of one ``HASH`` index file (raises CorruptMetadataError if missing/bad)."""
    path = meta.external_path or f"{table_path}/{INDEX_DIR}/{meta.file_name}"
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError as e:
        raise CorruptMetadataError(f"hash index {path} not found") from e
    hashes = decode_hashes(data, path)
    if len(hashes) != meta.row_count:
        raise CorruptMetadataError(
            f"hash index {path}: {len(hashes)} hashes, the index manifest says {meta.row_count}"
        )
    return hashes


def key_hashes(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]
) -> np.ndarray:
    """``BinaryRow.hashCode()`` of every row of the trimmed primary key (Arrow columns in key
    order): the hash Paimon's ``trimmedPrimaryKey(row).hashCode`` gives.

    >>> from lakeskip.types import INT
    >>> key_hashes([pa.array([42], pa.int32())], (INT,)).tolist()
    [907821237]
    """
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    if not arrays or len(arrays[0]) == 0:
        return np.empty(0, np.int32)
    return _hash_rows(arrays, types)


def hash_entries(entries: Iterable[IndexManifestEntry]) -> dict[BucketKey, IndexFileMeta]:
    """(partition, bucket) -> its ``HASH`` index file, over a snapshot's index entries."""
    return {
        (e.partition, e.bucket): e.index_file
        for e in entries
        if e.kind is FileKind.ADD and e.index_file.index_type == HASH_INDEX
    }


@dataclass(frozen=True, slots=True)
class HashIndexChange:
    """The ``HASH`` part of a commit.

    Attributes:
        files: new index files, each replacing its (partition, bucket)'s file.
        base: per partition the write assigned keys in, the ``HASH`` files it read
            ((bucket, file name) pairs): another commit that changed them in between could
            have put one of this write's new keys in another bucket, so the commit fails
            with CommitConflictError (and the write is retried).
        replace_all: the snapshot's ``HASH`` files are exactly ``files`` (rollback).
    """

    files: tuple[IndexManifestEntry, ...] = ()
    base: Mapping[tuple[Any, ...], frozenset[tuple[int, str]]] = field(default_factory=dict)
    replace_all: bool = False


def _partition_files(
    entries: Iterable[IndexManifestEntry], partition: tuple[Any, ...]
) -> frozenset[tuple[int, str]]:
    return frozenset(
        (e.bucket, e.index_file.file_name)
        for e in entries
        if e.index_file.index_type == HASH_INDEX and e.partition == partition
    )


def combine_hash_entries(
    identifier: str,
    previous: Sequence[IndexManifestEntry],
    change: HashIndexChange | None,
    dropped: Callable[[tuple[Any, ...]], bool] | None,
) -> list[IndexManifestEntry] | None:
    """The next snapshot's index entries after the ``HASH`` part of a commit, or ``None``
    when it changes nothing. ``dropped``: partitions an OVERWRITE replaces (their old hash
    files leave, unless the commit brings new ones).

    Raises:
        CommitConflictError: a partition's hash files changed since the write read them.
    """
    if change is not None:
        for partition, seen in change.base.items():
            if _partition_files(previous, partition) != seen:
                raise CommitConflictError(
                    f"commit to {identifier} conflicts: another commit changed the bucket "
                    "index (HASH) of a partition this write assigned keys in"
                )
    replaced = set() if change is None else {(e.partition, e.bucket) for e in change.files}
    replace_all = change is not None and change.replace_all
    if not replaced and not replace_all and dropped is None:
        return None
    out: list[IndexManifestEntry] = []
    removed = False
    for e in previous:
        if e.index_file.index_type == HASH_INDEX and (
            replace_all
            or (e.partition, e.bucket) in replaced
            or (dropped is not None and dropped(e.partition))
        ):
            removed = True
            continue
        out.append(e)
    if change is not None:
        out.extend(change.files)
    if not removed and (change is None or not change.files):
        return None
    return out


def merge_hash_changes(
    file_io: FileIO, table_path: str, a: HashIndexChange, b: HashIndexChange
) -> HashIndexChange:
    """Two writes' HASH changes committed together: where both wrote a file for the same
    (partition, bucket), one new file holds the union (each started from the same base)."""
    by_key = {(e.partition, e.bucket): e for e in a.files}
    for e in b.files:
        key = (e.partition, e.bucket)
        other = by_key.get(key)
        if other is None:
            by_key[key] = e
            continue
        both = np.union1d(
            read_hash_index(file_io, table_path, other.index_file),
            read_hash_index(file_io, table_path, e.index_file),
        ).astype(np.int32)
        meta = write_hash_index(file_io, table_path, both)
        by_key[key] = IndexManifestEntry(FileKind.ADD, e.partition, e.bucket, meta)
    base = dict(a.base)
    base.update(b.base)
    return HashIndexChange(tuple(by_key.values()), base, a.replace_all or b.replace_all)
