"""``DELETE`` and ``UPDATE`` on deletion-vector tables (``deletion-vectors.enabled``): merge-on-read.

No data file is rewritten::

    plan     the planner keeps the files that might hold a matching row (as copy-on-write)
    read     the files' current DVs, on the driver (checked; corrupt = the statement fails)
    find     Spark reads the kept files' live rows (DVs applied) with each row's file and
             position, and, per file, collects the positions where the condition is TRUE into
             a RoaringBitmap inside the tasks (one small row per affected file comes back)
    write    UPDATE only: the matched rows with their new values, through the INSERT write path
    commit   one OVERWRITE snapshot (no partition replaced): the new DVs (old | matched) in new
             index files, and UPDATE's new files. A file whose rows are now all deleted is
             removed from the snapshot instead of getting a DV.

The commit names the index file each DV was read from; if another commit changed one of them
in between (a concurrent DELETE, a compaction) it fails with
:class:`~lakeskip.errors.CommitConflictError` and the statement removes what it wrote, so deletes
are never lost nor rows resurrected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap
from pyspark.sql import DataFrame, SparkSession

from lakeskip.catalog.deletion_vectors import DeletionVectorUpdate
from lakeskip.catalog.manifest import ManifestEntry
from lakeskip.catalog.snapshot import CommitKind, Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.index._roaring import bitmap_of, serialize_bitmap
from lakeskip.spark.dv_read import FILE_COLUMN, POS_COLUMN, live_rows_frame, read_vectors
from lakeskip.spark.writer import align_by_position, write_entries
from lakeskip.types import RowType

__all__ = ["DvDmlOutcome", "dv_delete_update"]

_BITMAPS_SCHEMA = "file STRING, bitmap BINARY, n BIGINT"


@dataclass(frozen=True, slots=True)
class DvDmlOutcome:
    """What a merge-on-read DELETE/UPDATE did (``dml`` turns it into a ``DmlResult``)."""

    rows: int
    files_removed: int
    added: tuple[ManifestEntry, ...]
    snapshot_id: int | None


def _bitmaps(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Per data file, the matched positions as one serialised RoaringBitmap (in the task)."""
    files: dict[str, list[object]] = {}
    for b in batches:
        t = pa.Table.from_batches([b])
        for name in t.column(0).unique().to_pylist():
            mask = pc.equal(t.column(0), name)
            files.setdefault(name, []).append(t.column(1).filter(mask).to_numpy())
    out_names, out_maps, out_n = [], [], []
    for name, parts in files.items():
        bm = BitMap()
        for p in parts:
            bm |= bitmap_of(p)
        out_names.append(name)
        out_maps.append(serialize_bitmap(bm))
        out_n.append(len(bm))
    yield pa.record_batch(
        [
            pa.array(out_names, pa.string()),
            pa.array(out_maps, pa.binary()),
            pa.array(out_n, pa.int64()),
        ],
        names=["file", "bitmap", "n"],
    )


def dv_delete_update(
    spark: SparkSession,
    table: FileStoreTable,
    snapshot: Snapshot,
    candidates: Sequence[ManifestEntry],
    cond: str,
    alias_sql: str,
    updated_select: str | None,
    sql_over: Callable[[SparkSession, DataFrame, Callable[[str], str]], DataFrame],
    remove_files: Callable[[FileStoreTable, Sequence[ManifestEntry]], None],
    what: str,
) -> DvDmlOutcome:
    """Mark the rows of ``candidates`` where ``cond`` is TRUE as deleted; with
    ``updated_select`` (UPDATE) also append them with their new values.

    Raises:
        CommitConflictError: a DV read here was changed, or a file removed, concurrently.
        CorruptDeletionVectorError: a current DV cannot be read.
    """
    row_type: RowType = table.schema.row_type
    dvs = read_vectors(table, candidates, snapshot)
    frame = live_rows_frame(spark, table, candidates, dvs, with_position=True)
    matched_rows = sql_over(
        spark,
        frame,
        lambda view: f"SELECT {FILE_COLUMN}, {POS_COLUMN} FROM {view} {alias_sql} WHERE {cond}",
    )
    parts: dict[str, list[bytes]] = {}
    for r in matched_rows.mapInArrow(_bitmaps, _BITMAPS_SCHEMA).collect():
        if r["n"]:  # several tasks may each report part of one file
            parts.setdefault(str(r["file"]), []).append(bytes(r["bitmap"]))
    matched = merge_bitmaps(parts)
    if not matched:
        return DvDmlOutcome(0, 0, (), None)
    added: list[ManifestEntry] = []
    if updated_select is not None:
        new_rows = sql_over(
            spark, frame, lambda view: f"{updated_select} FROM {view} {alias_sql} WHERE {cond}"
        )
        added = write_entries(table, align_by_position(new_rows, row_type, what))
    by_name = {e.file.file_name: e for e in candidates}
    vectors: dict[str, BitMap] = {}
    removed: list[ManifestEntry] = []
    base: dict[str, str | None] = {}
    for name, bm in matched.items():
        full = bm | dvs.vectors.get(name, BitMap())
        base[name] = dvs.base.get(name)
        if len(full) >= by_name[name].file.row_count:
            removed.append(by_name[name])  # nothing left: drop the file, not a full DV
        else:
            vectors[name] = full
    rows = sum(len(bm) for bm in matched.values())
    try:
        snap = table.commit(
            added,
            deleted=removed,
            kind=CommitKind.OVERWRITE,
            overwrite_partitions=[],
            deletion_vectors=DeletionVectorUpdate(vectors, base, dvs.vectors),
        )
    except BaseException:
        remove_files(table, added)
        raise
    return DvDmlOutcome(rows, len(removed), tuple(added), snap.id if snap is not None else None)


def merge_bitmaps(parts: Mapping[str, Sequence[bytes]]) -> dict[str, BitMap]:
    """Union per file of serialised bitmaps (tasks may each report part of a file)."""
    out: dict[str, BitMap] = {}
    for name, blobs in parts.items():
        bm = BitMap()
        for b in blobs:
            bm |= BitMap.deserialize(b)
        out[name] = bm
    return out
