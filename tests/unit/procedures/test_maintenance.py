"""Snapshot expiry and orphan removal on real tables (no Spark needed)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.data_writer import WriteSpec, write_data_file
from lakeskip.catalog.snapshot import CommitKind
from lakeskip.errors import InvalidArgumentError
from lakeskip.procedures.registry import get_procedure

RT = T.RowType.of(("id", T.BIGINT), ("s", T.STRING))
OPTS = {"file-index.bloom-filter.columns": "s", "file-index.in-manifest-threshold": "1 b"}


def _table(tmp_path: Path):  # type: ignore[no-untyped-def]
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    table = cat.create_table("db.t", RT, options=OPTS)
    return cat, table


def _write(table, name: str, ids: range):  # type: ignore[no-untyped-def]
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    t = pa.table({"id": list(ids), "s": [f"s{i}" for i in ids]})
    return write_data_file(spec, t, (), name)


def _readable(table) -> int:  # type: ignore[no-untyped-def]
    """Every retained snapshot's files exist; returns the latest row count."""
    for s in table.list_snapshots():
        for e in table.scan_files(s):
            assert os.path.exists(table.data_file_path(e)), f"snapshot {s.id} lost a data file"
            for x in e.file.extra_files:
                assert os.path.exists(f"{table.data_file_dir(e)}/{x}"), f"snapshot {s.id} lost {x}"
    return sum(e.file.row_count for e in table.scan_files())


def _run(cat: Catalog, name: str, **kwargs: object) -> dict[str, object]:
    proc = get_procedure(name)
    args = proc.bind_arguments((), kwargs)
    return proc.run(catalog=cat, executor=None, arguments=args, default_database="db").as_dict()  # type: ignore[arg-type]


def test_expire_keeps_retained_snapshots_readable(tmp_path: Path) -> None:
    cat, table = _table(tmp_path)
    e1 = _write(table, "data-a-0.parquet", range(0, 10))
    table.commit([e1])
    e2 = _write(table, "data-b-0.parquet", range(10, 20))
    table.commit([e2])
    merged = _write(table, "data-c-0.parquet", range(0, 20))
    table.commit([merged], deleted=[e1, e2], kind=CommitKind.COMPACT)
    table.commit([_write(table, "data-d-0.parquet", range(20, 25))])
    assert _readable(table) == 25
    r = _run(cat, "sys.expire_snapshots", table="t", retain_last=2)
    assert r["snapshots_deleted"] == 2
    assert r["data_files_deleted"] == 2, "the two compacted-away files"
    assert r["index_files_deleted"] == 2
    assert [s.id for s in table.list_snapshots()] == [3, 4]
    assert _readable(table) == 25
    assert not os.path.exists(table.data_file_path(e1))
    r = _run(cat, "sys.expire_snapshots", table="t", retain_last=2)
    assert r["snapshots_deleted"] == 0
    with pytest.raises(InvalidArgumentError, match="retain_last"):
        _run(cat, "sys.expire_snapshots", table="t", retain_last=0)
    with pytest.raises(InvalidArgumentError, match="not a timestamp"):
        _run(cat, "sys.expire_snapshots", table="t", older_than="yesterday")


def test_remove_orphan_files(tmp_path: Path) -> None:
    cat, table = _table(tmp_path)
    table.commit([_write(table, "data-a-0.parquet", range(0, 10))])
    orphan = _write(table, "data-orphan-0.parquet", range(0, 3))  # written, never committed
    orphan_path = table.data_file_path(orphan)
    old = time.time() - 3 * 86400
    os.utime(orphan_path, (old, old))
    fresh = _write(table, "data-fresh-0.parquet", range(0, 3))  # an in-flight write
    r = _run(cat, "sys.remove_orphan_files", table="t", dry_run=True)
    assert r["files_deleted"] == 1 and os.path.exists(orphan_path), "dry run deletes nothing"
    r = _run(cat, "sys.remove_orphan_files", table="t")
    assert r["files_deleted"] == 1 and not os.path.exists(orphan_path)
    assert os.path.exists(table.data_file_path(fresh)), "newer than the threshold: kept"
    assert _readable(table) == 10
    assert table.schema_by_id(0) is not None
