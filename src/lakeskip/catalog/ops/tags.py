"""Tags: named snapshots in Paimon's layout (``<table>/tag/tag-<name>``).

A tag file is the tagged snapshot's JSON, as Paimon's ``TagManager`` writes it: without a
retention it is the snapshot JSON itself (so readers of Paimon <= 0.7 can read it); with one
it also carries ``tagCreateTime`` (Jackson's ``LocalDateTime`` array
``[y, mo, d, h, mi, s, nanos]``, trailing zero fields omitted) and ``tagTimeRetained``
(``Duration`` as decimal seconds).

A tag keeps its snapshot readable: ``expire_snapshots`` and ``remove_orphan_files`` keep
every file a tag references (:mod:`lakeskip.catalog.ops.maintenance`), and ``VERSION AS OF
'<tag>'`` reads it (:mod:`lakeskip.catalog.ops.time_travel`).

Creating a tag is atomic (create-if-absent) where the filesystem allows it; two concurrent
``create_tag`` calls with one name give one tag and one :class:`InvalidArgumentError`
(unless both write the very same bytes: the same snapshot, no retention, where both get
the tag they asked for). A create whose answer was lost (an object store client retrying
its create-only PUT hears "exists" for its own first attempt) is told apart from a tag
that existed before by looking first, then by the bytes (:func:`_create`).
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass

from lakeskip.catalog.format.snapshot import TAG_DIR, TAG_PREFIX, Snapshot, tag_files
from lakeskip.catalog.ops.time_travel import TimeTravel, read_tag, resolve_snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CorruptMetadataError, InvalidArgumentError, SnapshotNotFoundError

__all__ = ["TagInfo", "create_tag", "delete_tag", "list_tags", "rename_tag", "replace_tag"]


@dataclass(frozen=True, slots=True)
class TagInfo:
    """One tag: its name, the snapshot it holds, and its retention if it has one."""

    name: str
    snapshot: Snapshot
    create_time: datetime.datetime | None = None
    time_retained_millis: int | None = None


def _path(table: FileStoreTable, name: str) -> str:
    return f"{table.path}/{TAG_DIR}/{TAG_PREFIX}{name}"


def _check_name(name: str, what: str = "Tag name") -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError(f"{what} shouldn't be blank")
    if "/" in name or "\\" in name:
        raise InvalidArgumentError(f"{what} {name!r} must not contain '/' or '\\'")
    return name


def _snapshot(table: FileStoreTable, snapshot_id: int | None) -> Snapshot:
    if snapshot_id is None:
        latest = table.latest_snapshot()
        if latest is None:
            raise SnapshotNotFoundError(f"{table.identifier} has no snapshot to tag")
        return latest
    return resolve_snapshot(table, TimeTravel(snapshot_id=snapshot_id))


def _local_datetime_json(dt: datetime.datetime) -> list[int]:
    """Jackson's ``LocalDateTime`` array: trailing zero second / nanos omitted."""
    out = [dt.year, dt.month, dt.day, dt.hour, dt.minute]
    nanos = dt.microsecond * 1000
    if dt.second or nanos:
        out.append(dt.second)
        if nanos:
            out.append(nanos)
    return out


def _content(snapshot: Snapshot, time_retained_millis: int | None) -> bytes:
    if time_retained_millis is None:
        return snapshot.to_json().encode()
    obj = json.loads(snapshot.to_json())
    obj["tagCreateTime"] = _local_datetime_json(datetime.datetime.now())
    obj["tagTimeRetained"] = time_retained_millis / 1000
    return json.dumps(obj, indent=2).encode()


def _create(table: FileStoreTable, name: str, data: bytes) -> bool:
    """Create tag ``name`` holding ``data`` unless it exists: False if it existed before
    this call, or now holds other bytes (a concurrent create won). A tag without
    retention is its snapshot's JSON, not unique to this call: "exists" alone cannot tell
    a lost answer from an existing tag, so the tag is looked up first."""
    path = _path(table, name)
    if table.file_io.exists(path):
        return False
    return table.file_io.try_publish(path, data)


def _written(table: FileStoreTable, name: str, snapshot: Snapshot) -> None:
    """The snapshot may have been expired while the tag was written: then the tag would
    point at deleted files; take it back and say so."""
    if not table.file_io.exists(table.snapshot_manager.path(snapshot.id)):
        table.file_io.delete(_path(table, name))
        raise SnapshotNotFoundError(
            f"{table.identifier}: snapshot {snapshot.id} was expired while tag {name!r} was created"
        )


