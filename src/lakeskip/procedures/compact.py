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

The bins, the DVs and the COMPACT commit are :mod:`lakeskip.procedures.compaction`'s, shared
with the compaction writers run after a commit. Either way the old files are replaced in one
COMPACT snapshot: the rows are exactly the same
before and after. A concurrent commit that removed a file first makes this fail with
``CommitConflictError`` and leaves the table as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, assert_never

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.options import TARGET_FILE_SIZE, target_file_size
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import InvalidArgumentError
from lakeskip.procedures.base import (
    Executor,
    ProcedureParameter,
    ProcedureResult,
    SortSpec,
    TableProcedure,
)
from lakeskip.procedures.compaction import (
    BinTask,
    commit_compaction,
    compact_pk_buckets,
    compact_vectors,
    plan_bins,
    rewrite_bin,
    rewrite_sorted,
    stored_types,
)
from lakeskip.procedures.partition_filter import filter_partitions
from lakeskip.procedures.pk_compact import BucketTask, compact_bucket
from lakeskip.sort import validate_sort_columns
from lakeskip.sort.clustering import (
    ClusteringSpec,
    clustering_from_options,
    curve_keys_from_options,
)

__all__ = ["STRATEGIES", "Compact", "incremental_pick", "overlap_depth", "too_few_files"]

STRATEGIES = ("order", "zorder", "hilbert")


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


def incremental_pick(
    table: FileStoreTable, entries: Sequence[ManifestEntry], columns: Sequence[str]
) -> list[ManifestEntry]:
    """The files incremental clustering rewrites: the new (level-0) files, plus the clustered
    (level >= 1) files of their partition whose ranges on ``columns`` overlap one of theirs
    (those rows must be sorted together for the result to be one run again); none when
    there is no level-0 file."""
    boxes = _boxes(table, entries, columns)
    new = [i for i, e in enumerate(entries) if e.file.level == 0]
    picked = set(new)
    for i, e in enumerate(entries):
        if e.file.level >= 1 and any(
            tuple(entries[j].partition) == tuple(e.partition) and _overlaps(boxes[i], boxes[j])
            for j in new
        ):
            picked.add(i)
    return [entries[i] for i in sorted(picked)]


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
    old = incremental_pick(table, entries, columns)
    new_entries: list[ManifestEntry] = []
    update = None
    if old:
        sort = SortSpec(
            cluster.strategy, cluster.columns, cluster.var_length_contribution, cluster.curve_keys
        )
        vectors = compact_vectors(table, snapshot, old)
        new_entries = rewrite_sorted(table, old, sort, executor, vectors.deleted)
        update = vectors.update
    snapshot_id = commit_compaction(table, old, new_entries, update)
    after = overlap_depth(table, table.scan_files(), columns) if old else before
    extra = (("overlap_before", "DOUBLE", float(before)), ("overlap_after", "DOUBLE", float(after)))
    return _result(old, new_entries, f"incremental-{cluster.strategy}", snapshot_id, extra)


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


class Compact(TableProcedure):
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

    def run_on(
        self, table: FileStoreTable, arguments: Mapping[str, Any], executor: Executor
    ) -> ProcedureResult:
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
            vectors = compact_vectors(table, snapshot, old)
            new = rewrite_sorted(table, old, sort, executor, vectors.deleted) if old else []
        else:
            refs = table.deletion_files(snapshot) if snapshot is not None else {}
            bins = plan_bins(entries, target_file_size(table.schema.options), frozenset(refs))
            old = [e for b in bins for e in b]
            vectors = compact_vectors(table, snapshot, old)
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
        return _result(
            old, new, strategy, commit_compaction(table, old, new, vectors.update), note=note
        )


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


def _compact_strategy(arguments: Mapping[str, Any]) -> str:
    """``compact_strategy`` (Paimon's ``full`` / ``minor``), checked."""
    value = str(arguments.get("compact_strategy") or "full").strip().lower()
    if value not in ("full", "minor"):
        raise InvalidArgumentError(f"unknown compact_strategy {value!r} (use one of: full, minor)")
    return value
