"""Compaction's shared machinery, for ``CALL sys.compact`` (:mod:`lakeskip.procedures.compact`)
and for the compaction writers run after their commits (:mod:`lakeskip.spark.write`):

* bins of small files (:func:`plan_bins`; a fixed-bucket append table's full compaction,
  :func:`plan_append_full`), concatenated in tasks by :func:`rewrite_bin`;
* the DVs of the files compacted (:func:`compact_vectors`: applied while reading, the
  commit's base) and the one COMPACT snapshot that replaces them (:func:`commit_compaction`);
* what runs after a write: :func:`compact_pk_buckets`, :func:`compact_append_buckets`,
  :func:`compact_small_files`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

import pyarrow.parquet as pq
from pyroaring import BitMap

from lakeskip.catalog.field_mapping import arrow_by_id
from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate, drop_deleted
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import CommitKind, Snapshot
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.options import COMPACTION_MIN_FILE_NUM, option_int, target_file_size
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import DataWriter
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import CommitConflictError
from lakeskip.index.primitives.roaring import serialize_bitmap
from lakeskip.procedures.base import Executor, SortSpec
from lakeskip.procedures.pk_compact import BucketTask
from lakeskip.procedures.sort_rewrite import CURVE_STRATEGIES, rewrite_sorted_in_tasks
from lakeskip.sort.clustering import clustering_from_options
from lakeskip.types import RowType

__all__ = [
    "SMALL_FILE_RATIO",
    "BinTask",
    "CompactVectors",
    "commit_compaction",
    "compact_append_buckets",
    "compact_pk_buckets",
    "compact_small_files",
    "compact_vectors",
    "plan_append_full",
    "plan_bins",
    "rewrite_bin",
    "rewrite_sorted",
    "stored_types",
]

SMALL_FILE_RATIO = 0.7


def plan_bins(
    entries: Sequence[ManifestEntry], target: int, with_deletes: frozenset[str] = frozenset()
) -> list[list[ManifestEntry]]:
    """Group small files per partition (and bucket, on fixed-bucket tables) into bins of
    about ``target`` bytes (>= 2 files each). Files named in ``with_deletes`` (they have
    deletion vectors) are rewritten whatever their size, alone if need be, to drop the
    deleted rows.

    >>> plan_bins([], 100)
    []
    """
    by_partition: dict[tuple[Any, ...], list[ManifestEntry]] = defaultdict(list)
    for e in entries:
        if e.file.file_size < target * SMALL_FILE_RATIO or e.file.file_name in with_deletes:
            by_partition[(*e.partition, e.bucket)].append(e)
    bins: list[list[ManifestEntry]] = []
    for files in by_partition.values():
        files.sort(key=lambda e: e.file.file_name)
        current: list[ManifestEntry] = []
        size = 0
        for e in files:
            if current and size + e.file.file_size > target:
                bins.append(current)
                current, size = [], 0
            current.append(e)
            size += e.file.file_size
        bins.append(current)
    return [b for b in bins if len(b) >= 2 or any(e.file.file_name in with_deletes for e in b)]


FULL_COMPACT_MIN_FILE = 3  # Paimon's BucketedAppendCompactManager


def plan_append_full(entries: Sequence[ManifestEntry], target: int) -> list[list[ManifestEntry]]:
    """The full compaction of a fixed-bucket append table's buckets (``entries``: their live
    files), as Paimon's ``BucketedAppendCompactManager.FullCompactTask`` without deletion
    vectors: per (partition, bucket), the files in write order (min sequence number, then
    creation time, then name); the leading files of at least ``target`` *
    ``SMALL_FILE_RATIO`` bytes stay; the rest are one bin (concatenated in that order) when
    they are at least 3 files and the small ones outnumber the big ones, else the bucket is
    left alone.

    >>> plan_append_full([], 100)
    []
    """
    small_below = target * SMALL_FILE_RATIO
    by_bucket: dict[tuple[Any, ...], list[ManifestEntry]] = defaultdict(list)
    for e in entries:
        by_bucket[(*e.partition, e.bucket)].append(e)
    bins = []
    for _, files in sorted(by_bucket.items(), key=lambda kv: repr(kv[0])):
        files.sort(
            key=lambda e: (
                e.file.min_sequence_number,
                e.file.creation_time or 0,
                e.file.file_name,
            )
        )
        first = 0
        while first < len(files) and files[first].file.file_size >= small_below:
            first += 1
        rest = files[first:]
        small = sum(1 for e in rest if e.file.file_size < small_below)
        if len(rest) >= FULL_COMPACT_MIN_FILE and small > len(rest) - small:
            bins.append(rest)
    return bins


@dataclass(frozen=True, slots=True)
class BinTask:
    spec: WriteSpec
    files: tuple[tuple[str, ManifestEntry], ...]  # (path, entry)
    deleted: tuple[bytes | None, ...] = ()  # per file: its deletion vector (portable bitmap)
    #: the row types of the older schema versions the files were written with, by schema
    #: id: their columns are matched to the current schema by field id (a renamed column)
    stored: Mapping[int, RowType] = field(default_factory=dict)


def stored_types(table: FileStoreTable, entries: Sequence[ManifestEntry]) -> dict[int, RowType]:
    """The row types of the schema versions, other than the current one, of ``entries``."""
    current = table.schema.id
    ids = {e.file.schema_id for e in entries} - {current}
    return {i: table.schema_by_id(i).row_type for i in sorted(ids)}


@dataclass(frozen=True, slots=True)
class CompactVectors:
    """The DVs of the files being compacted: applied while reading, and the commit's base."""

    deleted: dict[str, bytes]
    update: DeletionVectorUpdate | None


