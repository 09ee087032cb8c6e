"""``DELETE``, ``UPDATE`` and ``MERGE INTO`` on deletion-vector tables (``deletion-vectors.enabled``):
merge-on-read.

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

MERGE INTO joins the live target rows (with their file and position) with the source
(:func:`~lakeskip.spark.modify.base.merge_changes`); the rows an UPDATE or DELETE clause applies
to are marked in the DVs as above, updated and inserted rows are appended through the INSERT
write path, all in one commit. (Copy-on-write would also be correct if it read live rows only
and dropped the rewritten files' DVs, but it rewrites whole files for a few changed rows; DVs
keep a MERGE's cost proportional to the rows it changes, as DELETE / UPDATE here.)

The commit names the index file each DV was read from; if another commit changed one of them
in between (a concurrent DELETE, a compaction) it fails with
:class:`~lakeskip.errors.CommitConflictError` and the statement removes what it wrote, so deletes
are never lost nor rows resurrected. It also fails when a file committed since the
statement read its snapshot may hold a row the condition (MERGE: a target row matching a
source row) matches, or when a MERGE that inserts read a file that has lost rows since
(:func:`~lakeskip.spark.modify.serializable.serializable_check`): ``retry_on_conflict`` then runs the
statement again on the newer snapshot, so the table equals a replay in commit order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import CommitKind, Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CommitConflictError
from lakeskip.index.primitives.roaring import bitmap_of, serialize_bitmap
from lakeskip.spark.modify.base import (
    ACTION_COLUMN,
    INSERT_CODE,
    MATCHES_COLUMN,
    DmlEngine,
    DmlRequest,
    DmlResult,
    MergeRequest,
    MergeResult,
    plan_candidates,
    remove_files,
    sql_over,
)
from lakeskip.spark.modify.merge_frame import (
    check_single_match,
    merge_changes,
    merge_concurrent_check,
    merge_spec,
    merge_target,
)
from lakeskip.spark.read.arrow_map import map_in_arrow
from lakeskip.spark.read.dv import (
    FILE_COLUMN,
    POS_COLUMN,
    DeletionVectors,
    live_rows_frame,
    read_vectors,
)
from lakeskip.spark.write.align import align_by_position
from lakeskip.spark.write.writer import write_entries
from lakeskip.types import quote_identifier

__all__ = ["DELETION_VECTORS", "merge_bitmaps"]

_BITMAPS_SCHEMA = StructType(
    [
        StructField("file", StringType()),
        StructField("bitmap", BinaryType()),
        StructField("n", LongType()),
    ]
)


@dataclass(frozen=True, slots=True)
class _Marked:
    """What marking positions did."""

    rows: int
    files_removed: int
    snapshot_id: int | None
    files_marked: int


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


def _positions(positions: DataFrame) -> dict[str, BitMap]:
    """Per data file, the positions of ``positions`` (columns FILE_COLUMN, POS_COLUMN),
    gathered into bitmaps inside the tasks (one small row per file comes back)."""
    parts: dict[str, list[bytes]] = {}
    for r in map_in_arrow(positions, _bitmaps, _BITMAPS_SCHEMA).collect():
        if r["n"]:  # several tasks may each report part of one file
            parts.setdefault(str(r["file"]), []).append(bytes(r["bitmap"]))
    return merge_bitmaps(parts)


def _commit(
    table: FileStoreTable,
    candidates: Sequence[ManifestEntry],
    dvs: DeletionVectors,
    matched: Mapping[str, BitMap],
    added: Sequence[ManifestEntry],
    what: str,
    concurrent_check: Callable[[Snapshot | None], None] | None = None,
) -> _Marked:
    """One snapshot: ``matched`` positions added to the files' DVs (a file with no live row
    left is removed instead) and ``added`` files. Removes ``added`` if the commit fails."""
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
    try:
        if matched:
            snap = table.commit(
                list(added),
                deleted=removed,
                kind=CommitKind.OVERWRITE,
                overwrite_partitions=[],
                deletion_vectors=DeletionVectorUpdate(vectors, base, dvs.vectors),
                concurrent_check=concurrent_check,
            )
        else:
            snap = (
                table.commit(list(added), kind=CommitKind.APPEND, concurrent_check=concurrent_check)
                if added
                else None
            )
    except CommitConflictError as e:
        remove_files(table, added)
        raise CommitConflictError(f"{what}: nothing was changed, run it again ({e})") from e
    except BaseException:
        remove_files(table, added)
        raise
    rows = sum(len(bm) for bm in matched.values())
    return _Marked(rows, len(removed), snap.id if snap is not None else None, len(matched))


def _delete_update(request: DmlRequest) -> DmlResult:
    """Mark the rows where the condition is TRUE as deleted; UPDATE also appends them with
    their new values.

    Raises:
        CommitConflictError: a DV read here was changed, or a file removed, concurrently.
        CorruptDeletionVectorError: a current DV cannot be read.
    """
    spark, table, assignments = request.spark, request.table, request.assignments
    c = plan_candidates(request)
    if not c.files:
        return c.nothing()
    row_type = table.schema.row_type
    as_alias = f"AS {quote_identifier(c.alias)}"
    dvs = read_vectors(table, c.files, c.snapshot)
    frame = live_rows_frame(spark, table, c.files, dvs, with_position=True)
    matched = _positions(
        sql_over(
            spark,
            frame,
            lambda view: (
                f"SELECT {FILE_COLUMN}, {POS_COLUMN} FROM {view} {as_alias} WHERE {c.cond}"
            ),
        )
    )
    if not matched:
        return c.nothing()
    added: list[ManifestEntry] = []
    if assignments is not None:
        items = []
        for f in row_type:
            q = quote_identifier(f.name)
            if f.name in assignments:
                items.append(f"CAST(({assignments[f.name]}) AS {f.type.spark_ddl()}) AS {q}")
            else:
                items.append(q)
        new_rows = sql_over(
            spark,
            frame,
            lambda view: f"SELECT {', '.join(items)} FROM {view} {as_alias} WHERE {c.cond}",
        )
        added = list(write_entries(table, align_by_position(new_rows, row_type, c.what)).added)
    out = _commit(table, c.files, dvs, matched, added, c.what, c.concurrent_check(table))
    return DmlResult(
        rows=out.rows,
        files_scanned=len(c.files),
        files_removed=out.files_removed,
        files_marked=out.files_marked,
        files_added=len(added),
        snapshot_id=out.snapshot_id,
        report=c.report,
    )


def _merge(request: MergeRequest) -> MergeResult:
    spark, table, source = request.spark, request.table, request.source
    spec = merge_spec(request)
    row_type = table.schema.row_type
    planned = merge_target(spark, table, spec, source)
    snapshot, source = planned.snapshot, planned.source
    entries, report = list(planned.files), planned.report
    dvs = DeletionVectors({}, {})
    target: DataFrame | None = None
    if snapshot is not None:
        dvs = read_vectors(table, entries, snapshot)
        if entries:
            target = live_rows_frame(spark, table, entries, dvs, with_position=True)
    carry = [(FILE_COLUMN, FILE_COLUMN, "STRING"), (POS_COLUMN, POS_COLUMN, "BIGINT")]
    changes = merge_changes(spark, spec, row_type, target, source, (FILE_COLUMN, POS_COLUMN), carry)
    if changes is None:
        return MergeResult(0, 0, 0, len(entries), 0, 0, None, report)
    changes = changes.persist()  # the check, the positions and the write read it
    updates, deletes = tuple(spec.updates), spec.deletes
    marked: dict[str, BitMap] = {}
    added: list[ManifestEntry] = []
    try:
        rows = (
            changes.groupBy(ACTION_COLUMN)
            .agg(F.count(F.lit(1)).alias("n"), F.max(MATCHES_COLUMN).alias("m"))
            .collect()
        )
        counts = {int(r[ACTION_COLUMN]): int(r["n"]) for r in rows}
        check_single_match(spec, max((int(r["m"]) for r in rows), default=0))
        if any(counts.get(c) for c in (*updates, *deletes)):
            marked = _positions(
                changes.where(F.col(ACTION_COLUMN).isin(*updates, *deletes)).select(
                    FILE_COLUMN, POS_COLUMN
                )
            )
        if any(counts.get(c) for c in (*updates, INSERT_CODE)):
            names = [quote_identifier(f.name) for f in row_type]
            new_rows = changes.where(F.col(ACTION_COLUMN).isin(*updates, INSERT_CODE))
            added = list(
                write_entries(
                    table, align_by_position(new_rows.select(*names), row_type, spec.what)
                ).added
            )
    finally:
        changes.unpersist()
    check = merge_concurrent_check(table, spec, planned)
    out = _commit(table, entries, dvs, marked, added, spec.what, check)
    return MergeResult(
        updated=sum(counts.get(c, 0) for c in updates),
        deleted=sum(counts.get(c, 0) for c in deletes),
        inserted=counts.get(INSERT_CODE, 0),
        files_scanned=len(entries),
        files_removed=out.files_removed,
        files_marked=out.files_marked,
        files_added=len(added),
        snapshot_id=out.snapshot_id,
        report=report,
    )


#: append tables with deletion vectors: mark deleted positions (this module)
DELETION_VECTORS = DmlEngine("deletion-vectors", _delete_update, _merge)


def merge_bitmaps(parts: Mapping[str, Sequence[bytes]]) -> dict[str, BitMap]:
    """Union per file of serialised bitmaps (tasks may each report part of a file)."""
    out: dict[str, BitMap] = {}
    for name, blobs in parts.items():
        bm = BitMap()
        for b in blobs:
            bm |= BitMap.deserialize(b)
        out[name] = bm
    return out
