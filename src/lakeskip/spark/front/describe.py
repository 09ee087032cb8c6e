"""What ``DESCRIBE [EXTENDED]`` and ``SHOW CREATE TABLE`` show of a lakeskip table through
``Session.sql``, from its metadata (a table the Spark catalog serves is described by Spark)."""

from __future__ import annotations

from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.table import FileStoreTable
from lakeskip.types import DataType, quote_identifier, quote_sql_string

__all__ = ["describe_rows", "show_create_text"]


def describe_rows(
    name: str, table: FileStoreTable, extended: bool
) -> list[tuple[str, str, str | None]]:
    """DESCRIBE's (col_name, data_type, comment) rows: the columns, partition and primary
    key; ``extended``: the table's snapshot, files, rows, indexes and options too."""
    schema = table.schema
    rows: list[tuple[str, str, str | None]] = [
        (f.name, _type_text(f.type), f.description) for f in schema.row_type
    ]
    if schema.partition_keys:
        rows.append(("# Partition Information", "", None))
        rows += [
            (k, schema.row_type.field(k).type.spark_ddl().lower(), None)
            for k in schema.partition_keys
        ]
    if schema.primary_keys:
        rows.append(("# Primary Key", ", ".join(schema.primary_keys), None))
    if extended:
        from lakeskip.catalog.options import file_index_options

        snap = table.latest_snapshot()
        files = table.scan_files(snap) if snap else []
        rows.append(("", "", None))
        rows.append(("# Detailed Table Information", "", None))
        rows.append(("Table", name, None))
        rows.append(("Location", table.path, None))
        rows.append(("Provider", "lakeskip (Apache Paimon layout)", None))
        rows.append(("Schema id", str(schema.id), None))
        rows.append(("Snapshot", str(snap.id) if snap else "(none)", None))
        rows.append(("Data files", str(len(files)), None))
        refs = table.deletion_files(snap) if snap else {}
        live = {e.file.file_name for e in files}
        dv_rows = sum(r.meta.cardinality or 0 for n, r in refs.items() if n in live)
        rows.append(("Rows", str(sum(e.file.row_count for e in files) - dv_rows), None))
        if refs:
            rows.append(("Rows deleted by deletion vectors", str(dv_rows), None))
        rows.append(("Bytes", str(sum(e.file.file_size for e in files)), None))
        idx = file_index_options(schema.options, schema.row_type, schema.partition_keys)
        for spec in idx.specs:
            opts = ", ".join(f"{k}={v}" for k, v in sorted(spec.options.items()))
            rows.append(("Index", f"{spec.index_type}({spec.name})", opts or None))
        rows += [(f"Option {k}", v, None) for k, v in sorted(schema.options.items())]
    return rows


def _type_text(t: DataType) -> str:
    return t.simple_string() + ("" if t.nullable else " not null")


def show_create_text(name: str, schema: TableSchema) -> str:
    """The ``CREATE TABLE`` statement that makes ``schema`` again under ``name``."""
    cols = []
    for f in schema.row_type:
        col = f"  {quote_identifier(f.name)} {f.type.spark_ddl()}"
        if not f.type.nullable:
            col += " NOT NULL"
        if f.description:
            col += f" COMMENT {quote_sql_string(f.description)}"
        cols.append(col)
    if schema.primary_keys:
        keys = ", ".join(quote_identifier(k) for k in schema.primary_keys)
        cols.append(f"  PRIMARY KEY ({keys}) NOT ENFORCED")
    text = f"CREATE TABLE {name} (\n" + ",\n".join(cols) + "\n)"
    if schema.comment:
        text += f"\nCOMMENT {quote_sql_string(schema.comment)}"
    if schema.partition_keys:
        text += (
            "\nPARTITIONED BY ("
            + ", ".join(quote_identifier(k) for k in schema.partition_keys)
            + ")"
        )
    if schema.options:
        opts = ",\n".join(
            f"  {quote_sql_string(k)} = {quote_sql_string(v)}"
            for k, v in sorted(schema.options.items())
        )
        text += "\nTBLPROPERTIES (\n" + opts + "\n)"
    return text
