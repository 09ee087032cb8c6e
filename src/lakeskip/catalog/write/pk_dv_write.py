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
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyroaring import BitMap

from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate, drop_deleted
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.kind import PkRaw
from lakeskip.catalog.pk.merge_engine import FIRST_ROW, MergeEngine, dedupe_latest
from lakeskip.catalog.pk.primary_key import (
    SEQUENCE_NUMBER,
    TOP_LEVEL,
    VALUE_KIND,
    RowKind,
    schema_key_layout,
)
from lakeskip.catalog.write.data_writer import (
    BUCKET_COLUMN,
    DataWriter,
    WriteSpec,
    write_kv_data_file,
)
from lakeskip.catalog.write.sort_buffer import ARRIVAL
from lakeskip.errors import CorruptDeletionVectorError
from lakeskip.index.primitives.roaring import bitmap_of, serialize_bitmap

if TYPE_CHECKING:
    from lakeskip.catalog.table import FileStoreTable

__all__ = [
    "DELETE_FLAG",
    "BucketFile",
    "BucketWrite",
    "PkDvSpec",
    "PkDvWriter",
    "dv_update",
    "iter_versions",
    "latest_alive",
    "pk_dv_spec",
    "read_versions",
    "write_bucket",
]

_MEMORY_RATIO = 3.0  # Arrow bytes per Parquet byte: how many rows one rolled file gets
_POS = "__lakeskip_pos"
#: MERGE on a DV primary-key table: a row whose key is deleted, not rewritten
DELETE_FLAG = "__lakeskip_delete"
_ALIVE_KINDS = pa.array([int(RowKind.INSERT), int(RowKind.UPDATE_AFTER)], pa.int8())

BucketKey = tuple[tuple[Any, ...], int]


@dataclass(frozen=True, slots=True)
class BucketFile:
    """One live file of a bucket as the driver saw it: path, entry, its DV (portable
    RoaringBitmap bytes, ``None``: no DV) and the index file that held it (the commit's
    conflict check)."""

    path: str
    entry: ManifestEntry
    deleted: bytes | None = None
    index_file: str | None = None


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


def read_versions(spec: WriteSpec, path: str, deleted: bytes | None) -> pa.Table:
    """One key-value file's versions: the table's columns (missing ones as NULL: older
    schema) plus sequence number and kind, without the positions its DV deletes."""
    arrow = spec.schema.row_type.to_arrow()
    with spec.file_io.open_input(path) as src:
        data = pq.read_table(src)
    data = drop_deleted(data, deleted, path)
    n = data.num_rows
    columns = {
        f.name: (data[f.name].cast(f.type) if f.name in data.column_names else pa.nulls(n, f.type))
        for f in arrow
    }
    columns[SEQUENCE_NUMBER] = data[SEQUENCE_NUMBER].cast(pa.int64())
    columns[VALUE_KIND] = data[VALUE_KIND].cast(pa.int8())
    return pa.table(columns)


def iter_versions(
    spec: WriteSpec, path: str, deleted: bytes | None, batch_rows: int
) -> Iterator[pa.Table]:
    """:func:`read_versions` a batch of at most ``batch_rows`` rows at a time (positions
    its DV deletes left out), for merges that must not hold a whole file."""
    arrow = spec.schema.row_type.to_arrow()
    dead = np.empty(0, dtype=np.int64)
    if deleted is not None:
        dead = np.asarray(BitMap.deserialize(deleted).to_array(), dtype=np.int64)
    with spec.file_io.open_input(path) as src:
        reader = pq.ParquetFile(src)
        if len(dead) and int(dead.max()) >= reader.metadata.num_rows:
            raise CorruptDeletionVectorError(
                f"deletion vector of {path} deletes row {int(dead.max())} of "
                f"{reader.metadata.num_rows}"
            )
        start = 0
        for batch in reader.iter_batches(batch_size=batch_rows):
            data = pa.Table.from_batches([batch])
            n = data.num_rows
            if len(dead):
                lo, hi = np.searchsorted(dead, [start, start + n])
                if hi > lo:
                    mask = np.ones(n, dtype=bool)
                    mask[dead[lo:hi] - start] = False
                    data = data.filter(pa.array(mask))
            start += n
            m = data.num_rows
            columns = {
                f.name: (
                    data[f.name].cast(f.type)
                    if f.name in data.column_names
                    else pa.nulls(m, f.type)
                )
                for f in arrow
            }
            columns[SEQUENCE_NUMBER] = data[SEQUENCE_NUMBER].cast(pa.int64())
            columns[VALUE_KIND] = data[VALUE_KIND].cast(pa.int8())
            yield pa.table(columns)


