"""``CALL sys.compact`` with the full strategy on primary-key tables: Paimon's
``pickFullCompaction`` per bucket (a bucket already one clean top-level run is left alone, so
a second compaction commits nothing) and the output at ``num-levels`` - 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from tests.unit.procedures.test_sort_rewrite import LocalExecutor

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.schema import SchemaManager
from lakeskip.catalog.ops.system_tables import read_optimized_level
from lakeskip.catalog.pk.primary_key import RowKind
from lakeskip.catalog.write.data_writer import DataWriter, next_sequences
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.procedures.compact import Compact
from lakeskip.types import BIGINT, INT, STRING, RowType

ROW = RowType.of(("k", INT), ("v", STRING), ("n", BIGINT))


def _write(table: Any, rows: list[dict[str, Any]], prefix: str) -> None:
    live = table.scan_files() if table.latest_snapshot() else []
    spec = WriteSpec(
        file_io=table.file_io,
        table_path=table.path,
        schema=table.schema,
        value_kind=RowKind.INSERT,
        next_sequence=next_sequences(table.schema, live),
    )
    data = pa.Table.from_pylist(rows, schema=ROW.to_arrow())
    table.commit(DataWriter(spec, file_prefix=prefix).write_batches([data]))


def _compact(cat: Catalog) -> dict[str, Any]:
    result = Compact().run(
        catalog=cat,
        executor=LocalExecutor(),
        arguments={"table": "default.t"},
        default_database="default",
    )
    names = [name for name, _ in result.columns]
    return dict(zip(names, result.values[0], strict=True))


def _rows(table: Any) -> list[tuple[Any, ...]]:
    import pyarrow.parquet as pq

    files = table.scan_files()
    kv = pa.concat_tables([pq.read_table(table.data_file_path(e)) for e in files])
    return sorted(zip(*(kv[c].to_pylist() for c in ("k", "v", "n")), strict=True))


def test_second_full_compaction_commits_nothing(tmp_path: Path) -> None:
    """A bucket compacted into one top-level run of several files (rolled at
    ``target-file-size``) is left alone by the next full compaction: no file rewritten, no
    snapshot (Paimon's batch commit of no messages is ignored)."""
    cat = Catalog(str(tmp_path / "wh"))
    table = cat.create_table(
        "default.t",
        ROW,
        options={"primary-key": "k", "bucket": "2", "target-file-size": "4 kb"},
    )
    _write(table, [{"k": i, "v": f"v{i:05}" * 8, "n": i} for i in range(8000)], "w0")
    _write(table, [{"k": i, "v": "new", "n": -i} for i in range(0, 8000, 7)], "w1")
    first = _compact(cat)
    assert first["snapshot_id"] is not None and first["files_after"] >= 4
    table = table.refresh()
    files = {e.file.file_name for e in table.scan_files()}
    assert {e.file.level for e in table.scan_files()} == {5}
    snapshots = len(table.list_snapshots())
    rows = _rows(table)
    assert len(rows) == 8000 and rows[7] == (7, "new", -7)

    second = _compact(cat)
    assert (second["files_before"], second["files_after"], second["snapshot_id"]) == (0, 0, None)
    table = table.refresh()
    assert len(table.list_snapshots()) == snapshots
    assert {e.file.file_name for e in table.scan_files()} == files


@pytest.mark.parametrize(
    ("options", "stored", "top"),
    [
        ({"num-sorted-run.compaction-trigger": "3"}, {}, 3),  # num-levels = trigger + 1
        ({}, {"num-levels": "3"}, 2),  # a table Paimon created with num-levels
    ],
    ids=["trigger-3", "num-levels-3"],
)
def test_full_compaction_writes_num_levels_minus_one(
    tmp_path: Path, options: dict[str, str], stored: dict[str, str], top: int
) -> None:
    """The full compaction's output level is the table's ``num-levels`` - 1 (what
    ``t$read_optimized`` reads), not always 5; compacting again then commits nothing."""
    cat = Catalog(str(tmp_path / "wh"))
    table = cat.create_table(
        "default.t", ROW, options={"primary-key": "k", "bucket": "1", **options}
    )
    if stored:  # set behind the catalog's back: lakeskip's CREATE does not take num-levels
        schema = table.schema.with_options(table.schema.id + 1, {**table.schema.options, **stored})
        assert SchemaManager(table.file_io, table.path).try_commit(schema)
        table = table.refresh()
    for w in range(3):
        _write(table, [{"k": i, "v": f"w{w}", "n": i} for i in range(w, 300, 2)], f"w{w}")
        table = table.refresh()
    assert {e.file.level for e in table.scan_files()} == {0}
    assert _compact(cat)["snapshot_id"] is not None
    table = table.refresh()
    assert read_optimized_level(table.schema.options) == top
    assert {e.file.level for e in table.scan_files()} == {top}
    assert _rows(table) == sorted(
        (i, "w2" if i >= 2 and i % 2 == 0 else "w1" if i % 2 else "w0", i) for i in range(300)
    )
    assert _compact(cat)["snapshot_id"] is None
