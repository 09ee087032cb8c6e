"""The write path: rows are written by Spark tasks, the driver only commits.

Before the write, rows are aligned to the table (:mod:`lakeskip.spark.write.align`) and routed
to their bucket's task (:mod:`lakeskip.spark.write.routing`); after the commit, the written
buckets may be compacted (:mod:`lakeskip.spark.write.compact_on_write`).

``df.mapInArrow`` runs :class:`~lakeskip.catalog.write.data_writer.DataWriter` in every task: each
task writes its Parquet files (rolling at ``target-file-size``), their stats and file indexes,
and yields only the pickled manifest entries. The driver collects those small records and
commits one snapshot per statement. No data passes through the driver.
"""

from __future__ import annotations

import pickle
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import BinaryType, StructField, StructType

from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate, IndexFileMeta
from lakeskip.catalog.format.hash_index import HashIndexChange, hash_entries, merge_hash_changes
from lakeskip.catalog.format.index_manifest import IndexManifestEntry
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.parquet_options import parquet_write_options
from lakeskip.catalog.format.snapshot import CommitIdentity, CommitKind, Snapshot
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.options import check_writable, target_file_size
from lakeskip.catalog.pk.dynamic_bucket import BucketMode
from lakeskip.catalog.pk.primary_key import RowKind
from lakeskip.catalog.table import FileStoreTable, retry_on_conflict
from lakeskip.catalog.write.data_writer import DataWriter, next_sequences
from lakeskip.catalog.write.pk_dv_write import (
    BucketWrite,
    PkDvSpec,
    PkDvWriter,
    dv_update,
    pk_dv_spec,
)
from lakeskip.catalog.write.timings import WriteTimings
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import CommitConflictError
from lakeskip.sort.clustering import clustering_from_options
from lakeskip.spark.read.arrow_map import map_in_arrow

# align_by_position / align_by_name stay importable from here for spark/bridge/catalog_writes.py
# (left to its owner this session); new code imports them from spark/write/align.py
from lakeskip.spark.write.align import align_by_name, align_by_position
from lakeskip.spark.write.clustered import sort_dataframe
from lakeskip.spark.write.compact_on_write import compact_after_commit
from lakeskip.spark.write.routing import assign_dynamic_buckets, repartition_by_bucket

__all__ = [
    "WriteResult",
    "align_by_name",
    "align_by_position",
    "collect_entries",
    "commit_written",
    "join_written",
    "last_write_timings",
    "latest_write_timings",
    "write_dataframe",
    "write_entries",
]

# a StructType, not DDL: the JVM's parse of a DDL string is py4j round trips a write
_RESULT_SCHEMA = StructType(
    [StructField("entry", BinaryType()), StructField("timings", BinaryType())]
)
_RESULT_ARROW = pa.schema([("entry", pa.binary()), ("timings", pa.binary())])
_local = threading.local()
_LATEST: dict[str, WriteTimings] = {}  # the process's most recent write, from any thread


def _task(spec: WriteSpec | PkDvSpec):  # type: ignore[no-untyped-def]
    """The function shipped to tasks (a closure over the picklable spec). Each task yields
    one row per file written (its pickled manifest entry) and one row with its stage
    timings; on a deletion-vector primary-key table also one row per bucket written (its
    pickled :class:`BucketWrite`: DVs set, files removed)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        prefix = str(uuid.uuid4())
        entries: list[object]
        match spec:
            case PkDvSpec():
                dv_writer = PkDvWriter(spec, prefix)
                writer: DataWriter = dv_writer
                entries = [*dv_writer.write_batches(batches), *dv_writer.changes]
            case WriteSpec():
                writer = DataWriter(spec, prefix)
                entries = list(writer.write_batches(batches))
            case _:
                assert_never(spec)
        entries.extend(writer.hash_index)
        dump = pickle.HIGHEST_PROTOCOL
        yield pa.RecordBatch.from_pydict(
            {
                "entry": [pickle.dumps(e, protocol=dump) for e in entries] + [None],
                "timings": [None] * len(entries) + [pickle.dumps(writer.timings(), protocol=dump)],
            },
            schema=_RESULT_ARROW,
        )

    return run


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write put down, for its commit (:func:`commit_written` puts it all in one
    snapshot).

    Attributes:
        added: ADD entries of the new files.
        removed: live files the write removes (a primary-key table read raw: every row of
            the file now deleted, or compacted into ``added``).
        vectors: the DV part of the commit (``None``: none).
        marked: live rows the write marked deleted (DELETE: the rows deleted).
        emptied: how many of ``removed`` left because every row is now deleted; the others
            were compacted (rewritten into the added files).
        hash_index: dynamic-bucket tables: the buckets' new HASH index files.
    """

    added: tuple[ManifestEntry, ...] = ()
    removed: tuple[ManifestEntry, ...] = ()
    vectors: DeletionVectorUpdate | None = None
    marked: int = 0
    emptied: int = 0
    hash_index: HashIndexChange | None = None

    @property
    def changed(self) -> bool:
        """Whether committing it changes the table."""
        return bool(
            self.added or self.removed or self.vectors is not None or self.hash_index is not None
        )

    @property
    def files_rewritten(self) -> int:
        """Older files compacted into the added ones."""
        return len(self.removed) - self.emptied

    @property
    def files_marked(self) -> int:
        """Older files whose rows were marked deleted: given a new DV, or (every row deleted)
        removed."""
        return (len(self.vectors.vectors) if self.vectors is not None else 0) + self.emptied


