"""Streaming reads of a table (``spark.readStream.table``), as Paimon's Spark source reads one.

A stream's position (its *offset*) is a snapshot id: :class:`StreamOffset` ``(s, full=False)``
says every snapshot up to ``s`` was delivered; ``(s, full=True)`` says nothing was yet and the
next micro-batch is snapshot ``s`` whole. Where a stream starts is Paimon's ``scan.mode``
(:func:`stream_start`): ``latest-full`` (the default) reads the latest snapshot whole, then
each new snapshot; ``latest`` only the snapshots committed after the start;
``from-snapshot`` / ``from-snapshot-full`` start at ``scan.snapshot-id`` (``-full``: that
snapshot whole); ``from-timestamp`` after the newest snapshot committed before
``scan.timestamp-millis`` (``default`` picks ``from-snapshot`` / ``from-timestamp`` when one
of those options is set).

A micro-batch after the first delivers the data files the ``APPEND`` snapshots in its range
added (the ADD entries of their delta manifests, :func:`added_files`), as Paimon's streaming
read of an append table: ``COMPACT`` snapshots rewrite rows already delivered, and
``OVERWRITE`` / ``ANALYZE`` snapshots are skipped (Paimon's ``streaming-read-overwrite``
defaults to false), so rows removed by DML are not retracted. The files are pruned by the
query's filter like a batch read's (:meth:`ScanPlanner.plan_files`), minus the rows the
deletion vectors of the batch's last snapshot delete. A micro-batch is a range of whole
snapshots (:func:`stream_end`; ``max_files`` bounds the files of all but a batch's first
snapshot), so a restarted stream plans the same files for the same range.

Primary-key tables are refused: their delta files hold versions of keys, and lakeskip has no
changelog producer to turn them into changes; read them in batch.

>>> StreamOffset(3).after(), StreamOffset(3, full=True).after()
(3, 2)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import assert_never

from lakeskip.catalog.format.manifest import FileKind, ManifestEntry, read_manifest_list
from lakeskip.catalog.format.snapshot import CommitKind, Snapshot
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.ops.time_travel import existing_snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidOptionError, StreamReadError
from lakeskip.expressions import BooleanExpression
from lakeskip.planner.report import ScanPlan
from lakeskip.planner.scan import ScanPlanner

__all__ = [
    "SCAN_MODE",
    "StreamOffset",
    "added_files",
    "check_streamable",
    "plan_stream_batch",
    "stream_end",
    "stream_start",
]

SCAN_MODE = "scan.mode"
_SNAPSHOT_ID = "scan.snapshot-id"
_TIMESTAMP = "scan.timestamp-millis"
_MODES = (
    "default",
    "latest-full",
    "full",
    "latest",
    "from-snapshot",
    "from-snapshot-full",
    "from-timestamp",
)


@dataclass(frozen=True, slots=True)
class StreamOffset:
    """Snapshots up to ``snapshot`` delivered (0: none); ``full``: ``snapshot`` is not yet
    delivered, and the next micro-batch reads it whole."""

    snapshot: int
    full: bool = False

    def after(self) -> int:
        """The last snapshot delivered."""
        return self.snapshot - 1 if self.full else self.snapshot


def check_streamable(table: FileStoreTable) -> None:
    """Raise unless a streaming read of ``table`` is served (append tables, with or without
    deletion vectors).

    Raises:
        StreamReadError: a primary-key table.
    """
    kind = table.kind
    match kind:
        case Append() | AppendDv():
            return
        case PkMerge() | PkRaw():
            raise StreamReadError(
                f"{table.identifier}: a streaming read of a primary-key table is not supported"
                " (no changelog producer); read it in batch"
            )
        case _:
            assert_never(kind)


def _option_int(options: Mapping[str, str], key: str, mode: str) -> int:
    text = options.get(key, "").strip()
    if not text:
        raise InvalidOptionError(f"scan.mode {mode!r} needs the option {key!r}")
    try:
        return int(text)
    except ValueError:
        raise InvalidOptionError(f"option {key!r} = {text!r}: expected an integer") from None


def stream_start(table: FileStoreTable, options: Mapping[str, str]) -> StreamOffset:
    """Where a new stream of ``table`` starts: its initial offset, from Paimon's ``scan.mode``,
    ``scan.snapshot-id`` and ``scan.timestamp-millis`` (the stream's options over the
    table's).

    Raises:
        StreamReadError: the table is not streamable (:func:`check_streamable`).
        InvalidOptionError: an unknown or unsupported mode, or its option missing.
        SnapshotNotFoundError: ``from-snapshot-full`` of a snapshot the table lacks.
    """
    check_streamable(table)
    merged = {**table.schema.options, **options}
    mode = merged.get(SCAN_MODE, "default").strip().lower() or "default"
    if mode not in _MODES:
        raise InvalidOptionError(
            f"scan.mode {mode!r} is not supported by a streaming read of lakeskip"
            f" (supported: {', '.join(_MODES)})"
        )
    if mode == "default":
        if merged.get(_SNAPSHOT_ID, "").strip():
            mode = "from-snapshot"
        elif merged.get(_TIMESTAMP, "").strip():
            mode = "from-timestamp"
        else:
            mode = "latest-full"
    latest = table.snapshot_manager.latest_id() or 0
    if mode in ("latest-full", "full"):
        return StreamOffset(latest, full=latest > 0)
    if mode == "latest":
        return StreamOffset(latest)
    if mode == "from-snapshot":
        return StreamOffset(max(0, _option_int(merged, _SNAPSHOT_ID, mode) - 1))
    if mode == "from-snapshot-full":
        return StreamOffset(
            existing_snapshot(table, _option_int(merged, _SNAPSHOT_ID, mode)).id, True
        )
    millis = _option_int(merged, _TIMESTAMP, mode)
    # Paimon: the newest snapshot committed before the time is taken as read
    before = 0
    for sid in table.snapshot_manager.list_ids():
        if table.snapshot(sid).time_millis < millis:
            before = sid
        else:
            break
    if before == 0:
        before = max(0, (table.snapshot_manager.earliest_id() or 1) - 1)
    return StreamOffset(before)


def added_files(table: FileStoreTable, snapshot: Snapshot) -> list[ManifestEntry]:
    """The data files an ``APPEND`` snapshot added (its delta manifests' ADD entries); none
    for the other kinds (compaction, overwrite, analyze: see the module docstring)."""
    if snapshot.commit_kind is not CommitKind.APPEND:
        return []
    out: list[ManifestEntry] = []
    for meta in read_manifest_list(table.file_io, table.path, snapshot.delta_manifest_list):
        if meta.num_added_files:
            out.extend(e for e in table.manifest(meta) if e.kind is FileKind.ADD)
    return out


def _added_count(table: FileStoreTable, snapshot: Snapshot) -> int:
    if snapshot.commit_kind is not CommitKind.APPEND:
        return 0
    metas = read_manifest_list(table.file_io, table.path, snapshot.delta_manifest_list)
    return sum(m.num_added_files for m in metas)


def stream_end(
    table: FileStoreTable,
    start: StreamOffset,
    max_files: int | None = None,
    until: int | None = None,
) -> StreamOffset:
    """The end of the next micro-batch after ``start`` (``start`` itself: nothing new).

    The first batch of a ``full`` start is that snapshot alone. Otherwise every snapshot up to
    the latest (at most ``until``, the last one of a ``Trigger.AvailableNow`` run); with
    ``max_files``, as many whole snapshots as add at most that many files, and always one.

    Raises:
        SnapshotNotFoundError: a snapshot the stream has still to read expired.
    """
    if start.full:
        return StreamOffset(start.snapshot)
    latest = table.snapshot_manager.latest_id()
    if latest is None:
        return start
    cap = latest if until is None else min(latest, until)
    if cap <= start.snapshot:
        return start
    if max_files is None:
        return StreamOffset(cap)
    taken = 0
    end = start.snapshot
    for sid in range(start.snapshot + 1, cap + 1):
        count = _added_count(table, existing_snapshot(table, sid))
        if end > start.snapshot and taken + count > max_files:
            break
        taken += count
        end = sid
    return StreamOffset(end)


def plan_stream_batch(
    planner: ScanPlanner,
    start: StreamOffset,
    end: StreamOffset,
    predicate: BooleanExpression | None,
    time_zone: str = "UTC",
) -> ScanPlan:
    """The files of the micro-batch ``(start, end]``: snapshot ``end`` whole when ``start``
    is ``full`` (the plan of a batch read), else the files the ``APPEND`` snapshots after
    ``start`` added up to ``end``; kept or skipped by ``predicate`` as a batch read's.

    Raises:
        StreamReadError: the table is not streamable, or the offsets are out of order.
        SnapshotNotFoundError: a snapshot of the range expired.
    """
    table = planner.table
    check_streamable(table)
    if end.full or end.snapshot < start.after():
        raise StreamReadError(f"{table.identifier}: stream offsets out of order: {start} to {end}")
    if start.full:
        if end.snapshot != start.snapshot:
            raise StreamReadError(
                f"{table.identifier}: the first micro-batch of a full start reads snapshot"
                f" {start.snapshot} alone, not up to {end.snapshot}"
            )
        return planner.plan(
            predicate, time_zone=time_zone, snapshot=existing_snapshot(table, end.snapshot)
        )
    if end.snapshot == start.snapshot:
        return planner.plan_files([], predicate, None, time_zone=time_zone)
    last = existing_snapshot(table, end.snapshot)
    entries: list[ManifestEntry] = []
    for sid in range(start.snapshot + 1, end.snapshot + 1):
        snap = last if sid == end.snapshot else existing_snapshot(table, sid)
        entries.extend(added_files(table, snap))
    return planner.plan_files(entries, predicate, last, time_zone=time_zone)
