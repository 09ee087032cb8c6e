"""Which snapshot a time-travel read sees (``lakeskip.catalog.ops.time_travel``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lakeskip import types as T
from lakeskip.catalog import Catalog, FileStoreTable
from lakeskip.catalog.ops.time_travel import (
    TimeTravel,
    read_snapshot,
    resolve_snapshot,
    table_at,
    time_travel_from_options,
)
from lakeskip.errors import InvalidOptionError, SnapshotNotFoundError


@pytest.fixture
def table(catalog: Catalog, write_file: Any) -> FileStoreTable:
    catalog.create_database("db")
    t = catalog.create_table("db.t", T.RowType.of(("id", T.BIGINT)))
    for i in range(3):
        t.commit([write_file(t, {"id": [i]})])
    return t


def _retime(table: FileStoreTable, times: list[int]) -> None:
    """Give snapshots 1..n these commit times (rewriting their files)."""
    for sid, millis in enumerate(times, start=1):
        snap = dataclasses.replace(table.snapshot(sid), time_millis=millis)
        table.file_io.write_bytes(table.snapshot_manager.path(sid), snap.to_json().encode())


def test_snapshot_id_version_and_tag(table: FileStoreTable) -> None:
    assert resolve_snapshot(table, TimeTravel(snapshot_id=2)).id == 2
    assert resolve_snapshot(table, TimeTravel(version="3")).id == 3, "digits: a snapshot id"
    tag = table.snapshot(1).to_json()
    table.file_io.write_bytes(f"{table.path}/tag/tag-2", tag.encode())
    assert resolve_snapshot(table, TimeTravel(version="2")).id == 1, "a tag wins over an id"
    assert resolve_snapshot(table, TimeTravel(tag="2")).id == 1
    with pytest.raises(SnapshotNotFoundError, match=r"snapshot 9 does not exist .*1\.\.3"):
        resolve_snapshot(table, TimeTravel(snapshot_id=9))
    with pytest.raises(SnapshotNotFoundError, match="tag 'x' does not exist"):
        resolve_snapshot(table, TimeTravel(tag="x"))
    with pytest.raises(SnapshotNotFoundError, match="neither a tag nor a snapshot id"):
        resolve_snapshot(table, TimeTravel(version="x"))


def test_timestamp_picks_newest_at_or_before(table: FileStoreTable) -> None:
    _retime(table, [1000, 2000, 3000])
    cases = {1000: 1, 1999: 1, 2000: 2, 2500: 2, 3000: 3, 10**12: 3}
    for millis, expected in cases.items():
        got = resolve_snapshot(table, TimeTravel(timestamp_millis=millis)).id
        assert got == expected, f"at {millis} ms the newest snapshot is {expected}, got {got}"
    with pytest.raises(SnapshotNotFoundError) as info:
        resolve_snapshot(table, TimeTravel(timestamp_millis=999))
    assert str(info.value).endswith(
        ": no snapshot at or before 1970-01-01 00:00:00.999 UTC "
        "(the earliest snapshot is from 1970-01-01 00:00:01 UTC)"
    ), "readable timestamps, not epoch milliseconds"


def test_a_corrupt_snapshot_file_names_table_file_and_the_way_back(
    table: FileStoreTable,
) -> None:
    from lakeskip.errors import CorruptMetadataError

    latest = table.snapshot_manager.latest_id()
    assert latest is not None and latest > 1
    path = table.snapshot_manager.path(latest)
    table.file_io.write_bytes(path, b'{"version": 3, "id": ')
    with pytest.raises(CorruptMetadataError) as info:
        table.snapshot(latest)
    message = str(info.value)
    assert message.startswith(f"table {table.identifier}: snapshot file {path} is corrupt (")
    assert message.endswith(
        f"to read an older snapshot: SELECT ... VERSION AS OF {latest - 1} "
        "(or CALL sys.rollback to one)"
    )
    assert "\n" not in message
    assert resolve_snapshot(table, TimeTravel(snapshot_id=latest - 1)).id == latest - 1


def test_options() -> None:
    assert time_travel_from_options({}) is None
    assert time_travel_from_options({"scan.timestamp-millis": "5"}) == TimeTravel(
        timestamp_millis=5
    )
    assert time_travel_from_options({"scan.tag-name": "v1"}) == TimeTravel(tag="v1")
    assert time_travel_from_options({"scan.version": "3"}) == TimeTravel(version="3")
    with pytest.raises(InvalidOptionError, match="conflicting"):
        time_travel_from_options({"scan.snapshot-id": "1", "scan.tag-name": "v1"})
    with pytest.raises(InvalidOptionError, match="expected an integer"):
        time_travel_from_options({"scan.snapshot-id": "one"})


def test_table_at_uses_the_snapshots_schema(catalog: Catalog, table: FileStoreTable) -> None:
    assert table_at(table, table.snapshot(1)) is table
    catalog.alter_table("db.t", set_options={"target-file-size": "64 mb"})
    table.refresh()
    old = table_at(table, table.snapshot(1))
    assert old.schema.id == table.snapshot(1).schema_id != table.schema.id


def test_read_snapshot_clause_then_session_then_table_options(
    catalog: Catalog, table: FileStoreTable
) -> None:
    """The one choice of both read paths: the AS OF clause, else the session's ``scan.*``
    settings, else the table's ``scan.*`` options, else the latest (``None``)."""
    assert read_snapshot(table) is None
    session = {"scan.snapshot-id": "2", "scan.tag-name": ""}  # empty: not set
    clause = TimeTravel.of_clause(version=1)
    catalog.alter_table("db.t", set_options={"scan.version": "3"})
    table.refresh()
    snap = read_snapshot(table, clause, session)
    assert snap is not None and snap.id == 1, "the clause wins"
    snap = read_snapshot(table, None, session)
    assert snap is not None and snap.id == 2, "then the session's settings"
    snap = read_snapshot(table, None, {})
    assert snap is not None and snap.id == 3, "then the table's options"
    conflicting = {"scan.snapshot-id": "1", "scan.version": "2"}
    snap = read_snapshot(table, clause, conflicting)
    assert snap is not None and snap.id == 1, "settings a clause overrides are not read"
    with pytest.raises(InvalidOptionError, match="conflicting"):
        read_snapshot(table, None, conflicting)
    with pytest.raises(SnapshotNotFoundError):
        read_snapshot(table, None, {"scan.tag-name": "nope"})


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("deletion-vectors.modifiable", "Paimon option lakeskip does not support yet"),
        ("merge-engine", r"'merge-engine' = 'true' is not supported \(only 'deduplicate'"),
        ("primary-key", "Paimon option lakeskip does not support yet"),
        ("changelog.num-retained.max", "Paimon option lakeskip does not support yet"),
        ("changelog-producer", "expected one of none, input, lookup, full-compaction"),
        ("deletion-vector", "unknown table option .*did you mean 'deletion-vectors.enabled'"),
        ("target-file-sise", "unknown table option .*did you mean 'target-file-size'"),
        ("xyzzy", r"^unknown table option 'xyzzy'$"),
    ],
)
def test_paimon_options_not_supported_typos_unknown(key: str, message: str) -> None:
    from lakeskip.catalog.option_checks import validate_options

    with pytest.raises(InvalidOptionError, match=message):
        validate_options({key: "true"}, None)
