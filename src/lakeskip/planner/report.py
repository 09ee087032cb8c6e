"""What the planner decided, per file and in total.

A :class:`ScanPlan` lists the data files Spark must read. Every other file carries the
reason it was skipped, and :class:`PruningReport` sums those reasons up the way ``EXPLAIN
PRUNING`` prints them: skipped by partition, by bucket, by stats, by each index type and column.
"""

from __future__ import annotations

import enum
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from pyroaring import BitMap

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.manifest_columns import LiveColumns, bulk

__all__ = ["FileDecision", "PruningReport", "ScanPlan", "SkipTier"]


class SkipTier(enum.Enum):
    """Which tier decided to skip a file."""

    PREDICATE = "predicate"  # the predicate is always false: no file can match
    PARTITION = "partition"
    BUCKET = "bucket"  # fixed-bucket table: the bucket-key filter selects other buckets
    STATS = "stats"
    EMBEDDED_INDEX = "embedded-index"
    INDEX_FILE = "index-file"
    DELETED = "deletion-vector"  # its deletion vector deletes every row of the file
    # a primary-key table with deletion vectors: batch reads skip level-0 files (Paimon's
    # batchScanSkipLevel0; lakeskip's own writes never leave any)
    LEVEL0 = "level-0"
    # a runtime filter (the keys a join found, :mod:`lakeskip.planner.runtime`) ruled the
    # file out; the decision's ``index_type`` / ``column`` say by which tier and column
    RUNTIME = "runtime"


@dataclass(frozen=True, slots=True)
class FileDecision:
    """The planner's verdict on one data file.

    ``rows`` is set when a bitmap index narrowed the file to exactly these row positions.
    """

    entry: ManifestEntry
    keep: bool
    tier: SkipTier | None = None
    index_type: str | None = None
    column: str | None = None
    rows: BitMap | None = None

    @property
    def reason(self) -> str:
        if self.keep:
            return "kept"
        if self.tier is SkipTier.RUNTIME:
            return f"runtime {self.index_type or 'stats'}({self.column})"
        if self.index_type:
            return f"{self.index_type}({self.column})" if self.column else self.index_type
        return self.tier.value if self.tier else "skipped"


def same_decisions(
    entries: Sequence[ManifestEntry], keep: bool, tier: SkipTier | None = None
) -> list[FileDecision]:
    """``[FileDecision(e, keep, tier) for e in entries]``, made a field at a time
    (:func:`~lakeskip.catalog.format.manifest_columns.bulk`): a whole table planned with
    nothing to skip decides 100,000 files alike."""
    n = len(entries)
    nothing: list[None] = [None] * n
    return bulk(FileDecision, [entries, [keep] * n, [tier] * n, nothing, nothing, nothing])


@dataclass(frozen=True, slots=True)
class PruningReport:
    """Totals for one table reference in one query."""

    table: str
    predicate: str
    snapshot_id: int | None
    total_files: int
    kept_files: int
    total_bytes: int
    kept_bytes: int
    total_rows: int
    kept_rows: int
    skipped_by_partition: int
    skipped_by_stats: int
    skipped_by_index: Mapping[str, int]  # index type -> files
    skipped_by_column: Mapping[str, int]  # "bloom-filter(user_id)" -> files
    index_files_read: int
    rows_narrowed_files: int  # files kept with a row bitmap (not all rows)
    planning_ms: float
    warnings: tuple[str, ...] = ()
    skipped_by_bucket: int = 0
    #: bytes of file indexes the planner evaluated (embedded, or ``.index`` files read from
    #: storage or the metadata cache)
    index_bytes_read: int = 0
    #: files skipped by runtime filters, by tier and column: ``"stats(ss_sold_date_sk)"``,
    #: ``"bloom-filter(ss_item_sk)"``, ``"partition(dt)"``
    skipped_at_runtime: Mapping[str, int] = field(default_factory=dict)
    #: files skipped by a pushed ``LIMIT`` / top-N (:mod:`lakeskip.planner.top_n`):
    #: ``"limit"`` or ``"top-n(ts)"`` -> files, and why the kept ones were kept
    skipped_by_limit: Mapping[str, int] = field(default_factory=dict)
    limit_note: str = ""
    #: CPU time the planning thread used of ``planning_ms`` (the rest: waiting for a core,
    #: the GIL or storage)
    planning_cpu_ms: float = 0.0

    @property
    def skipped_files(self) -> int:
        return self.total_files - self.kept_files

    def summary(self) -> str:
        """One line, as the shell prints after a query."""
        parts = [f"{self.table}: files {self.kept_files}/{self.total_files} kept"]
        reasons = []
        if self.skipped_by_partition:
            reasons.append(f"partition {self.skipped_by_partition}")
        if self.skipped_by_bucket:
            reasons.append(f"bucket {self.skipped_by_bucket}")
        if self.skipped_by_stats:
            reasons.append(f"stats {self.skipped_by_stats}")
        reasons += [f"{k} {v}" for k, v in sorted(self.skipped_by_column.items())]
        reasons += [f"runtime {k} {v}" for k, v in sorted(self.skipped_at_runtime.items())]
        reasons += [f"{k} {v}" for k, v in sorted(self.skipped_by_limit.items())]
        if reasons:
            parts.append("skipped by " + ", ".join(reasons))
        parts.append(f"planned in {self.planning_ms:.1f} ms")
        return "; ".join(parts)

    def lines(self) -> list[tuple[str, str]]:
        """(metric, value) rows for ``EXPLAIN PRUNING``."""
        rows = [
            ("table", self.table),
            ("snapshot", str(self.snapshot_id) if self.snapshot_id is not None else "(empty)"),
            ("predicate", self.predicate),
            ("files total", str(self.total_files)),
            ("files kept", str(self.kept_files)),
            ("files skipped by partition", str(self.skipped_by_partition)),
            ("files skipped by bucket", str(self.skipped_by_bucket)),
            ("files skipped by stats", str(self.skipped_by_stats)),
        ]
        rows += [
            (f"files skipped by {k}", str(v)) for k, v in sorted(self.skipped_by_index.items())
        ]
        rows += [
            (f"files skipped by {k}", str(v)) for k, v in sorted(self.skipped_by_column.items())
        ]
        rows += [
            (f"files skipped at run time by {k}", str(v))
            for k, v in sorted(self.skipped_at_runtime.items())
        ]
        rows += [
            (f"files skipped by {k}", str(v)) for k, v in sorted(self.skipped_by_limit.items())
        ]
        if self.limit_note:
            rows.append(("limit pushed", self.limit_note))
        rows += [
            ("files narrowed to rows by bitmap", str(self.rows_narrowed_files)),
            ("index files read", str(self.index_files_read)),
            ("index bytes read", str(self.index_bytes_read)),
            ("bytes total", str(self.total_bytes)),
            ("bytes kept", str(self.kept_bytes)),
            ("rows total", str(self.total_rows)),
            ("rows kept (upper bound)", str(self.kept_rows)),
            ("planning time ms", f"{self.planning_ms:.2f}"),
            ("planning CPU ms", f"{self.planning_cpu_ms:.2f}"),
        ]
        rows += [("warning", w) for w in self.warnings]
        return rows