def commit_written(
    table: FileStoreTable,
    written: WriteResult,
    kind: CommitKind = CommitKind.APPEND,
    overwrite_partitions: Sequence[tuple[Any, ...]] | None = None,
    *,
    concurrent_check: Callable[[Snapshot | None], None] | None = None,
    identity: CommitIdentity | None = None,
) -> Snapshot | None:
    """Commit what :func:`write_entries` wrote: with the files it removes and the DVs it
    set (primary-key tables read raw) and the HASH index files it wrote (dynamic bucket)
    in the same snapshot. ``concurrent_check``, ``identity``: as
    :meth:`~lakeskip.catalog.table.FileStoreTable.commit`'s."""
    if kind is CommitKind.APPEND and (written.removed or written.vectors is not None):
        # files leave the table: an OVERWRITE that replaces no partition
        kind, overwrite_partitions = CommitKind.OVERWRITE, []
    snapshot = table.commit(
        written.added,
        deleted=written.removed,
        kind=kind,
        overwrite_partitions=overwrite_partitions,
        deletion_vectors=written.vectors,
        concurrent_check=concurrent_check,
        hash_index=written.hash_index,
        identity=identity,
    )
    if snapshot is not None:
        compact_after_commit(table, written.added)
    return snapshot


def join_written(table: FileStoreTable, parts: Sequence[WriteResult]) -> WriteResult:
    """Several writes of one statement (MERGE on a primary-key table read by merge), to be
    committed together: their files, and their HASH index files (two writes that added hashes
    to the same bucket give one file with both)."""
    added: list[ManifestEntry] = []
    change: HashIndexChange | None = None
    for p in parts:
        added.extend(p.added)
        h = p.hash_index
        if h is not None:
            change = (
                h if change is None else merge_hash_changes(table.file_io, table.path, change, h)
            )
    return WriteResult(tuple(added), hash_index=change)


def last_write_timings() -> WriteTimings | None:
    """Stage timings of the most recent write (INSERT, CTAS, ``Session.write``, sort
    compaction) run from this thread, summed over its tasks; ``None`` before any write.

    >>> last_write_timings() is None or isinstance(last_write_timings(), WriteTimings)
    True
    """
    timings: WriteTimings | None = getattr(_local, "timings", None)
    return timings


def latest_write_timings() -> WriteTimings | None:
    """Stage timings of the most recent write of this process, from whichever thread ran it
    (``spark.sql("INSERT ...")`` writes from the thread that answers the JVM's callbacks, so
    :func:`last_write_timings` of the caller's thread does not see it); for benchmarks.

    >>> latest_write_timings() is None or isinstance(latest_write_timings(), WriteTimings)
    True
    """
    return _LATEST.get("timings")


