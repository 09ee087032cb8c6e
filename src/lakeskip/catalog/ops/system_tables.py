"""Paimon's system tables (``t$snapshots``, ``t$files``, ...): a table's metadata as rows.

Names, column names and column types are Paimon 1.4's (``paimon-core/.../table/system/*.java``
at ``release-1.4.2``); ``file_indexes`` is the one Paimon added after 1.4 (its master's
``FileIndexesTable``: one row per data file, column and index type, embedded or in a
``.index`` file, with sizes). Every table is computed from the catalog's metadata alone (no
data file is read); ``read_optimized`` and ``audit_log`` read data and are the Spark layer's
scan of the table: ``read_optimized`` of the top-level files only, ``audit_log`` with a
``rowkind`` column first and the deleted keys kept (Paimon's ``forceKeepDelete`` read).

Time travel: ``files``, ``file_indexes``, ``manifests``, ``partitions`` and
``table_indexes`` describe the snapshot a ``VERSION AS OF`` / ``TIMESTAMP AS OF`` names, as
Paimon's do; ``snapshots``, ``schemas``, ``options`` and ``tags`` list what exists now.

Values follow Paimon's text forms: partitions and keys as ``{v1, v2}`` / ``[v1, v2]`` (but
``partitions``' own ``partition`` column is ``k1=v1/k2=v2``, a null as the default name), stats
as Java's ``TreeMap.toString`` (``{a=1, b=x}``), schema parts as flat JSON, durations as
``java.time.Duration.toString``. Paimon's ``TIMESTAMP(3)`` columns hold wall-clock times: a
commit time in the reader's time zone (Paimon uses the JVM's default zone), a file's
creation time as the writer recorded it.

>>> split_system_name("events$snapshots")
('events', 'snapshots')
>>> split_system_name("events")
('events', None)
>>> java_duration(90_061_000)
'PT25H1M1S'
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakeskip.catalog.format.binary_row import deserialize_row
from lakeskip.catalog.format.data_file import DataFileMeta, FileSource
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.ops.tags import list_tags
from lakeskip.catalog.options import DEFAULT_PARTITION_NAME
from lakeskip.catalog.partitions import partition_value_string
from lakeskip.catalog.pk.primary_key import schema_key_layout
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    CorruptIndexError,
    CorruptMetadataError,
    InvalidArgumentError,
    TableNotFoundError,
)
from lakeskip.index.format import FileIndexContainer
from lakeskip.types import DataType, TypeRoot, session_time_zone

__all__ = [
    "DATA_SYSTEM_TABLES",
    "METADATA_SYSTEM_TABLES",
    "SYSTEM_TABLE_SPLITTER",
    "SystemColumn",
    "SystemTable",
    "java_duration",
    "read_optimized_level",
    "split_system_name",
    "system_table",
    "system_table_columns",
    "table_details",
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
    """One system table's columns and rows (values in the JSON-ready forms the module
    docstring names; ``TIMESTAMP(3)`` values are naive ``datetime``s)."""

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


def java_duration(millis: int) -> str:
    """``java.time.Duration.ofMillis(millis).toString()`` (``PT1H30M``, ``PT0.5S``)."""
    if millis == 0:
        return "PT0S"
    sign = "-" if millis < 0 else ""
    ms = abs(millis)
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, frac = divmod(rest, 1000)
    out = "PT"
    if hours:
        out += f"{sign}{hours}H"
    if minutes:
        out += f"{sign}{minutes}M"
    if seconds or frac:
        text = str(seconds) + (f".{frac:03d}".rstrip("0") if frac else "")
        out += f"{sign}{text}S"
    return out


def _wall(millis: int, zone: datetime.tzinfo) -> datetime.datetime:
    """Epoch millis as the wall-clock time in ``zone`` (naive)."""
    utc = datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.timezone.utc)
    return utc.astimezone(zone).replace(tzinfo=None)


def _stored_wall(millis: int | None) -> datetime.datetime | None:
    """A ``TIMESTAMP(3)`` value as stored (Paimon's wall-clock millis), naive."""
    if millis is None:
        return None
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=millis)


def _java_text(value: Any, t: DataType) -> str:
    """``String.valueOf`` of Paimon's internal object for a stats / key / partition value."""
    if value is None:
        return "null"
    if t.root is TypeRoot.BINARY:
        return "[" + ", ".join(str(b if b < 128 else b - 256) for b in bytes(value)) + "]"
    text = partition_value_string(value, t)
    return "null" if text is None else text


def _row_text(values: Sequence[Any], types: Sequence[DataType]) -> str:
    """Paimon's ROW -> STRING cast: ``{v1, v2}``."""
    return "{" + ", ".join(_java_text(v, t) for v, t in zip(values, types, strict=True)) + "}"


