"""Writing to primary-key tables without Spark, as one writer commit after another: the
setup the catalog, planner and interop tests share."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.pk.primary_key import RowKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import DataWriter, next_sequences
from lakeskip.catalog.write.pk_dv_write import PkDvSpec, PkDvWriter, dv_update, pk_dv_spec
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.types import RowType

__all__ = ["commit_pk_dv", "pk_write_spec", "write_pk", "write_pk_dv"]


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


def commit_pk_dv(
    table: FileStoreTable, spec: PkDvSpec, writer: PkDvWriter, added: list[ManifestEntry]
) -> None:
    """Commit what a :class:`PkDvWriter` wrote, as the Spark write does: its new files, the
    files it emptied and the deletion vectors it set (nothing when it changed nothing)."""
    removed = [e for c in writer.changes for e in c.removed]
    update = dv_update(spec, writer.changes)
    if added or removed or update is not None:
        table.commit(
            added,
            deleted=removed,
            kind=CommitKind.OVERWRITE,
            overwrite_partitions=[],
            deletion_vectors=update,
        )


def write_pk_dv(
    table: FileStoreTable,
    batches: Iterable[pa.Table],
    kind: RowKind = RowKind.INSERT,
    *,
    mixed: bool = False,
    prefix: str | None = None,
) -> PkDvWriter:
    """Write ``batches`` to a deletion-vector (or first-row) primary-key table by
    :class:`PkDvWriter` as versions of ``kind`` (``mixed``: MERGE rows with the delete flag)
    and commit them; returns the writer."""
    spec = pk_dv_spec(table, pk_write_spec(table, kind), fresh=False, mixed=mixed)
    writer = PkDvWriter(spec, file_prefix=prefix)
    commit_pk_dv(table, spec, writer, writer.write_batches(batches))
    return writer
