"""The rows of Paimon's metadata system tables, computed from a table's metadata alone (no
data file is read), in the text forms of :mod:`lakeskip.catalog.ops.paimon_text`.

``snapshots``, ``schemas``, ``options`` and ``tags`` list what exists now; ``files``,
``file_indexes``, ``manifests``, ``partitions`` and ``table_indexes`` describe one snapshot
(the one a ``VERSION AS OF`` / ``TIMESTAMP AS OF`` names, as Paimon's do).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Sequence
from typing import Any

from lakeskip.catalog.format.binary_row import deserialize_row
from lakeskip.catalog.format.data_file import DataFileMeta, FileSource
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.ops.paimon_text import (
    flat_json,
    java_duration,
    java_text,
    row_text,
    stored_wall,
    wall,
)
from lakeskip.catalog.ops.tags import list_tags
from lakeskip.catalog.options import DEFAULT_PARTITION_NAME
from lakeskip.catalog.pk.primary_key import schema_key_layout
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CorruptIndexError, CorruptMetadataError
from lakeskip.index.format import FileIndexContainer
from lakeskip.types import DataType

__all__ = ["SystemRows"]


class SystemRows:
    """The rows of each metadata system table of ``table``: one method per table.

    Args:
        table: the data table.
        snapshot: the snapshot the per-snapshot tables describe (``None``: an empty table).
        zone: the zone commit and schema times are shown in.
    """

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
                wall(s.time_millis, self.zone),
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
                    flat_json(json.loads(s.to_json())["fields"]),
                    flat_json(list(s.partition_keys)),
                    flat_json(list(s.primary_keys)),
                    flat_json(dict(s.options)),
                    s.comment,
                    wall(s.time_millis, self.zone),
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
                wall(t.snapshot.time_millis, self.zone),
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
        return row_text(partition, self.table.schema.partition_types())

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
                    stored_wall(f.creation_time),
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
        return "[" + ", ".join(java_text(v, t) for v, t in zip(values, types, strict=True)) + "]"

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
                text = java_text(value, fld.type) if typed else str(value).replace("None", "null")
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
                    lo = row_text(deserialize_row(m.partition_stats.min_values, types), types)
                    hi = row_text(deserialize_row(m.partition_stats.max_values, types), types)
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
                f"{k}={default if v is None else java_text(v, t)}"
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
                    stored_wall(max(times)) if times else None,
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
