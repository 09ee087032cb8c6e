"""Writing data files: Parquet + stats + file index -> manifest entries.

This is the per-task half of every write (INSERT, compaction, CTAS): it runs inside Spark
tasks, so it is plain Python over Arrow with no Spark import. The driver only commits the
returned :class:`~lakeskip.catalog.format.manifest.ManifestEntry` objects.

For each data file it:

1. writes ``<table>/<partition dirs>/bucket-<b>/data-<uuid>-<n>.parquet`` through the table's
   :class:`~lakeskip.catalog.file_io.FileIO` (so any pyarrow filesystem works), with the
   Parquet bloom filters, page index and compression of the ``parquet.*`` table options
   (:mod:`lakeskip.catalog.format.parquet_options`); ``b`` is 0 on unaware-bucket tables, else
   Paimon's bucket of the row's ``bucket-key`` (:mod:`lakeskip.catalog.format.bucket`), and the entry
   records it with ``total_buckets``;
2. collects min/max/null-count stats (``metadata.stats-mode``);
3. builds every configured file index (``file-index.*``) and embeds the container in the
   manifest when it is at most ``file-index.in-manifest-threshold`` bytes, else writes it to
   ``<data-file>.index`` beside the data file (listed in ``_EXTRA_FILES``).

Each stage is timed (:class:`WriteTimings`, summed over files and tasks by the driver).
Rows are streamed (:class:`RollingWriter`): a ``pyarrow.parquet.ParquetWriter`` over the
FileIO output stream takes one row group at a time, stats and file indexes are built batch by
batch, and the file rolls once its bytes reach ``target-file-size``. Parquet is compressed,
Arrow in memory is not, so how many buffered rows make the rest of a file is estimated from a
3:1 guess of memory to file size, corrected from each file written.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.binary_row import serialize_row
from lakeskip.catalog.format.bucket import BucketSpec, bucket_ids
from lakeskip.catalog.format.data_file import DataFileMeta, FileSource, make_data_file_meta
from lakeskip.catalog.format.deletion_vectors import IndexFileMeta
from lakeskip.catalog.format.hash_index import key_hashes, read_hash_index, write_hash_index
from lakeskip.catalog.format.index_manifest import IndexManifestEntry
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry
from lakeskip.catalog.format.parquet_options import (
    ParquetWriteOptions,
    nan_leaf_paths,
    parquet_write_options,
)
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.stats import StatsCollector
from lakeskip.catalog.kind import merge_engine_of, schema_kind
from lakeskip.catalog.options import stats_mode, target_file_size
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import (
    SEQUENCE_NUMBER,
    VALUE_KIND,
    KeyLayout,
    RowKind,
    schema_key_layout,
    to_key_value,
)
from lakeskip.catalog.write.sort_buffer import BufferOptions, SortBuffer
from lakeskip.errors import InvalidArgumentError
from lakeskip.index.file_index import FileIndexBuilder
from lakeskip.index.options import FileIndexOptions, parse_file_index_options
from lakeskip.types import RowType, to_internal

__all__ = [
    "DataWriter",
    "RollingWriter",
    "WriteSpec",
    "WriteTimings",
    "next_sequences",
    "write_data_file",
    "write_kv_data_file",
]

INDEX_SUFFIX = ".index"
#: dynamic-bucket tables: the trailing column of a write task's input naming each row's bucket
BUCKET_COLUMN = "__lakeskip_bucket"
_INITIAL_MEMORY_RATIO = 3.0


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
        return parse_file_index_options(self.schema.options, self.schema.row_type)

    def bucket_spec(self) -> BucketSpec | None:
        """``None`` for unaware-bucket tables."""
        return self.schema.bucket_spec()

    def parquet_options(self) -> ParquetWriteOptions:
        return parquet_write_options(self.schema.options, self.schema.row_type, strict=False)


def _partition_dir(spec: WriteSpec, partition: tuple[Any, ...], bucket: int = 0) -> str:
    from lakeskip.catalog.partitions import partition_path

    rel = partition_path(spec.schema, partition, bucket)
    return f"{spec.table_path.rstrip('/')}/{rel}"


class _Clock:
    """Per-stage seconds of one writer (mutable; :meth:`DataWriter.timings` freezes it)."""

    __slots__ = ("cpu", "cpu_mark", "files", "index_cpu", "rows", "seconds", "stage_cpu")

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(WriteTimings.STAGES, 0.0)
        self.stage_cpu: dict[str, float] = dict.fromkeys(WriteTimings.STAGES, 0.0)
        self.files = 0
        self.rows = 0
        # the process's CPU seconds (a Spark Python worker runs one task at a time), charged
        # to the stage that ends at each add: the stages follow one another with no gap
        self.cpu = 0.0
        self.index_cpu = 0.0
        self.cpu_mark = time.process_time()

    def add(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] += now - since
        cpu = time.process_time()
        self.cpu += cpu - self.cpu_mark
        self.stage_cpu[stage] += cpu - self.cpu_mark
        if stage == "index":
            self.index_cpu += cpu - self.cpu_mark
        self.cpu_mark = cpu
        return now


@dataclass(frozen=True, slots=True)
class WriteTimings:
    """Seconds spent in each stage of the write tasks, summed over tasks and files.

    Stages: ``input`` (waiting for the next Arrow batch: upstream Spark work and the JVM to
    Python transfer), ``prepare`` (cast to the table schema, partition split, concatenation),
    ``parquet`` (encoding and writing the data file), ``stats`` (min/max/null counts),
    ``index`` (building every file index and the container), ``index_io`` (writing
    ``.index`` files) and ``meta`` (the manifest entry).

    The stages are wall-clock seconds: on a loaded machine they grow with the time the task
    waits for a core. ``cpu`` is the CPU seconds the task's Python process spent (all stages,
    ``input`` included: decoding the Arrow batches) and ``index_cpu`` those of the ``index``
    stage; they hardly move with the load. ``stage_cpu`` splits ``cpu`` by stage (in
    :data:`STAGES` order; :meth:`cpu_by_stage`).

    >>> (WriteTimings(parquet=1.0, files=1) + WriteTimings(parquet=0.5, index=2.0, files=2)).summary()
    'files 3, rows 0: parquet 1.50 s, index 2.00 s'
    >>> WriteTimings(index=0.5, cpu=1.0, index_cpu=0.25).summary()
    'files 0, rows 0: index 0.50 s; cpu 1.00 s (index 0.25 s)'
    """

    STAGES: ClassVar[tuple[str, ...]] = (
        "input",
        "prepare",
        "parquet",
        "stats",
        "index",
        "index_io",
        "meta",
    )
    input: float = 0.0
    prepare: float = 0.0
    parquet: float = 0.0
    stats: float = 0.0
    index: float = 0.0
    index_io: float = 0.0
    meta: float = 0.0
    files: int = 0
    rows: int = 0
    cpu: float = 0.0
    index_cpu: float = 0.0
    # primary-key writes: bytes of sorted runs spilled to local disk (summed over tasks)
    # and the most bytes one task's write buffer held at once (the largest over tasks)
    spilled: int = 0
    peak_buffer: int = 0
    stage_cpu: tuple[float, ...] = ()

    def __add__(self, other: WriteTimings) -> WriteTimings:
        return WriteTimings(
            **{s: getattr(self, s) + getattr(other, s) for s in self.STAGES},
            files=self.files + other.files,
            rows=self.rows + other.rows,
            cpu=self.cpu + other.cpu,
            index_cpu=self.index_cpu + other.index_cpu,
            spilled=self.spilled + other.spilled,
            peak_buffer=max(self.peak_buffer, other.peak_buffer),
            stage_cpu=tuple(
                a + b
                for a, b in zip(
                    self.stage_cpu or (0.0,) * len(self.STAGES),
                    other.stage_cpu or (0.0,) * len(self.STAGES),
                    strict=True,
                )
            ),
        )

    def cpu_by_stage(self) -> dict[str, float]:
        """Stage -> CPU seconds of the Python process (``input``: decoding the Arrow batches
        and waiting for them; all zero when not measured).

        >>> WriteTimings(stage_cpu=(0.5, 0, 1.0, 0, 0, 0, 0)).cpu_by_stage()["parquet"]
        1.0
        """
        return dict(zip(self.STAGES, self.stage_cpu or (0.0,) * len(self.STAGES), strict=True))

    def as_dict(self) -> dict[str, float]:
        """Stage -> seconds, plus ``files``, ``rows``, ``cpu`` and ``index_cpu`` (for JSON
        reports)."""
        out = {s: getattr(self, s) for s in self.STAGES}
        out["files"] = self.files
        out["rows"] = self.rows
        out["cpu"] = self.cpu
        out["index_cpu"] = self.index_cpu
        return out

    def summary(self) -> str:
        stages = ", ".join(
            f"{s} {getattr(self, s):.2f} s" for s in self.STAGES if getattr(self, s) > 0
        )
        cpu = f"; cpu {self.cpu:.2f} s (index {self.index_cpu:.2f} s)" if self.cpu > 0 else ""
        return f"files {self.files}, rows {self.rows}: {stages}{cpu}"


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
        clock: _Clock | None = None,
        roll: bool = True,
        memory_ratio: float = _INITIAL_MEMORY_RATIO,
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
        self.clock = clock if clock is not None else _Clock()
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
        directory = _partition_dir(self.spec, self.partition, self.bucket)
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
            f.parquet = pq.ParquetWriter(f.out, group.schema, **kwargs)
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
    clock: _Clock | None = None,
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
    clock: _Clock | None = None,
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


class DataWriter:
    """Rolling writer for one task: feed Arrow data, get manifest entries.

    Args:
        spec: the table being written.
        file_prefix: unique per task attempt; files are ``data-<prefix>-<n>.parquet``.
        roll: ``False``: every (partition, bucket) of an append table becomes one file,
            written at :meth:`close` (a sort rewrite's key range must not be split).
    """

    def __init__(
        self, spec: WriteSpec, file_prefix: str | None = None, *, roll: bool = True
    ) -> None:
        self.spec = spec
        self.roll = roll  # False: each (partition, bucket) of an append table is one file
        self.prefix = file_prefix or str(uuid.uuid4())
        self.counter = 0
        self.target = spec.target_file_size
        self.memory_ratio = _INITIAL_MEMORY_RATIO
        # append tables: an open rolling file writer per (partition values, bucket)
        self.files: dict[tuple[tuple[Any, ...], int], RollingWriter] = {}
        self.bucket_spec = spec.bucket_spec()
        self.index_options = spec.index_options()
        self.parquet_options = spec.parquet_options()
        self.written: list[ManifestEntry] = []
        self.partition_keys = list(spec.schema.partition_keys)
        self.arrow_schema = spec.schema.row_type.to_arrow()
        self._clock = _Clock()
        schema = spec.schema
        # (key layout, merge engine) when the rows are versions of keys
        merge = merge_engine_of(schema_kind(schema))
        self.versions: tuple[KeyLayout, MergeEngine] | None = (
            (schema_key_layout(schema), merge) if merge is not None else None
        )
        self.next_sequence = dict(spec.next_sequence)
        self.total_buckets = -1 if self.bucket_spec is None else self.bucket_spec.num_buckets
        # dynamic bucket: key hashes written per (partition, bucket), for the HASH index
        self.dynamic = spec.hash_index is not None
        if self.versions is not None and self.bucket_spec is None and not self.dynamic:
            raise InvalidArgumentError(
                "a dynamic-bucket table (bucket = -1) is written through its bucket assigner "
                "(lakeskip.spark.write.writer.write_entries), which keeps each key in one bucket"
            )
        self._hashes: dict[tuple[tuple[Any, ...], int], list[np.ndarray]] = {}
        self.hash_index: list[IndexManifestEntry] = []
        # primary key: every bucket's rows in one bounded buffer that spills sorted runs
        self.sort: SortBuffer | None = None
        if self.versions is not None:
            self.sort = SortBuffer(self.versions[0].trimmed, BufferOptions.of(schema.options))

    def timings(self) -> WriteTimings:
        """Seconds per stage so far (see :class:`WriteTimings`)."""
        c = self._clock
        sort = self.sort
        return WriteTimings(
            **c.seconds,
            files=c.files,
            rows=c.rows,
            cpu=c.cpu,
            index_cpu=c.index_cpu,
            spilled=sort.spilled_bytes if sort is not None else 0,
            peak_buffer=sort.peak if sort is not None else 0,
            stage_cpu=tuple(c.stage_cpu[s] for s in WriteTimings.STAGES),
        )

    def write_batches(self, batches: Iterable[pa.Table | pa.RecordBatch]) -> list[ManifestEntry]:
        """Write everything ``batches`` yields and close; the wait for each batch is timed as
        the ``input`` stage."""
        it = iter(batches)
        while True:
            t = time.perf_counter()
            data = next(it, None)
            self._clock.add("input", t)
            if data is None:
                break
            self.write(data)
        return self.close()

    def _next_name(self) -> str:
        name = f"data-{self.prefix}-{self.counter}.parquet"
        self.counter += 1
        return name

    def write(self, data: pa.Table | pa.RecordBatch) -> list[ManifestEntry]:
        """Buffer rows; returns the entries of files completed by this call."""
        t = time.perf_counter()
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if table.num_rows == 0:
            return []
        table, buckets = self._take_buckets(table)
        table = _conform(table, self.arrow_schema)
        if buckets is not None:
            table = table.append_column(BUCKET_COLUMN, buckets)
        done: list[ManifestEntry] = []
        if self.sort is not None:  # primary key: the bounded sort buffer
            over = False
            for key, part in self._split_buckets(self._split(table)):
                over = self.sort.add(key, part)
            self._clock.add("prepare", t)
            while over:  # write-buffer-spillable = false: flush the largest bucket
                largest = self.sort.pop_largest()
                if largest is None:
                    break
                done.extend(self._flush_versions(largest))
                over = self.sort.in_memory > self.sort.options.size
            return done
        parts = list(self._split_buckets(self._split(table)))
        self._clock.add("prepare", t)
        for key, part in parts:
            writer = self.files.get(key)
            if writer is None:
                writer = self.files[key] = self._rolling(key)
            writer.write(part)
            finished = writer.take_finished()
            if finished:
                self.memory_ratio = writer.ratio
                self.written.extend(finished)
                done.extend(finished)
        return done

    def _rolling(
        self, key: tuple[tuple[Any, ...], int], *, kv: bool = False, first_sequence: int = 0
    ) -> RollingWriter:
        partition, bucket = key
        return RollingWriter(
            self.spec,
            partition,
            bucket,
            self.total_buckets,
            self._next_name,
            kv=kv,
            first_sequence=first_sequence,
            index_options=self.index_options,
            parquet_options=self.parquet_options,
            clock=self._clock,
            memory_ratio=self.memory_ratio,
            roll=self.roll or kv,
        )

    def close(self) -> list[ManifestEntry]:
        """Write every buffered (partition, bucket); returns all entries of this writer."""
        for key in list(self.files):
            writer = self.files.pop(key)
            writer.close()
            self.written.extend(writer.take_finished())
        if self.sort is not None:
            try:
                for bucket_key in self.sort.bucket_keys():
                    self._flush_versions(bucket_key)
            finally:
                self.sort.close()
        self._write_hash_index()
        return list(self.written)

    def _flush_versions(self, key: tuple[tuple[Any, ...], int]) -> list[ManifestEntry]:
        """A primary-key bucket's buffered rows (spilled runs merged back in key order, in
        chunks of whole keys) merged by the table's engine and streamed into level-0 files
        rolled at ``target-file-size``, numbered after the bucket's largest sequence number."""
        from lakeskip.catalog.partitions import normalize_partition
        from lakeskip.catalog.write.sort_buffer import ARRIVAL

        assert self.sort is not None and self.versions is not None
        layout, merge = self.versions
        partition, bucket = key
        seq_key = (normalize_partition(self.spec.schema, partition), bucket)
        writer = self._rolling(key, kv=True, first_sequence=self.next_sequence.get(seq_key, 0))
        try:
            t = time.perf_counter()
            for chunk in self.sort.drain(key):
                # rows of one write that share a key merge as the table's engine merges
                # versions (a chunk holds every row of its keys, in arrival order)
                merged = merge.merge_write(
                    chunk.drop_columns([ARRIVAL]), layout.trimmed, int(self.spec.value_kind)
                )
                self._clock.add("prepare", t)
                writer.write(merged)
                t = time.perf_counter()
            out = writer.close()
        except BaseException:
            writer.abort()
            raise
        self.next_sequence[seq_key] = writer.next_sequence
        self.memory_ratio = writer.ratio
        self.written.extend(out)
        return out

    def _take_buckets(self, table: pa.Table) -> tuple[pa.Table, pa.ChunkedArray | None]:
        """Dynamic bucket: split off the trailing bucket column the assigner added."""
        if not self.dynamic:
            return table, None
        last = table.num_columns - 1
        return table.remove_column(last), table.column(last).cast(pa.int32())

    def _write_hash_index(self) -> None:
        """Dynamic bucket (Paimon's ``DynamicBucketIndexMaintainer``): per bucket written, its
        HASH file with this write's key hashes added, when any of them is new."""
        if not self.dynamic:
            return
        from lakeskip.catalog.partitions import normalize_partition

        assert self.spec.hash_index is not None
        for (partition, bucket), parts in sorted(self._hashes.items(), key=repr):
            normalized = normalize_partition(self.spec.schema, partition)
            old = self.spec.hash_index.get((normalized, bucket))
            before = (
                read_hash_index(self.spec.file_io, self.spec.table_path, old)
                if old is not None
                else np.empty(0, np.int32)
            )
            merged = np.union1d(before, np.concatenate(parts)).astype(np.int32)
            if len(merged) == len(before):
                continue
            meta = write_hash_index(self.spec.file_io, self.spec.table_path, merged)
            self.hash_index.append(IndexManifestEntry(FileKind.ADD, normalized, bucket, meta))
        self._hashes.clear()

    def _split_buckets(
        self, parts: Iterator[tuple[tuple[Any, ...], pa.Table]]
    ) -> Iterator[tuple[tuple[tuple[Any, ...], int], pa.Table]]:
        spec = self.bucket_spec
        for partition, part in parts:
            if self.dynamic:
                yield from self._split_assigned(partition, part)
                continue
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

    def _split_assigned(
        self, partition: tuple[Any, ...], part: pa.Table
    ) -> Iterator[tuple[tuple[tuple[Any, ...], int], pa.Table]]:
        """Dynamic bucket: rows by the bucket the assigner gave them; records key hashes."""
        assert self.versions is not None
        layout = self.versions[0]
        ids = part.column(BUCKET_COLUMN).to_numpy()
        part = part.drop_columns([BUCKET_COLUMN])
        hashes = key_hashes([part.column(k) for k in layout.trimmed], layout.types)
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        ends = np.r_[starts[1:], len(order)]
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            idx = order[s:e]
            key = (partition, int(sorted_ids[s]))
            self._hashes.setdefault(key, []).append(hashes[idx])
            yield key, (part if e - s == len(order) else part.take(pa.array(idx)))

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
    return DataWriter(spec).write_batches(tables)


def next_sequences(
    schema: TableSchema, live: Iterable[ManifestEntry]
) -> dict[tuple[tuple[Any, ...], int], int]:
    """Per (partition, bucket) of a primary-key table, one more than the largest sequence
    number of its live files: a new write's versions sort after every existing one."""
    from lakeskip.catalog.partitions import normalize_partition

    out: dict[tuple[tuple[Any, ...], int], int] = {}
    for e in live:
        key = (normalize_partition(schema, e.partition), e.bucket)
        out[key] = max(out.get(key, 0), e.file.max_sequence_number + 1)
    return out


def entries_files(entries: Sequence[ManifestEntry]) -> list[DataFileMeta]:
    return [e.file for e in entries]
