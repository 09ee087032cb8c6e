"""Curve-sort compaction (z-order, Hilbert) as three rounds of plain tasks, no Spark shuffle.

Sorting through Spark costs two JVM <-> Arrow conversions of every row, a sampling job that
re-reads and re-keys the input, and a shuffle of Spark rows. The keys here are fixed-width
bytes that numpy sorts directly, so the same range-partitioned sort is done in Arrow, the way
a shuffle works, with :meth:`Executor.map` only:

```
 sample   (``sort.curve-keys = rank``, the default) one task per group of files: read the
          sort columns only, return a uniform sample of their rows (SAMPLE_ROWS per
          partition in all); the driver turns each partition's sample into per-column rank
          boundaries (lakeskip.sort.sampling, shared with the Spark write path's clustering;
          lakeskip.sort.ranked), so every column gets an equal share of the key
 map      one task per group of files (up to 64 MiB, two tasks per core at least): read, compute keys, sort,
          write ONE Arrow IPC spill file of 4096-row batches (key as last column); return
          each batch's first key and every k-th key as a sample
 driver   per partition: n_out = ceil(bytes / target-file-size) key ranges [low, high) cut
          near the quantiles of the samples, each cut moved (by at most a quarter of a
          file) to the coarsest cell boundary of the curve nearby, so a file covers a
          compact region; for each range, the batches of each spill file whose key span
          meets it
 reduce   one task per run of consecutive ranges (same size rule): per range, read those
          batches, keep the range's keys, sort, write data files (stats, indexes) through
          DataWriter at level 1
```

Every row is read from Parquet once and keyed once; a reducer reads at most two batches per
spill file beyond its own rows.

The spill files live in ``<table>/.sort-tmp-<uuid>/`` (the warehouse every task already writes
to) and are deleted when the rewrite ends, failed or not; a directory left by a process that
died is removed by ``sys.remove_orphan_files`` once older than its ``older_than``. Rows with equal keys keep their
input order (stable sorts throughout), so the result is deterministic.
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeskip.catalog.field_mapping import arrow_by_id
from lakeskip.catalog.format.deletion_vectors import drop_deleted
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.ops.maintenance import SPILL_DIR_PREFIX
from lakeskip.catalog.options import option_int, target_file_size
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import DataWriter
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.procedures.base import Executor, SortSpec
from lakeskip.sort.cuts import KeyArray, aligned_cuts, curve_keys, key_bytes, key_order
from lakeskip.sort.ranked import RANK_KEYS, ColumnBounds, sample_rows
from lakeskip.sort.sampling import (
    PartSample,
    curve_layout,
    encode_sample,
    merge_samples,
    sample_share,
)
from lakeskip.types import RowType

__all__ = ["CURVE_STRATEGIES", "rewrite_sorted_in_tasks"]

CURVE_STRATEGIES = ("zorder", "hilbert")
KEY = "__lakeskip_sort_key"
_MAGNIFICATION = "sort-compaction.local-sample.magnification"


def _read(
    spec: WriteSpec,
    path: str,
    columns: Sequence[str] | None = None,
    stored: RowType | None = None,
) -> pa.Table:
    """A data file's rows in the table's current schema (columns added later are null);
    ``stored``: the row type of the older schema version it was written with, whose columns
    are matched by field id (a renamed or widened column)."""
    row_type = spec.schema.row_type
    names = list(columns) if columns is not None else row_type.names
    if stored is not None:
        by_id = {f.id: f for f in stored}
        olds = [by_id[f.id].name for f in (row_type.field(n) for n in names) if f.id in by_id]
        with spec.file_io.open_input(path) as src:
            parquet = pq.ParquetFile(src)
            present = set(parquet.schema_arrow.names)
            data = parquet.read(columns=[n for n in olds if n in present])
        return arrow_by_id(data, stored, row_type, names)
    with spec.file_io.open_input(path) as src:
        parquet = pq.ParquetFile(src)
        present = set(parquet.schema_arrow.names)
        data = parquet.read(columns=[n for n in names if n in present])
    for n in names:
        if n not in present:
            data = data.append_column(n, pa.nulls(data.num_rows, row_type.field(n).type.to_arrow()))
    schema = pa.schema([row_type.to_arrow().field(n) for n in names])
    return data.select(names).cast(schema)


def _stored(table: FileStoreTable, entry: ManifestEntry) -> RowType | None:
    """The row type ``entry`` was written with, when it is an older schema version's."""
    sid = entry.file.schema_id
    return None if sid == table.schema.id else table.schema_by_id(sid).row_type


