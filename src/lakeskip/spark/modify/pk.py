"""``DELETE``, ``UPDATE`` and ``MERGE INTO`` on primary-key tables: new versions of the keys.

A primary-key table is never rewritten by DML (that is compaction's job); a statement appends
one set of key-value files, as Paimon's merge-on-read write does::

    plan      the planner keeps the files and buckets that may hold a matching row
              (:meth:`~lakeskip.planner.scan.ScanPlanner.plan`, never resurrecting a version)
    read      Spark merges the kept files (newest version per key, deletes dropped) and keeps
              the rows where the condition is TRUE
    write     DELETE writes each matched row as a ``-D`` version; UPDATE writes the row with
              the SET values applied as a ``+U`` version; sequence numbers continue after
              the bucket's largest, so the new version wins at read time (partial-update
              tables: DELETE needs ``partial-update.remove-record-on-delete``, and UPDATE
              cannot set a non-null column to NULL, as the merge would keep the old value)
    commit    one APPEND snapshot (no file is removed); serializable: a commit since the
              plan that changed a row the condition may match (a key written, deleted or
              updated; not a compaction, nor other keys in a file whose stats overlap)
              fails the commit (:func:`~lakeskip.spark.modify.serializable.serializable_check`)
              and ``retry_on_conflict`` runs the statement again on the newer snapshot

With deletion vectors (:mod:`lakeskip.catalog.write.pk_dv_write`) the matched rows are read as
they are (files at level > 0 minus their DVs); DELETE only marks each matched key's live
position in its file's DV (no ``-D`` row: Paimon's raw readers must never meet one), UPDATE
marks it and writes the new row one level lower; one snapshot carries files and DVs.

The primary key itself (which includes the partition columns) cannot be assigned by UPDATE:
changing a key is a DELETE of the old key plus an INSERT of the new one, as in Paimon.

MERGE INTO reads the merged (latest) rows of the target, joins them with the source with
Spark's MERGE semantics (:func:`~lakeskip.spark.modify.base.merge_changes`) and writes, in one
APPEND snapshot, updated rows as ``+U``, deleted rows as ``-D`` and inserted rows as ``+I``.
As in Paimon, an inserted row whose key already exists (the ON condition did not match it)
replaces that row: a primary-key table holds one row per key. Two rows of one MERGE with the
same key (two source rows inserting one key, or an insert with the key of an updated row)
are an error, since either could win; an UPDATE clause may assign a key column only to its
current value (``UPDATE SET *`` with ``ON t.k = s.k``), checked per row before anything is
written. Pruning: the target is read whole (the ON condition does not prune it yet). With
deletion vectors the changes are one lookup write (:mod:`lakeskip.catalog.write.pk_dv_write`):
every changed key marks its older version in a DV, deleted keys (a trailing delete flag) are
only marked, updated and inserted rows are written; one snapshot carries files and DVs.

Every row of the merged result that the condition matches is found: a key whose newest
version lies in a file the planner skipped cannot match (see the planner's primary-key rule),
so filtering the merge of the kept files by the condition is exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import assert_never

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import RowKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.pk_dv_write import DELETE_FLAG
from lakeskip.errors import CommitConflictError, InvalidArgumentError, UnsupportedStatementError
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
    MergeSpec,
    check_single_match,
    merge_changes,
    merge_concurrent_check,
    merge_spec,
    merge_target,
)
from lakeskip.spark.read.query import table_view
from lakeskip.spark.write.align import align_by_position
from lakeskip.spark.write.writer import WriteResult, commit_written, join_written, write_entries
from lakeskip.types import RowType, quote_identifier

__all__ = ["PRIMARY_KEY"]


def _refuse_null_assignments(
    spark: SparkSession,
    target: DataFrame,
    alias: str,
    cond: str,
    assignments: Mapping[str, str],
    row_type: RowType,
    what: str,
) -> None:
    """A partial-update table keeps a column's newest *non-null* value: an UPDATE that sets a
    non-null column to NULL would silently keep the old value, so it is refused instead."""
    nulled = [
        f"({quote_identifier(f.name)} IS NOT NULL AND CAST(({assignments[f.name]}) AS "
        f"{f.type.spark_ddl()}) IS NULL)"
        for f in row_type
        if f.name in assignments
    ]
    found = sql_over(
        spark,
        target,
        lambda view: (
            f"SELECT 1 FROM {view} AS {quote_identifier(alias)} WHERE coalesce({cond}, false) "
            f"AND ({' OR '.join(nulled)}) LIMIT 1"
        ),
    ).collect()
    if found:
        raise UnsupportedStatementError(
            f"{what}: cannot set a column to NULL on a partial-update table (the merge keeps "
            "each column's newest non-null value)"
        )


def _write_versions(request: DmlRequest) -> DmlResult:
    """DELETE: ``-D`` versions of the matched keys; UPDATE: ``+U`` versions.

    Raises:
        InvalidArgumentError: UPDATE assigns a primary-key (or partition) column.
    """
    spark, table, assignments = request.spark, request.table, request.assignments
    if assignments is not None:
        keys = set(table.schema.primary_keys) | set(table.schema.partition_keys)
        if assigned := sorted(k for k in assignments if k in keys):
            raise InvalidArgumentError(
                f"UPDATE {table.identifier}: cannot assign primary key column(s) "
                f"{', '.join(assigned)} (DELETE the row and INSERT the new key)"
            )
    engine, lookup = _engine(table)
    statement = "DELETE" if assignments is None else "UPDATE"
    if (why := engine.dml_refusal(statement, table.identifier)) is not None:
        raise UnsupportedStatementError(why)
    c = plan_candidates(request)
    if assignments is None and (why := engine.delete_refusal(table.identifier)) is not None:
        raise UnsupportedStatementError(why)
    if not c.files:
        return c.nothing()
    row_type = table.schema.row_type
    items = []
    for f in row_type:
        q = quote_identifier(f.name)
        if assignments is not None and f.name in assignments:
            items.append(f"CAST(({assignments[f.name]}) AS {f.type.spark_ddl()}) AS {q}")
        else:
            items.append(q)
    target = table_view(spark, table, c.files, c.snapshot)
    matched = sql_over(
        spark,
        target,
        lambda view: (
            f"SELECT {', '.join(items)} FROM {view} AS {quote_identifier(c.alias)} "
            f"WHERE coalesce({c.cond}, false)"
        ),
    )
    if engine.partial_update and assignments:
        _refuse_null_assignments(spark, target, c.alias, c.cond, assignments, row_type, c.what)
    kind = RowKind.DELETE if assignments is None else RowKind.UPDATE_AFTER
    written = write_entries(table, align_by_position(matched, row_type, c.what), value_kind=kind)
    if not written.changed:
        return c.nothing()
    try:
        # DVs: the older versions marked; dynamic bucket: the HASH files; same snapshot
        snap = commit_written(table, written, concurrent_check=c.concurrent_check(table))
    except CommitConflictError:
        remove_files(table, written.added)  # nothing was published
        raise
    return DmlResult(
        # a lookup write marks each matched key's live version; otherwise one version a row
        rows=written.marked if lookup else sum(e.file.row_count for e in written.added),
        files_scanned=len(c.files),
        files_removed=len(written.removed),
        files_added=len(written.added),
        snapshot_id=snap.id if snap is not None else None,
        report=c.report,
        files_rewritten=written.files_rewritten,
        files_marked=written.files_marked,
    )


def _engine(table: FileStoreTable) -> tuple[MergeEngine, bool]:
    """The table's merge engine, and whether its writes are lookup writes (read raw)."""
    kind = table.kind
    match kind:
        case PkMerge(merge=merge):
            return merge, False
        case PkRaw(merge=merge):
            return merge, True
        case Append() | AppendDv():
            raise AssertionError(f"{table.identifier} is not a primary-key table")
        case _:
            assert_never(kind)


