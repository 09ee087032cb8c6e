"""Writing data files: Parquet + stats + file index -> manifest entries, one file at a time.

Runs inside Spark tasks (plain Python over Arrow, no Spark import), under a task's
:class:`~lakeskip.catalog.write.data_writer.DataWriter` or a compaction. For each data file it:

1. writes ``<table>/<partition dirs>/bucket-<b>/data-<uuid>-<n>.parquet`` through the table's
   :class:`~lakeskip.catalog.file_io.FileIO` (so any pyarrow filesystem works), with the
   Parquet bloom filters, page index and compression of the ``parquet.*`` table options
   (:mod:`lakeskip.catalog.format.parquet_options`) and Paimon's Parquet field ids
   (:mod:`lakeskip.catalog.write.parquet_field_ids`); ``b`` is 0 on unaware-bucket tables, else
   Paimon's bucket of the row's ``bucket-key`` (:mod:`lakeskip.catalog.format.bucket`), and the entry
   records it with ``total_buckets``;
2. collects min/max/null-count stats (``metadata.stats-mode``);
3. builds every configured file index (``file-index.*``) and embeds the container in the
   manifest when it is at most ``file-index.in-manifest-threshold`` bytes, else writes it to
   ``<data-file>.index`` beside the data file (listed in ``_EXTRA_FILES``).

Each stage is timed (:class:`~lakeskip.catalog.write.timings.WriteTimings`, summed over files and tasks by the driver).
Rows are streamed (:class:`RollingWriter`): a ``pyarrow.parquet.ParquetWriter`` over the
FileIO output stream takes one row group at a time, stats and file indexes are built batch by
batch, and the file rolls once its bytes reach ``target-file-size``. Parquet is compressed,
Arrow in memory is not, so how many buffered rows make the rest of a file is estimated from a
3:1 guess of memory to file size, corrected from each file written.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeskip.catalog.format.binary_row import serialize_row
from lakeskip.catalog.format.data_file import FileSource, make_data_file_meta
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry
from lakeskip.catalog.format.parquet_options import ParquetWriteOptions, nan_leaf_paths
from lakeskip.catalog.format.stats import StatsCollector
from lakeskip.catalog.pk.primary_key import (
    SEQUENCE_NUMBER,
    VALUE_KIND,
    schema_key_layout,
    to_key_value,
)
from lakeskip.catalog.write.parquet_field_ids import with_field_ids
from lakeskip.catalog.write.timings import StageClock
from lakeskip.catalog.write.write_spec import WriteSpec, bucket_dir
from lakeskip.index.file_index import FileIndexBuilder
from lakeskip.index.options import FileIndexOptions
from lakeskip.types import RowType, to_internal

__all__ = [
    "INITIAL_MEMORY_RATIO",
    "RollingWriter",
    "write_data_file",
    "write_kv_data_file",
]

INDEX_SUFFIX = ".index"
#: Arrow bytes per Parquet byte assumed before the first file of a writer is written
INITIAL_MEMORY_RATIO = 3.0
#: pyarrow's default row group (rows) and parquet-mr's ``parquet.block.size`` (bytes): a
#: streamed file's row group is written once its buffered rows reach either
ROW_GROUP_ROWS = 1024 * 1024
ROW_GROUP_BYTES = 128 * 1024 * 1024


@dataclass
class _OpenFile:
    """The state of one data file being streamed (see :class:`RollingWriter`)."""

    name: str
    directory: str
    stats: StatsCollector
    key_stats: StatsCollector | None
    index: FileIndexBuilder | None
    out: Any = None  # the FileIO output stream, once the first row group is written
    parquet: pq.ParquetWriter | None = None
    row_group_rows: int | None = None  # rows per row group once open (its bloom ndv)
    nan_leaves: frozenset[str] = frozenset()  # leaves written without Parquet statistics
    pending: list[pa.Table] = field(default_factory=list)
    pending_bytes: int = 0
    pending_rows: int = 0
    written: int = 0  # Parquet bytes in the output stream so far
    arrow_bytes: int = 0  # Arrow bytes of every row of the file
    rows: int = 0
    first_key: list[Any] | None = None
    last_key: list[Any] | None = None
    min_sequence: int | None = None
    max_sequence: int | None = None
    retracts: int = 0


class RollingWriter:
    """Rows in, data files out, in bounded memory: each table given to :meth:`write` is
    streamed into an open Parquet file (``pyarrow.parquet.ParquetWriter`` over a FileIO output
    stream) a row group at a time, and the file rolls once its bytes reach
    ``target-file-size``.

    Memory: the row group being filled (at most :data:`ROW_GROUP_ROWS` rows,
    ``parquet.block.size`` or :data:`ROW_GROUP_BYTES` Arrow bytes, and what the rest of the
    target file size is estimated to need), one (min, max, null count) per column
    (:class:`~lakeskip.catalog.format.stats.StatsCollector`) and the file indexes' state
    (:class:`~lakeskip.index.file_index.FileIndexBuilder`: bloom filters are built as rows
    come, bitmap/BSI/range-bitmap keep their column's values of the open file).

    Parquet writer settings are taken from the file's first row group
    (:meth:`~lakeskip.catalog.format.parquet_options.ParquetWriteOptions.writer_kwargs`):
    dictionary columns, row-group rows from ``parquet.block.size``, and a Parquet bloom
    filter sized for that row group's rows (later row groups of the file are cut at the same
    row count, so no filter holds more values than it was sized for). A FLOAT/DOUBLE column
    that first holds a NaN after the file's statistics were set rolls the file, so the next
    one is written without that column's Parquet statistics (see
    :func:`~lakeskip.catalog.format.parquet_options.nan_leaf_paths`).

    Args:
        kv: a primary-key table's key-value files (``values`` sorted by key, unique keys):
            sequence numbers from ``first_sequence`` unless ``versions`` are given, key
            stats, min/max key.
        roll: ``False``: everything goes to one file written at :meth:`close` (callers that
            hand over the whole file at once; the bytes are those of one ``write_table``).
    """

    def __init__(
        self,
        spec: WriteSpec,
        partition: tuple[Any, ...],
        bucket: int,
        total_buckets: int,
        names: Callable[[], str],
        *,
        kv: bool = False,
        level: int | None = None,
        first_sequence: int = 0,
        index_options: FileIndexOptions | None = None,
        parquet_options: ParquetWriteOptions | None = None,
        clock: StageClock | None = None,
        roll: bool = True,
        memory_ratio: float = INITIAL_MEMORY_RATIO,
    ) -> None:
        self.spec = spec
        self.partition = tuple(partition)
        self.bucket = bucket
        self.total_buckets = total_buckets
        self.names = names
        self.kv = kv
        self.level = spec.level if level is None else level
        self.next_sequence = first_sequence
        self.index_options = index_options if index_options is not None else spec.index_options()
        self.parquet_options = (
            parquet_options if parquet_options is not None else spec.parquet_options()
        )
        self.clock = clock if clock is not None else StageClock()
        self.roll = roll
        self.ratio = memory_ratio  # Arrow bytes per Parquet byte, corrected per file
        self.target = spec.target_file_size
        self.row_type = spec.schema.row_type
        self.arrow_schema = self.row_type.to_arrow()
        self.layout = schema_key_layout(spec.schema) if kv else None
        self.key_type = (
            RowType(tuple(self.row_type.field(k) for k in self.layout.trimmed))
            if self.layout is not None
            else None
        )
        block = self.parquet_options.block_size
        self.group_bytes = block if block is not None else ROW_GROUP_BYTES
        self.file: _OpenFile | None = None
        self.entries: list[ManifestEntry] = []  # finished files, in order
        self._taken = 0
        # (values, versions) given but not yet taken into the open file
        self._incoming: list[tuple[pa.Table, tuple[Any, Any] | None]] = []
        self._incoming_bytes = 0

    def take_finished(self) -> list[ManifestEntry]:
        """Entries of the files finished since the last call."""
        out = self.entries[self._taken :]
        self._taken = len(self.entries)
        return out

    def write(self, values: pa.Table, versions: tuple[pa.Array, pa.Array] | None = None) -> None:
        """The next rows (the table's columns; ``kv``: sorted by key after every earlier row,
        ``versions`` their own sequence numbers and kinds, else new ones with
        ``spec.value_kind``)."""
        if values.num_rows == 0 and (self.roll or self.layout is not None):
            return  # (one file, not rolled: an empty table still makes an empty file)
        t = time.perf_counter()
        if not values.schema.equals(self.arrow_schema):
            values = values.cast(self.arrow_schema)
        self.clock.add("prepare", t)
        if not self.roll:
            self._take(values, versions)
            return
        # the rows go on in slices of about an eighth of a row group or file: small tables
        # are gathered (per-slice work is per call), a big one is cut so it still rolls at
        # the target size
        slice_bytes = max(1, int(min(self.group_bytes, self.target * self.ratio)) // 8)
        self._incoming.append((values, versions))
        self._incoming_bytes += values.nbytes
        if self._incoming_bytes >= slice_bytes:
            self._drain_incoming(slice_bytes)

    def _drain_incoming(self, slice_bytes: int) -> None:
        if not self._incoming:
            return
        parts, self._incoming, self._incoming_bytes = self._incoming, [], 0
        values = pa.concat_tables([v for v, _ in parts]) if len(parts) > 1 else parts[0][0]
        versions: tuple[pa.Array, pa.Array] | None = None
        if parts[0][1] is not None:
            given = [v for _, v in parts if v is not None]
            assert len(given) == len(parts), "every table with versions or none"
            versions = (
                _concat_arrays([v[0] for v in given], pa.int64()),
                _concat_arrays([v[1] for v in given], pa.int8()),
            )
        per_row = max(1, values.nbytes // max(1, values.num_rows))
        step = max(1024, slice_bytes // per_row)
        for start in range(0, values.num_rows, step):
            part = values.slice(start, step) if values.num_rows > step else values
            vers = None
            if versions is not None:
                vers = (versions[0].slice(start, step), versions[1].slice(start, step))
            self._take(part, vers)

    def _take(self, values: pa.Table, versions: tuple[pa.Array, pa.Array] | None) -> None:
        t = time.perf_counter()
        n = values.num_rows
        if self.layout is not None:
            data = to_key_value(
                values, self.layout, self.next_sequence, self.spec.value_kind, versions
            )
            if versions is None:
                self.next_sequence += n
        else:
            data = values
        f = self.file
        if f is not None and f.parquet is not None:
            new_nan = nan_leaf_paths(data) - f.nan_leaves
            if new_nan:  # its statistics were set for no NaN: the rows go to a new file
                t = self.clock.add("prepare", t)
                self._finish()
                t = time.perf_counter()
                f = None
        if f is None:
            f = self._open()
        if self.layout is not None:
            seq = pc.min_max(data[SEQUENCE_NUMBER])
            lo, hi = int(seq["min"].as_py()), int(seq["max"].as_py())
            f.min_sequence = lo if f.min_sequence is None else min(f.min_sequence, lo)
            f.max_sequence = hi if f.max_sequence is None else max(f.max_sequence, hi)
            retract = pc.is_in(data[VALUE_KIND], pa.array([1, 3], pa.int8()))
            f.retracts += int(pc.sum(retract).as_py() or 0)
            assert self.key_type is not None
            if f.first_key is None:
                f.first_key = [
                    to_internal(k.type, values.column(k.name)[0].as_py()) for k in self.key_type
                ]
            f.last_key = [
                to_internal(k.type, values.column(k.name)[n - 1].as_py()) for k in self.key_type
            ]
        f.pending.append(data)
        f.pending_bytes += data.nbytes
        f.pending_rows += n
        f.arrow_bytes += data.nbytes
        f.rows += n
        t = self.clock.add("prepare", t)
        f.stats.add(values)
        if f.key_stats is not None:
            f.key_stats.add(values)
        t = self.clock.add("stats", t)
        if f.index is not None:
            f.index.add(values)
            self.clock.add("index", t)
        if not self.roll:
            return
        cap_rows = f.row_group_rows if f.row_group_rows is not None else ROW_GROUP_ROWS
        left = (self.target - f.written) * self.ratio  # Arrow bytes the file still takes
        if f.pending_rows >= cap_rows or f.pending_bytes >= min(self.group_bytes, left):
            self._flush_group(f)
            if f.written >= self.target:
                self._finish()

    def _open(self) -> _OpenFile:
        name = self.names()
        directory = bucket_dir(self.spec, self.partition, self.bucket)
        opts = self.index_options
        f = _OpenFile(
            name=name,
            directory=directory,
            stats=StatsCollector(self.row_type, self.spec.stats_mode),
            key_stats=StatsCollector(self.key_type, "full") if self.key_type is not None else None,
            index=FileIndexBuilder(self.row_type, opts) if opts.enabled and opts.specs else None,
        )
        self.file = f
        return f

    def _flush_group(self, f: _OpenFile) -> None:
        """Write the buffered rows as the next row group(s) of ``f``."""
        if not f.pending:
            return
        t = time.perf_counter()
        group = f.pending[0] if len(f.pending) == 1 else pa.concat_tables(f.pending)
        f.pending, f.pending_bytes, f.pending_rows = [], 0, 0
        rows: Any = None
        if f.parquet is None:
            kwargs = self.parquet_options.writer_kwargs(group)
            rows = kwargs.pop("row_group_size", None)
            f.row_group_rows = min(ROW_GROUP_ROWS, group.num_rows if rows is None else rows)
            f.nan_leaves = nan_leaf_paths(group)
            self.spec.file_io.mkdirs(f.directory)
            f.out = self.spec.file_io.open_output(f"{f.directory}/{f.name}")
            schema = with_field_ids(group.schema, self.row_type)  # as Paimon's files carry them
            f.parquet = pq.ParquetWriter(f.out, schema, **kwargs)
        if f.row_group_rows is not None and group.num_rows > f.row_group_rows:
            rows = f.row_group_rows
        f.parquet.write_table(group, row_group_size=rows)
        f.written = int(f.out.tell())
        if f.written > 0:  # the file's own ratio so far sizes the rest of it
            self.ratio = max(1.0, (f.arrow_bytes - f.pending_bytes) / f.written)
        self.clock.add("parquet", t)

    def _finish(self) -> None:
        """Close the open file and record its entry."""
        f = self.file
        if f is None:
            return
        self.file = None
        if not f.pending and f.parquet is None:
            return
        self._flush_group(f)
        t = time.perf_counter()
        assert f.parquet is not None
        f.parquet.close()
        f.out.close()
        path = f"{f.directory}/{f.name}"
        file_size = self.spec.file_io.file_size(path)
        t = self.clock.add("parquet", t)
        if file_size > 0:
            self.ratio = max(1.0, f.arrow_bytes / file_size)
        stats, stats_cols = f.stats.result()
        t = self.clock.add("stats", t)
        embedded: bytes | None = None
        extra_files: list[str] = []
        if f.index is not None:
            built = f.index.finish()
            t = self.clock.add("index", t)
            embedded = built.embedded
            if built.external is not None:
                index_name = f.name + INDEX_SUFFIX
                self.spec.file_io.write_bytes(f"{f.directory}/{index_name}", built.external)
                extra_files = [index_name]
                t = self.clock.add("index_io", t)
        kv: dict[str, Any] = {}  # a key-value file's source and sequence numbers
        if self.layout is not None:
            assert f.key_stats is not None and f.min_sequence is not None
            kv = {
                "file_source": FileSource.COMPACT if self.level > 0 else FileSource.APPEND,
                "min_sequence_number": f.min_sequence,
                "max_sequence_number": f.max_sequence,
            }
        meta = make_data_file_meta(
            file_name=f.name,
            file_size=file_size,
            row_count=f.rows,
            stats=stats,
            stats_cols=stats_cols,
            schema_id=self.spec.schema.id,
            embedded_index=embedded,
            extra_files=extra_files,
            level=self.level,
            **kv,
        )
        if self.layout is not None:
            assert f.key_stats is not None
            meta = dataclasses.replace(
                meta,
                min_key=serialize_row(f.first_key or [], self.layout.types),
                max_key=serialize_row(f.last_key or [], self.layout.types),
                key_stats=f.key_stats.result()[0],
                delete_row_count=f.retracts,
            )
        self.entries.append(
            ManifestEntry(
                kind=FileKind.ADD,
                partition=self.partition,
                bucket=self.bucket,
                total_buckets=self.total_buckets,
                file=meta,
            )
        )
        self.clock.add("meta", t)
        self.clock.files += 1
        self.clock.rows += f.rows

    def close(self) -> list[ManifestEntry]:
        """Finish the open file; every entry written."""
        self._drain_incoming(max(1, int(min(self.group_bytes, self.target * self.ratio)) // 8))
        self._finish()
        return list(self.entries)

    def abort(self) -> None:
        """Close the open file's stream without an entry (the write failed)."""
        f, self.file = self.file, None
        self._incoming = []
        if f is not None and f.out is not None:
            try:
                if f.parquet is not None:
                    f.parquet.close()
            finally:
                f.out.close()