def _keys(
    spec: WriteSpec, sort: SortSpec, data: pa.Table, bounds: tuple[ColumnBounds, ...] | None
) -> KeyArray:
    types = [spec.schema.row_type.field(c).type for c in sort.columns]
    arrays = [data.column(c) for c in sort.columns]
    return key_bytes(curve_keys(arrays, types, sort.strategy, sort.var_length_contribution, bounds))


@dataclass(frozen=True, slots=True)
class SampleTask:
    spec: WriteSpec
    columns: tuple[str, ...]
    paths: tuple[str, ...]
    wanted: int  # rows to sample from these files
    seed: int
    stored: tuple[RowType | None, ...] = ()  # per path: its older schema's row type (_read)


def sample_columns(task: SampleTask) -> PartSample:
    """A uniform sample of the sort columns of the task's files and their row count
    (runs in a task; deleted rows may be sampled: the boundaries only steer the layout)."""
    data = pa.concat_tables(
        [
            _read(task.spec, p, task.columns, task.stored[i] if task.stored else None)
            for i, p in enumerate(task.paths)
        ]
    )
    rows = sample_rows(data.num_rows, task.wanted, task.seed)
    return PartSample(data.num_rows, encode_sample(data.take(pa.array(rows))))


BATCH_ROWS = 4096  # rows per record batch in a spill file: a reducer reads whole batches
TASK_BYTES = 64 * 2**20  # largest default data-file bytes per task (rewrite_sorted_in_tasks)


@dataclass(frozen=True, slots=True)
class MapTask:
    spec: WriteSpec
    sort: SortSpec
    paths: tuple[str, ...]
    out_path: str
    stride: int  # every stride-th key goes back to the driver as a sample
    deleted: tuple[bytes | None, ...] = ()  # per path: its deletion vector (portable bitmap)
    bounds: tuple[ColumnBounds, ...] | None = None  # rank keys; None: Paimon's keys
    stored: tuple[RowType | None, ...] = ()  # per path: its older schema's row type (_read)


@dataclass(frozen=True, slots=True)
class MapResult:
    """What the driver learns from one map task (keys as concatenated fixed-width bytes)."""

    path: str
    width: int
    first_keys: bytes  # first key of every record batch, in batch order
    samples: bytes


