"""``catalog.system_tables`` without Spark: embedded file indexes in ``file_indexes``, the
planner's ``index_bytes_read``, ``table_details`` and unknown names."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.cache import MetadataCache
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.ops.system_tables import system_table
from lakeskip.catalog.ops.table_details import table_details
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import DataWriter
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import TableNotFoundError
from lakeskip.index.format import FileIndexContainer
from lakeskip.planner.report import SkipTier
from lakeskip.planner.scan import ScanPlanner

SCHEMA = T.RowType.of(("id", T.BIGINT), ("s", T.STRING))


def _append(table: FileStoreTable, ids: list[int]) -> None:
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    data = pa.table(
        {"id": pa.array(ids, pa.int64()), "s": pa.array([f"s{i}" for i in ids], pa.string())}
    )
    table.commit(DataWriter(spec).write_batches(iter([data])))


@pytest.fixture
def table(tmp_path: Path) -> FileStoreTable:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    options = {
        "file-index.bloom-filter.columns": "s",
        "file-index.bloom-filter.s.items": "50",  # small: kept in the manifest (embedded)
        "file-index.bitmap.columns": "id",
    }
    t = cat.create_table("db.t", SCHEMA, options=options)
    for lo in (0, 10):
        _append(t, list(range(lo, lo + 10)))
    return cat.get_table("db.t")


def test_embedded_indexes_sizes_and_bytes_read(table: FileStoreTable) -> None:
    entries = table.scan_files()
    assert all(e.file.embedded_index is not None for e in entries)
    t = system_table(table, "file_indexes", table.latest_snapshot())
    cols = [c[0] for c in t.columns]
    rows = [dict(zip(cols, r, strict=True)) for r in t.rows]
    assert {(r["column_name"], r["index_type"], r["storage_type"]) for r in rows} == {
        ("s", "bloom-filter", "EMBEDDED"),
        ("id", "bitmap", "EMBEDDED"),
    }
    for e in entries:
        blob = bytes(e.file.embedded_index or b"")
        mine = [r for r in rows if r["file_path"].endswith(e.file.file_name)]
        assert {r["index_container_size_in_bytes"] for r in mine} == {len(blob)}
        sizes = {c.column: c.length for c in FileIndexContainer.decode(blob).entries}
        assert {r["column_name"]: r["index_size_in_bytes"] for r in mine} == sizes
        assert all(r["index_file_path"] is None and r["is_empty"] is False for r in mine)

    plan = ScanPlanner(table, cache=MetadataCache()).plan(E.EqualTo("s", "s15"))
    assert plan.report.kept_files == 1
    # every container the planner evaluated (files stats did not skip first) is counted
    evaluated = [d.entry for d in plan.decisions if d.tier is not SkipTier.STATS]
    assert evaluated
    assert plan.report.index_bytes_read == sum(len(e.file.embedded_index or b"") for e in evaluated)


def test_details_and_unknown_names(table: FileStoreTable) -> None:
    details = dict(table_details(table, table.latest_snapshot()))
    assert details["lakeskip.snapshot"] == "2" and details["lakeskip.rows"] == "20"
    assert details["lakeskip.indexed-files"] == "2 embedded, 0 in .index files"
    assert details["lakeskip.indexes"] == "bloom-filter(s), bitmap(id)"
    assert dict(table_details(table, None))["lakeskip.data-files"] == "0"
    with pytest.raises(TableNotFoundError, match="binlog is not supported yet"):
        system_table(table, "binlog", None)
    with pytest.raises(TableNotFoundError, match="audit_log reads data files"):
        system_table(table, "audit_log", None)
    with pytest.raises(TableNotFoundError, match="nope is unknown"):
        system_table(table, "nope", None)
    # an empty table: the per-snapshot tables are empty
    assert system_table(table, "files", None).rows == ()