def _concat_arrays(arrays: Sequence[Any], type_: pa.DataType) -> pa.Array:
    chunks = [c for a in arrays for c in (a.chunks if isinstance(a, pa.ChunkedArray) else [a])]
    return pa.chunked_array([c.cast(type_) for c in chunks], type_).combine_chunks()


def write_kv_data_file(
    spec: WriteSpec,
    values: pa.Table,
    partition: tuple[Any, ...],
    file_name: str,
    bucket: int,
    total_buckets: int,
    first_sequence: int,
    *,
    index_options: FileIndexOptions | None = None,
    parquet_options: ParquetWriteOptions | None = None,
    clock: StageClock | None = None,
    versions: tuple[pa.Array, pa.Array] | None = None,
    level: int = 0,
) -> ManifestEntry:
    """Write one key-value data file of a primary-key table (layout in
    :mod:`lakeskip.catalog.pk.primary_key`); ``values`` are the table's rows, sorted by key with
    unique keys. Sequence numbers run from ``first_sequence``; the file is at level 0.
    ``versions`` (compaction): the rows' own (sequence numbers, value kinds), kept as they are,
    and ``level`` the file's level.

    Key stats and ``min_key``/``max_key`` cover the trimmed key; value stats and file indexes
    cover the table's columns (row positions are the same as in the file). Writers of many
    rows stream them through :class:`RollingWriter` instead.
    """
    writer = RollingWriter(
        spec,
        partition,
        bucket,
        total_buckets,
        lambda: file_name,
        kv=True,
        level=level,
        first_sequence=first_sequence,
        index_options=index_options,
        parquet_options=parquet_options,
        clock=clock,
        roll=False,
    )
    writer.write(values, versions)
    (entry,) = writer.close()
    return entry


def write_data_file(
    spec: WriteSpec,
    table: pa.Table,
    partition: tuple[Any, ...],
    file_name: str,
    index_options: FileIndexOptions | None = None,
    bucket: int = 0,
    total_buckets: int = -1,
    *,
    parquet_options: ParquetWriteOptions | None = None,
    clock: StageClock | None = None,
) -> ManifestEntry:
    """Write one Parquet data file with its stats and index; return its ADD entry.

    ``bucket``/``total_buckets``: 0/-1 on unaware-bucket tables; on fixed-bucket tables the
    caller has already placed every row of ``table`` in ``bucket``.

    The stages run one after the other. Encoding Parquet in a thread beside the index build
    was tried and measured slower on a loaded 2-core machine (Spark already runs one task per
    core; the thread only adds contention), so it is not done.
    """
    writer = RollingWriter(
        spec,
        partition,
        bucket,
        total_buckets,
        lambda: file_name,
        index_options=index_options,
        parquet_options=parquet_options,
        clock=clock,
        roll=False,
    )
    writer.write(table)
    (entry,) = writer.close()
    return entry
