"""``CALL sys.rollback`` / ``rollback_to_timestamp``: a new snapshot with the target's files
(no Spark: metadata only). A hypothesis test replays random commits and rolls back to a
random earlier snapshot: the live rows must be the target's, every earlier snapshot must
still read as before."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate
from lakeskip.catalog.format.manifest import FileKind
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.ops.rollback import rollback_to
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import CommitConflictError, CorruptMetadataError, InvalidArgumentError
from lakeskip.procedures.registry import get_procedure

RT = T.RowType.of(("id", T.BIGINT), ("p", T.STRING))
_names = itertools.count()


def _setup(tmp_path: Path) -> tuple[Catalog, FileStoreTable]:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat, cat.create_table("db.t", RT, partition_keys=["p"])


def _write(table: FileStoreTable, ids: list[int], p: str) -> Any:
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    t = pa.table({"id": pa.array(ids, pa.int64()), "p": [p] * len(ids)})
    return write_data_file(spec, t, (p,), f"data-{next(_names)}-0.parquet")


def _rows(table: FileStoreTable, snapshot: Any = None) -> list[tuple[int, str]]:
    out = []
    for e in table.scan_files(snapshot):
        ids = pq.read_table(table.data_file_path(e), columns=["id"]).column(0).to_pylist()
        out += [(i, e.partition[0]) for i in ids]
    return sorted(out)


def _call(cat: Catalog, name: str, **kwargs: Any) -> dict[str, Any]:
    proc = get_procedure(name)
    bound = proc.bind_arguments((), kwargs)
    result = proc.run(catalog=cat, executor=None, arguments=bound, default_database="db")  # type: ignore[arg-type]
    return result.as_dict()


_op = st.one_of(
    st.tuples(st.just("append"), st.lists(st.integers(0, 50), min_size=1, max_size=4), st.sampled_from("ab")),
    st.tuples(st.just("compact"), st.just([]), st.sampled_from("ab")),
    st.tuples(st.just("overwrite"), st.lists(st.integers(0, 50), max_size=3), st.sampled_from("ab")),
)  # fmt: skip


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(_op, min_size=1, max_size=8), pick=st.integers(0, 100), more=st.booleans())
def test_rollback_restores_the_target_rows(
    tmp_path_factory: pytest.TempPathFactory, ops: list[Any], pick: int, more: bool
) -> None:
    _, table = _setup(tmp_path_factory.mktemp("rb"))
    table.commit([_write(table, [1000], "a")])
    for kind, ids, p in ops:
        if kind == "append":
            table.commit([_write(table, ids, p)])
        elif kind == "compact":
            old = [e for e in table.scan_files() if e.partition == (p,)]
            if old:
                merged = [i for i, q in _rows(table) if q == p]
                table.commit([_write(table, merged, p)], old, kind=CommitKind.COMPACT)
        else:
            added = [_write(table, ids, p)] if ids else []
            table.commit(added, kind=CommitKind.OVERWRITE, overwrite_partitions=[(p,)])
    snaps = table.list_snapshots()
    before = {s.id: _rows(table, s) for s in snaps}
    target = snaps[pick % len(snaps)]
    r = rollback_to(table, target)
    assert _rows(table) == before[target.id], f"rolled back to {target.id}"
    if r.snapshot is not None:
        assert r.snapshot.id == snaps[-1].id + 1 and r.snapshot.commit_kind is CommitKind.OVERWRITE
    for s in snaps:
        assert _rows(table, s) == before[s.id], f"snapshot {s.id} still reads as before"
    _pypaimon_reads_the_same(table)
    assert table.latest_snapshot().total_record_count == len(before[target.id])  # type: ignore[union-attr]
    if more:  # the table goes on from the restored state
        table.commit([_write(table, [7], "b")])
        assert _rows(table) == sorted([*before[target.id], (7, "b")])


def _pypaimon_reads_the_same(table: FileStoreTable) -> None:
    """pypaimon's rule (``ManifestFileManager.read_entries_parallel``): an ADD is dropped if
    any manifest of the snapshot DELETEs the same identifier, in whatever order."""
    latest = table.latest_snapshot()
    assert latest is not None
    entries = [e for m in table.manifest_metas(latest) for e in table._manifest(m.file_name)]
    deleted = {e.identifier for e in entries if e.kind is FileKind.DELETE}
    theirs = sorted(
        e.file.file_name for e in entries if e.kind is FileKind.ADD and e.identifier not in deleted
    )
    assert theirs == sorted(e.file.file_name for e in table.scan_files(latest))


def test_rollback_procedures(tmp_path: Path) -> None:
    cat, table = _setup(tmp_path)
    table.commit([_write(table, [1], "a")])
    table.commit([_write(table, [2], "b")])
    table.commit([_write(table, [3], "a")])
    t2 = table.snapshot(2).time_millis
    r = _call(cat, "sys.rollback", table="t", version="1")
    assert r == {
        "previous_snapshot_id": 3,
        "current_snapshot_id": 4,
        "files_added": 0,
        "files_deleted": 2,
    }
    assert _rows(table) == [(1, "a")]
    get_procedure("sys.create_tag")  # tags from the same family of procedures
    _call(cat, "sys.create_tag", table="t", tag="three", snapshot=3)
    assert _call(cat, "sys.rollback", table="t", version="three")["current_snapshot_id"] == 5
    assert _rows(table) == [(1, "a"), (2, "b"), (3, "a")]
    assert _call(cat, "sys.rollback", table="t", snapshot=5)["current_snapshot_id"] == 5, "no-op"
    assert (
        _call(cat, "sys.rollback_to_timestamp", table="t", timestamp=t2)["current_snapshot_id"] == 6
    )
    assert _rows(table) == [(1, "a"), (2, "b")]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"version": "9"}, InvalidArgumentError, "snapshot 9 does not exist"),
        ({"version": "nope"}, InvalidArgumentError, "tag 'nope' does not exist"),
        (
            {"snapshot": 1, "tag": "x"},
            InvalidArgumentError,
            "exactly one of version, snapshot, tag",
        ),
        ({}, InvalidArgumentError, "exactly one of version, snapshot, tag"),
    ],
)
def test_rollback_bad_arguments(
    tmp_path: Path, kwargs: dict[str, Any], error: type, message: str
) -> None:
    cat, table = _setup(tmp_path)
    table.commit([_write(table, [1], "a")])
    with pytest.raises(error, match=message) as info:
        _call(cat, "sys.rollback", table="t", **kwargs)
    assert "\n" not in str(info.value)
    assert table.latest_snapshot().id == 1  # type: ignore[union-attr]


def test_rollback_refuses_lost_files_and_conflicts(tmp_path: Path) -> None:
    _, table = _setup(tmp_path)
    table.commit([_write(table, [1], "a")])
    table.commit([], kind=CommitKind.OVERWRITE)  # empties the table
    gone = table.scan_files(table.snapshot(1))[0]
    Path(table.data_file_path(gone)).unlink()
    with pytest.raises(CorruptMetadataError, match="no longer exists"):
        rollback_to(table, table.snapshot(1))
    assert table.latest_snapshot().id == 2  # type: ignore[union-attr]

    _, t2 = _setup(tmp_path / "two")
    t2.commit([_write(t2, [1], "a")])
    t2.commit([_write(t2, [2], "a")])
    live = t2.scan_files()
    stale = t2.latest_snapshot()
    t2.commit([_write(t2, [1, 2], "a")], live, kind=CommitKind.COMPACT)  # a racing compaction
    target = t2.snapshot(1)
    # a rollback planned before the compaction: its DELETE of file 2 is no longer live
    from lakeskip.catalog.ops import rollback as module

    real = t2.latest_snapshot
    t2.latest_snapshot = lambda: stale  # type: ignore[method-assign]
    try:
        with pytest.raises(CommitConflictError, match="no longer live"):
            module.rollback_to(t2, target)
    finally:
        t2.latest_snapshot = real  # type: ignore[method-assign]
    assert t2.latest_snapshot().id == 3  # type: ignore[union-attr]


def _dv_rows(table: FileStoreTable, snapshot: Any = None) -> list[int]:
    refs = table.deletion_files(snapshot)
    out = []
    for e in table.scan_files(snapshot):
        ids = pq.read_table(table.data_file_path(e), columns=["id"]).column(0).to_pylist()
        ref = refs.get(e.file.file_name)
        gone = table.read_deletion_vector(ref) if ref is not None else BitMap()
        out += [i for pos, i in enumerate(ids) if pos not in gone]
    return sorted(out)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["append", "delete", "compact"]), st.integers(0, 1000)),
        min_size=1,
        max_size=8,
    ),
    pick=st.integers(0, 100),
)
def test_rollback_restores_deletion_vectors(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]], pick: int
) -> None:
    cat = Catalog(str(tmp_path_factory.mktemp("dv") / "wh"))
    cat.create_database("db")
    table = cat.create_table("db.t", RT, options={"deletion-vectors.enabled": "true"})
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)

    def write(ids: list[int]) -> Any:
        t = pa.table({"id": pa.array(ids, pa.int64()), "p": ["a"] * len(ids)})
        return write_data_file(spec, t, (), f"data-{next(_names)}-0.parquet")

    table.commit([write([0, 1, 2, 3])])
    for kind, n in ops:
        live = table.scan_files()
        if kind == "append" or not live:
            table.commit([write([n, n + 1, n + 2])])
        elif kind == "delete":  # mark one more position of one file in its DV
            e = live[n % len(live)]
            refs = table.deletion_files()
            ref = refs.get(e.file.file_name)
            old = table.read_deletion_vector(ref) if ref is not None else BitMap()
            free = [p for p in range(e.file.row_count) if p not in old]
            if free:
                new = BitMap(old) | BitMap([free[n % len(free)]])
                base = {e.file.file_name: ref.index_file if ref is not None else None}
                table.commit(
                    [], deletion_vectors=DeletionVectorUpdate({e.file.file_name: new}, base)
                )
        else:  # compact: one file with the live rows, DVs dropped
            rows = _dv_rows(table)
            table.commit([write(rows)] if rows else [], live, kind=CommitKind.COMPACT)
    snaps = table.list_snapshots()
    before = {s.id: _dv_rows(table, s) for s in snaps}
    target = snaps[pick % len(snaps)]
    rollback_to(table, target)
    assert _dv_rows(table) == before[target.id], f"rolled back to {target.id}"
    for s in snaps:
        assert _dv_rows(table, s) == before[s.id]
    _pypaimon_reads_the_same(table)
