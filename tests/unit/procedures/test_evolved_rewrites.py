"""Rewrites of an append table whose older files were written under an older schema (issue
41). Compaction reads them by field id, so a renamed column keeps its values, a widened one
is cast, an added one is NULL and a dropped one gone (reading them by name lost the renamed
column's values for good). ``rewrite_file_index`` leaves each file under its own schema id
(relabelling an old file as the current schema made it read by name: the renamed column
NULL) and builds its indexes under the file's own column names, so the renamed column still
prunes it. Oracle: the rows written, mapped by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.unit.procedures.test_sort_rewrite import LocalExecutor

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.field_mapping import arrow_by_id
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.schema_evolution import AddColumn, DropColumn, RenameColumn, UpdateColumnType
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.planner.scan import ScanPlanner
from lakeskip.procedures.compact import Compact
from lakeskip.procedures.rewrite_file_index import RewriteFileIndex


def _evolved(tmp_path: Path) -> tuple[Catalog, Any]:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        T.RowType.of(("id", T.INT), ("s", T.STRING), ("v", T.SMALLINT), ("w", T.INT)),
        options={"file-index.bloom-filter.columns": "s"},
    )
    # data-old-0 holds 'a' and 'd' (min/max cannot rule out 'c'; a bloom filter can)
    for i, rows in enumerate(([(1, "a", 10, 100), (2, "d", 20, 200)], [(3, "c", 30, 300)])):
        spec = WriteSpec(file_io=t.file_io, table_path=t.path, schema=t.schema)
        data = pa.Table.from_pylist(
            [dict(zip(("id", "s", "v", "w"), r, strict=True)) for r in rows],
            schema=t.schema.row_type.to_arrow(),
        )
        t.commit([write_data_file(spec, data, (), f"data-old-{i}.parquet")])
    cat.alter_columns(
        "db.t",
        [
            AddColumn(("c",), T.BIGINT),
            RenameColumn(("s",), "name"),
            DropColumn(("v",)),
            UpdateColumnType(("w",), T.BIGINT),
        ],
    )
    t.refresh()
    spec = WriteSpec(file_io=t.file_io, table_path=t.path, schema=t.schema)
    new = pa.Table.from_pylist(
        [{"id": 4, "name": "d", "w": 4_000_000_000, "c": 7}], schema=t.schema.row_type.to_arrow()
    )
    t.commit([write_data_file(spec, new, (), "data-new.parquet")])
    return cat, t


def _rows(t: Any) -> list[tuple[Any, ...]]:
    t.refresh()
    files = [pq.read_table(t.data_file_path(e)) for e in t.scan_files()]
    for e in t.scan_files():
        assert e.file.schema_id == t.schema.id, "every compacted file is of the current schema"
    data = pa.concat_tables(files)
    return sorted(zip(*(data[n].to_pylist() for n in ("id", "name", "w", "c")), strict=True))


EXPECTED = [
    (1, "a", 100, None),
    (2, "d", 200, None),
    (3, "c", 300, None),
    (4, "d", 4_000_000_000, 7),
]


@pytest.mark.parametrize(
    "arguments",
    [{}, {"order_strategy": "zorder", "order_by": "id,name"}],
    ids=["bin-pack", "zorder"],
)
def test_compaction_reads_older_files_by_field_id(
    tmp_path: Path, arguments: dict[str, str]
) -> None:
    cat, t = _evolved(tmp_path)
    Compact().run(
        catalog=cat,
        executor=LocalExecutor(),
        arguments={"table": "db.t", **arguments},
        default_database="db",
    )
    assert _rows(t) == EXPECTED


def test_rewrite_file_index_keeps_each_files_schema_and_the_renamed_column_prunes(
    tmp_path: Path,
) -> None:
    cat, t = _evolved(tmp_path)
    cat.alter_table("db.t", {"file-index.bloom-filter.columns": "name,id"})
    t.refresh()
    before = {e.file.file_name: e.file.schema_id for e in t.scan_files()}
    assert sorted(before.values()) == [0, 0, 1]
    RewriteFileIndex().run(
        catalog=cat, executor=LocalExecutor(), arguments={"table": "db.t"}, default_database="db"
    )
    t.refresh()
    snapshot = t.latest_snapshot()
    assert snapshot is not None and snapshot.commit_kind is CommitKind.COMPACT, "rewritten"
    after = {e.file.file_name: e.file.schema_id for e in t.scan_files()}
    assert after == before, "each file keeps the schema it was written with"
    by_id = files_by_id(t)
    assert by_id == EXPECTED
    kept = sorted(e.file.file_name for e in ScanPlanner(t).plan(E.EqualTo("name", "c")).files)
    assert kept == ["data-old-1.parquet"], "the bloom filter of the renamed column prunes"
    kept = sorted(e.file.file_name for e in ScanPlanner(t).plan(E.EqualTo("id", 3)).files)
    assert "data-old-1.parquet" in kept


def files_by_id(t: Any) -> list[tuple[Any, ...]]:
    """Every live file's rows under the current schema, by field id."""
    out = []
    for e in t.scan_files():
        data = pq.read_table(t.data_file_path(e))
        stored = t.schema_by_id(e.file.schema_id).row_type
        data = arrow_by_id(data, stored, t.schema.row_type)
        out += list(zip(*(data[n].to_pylist() for n in ("id", "name", "w", "c")), strict=True))
    return sorted(out)
