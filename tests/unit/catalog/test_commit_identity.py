"""Exactly-once commits: a snapshot records its commit user and identifier (a streaming
query's id and batch id), and a commit whose identity the table holds publishes nothing
(Paimon's ``FileStoreCommitImpl.filterCommitted``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lakeskip.catalog import Catalog, FileStoreTable, Snapshot
from lakeskip.catalog.format.snapshot import BATCH_COMMIT_IDENTIFIER, CommitIdentity
from lakeskip.types import BIGINT, STRING, RowType

ROW = RowType.of(("id", BIGINT), ("name", STRING))


def _table(catalog: Catalog) -> FileStoreTable:
    catalog.create_database("db", ignore_if_exists=True)
    return catalog.create_table("db.t", ROW)


def _rows(ids: range) -> dict[str, list[Any]]:
    return {"id": list(ids), "name": [f"n{i}" for i in ids]}


def _ids(t: FileStoreTable, read_rows: Any) -> list[int]:
    return sorted(r["id"] for r in read_rows(t))


def test_identity_is_recorded_in_the_snapshot(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog)
    snap = t.commit([write_file(t, _rows(range(3)))], identity=CommitIdentity("q-1", 0))
    assert snap is not None
    raw = json.loads(t.file_io.read_bytes(t.snapshot_manager.path(snap.id)))
    assert (raw["commitUser"], raw["commitIdentifier"]) == ("q-1", 0)
    plain = t.commit([write_file(t, _rows(range(3, 4)))])
    assert plain is not None and plain.commit_identifier == BATCH_COMMIT_IDENTIFIER
    assert plain.commit_user != "q-1", "a batch commit has a user of its own"


def test_a_replayed_batch_commits_nothing(
    catalog: Catalog, write_file: Any, read_rows: Any
) -> None:
    t = _table(catalog)
    for batch in range(3):
        rows = range(10 * batch, 10 * batch + 5)
        assert t.commit([write_file(t, _rows(rows))], identity=CommitIdentity("q", batch))
        # another writer's commits between the query's batches
        assert t.commit([write_file(t, _rows(range(1000 + batch, 1001 + batch)))])
    before = t.latest_snapshot()
    for batch in (0, 1, 2):  # replays, e.g. after the driver died before Spark's commit log
        again = write_file(t, _rows(range(500, 505)))
        assert t.commit([again], identity=CommitIdentity("q", batch)) is None
    assert t.latest_snapshot() == before, "identifier <= the user's latest: nothing published"
    assert 500 not in _ids(t, read_rows)
    assert t.latest_identifier("q") == 2 and t.latest_identifier("nobody") is None
    # the next batch, and the same batch number of another query, commit
    assert t.commit([write_file(t, _rows(range(30, 31)))], identity=CommitIdentity("q", 3))
    assert t.commit([write_file(t, _rows(range(40, 41)))], identity=CommitIdentity("r", 0))
    assert t.latest_identifier("q") == 3 and t.latest_identifier("r") == 0
    fresh = catalog.get_table("db.t")  # another table object: the same answer
    assert fresh.committed(CommitIdentity("q", 3)) and not fresh.committed(CommitIdentity("q", 4))


def test_a_racing_run_of_the_same_batch_loses(
    catalog: Catalog, write_file: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs of batch 5 (a zombie driver and its restart): the one that loses the race
    for the snapshot id re-reads the table, finds batch 5 committed, and publishes nothing."""
    t = _table(catalog)
    other = catalog.get_table("db.t")
    t.commit([write_file(t, _rows(range(2)))], identity=CommitIdentity("q", 4))
    mine = write_file(t, _rows(range(10, 13)))
    theirs = write_file(other, _rows(range(10, 13)))
    real = t.snapshot_manager.try_publish
    calls: list[int] = []

    def racing_publish(snapshot: Snapshot) -> bool:
        calls.append(snapshot.id)
        if len(calls) == 1:
            assert other.commit([theirs], identity=CommitIdentity("q", 5)) is not None
        return real(snapshot)

    monkeypatch.setattr(t.snapshot_manager, "try_publish", racing_publish)
    assert t.commit([mine], identity=CommitIdentity("q", 5)) is None
    assert calls == [2], "lost snapshot 2, then found batch 5 committed: no second attempt"
    assert [e.file.file_name for e in t.scan_files()][-1] == theirs.file.file_name
    assert t.latest_snapshot() is not None and t.latest_snapshot().id == 2  # type: ignore[union-attr]


def test_snapshots_removed_and_recommitted_are_searched_again(
    catalog: Catalog, write_file: Any
) -> None:
    """The search for a user's latest snapshot is remembered; when the snapshot it stopped at
    is gone or replaced (Paimon's rollback deletes later snapshots), it searches anew."""
    t = _table(catalog)
    for batch in range(3):
        t.commit(
            [write_file(t, _rows(range(batch, batch + 1)))], identity=CommitIdentity("q", batch)
        )
    assert t.latest_identifier("q") == 2
    io, sm = t.file_io, t.snapshot_manager
    for sid in (2, 3):  # back to snapshot 1, as Paimon's rollback_to leaves a table
        io.delete(sm.path(sid))
    io.write_bytes(f"{t.path}/snapshot/LATEST", b"1")
    assert t.latest_identifier("q") == 0
    assert not t.committed(CommitIdentity("q", 1)), "batch 1 is no longer in the table"
    # another writer takes ids 2 and 3: the remembered search must not trust them
    t.commit([write_file(t, _rows(range(50, 51)))])
    t.commit([write_file(t, _rows(range(51, 52)))])
    assert t.commit([write_file(t, _rows(range(1, 2)))], identity=CommitIdentity("q", 1))
    assert t.latest_identifier("q") == 1


def test_expired_snapshots_end_the_search(catalog: Catalog, write_file: Any) -> None:
    """As Paimon's ``latestSnapshotOfUser``: the search stops at the first missing snapshot."""
    t = _table(catalog)
    t.commit([write_file(t, _rows(range(1)))], identity=CommitIdentity("q", 0))
    t.commit([write_file(t, _rows(range(1, 2)))])
    t.file_io.delete(t.snapshot_manager.path(1))
    t.file_io.write_bytes(f"{t.path}/snapshot/EARLIEST", b"2")
    assert catalog.get_table("db.t").latest_identifier("brand-new") is None
