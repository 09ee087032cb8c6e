"""Compaction after a write (:func:`compact_after_commit`), as Paimon's writers compact
after each commit: merged in Spark tasks, one per written bucket, committed as one COMPACT
snapshot."""

from __future__ import annotations

from collections.abc import Sequence

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.kind import Append, PkMerge, PkRaw
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CommitConflictError

__all__ = ["WRITE_ONLY", "compact_after_commit"]

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
    commit (:func:`~lakeskip.procedures.compaction.plan_append_full`).

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
    from lakeskip.procedures.compaction import (
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
