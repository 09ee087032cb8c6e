"""Tiers 1-4 for files whose rows stand alone (append tables, primary-key tables read
without a merge, and the key conjuncts of those read with one): partition values, buckets
and stats for every file at once over the columnar stats, then the indexes of the files
they keep -- the snapshot's embedded bloom filters together, then each file's indexes
where that is not the last word.

Each file's indexes are opened only where they may help (:mod:`lakeskip.planner.index_gain`):
files the stats prove to match are kept unopened, and unless this predicate's shape skipped
files on this snapshot before, a probe of :data:`PROBE` files goes first, remembered per
snapshot and predicate shape in the metadata cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from lakeskip.catalog.cache import CacheSection, MetadataCache
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.manifest_columns import LiveColumns
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.options import file_index_options
from lakeskip.catalog.table import FileStoreTable
from lakeskip.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Or,
)
from lakeskip.index.base import FileIndexReader, answers
from lakeskip.index.options import IndexColumnSpec
from lakeskip.index.range_bitmap.bit_slice import WINDOW_ROWS
from lakeskip.index.registry import get_indexer
from lakeskip.planner.bucket_selector import select_buckets
from lakeskip.planner.columnar_stats import ColumnarStats
from lakeskip.planner.index_gain import (
    DENSE_ROWS,
    IndexGain,
    drop_decided_leaves,
    predicate_shape,
    stats_prove_match,
)
from lakeskip.planner.report import FileDecision, SkipTier
from lakeskip.planner.tiers.columns import EMBEDDED, EXTERNAL, PlanColumns
from lakeskip.planner.tiers.index_files import IndexFiles
from lakeskip.planner.tiers.notes import PlanNotes
from lakeskip.planner.vector_evaluator import VectorStatsEvaluator
from lakeskip.types import RowType

__all__ = ["COLUMN_TIERS", "PROBE", "FileTiers", "gain_base"]

_GAIN = "planner.index-gain"
PROBE = 3  # files whose indexes are evaluated before deciding whether the rest are worth it


def gain_base(table: FileStoreTable, snapshot: Snapshot | None) -> Hashable | None:
    """What the index-gain memory of ``snapshot`` is kept under (``None``: not kept)."""
    if snapshot is None:
        return None
    schema = table.schema
    return (
        table.path,
        snapshot.base_manifest_list,
        snapshot.delta_manifest_list,
        schema.id,
        schema.time_millis,
    )


class FileTiers:
    """Tiers 1-4 of one plan (or one runtime filter); not shared between threads.

    Args:
        table: the planned table.
        index_files: opens and evaluates its files' indexes.
        cache: where the index-gain memory is kept.
        snapshot_key: the snapshot the memory is kept for (:func:`gain_base`; ``None``: none).
        notes: where this plan's warnings go.
    """

    def __init__(
        self,
        table: FileStoreTable,
        index_files: IndexFiles,
        cache: MetadataCache,
        snapshot_key: Hashable | None,
        notes: PlanNotes,
    ) -> None:
        self.table = table
        self.index_files = index_files
        self.notes = notes
        self._gains: CacheSection[IndexGain] = cache.section(_GAIN)
        self._gain_base = snapshot_key
        self.index_bytes_read = 0  # by every decide() of this object

    def decide(
        self,
        entries: Sequence[ManifestEntry],
        cols: PlanColumns,
        bound: Any,
        row_type: RowType,
        use_indexes: bool,
    ) -> tuple[list[FileDecision], int]:
        """Every file's decision (``cols.stats``: the stats of ``entries``, in order) and
        the number of ``.index`` files read."""
        schema = self.table.schema
        evaluator = VectorStatsEvaluator(bound)
        part_keys = list(schema.partition_keys)
        decisions: dict[int, FileDecision] = {}
        n = len(entries)
        colstats = cols.stats
        part = (
            ColumnarStats.of_values(
                colstats.row_count,
                {k: [e.partition[j] for e in entries] for j, k in enumerate(part_keys)},
                {k: row_type.field(k).type for k in part_keys},
            )
            if part_keys
            else None
        )
        chosen = _buckets(schema, bound)
        other_bucket = None
        if chosen is not None:
            num, buckets = chosen
            other_bucket = np.fromiter(
                (e.total_buckets == num and e.bucket not in buckets for e in entries),
                dtype=np.bool_,
                count=n,
            )
        part_out, bucket_out, alive_mask, stats = _first_tiers(
            evaluator, colstats, part, other_bucket
        )
        for i in np.flatnonzero(part_out).tolist():
            decisions[i] = FileDecision(entries[i], keep=False, tier=SkipTier.PARTITION)
        for i in np.flatnonzero(bucket_out).tolist():
            decisions[i] = FileDecision(entries[i], keep=False, tier=SkipTier.BUCKET)

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

        if not self.may_use_indexes(bound, row_type, use_indexes):
            return assemble(), 0
        # files the stats prove hold a matching row: no index can skip them, open none
        alive_idx = np.flatnonzero(alive_mask & ~stats_prove_match(bound, stats))
        kind = cols.index_kind()[alive_idx]
        emb = alive_idx[kind == EMBEDDED]
        external: list[int] = alive_idx[kind == EXTERNAL].tolist()
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
        # leaves the stats decide on every file left (IS NOT NULL without NULLs): no index
        # is asked them, and their columns' index sections are not read
        to_ask = drop_decided_leaves(bound, stats, np.asarray([i for i, _ in todo], np.int64))
        n_read = 0
        if not isinstance(to_ask, AlwaysTrue):
            n_read = self._evaluate_indexes(entries, todo, bound, to_ask, decisions)
        # every embedded container this tier consulted: opened one by one, or answered by
        # the snapshot's bloom matrix built from the same bytes
        self.index_bytes_read += sum(
            len(entries[i].file.embedded_index or b"") for i in emb.tolist()
        )
        return assemble(), n_read

    def may_use_indexes(self, bound: Any, row_type: RowType, use_indexes: bool) -> bool:
        """Whether tiers 3-4 may be asked anything: indexes used and read, and some index of
        the table's options covers a tested column. Where none does, no file's indexes are
        opened (or fetched): files indexed under older options may hold an index of a tested
        column that this leaves unused: they are kept, never wrongly skipped."""
        schema = self.table.schema
        options = file_index_options(schema.options, row_type, schema.partition_keys)
        return use_indexes and options.read_enabled and _tests_indexed_column(bound, options.specs)

    def decide_columns(
        self, live: LiveColumns, cols: PlanColumns, bound: Any, row_type: RowType
    ) -> np.ndarray:
        """Tiers 1-2 of every file of ``live`` (``cols.stats``: their stats, in order), as
        :meth:`decide` decides them where no index is asked (:meth:`may_use_indexes`), from
        the files' columns: no per-file object made. Per file: 0 kept, else the
        :data:`COLUMN_TIERS` position of the tier that skipped it."""
        schema = self.table.schema
        part_keys = list(schema.partition_keys)
        colstats = cols.stats
        part = None
        if part_keys:
            ids, values, _ = live.partitions()
            # each distinct partition's values once, then per file: a NULL value is every
            # row of the file null
            distinct = ColumnarStats.of_values(
                np.ones(len(values), dtype=np.int64),
                {k: [v[j] for v in values] for j, k in enumerate(part_keys)},
                {k: row_type.field(k).type for k in part_keys},
            )
            rows = colstats.row_count
            part = ColumnarStats(
                rows,
                {
                    k: dataclasses.replace(c.take(ids), null_count=c.null_count[ids] * rows)
                    for k, c in distinct.columns.items()
                },
                distinct.types,
            )
        chosen = _buckets(schema, bound)
        other_bucket = None
        if chosen is not None:
            num, buckets = chosen
            other_bucket = (live.total_buckets() == num) & ~np.isin(
                live.buckets(), np.fromiter(buckets, dtype=np.int64, count=len(buckets))
            )
        part_out, bucket_out, alive, _ = _first_tiers(
            VectorStatsEvaluator(bound), colstats, part, other_bucket
        )
        codes = np.zeros(len(colstats), dtype=np.int8)
        codes[~alive] = COLUMN_TIERS.index(SkipTier.STATS)
        codes[bucket_out] = COLUMN_TIERS.index(SkipTier.BUCKET)
        codes[part_out] = COLUMN_TIERS.index(SkipTier.PARTITION)
        return codes

    def _evaluate_indexes(
        self,
        entries: Sequence[ManifestEntry],
        todo: list[tuple[int, bool]],
        bound: Any,
        to_ask: BooleanExpression,
        decisions: dict[int, FileDecision],
    ) -> int:
        """Each file's indexes, for the files ``todo`` (position, whether an ``.index``
        file), into ``decisions``; returns the number of index files read. The indexes
        answer ``to_ask`` (``bound`` less the leaves the stats decide on these files);
        what they achieved is remembered under ``bound``'s shape.

        Unless this predicate's shape skipped files on this snapshot before, a probe of
        a few files goes first; when none of them is skipped and each keeps at least
        :data:`DENSE_ROWS` rows, the indexes keep everything and the rest are kept
        unopened (kept files are never wrong; only their row counts are less exact). A
        probed file of more than ``WINDOW_ROWS`` rows is first asked about those rows alone
        (``IndexFiles.window_matches``), and evaluated whole only when they do not hold
        dense matches."""
        notes = self.notes
        index_files = self.index_files
        key = (self._gain_base, predicate_shape(bound)) if self._gain_base is not None else None
        memory = self._gains.get(key) if key is not None else None
        probe = {None: PROBE, IndexGain.NOTHING: 1, IndexGain.SKIPPED: len(todo)}[memory]
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
                    index_files.open_all([entries[i] for i in external], to_ask, notes),
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
                    self.index_bytes_read += nbytes
                    if (
                        first
                        and len(todo) > probe
                        and e.file.row_count > WINDOW_ROWS
                        and index_files.window_matches(index, to_ask) >= DENSE_ROWS
                    ):
                        # a probed file dense in its first rows alone: kept, and dense, as
                        # the whole evaluation would find it, for an eighth of its work;
                        # its kept rows are then counted as its rows, as for the files
                        # the probe leaves unopened
                        decisions[i] = FileDecision(e, keep=True)
                        continue
                    d = index_files.decision(e, index, to_ask, SkipTier.INDEX_FILE, notes)
                else:
                    assert e.file.embedded_index is not None
                    d = index_files.embedded_decision(
                        e, e.file.embedded_index, to_ask, SkipTier.EMBEDDED_INDEX, notes
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


#: what :meth:`FileTiers.decide_columns` codes a file's decision by (its position; 0: kept)
COLUMN_TIERS: tuple[SkipTier | None, ...] = (
    None,
    SkipTier.PARTITION,
    SkipTier.BUCKET,
    SkipTier.STATS,
)


def _buckets(schema: Any, bound: Any) -> tuple[int, set[int]] | None:
    """The table's bucket count and the buckets a fixed-bucket table's files may match in
    (None: every bucket may)."""
    try:
        spec = schema.bucket_spec()
    except Exception:  # options of a table written elsewhere we cannot read: no pruning
        return None
    if spec is None:
        return None
    buckets = select_buckets(bound, spec)
    return None if buckets is None else (spec.num_buckets, buckets)


def _first_tiers(
    evaluator: VectorStatsEvaluator,
    colstats: ColumnarStats,
    part: ColumnarStats | None,
    other_bucket: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, ColumnarStats]:
    """Tiers 1-2 over every file at once: the files skipped by partition (``part``: their
    partition values as stats), then by bucket (``other_bucket``: the files of a bucket the
    predicate rules out), the files the stats keep of the rest, and the stats the later
    tiers see (partition columns included)."""
    n = len(colstats)
    alive = np.ones(n, dtype=np.bool_)
    stats = colstats
    part_out = np.zeros(n, dtype=np.bool_)
    if part is not None:
        part_out = ~evaluator.evaluate(part)
        alive &= ~part_out
        stats = colstats.with_columns(part)
    bucket_out = np.zeros(n, dtype=np.bool_)
    if other_bucket is not None:
        bucket_out = alive & other_bucket
        alive &= ~bucket_out
    alive &= evaluator.evaluate(stats)
    return part_out, bucket_out, alive, stats


def _tests_indexed_column(bound: Any, specs: Sequence[IndexColumnSpec]) -> bool:
    """Whether some leaf of the bound predicate tests a column (or map key) with an index
    that can answer the leaf's operator (a bloom filter answers ``=`` and ``IN``, not ``IS
    NOT NULL`` nor a range: :func:`~lakeskip.index.base.answers`). Where none can, every
    leaf is REMAIN on every file, so opening the indexes could only keep every file."""
    if not isinstance(bound, BooleanExpression):
        return True
    readers: dict[str, list[type[FileIndexReader]]] = {}
    for spec in specs:
        try:
            reader = get_indexer(spec.index_type).reader_type
        except Exception:  # a type this build cannot read: let the index tier decide
            reader = _ANY_LEAF
        readers.setdefault(spec.name, []).append(reader)
    return _answerable(bound, readers)


class _AnyLeaf(FileIndexReader):
    """Stands for an index type whose reader is unknown here: assumed to answer anything."""


_ANY_LEAF = _AnyLeaf


def _answerable(e: Any, readers: dict[str, list[type[FileIndexReader]]]) -> bool:
    if isinstance(e, (And, Or)):
        return _answerable(e.left, readers) or _answerable(e.right, readers)
    if isinstance(e, BoundPredicate):
        return any(r is _ANY_LEAF or answers(r, e.op.value) for r in readers.get(e.term.name, ()))
    # a constant no index can change; anything else: let the index tier decide
    return not isinstance(e, (AlwaysTrue, AlwaysFalse))