def compact_vectors(
    table: FileStoreTable, snapshot: Snapshot | None, entries: Sequence[ManifestEntry]
) -> CompactVectors:
    """Read (and check) the DVs of ``entries``; the commit then drops them and fails if
    another commit changed any of them (or gave one of the files a DV) meanwhile."""
    refs = table.deletion_files(snapshot) if snapshot is not None else {}
    kind = table.kind
    match kind:
        case AppendDv():
            may_gain_dvs = True  # the commit checks that no file got a DV meanwhile
        case PkRaw(deletion_vectors=dv):
            may_gain_dvs = dv
        case Append() | PkMerge():
            may_gain_dvs = False
        case _:
            assert_never(kind)
    if not refs and not may_gain_dvs:
        return CompactVectors({}, None)
    deleted: dict[str, bytes] = {}
    base: dict[str, str | None] = {}
    read: dict[str, BitMap] = {}
    for e in entries:
        ref = refs.get(e.file.file_name)
        base[e.file.file_name] = ref.index_file if ref is not None else None
        if ref is not None:
            bm = table.read_deletion_vector(ref, e.file.row_count)
            read[e.file.file_name] = bm
            deleted[e.file.file_name] = serialize_bitmap(bm)
    return CompactVectors(deleted, DeletionVectorUpdate({}, base, read))


def rewrite_bin(task: BinTask) -> list[ManifestEntry]:
    """Concatenate one bin's files into new rolling files (runs in a task)."""
    writer = DataWriter(task.spec)
    row_type = task.spec.schema.row_type
    names = row_type.names
    for i, (path, entry) in enumerate(task.files):
        with task.spec.file_io.open_input(path) as src:
            data = pq.read_table(src)
        data = drop_deleted(data, task.deleted[i] if task.deleted else None, path)
        stored = task.stored.get(entry.file.schema_id)
        if stored is not None:  # an older schema version: columns by field id
            data = arrow_by_id(data, stored, row_type)
        missing = [n for n in names if n not in data.column_names]
        for n in missing:  # a column added after this file was written
            import pyarrow as pa

            t = task.spec.schema.row_type.field(n).type.to_arrow()
            data = data.append_column(n, pa.nulls(data.num_rows, t))
        writer.write(data.select(names))
    return writer.close()


def rewrite_sorted(
    table: FileStoreTable,
    files: Sequence[ManifestEntry],
    sort: SortSpec,
    executor: Executor,
    deleted: Mapping[str, bytes],
) -> list[ManifestEntry]:
    """Curve keys are sorted in plain tasks (:mod:`lakeskip.procedures.sort_rewrite`, no
    shuffle of Spark rows); ``order`` sorts on the columns with Spark's ordering, in Spark.
    Rows deleted by a deletion vector are dropped either way."""
    if sort.strategy in CURVE_STRATEGIES:
        return rewrite_sorted_in_tasks(table, files, sort, executor, deleted=deleted)
    if deleted:
        return executor.rewrite_sorted(table, files, sort, deleted)
    return executor.rewrite_sorted(table, files, sort)


def commit_compaction(
    table: FileStoreTable,
    old: Sequence[ManifestEntry],
    new: Sequence[ManifestEntry],
    update: DeletionVectorUpdate | None,
) -> int | None:
    """Replace ``old`` by ``new`` in one COMPACT snapshot that drops ``old``'s DVs (none when
    nothing was compacted); the snapshot id."""
    if not old:
        return None
    try:
        snap = table.commit(
            list(new), deleted=old, kind=CommitKind.COMPACT, deletion_vectors=update
        )
    except CommitConflictError:  # nothing was published: the new files go
        table.remove_unpublished(new)
        raise
    return snap.id if snap is not None else None


