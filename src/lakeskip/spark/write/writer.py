"""The write path: rows are written by Spark tasks, the driver only commits.

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
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakeskip.catalog.format.bucket import bucket_ids
from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate, IndexFileMeta
from lakeskip.catalog.format.hash_index import HashIndexChange, hash_entries, merge_hash_changes
from lakeskip.catalog.format.index_manifest import IndexManifestEntry
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.parquet_options import parquet_write_options
from lakeskip.catalog.format.snapshot import CommitIdentity, CommitKind, Snapshot
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.options import check_writable, target_file_size
from lakeskip.catalog.pk.dynamic_bucket import (
    AssignSpec,
    BucketMode,
    DynamicBucketOptions,
    assign_table,
    partition_hashes,
    routing_values,
    row_assigners,
)
from lakeskip.catalog.pk.primary_key import RowKind, schema_key_layout
from lakeskip.catalog.table import FileStoreTable, retry_on_conflict
from lakeskip.catalog.write.data_writer import BUCKET_COLUMN, DataWriter, next_sequences
from lakeskip.catalog.write.pk_dv_write import (
    DELETE_FLAG,
    BucketWrite,
    PkDvSpec,
    PkDvWriter,
    dv_update,
    pk_dv_spec,
)
from lakeskip.catalog.write.timings import WriteTimings
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import ColumnNotFoundError, CommitConflictError, InvalidArgumentError
from lakeskip.sort.clustering import clustering_from_options
from lakeskip.spark.write.clustered import sort_dataframe
from lakeskip.types import DataType, Field, RowType, TypeRoot

__all__ = [
    "WriteResult",
    "align_by_name",
    "align_by_position",
    "commit_written",
    "last_write_timings",
    "write_dataframe",
    "write_entries",
]

_RESULT_SCHEMA = "entry binary, timings binary"
_RESULT_ARROW = pa.schema([("entry", pa.binary()), ("timings", pa.binary())])
_local = threading.local()


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


WRITE_ONLY = "write-only"


def compact_after_commit(table: FileStoreTable, added: Sequence[ManifestEntry]) -> Snapshot | None:
    """Compaction after a write to a primary-key table, as Paimon's writers compact after
    each commit, of every bucket the write added files to, merged in Spark tasks (one per
    bucket) and committed as one COMPACT snapshot:

    - merge-on-read tables: the sorted runs universal compaction picks
      (:func:`~lakeskip.catalog.write.universal.pick`; none until the bucket has
      ``num-sorted-run.compaction-trigger`` runs);
    - ``full-compaction.delta-commits`` >= 1 (any primary-key table): a full compaction
      instead, every run of the bucket into one at the top level
      (:func:`~lakeskip.catalog.write.universal.pick_full`; why after every write: the
      module doc of :mod:`lakeskip.catalog.write.universal`). On a deletion-vector or
      first-row table it also drops the DVs of the files it rewrites.

    On a fixed-bucket append table with ``full-compaction.delta-commits`` >= 1 the written
    buckets' small files are merged instead, as Paimon's Spark writer has its
    ``BucketedAppendCompactManager`` fully compact each written bucket before every batch
    commit (:func:`~lakeskip.procedures.compact.plan_append_full`).

    ``write-only = true`` skips it (as in Paimon). A compaction that conflicts with another
    commit is dropped with a warning: the write stands, the next write's compaction picks
    again. Returns the COMPACT snapshot, if any."""
    import uuid
    import warnings

    from pyspark.sql import SparkSession

    from lakeskip.catalog.options import option_bool
    from lakeskip.catalog.partitions import normalize_partition
    from lakeskip.catalog.write.universal import full_compaction_on_write
    from lakeskip.errors import LakeskipWarning
    from lakeskip.procedures.compact import (
        BinTask,
        compact_append_buckets,
        compact_pk_buckets,
        rewrite_bin,
    )
    from lakeskip.procedures.pk_compact import BucketTask, compact_bucket, plan_universal_tasks

    if not added or option_bool(table.schema.options, WRITE_ONLY):
        return None
    full = full_compaction_on_write(table.schema.options)
    append = full and isinstance(table.kind, Append) and table.schema.bucket_spec() is not None
    if not (append or isinstance(table.kind, PkMerge) or (full and isinstance(table.kind, PkRaw))):
        return None
    # the statement's session (a catalog callback's thread may have none active: then the
    # process's session; no Spark at all, e.g. a Spark-free commit: no compaction)
    spark = SparkSession.getActiveSession() or getattr(SparkSession, "_instantiatedSession", None)
    if spark is None:
        return None
    table = table.refresh()
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return None
    touched = {(normalize_partition(table.schema, e.partition), e.bucket) for e in added}
    entries = [
        e
        for e in table.scan_files(snapshot)
        if (normalize_partition(table.schema, e.partition), e.bucket) in touched
    ]
    sc = spark.sparkContext

    def plan(deleted: dict[str, bytes]) -> list[BucketTask]:
        return plan_universal_tasks(table, entries, str(uuid.uuid4()), deleted=deleted, full=full)

    def run(tasks: list[BucketTask]) -> list[list[ManifestEntry]]:
        sc.setJobDescription(f"compact {table.identifier} ({'full' if full else 'universal'})")
        try:  # one Spark task per bucket, as SparkExecutor.map
            return sc.parallelize(tasks, len(tasks)).map(compact_bucket).collect()
        finally:
            sc.setJobDescription(None)  # type: ignore[arg-type]

    def run_bins(tasks: list[BinTask]) -> list[list[ManifestEntry]]:
        sc.setJobDescription(f"compact {table.identifier} (full)")
        try:
            return sc.parallelize(tasks, len(tasks)).map(rewrite_bin).collect()
        finally:
            sc.setJobDescription(None)  # type: ignore[arg-type]

    try:
        if append:
            _, _, snapshot_id = compact_append_buckets(table, entries, run_bins)
        else:
            _, _, snapshot_id = compact_pk_buckets(table, snapshot, entries, plan, run)
    except CommitConflictError as e:
        warnings.warn(
            f"{table.identifier}: compaction after the write skipped ({e}); the write stands",
            LakeskipWarning,
            stacklevel=2,
        )
        return None
    return None if snapshot_id is None else table.snapshot(snapshot_id)


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


def align_by_position(
    df: DataFrame, row_type: RowType, what: str, *, extra: Sequence[str] = ()
) -> DataFrame:
    """INSERT semantics: columns by position, cast to the table's types (ANSI store rules).
    ``extra``: trailing columns of ``df`` kept as they are, after the table's."""
    columns = [c for c in df.columns if c not in extra]
    if len(columns) != len(row_type):
        raise InvalidArgumentError(
            f"{what}: the query produces {len(columns)} columns, the table has "
            f"{len(row_type)} ({', '.join(row_type.names)})"
        )
    cols: list[Column] = [
        _not_null(F.col(f"`{src}`").cast(_cast_type(f.type)), f, what).alias(f.name)
        for src, f in zip(columns, row_type.fields, strict=True)
    ]
    return df.select(*cols, *(F.col(f"`{e}`") for e in extra))


