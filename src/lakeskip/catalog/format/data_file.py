"""``DataFileMeta``: what a manifest records about one data file (Paimon's ``_FILE`` record).

Field by field it follows ``org.apache.paimon.io.DataFileMeta`` (and pypaimon's
``DATA_FILE_META_SCHEMA``), so entries round-trip through the Avro manifests unchanged.
Append-only tables have no keys: ``min_key``/``max_key`` are the empty ``BinaryRow`` and
``key_stats`` is :data:`EMPTY_STATS`.

A file's index lives either embedded (``embedded_index``, when at most
``file-index.in-manifest-threshold`` bytes) or in one ``<data-file>.index`` file listed in
``extra_files`` -- never both (Paimon's evaluator reads the embedded bytes first and rejects
more than one ``.index`` extra file).

Example:
    >>> meta = make_data_file_meta("data-1.parquet", 100, 10, EMPTY_STATS, (), 0, None, ())
    >>> meta.index_file_name is None, meta.value_stats_cols
    (True, ())
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from lakeskip.catalog.format.binary_row import EMPTY_ROW_BYTES
from lakeskip.errors import CorruptMetadataError, InvalidArgumentError

__all__ = [
    "EMPTY_STATS",
    "INDEX_FILE_SUFFIX",
    "DataFileMeta",
    "FileSource",
    "SimpleStats",
    "make_data_file_meta",
]

INDEX_FILE_SUFFIX = ".index"


class FileSource(enum.IntEnum):
    """``_FILE_SOURCE``: how the file came to be."""

    APPEND = 0
    COMPACT = 1


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Min/max rows (serialized ``BinaryRow`` bytes) and per-column null counts."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...]


EMPTY_STATS = SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    """One data file as a manifest records it (all of Paimon's ``DataFileMeta`` fields)."""

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...]
    creation_time: int | None = None  # epoch millis
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None  # None: every column of the file schema
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None

    @property
    def index_file_name(self) -> str | None:
        """The ``.index`` file in ``extra_files`` (relative to the data file's directory).

        Raises:
            CorruptMetadataError: more than one ``.index`` extra file.
        """
        found = [f for f in self.extra_files if f.endswith(INDEX_FILE_SUFFIX)]
        if len(found) > 1:
            raise CorruptMetadataError(
                f"{self.file_name} lists {len(found)} index files: {', '.join(found)}"
            )
        return found[0] if found else None

    @property
    def identifier(self) -> tuple[object, ...]:
        """What a DELETE entry must match (Paimon's ``FileEntry.Identifier`` minus partition
        and bucket, which live on the manifest entry)."""
        return (
            self.level,
            self.file_name,
            self.extra_files,
            self.embedded_index,
            self.external_path,
        )


def make_data_file_meta(
    file_name: str,
    file_size: int,
    row_count: int,
    stats: SimpleStats,
    stats_cols: Sequence[str] | None,
    schema_id: int,
    embedded_index: bytes | None,
    extra_files: Sequence[str],
    *,
    level: int = 0,
    file_source: FileSource = FileSource.APPEND,
    creation_time: int | None = None,
    min_sequence_number: int = 0,
    max_sequence_number: int | None = None,
) -> DataFileMeta:
    """A ``DataFileMeta`` for a freshly written append-table file.

    Args:
        stats_cols: the columns ``stats`` covers (``None`` = all columns of the schema,
            as Paimon's dense store writes when every column has stats).
        embedded_index: the index container when embedded, else ``None``.
        extra_files: names beside the data file, e.g. its ``.index`` file.

    Raises:
        InvalidArgumentError: both an embedded index and an ``.index`` extra file.
    """
    import time

    extra = tuple(extra_files)
    if embedded_index is not None and any(f.endswith(INDEX_FILE_SUFFIX) for f in extra):
        raise InvalidArgumentError(
            f"{file_name}: an index is either embedded or an .index file, never both"
        )
    return DataFileMeta(
        file_name=file_name,
        file_size=int(file_size),
        row_count=int(row_count),
        min_key=EMPTY_ROW_BYTES,
        max_key=EMPTY_ROW_BYTES,
        key_stats=EMPTY_STATS,
        value_stats=stats,
        min_sequence_number=min_sequence_number,
        max_sequence_number=(
            max_sequence_number
            if max_sequence_number is not None
            else min_sequence_number + max(int(row_count) - 1, 0)
        ),
        schema_id=int(schema_id),
        level=level,
        extra_files=extra,
        creation_time=creation_time if creation_time is not None else int(time.time() * 1000),
        delete_row_count=0,
        embedded_index=embedded_index,
        file_source=int(file_source),
        value_stats_cols=tuple(stats_cols) if stats_cols is not None else None,
        external_path=None,
        first_row_id=None,
        write_cols=None,
    )
