"""Paimon's system tables through the Spark catalog (``lakeskip.db.`t$snapshots```).

``LakeOps.loadTable`` sees the ``$`` and builds a ``LakeSystemTable`` from
:func:`describe_system` (the columns as Spark DDL, no rows); its scan asks for the rows with
the ``system_rows`` callback (:func:`system_rows`) when Spark plans the query, so a DataFrame
shows the metadata as of its planning, as a data scan shows the data. The rows come from
:mod:`lakeskip.catalog.ops.system_tables`; the JSON forms are the ones ``LakeSystemTable.java``
decodes: TIMESTAMP_NTZ as epoch microseconds of the wall-clock time, arrays as lists,
structs as lists of fields.

``read_optimized`` and ``audit_log`` read data files: they are the table's own scan
(``LakeTable``; ``catalog_tables``, ``catalog_scans``): of the files at the top level of a primary-key table,
read without a merge, or with Paimon's ``rowkind`` first and deleted keys kept
(``LakeAuditScan``).
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.ops.system_tables import (
    DATA_SYSTEM_TABLES,
    SystemColumn,
    system_table,
    system_table_columns,
)
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import TableNotFoundError
from lakeskip.spark.jvm.protocol import RowsReply, SystemTableDescription, TableProperty
from lakeskip.types import quote_identifier

__all__ = ["describe_system", "spark_type", "system_rows"]

_SIMPLE = {
    "STRING": "STRING",
    "BIGINT": "BIGINT",
    "INT": "INT",
    "BOOLEAN": "BOOLEAN",
    "TIMESTAMP(3)": "TIMESTAMP_NTZ",
}
_ROW = re.compile(r"ROW<(.*)>$")


def spark_type(paimon: str) -> str:
    """A system column's Paimon type string as Spark DDL.

    >>> spark_type("ARRAY<ROW<f0 STRING, f1 INT>>")
    'ARRAY<STRUCT<`f0`: STRING, `f1`: INT>>'
    >>> spark_type("TIMESTAMP(3)")
    'TIMESTAMP_NTZ'
    """
    if paimon in _SIMPLE:
        return _SIMPLE[paimon]
    if paimon.startswith("ARRAY<") and paimon.endswith(">"):
        return f"ARRAY<{spark_type(paimon[6:-1])}>"
    m = _ROW.match(paimon)
    if m:
        fields = [f.strip().split(" ", 1) for f in m.group(1).split(",")]
        return (
            "STRUCT<"
            + ", ".join(f"{quote_identifier(n)}: {spark_type(t)}" for n, t in fields)
            + ">"
        )
    raise ValueError(f"no Spark type for system column type {paimon}")


def _ddl(columns: tuple[SystemColumn, ...]) -> str:
    return ", ".join(
        f"{quote_identifier(n)} {spark_type(t)}" + ("" if nullable else " NOT NULL")
        for n, t, nullable in columns
    )


def describe_system(
    table: FileStoreTable, name: str, snapshot: Snapshot | None
) -> SystemTableDescription:
    """The ``load_table`` reply for ``table$name``: columns, and what the scan must ask.

    Raises:
        TableNotFoundError: no such system table.
    """
    if name in DATA_SYSTEM_TABLES:
        schema = table.schema.row_type.spark_ddl()
    else:
        schema = _ddl(system_table_columns(name))
    return SystemTableDescription(
        system=name,
        schema=schema,
        snapshot_id=snapshot.id if snapshot is not None else None,
        properties={
            TableProperty.PROVIDER.value: "lakeskip",
            TableProperty.SYSTEM_TABLE.value: name,
        },
    )


def _json_value(v: Any) -> Any:
    if isinstance(v, datetime.datetime):
        delta = v - datetime.datetime(1970, 1, 1)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    return v


def system_rows(
    table: FileStoreTable, name: str, snapshot: Snapshot | None, time_zone: str
) -> RowsReply:
    """The ``system_rows`` reply: rows of values in the Java forms."""
    if name in DATA_SYSTEM_TABLES:
        raise TableNotFoundError(f"{table.identifier}${name} is read as a data scan")
    t = system_table(table, name, snapshot, time_zone)
    return RowsReply(rows=tuple([_json_value(v) for v in row] for row in t.rows))
