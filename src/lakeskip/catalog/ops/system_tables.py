"""Paimon's system tables (``t$snapshots``, ``t$files``, ...): their names, columns and rows.

Names, column names and column types are Paimon 1.4's (``paimon-core/.../table/system/*.java``
at ``release-1.4.2``); ``file_indexes`` is the one Paimon added after 1.4 (its master's
``FileIndexesTable``: one row per data file, column and index type, embedded or in a
``.index`` file, with sizes). Every table is computed from the catalog's metadata alone
(:mod:`lakeskip.catalog.ops.system_rows`, in the text forms of
:mod:`lakeskip.catalog.ops.paimon_text`); ``read_optimized`` and ``audit_log`` read data and
are the Spark layer's scan of the table: ``read_optimized`` of the top-level files only,
``audit_log`` with a ``rowkind`` column first and the deleted keys kept (Paimon's
``forceKeepDelete`` read).

Time travel: ``files``, ``file_indexes``, ``manifests``, ``partitions`` and
``table_indexes`` describe the snapshot a ``VERSION AS OF`` / ``TIMESTAMP AS OF`` names, as
Paimon's do; ``snapshots``, ``schemas``, ``options`` and ``tags`` list what exists now.

>>> split_system_name("events$snapshots")
('events', 'snapshots')
>>> split_system_name("events")
('events', None)
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.ops.system_rows import SystemRows
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError, TableNotFoundError
from lakeskip.types import session_time_zone

__all__ = [
    "DATA_SYSTEM_TABLES",
    "METADATA_SYSTEM_TABLES",
    "SYSTEM_TABLE_SPLITTER",
    "SystemColumn",
    "SystemTable",
    "read_optimized_level",
    "split_system_name",
    "system_table",
    "system_table_columns",
]


SYSTEM_TABLE_SPLITTER = "$"

#: one column of a system table: name, Paimon type string, nullable
SystemColumn = tuple[str, str, bool]

_STR, _BIGINT, _INT, _BOOL, _TS = "STRING", "BIGINT", "INT", "BOOLEAN", "TIMESTAMP(3)"
_DV_META = "ARRAY<ROW<f0 STRING, f1 INT, f2 INT, _CARDINALITY BIGINT>>"

_COLUMNS: dict[str, tuple[SystemColumn, ...]] = {
    "snapshots": (
        ("snapshot_id", _BIGINT, False),
        ("schema_id", _BIGINT, False),
        ("commit_user", _STR, False),
        ("commit_identifier", _BIGINT, False),
        ("commit_kind", _STR, False),
        ("commit_time", _TS, False),
        ("base_manifest_list", _STR, False),
        ("delta_manifest_list", _STR, False),
        ("changelog_manifest_list", _STR, True),
        ("total_record_count", _BIGINT, True),
        ("delta_record_count", _BIGINT, True),
        ("changelog_record_count", _BIGINT, True),
        ("watermark", _BIGINT, True),
        ("next_row_id", _BIGINT, True),
    ),
    "schemas": (
        ("schema_id", _BIGINT, False),
        ("fields", _STR, False),
        ("partition_keys", _STR, False),
        ("primary_keys", _STR, False),
        ("options", _STR, False),
        ("comment", _STR, True),
        ("update_time", _TS, False),
    ),
    "options": (("key", _STR, False), ("value", _STR, False)),
    "tags": (
        ("tag_name", _STR, False),
        ("snapshot_id", _BIGINT, False),
        ("schema_id", _BIGINT, False),
        ("commit_time", _TS, False),
        ("record_count", _BIGINT, True),
        ("create_time", _TS, True),
        ("time_retained", _STR, True),
    ),
    "files": (
        ("partition", _STR, True),
        ("bucket", _INT, False),
        ("file_path", _STR, False),
        ("file_format", _STR, False),
        ("schema_id", _BIGINT, False),
        ("level", _INT, False),
        ("record_count", _BIGINT, False),
        ("file_size_in_bytes", _BIGINT, False),
        ("min_key", _STR, True),
        ("max_key", _STR, True),
        ("null_value_counts", _STR, False),
        ("min_value_stats", _STR, False),
        ("max_value_stats", _STR, False),
        ("min_sequence_number", _BIGINT, True),
        ("max_sequence_number", _BIGINT, True),
        ("creation_time", _TS, True),
        ("deleteRowCount", _BIGINT, True),
        ("file_source", _STR, True),
        ("first_row_id", _BIGINT, True),
        ("write_cols", "ARRAY<STRING>", True),
    ),
    "file_indexes": (
        ("partition", _STR, True),
        ("bucket", _INT, False),
        ("file_path", _STR, False),
        ("file_size_in_bytes", _BIGINT, False),
        ("record_count", _BIGINT, False),
        ("schema_id", _BIGINT, False),
        ("column_name", _STR, False),
        ("index_type", _STR, False),
        ("storage_type", _STR, False),
        ("index_file_path", _STR, True),
        ("index_size_in_bytes", _BIGINT, False),
        ("index_container_size_in_bytes", _BIGINT, False),
        ("is_empty", _BOOL, False),
    ),
    "manifests": (
        ("file_name", _STR, False),
        ("file_size", _BIGINT, False),
        ("num_added_files", _BIGINT, False),
        ("num_deleted_files", _BIGINT, False),
        ("schema_id", _BIGINT, False),
        ("min_partition_stats", _STR, True),
        ("max_partition_stats", _STR, True),
        ("min_row_id", _BIGINT, True),
        ("max_row_id", _BIGINT, True),
    ),
    "partitions": (
        ("partition", _STR, True),
        ("record_count", _BIGINT, False),
        ("file_size_in_bytes", _BIGINT, False),
        ("file_count", _BIGINT, False),
        ("last_update_time", _TS, True),
        ("created_at", _TS, True),
        ("created_by", _STR, True),
        ("updated_by", _STR, True),
        ("options", _STR, True),
    ),
    "table_indexes": (
        ("partition", _STR, True),
        ("bucket", _INT, False),
        ("index_type", _STR, False),
        ("file_name", _STR, False),
        ("file_size", _BIGINT, False),
        ("row_count", _BIGINT, False),
        ("dv_ranges", _DV_META, True),
    ),
}

#: system tables computed from metadata here
METADATA_SYSTEM_TABLES = tuple(_COLUMNS)
#: system tables that read data files (served by the Spark layer's scan)
DATA_SYSTEM_TABLES = ("audit_log", "read_optimized")
#: Paimon system tables lakeskip does not serve yet
_NOT_YET = ("binlog", "buckets", "branches", "consumers", "statistics")


@dataclass(frozen=True, slots=True)
class SystemTable:
    """One system table's columns and rows (values in the JSON-ready forms of
    :mod:`lakeskip.catalog.ops.paimon_text`; ``TIMESTAMP(3)`` values are naive ``datetime``s)."""

    name: str
    columns: tuple[SystemColumn, ...]
    rows: tuple[tuple[Any, ...], ...]


def split_system_name(name: str) -> tuple[str, str | None]:
    """``t$snapshots`` -> (``t``, ``snapshots``); a plain name -> (name, None)."""
    base, sep, system = name.partition(SYSTEM_TABLE_SPLITTER)
    if not sep:
        return name, None
    return base, system.lower()


def system_table_columns(name: str) -> tuple[SystemColumn, ...]:
    """The columns of a metadata system table.

    Raises:
        TableNotFoundError: not a system table computed from metadata.
    """
    cols = _COLUMNS.get(name)
    if cols is None:
        raise TableNotFoundError(_unknown(name))
    return cols


def _unknown(name: str) -> str:
    known = ", ".join(sorted([*METADATA_SYSTEM_TABLES, *DATA_SYSTEM_TABLES]))
    if name in DATA_SYSTEM_TABLES:
        return f"system table ${name} reads data files: it is served by the Spark catalog's scan"
    what = "not supported yet" if name in _NOT_YET else "unknown"
    return f"system table ${name} is {what} (lakeskip serves {known})"


def read_optimized_level(options: Mapping[str, str]) -> int:
    """The level ``t$read_optimized`` reads of a primary-key table: Paimon's
    ``CoreOptions.numLevels() - 1`` (``num-levels``, default
    ``num-sorted-run.compaction-trigger`` + 1, so 5).

    >>> read_optimized_level({}), read_optimized_level({"num-levels": "3"})
    (5, 2)
    """
    levels = options.get("num-levels")
    if levels is None:
        levels = str(int(options.get("num-sorted-run.compaction-trigger", "5")) + 1)
    return int(levels) - 1


def _zone(time_zone: str) -> datetime.tzinfo:
    try:
        return session_time_zone(time_zone)[0]
    except ValueError as e:
        raise InvalidArgumentError(f"unknown session time zone {time_zone!r}") from e


def system_table(
    table: FileStoreTable,
    name: str,
    snapshot: Snapshot | None,
    time_zone: str = "UTC",
) -> SystemTable:
    """The rows of system table ``name`` of ``table``.

    Args:
        table: the data table.
        name: ``snapshots``, ``schemas``, ``options``, ``tags``, ``files``, ``file_indexes``,
            ``manifests``, ``partitions`` or ``table_indexes``.
        snapshot: the snapshot the per-snapshot tables describe (``None``: an empty table).
        time_zone: the zone commit and schema times are shown in.

    Raises:
        TableNotFoundError: no such system table.
        CorruptMetadataError: metadata that cannot be read.
    """
    columns = system_table_columns(name)
    builder = SystemRows(table, snapshot, _zone(time_zone))
    rows: Mapping[str, Callable[[], list[tuple[Any, ...]]]] = {
        "snapshots": builder.snapshots,
        "schemas": builder.schemas,
        "options": builder.options,
        "tags": builder.tags,
        "files": builder.files,
        "file_indexes": builder.file_indexes,
        "manifests": builder.manifests,
        "partitions": builder.partitions,
        "table_indexes": builder.table_indexes,
    }
    return SystemTable(name, columns, tuple(rows[name]()))
