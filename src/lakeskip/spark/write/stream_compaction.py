"""The compaction a streaming micro-batch into an unaware-bucket append table runs after its
commit: Paimon's streaming writers' compaction of small files, or, on a table with
``clustering.incremental = true``, incremental clustering in a background thread of the driver
(the stream's next batches go on meanwhile)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from typing import Any, ClassVar

from pyspark.sql import SparkSession

from lakeskip.catalog.format.manifest import FileKind, read_manifest, read_manifest_list
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.kind import Append, AppendDv
from lakeskip.catalog.options import option_bool, sorted_run_stop_trigger
from lakeskip.catalog.pk.dynamic_bucket import BucketMode
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CommitConflictError, LakeskipWarning
from lakeskip.procedures.base import SortSpec
from lakeskip.procedures.compact import incremental_pick
from lakeskip.procedures.compaction import (
    commit_compaction,
    compact_small_files,
    compact_vectors,
    rewrite_sorted,
)
from lakeskip.sort.clustering import clustering_from_options
from lakeskip.spark.write.compact_on_write import WRITE_ONLY
from lakeskip.spark.write.executor import SparkExecutor

__all__ = ["cluster_incrementally", "compact_after_stream_batch", "wait_for_stream_clustering"]


def compact_after_stream_batch(table: FileStoreTable, snapshot: Snapshot) -> Snapshot | None:
    """After a streaming micro-batch into an unaware-bucket append table (``snapshot``: its
    commit), the size-based compaction of the partitions it wrote, as Paimon's streaming
    writers run it (:func:`~lakeskip.procedures.compaction.compact_small_files`); other tables
    were compacted by :func:`~lakeskip.spark.write.compact_on_write.compact_after_commit` already. ``write-only = true`` skips it;
    a compaction that conflicts with another commit is dropped with a warning (the batch
    stands; the next one picks again). Returns the COMPACT snapshot, if any.

    On a table with ``clustering.incremental = true`` the batch's partitions are handed to a
    background thread instead (:func:`cluster_incrementally`; ``None`` is returned): the
    stream does not wait for the sort, and a clustering commit that meets the stream's newer
    APPEND snapshots is retried on them (they only add files). Unless clustering falls
    behind: once a partition the batch wrote holds ``num-sorted-run.stop-trigger`` level-0
    files, the batch waits for the table's clustering rounds to finish (Paimon's write stall,
    :func:`_stall`), so a partition never holds more unclustered files than that, less one,
    plus the files of the batch just committed."""
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
    schema = table.schema
    cluster = clustering_from_options(schema.options, schema.row_type, schema.partition_keys)
    if cluster is not None and cluster.incremental:
        _Clusterer.submit(table, partitions, spark)
        _stall(table, partitions, latest)
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


def _level0_files(
    table: FileStoreTable, partitions: set[tuple[Any, ...]], snapshot: Snapshot
) -> int:
    """The most level-0 (not yet clustered) files one of ``partitions`` holds at ``snapshot``."""
    counts = dict.fromkeys(partitions, 0)
    for e in table.scan_files(snapshot):
        if e.file.level == 0 and e.partition in counts:
            counts[e.partition] += 1
    return max(counts.values(), default=0)


def _stall(table: FileStoreTable, partitions: set[tuple[Any, ...]], latest: Snapshot) -> None:
    """Paimon's write stall (``num-sorted-run.stop-trigger``) for incremental clustering:
    while a partition of ``partitions`` holds that many level-0 files, wait for the table's
    background clustering to finish its rounds (the stream's next batch waits with it). A
    round that failed or conflicted leaves the files; the stream then goes on (a warning
    said why) rather than wait for a round nobody runs."""
    cap = sorted_run_stop_trigger(table.schema.options)
    snapshot: Snapshot | None = latest
    while snapshot is not None and _level0_files(table, partitions, snapshot) >= cap:
        if not _Clusterer.join(table.path):
            return
        snapshot = table.latest_snapshot()


def cluster_incrementally(
    table: FileStoreTable, partitions: Iterable[tuple[Any, ...]], spark: SparkSession
) -> int | None:
    """Incremental clustering of ``partitions`` at the latest snapshot: the level-0 files and
    the clustered files whose ranges on the clustering columns overlap theirs
    (:func:`~lakeskip.procedures.compact.incremental_pick`) are rewritten sorted on the
    clustering columns as level-1 files, in one COMPACT snapshot (its id; ``None``: nothing
    to cluster). Each partition then holds one sorted run, so a point lookup on the
    clustering columns keeps about one file per partition (a single-batch write's figure).
    Unlike Paimon's ``IncrementalClusterStrategy`` (universal compaction's pick over the
    sorted runs, which bounds the bytes rewritten but leaves up to
    ``num-sorted-run.compaction-trigger`` runs, each one more file per lookup), the overlapped
    run is rewritten each time: lookups are bounded, write amplification is not.

    Raises:
        CommitConflictError: a picked file was removed meanwhile (the table is unchanged).
    """
    schema = table.schema
    cluster = clustering_from_options(schema.options, schema.row_type, schema.partition_keys)
    snapshot = table.latest_snapshot()
    if cluster is None or snapshot is None:
        return None
    wanted = set(partitions)
    entries = [e for e in table.scan_files(snapshot) if e.partition in wanted]
    old = incremental_pick(table, entries, cluster.columns)
    if not old:
        return None
    sort = SortSpec(
        cluster.strategy, cluster.columns, cluster.var_length_contribution, cluster.curve_keys
    )
    vectors = compact_vectors(table, snapshot, old)
    new = rewrite_sorted(table, old, sort, SparkExecutor(spark), vectors.deleted)
    return commit_compaction(table, old, new, vectors.update)


class _Clusterer:
    """One background thread per table path: clusters the partitions streaming batches
    handed it, once more whenever a batch arrived while it ran, then ends."""

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _running: ClassVar[dict[str, _Clusterer]] = {}

    def __init__(self, table: FileStoreTable, spark: SparkSession) -> None:
        self.table = table
        self.spark = spark
        self.pending: set[tuple[Any, ...]] = set()
        self.thread = threading.Thread(
            target=self._run, name=f"lakeskip-cluster-{table.identifier}", daemon=True
        )

    @classmethod
    def submit(
        cls, table: FileStoreTable, partitions: Iterable[tuple[Any, ...]], spark: SparkSession
    ) -> None:
        with cls._lock:
            worker = cls._running.get(table.path)
            start = worker is None
            if worker is None:
                worker = cls._running[table.path] = _Clusterer(table, spark)
            worker.table = table  # the latest loaded schema
            worker.pending.update(partitions)
        if start:
            worker.thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self.pending:
                    del self._running[self.table.path]
                    return
                partitions, self.pending = self.pending, set()
                table = self.table
            try:
                cluster_incrementally(table, partitions, self.spark)
            except CommitConflictError as e:
                warnings.warn(
                    f"{table.identifier}: incremental clustering skipped ({e}); "
                    "the next batch clusters again",
                    LakeskipWarning,
                    stacklevel=1,
                )
            except Exception as e:  # the stream stands; say why once
                warnings.warn(
                    f"{table.identifier}: incremental clustering failed "
                    f"({type(e).__name__}: {e}); the table is unchanged",
                    LakeskipWarning,
                    stacklevel=1,
                )

    @classmethod
    def join(cls, path: str) -> bool:
        """Wait until the clustering of the table at ``path`` has finished; ``False`` when
        none was running."""
        with cls._lock:
            worker = cls._running.get(path)
        if worker is None:
            return False
        worker.thread.join()
        return True

    @classmethod
    def threads(cls) -> list[threading.Thread]:
        with cls._lock:
            return [w.thread for w in cls._running.values()]


def wait_for_stream_clustering(timeout: float | None = None) -> bool:
    """Wait until the background incremental clustering of every table has finished (e.g.
    after ``trigger(availableNow=True)``'s last batch); ``False`` if ``timeout`` seconds
    passed first."""
    import time

    end = None if timeout is None else time.monotonic() + timeout
    while True:
        threads = _Clusterer.threads()
        if not threads:
            return True
        for t in threads:
            t.join(None if end is None else max(0.0, end - time.monotonic()))
        if end is not None and time.monotonic() >= end:
            return not _Clusterer.threads()
