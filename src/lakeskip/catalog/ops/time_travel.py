"""Time travel: which snapshot a ``VERSION AS OF`` / ``TIMESTAMP AS OF`` / ``scan.*`` read sees.

Follows Paimon (``TimeTravelUtil``, ``StaticFromTimestampStartingScanner``):

* a *version* names a tag first, then (if it is all digits) a snapshot id -- Paimon's
  ``scan.version``, which Spark's ``VERSION AS OF`` sets;
* a *timestamp* (epoch milliseconds) picks the newest snapshot committed at or before it; a
  timestamp before the earliest snapshot is an error, not "the current data";
* the table options ``scan.snapshot-id``, ``scan.tag-name``, ``scan.version`` and
  ``scan.timestamp-millis`` do the same for every batch read of the table.

:func:`read_snapshot` is the one place that decides which snapshot a read sees: the
statement's ``AS OF`` clause, else the session's ``scan.*`` settings, else the table's
``scan.*`` options, else the latest. Both read paths (the Spark catalog's scan and the
session's pruned views) call it. A time-travel read plans and reads that snapshot's files
with that snapshot's schema (:func:`table_at`).

Example:
    >>> TimeTravel.version_of(3)
    TimeTravel(snapshot_id=None, tag=None, version='3', timestamp_millis=None)
    >>> TimeTravel.version_of("v1.0").describe()
    "version 'v1.0'"
    >>> time_travel_from_options({"scan.snapshot-id": "2"})
    TimeTravel(snapshot_id=2, tag=None, version=None, timestamp_millis=None)
    >>> time_travel_from_options({"bucket": "-1"}) is None
    True
    >>> TimeTravel.of_clause(version="v1"), TimeTravel.of_clause() is None
    (TimeTravel(snapshot_id=None, tag=None, version='v1', timestamp_millis=None), True)
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass

from lakeskip.catalog.format.snapshot import TAG_DIR, TAG_PREFIX, Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CorruptMetadataError, InvalidOptionError, SnapshotNotFoundError

__all__ = [
    "SCAN_OPTIONS",
    "TimeTravel",
    "choose_time_travel",
    "existing_snapshot",
    "read_snapshot",
    "read_tag",
    "resolve_snapshot",
    "table_at",
    "table_with_schema",
    "time_travel_from_options",
]

SCAN_SNAPSHOT_ID = "scan.snapshot-id"
SCAN_TAG_NAME = "scan.tag-name"
SCAN_VERSION = "scan.version"
SCAN_TIMESTAMP_MILLIS = "scan.timestamp-millis"
SCAN_OPTIONS = (SCAN_SNAPSHOT_ID, SCAN_TAG_NAME, SCAN_VERSION, SCAN_TIMESTAMP_MILLIS)


@dataclass(frozen=True, slots=True)
class TimeTravel:
    """Exactly one of the fields is set."""

    snapshot_id: int | None = None
    tag: str | None = None
    version: str | None = None
    timestamp_millis: int | None = None

    @classmethod
    def version_of(cls, value: int | str) -> TimeTravel:
        """``VERSION AS OF <value>``: a tag of that name first, else (all digits) a snapshot
        id, as Paimon's ``scan.version`` -- for ``VERSION AS OF 3`` and ``VERSION AS OF '3'``
        alike, on every read path (Spark hands its catalog the version as a string)."""
        return cls(version=str(value))

    @classmethod
    def of_clause(
        cls, version: int | str | None = None, timestamp_millis: int | None = None
    ) -> TimeTravel | None:
        """A statement's ``VERSION AS OF <version>`` or ``TIMESTAMP AS OF`` (evaluated to
        epoch milliseconds), or ``None`` when it has neither."""
        if version is not None:
            return cls.version_of(version)
        if timestamp_millis is not None:
            return cls(timestamp_millis=timestamp_millis)
        return None

    def describe(self) -> str:
        if self.snapshot_id is not None:
            return f"snapshot {self.snapshot_id}"
        if self.tag is not None:
            return f"tag {self.tag!r}"
        if self.version is not None:
            return f"version {self.version!r}"
        assert self.timestamp_millis is not None
        return f"timestamp {readable_millis(self.timestamp_millis)}"


def readable_millis(millis: int) -> str:
    """Epoch milliseconds as a UTC timestamp a person reads.

    >>> readable_millis(978307200000), readable_millis(1700000000123)
    ('2001-01-01 00:00:00 UTC', '2023-11-14 22:13:20.123 UTC')
    """
    t = datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.timezone.utc)
    text = t.strftime("%Y-%m-%d %H:%M:%S")
    return f"{text}.{millis % 1000:03d} UTC" if millis % 1000 else f"{text} UTC"


def _option_int(options: Mapping[str, str], key: str) -> int:
    text = options[key].strip()
    try:
        return int(text)
    except ValueError:
        raise InvalidOptionError(f"option {key!r} = {text!r}: expected an integer") from None


def time_travel_from_options(options: Mapping[str, str]) -> TimeTravel | None:
    """The time travel the ``scan.*`` options ask for, or ``None`` (read the latest).

    Raises:
        InvalidOptionError: more than one of them is set, or a malformed number.
    """
    present = [k for k in SCAN_OPTIONS if options.get(k) not in (None, "")]
    if not present:
        return None
    if len(present) > 1:
        raise InvalidOptionError(f"conflicting time-travel options: {', '.join(present)}")
    key = present[0]
    if key == SCAN_SNAPSHOT_ID:
        return TimeTravel(snapshot_id=_option_int(options, key))
    if key == SCAN_TIMESTAMP_MILLIS:
        return TimeTravel(timestamp_millis=_option_int(options, key))
    if key == SCAN_TAG_NAME:
        return TimeTravel(tag=options[key])
    return TimeTravel(version=options[key])


def choose_time_travel(
    table: FileStoreTable,
    clause: TimeTravel | None = None,
    session_options: Mapping[str, str] | None = None,
) -> TimeTravel | None:
    """The time travel a batch read of ``table`` does: the statement's clause, else the
    session's ``scan.*`` settings (``session_options``, keys without Spark's
    ``spark.paimon.`` prefix), else the table's ``scan.*`` options; ``None``: the latest.

    Raises:
        InvalidOptionError: conflicting or malformed ``scan.*`` settings or options (read
            only when no clause or setting comes before them).
    """
    if clause is not None:
        return clause
    return time_travel_from_options(session_options or {}) or time_travel_from_options(
        table.schema.options
    )


def read_snapshot(
    table: FileStoreTable,
    clause: TimeTravel | None = None,
    session_options: Mapping[str, str] | None = None,
) -> Snapshot | None:
    """The snapshot a batch read of ``table`` sees (:func:`choose_time_travel`, resolved);
    ``None``: no time travel, the read sees the latest snapshot.

    Raises:
        SnapshotNotFoundError: the chosen snapshot, tag or timestamp does not exist.
        InvalidOptionError: see :func:`choose_time_travel`.
    """
    travel = choose_time_travel(table, clause, session_options)
    return resolve_snapshot(table, travel) if travel is not None else None


def read_tag(table: FileStoreTable, name: str) -> Snapshot | None:
    """The snapshot a Paimon tag (``tag/tag-<name>``) holds, or ``None`` if no such tag."""
    path = f"{table.path}/{TAG_DIR}/{TAG_PREFIX}{name}"
    try:
        data = table.file_io.read_bytes(path)
    except FileNotFoundError:
        return None
    try:
        return Snapshot.from_json(data)
    except CorruptMetadataError as e:
        raise CorruptMetadataError(f"tag file {path}: {e}") from e


def existing_snapshot(table: FileStoreTable, snapshot_id: int) -> Snapshot:
    """Snapshot ``snapshot_id`` of ``table``; a one-line :class:`SnapshotNotFoundError`
    naming the snapshots the table has when it does not exist (expired, or never)."""
    sm = table.snapshot_manager
    if snapshot_id < 1 or not table.file_io.exists(sm.path(snapshot_id)):
        earliest, latest = sm.earliest_id(), sm.latest_id()
        have = f"snapshots {earliest}..{latest}" if latest is not None else "no snapshots"
        raise SnapshotNotFoundError(
            f"{table.identifier}: snapshot {snapshot_id} does not exist (the table has {have})"
        )
    return table.snapshot(snapshot_id)


def resolve_snapshot(table: FileStoreTable, travel: TimeTravel) -> Snapshot:
    """The snapshot a time-travel read of ``table`` sees.

    Raises:
        SnapshotNotFoundError: no such snapshot or tag, or no snapshot at or before the
            timestamp.
    """
    if travel.snapshot_id is not None:
        return existing_snapshot(table, travel.snapshot_id)
    if travel.tag is not None:
        snap = read_tag(table, travel.tag)
        if snap is None:
            raise SnapshotNotFoundError(f"{table.identifier}: tag {travel.tag!r} does not exist")
        return snap
    if travel.version is not None:
        snap = read_tag(table, travel.version)
        if snap is not None:
            return snap
        if travel.version.strip().isdigit():
            return existing_snapshot(table, int(travel.version))
        raise SnapshotNotFoundError(
            f"{table.identifier}: version {travel.version!r} is neither a tag nor a snapshot id"
        )
    assert travel.timestamp_millis is not None
    return _at_or_before(table, travel.timestamp_millis)


def _at_or_before(table: FileStoreTable, millis: int) -> Snapshot:
    sm = table.snapshot_manager
    best: Snapshot | None = None
    # Snapshot times grow with ids: walk back from the latest until one is old enough.
    for sid in reversed(sm.list_ids()):
        snap = table.snapshot(sid)
        if snap.time_millis <= millis:
            best = snap
            break
    if best is None:
        earliest = sm.earliest_id()
        first = (
            f"is from {readable_millis(table.snapshot(earliest).time_millis)}"
            if earliest is not None
            else "does not exist: the table has no snapshots"
        )
        raise SnapshotNotFoundError(
            f"{table.identifier}: no snapshot at or before {readable_millis(millis)} "
            f"(the earliest snapshot {first})"
        )
    return best


def table_at(table: FileStoreTable, snapshot: Snapshot) -> FileStoreTable:
    """A read-only view of ``table`` with the schema ``snapshot`` was written with."""
    return table_with_schema(table, snapshot.schema_id)


def table_with_schema(table: FileStoreTable, schema_id: int) -> FileStoreTable:
    """A read-only view of ``table`` with schema ``schema_id`` (a streaming read's columns
    are those of the schema it started with)."""
    if schema_id == table.schema.id:
        return table
    return FileStoreTable(
        table.identifier, table.path, table.file_io, table.schema_by_id(schema_id)
    )
