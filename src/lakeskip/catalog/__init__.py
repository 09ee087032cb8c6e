"""lakeskip.catalog: tables in Apache Paimon's on-disk layout, with atomic snapshots.

See ``docs/catalog.md`` for the layout, the commit protocol and which filesystems make
snapshot publication atomic.
"""

from __future__ import annotations

from lakeskip.catalog.catalog import DEFAULT_DATABASE, Catalog, parse_identifier
from lakeskip.catalog.file_io import FileIO, FileStatus
from lakeskip.catalog.format.binary_row import deserialize_row, serialize_row
from lakeskip.catalog.format.data_file import (
    EMPTY_STATS,
    DataFileMeta,
    FileSource,
    SimpleStats,
    make_data_file_meta,
)
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry, ManifestFileMeta
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import CommitKind, Snapshot
from lakeskip.catalog.format.stats import collect_stats, file_column_stats
from lakeskip.catalog.option_checks import validate_options
from lakeskip.catalog.options import KNOWN_OPTIONS, stats_mode, target_file_size
from lakeskip.catalog.partitions import partition_path
from lakeskip.catalog.table import FileStoreTable

__all__ = [
    "DEFAULT_DATABASE",
    "EMPTY_STATS",
    "KNOWN_OPTIONS",
    "Catalog",
    "CommitKind",
    "DataFileMeta",
    "FileIO",
    "FileKind",
    "FileSource",
    "FileStatus",
    "FileStoreTable",
    "ManifestEntry",
    "ManifestFileMeta",
    "SimpleStats",
    "Snapshot",
    "TableSchema",
    "collect_stats",
    "deserialize_row",
    "file_column_stats",
    "make_data_file_meta",
    "parse_identifier",
    "partition_path",
    "serialize_row",
    "stats_mode",
    "target_file_size",
    "validate_options",
]
