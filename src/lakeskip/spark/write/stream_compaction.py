"""The size-based compaction a streaming micro-batch into an unaware-bucket append table
runs after its commit (Paimon's streaming writers' compaction of small files)."""

from __future__ import annotations

import warnings

from pyspark.sql import SparkSession

from lakeskip.catalog.format.manifest import FileKind, read_manifest, read_manifest_list
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.kind import Append, AppendDv
from lakeskip.catalog.options import option_bool
from lakeskip.catalog.pk.dynamic_bucket import BucketMode
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CommitConflictError, LakeskipWarning
from lakeskip.procedures.compaction import compact_small_files
from lakeskip.spark.write.compact_on_write import WRITE_ONLY
from lakeskip.spark.write.executor import SparkExecutor

__all__ = ["compact_after_stream_batch"]


def compact_after_stream_batch(table: FileStoreTable, snapshot: Snapshot) -> Snapshot | None:
    """After a streaming micro-batch into an unaware-bucket append table (``snapshot``: its
    commit), the size-based compaction of the partitions it wrote, as Paimon's streaming
    writers run it (:func:`~lakeskip.procedures.compaction.compact_small_files`); other tables
    were compacted by :func:`~lakeskip.spark.write.compact_on_write.compact_after_commit` already. ``write-only = true`` skips it;
    a compaction that conflicts with another commit is dropped with a warning (the batch
    stands; the next one picks again). Returns the COMPACT snapshot, if any."""
    kind = table.kind
    if not isinstance(kind, (Append, AppendDv)) or kind.bucket is not BucketMode.UNAWARE:
        return None
    if option_bool(table.schema.options, WRITE_ONLY):
        return None
    spark = SparkSession.getActiveSession() or getattr(SparkSession, "_instantiatedSession", None)
    if spark is None:
        return None
    partitions = {
        e.partition
        for m in read_manifest_list(table.file_io, table.path, snapshot.delta_manifest_list)
        for e in read_manifest(table.file_io, table.path, m.file_name, table.partition_types)
        if e.kind is FileKind.ADD
    }
    latest = table.latest_snapshot()
    if not partitions or latest is None:
        return None
    try:
        _, _, compacted = compact_small_files(
            table, latest, sorted(partitions, key=repr), SparkExecutor(spark)
        )
    except CommitConflictError as e:
        warnings.warn(
            f"{table.identifier}: compaction after the streaming batch skipped ({e}); "
            "the batch stands",
            LakeskipWarning,
            stacklevel=2,
        )
        return None
    return None if compacted is None else table.snapshot(compacted)