def collect_entries(
    table: FileStoreTable,
    df: DataFrame,
    level: int = 0,
    value_kind: RowKind = RowKind.INSERT,
    *,
    fresh: bool = False,
    mixed: bool = False,
    hash_index: Mapping[tuple[tuple[Any, ...], int], IndexFileMeta] | None = None,
) -> WriteResult:
    """Run the write tasks and bring back what they wrote (metadata only).

    By the table's kind: an append table's rows go to new files at ``level``; on a
    primary-key table every row is written as a version of kind ``value_kind`` with
    sequence numbers after the bucket's existing ones; read raw (deletion vectors,
    first-row), the older versions of the written keys are also marked deleted
    (:mod:`lakeskip.catalog.write.pk_dv_write`). ``fresh``: INSERT OVERWRITE (no lookup).
    ``hash_index``: dynamic-bucket tables (``df`` ends with each row's bucket): the buckets'
    HASH index files the assigner read; the result carries the new ones."""
    spec: WriteSpec | PkDvSpec
    dv_spec: PkDvSpec | None = None  # the lookup's state: the commit's DV part comes from it
    kind = table.kind
    match kind:
        case Append() | AppendDv():
            spec = WriteSpec(
                file_io=table.file_io, table_path=table.path, schema=table.schema, level=level
            )
        case PkMerge():
            spec = _versions_spec(table, value_kind, hash_index, fresh)
        case PkRaw():
            spec = dv_spec = pk_dv_spec(
                table,
                _versions_spec(table, value_kind, hash_index, fresh),
                fresh=fresh,
                mixed=mixed,
            )
        case _:
            assert_never(kind)
    rows = map_in_arrow(df, _task(spec), _RESULT_SCHEMA).collect()
    entries: list[ManifestEntry] = []
    changes: list[BucketWrite] = []
    hashes: list[IndexManifestEntry] = []
    timings = WriteTimings()
    for r in rows:
        if r["entry"] is not None:
            item = pickle.loads(bytes(r["entry"]))
            if isinstance(item, BucketWrite):
                changes.append(item)
            elif isinstance(item, IndexManifestEntry):
                hashes.append(item)
            else:
                entries.append(item)
        else:
            timings = timings + pickle.loads(bytes(r["timings"]))
    _local.timings = timings
    _LATEST["timings"] = timings
    change = None
    if hash_index is not None:
        change = hash_change(hashes, hash_index, fresh)
    return WriteResult(
        tuple(entries),
        tuple(e for c in changes for e in c.removed),
        dv_update(dv_spec, changes) if dv_spec is not None else None,
        sum(c.marked for c in changes),
        sum(c.emptied for c in changes),
        hash_index=change,
    )


def hash_change(
    written: Sequence[IndexManifestEntry],
    read: Mapping[tuple[tuple[Any, ...], int], IndexFileMeta],
    fresh: bool,
) -> HashIndexChange:
    """The HASH part of a write's commit: the new files, and per partition they are in the
    files the assigner read (the commit's conflict check; none for INSERT OVERWRITE)."""
    base: dict[tuple[Any, ...], frozenset[tuple[int, str]]] = {}
    if not fresh:
        for p in {e.partition for e in written}:
            base[p] = frozenset((b, m.file_name) for (q, b), m in read.items() if q == p)
    return HashIndexChange(tuple(written), base)


def _versions_spec(
    table: FileStoreTable,
    value_kind: RowKind,
    hash_index: Mapping[tuple[tuple[Any, ...], int], IndexFileMeta] | None,
    fresh: bool,
) -> WriteSpec:
    """A primary-key table's write: versions of kind ``value_kind`` at level 0, numbered
    after each bucket's largest sequence number (dynamic bucket: with the HASH index files
    the assigner read, none for INSERT OVERWRITE)."""
    return WriteSpec(
        file_io=table.file_io,
        table_path=table.path,
        schema=table.schema,
        level=0,
        value_kind=value_kind,
        next_sequence=next_sequences(
            table.schema, table.scan_files() if table.latest_snapshot() else []
        ),
        hash_index=None if hash_index is None else ({} if fresh else dict(hash_index)),
    )


