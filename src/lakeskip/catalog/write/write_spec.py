"""What a write task is given: the table's :class:`WriteSpec` (picklable, shipped to tasks).

Every writer of data files (:mod:`lakeskip.catalog.write.rolling_writer`,
:mod:`lakeskip.catalog.write.data_writer`, :mod:`lakeskip.catalog.write.pk_dv_write`) takes one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.bucket import BucketSpec
from lakeskip.catalog.format.deletion_vectors import IndexFileMeta
from lakeskip.catalog.format.parquet_options import ParquetWriteOptions, parquet_write_options
from lakeskip.catalog.format.schema import SchemaManager, TableSchema
from lakeskip.catalog.options import file_index_options, stats_mode, target_file_size
from lakeskip.catalog.partitions import partition_path
from lakeskip.catalog.pk.primary_key import RowKind
from lakeskip.index.options import FileIndexOptions

__all__ = ["WriteSpec", "bucket_dir"]


@dataclass(frozen=True, slots=True)
class WriteSpec:
    """Everything a task needs to write files for one table (picklable, shipped to tasks)."""

    file_io: FileIO
    table_path: str
    schema: TableSchema
    level: int = 0  # 0 for new data; clustered (compacted) output is written at level 1
    # primary-key tables: the kind of every row written (+I for INSERT, -D for DELETE, +U
    # for UPDATE), and per (internal partition, bucket) the first free sequence number
    # (one more than the bucket's largest; 0 for a new bucket)
    value_kind: RowKind = RowKind.INSERT
    next_sequence: Mapping[tuple[tuple[Any, ...], int], int] = field(default_factory=dict)
    # dynamic-bucket tables (bucket = -1 with a primary key): every input row ends with its
    # bucket (BUCKET_COLUMN, chosen by the assigner), and this maps (internal partition,
    # bucket) to the bucket's HASH index file at the write's snapshot (absent: none yet);
    # None on every other table
    hash_index: Mapping[tuple[tuple[Any, ...], int], IndexFileMeta] | None = None

    @property
    def target_file_size(self) -> int:
        return target_file_size(self.schema.options)

    @property
    def stats_mode(self) -> str:
        return stats_mode(self.schema.options)

    def index_options(self) -> FileIndexOptions:
        """The indexes every file gets (the table's options and the ones they imply)."""
        schema = self.schema
        return file_index_options(schema.options, schema.row_type, schema.partition_keys)

    def bucket_spec(self) -> BucketSpec | None:
        """``None`` for unaware-bucket tables."""
        return self.schema.bucket_spec()

    def file_schema(self, schema_id: int) -> TableSchema:
        """The schema a data file of the table was written with (read from its ``schema-N``
        file unless it is the write's own schema): old files are read by its field ids."""
        if schema_id == self.schema.id:
            return self.schema
        return SchemaManager(self.file_io, self.table_path).read(schema_id)

    def parquet_options(self) -> ParquetWriteOptions:
        return parquet_write_options(self.schema.options, self.schema.row_type, strict=False)


def bucket_dir(spec: WriteSpec, partition: tuple[Any, ...], bucket: int = 0) -> str:
    """The folder of ``partition``'s ``bucket`` under the table (where its files go)."""
    rel = partition_path(spec.schema, partition, bucket)
    return f"{spec.table_path.rstrip('/')}/{rel}"
