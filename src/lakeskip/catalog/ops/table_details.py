"""What ``DESCRIBE TABLE EXTENDED`` adds about a table's state: ``lakeskip.*`` properties."""

from __future__ import annotations

from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.table import FileStoreTable

__all__ = ["table_details"]


def table_details(table: FileStoreTable, snapshot: Snapshot | None) -> list[tuple[str, str]]:
    """What ``DESCRIBE TABLE EXTENDED`` adds about a table's state at ``snapshot``: the
    snapshot and schema, files, rows (minus deletion vectors), bytes, the declared file
    indexes and how many files carry one (embedded or ``.index``). Keys are ``lakeskip.*``
    table properties (``LakeTable.properties`` on the JVM; never table options)."""
    from lakeskip.catalog.options import file_index_options

    schema = table.schema
    if snapshot is not None and snapshot.schema_id != schema.id:
        schema = table.schema_by_id(snapshot.schema_id)
    entries = table.scan_files(snapshot) if snapshot is not None else []
    refs = table.deletion_files(snapshot) if snapshot is not None else {}
    live = {e.file.file_name for e in entries}
    deleted = sum(r.meta.cardinality or 0 for n, r in refs.items() if n in live)
    embedded = sum(1 for e in entries if e.file.embedded_index is not None)
    external = sum(
        1 for e in entries if e.file.embedded_index is None and e.file.index_file_name is not None
    )
    try:
        specs = file_index_options(schema.options, schema.row_type, schema.partition_keys).specs
        indexes = ", ".join(f"{s.index_type}({s.name})" for s in specs) or "(none)"
    except Exception as e:  # an option this version cannot read: say so, don't fail DESCRIBE
        indexes = f"(unreadable: {e})"
    out = [
        ("lakeskip.snapshot", str(snapshot.id) if snapshot is not None else "(none)"),
        ("lakeskip.schema-id", str(schema.id)),
        ("lakeskip.data-files", str(len(entries))),
        ("lakeskip.rows", str(sum(e.file.row_count for e in entries) - deleted)),
        ("lakeskip.bytes", str(sum(e.file.file_size for e in entries))),
        ("lakeskip.indexes", indexes),
        ("lakeskip.indexed-files", f"{embedded} embedded, {external} in .index files"),
    ]
    if refs:
        out.append(("lakeskip.rows-deleted-by-deletion-vectors", str(deleted)))
    return out