class _Decisions:
    """A plan's decisions, given or made on first use (then kept): a whole table planned from
    the manifests' columns makes no per-file object until something asks for one."""

    __slots__ = ("_files", "_got", "_lock", "_make")

    def __init__(
        self,
        got: tuple[FileDecision, ...] | None,
        make: Callable[[], Sequence[FileDecision]] | None = None,
    ) -> None:
        self._got = got
        self._make = make
        self._lock = threading.Lock()
        self._files: tuple[ManifestEntry, ...] | None = None

    def get(self) -> tuple[FileDecision, ...]:
        got = self._got
        if got is None:
            with self._lock:  # py4j callback threads may share a cached plan
                got = self._got
                if got is None:
                    assert self._make is not None
                    got = self._got = tuple(self._make())
                    self._make = None
        return got

    def files(self) -> tuple[ManifestEntry, ...]:
        files = self._files
        if files is None:
            files = self._files = tuple(d.entry for d in self.get() if d.keep)
        return files

    def __reduce__(self) -> tuple[type[_Decisions], tuple[tuple[FileDecision, ...]]]:
        return _Decisions, (self.get(),)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Decisions) and self.get() == other.get()

    def __hash__(self) -> int:
        return hash(self.get())


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """The files to read for one table reference, with every decision and the report.

    ``kept``: the kept files as columns, when the plan was made from the manifests' columns
    (every live file decided alike, :meth:`of_columns`): the kept files in :attr:`files`'
    order, read without making their objects. ``decided`` holds the decisions (use
    :attr:`decisions`)."""

    decided: _Decisions
    report: PruningReport
    kept: LiveColumns | None = field(default=None, compare=False)

    @property
    def decisions(self) -> tuple[FileDecision, ...]:
        return self.decided.get()

    @property
    def files(self) -> tuple[ManifestEntry, ...]:
        """The kept files (made on first use, then kept)."""
        return self.decided.files()

    @staticmethod
    def of_columns(
        table: str,
        predicate: str,
        snapshot_id: int | None,
        live: LiveColumns,
        skipped: np.ndarray,
        tiers: Sequence[SkipTier],
        planning_ms: float,
        warnings: Sequence[str] = (),
    ) -> ScanPlan:
        """The plan keeping every file of ``live`` but those at positions ``skipped`` (each
        skipped by its tier of ``tiers``), as :meth:`build` makes it of the decisions
        ``[kept..., skipped...]`` (the kept in order), which are made only when asked for."""
        kinds: list[SkipTier | None] = [None, *dict.fromkeys(tiers)]
        codes = np.zeros(len(live), dtype=np.int8)
        codes[skipped] = np.fromiter(map(kinds.index, tiers), dtype=np.int8, count=len(tiers))
        return ScanPlan.of_tiers(
            table, predicate, snapshot_id, live, codes, kinds, planning_ms, warnings, skipped
        )

    @staticmethod
    def of_tiers(
        table: str,
        predicate: str,
        snapshot_id: int | None,
        live: LiveColumns,
        codes: np.ndarray,
        tiers: Sequence[SkipTier | None],
        planning_ms: float,
        warnings: Sequence[str] = (),
        skipped_last: np.ndarray | None = None,
    ) -> ScanPlan:
        """The plan deciding each file of ``live`` by its code (``tiers[code]``: the tier
        that skipped it, ``None``: kept), as :meth:`build` makes it of the decisions in
        ``live``'s order (``skipped_last``: of the kept in order, then of the skipped files
        at these positions), which are made only when asked for."""
        keep = codes == 0
        size = live.longs("_FILE_SIZE")
        rows = live.longs("_ROW_COUNT")
        counts = np.bincount(codes, minlength=len(tiers)).tolist()
        by_tier: Counter[SkipTier] = Counter()
        for t, c in zip(tiers, counts, strict=True):
            if t is not None:
                by_tier[t] += c

        def make() -> list[FileDecision]:
            entries = live.entries()
            order = (
                range(len(entries))
                if skipped_last is None
                else [*np.flatnonzero(keep).tolist(), *skipped_last.tolist()]
            )
            made = codes.tolist()
            return [
                FileDecision(entries[i], keep=True)
                if made[i] == 0
                else FileDecision(entries[i], keep=False, tier=tiers[made[i]])
                for i in order
            ]

        report = PruningReport(
            table=table,
            predicate=predicate,
            snapshot_id=snapshot_id,
            total_files=len(live),
            kept_files=int(keep.sum()),
            total_bytes=int(size.sum()),
            kept_bytes=int(size[keep].sum()),
            total_rows=int(rows.sum()),
            kept_rows=int(rows[keep].sum()),
            skipped_by_partition=by_tier[SkipTier.PARTITION],
            skipped_by_stats=by_tier[SkipTier.STATS] + by_tier[SkipTier.PREDICATE],
            skipped_by_index={},
            skipped_by_column={},
            index_files_read=0,
            rows_narrowed_files=0,
            planning_ms=planning_ms,
            warnings=tuple(warnings),
            skipped_by_bucket=by_tier[SkipTier.BUCKET],
        )
        return ScanPlan(_Decisions(None, make), report, live.take(keep))

    @staticmethod
    def build(
        table: str,
        predicate: str,
        snapshot_id: int | None,
        decisions: Sequence[FileDecision],
        index_files_read: int,
        planning_ms: float,
        warnings: Sequence[str] = (),
        index_bytes_read: int = 0,
        unread_files: int = 0,
        unread_bytes: int = 0,
        unread_rows: int = 0,
        planning_cpu_ms: float = 0.0,
    ) -> ScanPlan:
        """``unread_files``: files skipped by partition before they were decided, of
        manifests skipped whole or of partitions left out of a manifest read (counted in
        the totals and as skipped by partition); ``unread_bytes`` / ``unread_rows``: the
        bytes and rows of those known (a manifest skipped whole is not read: its are not)."""
        by_index: Counter[str] = Counter()
        by_column: Counter[str] = Counter()
        runtime: Counter[str] = Counter()
        partition, bucket, stats, narrowed = unread_files, 0, 0, 0
        kept_rows = kept_files = kept_bytes = 0
        total_bytes, total_rows = unread_bytes, unread_rows
        for d in decisions:  # one pass: plans of 100,000 files are built per query
            f = d.entry.file
            total_bytes += f.file_size
            total_rows += f.row_count
            if d.keep:
                kept_files += 1
                kept_bytes += f.file_size
                kept_rows += len(d.rows) if d.rows is not None else f.row_count
                narrowed += d.rows is not None
            elif d.tier is SkipTier.RUNTIME:
                runtime[f"{d.index_type or 'stats'}({d.column})"] += 1
            elif d.tier is SkipTier.PARTITION:
                partition += 1
            elif d.tier is SkipTier.BUCKET:
                bucket += 1
            elif d.tier in (SkipTier.STATS, SkipTier.PREDICATE):
                stats += 1
            elif d.index_type:
                by_index[d.index_type] += 1
                by_column[f"{d.index_type}({d.column})"] += 1
        report = PruningReport(
            table=table,
            predicate=predicate,
            snapshot_id=snapshot_id,
            total_files=len(decisions) + unread_files,
            kept_files=kept_files,
            total_bytes=total_bytes,
            kept_bytes=kept_bytes,
            total_rows=total_rows,
            kept_rows=kept_rows,
            skipped_by_partition=partition,
            skipped_by_stats=stats,
            skipped_by_index=dict(by_index),
            skipped_by_column=dict(by_column),
            index_files_read=index_files_read,
            rows_narrowed_files=narrowed,
            planning_ms=planning_ms,
            warnings=tuple(warnings),
            skipped_by_bucket=bucket,
            index_bytes_read=index_bytes_read,
            skipped_at_runtime=dict(runtime),
            planning_cpu_ms=planning_cpu_ms,
        )
        return ScanPlan(_Decisions(tuple(decisions)), report)
