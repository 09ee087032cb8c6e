"""The scan planner: a query's predicate on one table -> the data files Spark must read.

Tiers, cheapest first, each only for files the previous tiers kept:

1. **Partition values** (exact, from the manifest entry).
   **Buckets** of fixed-bucket tables: a filter pinning every bucket-key column to values
   keeps only the entries of those values' buckets (:mod:`lakeskip.planner.bucket_selector`).
2. **Stats**: min/max/null counts from the manifest (:class:`StatsEvaluator`).
3. **Embedded file indexes** (``_EMBEDDED_FILE_INDEX``; no extra I/O).
4. **``.index`` files**, opened in parallel for the files still alive: the header and only
   the sections of the predicate's columns, by ranged reads (adjacent sections in one), cached
   by path (index files are immutable: a rewrite writes a new name) in the process-wide
   metadata cache.

Index results combine as Paimon's ``FileIndexPredicate``: a leaf ANDs every index on its
column, AND short-circuits, OR folds. A SKIP or an empty row bitmap skips the file. A corrupt,
missing or unreadable index, or one whose column no longer matches the table's schema, means
"keep the file" and a :class:`~lakeskip.errors.LakeskipWarning` -- never a failed query and
never a skipped match.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, assert_never

import numpy as np

from lakeskip.catalog.cache import CacheSection, MetadataCache, paused_gc, shared_cache
from lakeskip.catalog.format.binary_row import deserialize_row
from lakeskip.catalog.format.deletion_vectors import DeletionFile
from lakeskip.catalog.format.manifest import ManifestEntry, ManifestFileMeta
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.pk.aggregation import VALUE_PRESERVING
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CorruptMetadataError, LakeskipWarning
from lakeskip.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, and_, bind
from lakeskip.expressions.visitors import column_names, conjuncts, referenced_names
from lakeskip.index.file_index import FileIndexFile
from lakeskip.index.format import PREFIX, FileIndexContainer
from lakeskip.index.options import IndexColumnSpec, parse_file_index_options
from lakeskip.planner.bloom_batch import BloomColumns
from lakeskip.planner.bucket_selector import select_buckets
from lakeskip.planner.columnar_stats import ColumnarStats, decode_file_stats
from lakeskip.planner.index_evaluator import IndexVerdict, evaluate_file_index
from lakeskip.planner.index_gain import DENSE_ROWS, IndexGain, predicate_shape, stats_prove_match
from lakeskip.planner.report import FileDecision, ScanPlan, SkipTier
from lakeskip.planner.stats import ColumnStats, FileStats
from lakeskip.planner.vector_evaluator import VectorStatsEvaluator
from lakeskip.types import RowType

__all__ = ["ScanPlanner"]


# What the planner keeps between queries, in the process-wide metadata cache (one budget
# in bytes, see lakeskip.catalog.cache):
# * opened ``.index`` containers by path (index files are immutable: a rewrite writes a new
#   name), holding the header and the sections queries have needed so far;
# * decoded stats per data file: a file's stats never change (a rewrite of its indexes keeps
#   them), so they are decoded once per (table, file, file schema, table schema) and reused
#   by every later query -- decoding BinaryRows was most of the planning time;
# * opened embedded index containers (readers decode lazily and keep what they decoded),
#   keyed by the file and the exact index bytes: a rewrite gives new bytes, hence a new entry;
# * whole plans, keyed by what decides them: the table directory, the snapshot (its id and
#   its uniquely named manifest lists and index manifest: a snapshot file never changes, and
#   a table dropped and created again has new names), the table schema, the predicate, the
#   time zone and whether indexes are used. The snapshot is still found afresh on every call
#   (that read is what makes every commit visible to the next query); only the per-file work
#   on an unchanged snapshot is skipped. Plans that warned are not kept: a warning may be
#   a transient read failure, and the next query should try again;
# * the stats of every live file of a snapshot as columns (ColumnarStats), keyed by the
#   snapshot's manifest lists and the table schema: a new literal on an unchanged table
#   evaluates tiers 1-2 with a few array operations and decodes nothing.
_HEAD_READ = 256  # first read of an .index file: a header of a few columns (more: a second read)
_STATS = "planner.file-stats"
_INDEX_FILES = "planner.index-containers"
_PLANS = "planner.plans"
_COLUMNAR = "planner.columnar-stats"
_GAIN = "planner.index-gain"
_PROBE = 3  # files whose indexes are evaluated before deciding whether the rest are worth it
_DECISION_BYTES = 100  # one prebuilt FileDecision and its array slot
_PLAN_BYTES = 400  # per decision: the FileDecision, its slot in the tuple, its share of a report
_STATS_ENTRY_BYTES = 800  # a ColumnStats, its dict slot and boxed values (tracemalloc: ~850)
_INDEX_DECODED_FACTOR = 3  # decoded readers (pyroaring C memory) beside the bytes


def _stats_nbytes(stats: dict[str, ColumnStats]) -> int:
    n = 300  # the dict, its cache key and LRU node
    for name, cs in stats.items():
        n += _STATS_ENTRY_BYTES + len(name)
        for v in (cs.min, cs.max):
            n += len(v) if isinstance(v, (str, bytes)) else 32
    return n


@dataclass(frozen=True, slots=True)
class _SnapshotStats:
    """A snapshot's live files' stats as columns, the row of each file by name, and what
    decoding them warned about (said again on every query that uses them)."""

    positions: dict[str, int]
    stats: ColumnarStats
    warnings: list[str]
    bloom: list[BloomColumns]  # built on first use (empty until then)
    kept: _LazyDecisions  # "kept" decision per file, each built on first use
    by_stats: _LazyDecisions  # "skipped by stats" decision per file, likewise
    kinds: list[np.ndarray]  # index kind per file, built on first use
    skips: dict[str | None, _LazyDecisions]  # bloom-skip decisions per column, likewise

    @property
    def nbytes(self) -> int:
        n = self.stats.nbytes + 120 * len(self.positions)
        n += sum(b.nbytes for b in self.bloom)
        n += self.kept.nbytes + self.by_stats.nbytes
        n += sum(d.nbytes for d in self.skips.values())
        return n + sum(k.nbytes for k in self.kinds)


class _LazyDecisions:
    """One prebuilt :class:`FileDecision` per file (they are immutable, so plans share
    them), each built the first time a plan needs it: a fresh process's first plan builds
    one decision per file, not one of every kind per file."""

    __slots__ = ("_built", "_entries", "_make", "_values", "count")

    def __init__(
        self, entries: Sequence[ManifestEntry], make: Callable[[ManifestEntry], FileDecision]
    ) -> None:
        self._entries = entries
        self._make = make
        self._values = np.empty(len(entries), dtype=object)
        self._built = np.zeros(len(entries), dtype=np.bool_)
        self.count = 0  # built so far

    @property
    def nbytes(self) -> int:
        return 16 * len(self._values) + _DECISION_BYTES * self.count

    def take(self, idx: np.ndarray) -> tuple[np.ndarray, bool]:
        """The decisions of files ``idx`` (positions among ``entries``), and whether any
        had to be built. Two threads may build the same decision: equal values either way."""
        need = idx[~self._built[idx]]
        if len(need):
            need = np.unique(need)
            entries, make = self._entries, self._make
            self._values[need] = [make(entries[i]) for i in need.tolist()]
            self._built[need] = True
            self.count += len(need)
        return self._values[idx], bool(len(need))


@dataclass(frozen=True, slots=True)
class _PlanColumns:
    """What tiers 1-3 read for one plan: the stats of its files (in the plan's order),
    each file's row among the snapshot's live files, and the snapshot's bloom filters."""

    stats: ColumnarStats
    live_idx: np.ndarray
    bloom: Callable[[], BloomColumns | None]
    # per file of the plan: its "kept" decision where the mask is set, else "skipped by stats"
    prebuilt: Callable[[np.ndarray], np.ndarray]
    index_kind: Callable[[], np.ndarray]  # _EMBEDDED, _EXTERNAL or 0 per file
    # "skipped by this column's bloom" decisions of these files (positions in the plan)
    bloom_skips: Callable[[str | None, np.ndarray], np.ndarray]


@dataclass(slots=True)
class _Warnings:
    messages: list[str]

    def add(self, message: str) -> None:
        if message not in self.messages:
            self.messages.append(message)
            warnings.warn(message, LakeskipWarning, stacklevel=4)


def _all_deleted(entry: ManifestEntry, ref: DeletionFile | None) -> bool:
    card = ref.meta.cardinality if ref is not None else None
    return card is not None and card >= entry.file.row_count > 0


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
        self._stats: CacheSection[dict[str, ColumnStats]] = self.cache.section(_STATS)
        self._index_files: CacheSection[FileIndexFile] = self.cache.section(_INDEX_FILES)
        self._plans: CacheSection[ScanPlan] = self.cache.section(_PLANS)
        self._columnar: CacheSection[_SnapshotStats] = self.cache.section(_COLUMNAR)
        self._gains: CacheSection[IndexGain] = self.cache.section(_GAIN)
        self._index_bytes_read = 0  # of the plan being made (one plan at a time per planner)
        self._gain_base: Hashable | None = None  # the snapshot being planned, for _gains

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
        table = self.table
        if snapshot is None:
            snapshot = (
                table.snapshot(snapshot_id) if snapshot_id is not None else table.latest_snapshot()
            )
        pred = predicate if predicate is not None else AlwaysTrue()
        key = _plan_key(table, snapshot, pred, time_zone, use_indexes)
        cached = self._plans.get(key) if key is not None else None
        if cached is not None:
            planning_ms = (time.perf_counter() - started) * 1000
            return dataclasses.replace(
                cached, report=dataclasses.replace(cached.report, planning_ms=planning_ms)
            )
        with paused_gc():  # a first plan of a snapshot builds per-file objects in bulk
            return self._plan(started, snapshot, pred, key, time_zone, use_indexes)

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
        pred = predicate if predicate is not None else AlwaysTrue()
        with paused_gc():
            return self._plan(
                started,
                snapshot,
                pred,
                None,
                time_zone,
                True,
                given=list(entries),
                as_written=as_written,
            )

    def _plan(
        self,
        started: float,
        snapshot: Snapshot | None,
        pred: BooleanExpression,
        key: Hashable | None,
        time_zone: str,
        use_indexes: bool,
        given: list[ManifestEntry] | None = None,
        as_written: bool = False,
    ) -> ScanPlan:
        table = self.table
        unread: list[ManifestFileMeta] = []
        if given is not None:
            entries: list[ManifestEntry] = given
        elif snapshot is None:
            entries = []
        elif not table.schema.partition_keys:
            entries = table.scan_files(snapshot)
        else:
            entries, unread = table.scan_files_in(
                snapshot, lambda metas: self._manifests_to_read(metas, pred, time_zone)
            )
        all_entries = entries
        # a file whose deletion vector deletes every row holds nothing to read
        refs = table.deletion_files(snapshot) if snapshot is not None else {}
        dead = [e for e in entries if _all_deleted(e, refs.get(e.file.file_name))] if refs else []
        if dead:
            gone = {e.file.file_name for e in dead}
            entries = [e for e in entries if e.file.file_name not in gone]
        schema = table.schema
        kind = table.kind
        match kind:
            case PkRaw():
                # deletion vectors or first-row on a primary-key table: every key has one
                # live version in the files at level > 0 (DVs hide the rest), read as they
                # are without a merge -- so the files are pruned one by one like an append
                # table's, as Paimon does
                skip_level0 = True
            case Append() | AppendDv() | PkMerge():
                skip_level0 = False
            case _:
                assert_never(kind)
        skip_level0 = skip_level0 and not as_written
        if skip_level0:
            level0 = [e for e in entries if e.file.level == 0]
            if level0:
                dead = [*dead, *level0]
                entries = [e for e in entries if e.file.level != 0]
        row_type = schema.row_type
        bound = bind(row_type, pred, time_zone=time_zone)
        notes = _Warnings([])
        index_files_read = 0
        cols: _PlanColumns | None = None
        if not isinstance(bound, (AlwaysFalse, AlwaysTrue)):
            cols = (
                self._columnar_stats(
                    snapshot, all_entries, entries, notes, tuple(m.file_name for m in unread)
                )
                if snapshot is not None and given is None
                else self._uncached_columns(entries, notes)
            )
        self._index_bytes_read = 0
        self._gain_base = (
            (
                table.path,
                snapshot.base_manifest_list,
                snapshot.delta_manifest_list,
                schema.id,
                schema.time_millis,
            )
            if snapshot is not None and given is None
            else None
        )
        if isinstance(bound, AlwaysFalse):
            decisions = [FileDecision(e, keep=False, tier=SkipTier.PREDICATE) for e in entries]
        elif isinstance(bound, AlwaysTrue):
            decisions = [FileDecision(e, keep=True) for e in entries]
        else:
            assert cols is not None
            match kind:
                case PkMerge(merge=merge) if not as_written:  # versions merged when read
                    decisions, index_files_read = self._decide_primary_key(
                        entries, cols, pred, bound, row_type, use_indexes, notes, time_zone, merge
                    )
                case Append() | AppendDv() | PkRaw() | PkMerge():  # a file's rows on their own
                    decisions, index_files_read = self._decide(
                        entries, cols, bound, row_type, use_indexes, notes
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
        planning_ms = (time.perf_counter() - started) * 1000
        plan = ScanPlan.build(
            table=table.identifier,
            predicate=repr(pred),
            snapshot_id=snapshot.id if snapshot is not None else None,
            decisions=decisions,
            index_files_read=index_files_read,
            planning_ms=planning_ms,
            warnings=notes.messages,
            index_bytes_read=self._index_bytes_read,
            unread_files=max(0, sum(m.num_added_files - m.num_deleted_files for m in unread)),
        )
        if key is not None and not notes.messages:
            self._plans.put(key, plan, _plan_nbytes(plan))
        return plan

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

    # -- tiers ------------------------------------------------------------------------------

    def _decide(
        self,
        entries: Sequence[ManifestEntry],
        cols: _PlanColumns,
        bound: Any,
        row_type: RowType,
        use_indexes: bool,
        notes: _Warnings,
    ) -> tuple[list[FileDecision], int]:
        """Tiers 1-2 for every file at once over ``cols.stats`` (the stats of ``entries``,
        in order), then the indexes of the files they keep: the embedded bloom filters of
        all of them together, then each file's indexes where that is not the last word."""
        table = self.table
        schema = table.schema
        evaluator = VectorStatsEvaluator(bound)
        part_keys = list(schema.partition_keys)
        decisions: dict[int, FileDecision] = {}
        n = len(entries)
        alive_mask = np.ones(n, dtype=np.bool_)
        buckets: set[int] | None = None
        try:
            spec = schema.bucket_spec()
        except Exception:  # options of a table written elsewhere we cannot read: no pruning
            spec = None
        if spec is not None:
            buckets = select_buckets(bound, spec)
        colstats = cols.stats
        stats = colstats
        if part_keys:
            part = ColumnarStats.of_values(
                colstats.row_count,
                {k: [e.partition[j] for e in entries] for j, k in enumerate(part_keys)},
                {k: row_type.field(k).type for k in part_keys},
            )
            out = ~evaluator.evaluate(part)
            for i in np.flatnonzero(out).tolist():
                decisions[i] = FileDecision(entries[i], keep=False, tier=SkipTier.PARTITION)
            alive_mask &= ~out
            stats = colstats.with_columns(part)
        if buckets is not None and spec is not None:
            out = alive_mask & np.fromiter(
                (e.total_buckets == spec.num_buckets and e.bucket not in buckets for e in entries),
                dtype=np.bool_,
                count=n,
            )
            for i in np.flatnonzero(out).tolist():
                decisions[i] = FileDecision(entries[i], keep=False, tier=SkipTier.BUCKET)
            alive_mask &= ~out
        alive_mask &= evaluator.evaluate(stats)

        bulk: list[tuple[np.ndarray, np.ndarray]] = []  # (positions, prebuilt decisions)

        def assemble() -> list[FileDecision]:
            # the decisions of files kept, and of files skipped by stats, are prebuilt once
            # per snapshot (FileDecision is immutable) and picked with array operations
            out = cols.prebuilt(alive_mask)
            for where, decided in bulk:
                out[where] = decided
            for i, d in decisions.items():
                out[i] = d
            result: list[FileDecision] = out.tolist()
            return result

        options = parse_file_index_options(schema.options, row_type)
        if not use_indexes or not options.read_enabled:
            return assemble(), 0
        if not _tests_indexed_column(bound, options.specs):
            # no index of the table's options covers a tested column: do not open (or fetch)
            # any file's indexes. Files indexed under older options may hold an index of a
            # tested column that this leaves unused: they are kept, never wrongly skipped.
            return assemble(), 0
        # files the stats prove hold a matching row: no index can skip them, open none
        alive_idx = np.flatnonzero(alive_mask & ~stats_prove_match(bound, stats))
        kind = cols.index_kind()[alive_idx]
        emb = alive_idx[kind == _EMBEDDED]
        external: list[int] = alive_idx[kind == _EXTERNAL].tolist()
        embedded: list[int] = []
        if len(emb):
            bloom = cols.bloom()
            verdict = bloom.evaluate(bound) if bloom is not None else None
            if verdict is None:
                embedded = emb.tolist()
            else:
                at = cols.live_idx[emb]
                skip = ~verdict.keep[at]
                embedded = emb[~skip & ~verdict.decided[at]].tolist()  # to open one by one
                by_column = np.asarray([verdict.column[a] for a in at[skip].tolist()], dtype=object)
                for column in set(by_column.tolist()):
                    where = emb[skip][by_column == column]
                    bulk.append((where, cols.bloom_skips(column, where)))
        todo = [(i, False) for i in embedded] + [(i, True) for i in external]
        n_read = self._evaluate_indexes(entries, todo, bound, decisions, notes)
        # every embedded container this tier consulted: opened one by one, or answered by
        # the snapshot's bloom matrix built from the same bytes
        self._index_bytes_read += sum(
            len(entries[i].file.embedded_index or b"") for i in emb.tolist()
        )
        return assemble(), n_read

    def _evaluate_indexes(
        self,
        entries: Sequence[ManifestEntry],
        todo: list[tuple[int, bool]],
        bound: Any,
        decisions: dict[int, FileDecision],
        notes: _Warnings,
    ) -> int:
        """Each file's indexes, for the files ``todo`` (position, whether an ``.index``
        file), into ``decisions``; returns the number of index files read.

        Unless this predicate's shape skipped files on this snapshot before, a probe of
        a few files goes first; when none of them is skipped and each keeps at least
        :data:`DENSE_ROWS` rows, the indexes keep everything and the rest are kept
        unopened (kept files are never wrong; only their row counts are less exact)."""
        key = (self._gain_base, predicate_shape(bound)) if self._gain_base is not None else None
        memory = self._gains.get(key) if key is not None else None
        probe = {None: _PROBE, IndexGain.NOTHING: 1, IndexGain.SKIPPED: len(todo)}[memory]
        n_read = 0
        skipped = False
        dense = True
        for first, part in ((True, todo[:probe]), (False, todo[probe:])):
            if not part:
                continue
            if not first and not skipped and dense:
                break  # the probe kept every file, densely: so would the rest
            external = [i for i, ext in part if ext]
            opened = dict(
                zip(
                    external,
                    self._open_index_files([entries[i] for i in external], bound, notes),
                    strict=True,
                )
            )
            for i, ext in part:
                e = entries[i]
                if ext:
                    index, nbytes = opened[i]
                    if index is None:
                        decisions[i] = FileDecision(e, keep=True)
                        dense = False
                        continue
                    n_read += 1
                    self._index_bytes_read += nbytes
                    d = self._evaluate_opened(e, index, bound, SkipTier.INDEX_FILE, notes)
                else:
                    assert e.file.embedded_index is not None
                    d = self._index_decision(
                        e, e.file.embedded_index, bound, SkipTier.EMBEDDED_INDEX, notes
                    )
                decisions[i] = d
                skipped |= not d.keep
                dense &= d.keep and d.rows is not None and len(d.rows) >= DENSE_ROWS
        if key is not None and todo:
            if skipped:
                self._gains.put(key, IndexGain.SKIPPED, 200)
            elif dense:
                self._gains.put(key, IndexGain.NOTHING, 200)
        return n_read

    def _decide_primary_key(
        self,
        entries: Sequence[ManifestEntry],
        cols: _PlanColumns,
        pred: BooleanExpression,
        bound: Any,
        row_type: RowType,
        use_indexes: bool,
        notes: _Warnings,
        time_zone: str,
        merge: MergeEngine,
    ) -> tuple[list[FileDecision], int]:
        """A primary-key table's files hold *versions* of keys, merged at read time: a file
        may be skipped only where that cannot bring back an older version (Paimon's
        ``KeyValueFileStoreScan``).

        * Conjuncts on key columns (primary key, partition columns) prune per file: a file
          they rule out holds no version of a matching key.
        * The whole predicate prunes only whole buckets: when no file of a (partition,
          bucket) may hold a matching version, no merged row of it can match. If any file
          may, every file of the bucket that the key conjuncts keep is read.

        * ``merge-engine = partial-update``: a merged row mixes columns of several versions,
          and each of its values (NULL too) is one some version holds in that column, so
          only conjuncts that read at most one non-key column may prune a bucket (a file
          none of whose rows satisfies such a conjunct holds no version that makes the
          merged row satisfy it); ``a = 1 AND b = 2`` is two such conjuncts, judged apart.
        * ``merge-engine = aggregation``: the same, but only for columns whose function
          returns a value some version holds (max, min, first_*, bool_*); a sum can match
          where no version does, so conjuncts on summed columns never prune; nor do those
          on ``ignore-retract`` columns (a key of retracts only merges to NULL there).
          With sequence groups, a retract sets a group's columns to NULL (a value no
          version may hold): conjuncts on them never prune.

        Row-level index results are dropped (rows of a file are versions, not rows).
        """
        schema = self.table.schema
        key_names = {k.lower() for k in (*schema.primary_keys, *schema.partition_keys)}
        key_part: BooleanExpression = AlwaysTrue()
        for c in conjuncts(pred):
            if column_names(c) <= key_names:
                key_part = and_(key_part, c)
        engine = merge
        if engine.partial_update or engine.aggregation:
            # aggregation: only columns whose merged value is a value some version holds;
            # not with ignore-retract: a key whose versions are all retracts (or start
            # with them) merges to NULL in the column, which no version need hold
            held: set[str] | None = None
            if engine.aggregation:
                held = {
                    a.column.lower()
                    for a in engine.aggs
                    if a.function in VALUE_PRESERVING and not a.ignore_retract
                }
            elif engine.groups:  # a retract clears a group's columns to NULL
                cleared = {c.lower() for seq, cols in engine.groups for c in cols if c not in seq}
                held = {n.lower() for n in row_type.names} - cleared
            full, n_full = self._decide_partial_update(
                entries, cols, pred, key_names, row_type, use_indexes, notes, time_zone, held
            )
        else:
            full, n_full = self._decide(entries, cols, bound, row_type, use_indexes, notes)
        key_bound = bind(row_type, key_part, time_zone=time_zone)
        if isinstance(key_bound, AlwaysTrue):
            by_key = [FileDecision(e, keep=True) for e in entries]
            n_key = 0
        elif isinstance(key_bound, AlwaysFalse):
            by_key = [FileDecision(e, keep=False, tier=SkipTier.PREDICATE) for e in entries]
            n_key = 0
        else:
            by_key, n_key = self._decide(entries, cols, key_bound, row_type, use_indexes, notes)
        live: set[tuple[Any, ...]] = {
            (e.partition, e.bucket) for e, d in zip(entries, full, strict=True) if d.keep
        }
        out: list[FileDecision] = []
        for e, f, k in zip(entries, full, by_key, strict=True):
            if (e.partition, e.bucket) not in live:
                out.append(f)
            elif k.keep:
                out.append(FileDecision(e, keep=True))
            else:
                out.append(k)
        return out, n_full + n_key

    def _decide_partial_update(
        self,
        entries: Sequence[ManifestEntry],
        cols: _PlanColumns,
        pred: BooleanExpression,
        key_names: set[str],
        row_type: RowType,
        use_indexes: bool,
        notes: _Warnings,
        time_zone: str,
        held: set[str] | None = None,
    ) -> tuple[list[FileDecision], int]:
        """Per file: kept unless its bucket has no file that may satisfy some conjunct
        reading at most one non-key column (each conjunct judged on its own: the merged row
        may take each column from a different version). ``held``: the non-key columns that
        may be that one (None: any; aggregation: those whose function returns a value of
        some version, e.g. max, not sum)."""
        out = [FileDecision(e, keep=True) for e in entries]
        n = 0
        for c in conjuncts(pred):
            extra = column_names(c) - key_names
            if len(extra) > 1 or (held is not None and not extra <= held):
                continue
            b = bind(row_type, c, time_zone=time_zone)
            if isinstance(b, AlwaysTrue):
                continue
            if isinstance(b, AlwaysFalse):
                decisions = [FileDecision(e, keep=False, tier=SkipTier.PREDICATE) for e in entries]
            else:
                decisions, k = self._decide(entries, cols, b, row_type, use_indexes, notes)
                n += k
            alive = {
                (e.partition, e.bucket) for e, d in zip(entries, decisions, strict=True) if d.keep
            }
            for i, (e, d) in enumerate(zip(entries, decisions, strict=True)):
                if (e.partition, e.bucket) not in alive and out[i].keep:
                    out[i] = d
        return out, n

    def _file_stats(self, e: ManifestEntry, notes: _Warnings) -> dict[str, ColumnStats]:
        table = self.table
        key = (table.path, e.file.file_name, e.file.schema_id, table.schema.id)
        hit = self._stats.get(key)
        if hit is not None:
            return dict(hit)
        try:
            file_schema = table.schema_by_id(e.file.schema_id)
            raw = file_column_stats(e.file, file_schema, table.schema)
        except Exception as err:  # stats we cannot decode are unknown, not an error
            notes.add(f"{table.identifier}: unreadable stats of {e.file.file_name} ({err}); kept")
            return {}
        stats = {name: ColumnStats(mn, mx, nulls) for name, (mn, mx, nulls) in raw.items()}
        self._stats.put(key, stats, _stats_nbytes(stats))
        return dict(stats)

    def _columnar_stats(
        self,
        snapshot: Snapshot,
        live: Sequence[ManifestEntry],
        entries: Sequence[ManifestEntry],
        notes: _Warnings,
        unread: tuple[str, ...] = (),
    ) -> _PlanColumns:
        """The stats of ``entries`` (a subset of the snapshot's ``live`` files) as columns,
        decoded once per snapshot and table schema and kept in the metadata cache, and
        where each of ``entries`` is among the live files. ``unread``: the manifests whose
        files ``live`` lacks (skipped by partition)."""
        table = self.table
        key = (
            table.path,
            snapshot.base_manifest_list,
            snapshot.delta_manifest_list,
            table.schema.id,
            table.schema.time_millis,
            unread,
        )
        hit = self._columnar.get(key)
        if hit is None:
            positions = {e.file.file_name: i for i, e in enumerate(live)}
            if len(positions) != len(live):  # one name twice: no lookup by name, no cache
                return self._uncached_columns(entries, notes)
            stats, messages = self._decode_stats(live, notes)
            hit = _SnapshotStats(
                positions,
                stats,
                messages,
                [],
                _LazyDecisions(live, _kept),
                _LazyDecisions(live, _by_stats),
                [],
                {},
            )
            self._columnar.put(key, hit, hit.nbytes)
        else:
            for m in hit.warnings:
                notes.add(m)
        snap = hit

        def bloom() -> BloomColumns:
            if not snap.bloom:
                types = {f.name: f.type for f in table.schema.row_type}
                built = BloomColumns.build(
                    [
                        e.file.embedded_index if e.file.schema_id == table.schema.id else None
                        for e in live
                    ],
                    types,
                )
                snap.bloom.append(built)
                self._columnar.put(key, snap, snap.nbytes)
            return snap.bloom[0]

        def prebuilt_at(at: np.ndarray, keep: np.ndarray) -> np.ndarray:
            """Decisions of the live files ``at``: kept where ``keep``, else by stats."""
            out = np.empty(len(at), dtype=object)
            kept, new_k = snap.kept.take(at[keep])
            skipped, new_s = snap.by_stats.take(at[~keep])
            out[keep] = kept
            out[~keep] = skipped
            if new_k or new_s:
                self._columnar.put(key, snap, snap.nbytes)
            return out

        def kinds() -> np.ndarray:
            if not snap.kinds:
                snap.kinds.append(_index_kinds(live))
                self._columnar.put(key, snap, snap.nbytes)
            return snap.kinds[0]

        def skips_at(column: str | None, at: np.ndarray) -> np.ndarray:
            lazy = snap.skips.get(column)
            if lazy is None:
                lazy = snap.skips[column] = _LazyDecisions(live, _bloom_skip(column))
            got, new = lazy.take(at)
            if new:
                self._columnar.put(key, snap, snap.nbytes)
            return got

        if entries is live:
            return _PlanColumns(
                hit.stats,
                np.arange(len(live)),
                bloom,
                lambda keep: prebuilt_at(np.arange(len(live)), keep),
                kinds,
                skips_at,
            )
        idx = np.fromiter(
            (hit.positions[e.file.file_name] for e in entries), dtype=np.int64, count=len(entries)
        )
        return _PlanColumns(
            hit.stats.take(idx),
            idx,
            bloom,
            lambda keep: prebuilt_at(idx, keep),
            lambda: kinds()[idx],
            lambda column, where: skips_at(column, idx[where]),
        )

    def _uncached_columns(self, entries: Sequence[ManifestEntry], notes: _Warnings) -> _PlanColumns:
        """:meth:`_columnar_stats` for files of no snapshot (or one that names a file twice)."""
        stats, _ = self._decode_stats(entries, notes)

        def decided(keep: np.ndarray) -> np.ndarray:
            out = np.empty(len(entries), dtype=object)
            out[:] = [
                _kept(e) if k else _by_stats(e) for e, k in zip(entries, keep.tolist(), strict=True)
            ]
            return out

        def skipped(column: str | None, where: np.ndarray) -> np.ndarray:
            out = np.empty(len(where), dtype=object)
            make = _bloom_skip(column)
            out[:] = [make(entries[i]) for i in where.tolist()]
            return out

        return _PlanColumns(
            stats,
            np.arange(len(entries)),
            lambda: None,
            decided,
            lambda: _index_kinds(entries),
            skipped,
        )

    def _decode_stats(
        self, entries: Sequence[ManifestEntry], notes: _Warnings
    ) -> tuple[ColumnarStats, list[str]]:
        table = self.table
        before = len(notes.messages)

        def one(i: int) -> dict[str, tuple[Any, Any, int | None]] | None:
            stats = self._file_stats(entries[i], notes)
            return {k: (v.min, v.max, v.null_count) for k, v in stats.items()}

        stats = decode_file_stats([e.file for e in entries], table.schema_by_id, table.schema, one)
        return stats, notes.messages[before:]

    def _index_row_type(self, e: ManifestEntry) -> tuple[RowType, dict[str, str]]:
        """Columns of the file's schema that still hold the same values in the table's
        schema (same field id and type: a renamed column's index still answers under its new
        name, a retyped one's does not), and the names their index has in the file where
        they were renamed since."""
        table = self.table
        if e.file.schema_id == table.schema.id:
            return table.schema.row_type, {}
        file_schema = table.schema_by_id(e.file.schema_id)
        current = {f.id: f for f in table.schema.row_type}
        same = [
            (current[f.id], f.name)
            for f in file_schema.row_type
            if f.id in current
            and current[f.id].type.with_nullable(True) == f.type.with_nullable(True)
        ]
        renamed = {now.name: stored for now, stored in same if now.name != stored}
        return RowType(tuple(now for now, _ in same)), renamed

    def _index_decision(
        self,
        e: ManifestEntry,
        data: bytes | memoryview,
        bound: Any,
        tier: SkipTier,
        notes: _Warnings,
    ) -> FileDecision:
        """The verdict of an embedded index container (small: cached by its bytes' hash)."""
        table = self.table
        raw = bytes(data)
        key = (table.path, e.file.file_name, e.file.schema_id, table.schema.id, hash(raw), len(raw))
        try:
            index = self._index_files.get(key)
            if index is None:
                index = FileIndexFile.from_bytes(raw, *self._index_row_type(e))
                self._index_files.put(key, index, _INDEX_DECODED_FACTOR * len(raw))
        except Exception as err:  # corrupt or unreadable: keep the file, say so once
            self._unusable(e, err, notes)
            return FileDecision(e, keep=True)
        return self._evaluate_opened(e, index, bound, tier, notes)

    def _unusable(self, e: ManifestEntry, err: Exception, notes: _Warnings) -> None:
        notes.add(
            f"{self.table.identifier}: file index of {e.file.file_name} unusable "
            f"({type(err).__name__}: {err}); file kept"
        )

    def _evaluate_opened(
        self, e: ManifestEntry, index: FileIndexFile, bound: Any, tier: SkipTier, notes: _Warnings
    ) -> FileDecision:
        try:
            verdict: IndexVerdict = evaluate_file_index(bound, index)
        except Exception as err:  # corrupt or unreadable: keep the file, say so once
            self._unusable(e, err, notes)
            return FileDecision(e, keep=True)
        for msg in verdict.warnings:
            notes.add(f"{self.table.identifier}: {e.file.file_name}: {msg}")
        if verdict.skip:
            return FileDecision(
                e, keep=False, tier=tier, index_type=verdict.index_type, column=verdict.column
            )
        return FileDecision(e, keep=True, rows=verdict.rows)

    def _open_index_file(
        self, e: ManifestEntry, names: Sequence[str], notes: _Warnings
    ) -> tuple[FileIndexFile | None, int]:
        """``e``'s ``.index`` file opened with the sections of the index columns ``names``
        loaded, and the index bytes this used (fetched now, or held in the cache: the
        header and those sections). Only the header and those sections are read, by range,
        adjacent sections in one read; the opened container is cached by path (index files
        are immutable: a rewrite writes a new name) and later queries fetch only sections
        it lacks. ``None``: unreadable or corrupt (warned; the file is kept)."""
        table = self.table
        name = e.file.index_file_name
        assert name is not None
        path = f"{table.data_file_dir(e)}/{name}"
        key = (table.path, e.file.file_name, e.file.schema_id, table.schema.id, path)
        io = table.file_io
        fetched = 0
        try:
            index = self._index_files.get(key)
            if index is None:
                first = io.read_range(path, 0, _HEAD_READ)
                fetched += len(first)
                head_len = FileIndexContainer.head_length(first[:PREFIX])
                if head_len > len(first):
                    rest = io.read_range(path, len(first), head_len - len(first))
                    fetched += len(rest)
                    first += rest
                container = FileIndexContainer.decode_head(first[:head_len])
                container.add_section(head_len, first[head_len:], partial=True)
                index = FileIndexFile(container, *self._index_row_type(e))
            container = index.container
            stored = set(container.columns())
            wanted = [s for s in map(index.stored_name, names) if s in stored]
            for start, length in container.ranges(wanted):
                data = io.read_range(path, start, length)
                fetched += len(data)
                container.add_section(start, data)
            self._index_files.put(key, index, _INDEX_DECODED_FACTOR * container.loaded_bytes)
        except OSError as err:
            notes.add(f"{table.identifier}: cannot read index file {name} ({err}); file kept")
            return None, fetched
        except Exception as err:  # corrupt: keep the file, say so once
            self._unusable(e, err, notes)
            return None, fetched
        used = container.head_len + sum(
            en.length for en in container.entries if en.column in wanted and en.start >= 0
        )
        return index, max(fetched, used)

    def _open_index_files(
        self, entries: Sequence[ManifestEntry], bound: Any, notes: _Warnings
    ) -> list[tuple[FileIndexFile | None, int]]:
        """:meth:`_open_index_file` for each of ``entries``; reads in parallel threads."""
        if not entries:
            return []
        names = sorted(referenced_names(bound))
        table = self.table
        # Warm queries find every index (and the sections they need) in the cache: answer
        # those here, and start threads only for the misses (a pool per query cost more
        # than the planning it served).
        out: list[tuple[FileIndexFile | None, int]] = []
        missing: list[int] = []
        for i, e in enumerate(entries):
            path = f"{table.data_file_dir(e)}/{e.file.index_file_name}"
            key = (table.path, e.file.file_name, e.file.schema_id, table.schema.id, path)
            hit = self._index_files.get(key)
            if hit is not None and all(hit.container.loaded(n) for n in names):
                out.append(self._open_index_file(e, names, notes))
            else:
                out.append((None, 0))
                missing.append(i)
        if len(missing) == 1:
            out[missing[0]] = self._open_index_file(entries[missing[0]], names, notes)
        elif missing:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(missing))) as pool:
                got = pool.map(lambda i: self._open_index_file(entries[i], names, notes), missing)
                for i, opened in zip(missing, got, strict=True):
                    out[i] = opened
        return out


