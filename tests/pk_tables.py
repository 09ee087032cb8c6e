"""Writing to primary-key tables without Spark, as one writer commit after another: the
setup the catalog, planner and interop tests share."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.pk.primary_key import RowKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import DataWriter, WriteSpec, next_sequences
from lakeskip.types import RowType

__all__ = ["pk_write_spec", "write_pk"]


def pk_write_spec(table: FileStoreTable, kind: RowKind = RowKind.INSERT) -> WriteSpec:
    """The spec of the next write to ``table``: rows of ``kind``, sequence numbers after those
    of its live files."""
    live = table.scan_files() if table.latest_snapshot() else []
    return WriteSpec(
        file_io=table.file_io,
        table_path=table.path,
        schema=table.schema,
        value_kind=kind,
        next_sequence=next_sequences(table.schema, live),
    )


def write_pk(
    table: FileStoreTable,
    rows: list[dict[str, Any]] | dict[str, list[Any]],
    kind: RowKind = RowKind.INSERT,
    prefix: str = "w",
    *,
    row_type: RowType,
) -> list[ManifestEntry]:
    """Write ``rows`` (a list of rows or a dict of columns, of ``row_type``) to ``table`` by
    :class:`DataWriter` as versions of ``kind`` and commit them; the files' names start with
    ``prefix``. Returns the added entries."""
    writer = DataWriter(pk_write_spec(table, kind), file_prefix=prefix)
    schema = row_type.to_arrow()
    data = (
        pa.table(rows, schema=schema)
        if isinstance(rows, dict)
        else pa.Table.from_pylist(rows, schema=schema)
    )
    entries = writer.write_batches([data])
    table.commit(entries)
    return entries
