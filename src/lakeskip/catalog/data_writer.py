"""Writing data files: Parquet + stats + file index -> manifest entries.

This is the per-task half of every write (INSERT, compaction, CTAS): it runs inside Spark
tasks, so it is plain Python over Arrow with no Spark import. The driver only commits the
returned :class:`~lakeskip.catalog.manifest.ManifestEntry` objects.

For each data file it:

1. writes ``<table>/<partition dirs>/bucket-<b>/data-<uuid>-<n>.parquet`` through the table's
   :class:`~lakeskip.catalog.file_io.FileIO` (so any pyarrow filesystem works); ``b`` is 0 on
   unaware-bucket tables, else Paimon's bucket of the row's ``bucket-key``
   (:mod:`lakeskip.catalog.bucket`), and the entry records it with ``total_buckets``;
2. collects min/max/null-count stats (``metadata.stats-mode``);
3. builds every configured file index (``file-index.*``) and embeds the container in the
   manifest when it is at most ``file-index.in-manifest-threshold`` bytes, else writes it to
   ``<data-file>.index`` beside the data file (listed in ``_EXTRA_FILES``).

Files roll at ``target-file-size``. Parquet is compressed, Arrow in memory is not, so the
writer starts from a 3:1 guess of memory to file size and corrects it from each file written.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeskip.catalog.bucket import BucketSpec, bucket_ids, bucket_spec
from lakeskip.catalog.data_file import DataFileMeta, make_data_file_meta
from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.manifest import FileKind, ManifestEntry
from lakeskip.catalog.options import stats_mode, target_file_size
from lakeskip.catalog.schema import TableSchema
from lakeskip.catalog.stats import collect_stats
from lakeskip.index.file_index import build_file_index
from lakeskip.index.options import FileIndexOptions, parse_file_index_options

__all__ = ["DataWriter", "WriteSpec", "write_data_file"]

INDEX_SUFFIX = ".index"
_INITIAL_MEMORY_RATIO = 3.0


@dataclass(frozen=True, slots=True)
class WriteSpec:
    """Everything a task needs to write files for one table (picklable, shipped to tasks)."""

    file_io: FileIO
    table_path: str
    schema: TableSchema
    compression: str = "zstd"
    level: int = 0  # 0 for new data; clustered (compacted) output is written at level 1

    @property
    def target_file_size(self) -> int:
        return target_file_size(self.schema.options)

    @property
    def stats_mode(self) -> str:
        return stats_mode(self.schema.options)

    def index_options(self) -> FileIndexOptions:
        return parse_file_index_options(self.schema.options, self.schema.row_type)

    def bucket_spec(self) -> BucketSpec | None:
        """``None`` for unaware-bucket tables."""
        return bucket_spec(self.schema.options, self.schema.row_type)


def _partition_dir(spec: WriteSpec, partition: tuple[Any, ...], bucket: int = 0) -> str:
    from lakeskip.catalog.table import partition_path

    rel = partition_path(spec.schema, partition, bucket)
    return f"{spec.table_path.rstrip('/')}/{rel}"


def write_data_file(
    spec: WriteSpec,
    table: pa.Table,
    partition: tuple[Any, ...],
    file_name: str,
    index_options: FileIndexOptions | None = None,
    bucket: int = 0,
    total_buckets: int = -1,
) -> ManifestEntry:
    """Write one Parquet data file with its stats and index; return its ADD entry.

    ``bucket``/``total_buckets``: 0/-1 on unaware-bucket tables; on fixed-bucket tables the
    caller has already placed every row of ``table`` in ``bucket``."""
    row_type = spec.schema.row_type
    table = table.cast(row_type.to_arrow())
    directory = _partition_dir(spec, partition, bucket)
    spec.file_io.mkdirs(directory)
    path = f"{directory}/{file_name}"
    with spec.file_io.open_output(path) as out:
        pq.write_table(table, out, compression=spec.compression)
    file_size = spec.file_io.file_size(path)
    stats, stats_cols = collect_stats(table, row_type, spec.stats_mode)
    opts = index_options if index_options is not None else spec.index_options()
    embedded: bytes | None = None
    extra_files: list[str] = []
    if opts.enabled:
        built = build_file_index(table, row_type, opts)
        embedded = built.embedded
        if built.external is not None:
            index_name = file_name + INDEX_SUFFIX
            spec.file_io.write_bytes(f"{directory}/{index_name}", built.external)
            extra_files.append(index_name)
    meta = make_data_file_meta(
        file_name=file_name,
        file_size=file_size,
        row_count=table.num_rows,
        stats=stats,
        stats_cols=stats_cols,
        schema_id=spec.schema.id,
        embedded_index=embedded,
        extra_files=extra_files,
        level=spec.level,
    )
    return ManifestEntry(
        kind=FileKind.ADD,
        partition=tuple(partition),
        bucket=bucket,
        total_buckets=total_buckets,
        file=meta,
    )


@dataclass
class _Buffer:
    tables: list[pa.Table] = field(default_factory=list)
    nbytes: int = 0
    rows: int = 0


class DataWriter:
    """Rolling writer for one task: feed Arrow data, get manifest entries.

    Args:
        spec: the table being written.
        file_prefix: unique per task attempt; files are ``data-<prefix>-<n>.parquet``.
    """

    def __init__(self, spec: WriteSpec, file_prefix: str | None = None) -> None:
        self.spec = spec
        self.prefix = file_prefix or str(uuid.uuid4())
        self.counter = 0
        self.target = spec.target_file_size
        self.memory_ratio = _INITIAL_MEMORY_RATIO
        # keyed by (partition values, bucket)
        self.buffers: dict[tuple[tuple[Any, ...], int], _Buffer] = {}
        self.bucket_spec = spec.bucket_spec()
        self.index_options = spec.index_options()
        self.written: list[ManifestEntry] = []
        self.partition_keys = list(spec.schema.partition_keys)
        self.arrow_schema = spec.schema.row_type.to_arrow()

    def _next_name(self) -> str:
        name = f"data-{self.prefix}-{self.counter}.parquet"
        self.counter += 1
        return name

    def write(self, data: pa.Table | pa.RecordBatch) -> list[ManifestEntry]:
        """Buffer rows; returns the entries of files completed by this call."""
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if table.num_rows == 0:
            return []
        table = _conform(table, self.arrow_schema)
        done: list[ManifestEntry] = []
        for key, part in self._split_buckets(self._split(table)):
            buf = self.buffers.setdefault(key, _Buffer())
            buf.tables.append(part)
            buf.nbytes += part.nbytes
            buf.rows += part.num_rows
            if buf.nbytes >= self.target * self.memory_ratio:
                done.append(self._flush(key))
        return done

    def close(self) -> list[ManifestEntry]:
        """Write every buffered (partition, bucket); returns all entries of this writer."""
        for key in list(self.buffers):
            self._flush(key)
        return list(self.written)

    def _flush(self, key: tuple[tuple[Any, ...], int]) -> ManifestEntry:
        buf = self.buffers.pop(key)
        table = pa.concat_tables(buf.tables)
        partition, bucket = key
        entry = write_data_file(
            self.spec,
            table,
            partition,
            self._next_name(),
            index_options=self.index_options,
            bucket=bucket,
            total_buckets=-1 if self.bucket_spec is None else self.bucket_spec.num_buckets,
        )
        if entry.file.file_size > 0:
            self.memory_ratio = max(1.0, buf.nbytes / entry.file.file_size)
        self.written.append(entry)
        return entry

    def _split_buckets(
        self, parts: Iterator[tuple[tuple[Any, ...], pa.Table]]
    ) -> Iterator[tuple[tuple[tuple[Any, ...], int], pa.Table]]:
        spec = self.bucket_spec
        for partition, part in parts:
            if spec is None:
                yield (partition, 0), part
                continue
            ids = bucket_ids([part[k] for k in spec.key], spec.types, spec.num_buckets)
            order = np.argsort(ids, kind="stable")
            sorted_ids = ids[order]
            starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
            ends = np.r_[starts[1:], len(order)]
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
                rows = part if e - s == len(order) else part.take(pa.array(order[s:e]))
                yield (partition, int(sorted_ids[s])), rows

    def _split(self, table: pa.Table) -> Iterator[tuple[tuple[Any, ...], pa.Table]]:
        if not self.partition_keys:
            yield (), table
            return
        keys = self.partition_keys
        groups = table.select(keys).group_by(keys, use_threads=False).aggregate([])
        for row in groups.to_pylist():
            mask: pa.ChunkedArray | pa.Array | None = None
            for k in keys:
                v = row[k]
                col = table[k]
                m = pc.is_null(col) if v is None else pc.fill_null(pc.equal(col, v), False)
                mask = m if mask is None else pc.and_(mask, m)
            yield tuple(row[k] for k in keys), table.filter(mask)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rename by position and cast to the table's Arrow schema (Spark's Arrow nullability and
    time zones differ from ours)."""
    if table.num_columns != len(schema):
        raise ValueError(f"expected {len(schema)} columns, got {table.num_columns}")
    table = table.rename_columns(schema.names)
    return table.cast(schema, safe=True)


def write_all(spec: WriteSpec, tables: Iterable[pa.Table | pa.RecordBatch]) -> list[ManifestEntry]:
    """Convenience for tests and single-process tools: write everything, return entries."""
    writer = DataWriter(spec)
    for t in tables:
        writer.write(t)
    return writer.close()


def entries_files(entries: Sequence[ManifestEntry]) -> list[DataFileMeta]:
    return [e.file for e in entries]