def _merge(request: MergeRequest) -> MergeResult:
    spark, table, source = request.spark, request.table, request.source
    spec = merge_spec(request)
    what, schema = spec.what, table.schema
    engine, lookup = _engine(table)
    if (why := engine.dml_refusal("MERGE INTO", table.identifier)) is not None:
        raise UnsupportedStatementError(why)
    if engine.partial_update:  # +U / -D rows mean "replace" / "remove" only under deduplicate
        raise UnsupportedStatementError(
            f"{what}: MERGE INTO is supported for merge-engine = deduplicate only, "
            f"not {engine.kind}"
        )
    row_type = schema.row_type
    keys = list(schema.primary_keys)
    planned = merge_target(spark, table, spec, source)
    entries, report, source = list(planned.files), planned.report, planned.source
    # the planned files with the DVs of the snapshot they were planned on: a newer
    # snapshot (a compaction) may have dropped them, resurrecting superseded versions
    target = table_view(spark, table, entries, planned.snapshot) if entries else None
    old = [f"__lakeskip_old{i}" for i in range(len(keys))]
    carry = [(k, o, row_type.field(k).type.spark_ddl()) for k, o in zip(keys, old, strict=True)]
    changes = merge_changes(spark, spec, row_type, target, source, keys, carry)
    if changes is None:
        return MergeResult(0, 0, 0, len(entries), 0, 0, None, report)
    changes = changes.persist()  # the checks and up to three writes read it
    written: list[ManifestEntry] = []
    removed = rewritten = marked = 0  # lookup writes: files removed / compacted / marked
    snap = None
    # serializable as DELETE/UPDATE: a key written or (with DVs) deleted since the plan
    # makes the commit fail and the statement run again (merge_concurrent_check)
    check = merge_concurrent_check(table, spec, planned)
    try:
        counts = _check(spark, spec, changes, keys, old)
        names = [quote_identifier(f.name) for f in row_type]
        if lookup:
            # one lookup write: every changed key marks its older version in a DV; updated
            # and inserted rows are written, deleted ones (flagged) only marked
            codes = (*spec.updates, *spec.deletes, INSERT_CODE)
            rows = changes.where(F.col(ACTION_COLUMN).isin(*codes)).select(
                *names, F.col(ACTION_COLUMN).isin(*spec.deletes).alias(DELETE_FLAG)
            )
            data = align_by_position(rows, row_type, what, extra=(DELETE_FLAG,))
            result = write_entries(table, data, value_kind=RowKind.INSERT, mixed=True)
            written = list(result.added)
            removed = len(result.removed)
            rewritten, marked = result.files_rewritten, result.files_marked
            snap = commit_written(table, result, concurrent_check=check) if result.changed else None
        else:
            # three writes, one commit: each write numbers its rows from the bucket's next
            # sequence number, which is right because no key is written twice (checked above)
            parts: list[WriteResult] = []
            for kind, codes in (
                (RowKind.UPDATE_AFTER, tuple(spec.updates)),
                (RowKind.DELETE, spec.deletes),
                (RowKind.INSERT, (INSERT_CODE,)),
            ):
                if any(counts.get(c, (0, 0))[0] for c in codes):
                    rows = changes.where(F.col(ACTION_COLUMN).isin(*codes)).select(*names)
                    data = align_by_position(rows, row_type, what)
                    parts.append(write_entries(table, data, value_kind=kind))
                    written += parts[-1].added
            joined = join_written(table, parts)  # dynamic bucket: one HASH file per bucket
            snap = commit_written(table, joined, concurrent_check=check) if written else None
    except BaseException:
        remove_files(table, written)
        raise
    finally:
        changes.unpersist()

    def n(codes: Sequence[int]) -> int:
        return sum(counts.get(c, (0, 0))[0] for c in codes)

    return MergeResult(
        updated=n(tuple(spec.updates)),
        deleted=n(spec.deletes),
        inserted=n((INSERT_CODE,)),
        files_scanned=len(entries),
        files_removed=removed,
        files_added=len(written),
        snapshot_id=snap.id if snap is not None else None,
        report=report,
        files_rewritten=rewritten,
        files_marked=marked,
    )


