"""A primary-key write task's rows in bounded memory: sort runs spilled to local disk and a
k-way merge (Paimon's ``SortBufferWriteBuffer`` over ``BinaryExternalSortBuffer``).

Every row a task receives for a (partition, bucket) is appended to that bucket's buffer with
its arrival number. When the rows buffered by the whole task pass ``write-buffer-size``
(Paimon's default 256 mb, one pool per task as Paimon's writers share one memory pool), the
largest bucket's buffer is sorted by (key, arrival) and written to a local temp file as an
Arrow IPC stream (a *sort run*), and its memory is released::

    rows ──► bucket buffers (memory, <= write-buffer-size for the whole task)
                 │ over the budget: the largest one, sorted by (key, arrival)
                 ▼
             sort runs (Arrow IPC files in a local temp dir, one per spill)
                 │ close: a k-way merge of the runs and what is left in memory
                 ▼
             chunks sorted by (key, arrival), each holding every row of its keys

The merge reads each run a batch at a time and yields *chunks of whole keys*: all versions
of a key are in one chunk, in arrival order, so the table's merge engine
(:meth:`~lakeskip.catalog.pk.merge_engine.MergeEngine.merge_write`) merges a chunk exactly as
it would merge the whole bucket (merging is per key). More runs than
``local-sort.max-num-file-handles`` (128) are first merged into longer runs, as Paimon's
fan-in. Memory while merging: one read batch per run (a batch holds about
``write-buffer-size / (2 * fan-in)`` bytes) plus the chunk being merged.

``write-buffer-spillable = false`` (Paimon's option): nothing goes to disk; the caller
flushes the largest bucket instead (:meth:`SortBuffer.pop_largest`), as Paimon flushes its
write buffer into a level-0 file.

:func:`merge_sorted` is the merge itself, over any sources sorted by key (the bucket
files of a compaction, :mod:`lakeskip.procedures.pk_compact`).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.catalog.options import option_bool, option_int
from lakeskip.errors import InvalidOptionError

__all__ = [
    "ARRIVAL",
    "BufferOptions",
    "SortBuffer",
    "merge_sorted",
]

#: (partition values, bucket)
BucketKey = tuple[tuple[Any, ...], int]
#: the arrival number of a row in its bucket (the tie-break after the key)
ARRIVAL = "__lakeskip_arrival"
WRITE_BUFFER_SIZE = "write-buffer-size"
WRITE_BUFFER_SPILLABLE = "write-buffer-spillable"
MAX_FILE_HANDLES = "local-sort.max-num-file-handles"


@dataclass(frozen=True, slots=True)
class BufferOptions:
    """``write-buffer-size`` (bytes), ``write-buffer-spillable`` and
    ``local-sort.max-num-file-handles`` of a table (Paimon's names and defaults).

    >>> BufferOptions.of({})
    BufferOptions(size=268435456, spillable=True, fan_in=128)
    >>> BufferOptions.of({"write-buffer-size": "1 kb", "write-buffer-spillable": "false"}).size
    1024
    """

    size: int
    spillable: bool
    fan_in: int

    @classmethod
    def of(cls, options: Mapping[str, str]) -> BufferOptions:
        from lakeskip.catalog.options import KNOWN_OPTIONS
        from lakeskip.index.base import parse_memory_size

        raw = options.get(WRITE_BUFFER_SIZE) or KNOWN_OPTIONS[WRITE_BUFFER_SIZE].default
        assert raw is not None
        size = parse_memory_size(raw, WRITE_BUFFER_SIZE)
        fan_in = option_int(options, MAX_FILE_HANDLES)
        if size <= 0 or fan_in < 2:
            raise InvalidOptionError(
                f"option {WRITE_BUFFER_SIZE!r} must be positive and {MAX_FILE_HANDLES!r} at least 2"
            )
        return cls(size, option_bool(options, WRITE_BUFFER_SPILLABLE), fan_in)

    @property
    def read_batch_bytes(self) -> int:
        """Bytes of one batch read back from a run while merging."""
        return max(1, self.size // (2 * self.fan_in))


def _spill_root() -> str | None:
    """Spark's local dirs when the task has them (``SPARK_LOCAL_DIRS``), else the system's
    temp dir."""
    dirs = os.environ.get("SPARK_LOCAL_DIRS")
    if dirs:
        first = dirs.split(",")[0].strip()
        if first and os.path.isdir(first):
            return first
    return None


@dataclass
class _Bucket:
    tables: list[pa.Table] = field(default_factory=list)
    nbytes: int = 0
    arrived: int = 0
    runs: list[str] = field(default_factory=list)


class SortBuffer:
    """Per-bucket row buffers of one task within one memory budget (see the module doc).

    Args:
        key_columns: the trimmed primary key (every row has these columns).
        options: the budget (:class:`BufferOptions`).

    Use as a context manager (or call :meth:`close`): the temp dir goes away with it.
    """

    def __init__(self, key_columns: Sequence[str], options: BufferOptions) -> None:
        self.keys = list(key_columns)
        self.options = options
        self.buckets: dict[BucketKey, _Bucket] = {}
        self.in_memory = 0
        self.peak = 0  # most bytes held in memory at once (for benchmarks and tests)
        self.spills = 0
        self.spilled_bytes = 0
        self._dir: str | None = None
        self._runs = 0

    def __enter__(self) -> SortBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Drop the temp dir and every buffer."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self.buckets.clear()
        self.in_memory = 0

    def add(self, bucket: BucketKey, rows: pa.Table) -> bool:
        """Buffer ``rows`` of ``bucket`` (arrival numbers follow the bucket's earlier rows).
        Spills while the task is over its budget, when spillable; returns whether the task is
        still over it (not spillable: the caller flushes, :meth:`pop_largest`)."""
        if rows.num_rows == 0:
            return False
        b = self.buckets.setdefault(bucket, _Bucket())
        arrival = pa.array(np.arange(b.arrived, b.arrived + rows.num_rows, dtype=np.int64))
        b.arrived += rows.num_rows
        rows = rows.append_column(ARRIVAL, arrival)
        b.tables.append(rows)
        b.nbytes += rows.nbytes
        self.in_memory += rows.nbytes
        self.peak = max(self.peak, self.in_memory)
        while self.in_memory > self.options.size and self.options.spillable:
            if not self._spill_largest():
                break
        return self.in_memory > self.options.size

    def _largest(self) -> BucketKey | None:
        full = [(b.nbytes, k) for k, b in self.buckets.items() if b.nbytes]
        return max(full, key=lambda t: t[0])[1] if full else None

    def pop_largest(self) -> BucketKey | None:
        """Not spillable: the bucket to flush now (its rows come from :meth:`drain`)."""
        return self._largest()

    def _temp_dir(self) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="lakeskip-sort-", dir=_spill_root())
            # a task that fails before close still leaves no spill files behind
            weakref.finalize(self, shutil.rmtree, self._dir, ignore_errors=True)
        return self._dir

    def _new_run_path(self) -> str:
        path = os.path.join(self._temp_dir(), f"run-{self._runs}.arrow")
        self._runs += 1
        return path

    def spill_path(self) -> str:
        """A new file path in this buffer's temp dir (removed with it at :meth:`close`), for
        callers that spill their own streams beside the sort runs."""
        return self._new_run_path()

    def _spill_largest(self) -> bool:
        key = self._largest()
        if key is None:
            return False
        b = self.buckets[key]
        data = _sorted(pa.concat_tables(b.tables), self.keys)
        b.tables = []
        self.in_memory -= b.nbytes
        b.nbytes = 0
        path = self._new_run_path()
        self.spilled_bytes += _write_run(path, [data], self._batch_rows(data))
        b.runs.append(path)
        self.spills += 1
        return True

    def _batch_rows(self, data: pa.Table) -> int:
        per_row = max(1, int(data.nbytes) // max(1, int(data.num_rows)))
        return max(16, self.options.read_batch_bytes // per_row)

    def bucket_keys(self) -> list[BucketKey]:
        """The buckets holding rows, in the order they first got one."""
        return [k for k, b in self.buckets.items() if b.tables or b.runs]

    def drain(self, bucket: BucketKey) -> Iterator[pa.Table]:
        """Every row of ``bucket`` in chunks of whole keys sorted by (key, arrival), each
        with the :data:`ARRIVAL` column; the bucket's buffer and runs are released."""
        b = self.buckets.pop(bucket, None)
        if b is None:
            return
        self.in_memory -= b.nbytes
        runs = list(b.runs)
        memory = _sorted(pa.concat_tables(b.tables), self.keys) if b.tables else None
        b.tables = []
        try:
            while len(runs) + (memory is not None) > self.options.fan_in:
                # intermediate merge: the first fan-in runs become one longer run
                group, runs = runs[: self.options.fan_in], runs[self.options.fan_in :]
                path = self._new_run_path()
                chunks = merge_sorted([_read_run(p) for p in group], self.keys, ARRIVAL)
                first = next(chunks, None)
                rows = 16 if first is None else self._batch_rows(first)
                # streamed: one merged chunk at a time goes to the longer run
                merged = chunks if first is None else itertools.chain([first], chunks)
                self.spilled_bytes += _write_run(path, merged, rows)
                for p in group:
                    os.remove(p)
                runs.append(path)
            sources: list[Iterator[pa.Table]] = [_read_run(p) for p in runs]
            if memory is not None:
                rows = self._batch_rows(memory)
                sources.append(iter([memory.slice(i, rows) for i in range(0, len(memory), rows)]))
            yield from merge_sorted(sources, self.keys, ARRIVAL)
        finally:
            for p in runs:
                if os.path.exists(p):
                    os.remove(p)


def _sorted(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in [*keys, ARRIVAL]])
    return table.take(order)


def _write_run(path: str, tables: Iterable[pa.Table], batch_rows: int) -> int:
    """Write ``tables`` (already in order) as one Arrow IPC stream file in batches of
    ``batch_rows`` rows; returns its size in bytes."""
    writer: pa.ipc.RecordBatchStreamWriter | None = None
    with pa.OSFile(path, "wb") as sink:
        try:
            for t in tables:
                if writer is None:
                    writer = pa.ipc.new_stream(sink, t.schema)
                for batch in t.combine_chunks().to_batches(max_chunksize=batch_rows):
                    writer.write_batch(batch)
        finally:
            if writer is not None:
                writer.close()
    return os.path.getsize(path)


def _read_run(path: str) -> Iterator[pa.Table]:
    """A sort run's batches, one at a time."""
    with pa.memory_map(path, "r") as source:
        reader = pa.ipc.open_stream(source)
        for batch in reader:
            # copy out of the mapping: the file is deleted once merged
            yield pa.Table.from_batches([batch]).combine_chunks()


def _key_at(table: pa.Table, keys: Sequence[str], i: int) -> tuple[Any, ...]:
    return tuple(table.column(k)[i].as_py() for k in keys)


def _count_below(table: pa.Table, keys: Sequence[str], bound: tuple[Any, ...]) -> int:
    """How many leading rows of ``table`` (sorted by ``keys``) have a key < ``bound``."""
    less: Any = None
    equal: Any = None
    for k, v in zip(keys, bound, strict=True):
        col = table.column(k)
        scalar = pa.scalar(v, type=col.type)
        lt = pc.less(col, scalar)
        eq = pc.equal(col, scalar)
        less = lt if less is None else pc.or_(less, pc.and_(equal, lt))
        equal = eq if equal is None else pc.and_(equal, eq)
    return int(pc.sum(less).as_py() or 0)


def merge_sorted(
    sources: Sequence[Iterator[pa.Table]], keys: Sequence[str], tie: str
) -> Iterator[pa.Table]:
    """k-way merge of ``sources`` (each yields tables sorted by ``keys`` then ``tie``, the
    same schema): yields tables sorted by (keys, tie), every row of a key in one of them.

    Each round takes, from every source, the rows below the smallest of the sources' last
    buffered keys (no source can still bring such a key), sorts them and yields them; the
    sources holding that smallest key read their next batch.

    >>> a = iter([pa.table({"k": [1, 3], "t": [0, 1]}), pa.table({"k": [3, 5], "t": [2, 3]})])
    >>> b = iter([pa.table({"k": [3, 4], "t": [4, 5]})])
    >>> [t.to_pydict()["k"] for t in merge_sorted([a, b], ["k"], "t")]
    [[1], [3, 3, 3], [4], [5]]
    """
    pending: list[pa.Table | None] = []
    live: list[bool] = []
    for s in sources:
        first = _next_nonempty(s)
        pending.append(first)
        live.append(first is not None)
    order = [(k, "ascending") for k in [*keys, tie]]
    while any(p is not None for p in pending):
        open_ = [i for i, p in enumerate(pending) if p is not None and live[i]]
        if not open_:  # every source read to its end: the rest in one go
            rest = pa.concat_tables([p for p in pending if p is not None])
            yield rest.take(pc.sort_indices(rest, sort_keys=order))
            return
        lasts = {i: _key_at(pending[i], keys, len(pending[i]) - 1) for i in open_}  # type: ignore[arg-type]
        bound = min(lasts.values())
        out: list[pa.Table] = []
        for i, p in enumerate(pending):
            if p is None:
                continue
            n = _count_below(p, keys, bound)
            if n:
                out.append(p.slice(0, n))
                pending[i] = p.slice(n) if n < len(p) else None
        if out:
            chunk = pa.concat_tables(out)
            yield chunk.take(pc.sort_indices(chunk, sort_keys=order))
        for i in open_:
            if lasts[i] != bound:
                continue
            nxt = _next_nonempty(sources[i])
            if nxt is None:
                live[i] = False
            else:
                held = pending[i]
                pending[i] = nxt if held is None else pa.concat_tables([held, nxt])


def _next_nonempty(source: Iterator[pa.Table]) -> pa.Table | None:
    for t in source:
        if t.num_rows:
            return t
    return None