def _not_null(col: Column, f: Field, what: str) -> Column:
    """A NOT NULL column, or a NOT NULL field of a ROW column (``st.x``: only where ``st``
    is not NULL), fails the write with a one-line message naming it."""
    checks = [] if f.type.nullable else [(col.isNull(), f.name)]
    checks += _nested_null_checks(col, f.type, f.name)
    if not checks:
        return col
    out = None
    for cond, name in checks:
        error = F.raise_error(F.lit(f"{what}: NULL in NOT NULL column {name}"))
        out = F.when(cond, error) if out is None else out.when(cond, error)
    assert out is not None
    return out.otherwise(col)


def _nested_null_checks(col: Column, t: DataType, path: str) -> list[tuple[Column, str]]:
    out: list[tuple[Column, str]] = []
    for nf in t.row_fields:
        child = col.getField(nf.name)
        name = f"{path}.{nf.name}"
        if not nf.type.nullable:
            out.append((col.isNotNull() & child.isNull(), name))
        out += _nested_null_checks(child, nf.type, name)
    return out


def _cast_type(t: DataType) -> str:
    """The Spark type to cast a written column to: nested ROW fields nullable (Spark refuses
    a cast to a NOT NULL field; :func:`_not_null` checks them instead)."""
    return t.as_nullable().spark_ddl()


