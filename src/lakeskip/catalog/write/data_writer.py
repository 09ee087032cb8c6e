"""A write task's writer (:class:`DataWriter`): Arrow batches in, manifest entries out.

This is the per-task half of every write (INSERT, compaction, CTAS): it runs inside Spark
tasks, so it is plain Python over Arrow with no Spark import. The driver only commits the
returned :class:`~lakeskip.catalog.format.manifest.ManifestEntry` objects.

:class:`DataWriter` splits the rows by partition and bucket (Paimon's bucket of the row's
``bucket-key``, :mod:`lakeskip.catalog.format.bucket`; on dynamic-bucket tables the bucket the
assigner gave each row, whose key hashes go to the bucket's HASH index) and hands each
(partition, bucket) to a :class:`~lakeskip.catalog.write.rolling_writer.RollingWriter`, which
writes the Parquet files, their stats and file indexes. A primary-key table's rows first go
through the task's bounded sort buffer (:mod:`lakeskip.catalog.write.sort_buffer`) and are
merged per key by the table's engine. Each stage is timed
(:class:`~lakeskip.catalog.write.timings.WriteTimings`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.catalog.format.bucket import bucket_ids
from lakeskip.catalog.format.hash_index import key_hashes, read_hash_index, write_hash_index
from lakeskip.catalog.format.index_manifest import IndexManifestEntry
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.kind import merge_engine_of, schema_kind
from lakeskip.catalog.partitions import normalize_partition
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import KeyLayout, schema_key_layout
from lakeskip.catalog.write.rolling_writer import INITIAL_MEMORY_RATIO, RollingWriter
from lakeskip.catalog.write.sort_buffer import BufferOptions, SortBuffer
from lakeskip.catalog.write.timings import StageClock, WriteTimings
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import InvalidArgumentError

__all__ = [
    "BUCKET_COLUMN",
    "DataWriter",
    "conform",
    "next_sequences",
    "write_all",
]

#: dynamic-bucket tables: the trailing column of a write task's input naming each row's bucket
BUCKET_COLUMN = "__lakeskip_bucket"


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
        self.memory_ratio = INITIAL_MEMORY_RATIO
        # append tables: an open rolling file writer per (partition values, bucket)
        self.files: dict[tuple[tuple[Any, ...], int], RollingWriter] = {}
        self.bucket_spec = spec.bucket_spec()
        self.index_options = spec.index_options()
        self.parquet_options = spec.parquet_options()
        self.written: list[ManifestEntry] = []
        self.partition_keys = list(spec.schema.partition_keys)
        self.arrow_schema = spec.schema.row_type.to_arrow()
        self._clock = StageClock()
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
        table = conform(table, self.arrow_schema)
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


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
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
    out: dict[tuple[tuple[Any, ...], int], int] = {}
    for e in live:
        key = (normalize_partition(schema, e.partition), e.bucket)
        out[key] = max(out.get(key, 0), e.file.max_sequence_number + 1)
    return out
