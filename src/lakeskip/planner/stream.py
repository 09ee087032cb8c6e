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

A primary-key table (``merge-engine`` ``deduplicate``, with or without deletion vectors) is
read as Paimon reads one with ``changelog-producer`` ``none`` (its ``DeltaFollowUpScanner``:
the files each snapshot wrote, no changelog), one snapshot at a time: after the first batch,
a micro-batch ends at the first ``APPEND`` or ``OVERWRITE`` snapshot after its start
(:func:`stream_end`), and delivers the row versions that snapshot wrote
(:func:`changed_files`): the rows of its added files whose sequence number is above every
sequence number of the files it removed in the same bucket (a lookup write of a
deletion-vector table merges old runs into its new files: their rows keep their old
sequence numbers and are not delivered again; INSERT OVERWRITE numbers its rows after the
rows it replaces), and of kind ``+I`` / ``+U``. The files are read as written (no merge, no
deletion vector: a later update or DELETE does not hide a version already written), so a
consumer gets *upserts*: each committed version of a key once, in the micro-batch of its
snapshot, at most one per key in a micro-batch (a write merges its own rows of one key),
batches in commit order; no retractions (``-U`` / ``-D`` rows and deletion-vector marks are
not delivered). ``COMPACT`` snapshots are skipped. ``partial-update``, ``aggregation`` and
``first-row`` are refused, as Paimon refuses them without a changelog producer.

>>> StreamOffset(3).after(), StreamOffset(3, full=True).after()
(3, 2)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import assert_never

from lakeskip.catalog.format.manifest import FileKind, ManifestEntry, read_manifest_list
from lakeskip.catalog.format.snapshot import CommitKind, Snapshot
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw, TableKind
from lakeskip.catalog.ops.time_travel import existing_snapshot
from lakeskip.catalog.pk.merge_engine import DEDUPLICATE
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidOptionError, StreamReadError
from lakeskip.expressions import BooleanExpression
from lakeskip.planner.report import ScanPlan
from lakeskip.planner.scan import ScanPlanner

__all__ = [
    "SCAN_MODE",
    "StreamBatch",
    "StreamOffset",
    "added_files",
    "changed_files",
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


@dataclass(frozen=True, slots=True)
class StreamBatch:
    """The planned files of one micro-batch; ``changes``: the files of a primary-key table
    are read as written (no merge; only ``+I`` / ``+U`` rows), and a file named here
    delivers only its rows of at least this sequence number (``None``: a table read, as a
    batch read's)."""

    plan: ScanPlan
    changes: Mapping[str, int] | None = None


def _primary_key(kind: TableKind) -> bool:
    match kind:
        case Append() | AppendDv():
            return False
        case PkMerge() | PkRaw():
            return True
        case _:
            assert_never(kind)


def check_streamable(table: FileStoreTable) -> None:
    """Raise unless a streaming read of ``table`` is served: append tables, with or without
    deletion vectors; primary-key tables of ``merge-engine`` ``deduplicate``.

    Raises:
        StreamReadError: a primary-key table of another merge engine.
    """
    kind = table.kind
    match kind:
        case Append() | AppendDv():
            return
        case PkMerge(merge=merge) | PkRaw(merge=merge):
            if merge.kind != DEDUPLICATE:
                raise StreamReadError(
                    f"{table.identifier}: a streaming read of a primary-key table with"
                    f" merge-engine {merge.kind!r} is not supported (no changelog producer,"
                    " as in Paimon); read it in batch"
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


def changed_files(
    table: FileStoreTable, snapshot: Snapshot
) -> tuple[list[ManifestEntry], dict[str, int]]:
    """The files holding the row versions an ``APPEND`` or ``OVERWRITE`` snapshot of a
    primary-key table wrote, and, for a file that also holds rows a merge copied from the
    files the snapshot removed, the first sequence number of its new rows (see the module
    docstring). Other kinds: none.

    Sequence numbers grow per bucket: a write numbers its rows after the largest of the
    bucket's live files (``next_sequences``), so a row the snapshot wrote is numbered above
    every file it removed from that bucket, and a copied row is not.
    """
    if not _delivers(snapshot):
        return [], {}
    added: list[ManifestEntry] = []
    removed: dict[tuple[object, int], int] = {}
    for meta in read_manifest_list(table.file_io, table.path, snapshot.delta_manifest_list):
        for e in table.manifest(meta):
            if e.kind is FileKind.ADD:
                added.append(e)
            else:
                key = (e.partition, e.bucket)
                removed[key] = max(removed.get(key, -1), e.file.max_sequence_number)
    files: list[ManifestEntry] = []
    since: dict[str, int] = {}
    for e in added:
        floor = removed.get((e.partition, e.bucket))
        if floor is None or e.file.min_sequence_number > floor:
            files.append(e)
        elif e.file.max_sequence_number > floor:
            files.append(e)
            since[e.file.file_name] = floor + 1
    return files, since


def _delivers(snapshot: Snapshot) -> bool:
    """Whether a primary-key table's stream delivers rows of this snapshot's kind."""
    return snapshot.commit_kind in (CommitKind.APPEND, CommitKind.OVERWRITE)


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
    A primary-key table's batch ends at its first ``APPEND`` or ``OVERWRITE`` snapshot
    (one write per micro-batch: versions of a key arrive in commit order).

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
    if _primary_key(table.kind):
        for sid in range(start.snapshot + 1, cap + 1):
            if _delivers(existing_snapshot(table, sid)):
                return StreamOffset(sid)
        return StreamOffset(cap)
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
) -> StreamBatch:
    """The files of the micro-batch ``(start, end]``: snapshot ``end`` whole when ``start``
    is ``full`` (the plan of a batch read), else the files the ``APPEND`` snapshots after
    ``start`` added up to ``end`` (a primary-key table: the versions its snapshots wrote,
    :func:`changed_files`); kept or skipped by ``predicate`` as a batch read's (a
    primary-key table's file by file, as each row is delivered on its own).

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
        return StreamBatch(
            planner.plan(
                predicate, time_zone=time_zone, snapshot=existing_snapshot(table, end.snapshot)
            )
        )
    keyed = _primary_key(table.kind)
    if end.snapshot == start.snapshot:
        empty = planner.plan_files([], predicate, None, time_zone=time_zone)
        return StreamBatch(empty, {} if keyed else None)
    last = existing_snapshot(table, end.snapshot)
    entries: list[ManifestEntry] = []
    since: dict[str, int] = {}
    for sid in range(start.snapshot + 1, end.snapshot + 1):
        snap = last if sid == end.snapshot else existing_snapshot(table, sid)
        if keyed:
            files, floors = changed_files(table, snap)
            entries.extend(files)
            since.update(floors)
        else:
            entries.extend(added_files(table, snap))
    if keyed:
        plan = planner.plan_files(entries, predicate, None, time_zone=time_zone, as_written=True)
        return StreamBatch(plan, since)
    return StreamBatch(planner.plan_files(entries, predicate, last, time_zone=time_zone))