def align_by_name(df: DataFrame, row_type: RowType, what: str) -> DataFrame:
    """DataFrame-write semantics: columns by name (case-insensitive), cast to the table's types."""
    by_lower = {c.lower(): c for c in df.columns}
    missing = [f.name for f in row_type if f.name.lower() not in by_lower]
    if missing:
        raise ColumnNotFoundError(f"{what}: the DataFrame lacks column(s) {', '.join(missing)}")
    extra = sorted(set(by_lower) - {f.name.lower() for f in row_type})
    if extra:
        raise ColumnNotFoundError(f"{what}: the table has no column(s) {', '.join(extra)}")
    source = {f.name: f.dataType for f in df.schema.fields}
    cols = []
    for f in row_type:
        src = by_lower[f.name.lower()]
        col = _struct_by_name(F.col(f"`{src}`"), source[src], f.type, f.name, what)
        cols.append(_not_null(col.cast(_cast_type(f.type)), f, what).alias(f.name))
    return df.select(*cols)


def _struct_by_name(col: Column, src: Any, t: DataType, path: str, what: str) -> Column:
    """A ROW column's fields matched by name (case-insensitive), at every depth, as Spark's
    by-name writes do; a cast alone would match them by position."""
    if t.root is not TypeRoot.ROW or not isinstance(src, StructType):
        return col
    by_lower = {sf.name.lower(): sf for sf in src.fields}
    missing = [f"{path}.{nf.name}" for nf in t.row_fields if nf.name.lower() not in by_lower]
    if missing:
        raise ColumnNotFoundError(f"{what}: the DataFrame lacks field(s) {', '.join(missing)}")
    extra = sorted(set(by_lower) - {nf.name.lower() for nf in t.row_fields})
    if extra:
        names = ", ".join(f"{path}.{by_lower[e].name}" for e in extra)
        raise ColumnNotFoundError(f"{what}: the table has no field(s) {names}")
    parts = []
    for nf in t.row_fields:
        sf = by_lower[nf.name.lower()]
        child = _struct_by_name(
            col.getField(sf.name), sf.dataType, nf.type, f"{path}.{nf.name}", what
        )
        parts.append(child.alias(nf.name))
    return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*parts))


def _bucket_task(columns: list[str], types: list[DataType], num_buckets: int):  # type: ignore[no-untyped-def]
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            arrays = [batch.column(batch.schema.get_field_index(c)) for c in columns]
            ids = pa.array(bucket_ids(arrays, types, num_buckets), pa.int32())
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, ids], names=[*batch.schema.names, BUCKET_COLUMN]
            )

    return run


def repartition_by_bucket(df: DataFrame, table: FileStoreTable, mixed: bool = False) -> DataFrame:
    """On a fixed-bucket table, shuffle rows by (partition, Paimon bucket) so each bucket of
    a partition is written by one task (fewer, larger files); other tables unchanged.
    ``mixed``: ``df`` ends with the MERGE delete flag (see :func:`write_entries`)."""
    schema = table.schema
    match table.kind.bucket:
        case BucketMode.FIXED:
            spec = schema.bucket_spec()
            assert spec is not None
        case BucketMode.UNAWARE | BucketMode.DYNAMIC:
            return df
        case other:
            assert_never(other)
    flag = f", `{DELETE_FLAG}` BOOLEAN" if mixed else ""
    keyed = df.mapInArrow(
        _bucket_task(list(spec.key), list(spec.types), spec.num_buckets),
        schema.row_type.spark_ddl() + flag + f", `{BUCKET_COLUMN}` INT",
    )
    parts = [F.col(f"`{k}`") for k in schema.partition_keys]
    return keyed.repartition(*parts, F.col(BUCKET_COLUMN)).drop(BUCKET_COLUMN)


ROUTE_COLUMN = "__lakeskip_route"


