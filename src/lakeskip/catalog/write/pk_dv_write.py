"""Writes to primary-key tables with deletion vectors (``deletion-vectors.enabled``).

Paimon reads such a table *without merging*: batch scans skip level-0 files and read every
file at level > 0 as it is, minus its deletion vector (``CoreOptions.batchScanSkipLevel0``,
``DataSplit.convertToRawFiles``; pypaimon's ``PrimaryKeyTableSplitGenerator`` takes the raw
path only when no file of the bucket is at level 0 or holds ``-U``/``-D`` rows). A write must
therefore leave, per bucket, exactly one live version of every key in files at level > 0, and
no retract rows. Paimon gets there with lookup compaction after each write; lakeskip does it
in the Spark task that owns the bucket::

    new rows of a bucket (deduplicated, sorted by key)
      │ lookup: the bucket's files at level > 0, key columns only, positions not yet deleted
      ▼
    positions of the same keys ──► added to those files' DVs (a file left with no live row
                                   is removed instead)
      │
      ├─ DELETE: nothing else is written (no -D row)
      ├─ the bucket is empty          ─► new file(s) at the top level (num-levels - 1 = 5)
      ├─ lowest used level L > 1      ─► new file(s) at level L - 1 (newer data lower, one
      │                                  sorted run per level: the LSM invariant Paimon's
      │                                  readers and writers rely on)
      └─ level 1 is taken             ─► the new rows as the newest level-0 run, merged with
                                         the runs universal compaction's forced level-0
                                         pick adds (size ratio; level 1 always): their live
                                         rows (DVs applied) and the new rows become one
                                         sorted run at the pick's output level; the picked
                                         files and DVs go, the big old runs stay

Sequence numbers continue per bucket as in non-DV writes, so the newest version also wins
where a reader does merge (compaction, level-0 files written by others).

Memory stays within the table's write buffer (``write-buffer-size``), whatever the bucket's
size: the new rows come from the task's sort buffer (sorted runs spilled to local disk,
merged back in chunks of whole keys); each chunk is deduplicated and looked up against a
batch of key columns per file (:class:`~lakeskip.catalog.write.bucket_lookup.KeyCursor`, advancing
in key order; the files of a level are one sorted run, opened one after the other:
:func:`~lakeskip.catalog.write.bucket_lookup.sorted_runs`); the rows to
write wait in a spool (memory up to half the buffer, then an Arrow IPC file beside the sort
runs); the merge with the picked runs reads a batch per run; and the output is streamed to
Parquet a row group at a time (:class:`~lakeskip.catalog.write.rolling_writer.RollingWriter`).
What grows with the bucket is the DVs (a roaring bitmap per file).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.kind import PkRaw
from lakeskip.catalog.partitions import normalize_partition
from lakeskip.catalog.pk.merge_engine import dedupe_latest
from lakeskip.catalog.pk.primary_key import (
    SEQUENCE_NUMBER,
    TOP_LEVEL,
    VALUE_KIND,
    RowKind,
    schema_key_layout,
)
from lakeskip.catalog.write.bucket_lookup import (
    PROBE_ROW,
    BucketFile,
    KeyCursor,
    RunCursor,
    iter_versions,
    latest_alive,
    sorted_runs,
)
from lakeskip.catalog.write.data_writer import BUCKET_COLUMN, DataWriter, conform
from lakeskip.catalog.write.rolling_writer import RollingWriter
from lakeskip.catalog.write.sort_buffer import ARRIVAL, BufferOptions, merge_sorted
from lakeskip.catalog.write.spool import Spool
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.index.primitives.roaring import bitmap_of, serialize_bitmap

if TYPE_CHECKING:
    from lakeskip.catalog.table import FileStoreTable

__all__ = [
    "DELETE_FLAG",
    "BucketWrite",
    "PkDvSpec",
    "PkDvWriter",
    "dv_update",
    "pk_dv_spec",
    "write_bucket",
]

_MEMORY_RATIO = 3.0  # Arrow bytes per Parquet byte: the new rows' run size for the pick
#: MERGE on a DV primary-key table: a row whose key is deleted, not rewritten
DELETE_FLAG = "__lakeskip_delete"

BucketKey = tuple[tuple[Any, ...], int]


@dataclass(frozen=True, slots=True)
class PkDvSpec:
    """What a write task of a DV primary-key table needs.

    Attributes:
        write: the table's write spec (``value_kind``, ``next_sequence`` per bucket).
        buckets: (normalized partition, bucket) -> the bucket's live files; a bucket not
            listed is empty (INSERT OVERWRITE passes none: the old files are replaced).
        delete: DELETE: only mark the keys' live positions, write no rows.
        mixed: MERGE: each row carries a trailing :data:`DELETE_FLAG` column; every row's
            key marks its older versions, only the rows not flagged are written.
        first_row: ``merge-engine = first-row``: the older version wins -- a row whose key
            is already live in the bucket is dropped, nothing is marked.
    """

    write: WriteSpec
    buckets: Mapping[BucketKey, tuple[BucketFile, ...]] = field(default_factory=dict)
    delete: bool = False
    mixed: bool = False
    first_row: bool = False


@dataclass(frozen=True, slots=True)
class BucketWrite:
    """What one bucket's write produced.

    Attributes:
        added: new files (ADD entries).
        removed: files of the bucket that leave the table (all rows deleted, or compacted).
        vectors: data file name -> its complete new DV (old positions | new ones), portable
            bytes; only files that stay.
        marked: how many live positions were newly deleted.
        emptied: how many of ``removed`` left because every row is now deleted (the others
            were compacted: their live rows are in ``added``).
    """

    added: tuple[ManifestEntry, ...] = ()
    removed: tuple[ManifestEntry, ...] = ()
    vectors: Mapping[str, bytes] = field(default_factory=dict)
    marked: int = 0
    emptied: int = 0


def _gathered(chunks: Iterable[pa.Table], nbytes: int) -> Iterator[pa.Table]:
    """Consecutive ``chunks`` (key-sorted, whole keys each) joined until at least ``nbytes``
    (the lookup and dedupe cost per call, not per row)."""
    held: list[pa.Table] = []
    size = 0
    for c in chunks:
        if c.num_rows == 0:
            continue
        held.append(c)
        size += c.nbytes
        if size >= nbytes:
            yield pa.concat_tables(held) if len(held) > 1 else held[0]
            held, size = [], 0
    if held:
        yield pa.concat_tables(held) if len(held) > 1 else held[0]


def _dedupe_first(rows: pa.Table, key_columns: Sequence[str]) -> pa.Table:
    """The first row of each key (arrival order), sorted by key."""
    return dedupe_latest(rows.take(pa.array(np.arange(rows.num_rows)[::-1])), key_columns)


def write_bucket(
    spec: PkDvSpec,
    partition: tuple[Any, ...],
    normalized: tuple[Any, ...],
    bucket: int,
    total_buckets: int,
    chunks: Iterable[pa.Table],
    name_prefix: str,
    *,
    buffer: BufferOptions | None = None,
    spill: Callable[[], str] | None = None,
    clock: Any = None,
) -> BucketWrite:
    """Write the rows of one bucket (layout in the module doc); runs in the bucket's task.

    ``chunks``: the bucket's new rows sorted by key, every row of a key in one chunk in
    arrival order (:meth:`~lakeskip.catalog.write.sort_buffer.SortBuffer.drain`). Streams
    in three passes, each in memory bounded by ``buffer`` (the table's write buffer):

    1. :func:`_look_up`: per chunk, the latest row per key (first-row: the first), looked up
       in the key columns of the bucket's files at level > 0 (a batch per file); the rows to
       write go to a spool (:class:`~lakeskip.catalog.write.spool.Spool`, local disk past
       half the buffer), and :func:`_mark` turns the positions found into DVs (first-row:
       rows whose key is live were dropped, nothing is marked);
    2. :func:`_output_level`: the output level from the files that stay (and universal
       compaction's pick);
    3. :func:`_write_spooled`: the spool, merged with the picked runs' live rows (a batch per
       file, :func:`~lakeskip.catalog.write.sort_buffer.merge_sorted`), streamed into files
       rolled at ``target-file-size`` (:class:`~lakeskip.catalog.write.rolling_writer.RollingWriter`).
    """
    ws = spec.write
    options = buffer if buffer is not None else BufferOptions.of(ws.schema.options)
    files = spec.buckets.get((normalized, bucket), ())
    cursors: list[KeyCursor] = []
    with _spill_paths(spill) as spill_path:
        spool = Spool(max(1, options.size // 2), spill_path)
        try:
            _look_up(spec, files, chunks, options, spool, cursors)
            for c in cursors:
                c.close()
            marks = _mark(files, cursors)
            removed, vectors = marks.removed, marks.vectors
            emptied = len(removed)
            if spec.delete or spool.rows == 0:
                return BucketWrite((), tuple(removed), vectors, marks.marked, emptied)
            level, picked, merge = _output_level(ws, marks.staying, spool.nbytes)
            writer = RollingWriter(
                ws,
                partition,
                bucket,
                total_buckets,
                (f"data-{name_prefix}-{k}.parquet" for k in range(1 << 62)).__next__,
                kv=True,
                level=level,
                first_sequence=ws.next_sequence.get((normalized, bucket), 0),
                clock=clock,
            )
            added = _write_spooled(
                spec, writer, spool, picked if merge else None, marks.dvs, options
            )
            gone = {f.entry.file.file_name for f in picked}
            removed.extend(f.entry for f in picked)
            # a file with a new DV that is compacted away takes its DV with it
            vectors = {n: v for n, v in vectors.items() if n not in gone}
            return BucketWrite(tuple(added), tuple(removed), vectors, marks.marked, emptied)
        finally:
            for c in cursors:
                c.close()
            spool.close()


@contextmanager
def _spill_paths(spill: Callable[[], str] | None) -> Iterator[Callable[[], str]]:
    """``spill``, or new paths in a temporary folder of this write's, removed at the end."""
    if spill is not None:
        yield spill
        return
    own_dir = tempfile.mkdtemp(prefix="lakeskip-dv-")
    counter = iter(range(1 << 62))
    try:
        yield lambda: os.path.join(own_dir, f"spool-{next(counter)}.arrow")
    finally:
        shutil.rmtree(own_dir, ignore_errors=True)


def _look_up(
    spec: PkDvSpec,
    files: Sequence[BucketFile],
    chunks: Iterable[pa.Table],
    options: BufferOptions,
    spool: Spool,
    cursors: list[KeyCursor],
) -> None:
    """Pass 1: each chunk's rows deduplicated, looked up in the files at level > 0 (each
    file's cursor, appended to ``cursors``, records the positions it matched), the rows to
    write added to ``spool`` (DELETE: none)."""
    ws = spec.write
    keys = list(schema_key_layout(ws.schema).trimmed)
    key_batch = max(1024, options.read_batch_bytes // 32)
    runs: list[RunCursor] = []
    for chunk in _gathered(chunks, max(options.read_batch_bytes, options.size // 16)):
        rows = (_dedupe_first if spec.first_row else dedupe_latest)(chunk, keys)
        probe = rows.select(keys)
        probe = probe.append_column(PROBE_ROW, pa.array(np.arange(rows.num_rows)))
        if not runs and files:
            key_schema = probe.select(keys).schema
            looked_up = [f for f in files if f.entry.file.level > 0]  # level 0: unseen
            for run in sorted_runs(ws, looked_up):
                run_cursors = [KeyCursor(ws, f, key_schema, key_batch) for f in run]
                cursors.extend(run_cursors)
                runs.append(RunCursor(run_cursors))
        taken = np.zeros(rows.num_rows, dtype=bool) if spec.first_row else None
        for c, found, positions in (m for r in runs for m in r.match(probe)):
            if taken is None:
                c.hits |= bitmap_of(positions)
            elif len(positions):
                # first-row: a key live in the bucket keeps its row; nothing is marked
                live = bitmap_of(positions) - c.deleted
                if live:
                    alive = np.asarray(live.to_array(), dtype=np.int64)
                    taken[found[np.isin(positions, alive)]] = True
        if taken is not None and taken.any():
            rows = rows.filter(pa.array(~taken))
        if DELETE_FLAG in rows.column_names:  # MERGE: a deleted key is only marked
            gone = pc.fill_null(rows[DELETE_FLAG], False)
            rows = rows.filter(pc.invert(gone)).drop_columns([DELETE_FLAG])
        if not spec.delete:
            spool.add(rows)


@dataclass(slots=True)
class _Marks:
    """What the lookup's matches do to the bucket's files.

    Attributes:
        removed: files left with no live row (dropped rather than given a full DV).
        vectors: data file name -> its complete new DV (old positions | new ones).
        dvs: every staying file's DV after this write (``None``: none).
        staying: the files that stay in the bucket.
        marked: how many live positions were newly deleted.
    """

    removed: list[ManifestEntry] = field(default_factory=list)
    vectors: dict[str, bytes] = field(default_factory=dict)
    dvs: dict[str, bytes | None] = field(default_factory=dict)
    staying: list[BucketFile] = field(default_factory=list)
    marked: int = 0


def _mark(files: Sequence[BucketFile], cursors: Sequence[KeyCursor]) -> _Marks:
    """Pass 1's positions found, added to each file's DV."""
    out = _Marks()
    found_in = {c.file.entry.file.file_name: c.hits for c in cursors}
    for f in files:
        name = f.entry.file.file_name
        old = BitMap.deserialize(f.deleted) if f.deleted is not None else BitMap()
        new = found_in.get(name, BitMap()) - old
        if not new:
            out.staying.append(f)
            out.dvs[name] = f.deleted
            continue
        out.marked += len(new)
        full = old | new
        if len(full) >= f.entry.file.row_count:
            out.removed.append(f.entry)  # nothing left: drop the file rather than a full DV
            continue
        data = serialize_bitmap(full)
        out.vectors[name] = data
        out.dvs[name] = data
        out.staying.append(f)
    return out


def _output_level(
    ws: WriteSpec, staying: Sequence[BucketFile], nbytes: int
) -> tuple[int, list[BucketFile], bool]:
    """Pass 2: (the new files' level, the files they merge with, whether they merge)."""
    levels = {f.entry.file.level for f in staying}
    if not levels:
        return TOP_LEVEL, [], False
    if min(levels) > 1:
        return min(levels) - 1, [], False
    # level 1 taken (or level-0 files, written by others, to fold in): the new rows are the
    # newest level-0 run, and universal compaction's forced level-0 pick says which runs
    # they merge with and the level the merged run goes to (Paimon's lookup compaction);
    # the runs left out keep their files and DVs
    picked, level = _pick_runs(ws, staying, nbytes)
    return level, picked, True


def _write_spooled(
    spec: PkDvSpec,
    writer: RollingWriter,
    spool: Spool,
    picked: Sequence[BucketFile] | None,
    dvs: Mapping[str, bytes | None],
    options: BufferOptions,
) -> list[ManifestEntry]:
    """Pass 3: the spooled rows (merged with the ``picked`` files' live rows, unless
    ``None``) into ``writer``; its entries (a failed write leaves no open file)."""
    try:
        if picked is not None:
            first = writer.next_sequence
            _merge_into(spec.write, writer, spool, picked, dvs, first, options, spec.first_row)
        else:
            for rows in spool:
                writer.write(rows)
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def _merge_into(
    ws: WriteSpec,
    writer: RollingWriter,
    spool: Spool,
    picked: Sequence[BucketFile],
    dvs: Mapping[str, bytes | None],
    first: int,
    options: BufferOptions,
    first_row: bool,
) -> None:
    """The spooled new rows (the newest run, sequence numbers from ``first``) merged with
    the live rows of the ``picked`` files, a batch of each at a time, into ``writer``."""
    layout = schema_key_layout(ws.schema)
    keys = list(layout.trimmed)
    arrow = ws.schema.row_type.to_arrow()
    common = pa.schema(
        [
            *(f.with_nullable(True) for f in arrow),
            pa.field(SEQUENCE_NUMBER, pa.int64()),
            pa.field(VALUE_KIND, pa.int8()),
        ]
    )
    kind = int(ws.value_kind)

    def fresh() -> Iterator[pa.Table]:
        seq = first
        for rows in spool:
            n = rows.num_rows
            out = rows.append_column(
                SEQUENCE_NUMBER, pa.array(np.arange(seq, seq + n, dtype=np.int64))
            ).append_column(VALUE_KIND, pa.array(np.full(n, kind, dtype=np.int8)))
            seq += n
            yield out.cast(common)

    def conformed(source: Iterator[pa.Table]) -> Iterator[pa.Table]:
        for t in source:
            yield t.cast(common)

    batch_rows = max(1024, options.read_batch_bytes // 64)

    def run_versions(run: list[BucketFile]) -> Iterator[pa.Table]:
        for f in run:  # one file of the sorted run open at a time
            yield from conformed(
                iter_versions(
                    ws, f.path, dvs[f.entry.file.file_name], batch_rows, f.entry.file.schema_id
                )
            )

    sources = [run_versions(run) for run in sorted_runs(ws, picked)]
    sources.append(fresh())
    names = ws.schema.row_type.names
    for chunk in merge_sorted(sources, keys, SEQUENCE_NUMBER):
        merged = latest_alive([chunk], keys, first_row=first_row)
        if merged.num_rows:
            writer.write(
                merged.select(names),
                (merged[SEQUENCE_NUMBER].combine_chunks(), merged[VALUE_KIND].combine_chunks()),
            )


def _pick_runs(
    ws: WriteSpec, staying: Sequence[BucketFile], nbytes: int
) -> tuple[list[BucketFile], int]:
    """The bucket's files the new rows merge with, and the output level: the new rows as
    the newest level-0 run (their Arrow bytes / 3 as its file size) before the bucket's
    runs, :func:`~lakeskip.catalog.write.universal.force_pick_l0`."""
    from lakeskip.catalog.write.universal import (
        Run,
        UniversalOptions,
        bucket_runs,
        force_pick_l0,
    )

    new = Run(0, max(1, int(nbytes / _MEMORY_RATIO)), ())
    runs = [new, *bucket_runs([f.entry for f in staying])]
    unit = force_pick_l0(runs, UniversalOptions.of(ws.schema.options), TOP_LEVEL + 1)
    assert unit is not None  # the new run is at level 0
    names = set(unit.files)
    return [f for f in staying if f.entry.file.file_name in names], unit.output_level


def pk_dv_spec(
    table: FileStoreTable, spec: WriteSpec, *, fresh: bool, mixed: bool = False
) -> PkDvSpec:
    """The live files of every bucket with their DVs (read and checked here, on the
    driver); ``fresh`` (INSERT OVERWRITE): no bucket state, the old files are replaced."""
    kind = table.kind
    assert isinstance(kind, PkRaw), f"{table.identifier} is not read raw"
    first_row = kind.merge.first_row
    snapshot = table.latest_snapshot()
    if fresh or snapshot is None:
        return PkDvSpec(
            spec, {}, delete=spec.value_kind is RowKind.DELETE, mixed=mixed, first_row=first_row
        )
    refs = table.deletion_files(snapshot)
    buckets: dict[tuple[tuple[Any, ...], int], list[BucketFile]] = {}
    for e in table.scan_files(snapshot):
        ref = refs.get(e.file.file_name)
        deleted = (
            serialize_bitmap(table.read_deletion_vector(ref, e.file.row_count))
            if ref is not None
            else None
        )
        key = (normalize_partition(table.schema, e.partition), e.bucket)
        buckets.setdefault(key, []).append(
            BucketFile(
                table.data_file_path(e), e, deleted, ref.index_file if ref is not None else None
            )
        )
    return PkDvSpec(
        spec,
        {k: tuple(v) for k, v in buckets.items()},
        delete=spec.value_kind is RowKind.DELETE,
        mixed=mixed,
        first_row=first_row,
    )


def dv_update(spec: PkDvSpec, changes: Sequence[BucketWrite]) -> DeletionVectorUpdate | None:
    """The commit's DV part: the new DVs; as base the DV each changed or removed file had
    when the write read it (another commit changing one meanwhile is a conflict, not a lost
    delete or a resurrected row); and as ``seen`` the files the lookup read in the buckets
    it adds to (a file another commit added there meanwhile is a conflict, not a key live
    twice)."""
    files = {f.entry.file.file_name: f for group in spec.buckets.values() for f in group}
    names = {n for c in changes for n in c.vectors} | {
        e.file.file_name for c in changes for e in c.removed
    }
    schema = spec.write.schema
    written = {
        (normalize_partition(schema, e.partition), e.bucket) for c in changes for e in c.added
    }
    if not names and not written:
        return None
    seen = frozenset(f.entry.file.file_name for k in written for f in spec.buckets.get(k, ()))
    base = {n: files[n].index_file for n in names}
    read = {n: BitMap.deserialize(d) for n in names if (d := files[n].deleted) is not None}
    vectors = {n: BitMap.deserialize(b) for c in changes for n, b in c.vectors.items()}
    return DeletionVectorUpdate(vectors, base, read, seen)


class PkDvWriter(DataWriter):
    """A task's writer for a DV primary-key table: every row of each of its buckets goes to
    the task's sort buffer (spilling sorted runs past ``write-buffer-size``; a bucket's new
    rows must become one sorted run), then each bucket is streamed as :func:`write_bucket`
    says. ``close`` returns ADD entries; :attr:`changes` has the rest."""

    def __init__(self, spec: PkDvSpec, file_prefix: str | None = None) -> None:
        super().__init__(spec.write, file_prefix)
        self.dv_spec = spec
        self.changes: list[BucketWrite] = []

    def write(self, data: pa.Table | pa.RecordBatch) -> list[ManifestEntry]:
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if table.num_rows == 0:
            return []
        table, buckets = self._take_buckets(table)
        flag = None
        if self.dv_spec.mixed:  # MERGE: the trailing delete flag rides along with each row
            flag = table.column(table.num_columns - 1).cast(pa.bool_())
            table = table.remove_column(table.num_columns - 1)
        table = conform(table, self.arrow_schema)
        if flag is not None:
            table = table.append_column(DELETE_FLAG, flag)
        if buckets is not None:
            table = table.append_column(BUCKET_COLUMN, buckets)
        assert self.sort is not None
        for key, part in self._split_buckets(self._split(table)):
            self.sort.add(key, part)  # spills sorted runs past write-buffer-size
        return []

    def close(self) -> list[ManifestEntry]:
        assert self.sort is not None
        try:
            for partition, bucket in sorted(self.sort.bucket_keys(), key=repr):
                normalized = normalize_partition(self.spec.schema, partition)
                # whole keys in arrival order (spilled runs merged back), streamed
                chunks = (c.drop_columns([ARRIVAL]) for c in self.sort.drain((partition, bucket)))
                result = write_bucket(
                    self.dv_spec,
                    partition,
                    normalized,
                    bucket,
                    self.total_buckets,
                    chunks,
                    self._next_name().removesuffix(".parquet").removeprefix("data-"),
                    buffer=self.sort.options,
                    spill=self.sort.spill_path,
                    clock=self._clock,
                )
                self.changes.append(result)
                self.written.extend(result.added)
        finally:
            self.sort.close()
        self._write_hash_index()
        return list(self.written)
