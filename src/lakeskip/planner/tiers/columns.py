"""The stats of a snapshot's live files as columns, decoded once and kept between queries.

What this keeps, in the process-wide metadata cache (one budget in bytes, see
:mod:`lakeskip.catalog.cache`):

* decoded stats per data file: a file's stats never change (a rewrite of its indexes keeps
  them), so they are decoded once per (table, file, file schema, table schema) and reused by
  every later query -- decoding BinaryRows was most of the planning time;
* the stats of every live file of a snapshot as columns (:class:`ColumnarStats`), keyed by
  the snapshot's manifest lists and the table schema: a new literal on an unchanged table
  evaluates tiers 1-2 with a few array operations and decodes nothing. Beside them, built on
  first use: the snapshot's embedded bloom filters as one matrix, each file's index kind,
  and the prebuilt :class:`FileDecision` of each file per outcome (immutable, so plans share
  them).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from lakeskip.catalog.cache import CacheSection, MetadataCache
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.manifest_columns import LiveColumns
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CorruptMetadataError
from lakeskip.planner.bloom_batch import BloomColumns
from lakeskip.planner.columnar_stats import ColumnarStats, FileStatsColumns, decode_file_stats
from lakeskip.planner.report import FileDecision, SkipTier
from lakeskip.planner.stats import ColumnStats
from lakeskip.planner.tiers.notes import PlanNotes

__all__ = ["EMBEDDED", "EXTERNAL", "PlanColumns", "SnapshotColumns", "bloom_skip", "index_kinds"]

_STATS = "planner.file-stats"
_COLUMNAR = "planner.columnar-stats"
_DECISION_BYTES = 100  # one prebuilt FileDecision and its array slot
_STATS_ENTRY_BYTES = 800  # a ColumnStats, its dict slot and boxed values (tracemalloc: ~850)

EMBEDDED = 1  # index kind of a file: its index container is in the manifest
EXTERNAL = 2  # ... in an ``.index`` file beside it


@dataclass(frozen=True, slots=True)
class PlanColumns:
    """What tiers 1-3 read for one plan: the stats of its files (in the plan's order),
    each file's row among the snapshot's live files, and the snapshot's bloom filters."""

    stats: ColumnarStats
    live_idx: np.ndarray
    bloom: Callable[[], BloomColumns | None]
    # per file of the plan: its "kept" decision where the mask is set, else "skipped by stats"
    prebuilt: Callable[[np.ndarray], np.ndarray]
    index_kind: Callable[[], np.ndarray]  # EMBEDDED, EXTERNAL or 0 per file
    # "skipped by this column's bloom" decisions of these files (positions in the plan)
    bloom_skips: Callable[[str | None, np.ndarray], np.ndarray]


class SnapshotColumns:
    """The columnar stats of one table's snapshots, from the metadata cache ``cache``.

    Args:
        table: the table whose files these are.
        cache: where decoded stats and snapshot columns are kept between queries.
    """

    def __init__(self, table: FileStoreTable, cache: MetadataCache) -> None:
        self.table = table
        self._stats: CacheSection[dict[str, ColumnStats]] = cache.section(_STATS)
        self._columnar: CacheSection[_SnapshotStats] = cache.section(_COLUMNAR)

    def of(
        self,
        snapshot: Snapshot,
        live: Sequence[ManifestEntry] | LiveColumns,
        entries: Sequence[ManifestEntry] | LiveColumns,
        notes: PlanNotes,
        unread: Hashable = (),
    ) -> PlanColumns:
        """The stats of ``entries`` (a subset of the snapshot's ``live`` files) as columns,
        decoded once per snapshot and table schema and kept in the metadata cache, and
        where each of ``entries`` is among the live files. ``unread``: which of the snapshot's
        files ``live`` lacks (the manifests skipped by partition, the partitions read).
        Either may be given as columns (:class:`LiveColumns`: no per-file object is made
        until a tier asks for one)."""
        table = self.table
        key = (
            table.path,
            snapshot.base_manifest_list,
            snapshot.delta_manifest_list,
            table.schema.id,
            table.schema.time_millis,
            unread,
        )
        columns = live if isinstance(live, LiveColumns) else None
        hit = self._columnar.get(key)
        if hit is None:
            names = (
                columns.field("_FILE_NAME")
                if columns is not None
                else [e.file.file_name for e in cast(Sequence[ManifestEntry], live)]
            )
            positions = {name: i for i, name in enumerate(names)}
            if len(positions) != len(live):  # one name twice: no lookup by name, no cache
                if isinstance(entries, LiveColumns):
                    return self.uncached(entries.entries(), notes)
                return self.uncached(entries, notes)
            stats, messages = self._decode_stats(live, notes)
            made = _Entries(live)
            hit = _SnapshotStats(
                positions,
                stats,
                messages,
                [],
                _LazyDecisions(made, _kept),
                _LazyDecisions(made, _by_stats),
                [],
                {},
                made,
            )
            self._columnar.put(key, hit, hit.nbytes)
        else:
            for m in hit.warnings:
                notes.add(m)
        snap = hit

        def bloom() -> BloomColumns:
            if not snap.bloom:
                types = {f.name: f.type for f in table.schema.row_type}
                files = snap.entries.get()
                built = BloomColumns.build(
                    [
                        e.file.embedded_index if e.file.schema_id == table.schema.id else None
                        for e in files
                    ],
                    types,
                    [e.file.row_count for e in files],
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
                snap.kinds.append(index_kinds(snap.entries.get()))
                self._columnar.put(key, snap, snap.nbytes)
            return snap.kinds[0]

        def skips_at(column: str | None, at: np.ndarray) -> np.ndarray:
            lazy = snap.skips.get(column)
            if lazy is None:
                lazy = snap.skips[column] = _LazyDecisions(snap.entries, bloom_skip(column))
            got, new = lazy.take(at)
            if new:
                self._columnar.put(key, snap, snap.nbytes)
            return got

        # the live files themselves (a whole-table plan's kept files): no lookup by name
        if entries is live or (
            columns is None
            and not isinstance(entries, LiveColumns)
            and len(entries) == len(live)
            and all(map(operator.is_, entries, cast(Sequence[ManifestEntry], live)))
        ):
            return PlanColumns(
                hit.stats,
                np.arange(len(live)),
                bloom,
                lambda keep: prebuilt_at(np.arange(len(live)), keep),
                kinds,
                skips_at,
            )
        names = (
            entries.field("_FILE_NAME")
            if isinstance(entries, LiveColumns)
            else [e.file.file_name for e in entries]
        )
        idx = np.fromiter(map(hit.positions.__getitem__, names), dtype=np.int64, count=len(names))
        return PlanColumns(
            hit.stats.take(idx),
            idx,
            bloom,
            lambda keep: prebuilt_at(idx, keep),
            lambda: kinds()[idx],
            lambda column, where: skips_at(column, idx[where]),
        )

    def uncached(self, entries: Sequence[ManifestEntry], notes: PlanNotes) -> PlanColumns:
        """:meth:`of` for files of no snapshot (or one that names a file twice)."""
        stats, _ = self._decode_stats(entries, notes)

        def decided(keep: np.ndarray) -> np.ndarray:
            out = np.empty(len(entries), dtype=object)
            out[:] = [
                _kept(e) if k else _by_stats(e) for e, k in zip(entries, keep.tolist(), strict=True)
            ]
            return out

        def skipped(column: str | None, where: np.ndarray) -> np.ndarray:
            out = np.empty(len(where), dtype=object)
            make = bloom_skip(column)
            out[:] = [make(entries[i]) for i in where.tolist()]
            return out

        return PlanColumns(
            stats,
            np.arange(len(entries)),
            lambda: None,
            decided,
            lambda: index_kinds(entries),
            skipped,
        )

    def _decode_stats(
        self, entries: Sequence[ManifestEntry] | LiveColumns, notes: PlanNotes
    ) -> tuple[ColumnarStats, list[str]]:
        table = self.table
        before = len(notes.messages)
        files: FileStatsColumns | None = None
        if isinstance(entries, LiveColumns):
            at = entries.entry_at
            counts = entries.longs("_ROW_COUNT")
            schema_ids = entries.longs("_SCHEMA_ID").tolist()
            stats_cols = entries.field("_VALUE_STATS_COLS")
            spans = entries.stats_spans("_VALUE_STATS")
            got = entries.stats_lists("_VALUE_STATS") if spans is None else None
            if spans is not None:  # min and max rows read where they lie
                files = FileStatsColumns(
                    counts, schema_ids, stats_cols, [], [], spans[0], (spans[1], spans[2])
                )
            elif got is not None:
                files = FileStatsColumns(counts, schema_ids, stats_cols, *got)
            else:  # no stats field: decoded file by file, as their entries say
                entries = entries.entries()
        if files is None:
            listed = cast(Sequence[ManifestEntry], entries)

            def at(i: int) -> ManifestEntry:
                return listed[i]

            files = FileStatsColumns.of_metas([e.file for e in listed])

        def one(i: int) -> dict[str, tuple[Any, Any, int | None]] | None:
            stats = self._file_stats(at(i), notes)
            return {k: (v.min, v.max, v.null_count) for k, v in stats.items()}

        stats = decode_file_stats(files, table.schema_by_id, table.schema, one)
        return stats, notes.messages[before:]

    def _file_stats(self, e: ManifestEntry, notes: PlanNotes) -> dict[str, ColumnStats]:
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
    entries: _Entries  # the live files' entries (made on first use from columns)

    @property
    def nbytes(self) -> int:
        n = self.stats.nbytes + 120 * len(self.positions)
        n += sum(b.nbytes for b in self.bloom)
        n += self.kept.nbytes + self.by_stats.nbytes
        n += sum(d.nbytes for d in self.skips.values())
        return n + sum(k.nbytes for k in self.kinds)


class _Entries:
    """The live files' :class:`ManifestEntry` objects: as given, or made from their columns
    the first time a tier needs them (an embedded index, a decision per file)."""

    __slots__ = ("_got", "_live")

    def __len__(self) -> int:
        return len(self._live)

    def __init__(self, live: Sequence[ManifestEntry] | LiveColumns) -> None:
        self._live = live
        self._got: Sequence[ManifestEntry] | None = None if isinstance(live, LiveColumns) else live

    def get(self) -> Sequence[ManifestEntry]:
        got = self._got
        if got is None:
            got = self._got = cast(LiveColumns, self._live).entries()
        return got


class _LazyDecisions:
    """One prebuilt :class:`FileDecision` per file (they are immutable, so plans share
    them), each built the first time a plan needs it: a fresh process's first plan builds
    one decision per file, not one of every kind per file."""

    __slots__ = ("_built", "_entries", "_make", "_values", "count")

    def __init__(self, entries: _Entries, make: Callable[[ManifestEntry], FileDecision]) -> None:
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
            entries, make = self._entries.get(), self._make
            self._values[need] = [make(entries[i]) for i in need.tolist()]
            self._built[need] = True
            self.count += len(need)
        return self._values[idx], bool(len(need))


def _stats_nbytes(stats: dict[str, ColumnStats]) -> int:
    n = 300  # the dict, its cache key and LRU node
    for name, cs in stats.items():
        n += _STATS_ENTRY_BYTES + len(name)
        for v in (cs.min, cs.max):
            n += len(v) if isinstance(v, (str, bytes)) else 32
    return n


def _kept(e: ManifestEntry) -> FileDecision:
    return FileDecision(e, keep=True)


def _by_stats(e: ManifestEntry) -> FileDecision:
    return FileDecision(e, keep=False, tier=SkipTier.STATS)


def bloom_skip(column: str | None) -> Callable[[ManifestEntry], FileDecision]:
    """The decision "skipped by the embedded bloom filter of ``column``", per file."""

    def make(e: ManifestEntry) -> FileDecision:
        return FileDecision(
            e, keep=False, tier=SkipTier.EMBEDDED_INDEX, index_type="bloom-filter", column=column
        )

    return make


def index_kinds(entries: Sequence[ManifestEntry]) -> np.ndarray:
    """Per file: :data:`EMBEDDED` (index in the manifest), :data:`EXTERNAL` (an ``.index``
    file) or 0."""

    def kind(e: ManifestEntry) -> int:
        if e.file.embedded_index is not None:
            return EMBEDDED
        try:
            return EXTERNAL if e.file.index_file_name else 0
        except CorruptMetadataError:
            return EXTERNAL  # two .index files: raised again if the file is ever read

    return np.fromiter(map(kind, entries), dtype=np.int8, count=len(entries))