def _route_task(spec: AssignSpec, routes: list[int]):  # type: ignore[no-untyped-def]
    """Each row's assigner, as a value Spark's hash partitioning sends to that assigner's task."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        table_routes = np.asarray(routes, dtype=np.int32)
        for batch in batches:
            ids = row_assigners(pa.Table.from_batches([batch]), spec)
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, pa.array(table_routes[ids], pa.int32())],
                names=[*batch.schema.names, ROUTE_COLUMN],
            )

    return run


def _assign_task(spec: AssignSpec, schema: Any, writers: list[int]):  # type: ignore[no-untyped-def]
    """The bucket assigners: each task keeps one index per (partition, assigner) it meets.
    Each row leaves with its bucket and the route to its bucket's write task
    (``(partition hash + bucket) mod len(writers)``: the buckets of a partition spread over
    the write tasks)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        from lakeskip.catalog.partitions import normalize_partition

        routes = np.asarray(writers, dtype=np.int32)
        state: dict[Any, Any] = {}
        for batch in batches:
            table = pa.Table.from_batches([batch])
            buckets = assign_table(table, spec, state, lambda p: normalize_partition(schema, p))
            slot = np.mod(partition_hashes(table, spec).astype(np.int64) + buckets, len(routes))
            yield pa.RecordBatch.from_arrays(
                [*batch.columns[:-1], pa.array(buckets, pa.int32()), pa.array(routes[slot])],
                names=[*batch.schema.names[:-1], BUCKET_COLUMN, ROUTE_COLUMN],
            )

    return run


def assign_dynamic_buckets(
    df: DataFrame,
    table: FileStoreTable,
    index: Mapping[tuple[tuple[Any, ...], int], IndexFileMeta],
    *,
    mixed: bool = False,
    fresh: bool = False,
) -> DataFrame:
    """Dynamic bucket mode (:mod:`lakeskip.catalog.pk.dynamic_bucket`): shuffle rows to ``P``
    assigner tasks by (partition hash, key hash), give each row its bucket there (from the
    HASH index ``index`` of the write's snapshot), then shuffle by (partition, bucket) so one
    task writes each bucket. The result ends with the bucket column the writer takes."""
    schema = table.schema
    options = DynamicBucketOptions.of(schema.options)
    default = df.sparkSession.sparkContext.defaultParallelism
    channels, assigners = options.assigners(default)
    by_partition: dict[tuple[Any, ...], list[tuple[int, IndexFileMeta]]] = {}
    for (partition, bucket), meta in sorted(index.items(), key=repr):
        by_partition.setdefault(partition, []).append((bucket, meta))
    layout = schema_key_layout(schema)
    spec = AssignSpec(
        file_io=table.file_io,
        table_path=table.path,
        partition_keys=tuple(schema.partition_keys),
        partition_types=tuple(schema.row_type.field(k).type for k in schema.partition_keys),
        key=layout.trimmed,
        key_types=layout.types,
        channels=channels,
        assigners=assigners,
        options=options,
        index={k: tuple(v) for k, v in by_partition.items()},
        fresh=fresh,
    )
    flag = f", `{DELETE_FLAG}` BOOLEAN" if mixed else ""
    ddl = schema.row_type.spark_ddl() + flag
    routed = df.mapInArrow(
        _route_task(spec, routing_values(channels).tolist()), ddl + f", `{ROUTE_COLUMN}` INT"
    ).repartition(channels, F.col(ROUTE_COLUMN))
    # an explicit task count, one wave: P write tasks (Spark's default parallelism unless
    # dynamic-bucket.assigner-parallelism says otherwise), bucket b of a partition in task
    # (partition hash + b) mod P. Adaptive execution would coalesce the buckets of a small
    # write into one task (a repartition by columns is coalescable, by number is not); a
    # count of spark.sql.shuffle.partitions (200) made a 3-row INSERT run 200 tasks (10-20 s)
    writers = channels
    assigned = routed.mapInArrow(
        _assign_task(spec, schema, routing_values(writers).tolist()),
        ddl + f", `{BUCKET_COLUMN}` INT, `{ROUTE_COLUMN}` INT",
    )
    return assigned.repartition(writers, F.col(ROUTE_COLUMN)).drop(ROUTE_COLUMN)


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
    rows = df.mapInArrow(_task(spec), _RESULT_SCHEMA).collect()
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