def _flat_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class _Builder:
    def __init__(
        self, table: FileStoreTable, snapshot: Snapshot | None, zone: datetime.tzinfo
    ) -> None:
        self.table = table
        self.snapshot = snapshot
        self.zone = zone

    # -- what exists now -----------------------------------------------------------------

    def snapshots(self) -> list[tuple[Any, ...]]:
        return [
            (
                s.id,
                s.schema_id,
                s.commit_user,
                s.commit_identifier,
                s.commit_kind.value,
                _wall(s.time_millis, self.zone),
                s.base_manifest_list,
                s.delta_manifest_list,
                s.changelog_manifest_list,
                s.total_record_count,
                s.delta_record_count,
                s.changelog_record_count,
                s.watermark,
                s.next_row_id,
            )
            for s in self.table.list_snapshots()
        ]

    def schemas(self) -> list[tuple[Any, ...]]:
        sm = self.table.schema_manager
        out = []
        for sid in sm.list_ids():
            s = sm.read(sid)
            out.append(
                (
                    s.id,
                    _flat_json(json.loads(s.to_json())["fields"]),
                    _flat_json(list(s.partition_keys)),
                    _flat_json(list(s.primary_keys)),
                    _flat_json(dict(s.options)),
                    s.comment,
                    _wall(s.time_millis, self.zone),
                )
            )
        return out

    def options(self) -> list[tuple[Any, ...]]:
        return sorted(self.table.schema.options.items())

    def tags(self) -> list[tuple[Any, ...]]:
        return [
            (
                t.name,
                t.snapshot.id,
                t.snapshot.schema_id,
                _wall(t.snapshot.time_millis, self.zone),
                t.snapshot.total_record_count,
                t.create_time,
                None if t.time_retained_millis is None else java_duration(t.time_retained_millis),
            )
            for t in list_tags(self.table)
        ]

    # -- the chosen snapshot -------------------------------------------------------------

    def _entries(self) -> list[ManifestEntry]:
        return self.table.scan_files(self.snapshot) if self.snapshot is not None else []

    def _partition_text(self, partition: Sequence[Any]) -> str:
        return _row_text(partition, self.table.schema.partition_types())

    def files(self) -> list[tuple[Any, ...]]:
        table = self.table
        schema = table.schema
        key_types: tuple[DataType, ...] = ()
        if schema.primary_keys:
            key_types = schema_key_layout(schema).types
        out = []
        for e in self._entries():
            f = e.file
            null_counts, mins, maxs = self._stats(f, schema)
            source = None if f.file_source is None else FileSource(f.file_source).name
            out.append(
                (
                    self._partition_text(e.partition),
                    e.bucket,
                    self._path(e),
                    _format_of(f.file_name),
                    f.schema_id,
                    f.level,
                    f.row_count,
                    f.file_size,
                    self._key_text(f.min_key, key_types),
                    self._key_text(f.max_key, key_types),
                    null_counts,
                    mins,
                    maxs,
                    f.min_sequence_number,
                    f.max_sequence_number,
                    _stored_wall(f.creation_time),
                    f.delete_row_count,
                    source,
                    f.first_row_id,
                    None if f.write_cols is None else list(f.write_cols),
                )
            )
        return out

    def _path(self, e: ManifestEntry) -> str:
        if e.file.external_path:
            return e.file.external_path
        return self.table.file_io.uri(self.table.data_file_path(e))

    @staticmethod
    def _key_text(data: bytes, types: Sequence[DataType]) -> str | None:
        if not types or not data:
            return None
        try:
            values = deserialize_row(data, types)
        except (CorruptMetadataError, ValueError, IndexError):
            return None
        return "[" + ", ".join(_java_text(v, t) for v, t in zip(values, types, strict=True)) + "]"

    def _stats(self, f: DataFileMeta, schema: TableSchema) -> tuple[str, str, str]:
        """(null counts, min values, max values) as ``{col=value, ...}`` over every column
        of the table, sorted by name (Paimon's ``TreeMap``); unknown values are ``null``."""
        try:
            stats = file_column_stats(f, self.table.schema_by_id(f.schema_id), schema)
        except (CorruptMetadataError, ValueError, IndexError):
            stats = {}
        fields = sorted(schema.row_type, key=lambda x: x.name)

        def render(pick: Callable[[tuple[Any, Any, int | None]], Any], typed: bool) -> str:
            parts = []
            for fld in fields:
                got = stats.get(fld.name)
                value = None if got is None else pick(got)
                text = _java_text(value, fld.type) if typed else str(value).replace("None", "null")
                parts.append(f"{fld.name}={text}")
            return "{" + ", ".join(parts) + "}"

        return (
            render(lambda s: s[2], typed=False),
            render(lambda s: s[0], typed=True),
            render(lambda s: s[1], typed=True),
        )

    def file_indexes(self) -> list[tuple[Any, ...]]:
        table = self.table
        out: list[tuple[Any, ...]] = []
        for e in self._entries():
            f = e.file
            head = self._partition_text(e.partition), e.bucket, self._path(e)
            head2 = f.file_size, f.row_count, f.schema_id
            if f.embedded_index is not None:
                storage, index_path, data = "EMBEDDED", None, bytes(f.embedded_index)
                container_size = len(data)
            else:
                name = f.index_file_name
                if name is None:
                    continue
                full = f"{table.data_file_dir(e)}/{name}"
                data = table.file_io.read_bytes(full)
                storage, index_path, container_size = "FILE", table.file_io.uri(full), len(data)
            try:
                container = FileIndexContainer.decode(data)
            except CorruptIndexError as err:
                raise CorruptMetadataError(
                    f"{table.identifier}: unreadable file index of {f.file_name}: {err}"
                ) from err
            out.extend(
                (
                    *head,
                    *head2,
                    c.column,
                    c.index_type,
                    storage,
                    index_path,
                    c.length,
                    container_size,
                    c.start < 0,
                )
                for c in container.entries
            )
        return out

    def manifests(self) -> list[tuple[Any, ...]]:
        if self.snapshot is None:
            return []
        types = self.table.schema.partition_types()
        out = []
        for m in self.table.manifest_metas(self.snapshot):
            lo = hi = None
            # cast as stored, as Paimon does (a manifest of no entries has an all-null row)
            if types:
                try:
                    lo = _row_text(deserialize_row(m.partition_stats.min_values, types), types)
                    hi = _row_text(deserialize_row(m.partition_stats.max_values, types), types)
                except (CorruptMetadataError, ValueError, IndexError):
                    lo = hi = None
            out.append(
                (
                    m.file_name,
                    m.file_size,
                    m.num_added_files,
                    m.num_deleted_files,
                    m.schema_id,
                    lo,
                    hi,
                    m.min_row_id,
                    m.max_row_id,
                )
            )
        return out

    def partitions(self) -> list[tuple[Any, ...]]:
        groups: dict[tuple[Any, ...], list[ManifestEntry]] = {}
        for e in self._entries():
            groups.setdefault(tuple(e.partition), []).append(e)
        schema = self.table.schema
        default = schema.options.get("partition.default-name", DEFAULT_PARTITION_NAME)
        keys, types = schema.partition_keys, schema.partition_types()

        def name(part: Sequence[Any]) -> str:
            # Paimon 1.4's PartitionsTable.toRow: k=v joined by '/', null -> the default name
            return "/".join(
                f"{k}={default if v is None else _java_text(v, t)}"
                for k, v, t in zip(keys, part, types, strict=True)
            )

        out = []
        for part, entries in sorted(groups.items(), key=lambda kv: name(kv[0])):
            times = [e.file.creation_time for e in entries if e.file.creation_time is not None]
            out.append(
                (
                    name(part),
                    sum(e.file.row_count for e in entries),
                    sum(e.file.file_size for e in entries),
                    len(entries),
                    _stored_wall(max(times)) if times else None,
                    None,
                    None,
                    None,
                    None,
                )
            )
        return out

    def table_indexes(self) -> list[tuple[Any, ...]]:
        out = []
        for e in self.table.index_entries(self.snapshot):
            f = e.index_file
            ranges = (
                None
                if f.dv_ranges is None
                else [[m.data_file_name, m.offset, m.length, m.cardinality] for m in f.dv_ranges]
            )
            out.append(
                (
                    self._partition_text(e.partition),
                    e.bucket,
                    f.index_type,
                    f.file_name,
                    f.file_size,
                    f.row_count,
                    ranges,
                )
            )
        return out


def _format_of(file_name: str) -> str:
    """Paimon's ``DataFilePathFactory.formatIdentifier``: the extension after the last dot."""
    dot = file_name.rfind(".")
    return file_name[dot + 1 :] if dot >= 0 else ""


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


def table_details(table: FileStoreTable, snapshot: Snapshot | None) -> list[tuple[str, str]]:
    """What ``DESCRIBE TABLE EXTENDED`` adds about a table's state at ``snapshot``: the
    snapshot and schema, files, rows (minus deletion vectors), bytes, the declared file
    indexes and how many files carry one (embedded or ``.index``). Keys are ``lakeskip.*``
    table properties (``LakeTable.properties`` on the JVM; never table options)."""
    from lakeskip.index.options import parse_file_index_options

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
        specs = parse_file_index_options(schema.options, schema.row_type).specs
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
    builder = _Builder(table, snapshot, _zone(time_zone))
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