def latest_alive(
    parts: Sequence[pa.Table], key_columns: Sequence[str], *, first_row: bool = False
) -> pa.Table:
    """Deduplicate merge of versions: per key the largest sequence number wins, and a key
    whose newest version is ``-U``/``-D`` has no row (``first_row``: the oldest +I/+U
    version wins instead). Sorted by key."""
    # the same columns, but nullability differs between files read and rows written
    schema = pa.schema([f.with_nullable(True) for f in parts[0].schema])
    merged = pa.concat_tables([p.cast(schema) for p in parts])
    if first_row:
        engine = MergeEngine(FIRST_ROW)
        return engine.merge_versions(merged, key_columns, SEQUENCE_NUMBER, VALUE_KIND)
    merged = merged.take(pc.sort_indices(merged, sort_keys=[(SEQUENCE_NUMBER, "ascending")]))
    latest = dedupe_latest(merged, key_columns)
    return latest.filter(pc.is_in(latest[VALUE_KIND], _ALIVE_KINDS))


def _stored_keys(spec: WriteSpec, f: BucketFile, schema: pa.Schema) -> pa.Table:
    """The key columns of ``f`` (trimmed names, cast to ``schema``) with each row's position
    in the file as :data:`_POS`."""
    layout = schema_key_layout(spec.schema)
    with spec.file_io.open_input(f.path) as src:
        stored = pq.read_table(src, columns=list(layout.key_columns))
    stored = stored.rename_columns(list(layout.trimmed)).cast(schema)
    return stored.append_column(_POS, pa.array(np.arange(stored.num_rows, dtype=np.int64)))


def _positions_of(spec: WriteSpec, f: BucketFile, keys: pa.Table) -> np.ndarray:
    """Positions in ``f`` of rows whose key is in ``keys`` (trimmed key column names)."""
    layout = schema_key_layout(spec.schema)
    stored = _stored_keys(spec, f, keys.schema)
    hits = stored.join(keys, list(layout.trimmed), join_type="inner", use_threads=False)
    return np.asarray(hits[_POS].to_numpy(), dtype=np.int64)


def _dedupe_first(rows: pa.Table, key_columns: Sequence[str]) -> pa.Table:
    """The first row of each key (arrival order), sorted by key."""
    return dedupe_latest(rows.take(pa.array(np.arange(rows.num_rows)[::-1])), key_columns)


