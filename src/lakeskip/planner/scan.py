"""The scan planner: a query's predicate on one table -> the data files Spark must read.

Tiers, cheapest first, each only for files the previous tiers kept:

1. **Partition values** (exact, from the manifest entry).
   **Buckets** of fixed-bucket tables: a filter pinning every bucket-key column to values
   keeps only the entries of those values' buckets (:mod:`lakeskip.planner.bucket_selector`).
2. **Stats**: min/max/null counts from the manifest, as columns over the snapshot's live
   files (:mod:`lakeskip.planner.tiers.columns`).
3. **Embedded file indexes** (``_EMBEDDED_FILE_INDEX``; no extra I/O).
4. **``.index`` files**, opened in parallel for the files still alive: the header and only
   the sections of the predicate's columns, by ranged reads (adjacent sections in one), cached
   by path in the process-wide metadata cache (:mod:`lakeskip.planner.tiers.index_files`).

Tiers 1-4 for files whose rows stand alone are :mod:`lakeskip.planner.tiers.files`; a
primary-key table merged on read prunes by its own rule over them
(:mod:`lakeskip.planner.tiers.primary_key`). This module decides which files are planned
(manifests skipped by their partition stats, files every row of which is deleted, level 0
of tables read without a merge), which rule applies, and keeps whole plans.

Index results combine as Paimon's ``FileIndexPredicate``: a leaf ANDs every index on its
column, AND short-circuits, OR folds. A SKIP or an empty row bitmap skips the file. A corrupt,
missing or unreadable index, or one whose column no longer matches the table's schema, means
"keep the file" and a :class:`~lakeskip.errors.LakeskipWarning` -- never a failed query and
never a skipped match.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, assert_never

import numpy as np

from lakeskip.catalog.cache import CacheSection, MetadataCache, paused_gc, shared_cache
from lakeskip.catalog.format.binary_row import deserialize_row
from lakeskip.catalog.format.deletion_vectors import DeletionFile
from lakeskip.catalog.format.manifest import ManifestEntry, ManifestFileMeta
from lakeskip.catalog.format.manifest_columns import LiveColumns
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.table import FileStoreTable
from lakeskip.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, bind
from lakeskip.expressions.visitors import referenced_names
from lakeskip.planner.columnar_stats import ColumnarStats
from lakeskip.planner.report import FileDecision, ScanPlan, SkipTier, same_decisions
from lakeskip.planner.stats import ColumnStats, FileStats
from lakeskip.planner.tiers.columns import PlanColumns, SnapshotColumns
from lakeskip.planner.tiers.files import COLUMN_TIERS, FileTiers, gain_base
from lakeskip.planner.tiers.index_files import IndexFiles
from lakeskip.planner.tiers.notes import PlanNotes
from lakeskip.planner.tiers.primary_key import decide_merged
from lakeskip.planner.vector_evaluator import VectorStatsEvaluator
from lakeskip.types import RowType

__all__ = ["ScanPlanner"]

# Whole plans are kept in the process-wide metadata cache, keyed by what decides them: the
# table directory, the snapshot (its id and its uniquely named manifest lists and index
# manifest: a snapshot file never changes, and a table dropped and created again has new
# names), the table schema, the predicate, the time zone and whether indexes are used. The
# snapshot is still found afresh on every call (that read is what makes every commit visible
# to the next query); only the per-file work on an unchanged snapshot is skipped. Plans that
# warned are not kept: a warning may be a transient read failure, and the next query should
# try again. What the tiers keep (decoded stats, columnar stats, opened indexes, the index
# gain memory) is said in their modules.
_PLANS = "planner.plans"
_PLAN_BYTES = 400  # per decision: the FileDecision, its slot in the tuple, its share of a report


def _all_deleted(row_count: int, ref: DeletionFile | None) -> bool:
    """Whether a file of ``row_count`` rows has every row deleted by its vector ``ref``."""
    card = ref.meta.cardinality if ref is not None else None
    return card is not None and card >= row_count > 0


class ScanPlanner:
    """Plans scans of one table. Stateless between calls; safe to share across threads.

    Args:
        table: the table to plan.
        max_workers: threads reading ``.index`` files.
        cache: where index bytes, opened indexes and decoded stats are kept between
            queries (default: the process-wide :func:`~lakeskip.catalog.cache.shared_cache`).
    """

    def __init__(
        self, table: FileStoreTable, max_workers: int = 8, cache: MetadataCache | None = None
    ) -> None:
        self.table = table
        self.max_workers = max_workers
        self.cache = cache if cache is not None else shared_cache()
        self._plans: CacheSection[ScanPlan] = self.cache.section(_PLANS)
        self._columns = SnapshotColumns(table, self.cache)
        self._index_files = IndexFiles(table, self.cache, max_workers)

    def plan(
        self,
        predicate: BooleanExpression | None,
        time_zone: str = "UTC",
        snapshot_id: int | None = None,
        use_indexes: bool = True,
        snapshot: Snapshot | None = None,
    ) -> ScanPlan:
        """Decide, for every live data file, skip or keep.

        Args:
            predicate: unbound predicate over the table's columns (``None``: keep all).
            time_zone: Spark's session time zone (timestamp literals).
            snapshot_id: plan an older snapshot (default: the latest).
            use_indexes: evaluate file indexes (tiers 3 and 4); stats always apply.
            snapshot: the snapshot to plan when the caller has already read it (instead of
                ``snapshot_id``: not read again).
        """
        started = time.perf_counter()
        cpu = time.thread_time()
        table = self.table
        if snapshot is None:
            snapshot = (
                table.snapshot(snapshot_id) if snapshot_id is not None else table.latest_snapshot()
            )
        pred = predicate if predicate is not None else AlwaysTrue()
        key = _plan_key(table, snapshot, pred, time_zone, use_indexes)
        cached = self._plans.get(key) if key is not None else None
        if cached is not None:
            return _timed(cached, started, cpu)
        with paused_gc():  # a first plan of a snapshot builds per-file objects in bulk
            return _timed(self._plan(snapshot, pred, key, time_zone, use_indexes), started, cpu)

    def plan_files(
        self,
        entries: Sequence[ManifestEntry],
        predicate: BooleanExpression | None,
        snapshot: Snapshot | None,
        time_zone: str = "UTC",
        *,
        as_written: bool = False,
    ) -> ScanPlan:
        """Decide, for each of ``entries`` (data files of ``snapshot``, not all its live files:
        the files a streaming read's micro-batch adds), skip or keep, by the same tiers as
        :meth:`plan`; the deletion vectors are those of ``snapshot`` (``None``: no files,
        no vectors). ``as_written``: each row of a file is read on its own (a primary-key
        table's versions, no merge): files are decided one by one, level 0 included. Not
        cached."""
        started = time.perf_counter()
        cpu = time.thread_time()
        pred = predicate if predicate is not None else AlwaysTrue()
        with paused_gc():
            plan = self._plan(
                snapshot,
                pred,
                None,
                time_zone,
                True,
                given=list(entries),
                as_written=as_written,
            )
        return _timed(plan, started, cpu)

    def _plan(
        self,
        snapshot: Snapshot | None,
        pred: BooleanExpression,
        key: Hashable | None,
        time_zone: str,
        use_indexes: bool,
        given: list[ManifestEntry] | None = None,
        as_written: bool = False,
    ) -> ScanPlan:
        """The plan, its report's times left 0 (the callers, :meth:`plan` and
        :meth:`plan_files`, time each call: :func:`_timed`)."""
        table = self.table
        if given is None and snapshot is not None:
            bound = bind(table.schema.row_type, pred, time_zone=time_zone)
            if isinstance(bound, AlwaysTrue):
                # every live file kept but those nothing is left to read of: planned from
                # the manifests' columns, no per-file object made
                live = table.live_columns(snapshot)
                if live is not None:
                    plan = self._plan_columns(snapshot, pred, live)
                    if key is not None:
                        self._plans.put(key, plan, _plan_nbytes(plan))
                    return plan
            elif not isinstance(bound, AlwaysFalse):
                got = self._plan_stats_columns(snapshot, pred, bound, use_indexes)
                if got is not None:
                    if key is not None and not got.report.warnings:
                        self._plans.put(key, got, _plan_nbytes(got))
                    return got
        unread: list[ManifestFileMeta] = []
        left_out = (0, 0, 0)  # live files of partitions ruled out (files, bytes, rows)
        selection: Hashable = ()  # which of the snapshot's live files are planned
        if given is not None:
            entries: list[ManifestEntry] = given
        elif snapshot is None:
            entries = []
        elif not table.schema.partition_keys:
            entries = table.scan_files(snapshot)
        else:
            chosen: set[tuple[object, ...]] = set()
            narrow = self._partitions_to_read(pred, time_zone, chosen)
            entries, unread, left_out = table.scan_files_in(
                snapshot, lambda metas: self._manifests_to_read(metas, pred, time_zone), narrow
            )
            if narrow is not None:
                # only the live files of the partitions read: their columns are kept apart
                selection = frozenset(chosen)
        all_entries = entries
        # a file whose deletion vector deletes every row holds nothing to read
        refs = table.deletion_files(snapshot) if snapshot is not None else {}
        dead = (
            [e for e in entries if _all_deleted(e.file.row_count, refs.get(e.file.file_name))]
            if refs
            else []
        )
        if dead:
            gone = {e.file.file_name for e in dead}
            entries = [e for e in entries if e.file.file_name not in gone]
        schema = table.schema
        kind = table.kind
        skip_level0 = _skips_level0(table) and not as_written
        if skip_level0:
            level0 = [e for e in entries if e.file.level == 0]
            if level0:
                dead = [*dead, *level0]
                entries = [e for e in entries if e.file.level != 0]
        row_type = schema.row_type
        bound = bind(row_type, pred, time_zone=time_zone)
        notes = PlanNotes()
        index_files_read = 0
        cols: PlanColumns | None = None
        whole = snapshot if given is None else None  # a snapshot's live files, all planned
        if not isinstance(bound, (AlwaysFalse, AlwaysTrue)):
            cols = (
                self._columns.of(
                    whole,
                    all_entries,
                    entries,
                    notes,
                    (tuple(m.file_name for m in unread), selection),
                )
                if whole is not None
                else self._columns.uncached(entries, notes)
            )
        tiers = self.file_tiers(whole, notes)
        if isinstance(bound, AlwaysFalse):
            decisions = same_decisions(entries, False, SkipTier.PREDICATE)
        elif isinstance(bound, AlwaysTrue):
            decisions = same_decisions(entries, True)
        else:
            assert cols is not None
            match kind:
                case PkMerge(merge=merge) if not as_written:  # versions merged when read
                    decisions, index_files_read = decide_merged(
                        tiers, entries, cols, pred, bound, row_type, use_indexes, time_zone, merge
                    )
                case Append() | AppendDv() | PkRaw() | PkMerge():  # a file's rows on their own
                    decisions, index_files_read = tiers.decide(
                        entries, cols, bound, row_type, use_indexes
                    )
                case _:
                    assert_never(kind)
        decisions = [
            *decisions,
            *(
                FileDecision(
                    e,
                    keep=False,
                    tier=(
                        SkipTier.LEVEL0 if skip_level0 and e.file.level == 0 else SkipTier.DELETED
                    ),
                )
                for e in dead
            ),
        ]
        plan = ScanPlan.build(
            table=table.identifier,
            predicate=repr(pred),
            snapshot_id=snapshot.id if snapshot is not None else None,
            decisions=decisions,
            index_files_read=index_files_read,
            planning_ms=0.0,
            warnings=notes.messages,
            index_bytes_read=tiers.index_bytes_read,
            unread_files=max(
                0, left_out[0] + sum(m.num_added_files - m.num_deleted_files for m in unread)
            ),
            unread_bytes=max(0, left_out[1]),
            unread_rows=max(0, left_out[2]),
        )
        if key is not None and not notes.messages:
            self._plans.put(key, plan, _plan_nbytes(plan))
        return plan

    def _plan_columns(
        self, snapshot: Snapshot, pred: BooleanExpression, live: LiveColumns
    ) -> ScanPlan:
        """:meth:`_plan` of a predicate that holds on every row, from the live files'
        columns: the files every row of which is deleted, then the level-0 files of a table
        that skips them, are skipped (in that order, as :meth:`_plan` lists them); the rest
        is kept."""
        table = self.table
        refs = table.deletion_files(snapshot)
        names = live.field("_FILE_NAME")
        n = len(names)
        dead = np.zeros(n, dtype=np.bool_)
        if refs:
            counts = live.longs("_ROW_COUNT")
            for i in [i for i, name in enumerate(names) if name in refs]:
                dead[i] = _all_deleted(int(counts[i]), refs[names[i]])
        level0 = np.zeros(n, dtype=np.bool_)
        if _skips_level0(table):
            level0 = live.longs("_LEVEL") == 0
        skipped = np.concatenate([np.flatnonzero(dead), np.flatnonzero(level0 & ~dead)])
        tiers = [SkipTier.LEVEL0 if z else SkipTier.DELETED for z in level0[skipped].tolist()]
        return ScanPlan.of_columns(
            table=table.identifier,
            predicate=repr(pred),
            snapshot_id=snapshot.id,
            live=live,
            skipped=skipped,
            tiers=tiers,
            planning_ms=0.0,
        )

    def _plan_stats_columns(
        self,
        snapshot: Snapshot,
        pred: BooleanExpression,
        bound: BooleanExpression,
        use_indexes: bool,
    ) -> ScanPlan | None:
        """:meth:`_plan` of every live file of an append table (no deletion vectors) by a
        predicate on no partition column that no index is asked (the stats and buckets
        decide), from the live files' columns: a per-file object is made only when asked
        for. None where those do not hold (then :meth:`_plan` file by file)."""
        table = self.table
        schema = table.schema
        keys = {k.lower() for k in schema.partition_keys}
        if (
            not isinstance(table.kind, Append)
            or keys & {n.lower() for n in referenced_names(bound)}
            or table.deletion_files(snapshot)
        ):
            return None
        notes = PlanNotes()
        row_type = schema.row_type
        tiers = self.file_tiers(snapshot, notes)
        if tiers.may_use_indexes(bound, row_type, use_indexes):
            return None
        live = table.live_columns(snapshot)
        if live is None:
            return None
        # the snapshot's stats columns, under the key kept_stats (runtime filters) uses
        cols = self._columns.of(snapshot, live, live, notes)
        codes = tiers.decide_columns(live, cols, bound, row_type)
        return ScanPlan.of_tiers(
            table=table.identifier,
            predicate=repr(pred),
            snapshot_id=snapshot.id,
            live=live,
            codes=codes,
            tiers=COLUMN_TIERS,
            planning_ms=0.0,
            warnings=notes.messages,
        )

    def _manifests_to_read(
        self, metas: Sequence[ManifestFileMeta], pred: BooleanExpression, time_zone: str
    ) -> list[bool]:
        """Per manifest: whether its partitions (the manifest list's ``_PARTITION_STATS``:
        min, max and null count of each partition column over its entries) may hold a
        matching row. Unreadable stats: read it."""
        table = self.table
        schema = table.schema
        keys = list(schema.partition_keys)
        if not keys or len(metas) < 2:
            return [True] * len(metas)
        row_type = schema.row_type
        bound = bind(row_type, pred, time_zone=time_zone)
        if isinstance(bound, (AlwaysTrue, AlwaysFalse)) or not {k.lower() for k in keys} & {
            n.lower() for n in referenced_names(bound)
        }:
            return [True] * len(metas)
        types = table.partition_types
        files: list[FileStats] = []
        for m in metas:
            ps = m.partition_stats
            try:
                lo = deserialize_row(ps.min_values, types)
                hi = deserialize_row(ps.max_values, types)
                nulls = ps.null_counts if len(ps.null_counts) == len(keys) else (None,) * len(keys)
                cols = {k: ColumnStats(lo[j], hi[j], nulls[j]) for j, k in enumerate(keys)}
            except Exception:  # stats we cannot decode: read the manifest
                cols = {}
            files.append(FileStats(m.num_added_files + m.num_deleted_files, cols))
        part_rt = RowType(tuple(row_type.field(k) for k in keys))
        stats = ColumnarStats.from_file_stats(files, part_rt)
        keep: list[bool] = VectorStatsEvaluator(bound).evaluate(stats).tolist()
        return keep

    def _partitions_to_read(
        self, pred: BooleanExpression, time_zone: str, chosen: set[tuple[object, ...]]
    ) -> Callable[[list[tuple[Any, ...]]], list[bool]] | None:
        """Per partition (its values): whether it may hold a matching row, as the partition
        tier decides it for a file (:meth:`FileTiers.decide`); the partitions it keeps are
        added to ``chosen``. None when the predicate tests no partition column."""
        schema = self.table.schema
        keys = list(schema.partition_keys)
        if not keys:
            return None
        row_type = schema.row_type
        bound = bind(row_type, pred, time_zone=time_zone)
        if isinstance(bound, (AlwaysTrue, AlwaysFalse)) or not {k.lower() for k in keys} & {
            n.lower() for n in referenced_names(bound)
        }:
            return None
        evaluator = VectorStatsEvaluator(bound)
        types = {k: row_type.field(k).type for k in keys}

        def decide(partitions: list[tuple[Any, ...]]) -> list[bool]:
            if not partitions:
                return []
            stats = ColumnarStats.of_values(
                np.ones(len(partitions), dtype=np.int64),
                {k: [p[j] for p in partitions] for j, k in enumerate(keys)},
                types,
            )
            keep: list[bool] = evaluator.evaluate(stats).tolist()
            chosen.update(p for p, k in zip(partitions, keep, strict=True) if k)
            return keep

        return decide

    # -- what runtime filters reuse ---------------------------------------------------------

    def columns(
        self,
        snapshot: Snapshot,
        live: Sequence[ManifestEntry],
        entries: Sequence[ManifestEntry],
        notes: PlanNotes,
    ) -> PlanColumns:
        """The stats of ``entries`` (some of ``snapshot``'s ``live`` files) as columns, from
        the snapshot's columns in the metadata cache (decoded on first use)."""
        return self._columns.of(snapshot, live, entries, notes)

    def kept_stats(self, plan: ScanPlan, snapshot: Snapshot) -> ColumnarStats:
        """The stats of ``plan``'s kept files (``plan`` of ``snapshot``) as columns. The
        snapshot's cached columns need its whole file list: where the plan skipped manifests
        by partition (files counted, not decided), only the kept files are decoded."""
        notes = PlanNotes()
        if plan.kept is not None:  # a plan of every live file, from their columns
            live = self.table.live_columns(snapshot)
            if live is not None:
                return self._columns.of(snapshot, live, plan.kept, notes).stats
        files = plan.files
        if plan.report.total_files == len(plan.decisions):
            return self._columns.of(snapshot, self.table.scan_files(snapshot), files, notes).stats
        return self._columns.uncached(files, notes).stats

    def file_tiers(self, snapshot: Snapshot | None, notes: PlanNotes) -> FileTiers:
        """Tiers 1-4 for files of ``snapshot`` (their index-gain memory kept for it; ``None``:
        files of no snapshot, none kept), warning into ``notes``."""
        return FileTiers(
            self.table, self._index_files, self.cache, gain_base(self.table, snapshot), notes
        )


def _timed(plan: ScanPlan, started: float, cpu: float) -> ScanPlan:
    """``plan`` with the wall and CPU milliseconds of the planning call that began at
    ``started`` (``time.perf_counter``) and ``cpu`` (``time.thread_time``): a plan from the
    cache reports what this call took, not what its first planning did."""
    return dataclasses.replace(
        plan,
        report=dataclasses.replace(
            plan.report,
            planning_ms=(time.perf_counter() - started) * 1000,
            planning_cpu_ms=(time.thread_time() - cpu) * 1000,
        ),
    )


def _skips_level0(table: FileStoreTable) -> bool:
    """Whether a batch plan of ``table`` skips its level-0 files."""
    kind = table.kind
    match kind:
        case PkRaw():
            # deletion vectors or first-row on a primary-key table: every key has one
            # live version in the files at level > 0 (DVs hide the rest), read as they
            # are without a merge -- so the files are pruned one by one like an append
            # table's, as Paimon does
            return True
        case Append() | AppendDv() | PkMerge():
            return False
        case _:
            assert_never(kind)


def _plan_key(
    table: FileStoreTable,
    snapshot: Snapshot | None,
    pred: BooleanExpression,
    time_zone: str,
    use_indexes: bool,
) -> Hashable | None:
    """The cache key of a plan, or None (nothing to plan, or a predicate that cannot be a
    key). The predicate enters twice: equal trees with different literal types compare
    equal in Python (``1 == 1.0 == True``) but print differently."""
    if snapshot is None:
        return None
    schema = table.schema
    key = (
        table.path,
        table.identifier,
        snapshot.id,
        snapshot.time_millis,
        snapshot.base_manifest_list,
        snapshot.delta_manifest_list,
        snapshot.index_manifest,
        schema.id,
        schema.time_millis,
        repr(pred),
        pred,
        time_zone,
        use_indexes,
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _plan_nbytes(plan: ScanPlan) -> int:
    if plan.kept is not None:  # decisions made when asked for: counted as if made
        return 1000 + _PLAN_BYTES * plan.report.total_files
    n = 1000 + _PLAN_BYTES * len(plan.decisions)
    for d in plan.decisions:
        if d.rows is not None:
            n += 64 + 4 * len(d.rows)  # roaring: 2 bytes a position in array containers
    return n