def write_entries(
    table: FileStoreTable,
    df: DataFrame,
    value_kind: RowKind = RowKind.INSERT,
    *,
    fresh: bool = False,
    mixed: bool = False,
) -> WriteResult:
    """Write ``df`` (already aligned to the table) as data files in Spark tasks, without the
    commit: sorted on the clustering key when the table has write-time clustering, else
    grouped by bucket on fixed-bucket tables. Shared by INSERT and DELETE/UPDATE.
    ``mixed`` (MERGE on a DV primary-key table): ``df`` has a trailing
    :data:`~lakeskip.catalog.write.pk_dv_write.DELETE_FLAG` column; flagged keys are only marked."""
    check_writable(table.schema.options)  # before any file is written (the commit checks too)
    schema = table.schema
    kind = table.kind
    match kind:
        case Append() | AppendDv():
            cluster = clustering_from_options(
                schema.options, schema.row_type, schema.partition_keys
            )
        case PkMerge() | PkRaw():  # a bucket must be written by one task (sequence numbers)
            cluster = None
        case _:
            assert_never(kind)
    if cluster is not None and not cluster.incremental:  # new files come out sorted
        # (clustering.incremental = true: writes stay unsorted, as Paimon's; compaction
        # clusters the new files and the clustered files they overlap)
        df = sort_dataframe(  # n_out None: as many ranges as df has partitions
            df,
            schema.row_type,
            schema.partition_keys,
            cluster.strategy,
            cluster.columns,
            cluster.var_length_contribution,
            None,
            cluster.curve_keys,
            parquet=parquet_write_options(schema.options, schema.row_type),
            target_file_size=target_file_size(schema.options),
        )
    elif kind.bucket is BucketMode.DYNAMIC:
        index = hash_entries(table.index_entries(table.latest_snapshot()))
        df = assign_dynamic_buckets(df, table, index, mixed=mixed, fresh=fresh)
        return collect_entries(
            table, df, value_kind=value_kind, fresh=fresh, mixed=mixed, hash_index=index
        )
    else:
        df = repartition_by_bucket(df, table, mixed)
    return collect_entries(table, df, value_kind=value_kind, fresh=fresh, mixed=mixed)


def write_dataframe(
    table: FileStoreTable,
    df: DataFrame,
    *,
    overwrite: bool = False,
    static_partition: Mapping[str, Any] | None = None,
    overwrite_partitions: Sequence[tuple[Any, ...]] | None = None,
    overwrite_all: bool = False,
    identity: CommitIdentity | None = None,
) -> Snapshot | None:
    """Write an aligned DataFrame (columns already in table order and types) and commit.

    Args:
        table: the target table.
        df: rows to write, aligned with :func:`align_by_position` or :func:`align_by_name`.
        overwrite: replace data instead of appending. On a partitioned table this replaces the
            partitions the new rows land in (dynamic overwrite), or just ``static_partition``.
        static_partition: ``INSERT OVERWRITE t PARTITION (k=v)`` values.
        overwrite_partitions: replace exactly these partitions (full value tuples).
        overwrite_all: replace the whole table, also when it is partitioned.
        identity: the commit's user and identifier (a streaming query's micro-batch): a
            write whose identity the table already holds writes nothing, and one that
            finds it there at commit time (a concurrent run of the same batch) removes
            what it wrote (:meth:`~lakeskip.catalog.table.FileStoreTable.commit`).

    Returns:
        The committed snapshot, or ``None`` when nothing changed (or ``identity`` was
        committed already).

    A commit that conflicts (a deletion-vector primary-key write whose lookup another
    commit made stale) removes what it wrote and writes again against the latest snapshot
    (:func:`~lakeskip.catalog.table.retry_on_conflict`).
    """

    def attempt() -> Snapshot | None:
        if identity is not None and table.committed(identity):
            return None
        written = write_entries(table, df, fresh=overwrite)
        try:
            snapshot = _commit_write(
                table,
                written,
                overwrite,
                static_partition,
                overwrite_partitions,
                overwrite_all,
                identity,
            )
        except CommitConflictError:  # nothing was published
            table.remove_unpublished(written.added)
            raise
        if snapshot is None and identity is not None:  # committed meanwhile: not published
            table.remove_unpublished(written.added)
        return snapshot

    return retry_on_conflict(table, attempt)


def _commit_write(
    table: FileStoreTable,
    written: WriteResult,
    overwrite: bool,
    static_partition: Mapping[str, Any] | None,
    overwrite_partitions: Sequence[tuple[Any, ...]] | None,
    overwrite_all: bool,
    identity: CommitIdentity | None,
) -> Snapshot | None:
    if not overwrite:
        if not written.added and not written.removed:
            return None
        return commit_written(table, written, identity=identity)
    entries = written.added  # INSERT OVERWRITE replaces the old files: no lookup was made
    hashes = written.hash_index
    partitions: Sequence[tuple[Any, ...]] | None = None
    keys = list(table.schema.partition_keys)
    if overwrite_all:
        partitions = None
    elif overwrite_partitions is not None:
        partitions = list(overwrite_partitions)
    elif keys:
        if static_partition:
            partitions = [tuple(static_partition[k] for k in keys)]
        else:
            partitions = sorted({e.partition for e in entries}, key=repr)
            if not partitions:
                return None
    snapshot = table.commit(
        entries,
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=partitions,
        hash_index=hashes,
        identity=identity,
    )
    if snapshot is not None:  # as after any write (Paimon's writer compacts an overwrite too)
        compact_after_commit(table, entries)
    return snapshot
