"""``CALL sys.create_tag / replace_tag / delete_tag / rename_tag`` and what a tag keeps
(no Spark: metadata only)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.ops.maintenance import expire_snapshots
from lakeskip.catalog.ops.tags import list_tags
from lakeskip.catalog.ops.time_travel import TimeTravel, resolve_snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import CorruptMetadataError, InvalidArgumentError, SnapshotNotFoundError
from lakeskip.expressions.tree import AlwaysTrue
from lakeskip.planner.scan import ScanPlanner
from lakeskip.procedures.registry import get_procedure

RT = T.RowType.of(("id", T.BIGINT), ("s", T.STRING))


def _setup(tmp_path: Path, commits: int = 3) -> tuple[Catalog, FileStoreTable]:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    table = cat.create_table("db.t", RT)
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    for i in range(commits):
        t = pa.table({"id": [i], "s": [f"s{i}"]})
        table.commit([write_data_file(spec, t, (), f"data-{i}-0.parquet")])
    return cat, table


def _call(cat: Catalog, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    proc = get_procedure(name)
    bound = proc.bind_arguments(args, kwargs)
    result = proc.run(catalog=cat, executor=None, arguments=bound, default_database="db")  # type: ignore[arg-type]
    return result.as_dict()


def _tag_file(table: FileStoreTable, name: str) -> dict[str, Any]:
    return json.loads(Path(f"{table.path}/tag/tag-{name}").read_text())


def test_create_tag_is_the_snapshot_json(tmp_path: Path) -> None:
    cat, table = _setup(tmp_path)
    assert _call(cat, "sys.create_tag", "t", "v1", 2) == {"result": True, "snapshot_id": 2}
    assert _call(cat, "create_tag", table="db.t", tag="now")["snapshot_id"] == 3, "latest"
    snap2 = table.snapshot_manager.read(2)
    assert _tag_file(table, "v1") == json.loads(snap2.to_json()), (
        "without time_retained a tag is the snapshot's JSON, as Paimon writes it"
    )
    assert resolve_snapshot(table, TimeTravel(tag="v1")).id == 2
    assert resolve_snapshot(table, TimeTravel.version_of("now")).id == 3
    # a numeric version names a tag of that name first, whether it came as 1 or '1'
    _call(cat, "sys.create_tag", "t", "1", 3)
    assert resolve_snapshot(table, TimeTravel.version_of(1)).id == 3
    assert resolve_snapshot(table, TimeTravel.version_of("1")).id == 3
    assert resolve_snapshot(table, TimeTravel.version_of(2)).id == 2, "no tag '2': snapshot 2"
    assert sorted((t.name, t.snapshot.id) for t in list_tags(table)) == [
        ("1", 3),
        ("now", 3),
        ("v1", 2),
    ]


def test_create_tag_with_retention_writes_paimon_fields(tmp_path: Path) -> None:
    cat, table = _setup(tmp_path)
    _call(cat, "sys.create_tag", table="t", tag="kept", snapshot=1, time_retained="2 h")
    obj = _tag_file(table, "kept")
    assert obj["id"] == 1
    assert obj["tagTimeRetained"] == 7200.0, "Jackson's Duration: decimal seconds"
    created = obj["tagCreateTime"]
    assert isinstance(created, list) and 5 <= len(created) <= 7, "LocalDateTime array"
    (info,) = list_tags(table)
    assert info.time_retained_millis == 7_200_000
    assert info.create_time is not None and info.create_time.year == created[0]


def test_tag_keeps_its_snapshot_through_expiry(tmp_path: Path) -> None:
    cat, table = _setup(tmp_path, commits=2)
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    merged = write_data_file(
        spec, pa.table({"id": [0, 1], "s": ["s0", "s1"]}), (), "data-m-0.parquet"
    )
    old = table.scan_files()
    table.commit([merged], deleted=old, kind=CommitKind.COMPACT)
    _call(cat, "sys.create_tag", "t", "before_compact", 2)
    assert expire_snapshots(table, 1).snapshots_deleted == 2
    tagged = resolve_snapshot(table, TimeTravel(tag="before_compact"))
    files = [table.data_file_path(e) for e in table.scan_files(tagged)]
    assert len(files) == 2 and all(os.path.exists(p) for p in files), "the tag kept them"
    assert not os.path.exists(table.snapshot_manager.path(2)), "snapshot 2 itself expired"
    assert table.snapshot(2) == tagged, "an expired id that a tag holds is read from the tag"
    plan = ScanPlanner(table).plan(AlwaysTrue(), snapshot_id=2)
    assert sorted(e.file.file_name for e in plan.files) == sorted(
        p.rsplit("/", 1)[1] for p in files
    )
    _call(cat, "sys.delete_tag", "t", "before_compact")
    assert list_tags(table) == []
    with pytest.raises(CorruptMetadataError, match="snapshot 2 not found"):
        table.snapshot(2)


def test_replace_rename_delete(tmp_path: Path) -> None:
    cat, table = _setup(tmp_path)
    _call(cat, "sys.create_tag", "t", "a", 1)
    _call(cat, "sys.create_tag", "t", "b", 1)
    assert _call(cat, "sys.replace_tag", "t", "a", 3)["snapshot_id"] == 3
    assert resolve_snapshot(table, TimeTravel(tag="a")).id == 3
    _call(cat, "sys.rename_tag", "t", "a", "release")
    assert [t.name for t in list_tags(table)] == ["b", "release"]
    assert _call(cat, "sys.delete_tag", "t", "b, release, missing")["tags_deleted"] == 2
    assert list_tags(table) == []


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("sys.create_tag", {"tag": "a"}, "tag 'a' already exists"),
        ("sys.create_tag", {"tag": "a", "snapshot": 1}, "tag 'a' already exists"),
        ("sys.create_tag", {"tag": "x", "snapshot": 9}, "snapshot 9 does not exist"),
        ("sys.create_tag", {"tag": " "}, "Tag name shouldn't be blank"),
        ("sys.create_tag", {"tag": "../x"}, "must not contain '/'"),
        ("sys.create_tag", {"tag": "x", "time_retained": "soon"}, "invalid duration"),
        ("sys.replace_tag", {"tag": "nope"}, "tag 'nope' doesn't exist"),
        ("sys.rename_tag", {"tag": "nope", "target_tag": "y"}, "tag 'nope' doesn't exist"),
        ("sys.rename_tag", {"tag": "a", "target_tag": "a"}, "tag 'a' already exists"),
        ("sys.create_tag", {}, "tag"),
    ],
)
def test_bad_arguments(tmp_path: Path, name: str, kwargs: dict[str, Any], message: str) -> None:
    cat, table = _setup(tmp_path)
    _call(cat, "sys.create_tag", "t", "a", 1)
    before = sorted(os.listdir(f"{table.path}/tag"))
    with pytest.raises(InvalidArgumentError, match=message) as info:
        _call(cat, name, table="t", **kwargs)
    assert "\n" not in str(info.value)
    assert sorted(os.listdir(f"{table.path}/tag")) == before, "nothing changed"
    assert isinstance(info.value, InvalidArgumentError)


def test_tag_on_empty_table(tmp_path: Path) -> None:
    cat, _ = _setup(tmp_path, commits=0)
    with pytest.raises(SnapshotNotFoundError, match="no snapshot to tag"):
        _call(cat, "sys.create_tag", "t", "a")


def test_tag_writes_whose_answer_was_lost_are_created_once(
    tmp_path: Path, lose_answers: Callable[[str], list[str]]
) -> None:
    """A create-only write of a tag file that happened but answered "exists" (a lost
    answer, retried) is this call's tag; a tag that existed before is still refused,
    even with the very same bytes (a tag without retention is its snapshot's JSON)."""
    cat, table = _setup(tmp_path)
    lost = lose_answers("/tag/tag-")
    assert _call(cat, "sys.create_tag", "t", "a", 1)["snapshot_id"] == 1
    _call(cat, "sys.create_tag", table="t", tag="kept", snapshot=2, time_retained="2 h")
    _call(cat, "sys.rename_tag", "t", "a", "release")
    assert [p.rsplit("/", 1)[1] for p in lost] == ["tag-a", "tag-kept", "tag-release"]
    assert sorted((t.name, t.snapshot.id) for t in list_tags(table)) == [
        ("kept", 2),
        ("release", 1),
    ], "renamed: the old name is gone"
    with pytest.raises(InvalidArgumentError, match="tag 'release' already exists"):
        _call(cat, "sys.create_tag", "t", "release", 1)
    with pytest.raises(InvalidArgumentError, match="tag 'kept' already exists"):
        _call(cat, "sys.rename_tag", "t", "release", "kept")
