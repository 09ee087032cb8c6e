"""``CALL sys.compact(table => 'db.t' [, order_strategy => 'order'|'zorder'|'hilbert',
order_by => 'a,b'] [, where => '<partition predicate>'])``.

* Without an order: bin-pack small files (under ``target-file-size``) of each partition into
  files of about ``target-file-size``; one task per bin, no shuffle.
* With an order: all files of the selected partitions are read, keyed (z-order / Hilbert keys
  from :mod:`lakeskip.sort`, or the columns themselves for ``order``), range-partitioned
  across tasks on the key, sorted within tasks, and written as new files with stats and
  indexes. Z-order and Hilbert run as plain tasks that exchange Arrow files
  (:mod:`lakeskip.procedures.sort_rewrite`); ``order`` uses Spark's range shuffle. Clustered files get tight min/max ranges, so predicates on any sort column keep
  fewer files.

Either way the old files are replaced in one COMPACT snapshot: the rows are exactly the same
before and after. A concurrent commit that removed a file first makes this fail with
``CommitConflictError`` and leaves the table as it was.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

import pyarrow.parquet as pq
from pyroaring import BitMap

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate, drop_deleted
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import CommitKind, Snapshot
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.options import (
    COMPACTION_MIN_FILE_NUM,
    TARGET_FILE_SIZE,
    option_int,
    target_file_size,
)
from lakeskip.catalog.schema_evolution import arrow_by_id
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import DataWriter, WriteSpec
from lakeskip.errors import CommitConflictError, InvalidArgumentError
from lakeskip.index.primitives.roaring import serialize_bitmap
from lakeskip.procedures.base import (
    Executor,
    Procedure,
    ProcedureParameter,
    ProcedureResult,
    SortSpec,
    target_table,
)
from lakeskip.procedures.partition_filter import filter_partitions
from lakeskip.procedures.pk_compact import BucketTask, compact_bucket
from lakeskip.procedures.sort_rewrite import CURVE_STRATEGIES, rewrite_sorted_in_tasks
from lakeskip.sort import validate_sort_columns
from lakeskip.sort.clustering import (
    ClusteringSpec,
    clustering_from_options,
    curve_keys_from_options,
)
from lakeskip.types import RowType

__all__ = [
    "Compact",
    "compact_append_buckets",
    "compact_pk_buckets",
    "compact_small_files",
    "plan_append_full",
    "plan_bins",
]

STRATEGIES = ("order", "zorder", "hilbert")
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
class _Vectors:
    """The DVs of the files being compacted: applied while reading, and the commit's base."""

    deleted: dict[str, bytes]
    update: DeletionVectorUpdate | None


def _vectors(
    table: FileStoreTable, snapshot: Snapshot | None, entries: Sequence[ManifestEntry]
) -> _Vectors:
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
        return _Vectors({}, None)
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
    return _Vectors(deleted, DeletionVectorUpdate({}, base, read))


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