def _check(
    spark: SparkSession,
    spec: MergeSpec,
    changes: DataFrame,
    keys: Sequence[str],
    old: Sequence[str],
) -> dict[int, tuple[int, int]]:
    """Per clause code (rows, most matches of a target row); raises, before anything is
    written, if a target row matches several source rows, an UPDATE changes a key, or two
    written rows share a key (in that order: the first is Spark's own rule)."""
    what, updates = spec.what, spec.updates
    same = " AND ".join(f"{quote_identifier(k)} <=> {o}" for k, o in zip(keys, old, strict=True))
    codes = ", ".join(str(c) for c in updates) or "NULL"
    moved = f"CASE WHEN {ACTION_COLUMN} IN ({codes}) AND NOT ({same}) THEN 1 ELSE 0 END"
    rows = sql_over(
        spark,
        changes,
        lambda v: (
            f"SELECT {ACTION_COLUMN} AS a, count(*) AS n, max({MATCHES_COLUMN}) AS m, "
            f"max({moved}) AS moved FROM {v} GROUP BY {ACTION_COLUMN}"
        ),
    ).collect()
    check_single_match(spec, max((int(r["m"]) for r in rows), default=0))
    if any(int(r["moved"]) for r in rows):
        raise InvalidArgumentError(
            f"{what}: an UPDATE clause changes the primary key ({', '.join(keys)}) of a row; "
            "a key cannot be updated (DELETE the row and INSERT the new key)"
        )
    counts = {int(r["a"]): (int(r["n"]), int(r["m"])) for r in rows}
    if sum(n for a, (n, _) in counts.items() if a != 0) > 1:
        ks = ", ".join(quote_identifier(k) for k in keys)
        twice = sql_over(
            spark,
            changes,
            lambda v: (
                f"SELECT {ks} FROM {v} WHERE {ACTION_COLUMN} <> 0 GROUP BY {ks} "
                "HAVING count(*) > 1 LIMIT 1"
            ),
        ).collect()
        if twice:
            key = ", ".join(f"{k}={v!r}" for k, v in zip(keys, twice[0], strict=True))
            raise InvalidArgumentError(
                f"{what}: two rows written by the statement have the same primary key ({key}): "
                "two source rows insert it, or a row is inserted with the key of an updated or "
                "deleted row"
            )
    return counts


#: primary-key tables: append new versions (this module)
PRIMARY_KEY = DmlEngine("primary-key", _write_versions, _merge)
