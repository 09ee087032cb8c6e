"""``CALL sys.expire_snapshots`` and ``CALL sys.remove_orphan_files`` (no Spark: these
procedures need no executor)."""

from __future__ import annotations

import datetime
import os
import re
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import InvalidArgumentError, TableNotFoundError
from lakeskip.procedures.maintenance import parse_timestamp_millis
from lakeskip.procedures.registry import get_procedure

RT = T.RowType.of(("id", T.BIGINT), ("s", T.STRING))
# a 1-byte threshold puts every bloom filter into a .index file beside its data file
OPTS = {"file-index.bloom-filter.columns": "s", "file-index.in-manifest-threshold": "1 b"}


def _setup(tmp_path: Path) -> tuple[Catalog, FileStoreTable]:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat, cat.create_table("db.t", RT, options=OPTS)


def _write(table: FileStoreTable, name: str, ids: range) -> ManifestEntry:
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    t = pa.table({"id": list(ids), "s": [f"s{i}" for i in ids]})
    return write_data_file(spec, t, (), name)


def _files_of(table: FileStoreTable, e: ManifestEntry) -> list[str]:
    return [table.data_file_path(e), *(f"{table.data_file_dir(e)}/{x}" for x in e.file.extra_files)]


def _readable(table: FileStoreTable) -> int:
    """Every snapshot's files exist; returns the latest row count."""
    for s in table.list_snapshots():
        rows = 0
        for e in table.scan_files(s):
            for path in _files_of(table, e):
                assert os.path.exists(path), f"snapshot {s.id} lost {path}"
            rows += e.file.row_count
        assert rows == s.total_record_count, f"snapshot {s.id}: {rows} rows"
    return sum(e.file.row_count for e in table.scan_files())


