"""Crash safety of every driver-side operation: killed at each file-system step, the table is
at its state before or after, every snapshot and tag that exists reads exactly what it read,
and ``remove_orphan_files`` then leaves the same rows and no file that nothing references.

Each operation runs in a forked child that ``os._exit``s before its k-th step, for every k
(:mod:`tests.crash_harness`); no sleeps, no timing. The oracles read the files themselves
(manifests through the catalog API, data with pyarrow, DVs with pyroaring), not the
maintenance code under test.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap
from tests.crash_harness import sweep

from lakeskip.catalog import (
    Catalog,
    CommitKind,
    FileKind,
    FileStoreTable,
    ManifestEntry,
    Snapshot,
    collect_stats,
    make_data_file_meta,
)
from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate
from lakeskip.catalog.ops.maintenance import expire_snapshots, remove_orphan_files
from lakeskip.catalog.ops.rollback import rollback_to
from lakeskip.catalog.ops.staging import publish, staging_identifier
from lakeskip.catalog.ops.tags import create_tag, delete_tag, list_tags, rename_tag, replace_tag
from lakeskip.types import BIGINT, STRING, RowType

# processes forked per test (or moto's S3 server): make test runs it, make test-unit does not
pytestmark = pytest.mark.processes

ROW = RowType.of(("id", BIGINT), ("dt", STRING))
TABLE = "db.t"

# -- building the history ------------------------------------------------------------------


def _write(table: FileStoreTable, ids: list[int], dt: str, index: bool = False) -> ManifestEntry:
    arrow = pa.table({"id": ids, "dt": [dt] * len(ids)}).cast(ROW.to_arrow())
    name = table.new_data_file_name()
    directory = f"{table.path}/{table.partition_path((dt,))}"
    with table.file_io.open_output(f"{directory}/{name}") as out:
        pq.write_table(arrow, out)
    extra: tuple[str, ...] = ()
    if index:
        extra = (f"{name}.index",)
        table.file_io.write_bytes(f"{directory}/{extra[0]}", b"index of " + name.encode())
    stats, cols = collect_stats(arrow, ROW, "full")
    size = table.file_io.file_size(f"{directory}/{name}")
    meta = make_data_file_meta(name, size, len(ids), stats, cols, table.schema.id, None, extra)
    return ManifestEntry(FileKind.ADD, (dt,), 0, -1, meta)


def _dv_commit(table: FileStoreTable, entry: ManifestEntry, positions: list[int]) -> None:
    name = entry.file.file_name
    ref = table.deletion_files().get(name)
    table.commit(
        [],
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=[],
        deletion_vectors=DeletionVectorUpdate(
            {name: BitMap(positions)}, {name: ref.index_file if ref else None}
        ),
    )


def _build(root: str) -> dict[str, ManifestEntry]:
    """s1 APPEND a(x, .index) b(y); s2 APPEND c(x, .index), tagged t2; s3 COMPACT a+c -> ac;
    s4 DV on b; s5 OVERWRITE y with b2 (b and its DV go); s6 APPEND d(x); s7 DV on d."""
    catalog = Catalog(root)
    catalog.create_database("db")
    t = catalog.create_table(
        TABLE, ROW, partition_keys=["dt"], options={"deletion-vectors.enabled": "true"}
    )
    f = {"a": _write(t, list(range(10)), "x", True), "b": _write(t, list(range(10, 20)), "y")}
    t.commit([f["a"], f["b"]])
    f["c"] = _write(t, list(range(20, 25)), "x", True)
    t.commit([f["c"]])
    create_tag(t, "t2", 2)
    f["ac"] = _write(t, [*range(10), *range(20, 25)], "x", True)
    t.commit([f["ac"]], deleted=[f["a"], f["c"]], kind=CommitKind.COMPACT)
    _dv_commit(t, f["b"], [0, 1])
    f["b2"] = _write(t, [100, 101, 102], "y")
    t.commit([f["b2"]], kind=CommitKind.OVERWRITE, overwrite_partitions=[("y",)])
    f["d"] = _write(t, [30, 31, 32], "x")
    t.commit([f["d"]])
    _dv_commit(t, f["d"], [2])
    return f


# -- oracles -------------------------------------------------------------------------------


def _rows(table: FileStoreTable, snap: Snapshot) -> list[int]:
    """The ids a snapshot reads (data files minus their DVs); every file must exist."""
    dvs = table.deletion_files(snap)
    ids: list[int] = []
    for e in table.scan_files(snap):
        path = table.data_file_path(e)
        assert os.path.exists(path), f"snapshot {snap.id}: data file {e.file.file_name} lost"
        for x in e.file.extra_files:
            extra = f"{table.data_file_dir(e)}/{x}"
            assert os.path.exists(extra), f"snapshot {snap.id}: extra file {x} lost"
        col = pq.read_table(path).column("id").to_pylist()
        ref = dvs.get(e.file.file_name)
        dead = table.read_deletion_vector(ref, e.file.row_count) if ref else BitMap()
        ids += [v for i, v in enumerate(col) if i not in dead]
    return sorted(ids)


@dataclasses.dataclass
class State:
    latest: int | None
    snapshots: dict[int, list[int]]  # id -> rows
    tags: dict[str, tuple[int, list[int]]]  # name -> (snapshot id, rows)


def _state(table: FileStoreTable) -> State:
    latest = table.snapshot_manager.latest_id()
    snaps = {s.id: _rows(table, s) for s in table.list_snapshots()}
    tags = {i.name: (i.snapshot.id, _rows(table, i.snapshot)) for i in list_tags(table)}
    return State(latest, snaps, tags)


def _referenced(table: FileStoreTable) -> set[str]:
    names: set[str] = set()
    held = [*table.list_snapshots(), *(i.snapshot for i in list_tags(table))]
    for s in held:
        names |= {s.base_manifest_list, s.delta_manifest_list}
        names |= {m.file_name for m in table.manifest_metas(s)}
        if s.index_manifest:
            names.add(s.index_manifest)
            names |= {e.index_file.file_name for e in table.index_entries(s)}
        for e in table.scan_files(s):
            names.add(e.file.file_name)
            names.update(e.file.extra_files)
    return names


def _unreferenced(table: FileStoreTable) -> list[str]:
    """Files under the table that no snapshot or tag needs (schema files, snapshot files,
    hints and tag files are the table's own)."""
    wanted = _referenced(table)
    out = []
    for f in table.file_io.walk_files(table.path):
        rel = f.path[len(table.path) + 1 :]
        if rel.startswith("schema/schema-") or rel in ("snapshot/EARLIEST", "snapshot/LATEST"):
            continue
        if rel.startswith(("snapshot/snapshot-", "tag/tag-")):
            continue
        if f.name not in wanted:
            out.append(rel)
    return sorted(out)


def _consistent(got: State, before: State, after: State, what: str) -> None:
    """Latest = before or after; every snapshot and tag that exists reads what it read."""
    assert got.latest in (before.latest, after.latest), f"{what}: latest {got.latest}"
    known = {**before.snapshots, **after.snapshots}
    for sid, rows in got.snapshots.items():
        assert sid in known, f"{what}: snapshot {sid} is neither before nor after"
        assert rows == known[sid], f"{what}: snapshot {sid} reads other rows"
    for name, held in got.tags.items():
        versions = [x.tags[name] for x in (before, after) if name in x.tags]
        assert versions, f"{what}: tag {name} is neither before nor after"
        assert held in versions, f"{what}: tag {name} reads other rows"


def _check_crashed(before: State, after: State) -> Callable[[str, int], None]:
    def check(root: str, k: int) -> None:
        table = Catalog(root).get_table(TABLE)
        got = _state(table)
        _consistent(got, before, after, f"crash before step {k}")
        time.sleep(0.005)  # every file is now older than older_than
        remove_orphan_files(table, int(time.time() * 1000))
        cleaned = _state(table)
        assert cleaned == got, f"crash before step {k}: orphan removal changed what is read"
        assert _unreferenced(table) == [], f"crash before step {k}: unreferenced files left"

    return check


# -- the sweep -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Any]]]:
    root = str(tmp_path_factory.mktemp("crash") / "wh")
    files = _build(root)
    table = Catalog(root).get_table(TABLE)
    assert _unreferenced(table) == [], "the history itself leaves nothing behind"
    yield root, files
    shutil.rmtree(root, ignore_errors=True)


def _table(root: str) -> FileStoreTable:
    return Catalog(root).get_table(TABLE)


def _plant_orphans(root: str) -> None:
    t = _table(root)
    io = t.file_io
    for rel in ("dt=x/bucket-0/data-orphan-0.parquet", "manifest/manifest-orphan-0", "index/x"):
        io.write_bytes(f"{t.path}/{rel}", b"orphan")
    io.write_bytes(f"{t.path}/snapshot/.snapshot-9.{uuid.uuid4().hex}.tmp", b"{")


OPS: dict[str, tuple[Callable[[str], Any] | None, Callable[[str, dict[str, Any]], Any]]] = {
    # name: (prepare the template copy, the operation)
    "expire_retain_2": (None, lambda r, f: expire_snapshots(_table(r), retain_last=2)),
    "expire_retain_1": (None, lambda r, f: expire_snapshots(_table(r), retain_last=1)),
    "remove_orphan_files": (
        _plant_orphans,
        lambda r, f: remove_orphan_files(_table(r), int(time.time() * 1000)),
    ),
    "rollback_to_2": (None, lambda r, f: rollback_to(_table(r), _table(r).snapshot(2))),
    "create_tag": (None, lambda r, f: create_tag(_table(r), "t5", 5)),
    "replace_tag": (None, lambda r, f: replace_tag(_table(r), "t2", 6)),
    "rename_tag": (None, lambda r, f: rename_tag(_table(r), "t2", "t9")),
    "delete_tag": (None, lambda r, f: delete_tag(_table(r), "t2")),
    "append": (None, lambda r, f: _table(r).commit([_write(_table(r), [40, 41], "z", True)])),
    "compact": (
        None,
        lambda r, f: _table(r).commit(
            [_write(_table(r), [*range(10), *range(20, 25), 30, 31], "x", True)],
            deleted=[f["ac"], f["d"]],
            kind=CommitKind.COMPACT,
        ),
    ),
    "deletion_vector": (None, lambda r, f: _dv_commit(_table(r), f["ac"], [0, 5])),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_crash_at_every_step(
    name: str, template: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    prepare, op = OPS[name]
    root, files = template
    base = str(tmp_path / "base")
    shutil.copytree(root, base, copy_function=shutil.copy2)
    if prepare is not None:
        prepare(base)
    before = _state(_table(base))
    # the uncrashed run, on a copy
    done = str(tmp_path / "done")
    shutil.copytree(base, done, copy_function=shutil.copy2)
    op(done, files)
    after = _state(_table(done))
    assert after != before or name == "remove_orphan_files", "the operation changes the table"

    result = sweep(base, lambda r: op(r, files), _check_crashed(before, after))
    assert result.steps >= 1, f"{name}: {result.steps} step(s)"


# -- CREATE / REPLACE TABLE ... AS SELECT (staged, published by rename) --------------------


def _ctas(root: str, identifier: str, replace: bool) -> None:
    """What the CTAS/RTAS statement does on a local warehouse, minus Spark: create the
    staged table, write and commit its rows, publish."""
    catalog = Catalog(root)
    staged = staging_identifier(identifier)
    t = catalog.create_table(staged, ROW, partition_keys=["dt"])
    t.commit([_write(t, [7, 8, 9], "n", True)])
    publish(catalog, staged, identifier, replace=replace)


def _catalog_state(root: str) -> dict[str, State]:
    catalog = Catalog(root)
    return {n: _state(catalog.get_table(f"db.{n}")) for n in catalog.list_tables("db")}


@pytest.mark.parametrize(("identifier", "replace"), [("db.n", False), (TABLE, True)])
def test_crash_at_every_step_of_ctas(
    identifier: str, replace: bool, template: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    root, _ = template
    base = str(tmp_path / "base")
    shutil.copytree(root, base, copy_function=shutil.copy2)
    before = _catalog_state(base)
    done = str(tmp_path / "done")
    shutil.copytree(base, done, copy_function=shutil.copy2)
    _ctas(done, identifier, replace)
    after = _catalog_state(done)
    assert after != before

    def check(crashed: str, k: int) -> None:
        got = _catalog_state(crashed)  # a lookup moves a half-replaced table back
        assert got in (before, after), f"crash before step {k}: the catalog is half-done"
        catalog = Catalog(crashed)
        time.sleep(0.005)
        for name in got:
            t = catalog.get_table(f"db.{name}")
            remove_orphan_files(t, int(time.time() * 1000))
            assert _unreferenced(t) == [], f"crash before step {k}: unreferenced files left"
        assert _catalog_state(crashed) == got, f"crash before step {k}: cleaning changed it"
        left = sorted(p.name for p in Path(catalog.root, "db.db").iterdir())
        assert left == sorted(got), f"crash before step {k}: hidden tables left: {left}"

    result = sweep(base, lambda r: _ctas(r, identifier, replace), check)
    assert result.steps >= 5
