"""Shared helpers for catalog tests: a fresh warehouse and a minimal data-file writer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeskip.catalog import (
    Catalog,
    FileKind,
    FileStoreTable,
    ManifestEntry,
    collect_stats,
    make_data_file_meta,
)
from lakeskip.catalog.options import stats_mode


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return Catalog(str(tmp_path / "wh"))


def _write_file(
    table: FileStoreTable, data: pa.Table | dict[str, list[Any]], partition: Sequence[Any] = ()
) -> ManifestEntry:
    """Write one Parquet data file into the table's layout and return its ADD entry."""
    schema = table.schema
    arrow = data if isinstance(data, pa.Table) else pa.table(data)
    arrow = arrow.select(schema.row_type.names).cast(schema.row_type.to_arrow())
    rel = table.partition_path(partition)
    name = table.new_data_file_name()
    path = f"{table.path}/{rel}/{name}"
    with table.file_io.open_output(path) as out:
        pq.write_table(arrow, out)
    stats, cols = collect_stats(arrow, schema.row_type, stats_mode(schema.options))
    meta = make_data_file_meta(
        name, table.file_io.file_size(path), arrow.num_rows, stats, cols, schema.id, None, ()
    )
    return ManifestEntry(FileKind.ADD, tuple(partition), 0, -1, meta)


def _read_rows(table: FileStoreTable) -> list[dict[str, Any]]:
    """Every row of the latest snapshot, in a stable order."""
    rows: list[dict[str, Any]] = []
    for e in table.scan_files():
        with table.file_io.open_input(table.data_file_path(e)) as f:
            rows += pq.read_table(f).to_pylist()
    return sorted(rows, key=repr)


@pytest.fixture
def write_file() -> Any:
    return _write_file


@pytest.fixture
def read_rows() -> Any:
    return _read_rows