def _kept(e: ManifestEntry) -> FileDecision:
    return FileDecision(e, keep=True)


def _by_stats(e: ManifestEntry) -> FileDecision:
    return FileDecision(e, keep=False, tier=SkipTier.STATS)


def _bloom_skip(column: str | None) -> Callable[[ManifestEntry], FileDecision]:
    def make(e: ManifestEntry) -> FileDecision:
        return FileDecision(
            e, keep=False, tier=SkipTier.EMBEDDED_INDEX, index_type="bloom-filter", column=column
        )

    return make


_EMBEDDED = 1
_EXTERNAL = 2


def _index_kinds(entries: Sequence[ManifestEntry]) -> np.ndarray:
    """Per file: _EMBEDDED (index in the manifest), _EXTERNAL (an ``.index`` file) or 0."""

    def kind(e: ManifestEntry) -> int:
        if e.file.embedded_index is not None:
            return _EMBEDDED
        try:
            return _EXTERNAL if e.file.index_file_name else 0
        except CorruptMetadataError:
            return _EXTERNAL  # two .index files: raised again if the file is ever read

    return np.fromiter(map(kind, entries), dtype=np.int8, count=len(entries))


def _tests_indexed_column(bound: Any, specs: Sequence[IndexColumnSpec]) -> bool:
    """Whether the bound predicate tests a column (or map key) some index is built on."""
    if not isinstance(bound, BooleanExpression):
        return True
    indexed = {spec.name for spec in specs}
    return not indexed.isdisjoint(referenced_names(bound))


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
    n = 1000 + _PLAN_BYTES * len(plan.decisions)
    for d in plan.decisions:
        if d.rows is not None:
            n += 64 + 4 * len(d.rows)  # roaring: 2 bytes a position in array containers
    return n