def _call(cat: Catalog, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    proc = get_procedure(name)
    bound = proc.bind_arguments(args, kwargs)
    result = proc.run(catalog=cat, executor=None, arguments=bound, default_database="db")  # type: ignore[arg-type]
    return result.as_dict()


def _local(millis: int) -> str:
    """Paimon's ``yyyy-MM-dd HH:mm:ss.SSS`` in local time."""
    return datetime.datetime.fromtimestamp(millis / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _age(path: str, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_expire_snapshots(tmp_path: Path) -> None:
    cat, table = _setup(tmp_path)
    e1 = _write(table, "data-a-0.parquet", range(0, 10))
    assert e1.file.extra_files == ("data-a-0.parquet.index",), "the writer made a .index file"
    table.commit([e1])
    e2 = _write(table, "data-b-0.parquet", range(10, 20))
    table.commit([e2])
    merged = _write(table, "data-c-0.parquet", range(0, 20))
    table.commit([merged], deleted=[e1, e2], kind=CommitKind.COMPACT)
    table.commit([_write(table, "data-d-0.parquet", range(20, 25))])
    assert _readable(table) == 25

    r = _call(cat, "sys.expire_snapshots", table="t", retain_last=2)
    assert r == {
        "snapshots_deleted": 2,
        "data_files_deleted": 2,
        "index_files_deleted": 2,
        "manifest_files_deleted": 4,
    }, "snapshots 1-2, the two compacted-away files and indexes, 1-2's manifest lists"
    assert [s.id for s in table.list_snapshots()] == [3, 4]
    assert _readable(table) == 25
    assert not any(os.path.exists(p) for p in _files_of(table, e1) + _files_of(table, e2))
    r = _call(cat, "expire_snapshots", "db.t", None, None, None, None, None, 2)
    assert r["snapshots_deleted"] == 0, "positional: retain_last is the 7th argument"
    r = _call(cat, "sys.expire_snapshots", table="t", retain_last=1)
    assert r["snapshots_deleted"] == 1
    assert _readable(table) == 25


def _snapshots(table: FileStoreTable, n: int) -> None:
    for i in range(n):
        table.commit([_write(table, f"data-{i}-0.parquet", range(i, i + 1))])


def test_expire_snapshots_paimon_defaults(tmp_path: Path) -> None:
    """Without retain_last, Paimon's procedure: unset arguments come from the table options
    (snapshot.num-retained.min 10, .max unbounded, snapshot.time-retained 1 h,
    snapshot.expire.limit 50)."""
    cat, table = _setup(tmp_path)
    _snapshots(table, 12)
    assert _call(cat, "sys.expire_snapshots", "t")["snapshots_deleted"] == 0, "all < 1 h old"
    r = _call(cat, "sys.expire_snapshots", "t", 5, 1)  # positional: retain_max, retain_min
    assert r["snapshots_deleted"] == 7, "beyond retain_max goes whatever its age"
    assert [s.id for s in table.list_snapshots()] == list(range(8, 13))
    now = _local(int(time.time() * 1000) + 1000)
    r = _call(cat, "sys.expire_snapshots", table="t", older_than=now, max_deletes=1)
    assert r["snapshots_deleted"] == 0, "retain_min defaults to 10 > the 5 left"
    r = _call(cat, "sys.expire_snapshots", table="t", retain_min=2, older_than=now, max_deletes=1)
    assert r["snapshots_deleted"] == 1, "max_deletes caps one call"
    r = _call(
        cat,
        "sys.expire_snapshots",
        table="t",
        options="snapshot.time-retained = 0 s, snapshot.num-retained.min = 2",
    )
    assert r["snapshots_deleted"] == 2, "options override the table's for this call"
    assert [s.id for s in table.list_snapshots()] == [11, 12]
    cat.alter_table("db.t", {"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1"})
    assert _call(cat, "sys.expire_snapshots", "t")["snapshots_deleted"] == 1, "table options"
    assert _readable(table) == 12


def test_expire_snapshots_older_than(tmp_path: Path) -> None:
    cat, table = _setup(tmp_path)
    for i in range(4):
        table.commit([_write(table, f"data-{i}-0.parquet", range(i, i + 1))])
        time.sleep(0.003)
    times = [s.time_millis for s in table.list_snapshots()]
    # snapshot 2 was current until snapshot 3's commit: at times[2] it is still needed
    r = _call(cat, "sys.expire_snapshots", table="t", retain_min=1, older_than=_local(times[2]))
    assert r["snapshots_deleted"] == 1, f"only snapshot 1 (replaced before times[2]): {r}"
    r = _call(cat, "sys.expire_snapshots", "db.t", None, 1, _local(times[2] + 1))
    assert [s.id for s in table.list_snapshots()] == [3, 4]
    future = _local(int(time.time() * 1000) + 86_400_000)
    r = _call(cat, "sys.expire_snapshots", table="t", retain_last=2, older_than=future)
    assert r["snapshots_deleted"] == 0, "retain_last=2 keeps 3 and 4 whatever older_than says"
    assert _readable(table) == 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retain_last": 0}, "retain_last must be at least 1, got 0"),
        ({"retain_last": -3}, "retain_last must be at least 1, got -3"),
        ({"retain_last": "many"}, "'retain_last' must be int"),
        ({"older_than": "yesterday"}, "older_than => 'yesterday' is not a timestamp"),
        ({"older_than": "2024-02-30 00:00:00"}, "is not a timestamp"),
        ({"retain_lats": 2}, "has no argument 'retain_lats'"),
        ({"retain_max": 2}, "retain_max (2) must not be less than retain_min (10)"),
        ({"retain_min": 0}, "retain_min must be at least 1, got 0"),
        ({"retain_last": 2, "retain_min": 2}, "retain_last or retain_min, not both"),
        ({"max_deletes": 0}, "max_deletes must be at least 1"),
        ({"options": "snapshot.time-retained"}, "expected 'key=value,...'"),
        ({"options": "snapshot.expire.limit=x"}, "snapshot.expire.limit"),
        ({"options": "no.such.option=1"}, "no.such.option"),
    ],
)
def test_expire_snapshots_bad_arguments(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    cat, table = _setup(tmp_path)
    for i in range(3):
        table.commit([_write(table, f"data-{i}-0.parquet", range(i, i + 1))])
    with pytest.raises(InvalidArgumentError, match=re.escape(message)) as info:
        _call(cat, "sys.expire_snapshots", table="t", **kwargs)
    assert "\n" not in str(info.value), "one-line message"
    assert [s.id for s in table.list_snapshots()] == [1, 2, 3], "nothing expired"


def test_remove_orphan_files(tmp_path: Path) -> None:
    cat, table = _setup(tmp_path)
    table.commit([_write(table, "data-a-0.parquet", range(0, 10))])
    for path in table.file_io.walk_files(table.path):
        _age(path.path, 3 * 86_400)  # everything committed is old: only references protect it
    orphan = _files_of(table, _write(table, "data-orphan-0.parquet", range(0, 3)))
    for path in orphan:
        _age(path, 3 * 86_400)  # a failed write, long ago
    recent = _files_of(table, _write(table, "data-recent-0.parquet", range(0, 3)))
    for path in recent:
        _age(path, 3_600)  # an hour old: younger than the default day
    sizes = sum(os.path.getsize(p) for p in orphan)

    r = _call(cat, "sys.remove_orphan_files", table="t", dry_run=True)
    assert r == {"files_deleted": 2, "bytes_deleted": sizes, "dry_run": True, "paths": orphan}
    assert all(os.path.exists(p) for p in orphan), "dry run deletes nothing"

    r = _call(cat, "sys.remove_orphan_files", table="t")
    assert (r["files_deleted"], r["paths"], r["dry_run"]) == (2, orphan, False)
    assert not any(os.path.exists(p) for p in orphan), "older than a day: deleted"
    assert all(os.path.exists(p) for p in recent), "younger than the default day: kept"
    assert _readable(table) == 10

    half_hour_ago = _local(int(time.time() * 1000) - 1_800_000)
    r = _call(cat, "sys.remove_orphan_files", "t", half_hour_ago, "false")
    assert r["paths"] == recent, "older_than half an hour ago reaches the hour-old write"
    assert _readable(table) == 10 and table.schema_by_id(0) is not None


def test_remove_orphan_files_bad_arguments(tmp_path: Path) -> None:
    cat, _ = _setup(tmp_path)
    with pytest.raises(InvalidArgumentError, match="is in the future"):
        _call(cat, "sys.remove_orphan_files", table="t", older_than="2999-01-01 00:00:00")
    with pytest.raises(InvalidArgumentError, match="not a timestamp"):
        _call(cat, "sys.remove_orphan_files", table="t", older_than="last week")
    with pytest.raises(InvalidArgumentError, match="'dry_run' must be bool"):
        _call(cat, "sys.remove_orphan_files", table="t", dry_run="maybe")
    with pytest.raises(InvalidArgumentError, match="missing required argument 'table'"):
        _call(cat, "sys.remove_orphan_files")
    with pytest.raises(TableNotFoundError):
        _call(cat, "sys.remove_orphan_files", table="nope")


def test_parse_timestamp_millis() -> None:
    assert parse_timestamp_millis("1970-01-01 00:00:01.5+00:00", "x") == 1500
    local = datetime.datetime(2024, 5, 1, 12, 30, 15).timestamp()
    assert parse_timestamp_millis("2024-05-01 12:30:15", "x") == int(local * 1000), "local time"
    assert parse_timestamp_millis(" 2024-05-01 ", "x") == int(
        datetime.datetime(2024, 5, 1).timestamp() * 1000
    ), "a date alone is its midnight"