def create_tag(
    table: FileStoreTable,
    name: str,
    snapshot_id: int | None = None,
    time_retained_millis: int | None = None,
    *,
    ignore_if_exists: bool = False,
) -> Snapshot:
    """Tag ``snapshot_id`` (default: the latest snapshot) as ``name``.

    Returns:
        The tagged snapshot.

    Raises:
        InvalidArgumentError: blank name, or the tag exists (unless ``ignore_if_exists``).
        SnapshotNotFoundError: no such snapshot.
    """
    _check_name(name)
    snapshot = _snapshot(table, snapshot_id)
    if not _create(table, name, _content(snapshot, time_retained_millis)):
        if ignore_if_exists:
            existing = read_tag(table, name)
            return existing if existing is not None else snapshot
        raise InvalidArgumentError(f"{table.identifier}: tag {name!r} already exists")
    _written(table, name, snapshot)
    return snapshot


def replace_tag(
    table: FileStoreTable,
    name: str,
    snapshot_id: int | None = None,
    time_retained_millis: int | None = None,
) -> Snapshot:
    """Point the existing tag ``name`` at ``snapshot_id`` (default: the latest).

    Raises:
        InvalidArgumentError: blank name or no such tag.
        SnapshotNotFoundError: no such snapshot.
    """
    _check_name(name)
    if read_tag(table, name) is None:
        raise InvalidArgumentError(f"{table.identifier}: tag {name!r} doesn't exist")
    snapshot = _snapshot(table, snapshot_id)
    table.file_io.write_bytes(_path(table, name), _content(snapshot, time_retained_millis))
    _written(table, name, snapshot)
    return snapshot


def delete_tag(table: FileStoreTable, names: str) -> list[str]:
    """Delete the tags named in ``names`` (comma-separated, as Paimon's procedure takes
    them). A name with no tag is skipped, as in Paimon.

    Returns:
        The names of the tags deleted.
    """
    deleted = []
    for name in (n.strip() for n in names.split(",")):
        _check_name(name)
        if table.file_io.delete(_path(table, name)):
            deleted.append(name)
    return deleted


def rename_tag(table: FileStoreTable, name: str, target: str) -> None:
    """Rename tag ``name`` to ``target``.

    Raises:
        InvalidArgumentError: a blank name, no tag ``name``, or ``target`` exists.
    """
    _check_name(name, "Original tag name")
    _check_name(target, "New tag name")
    data = _read(table, name)
    if data is None:
        raise InvalidArgumentError(f"{table.identifier}: tag {name!r} doesn't exist")
    if not _create(table, target, data):
        raise InvalidArgumentError(f"{table.identifier}: tag {target!r} already exists")
    table.file_io.delete(_path(table, name))


def _read(table: FileStoreTable, name: str) -> bytes | None:
    try:
        return table.file_io.read_bytes(_path(table, name))
    except FileNotFoundError:
        return None


def list_tags(table: FileStoreTable) -> list[TagInfo]:
    """Every tag of the table, by snapshot id then name.

    Raises:
        CorruptMetadataError: a tag file cannot be read.
    """
    out = []
    for name, path, data in tag_files(table.file_io, table.path):
        try:
            snapshot = Snapshot.from_json(data)
            obj = json.loads(data)
        except (CorruptMetadataError, ValueError) as e:
            raise CorruptMetadataError(f"tag file {path}: {e}") from e
        created = obj.get("tagCreateTime")
        retained = obj.get("tagTimeRetained")
        out.append(
            TagInfo(
                name,
                snapshot,
                _parse_local_datetime(created) if created is not None else None,
                round(float(retained) * 1000) if retained is not None else None,
            )
        )
    return sorted(out, key=lambda t: (t.snapshot.id, t.name))


def _parse_local_datetime(value: object) -> datetime.datetime | None:
    """Jackson writes ``LocalDateTime`` as an array; an ISO string is accepted too."""
    if isinstance(value, list) and len(value) >= 5:
        y, mo, d, h, mi, *rest = (int(v) for v in value)
        sec = rest[0] if rest else 0
        nanos = rest[1] if len(rest) > 1 else 0
        return datetime.datetime(y, mo, d, h, mi, sec, nanos // 1000)
    if isinstance(value, str):
        try:
            return datetime.datetime.fromisoformat(value)
        except ValueError:
            return None
    return None
