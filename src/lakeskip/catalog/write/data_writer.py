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
Files roll at ``target-file-size``. Parquet is compressed, Arrow in memory is not, so the
writer starts from a 3:1 guess of memory to file size and corrects it from each file written.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
from lakeskip.catalog.format.parquet_options import ParquetWriteOptions, parquet_write_options
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.stats import collect_stats
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
from lakeskip.index.file_index import build_file_index
from lakeskip.index.options import FileIndexOptions, parse_file_index_options
from lakeskip.types import RowType, to_internal

__all__ = [
    "DataWriter",
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
    from lakeskip.catalog.table import partition_path

    rel = partition_path(spec.schema, partition, bucket)
    return f"{spec.table_path.rstrip('/')}/{rel}"


class _Clock:
    """Per-stage seconds of one writer (mutable; :meth:`DataWriter.timings` freezes it)."""

    __slots__ = ("cpu", "cpu_mark", "files", "index_cpu", "rows", "seconds")

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(WriteTimings.STAGES, 0.0)
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
    stage; they hardly move with the load.

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

    def __add__(self, other: WriteTimings) -> WriteTimings:
        return WriteTimings(
            **{s: getattr(self, s) + getattr(other, s) for s in self.STAGES},
            files=self.files + other.files,
            rows=self.rows + other.rows,
            cpu=self.cpu + other.cpu,
            index_cpu=self.index_cpu + other.index_cpu,
            spilled=self.spilled + other.spilled,
            peak_buffer=max(self.peak_buffer, other.peak_buffer),
        )

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


def _write_parquet(
    spec: WriteSpec, table: pa.Table, path: str, parquet: ParquetWriteOptions, clock: _Clock
) -> int:
    t = time.perf_counter()
    with spec.file_io.open_output(path) as out:
        pq.write_table(table, out, **parquet.writer_kwargs(table))
    size = spec.file_io.file_size(path)
    clock.add("parquet", t)
    return size


def _write_file_index(
    spec: WriteSpec,
    data: pa.Table,
    row_type: RowType,
    opts: FileIndexOptions,
    directory: str,
    file_name: str,
    clock: _Clock,
    t: float,
) -> tuple[bytes | None, list[str], float]:
    """Build the data file's index: the bytes to embed in its manifest entry, or a
    ``<file>.index`` written beside it (listed as an extra file); both data-file writers."""
    if not opts.enabled:
        return None, [], t
    built = build_file_index(data, row_type, opts)
    t = clock.add("index", t)
    if built.external is None:
        return built.embedded, [], t
    index_name = file_name + INDEX_SUFFIX
    spec.file_io.write_bytes(f"{directory}/{index_name}", built.external)
    return built.embedded, [index_name], clock.add("index_io", t)


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
    cover the table's columns (row positions are the same as in the file).
    """
    clock = clock if clock is not None else _Clock()
    t = time.perf_counter()
    schema = spec.schema
    row_type = schema.row_type
    arrow_schema = row_type.to_arrow()
    if not values.schema.equals(arrow_schema):
        values = values.cast(arrow_schema)
    layout = schema_key_layout(schema)
    kv = to_key_value(values, layout, first_sequence, spec.value_kind, versions)
    directory = _partition_dir(spec, partition, bucket)
    spec.file_io.mkdirs(directory)
    path = f"{directory}/{file_name}"
    parquet = parquet_options if parquet_options is not None else spec.parquet_options()
    clock.add("prepare", t)
    file_size = _write_parquet(spec, kv, path, parquet, clock)
    t = time.perf_counter()
    stats, stats_cols = collect_stats(values, row_type, spec.stats_mode)
    key_type = RowType(tuple(row_type.field(k) for k in layout.trimmed))
    key_stats, _ = collect_stats(values, key_type, "full")
    n = values.num_rows
    first = [to_internal(f.type, values.column(f.name)[0].as_py()) for f in key_type]
    last = [to_internal(f.type, values.column(f.name)[n - 1].as_py()) for f in key_type]
    t = clock.add("stats", t)
    opts = index_options if index_options is not None else spec.index_options()
    embedded, extra_files, t = _write_file_index(
        spec, values, row_type, opts, directory, file_name, clock, t
    )
    meta = make_data_file_meta(
        file_name=file_name,
        file_size=file_size,
        row_count=n,
        stats=stats,
        stats_cols=stats_cols,
        schema_id=schema.id,
        embedded_index=embedded,
        extra_files=extra_files,
        level=level,
        file_source=FileSource.COMPACT if level > 0 else FileSource.APPEND,
        min_sequence_number=int(pc.min(kv[SEQUENCE_NUMBER]).as_py()),
        max_sequence_number=int(pc.max(kv[SEQUENCE_NUMBER]).as_py()),
    )
    retract = int(pc.sum(pc.is_in(kv[VALUE_KIND], pa.array([1, 3], pa.int8()))).as_py() or 0)
    meta = dataclasses.replace(
        meta,
        min_key=serialize_row(first, layout.types),
        max_key=serialize_row(last, layout.types),
        key_stats=key_stats,
        delete_row_count=retract,
    )
    entry = ManifestEntry(
        kind=FileKind.ADD,
        partition=tuple(partition),
        bucket=bucket,
        total_buckets=total_buckets,
        file=meta,
    )
    clock.add("meta", t)
    clock.files += 1
    clock.rows += n
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
    clock = clock if clock is not None else _Clock()
    t = time.perf_counter()
    row_type = spec.schema.row_type
    arrow_schema = row_type.to_arrow()
    if not table.schema.equals(arrow_schema):
        table = table.cast(arrow_schema)
    directory = _partition_dir(spec, partition, bucket)
    spec.file_io.mkdirs(directory)
    path = f"{directory}/{file_name}"
    parquet = parquet_options if parquet_options is not None else spec.parquet_options()
    clock.add("prepare", t)
    file_size = _write_parquet(spec, table, path, parquet, clock)
    t = time.perf_counter()
    stats, stats_cols = collect_stats(table, row_type, spec.stats_mode)
    t = clock.add("stats", t)
    opts = index_options if index_options is not None else spec.index_options()
    embedded, extra_files, t = _write_file_index(
        spec, table, row_type, opts, directory, file_name, clock, t
    )
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
    entry = ManifestEntry(
        kind=FileKind.ADD,
        partition=tuple(partition),
        bucket=bucket,
        total_buckets=total_buckets,
        file=meta,
    )
    clock.add("meta", t)
    clock.files += 1
    clock.rows += table.num_rows
    return entry


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
        full: list[tuple[tuple[Any, ...], int]] = []
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
        for key, part in self._split_buckets(self._split(table)):
            buf = self.buffers.setdefault(key, _Buffer())
            buf.tables.append(part)
            buf.nbytes += part.nbytes
            buf.rows += part.num_rows
            if buf.nbytes >= self.target * self.memory_ratio:
                full.append(key)
        self._clock.add("prepare", t)
        done.extend(self._flush(k) for k in full)
        return done

    def close(self) -> list[ManifestEntry]:
        """Write every buffered (partition, bucket); returns all entries of this writer."""
        for key in list(self.buffers):
            self._flush(key)
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
        chunks of whole keys) merged by the table's engine and written as level-0 files
        rolled at ``target-file-size``, numbered after the bucket's largest sequence number."""
        from lakeskip.catalog.table import normalize_partition
        from lakeskip.catalog.write.sort_buffer import ARRIVAL

        assert self.sort is not None and self.versions is not None
        layout, merge = self.versions
        partition, bucket = key
        seq_key = (normalize_partition(self.spec.schema, partition), bucket)
        out: list[ManifestEntry] = []
        pending: list[pa.Table] = []
        size = 0
        roll = self.target * self.memory_ratio

        def write(parts: list[pa.Table]) -> None:
            table = pa.concat_tables(parts)
            first = self.next_sequence.get(seq_key, 0)
            self.next_sequence[seq_key] = first + table.num_rows
            entry = write_kv_data_file(
                self.spec,
                table,
                partition,
                self._next_name(),
                bucket,
                self.total_buckets,
                first,
                index_options=self.index_options,
                parquet_options=self.parquet_options,
                clock=self._clock,
            )
            self.written.append(entry)
            out.append(entry)

        t = time.perf_counter()
        for chunk in self.sort.drain(key):
            # rows of one write that share a key merge as the table's engine merges versions
            # (a chunk holds every row of its keys, in arrival order)
            merged = merge.merge_write(
                chunk.drop_columns([ARRIVAL]), layout.trimmed, int(self.spec.value_kind)
            )
            pending.append(merged)
            size += merged.nbytes
            if size >= roll:
                t = self._clock.add("prepare", t)
                write(pending)
                t = time.perf_counter()
                pending, size = [], 0
        self._clock.add("prepare", t)
        if pending:
            write(pending)
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
        from lakeskip.catalog.table import normalize_partition

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

    def _flush(self, key: tuple[tuple[Any, ...], int]) -> ManifestEntry:
        t = time.perf_counter()
        buf = self.buffers.pop(key)
        table = pa.concat_tables(buf.tables)
        partition, bucket = key
        self._clock.add("prepare", t)
        entry = write_data_file(
            self.spec,
            table,
            partition,
            self._next_name(),
            index_options=self.index_options,
            bucket=bucket,
            total_buckets=self.total_buckets,
            parquet_options=self.parquet_options,
            clock=self._clock,
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
    from lakeskip.catalog.table import normalize_partition

    out: dict[tuple[tuple[Any, ...], int], int] = {}
    for e in live:
        key = (normalize_partition(schema, e.partition), e.bucket)
        out[key] = max(out.get(key, 0), e.file.max_sequence_number + 1)
    return out


def entries_files(entries: Sequence[ManifestEntry]) -> list[DataFileMeta]:
    return [e.file for e in entries]