def sort_to_spill(task: MapTask) -> MapResult:
    """Read, key and sort the task's files and write them as one Arrow IPC file of
    :data:`BATCH_ROWS`-row batches with the key as the last column (runs in a task)."""
    data = pa.concat_tables(
        [
            drop_deleted(
                _read(task.spec, p, None, task.stored[i] if task.stored else None),
                task.deleted[i] if task.deleted else None,
                p,
            )
            for i, p in enumerate(task.paths)
        ]
    )
    keys = _keys(task.spec, task.sort, data, task.bounds)
    order = key_order(keys)
    keys = keys[order]
    width = keys.dtype.itemsize
    key_column = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), len(keys), [None, pa.py_buffer(keys.tobytes())]
    )
    data = data.take(pa.array(order)).append_column(KEY, key_column)
    with (
        task.spec.file_io.open_output(task.out_path) as sink,
        pa.ipc.new_file(sink, data.schema) as writer,
    ):
        writer.write_table(data, max_chunksize=BATCH_ROWS)
    return MapResult(
        path=task.out_path,
        width=width,
        first_keys=keys[::BATCH_ROWS].tobytes(),
        samples=keys[task.stride // 2 :: task.stride].tobytes(),
    )


@dataclass(frozen=True, slots=True)
class KeyRange:
    low: bytes | None  # keys >= low (None: no lower bound)
    high: bytes | None  # keys < high (None: no upper bound)
    pieces: tuple[tuple[str, tuple[int, ...]], ...]  # (spill file, batch indexes), map order


@dataclass(frozen=True, slots=True)
class ReduceTask:
    spec: WriteSpec
    width: int
    ranges: tuple[KeyRange, ...]  # consecutive ranges; each becomes its own data file(s)


def _gather(spec: WriteSpec, width: int, r: KeyRange) -> pa.Table:
    batches = []
    for path, indexes in r.pieces:
        with spec.file_io.open_input(path) as src:
            reader = pa.ipc.open_file(src)
            batches += [reader.get_batch(i) for i in indexes]
    data = pa.Table.from_batches(batches)
    keys = key_bytes(data.column(KEY))
    keep = np.ones(len(keys), dtype=bool)
    dtype = f"S{width}"
    if r.low is not None:
        keep &= keys >= np.frombuffer(r.low, dtype=dtype)[0]
    if r.high is not None:
        keep &= keys < np.frombuffer(r.high, dtype=dtype)[0]
    rows = np.flatnonzero(keep)
    order = rows[key_order(keys[rows])]
    return data.drop_columns([KEY]).take(pa.array(order))


def write_ranges(task: ReduceTask) -> list[ManifestEntry]:
    """Gather each key range from the spill files, sort it and write it as data files (runs
    in a task)."""
    out: list[ManifestEntry] = []
    for r in task.ranges:
        writer = DataWriter(task.spec, roll=False)  # one file per range: keys never split
        writer.write(_gather(task.spec, task.width, r))
        out += writer.close()
    return out


def _width(results: Sequence[MapResult]) -> int:
    """The key width of a partition (a map task that read no rows reports a stand-in 1)."""
    return max(r.width for r in results)


def _ranges(results: Sequence[MapResult], n_out: int) -> list[tuple[bytes | None, bytes | None]]:
    """``n_out`` key ranges ``[low, high)`` cut near the quantiles of the samples.

    Each cut may move by up to a quarter of a range's samples to the neighbouring pair of
    samples that differ in the earliest bit, and is placed at the corner of the curve cell
    that begins there: a file then covers whole cells (a compact region of every column)
    instead of a sliver of a neighbouring one. Cuts never repeat, so no range is empty by
    construction (equal keys always share a range)."""
    width = _width(results)
    samples = np.sort(
        np.concatenate([np.frombuffer(r.samples, dtype=f"S{width}") for r in results])
    )
    cuts = aligned_cuts(samples, n_out)
    edges: list[bytes | None] = [None, *cuts, None]
    return list(itertools.pairwise(edges))


def _pieces(
    results: Sequence[MapResult], low: bytes | None, high: bytes | None
) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Per spill file, the batches that can hold keys in ``[low, high)``: batch i spans
    ``[first[i], first[i + 1]]``."""
    out = []
    for r in results:
        first = np.frombuffer(r.first_keys, dtype=f"S{r.width}")
        if len(first) == 0:
            continue
        # batches starting below high...
        stop = len(first) if high is None else int(np.searchsorted(first, high, side="left"))
        # ...whose successor starts at or above low (else every key of the batch is < low)
        start = 0 if low is None else max(0, int(np.searchsorted(first, low, side="left")) - 1)
        if stop > start:
            out.append((r.path, tuple(range(start, stop))))
    return tuple(out)


def _groups(entries: Sequence[ManifestEntry], target: int) -> list[list[ManifestEntry]]:
    """Consecutive files in groups of about ``target`` bytes (one map task each)."""
    groups: list[list[ManifestEntry]] = []
    size = 0
    for e in entries:
        if not groups or size + e.file.file_size > target:
            groups.append([])
            size = 0
        groups[-1].append(e)
        size += e.file.file_size
    return groups


def _sample_bounds(
    spec: WriteSpec,
    sort: SortSpec,
    table: FileStoreTable,
    partitions: Sequence[tuple[Sequence[ManifestEntry], Sequence[Sequence[ManifestEntry]]]],
    executor: Executor,
    name: str,
) -> list[tuple[ColumnBounds, ...] | None]:
    """Per partition, the sort columns' rank boundaries from a sample of about
    :data:`~lakeskip.sort.ranked.SAMPLE_ROWS` rows, drawn in tasks (each group of files draws its share, so
    :func:`lakeskip.sort.sampling.merge_samples` keeps every row it sends)."""
    tasks: list[SampleTask] = []
    owners: list[int] = []
    for p, (entries, groups) in enumerate(partitions):
        rows = sum(e.file.row_count for e in entries)
        for g in groups:
            wanted = sample_share(sum(e.file.row_count for e in g), rows)
            paths = tuple(table.data_file_path(e) for e in g)
            older = tuple(_stored(table, e) for e in g)
            tasks.append(SampleTask(spec, sort.columns, paths, wanted, len(tasks), older))
            owners.append(p)
    samples = executor.map(sample_columns, tasks, f"{name}: sample")
    by_partition: list[list[PartSample]] = [[] for _ in partitions]
    for p, sample in zip(owners, samples, strict=True):
        by_partition[p].append(sample)
    row_type = spec.schema.row_type
    schema = pa.schema([row_type.to_arrow().field(c) for c in sort.columns])
    types = [row_type.field(c).type for c in sort.columns]
    return [
        curve_layout(
            merge_samples(parts, schema),
            types,
            sort.strategy,
            sort.var_length_contribution,
            sort.curve_keys,
        ).bounds
        for parts in by_partition
    ]


def rewrite_sorted_in_tasks(
    table: FileStoreTable,
    files: Sequence[ManifestEntry],
    sort: SortSpec,
    executor: Executor,
    task_bytes: int | None = None,
    deleted: Mapping[str, bytes] | None = None,
) -> list[ManifestEntry]:
    """Rewrite ``files`` range-partitioned and sorted on a z-order or Hilbert key.

    Each partition of the table is cut into ``ceil(bytes / target-file-size)`` key ranges;
    every range becomes one new data file (level 1) with stats and indexes.

    Args:
        task_bytes: data-file bytes one task reads (map) or writes (reduce), at least one
            file or range; by default ``max(target-file-size, 64 MiB)``, made smaller to
            give every core of ``executor.parallelism`` two tasks. Fewer, larger tasks cost
            less scheduling than one task per small file.
        deleted: data file name -> its deletion vector (portable bitmap): those rows are
            dropped.

    Returns:
        The new ADD entries (the caller commits them, deleting ``files``).
    """
    if sort.strategy not in CURVE_STRATEGIES:
        raise ValueError(f"rewrite_sorted_in_tasks sorts by curve keys, not {sort.strategy!r}")
    if not files:
        return []
    schema = table.schema
    target = target_file_size(schema.options)
    if task_bytes is not None:
        per_task = task_bytes
    else:  # at most 64 MiB (or one target file), and at least two tasks per core
        total = sum(e.file.file_size for e in files)
        per_task = min(max(target, TASK_BYTES), math.ceil(total / (2 * executor.parallelism)))
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=schema, level=1)
    magnification = option_int(schema.options, _MAGNIFICATION)
    by_partition: dict[tuple[Any, ...], list[ManifestEntry]] = defaultdict(list)
    for e in files:
        by_partition[tuple(e.partition)].append(e)
    name = f"compact {table.identifier} ({sort.strategy})"
    partitions = [(entries, _groups(entries, per_task)) for entries in by_partition.values()]
    bounds: list[tuple[ColumnBounds, ...] | None] = [None] * len(partitions)
    if sort.curve_keys == RANK_KEYS:
        bounds = _sample_bounds(spec, sort, table, partitions, executor, name)
    tmp = f"{table.path.rstrip('/')}/{SPILL_DIR_PREFIX}{uuid.uuid4()}"
    table.file_io.mkdirs(tmp)
    try:
        map_tasks: list[MapTask] = []
        plans: list[tuple[int, int, int, int]] = []  # (first map task, count, n_out, bytes)
        for (entries, groups), part_bounds in zip(partitions, bounds, strict=True):
            size = sum(e.file.file_size for e in entries)
            n_out = max(1, math.ceil(size / target))
            stride = max(1, sum(e.file.row_count for e in entries) // (n_out * magnification))
            plans.append((len(map_tasks), len(groups), n_out, size))
            map_tasks += [
                MapTask(
                    spec,
                    sort,
                    tuple(table.data_file_path(e) for e in g),
                    f"{tmp}/map-{len(map_tasks) + i}.arrow",
                    stride,
                    tuple((deleted or {}).get(e.file.file_name) for e in g),
                    part_bounds,
                    tuple(_stored(table, e) for e in g),
                )
                for i, g in enumerate(groups)
            ]
        results = executor.map(sort_to_spill, map_tasks, f"{name}: sort")
        reduce_tasks: list[ReduceTask] = []
        for first, count, n_out, size in plans:
            part = results[first : first + count]
            ranges = [KeyRange(lo, hi, _pieces(part, lo, hi)) for lo, hi in _ranges(part, n_out)]
            ranges = [r for r in ranges if r.pieces]
            per_range = max(1, size // max(1, len(ranges)))
            step = max(1, per_task // per_range)
            reduce_tasks += [
                ReduceTask(spec, _width(part), tuple(ranges[i : i + step]))
                for i in range(0, len(ranges), step)
            ]
        written = executor.map(write_ranges, reduce_tasks, f"{name}: write")
    finally:
        table.file_io.delete_dir(tmp)
    return [e for entries in written for e in entries]