def _rewrite_sorted(
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


def _boxes(
    table: FileStoreTable, entries: Sequence[ManifestEntry], columns: Sequence[str]
) -> list[list[tuple[Any, Any] | None]]:
    """Per file, per clustering column, the (min, max) range (None: unknown = everything)."""
    out = []
    for e in entries:
        try:
            stats = file_column_stats(e.file, table.schema_by_id(e.file.schema_id), table.schema)
        except Exception:  # undecodable stats: treat as unbounded
            stats = {}
        box: list[tuple[Any, Any] | None] = []
        for c in columns:
            s = stats.get(c)
            box.append(
                (s[0], s[1]) if s is not None and s[0] is not None and s[1] is not None else None
            )
        out.append(box)
    return out


def _overlaps(a: list[tuple[Any, Any] | None], b: list[tuple[Any, Any] | None]) -> bool:
    for ra, rb in zip(a, b, strict=True):
        if ra is None or rb is None:
            continue
        try:
            if ra[1] < rb[0] or rb[1] < ra[0]:
                return False
        except TypeError:
            continue
    return True


def overlap_depth(
    table: FileStoreTable, entries: Sequence[ManifestEntry], columns: Sequence[str]
) -> float:
    """Average share of the *other* files of its partition whose clustering-column ranges
    intersect a file's: 0.0 means perfectly clustered, 1.0 means every file overlaps all."""
    boxes = _boxes(table, entries, columns)
    shares = []
    for i, e in enumerate(entries):
        peers = [
            j for j, f in enumerate(entries) if j != i and tuple(f.partition) == tuple(e.partition)
        ]
        if peers:
            shares.append(sum(_overlaps(boxes[i], boxes[j]) for j in peers) / len(peers))
    return sum(shares) / len(shares) if shares else 0.0


def _incremental(
    table: FileStoreTable,
    snapshot: Snapshot | None,
    entries: Sequence[ManifestEntry],
    cluster: ClusteringSpec,
    executor: Executor,
) -> ProcedureResult:
    """Re-cluster only what needs it: new (level-0) files, plus the clustered (level >= 1)
    files whose ranges on the clustering columns overlap theirs. Clustered files that no new
    file overlaps are left alone -- unlike size-only selection, which would never touch
    size-healthy but overlapping files, or would rewrite clustered ones needlessly."""
    columns = cluster.columns
    before = overlap_depth(table, entries, columns)
    boxes = _boxes(table, entries, columns)
    new = [i for i, e in enumerate(entries) if e.file.level == 0]
    picked = set(new)
    for i, e in enumerate(entries):
        if e.file.level >= 1 and any(
            tuple(entries[j].partition) == tuple(e.partition) and _overlaps(boxes[i], boxes[j])
            for j in new
        ):
            picked.add(i)
    old = [entries[i] for i in sorted(picked)]
    new_entries: list[ManifestEntry] = []
    update = None
    if old:
        sort = SortSpec(
            cluster.strategy, cluster.columns, cluster.var_length_contribution, cluster.curve_keys
        )
        vectors = _vectors(table, snapshot, old)
        new_entries = _rewrite_sorted(table, old, sort, executor, vectors.deleted)
        update = vectors.update
    snapshot_id = _commit(table, old, new_entries, update)
    after = overlap_depth(table, table.scan_files(), columns) if old else before
    extra = (("overlap_before", "DOUBLE", float(before)), ("overlap_after", "DOUBLE", float(after)))
    return _result(old, new_entries, f"incremental-{cluster.strategy}", snapshot_id, extra)


def _commit(
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


def _result(
    old: Sequence[ManifestEntry],
    new: Sequence[ManifestEntry],
    strategy: str,
    snapshot_id: int | None,
    extra: Sequence[tuple[str, str, float]] = (),
    note: str | None = None,
) -> ProcedureResult:
    """The one row every compaction returns, plus ``extra`` (name, type, value) columns and
    ``note`` (what the user should know about the result, else NULL)."""
    return ProcedureResult(
        columns=(
            ("files_before", "INT"),
            ("files_after", "INT"),
            ("rows", "BIGINT"),
            ("strategy", "STRING"),
            ("snapshot_id", "BIGINT"),
            *((name, kind) for name, kind, _ in extra),
            ("note", "STRING"),
        ),
        values=(
            (
                len(old),
                len(new),
                sum(e.file.row_count for e in new),
                strategy,
                snapshot_id,
                *(value for _, _, value in extra),
                note,
            ),
        ),
    )


def too_few_files(table: FileStoreTable, new: Sequence[ManifestEntry]) -> str | None:
    """The note of a sort compaction whose rows fit in one file per partition (and bucket):
    sorting then clusters nothing a query could skip, so say so and how to get more files."""
    if not new or len(new) > len({(e.partition, e.bucket) for e in new}):
        return None
    size = table.schema.options.get(TARGET_FILE_SIZE, "128 mb")
    return (
        f"{table.identifier} fits in one file per partition at target-file-size {size}: "
        "no file can be skipped within a partition; set a smaller 'target-file-size' "
        "(ALTER TABLE ... SET TBLPROPERTIES) and compact again"
    )


class Compact(Procedure):
    name = "sys.compact"
    doc = "Bin-pack small files, or sort-compact by order / zorder / hilbert on order_by columns."
    parameters = (
        ProcedureParameter("table", str, required=True, doc="db.table"),
        ProcedureParameter("order_strategy", str, default="none", doc="none|order|zorder|hilbert"),
        ProcedureParameter("order_by", str, doc="comma-separated sort columns"),
        ProcedureParameter("where", str, doc="partition predicate"),
        ProcedureParameter(
            "compact_strategy",
            str,
            default="full",
            doc="primary-key tables: full (every bucket to one run) or minor (universal "
            "compaction's pick)",
        ),
    )

    def run(
        self,
        *,
        catalog: Catalog,
        executor: Executor,
        arguments: Mapping[str, Any],
        default_database: str,
    ) -> ProcedureResult:
        table: FileStoreTable = target_table(catalog, arguments, default_database)
        kind = table.kind
        match kind:
            case PkMerge() | PkRaw():
                # its files are versions of keys: bin-packing or sorting them as rows would
                # merge versions wrongly; each bucket is merged into one sorted run instead
                asked = str(arguments.get("order_strategy") or "none").lower()
                if asked != "none" or arguments.get("order_by"):
                    raise InvalidArgumentError(
                        f"order_strategy is not supported for primary-key tables "
                        f"({table.identifier}: files are sorted by the primary key)"
                    )
                return _compact_primary_key(table, arguments, executor)
            case Append() | AppendDv():  # rows: bin-pack or sort them (DVs applied)
                if _compact_strategy(arguments) != "full":
                    raise InvalidArgumentError(
                        "compact_strategy 'minor' is for primary-key tables "
                        f"({table.identifier} is an append table)"
                    )
            case _:
                assert_never(kind)
        strategy = str(arguments.get("order_strategy") or "none").lower()
        order_by = arguments.get("order_by")
        sort: SortSpec | None = None
        if strategy != "none":
            if strategy not in STRATEGIES:
                raise InvalidArgumentError(
                    f"unknown order_strategy {strategy!r} (use one of: {', '.join(STRATEGIES)})"
                )
            if not order_by or not str(order_by).strip():
                raise InvalidArgumentError(f"order_strategy {strategy!r} needs order_by columns")
            columns = tuple(c.strip() for c in str(order_by).split(",") if c.strip())
            schema = table.schema
            validate_sort_columns(schema.row_type, columns, schema.partition_keys)
            columns = tuple(schema.row_type.field(c).name for c in columns)
            if strategy == "hilbert" and len(columns) < 2:
                raise InvalidArgumentError("hilbert order needs at least 2 order_by columns")
            var_len = int(schema.options.get("zorder.var-length-contribution", "8"))
            sort = SortSpec(strategy, columns, var_len, curve_keys_from_options(schema.options))
        elif order_by:
            raise InvalidArgumentError("order_by needs an order_strategy (order, zorder, hilbert)")
        schema = table.schema
        cluster = clustering_from_options(schema.options, schema.row_type, schema.partition_keys)
        incremental = cluster is not None and cluster.incremental
        if incremental and sort is not None:
            raise InvalidArgumentError(
                "order_strategy cannot be used on a table with clustering.incremental = true "
                "(CALL sys.compact(table => ...) re-clusters it)"
            )
        snapshot = table.latest_snapshot()
        entries = table.scan_files(snapshot) if snapshot is not None else []
        if arguments.get("where"):
            entries = filter_partitions(table, entries, arguments["where"])
        if incremental:
            assert cluster is not None
            return _incremental(table, snapshot, entries, cluster, executor)
        if sort is not None:
            old = list(entries)
            vectors = _vectors(table, snapshot, old)
            new = _rewrite_sorted(table, old, sort, executor, vectors.deleted) if old else []
        else:
            refs = table.deletion_files(snapshot) if snapshot is not None else {}
            bins = plan_bins(entries, target_file_size(table.schema.options), frozenset(refs))
            old = [e for b in bins for e in b]
            vectors = _vectors(table, snapshot, old)
            spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
            tasks = [
                BinTask(
                    spec,
                    tuple((table.data_file_path(e), e) for e in b),
                    tuple(vectors.deleted.get(e.file.file_name) for e in b),
                    stored_types(table, b),
                )
                for b in bins
            ]
            results = executor.map(rewrite_bin, tasks, f"compact {table.identifier}")
            new = [e for r in results for e in r]
        note = too_few_files(table, new) if sort is not None else None
        return _result(old, new, strategy, _commit(table, old, new, vectors.update), note=note)


def _compact_primary_key(
    table: FileStoreTable, arguments: Mapping[str, Any], executor: Executor
) -> ProcedureResult:
    """Full compaction of a primary-key table (Paimon's ``pickFullCompaction`` per bucket:
    every run into one at ``num-levels`` - 1; a bucket already one top-level run only has
    its files with DVs rewritten, so compacting a compacted table commits nothing, as
    Paimon's batch commit ignores an empty commit), or (``compact_strategy => 'minor'``) the
    runs universal compaction picks per bucket (:mod:`lakeskip.procedures.pk_compact`)."""
    import uuid

    from lakeskip.procedures.pk_compact import plan_universal_tasks

    strategy = _compact_strategy(arguments)
    snapshot = table.latest_snapshot()
    entries = table.scan_files(snapshot) if snapshot is not None else []
    if arguments.get("where"):
        entries = filter_partitions(table, entries, arguments["where"])

    def plan(deleted: dict[str, bytes]) -> list[BucketTask]:
        full = strategy == "full"
        return plan_universal_tasks(table, entries, str(uuid.uuid4()), deleted=deleted, full=full)

    old, new, snapshot_id = compact_pk_buckets(
        table,
        snapshot,
        entries,
        plan,
        lambda tasks: executor.map(compact_bucket, tasks, f"compact {table.identifier}"),
    )
    name = "merge" if strategy == "full" else "universal"
    return _result(old, new, name, snapshot_id)


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
    vectors = _vectors(table, snapshot, entries)
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
    return old, new, _commit(table, old, new, update)


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
    return old, new, _commit(table, old, new, None)


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
    vectors = _vectors(table, snapshot, old)
    schema = table.schema
    cluster = clustering_from_options(options, schema.row_type, schema.partition_keys)
    if cluster is not None:
        sort = SortSpec(
            cluster.strategy, cluster.columns, cluster.var_length_contribution, cluster.curve_keys
        )
        new = _rewrite_sorted(table, old, sort, executor, vectors.deleted)
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
    return old, new, _commit(table, old, new, vectors.update)


def _compact_strategy(arguments: Mapping[str, Any]) -> str:
    """``compact_strategy`` (Paimon's ``full`` / ``minor``), checked."""
    value = str(arguments.get("compact_strategy") or "full").strip().lower()
    if value not in ("full", "minor"):
        raise InvalidArgumentError(f"unknown compact_strategy {value!r} (use one of: full, minor)")
    return value