def compact_pk_buckets(
    table: FileStoreTable,
    snapshot: Snapshot | None,
    entries: Sequence[ManifestEntry],
    plan: Callable[[dict[str, bytes]], list[BucketTask]],
    run: Callable[[list[BucketTask]], Sequence[Sequence[ManifestEntry]]],
) -> tuple[list[ManifestEntry], list[ManifestEntry], int | None]:
    """Compact buckets of a primary-key table in one COMPACT snapshot: ``plan`` gets the DVs
    of ``entries`` (file name -> portable bitmap bytes) and gives the bucket tasks, ``run``
    merges them (:func:`~lakeskip.procedures.pk_compact.compact_bucket` in Spark tasks); the
    commit drops the compacted files and their DVs. Returns (files removed, files added,
    the snapshot id or ``None`` when nothing was compacted).

    Raises:
        CommitConflictError: a compacted file or its DV changed meanwhile (the new files
            are removed).
    """
    vectors = compact_vectors(table, snapshot, entries)
    tasks = plan(vectors.deleted)
    if not tasks:
        return [], [], None
    results = run(tasks)
    old = [e for t in tasks for _, e in t.files]
    new = [e for r in results for e in r]
    update = vectors.update
    if update is not None:  # only the compacted files' DVs are the commit's base
        names = {e.file.file_name for e in old}
        update = DeletionVectorUpdate(
            {},
            {n: b for n, b in update.base.items() if n in names},
            {n: v for n, v in update.read.items() if n in names},
        )
    return old, new, commit_compaction(table, old, new, update)


def compact_append_buckets(
    table: FileStoreTable,
    entries: Sequence[ManifestEntry],
    run: Callable[[list[BinTask]], Sequence[Sequence[ManifestEntry]]],
) -> tuple[list[ManifestEntry], list[ManifestEntry], int | None]:
    """Fully compact the buckets of a fixed-bucket append table that ``entries`` (their live
    files) belong to (:func:`plan_append_full`), ``run`` rewriting the bins (:func:`rewrite_bin`
    in Spark tasks), in one COMPACT snapshot. Returns (files removed, files added, the
    snapshot id or ``None`` when nothing was compacted).

    Raises:
        CommitConflictError: a compacted file was removed meanwhile (the new files are
            removed).
    """
    bins = plan_append_full(entries, target_file_size(table.schema.options))
    if not bins:
        return [], [], None
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    tasks = [
        BinTask(spec, tuple((table.data_file_path(e), e) for e in b), (), stored_types(table, b))
        for b in bins
    ]
    old = [e for b in bins for e in b]
    new = [e for r in run(tasks) for e in r]
    return old, new, commit_compaction(table, old, new, None)


def compact_small_files(
    table: FileStoreTable,
    snapshot: Snapshot,
    partitions: Sequence[tuple[Any, ...]],
    executor: Executor,
) -> tuple[list[ManifestEntry], list[ManifestEntry], int | None]:
    """The size-based compaction Paimon runs for streaming writes into unaware-bucket append
    tables (its ``AppendCompactCoordinator``), for the partitions a write touched: a
    partition's small files (under 70 % of ``target-file-size``) are compacted once there
    are ``compaction.min.file-num`` of them, bin-packed into files of about
    ``target-file-size`` (:func:`plan_bins`), or, on a table with write-time clustering,
    rewritten sorted on the clustering columns, so the new files stay prunable. One COMPACT
    snapshot. Returns (files removed, files added, snapshot id or ``None``).

    Raises:
        CommitConflictError: a compacted file was removed (or given a DV) meanwhile.
    """
    options = table.schema.options
    target = target_file_size(options)
    least = option_int(options, COMPACTION_MIN_FILE_NUM)
    wanted = set(partitions)
    small: dict[tuple[Any, ...], list[ManifestEntry]] = defaultdict(list)
    for e in table.scan_files(snapshot):
        if e.partition in wanted and e.file.file_size < target * SMALL_FILE_RATIO:
            small[e.partition].append(e)
    old = [e for files in small.values() if len(files) >= least for e in files]
    if not old:
        return [], [], None
    vectors = compact_vectors(table, snapshot, old)
    schema = table.schema
    cluster = clustering_from_options(options, schema.row_type, schema.partition_keys)
    if cluster is not None:
        sort = SortSpec(
            cluster.strategy, cluster.columns, cluster.var_length_contribution, cluster.curve_keys
        )
        new = rewrite_sorted(table, old, sort, executor, vectors.deleted)
    else:
        spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=schema)
        tasks = [
            BinTask(
                spec,
                tuple((table.data_file_path(e), e) for e in b),
                tuple(vectors.deleted.get(e.file.file_name) for e in b),
                stored_types(table, b),
            )
            for b in plan_bins(old, target)
        ]
        results = executor.map(rewrite_bin, tasks, f"compact {table.identifier} (small files)")
        new = [e for r in results for e in r]
        done = {e.file.file_name for t in tasks for _, e in t.files}
        old = [e for e in old if e.file.file_name in done]
    return old, new, commit_compaction(table, old, new, vectors.update)
