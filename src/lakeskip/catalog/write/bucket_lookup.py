"""A bucket's live files as a write reads them: their versions minus their deletion vectors
(:func:`read_versions`, batch by batch :func:`iter_versions`), their keys looked up in key
order (:class:`KeyCursor` per file, :class:`RunCursor` per sorted run, :func:`sorted_runs`),
and the deduplicate merge of versions (:func:`latest_alive`).

Used by the deletion-vector write of primary-key tables
(:mod:`lakeskip.catalog.write.pk_dv_write`) and by compaction
(:mod:`lakeskip.procedures.pk_compact`); memory stays about one batch per open file, however
big the file.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyroaring import BitMap

from lakeskip.catalog.field_mapping import kv_by_id, kv_key_columns
from lakeskip.catalog.format.binary_row import deserialize_row
from lakeskip.catalog.format.deletion_vectors import drop_deleted
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.pk.merge_engine import FIRST_ROW, MergeEngine, dedupe_latest
from lakeskip.catalog.pk.primary_key import (
    SEQUENCE_NUMBER,
    VALUE_KIND,
    RowKind,
    schema_key_layout,
)
from lakeskip.catalog.write.sort_buffer import _count_below, _key_at
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import CorruptDeletionVectorError

__all__ = [
    "PROBE_ROW",
    "BucketFile",
    "KeyCursor",
    "RunCursor",
    "iter_versions",
    "latest_alive",
    "read_versions",
    "sorted_runs",
]

_POS = "__lakeskip_pos"
#: the column numbering a lookup's probe rows (:meth:`KeyCursor.match` answers in it)
PROBE_ROW = "__lakeskip_row"
_ALIVE_KINDS = pa.array([int(RowKind.INSERT), int(RowKind.UPDATE_AFTER)], pa.int8())


@dataclass(frozen=True, slots=True)
class BucketFile:
    """One live file of a bucket as the driver saw it: path, entry, its DV (portable
    RoaringBitmap bytes, ``None``: no DV) and the index file that held it (the commit's
    conflict check)."""

    path: str
    entry: ManifestEntry
    deleted: bytes | None = None
    index_file: str | None = None


def read_versions(
    spec: WriteSpec, path: str, deleted: bytes | None, schema_id: int | None = None
) -> pa.Table:
    """One key-value file's versions: the table's columns (missing ones as NULL: older
    schema) plus sequence number and kind, without the positions its DV deletes.
    ``schema_id``: the schema the file was written with (its columns mapped by field id)."""
    arrow = spec.schema.row_type.to_arrow()
    with spec.file_io.open_input(path) as src:
        data = pq.read_table(src)
    data = drop_deleted(data, deleted, path)
    if schema_id is not None:  # written under another schema: its columns by field id
        data = kv_by_id(data, spec.file_schema(schema_id), spec.schema)
    n = data.num_rows
    columns = {
        f.name: (data[f.name].cast(f.type) if f.name in data.column_names else pa.nulls(n, f.type))
        for f in arrow
    }
    columns[SEQUENCE_NUMBER] = data[SEQUENCE_NUMBER].cast(pa.int64())
    columns[VALUE_KIND] = data[VALUE_KIND].cast(pa.int8())
    return pa.table(columns)


def iter_versions(
    spec: WriteSpec,
    path: str,
    deleted: bytes | None,
    batch_rows: int,
    schema_id: int | None = None,
) -> Iterator[pa.Table]:
    """:func:`read_versions` a batch of at most ``batch_rows`` rows at a time (positions
    its DV deletes left out), for merges that must not hold a whole file."""
    arrow = spec.schema.row_type.to_arrow()
    stored = spec.file_schema(schema_id) if schema_id is not None else spec.schema
    # the DV stays a bitmap: each batch takes the positions in its own range
    dead = BitMap.deserialize(deleted) if deleted is not None else BitMap()
    with spec.file_io.open_input(path) as src:
        reader = pq.ParquetFile(src)
        if dead and dead.max() >= reader.metadata.num_rows:
            raise CorruptDeletionVectorError(
                f"deletion vector of {path} deletes row {dead.max()} of {reader.metadata.num_rows}"
            )
        start = 0
        for batch in reader.iter_batches(batch_size=batch_rows):
            data = pa.Table.from_batches([batch])
            n = data.num_rows
            gone = _window(dead, start, n)
            if len(gone):
                mask = np.ones(n, dtype=bool)
                mask[gone - start] = False
                data = data.filter(pa.array(mask))
            start += n
            data = kv_by_id(data, stored, spec.schema)  # an older file: columns by field id
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


def _window(bitmap: BitMap, start: int, n: int) -> np.ndarray:
    """The positions of ``bitmap`` in ``[start, start + n)``, sorted."""
    if not bitmap or not bitmap.range_cardinality(start, start + n):
        return np.empty(0, dtype=np.int64)
    return np.asarray((bitmap & BitMap(range(start, start + n))).to_array(), dtype=np.int64)


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


class KeyCursor:
    """The keys of one file at level > 0 (sorted, unique), read a batch of key columns at a
    time in step with the new rows' key-sorted chunks: :meth:`match` joins a chunk with the
    file rows that can hold its keys and drops the rows below its last key, so a cursor holds
    about one batch however big the file."""

    def __init__(
        self, spec: WriteSpec, f: BucketFile, key_schema: pa.Schema, batch_rows: int
    ) -> None:
        self.spec = spec
        self.file = f
        self.key_schema = key_schema
        self.batch_rows = batch_rows
        self.layout = schema_key_layout(spec.schema)
        self.held: pa.Table | None = None
        self.read = 0  # rows of the file read so far (the next batch's first position)
        self.done = False
        self.hits = BitMap()  # positions matched so far (latest-row writes)
        self.deleted = BitMap.deserialize(f.deleted) if f.deleted is not None else BitMap()
        self._source: Any = None
        self._batches: Iterator[pa.RecordBatch] | None = None

    def _next(self) -> pa.Table | None:
        if self.done:
            return None
        if self._batches is None:
            self._source = self.spec.file_io.open_input(self.file.path)
            reader = pq.ParquetFile(self._source)
            # the file's own key column names (a key renamed since: by field id)
            stored = self.spec.file_schema(self.file.entry.file.schema_id)
            self._batches = reader.iter_batches(
                batch_size=self.batch_rows,
                columns=list(kv_key_columns(stored, self.spec.schema)),
            )
        batch = next(self._batches, None)
        if batch is None:
            self.close()
            return None
        data = pa.Table.from_batches([batch]).rename_columns(list(self.layout.trimmed))
        data = data.cast(self.key_schema)
        n = data.num_rows
        data = data.append_column(_POS, pa.array(np.arange(self.read, self.read + n)))
        self.read += n
        return data

    def match(self, probe: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """(probe rows, file positions) of the keys of ``probe`` (sorted, unique keys above
        every earlier probe's, plus :data:`PROBE_ROW`) that the file holds (DV not applied)."""
        keys = list(self.layout.trimmed)
        bound = _key_at(probe, keys, probe.num_rows - 1)
        rows: list[np.ndarray] = []
        positions: list[np.ndarray] = []
        while True:
            if self.held is None:
                self.held = self._next()
                if self.held is None:
                    break
            hits = probe.join(self.held, keys, join_type="inner", use_threads=False)
            if hits.num_rows:
                rows.append(np.asarray(hits[PROBE_ROW].to_numpy(), dtype=np.int64))
                positions.append(np.asarray(hits[_POS].to_numpy(), dtype=np.int64))
            below = _count_below(self.held, keys, bound)
            if below < self.held.num_rows:  # rows from the bound on: later chunks' keys
                self.held = self.held.slice(below)
                break
            self.held = None
        if not rows:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty
        return np.concatenate(rows), np.concatenate(positions)

    def close(self) -> None:
        self.done = True
        self.held = None
        self._batches = None
        if self._source is not None:
            self._source.close()
            self._source = None


def sorted_runs(spec: WriteSpec, files: Sequence[BucketFile]) -> list[list[BucketFile]]:
    """``files`` as sorted runs to read one file after another: the files of a level > 0
    in key order when their key ranges (``min_key``/``max_key``) are disjoint, as Paimon's
    levels are; every other file (level 0, overlapping ranges) a run of its own. Reading a
    run file by file keeps one file of it open, however many the bucket has."""
    layout = schema_key_layout(spec.schema)
    types = list(layout.types)
    by_level: dict[int, list[BucketFile]] = {}
    out: list[list[BucketFile]] = []
    for f in files:
        if f.entry.file.level == 0:
            out.append([f])
        else:
            by_level.setdefault(f.entry.file.level, []).append(f)
    for level in sorted(by_level):
        group = by_level[level]
        try:
            ranges = [
                (
                    tuple(deserialize_row(f.entry.file.min_key, types)),
                    tuple(deserialize_row(f.entry.file.max_key, types)),
                    f,
                )
                for f in group
            ]
            ranges.sort(key=lambda r: r[0])
            disjoint = all(a[1] < b[0] for a, b in itertools.pairwise(ranges))
        except Exception:  # keys that do not decode or compare: no order is assumed
            disjoint = False
        if disjoint:
            out.append([f for _, _, f in ranges])
        else:
            out.extend([f] for f in group)
    return out


class RunCursor:
    """The :class:`KeyCursor` of each file of one sorted run, used one after the other:
    a file is opened when the chunks' keys reach it and closed once read to its end."""

    def __init__(self, cursors: list[KeyCursor]) -> None:
        self.cursors = cursors
        self.at = 0

    def match(self, probe: pa.Table) -> list[tuple[KeyCursor, np.ndarray, np.ndarray]]:
        out = []
        while self.at < len(self.cursors):
            c = self.cursors[self.at]
            found, positions = c.match(probe)
            if len(found):
                out.append((c, found, positions))
            if not c.done:  # it holds keys from the probe's last one on
                break
            self.at += 1
        return out

    def close(self) -> None:
        for c in self.cursors:
            c.close()