def _new_keys_only(spec: WriteSpec, files: Sequence[BucketFile], rows: pa.Table) -> pa.Table:
    """First-row: ``rows`` without those whose key is live in the bucket's files at level >
    0 (level 0 is written by others and unseen by Paimon's batch reads, as here)."""
    layout = schema_key_layout(spec.schema)
    keys = rows.select(list(layout.trimmed))
    taken = np.zeros(rows.num_rows, dtype=bool)
    for f in files:
        if f.entry.file.level == 0 or not rows.num_rows:
            continue
        # positions its DV deletes are not live
        stored = drop_deleted(_stored_keys(spec, f, keys.schema), f.deleted, f.path)
        stored = stored.drop_columns([_POS])
        probe = keys.append_column(_POS, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        hits = probe.join(stored, list(layout.trimmed), join_type="inner", use_threads=False)
        taken[np.asarray(hits[_POS].to_numpy(), dtype=np.int64)] = True
    return rows.filter(pa.array(~taken)) if taken.any() else rows


def write_bucket(
    spec: PkDvSpec,
    partition: tuple[Any, ...],
    normalized: tuple[Any, ...],
    bucket: int,
    total_buckets: int,
    rows: pa.Table,
    name_prefix: str,
) -> BucketWrite:
    """Write the rows of one bucket (layout in the module doc); runs in the bucket's task."""
    ws = spec.write
    layout = schema_key_layout(ws.schema)
    files = spec.buckets.get((normalized, bucket), ())
    if spec.first_row:
        rows = _new_keys_only(ws, files, _dedupe_first(rows, layout.trimmed))
    else:
        rows = dedupe_latest(rows, layout.trimmed)
    keys = rows.select(list(layout.trimmed))
    if DELETE_FLAG in rows.column_names:  # MERGE: a deleted key is only marked
        gone = pc.fill_null(rows[DELETE_FLAG], False)
        rows = rows.filter(pc.invert(gone)).drop_columns([DELETE_FLAG])
    removed: list[ManifestEntry] = []
    vectors: dict[str, bytes] = {}
    dvs: dict[str, bytes | None] = {}
    marked = 0
    staying: list[BucketFile] = []
    for f in files:
        old = BitMap.deserialize(f.deleted) if f.deleted is not None else BitMap()
        if f.entry.file.level == 0:  # not visible to DV readers; only compaction merges it
            staying.append(f)
            dvs[f.entry.file.file_name] = f.deleted
            continue
        # first-row: the rows left have keys no file holds, so there is nothing to mark
        looked_up = keys.num_rows and not spec.first_row
        hits = bitmap_of(_positions_of(ws, f, keys)) if looked_up else BitMap()
        new = hits - old
        if not new:
            staying.append(f)
            dvs[f.entry.file.file_name] = f.deleted
            continue
        marked += len(new)
        full = old | new
        if len(full) >= f.entry.file.row_count:
            removed.append(f.entry)  # nothing left: drop the file rather than a full DV
            continue
        data = serialize_bitmap(full)
        vectors[f.entry.file.file_name] = data
        dvs[f.entry.file.file_name] = data
        staying.append(f)
    emptied = len(removed)
    if spec.delete or rows.num_rows == 0:
        return BucketWrite((), tuple(removed), vectors, marked, emptied)
    first = ws.next_sequence.get((normalized, bucket), 0)
    levels = {f.entry.file.level for f in staying}
    versions: tuple[pa.Array, pa.Array] | None = None
    out = rows
    if not levels:
        level = TOP_LEVEL
    elif min(levels) > 1:
        level = min(levels) - 1
    else:
        # level 1 taken (or level-0 files, written by others, to fold in): the new rows are
        # the newest level-0 run, and universal compaction's forced level-0 pick says which
        # runs they merge with and the level the merged run goes to (Paimon's lookup
        # compaction); the runs left out keep their files and DVs
        kinds = np.full(rows.num_rows, int(ws.value_kind), dtype=np.int8)
        fresh = rows.append_column(
            SEQUENCE_NUMBER,
            pa.array(np.arange(first, first + rows.num_rows, dtype=np.int64)),
        ).append_column(VALUE_KIND, pa.array(kinds))
        picked, level = _pick_runs(ws, staying, rows)
        parts = [read_versions(ws, f.path, dvs[f.entry.file.file_name]) for f in picked]
        merged = latest_alive([*parts, fresh], layout.trimmed, first_row=spec.first_row)
        gone = {f.entry.file.file_name for f in picked}
        removed.extend(f.entry for f in picked)
        # a file with a new DV that is compacted away takes its DV with it
        vectors = {n: v for n, v in vectors.items() if n not in gone}
        out = merged.select(ws.schema.row_type.names)
        versions = (
            merged[SEQUENCE_NUMBER].combine_chunks(),
            merged[VALUE_KIND].combine_chunks(),
        )
    added = _write_run(
        ws, out, versions, partition, bucket, total_buckets, first, level, name_prefix
    )
    return BucketWrite(tuple(added), tuple(removed), vectors, marked, emptied)


def _pick_runs(
    ws: WriteSpec, staying: Sequence[BucketFile], rows: pa.Table
) -> tuple[list[BucketFile], int]:
    """The bucket's files the new rows merge with, and the output level: the new rows as
    the newest level-0 run (Arrow bytes / 3 as its file size) before the bucket's runs,
    :func:`~lakeskip.catalog.write.universal.force_pick_l0`."""
    from lakeskip.catalog.write.universal import (
        Run,
        UniversalOptions,
        bucket_runs,
        force_pick_l0,
    )

    new = Run(0, max(1, int(rows.nbytes / _MEMORY_RATIO)), ())
    runs = [new, *bucket_runs([f.entry for f in staying])]
    unit = force_pick_l0(runs, UniversalOptions.of(ws.schema.options), TOP_LEVEL + 1)
    assert unit is not None  # the new run is at level 0
    names = set(unit.files)
    return [f for f in staying if f.entry.file.file_name in names], unit.output_level


def _write_run(
    ws: WriteSpec,
    rows: pa.Table,
    versions: tuple[pa.Array, pa.Array] | None,
    partition: tuple[Any, ...],
    bucket: int,
    total_buckets: int,
    first: int,
    level: int,
    name_prefix: str,
) -> list[ManifestEntry]:
    """One sorted run: ``rows`` (sorted, unique keys) rolled at ``target-file-size`` into
    files whose key ranges do not overlap."""
    if rows.num_rows == 0:
        return []
    pieces = max(1, math.ceil(rows.nbytes / (ws.target_file_size * _MEMORY_RATIO)))
    step = math.ceil(rows.num_rows / pieces)
    out = []
    for k, start in enumerate(range(0, rows.num_rows, step)):
        chunk = rows.slice(start, step)
        out.append(
            write_kv_data_file(
                ws,
                chunk,
                partition,
                f"data-{name_prefix}-{k}.parquet",
                bucket,
                total_buckets,
                first + start,
                versions=(
                    (versions[0].slice(start, step), versions[1].slice(start, step))
                    if versions is not None
                    else None
                ),
                level=level,
            )
        )
    return out


def pk_dv_spec(
    table: FileStoreTable, spec: WriteSpec, *, fresh: bool, mixed: bool = False
) -> PkDvSpec:
    """The live files of every bucket with their DVs (read and checked here, on the
    driver); ``fresh`` (INSERT OVERWRITE): no bucket state, the old files are replaced."""
    from lakeskip.catalog.table import normalize_partition

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
    from lakeskip.catalog.table import normalize_partition

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
    """A task's writer for a DV primary-key table: buffers every row of each of its buckets
    (a bucket's new rows must become one sorted run), then writes each bucket as
    :func:`write_bucket` says. ``close`` returns ADD entries; :attr:`changes` has the rest."""

    def __init__(self, spec: PkDvSpec, file_prefix: str | None = None) -> None:
        super().__init__(spec.write, file_prefix)
        self.dv_spec = spec
        self.changes: list[BucketWrite] = []

    def write(self, data: pa.Table | pa.RecordBatch) -> list[ManifestEntry]:
        from lakeskip.catalog.write.data_writer import _conform

        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if table.num_rows == 0:
            return []
        table, buckets = self._take_buckets(table)
        flag = None
        if self.dv_spec.mixed:  # MERGE: the trailing delete flag rides along with each row
            flag = table.column(table.num_columns - 1).cast(pa.bool_())
            table = table.remove_column(table.num_columns - 1)
        table = _conform(table, self.arrow_schema)
        if flag is not None:
            table = table.append_column(DELETE_FLAG, flag)
        if buckets is not None:
            table = table.append_column(BUCKET_COLUMN, buckets)
        assert self.sort is not None
        for key, part in self._split_buckets(self._split(table)):
            self.sort.add(key, part)  # spills sorted runs past write-buffer-size
        return []

    def close(self) -> list[ManifestEntry]:
        from lakeskip.catalog.table import normalize_partition

        assert self.sort is not None
        try:
            for partition, bucket in sorted(self.sort.bucket_keys(), key=repr):
                normalized = normalize_partition(self.spec.schema, partition)
                # whole keys in arrival order: each chunk deduplicated as write_bucket
                # deduplicates (which then finds nothing more to drop), so the bucket's
                # unique new rows are held, not every row the task received
                keys = schema_key_layout(self.spec.schema).trimmed
                dedupe = _dedupe_first if self.dv_spec.first_row else dedupe_latest
                chunks = [
                    dedupe(c.drop_columns([ARRIVAL]), keys)
                    for c in self.sort.drain((partition, bucket))
                ]
                result = write_bucket(
                    self.dv_spec,
                    partition,
                    normalized,
                    bucket,
                    self.total_buckets,
                    pa.concat_tables(chunks),
                    self._next_name().removesuffix(".parquet").removeprefix("data-"),
                )
                self.changes.append(result)
                self.written.extend(result.added)
        finally:
            self.sort.close()
        self._write_hash_index()
        return list(self.written)
