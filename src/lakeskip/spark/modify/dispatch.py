"""DELETE / UPDATE / MERGE INTO: the one dispatch point (:func:`engine_for`, by table kind)
and the copy-on-write engine of plain append tables.

Primary-key tables go to :mod:`lakeskip.spark.modify.pk` (new versions are appended), deletion-
vector tables to :mod:`lakeskip.spark.modify.dv` (row positions are marked deleted); the shared
prologue, results and MERGE resolution are in :mod:`lakeskip.spark.modify.base`.

Copy-on-write on append tables:

One statement, four steps, one snapshot::

    plan      the planner keeps the files that might hold a row where the condition is TRUE
              (stats and file indexes; every other file is untouched)
    find      Spark reads exactly those files and counts, per file, the rows where the
              condition is TRUE (Spark's semantics, subqueries included); files with no such
              row are untouched too
    rewrite   Spark tasks read the affected files and write them again through the write path
              (stats and indexes rebuilt): DELETE keeps the rows where the condition is FALSE
              or NULL (as SQL does), UPDATE keeps every row and assigns the new values where
              the condition is TRUE
    commit    one OVERWRITE snapshot that DELETEs the affected files and ADDs the new ones
              (no partition is replaced wholesale: only the listed files go)

Concurrency is serializable: the commit checks that every file it deletes is still live in
the latest snapshot (a compaction, an overwrite, another DELETE may have removed one), and
that no file committed since the statement read its snapshot may hold a row the condition
matches (:func:`~lakeskip.spark.modify.serializable.serializable_check`; MERGE: a target row
matching a source row; such a file, or a file it read that changed since, conflicts only if the
rows the condition may match differ). Otherwise the attempt fails
with :class:`~lakeskip.errors.CommitConflictError`, deletes the files it wrote, and
``retry_on_conflict`` runs the statement again on the newer snapshot -- rows are never
resurrected nor lost, and the table equals the statements replayed in commit order.

The functions take a :class:`~lakeskip.catalog.table.FileStoreTable` and Spark SQL text, so the
SQL front end (:mod:`lakeskip.spark.front.statements`) and a Spark catalog can share them.
Limitation: the condition is evaluated by Spark over a view of the table's files, so tables it
names in subqueries must be Spark tables (a lakeskip table in a subquery is not resolved).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import assert_never

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.options import check_writable
from lakeskip.catalog.table import FileStoreTable, retry_on_conflict
from lakeskip.errors import CommitConflictError
from lakeskip.spark.modify.base import (
    ACTION_COLUMN,
    FILE_COLUMN,
    INSERT_CODE,
    ROW_COLUMN,
    SOURCE_MARK,
    DmlEngine,
    DmlRequest,
    DmlResult,
    MergeRequest,
    MergeResult,
    files_frame,
    plan_candidates,
    remove_files,
    resolve_set,
    sql_over,
    sql_with,
)
from lakeskip.spark.modify.dv import DELETION_VECTORS
from lakeskip.spark.modify.merge_frame import (
    check_single_match,
    merge_changes,
    merge_concurrent_check,
    merge_joined,
    merge_spec,
    merge_target,
)
from lakeskip.spark.modify.pk import PRIMARY_KEY
from lakeskip.spark.write.align import align_by_position
from lakeskip.spark.write.writer import write_entries
from lakeskip.sql.merge import MergeAction
from lakeskip.types import quote_identifier

__all__ = [
    "COPY_ON_WRITE",
    "DmlEngine",
    "DmlRequest",
    "DmlResult",
    "MergeRequest",
    "MergeResult",
    "delete_where",
    "engine_for",
    "merge_into",
    "run_dml",
    "run_merge",
    "update_where",
]


def delete_where(
    spark: SparkSession,
    table: FileStoreTable,
    condition: str | None,
    *,
    alias: str | None = None,
    time_zone: str | None = None,
) -> DmlResult:
    """``DELETE FROM table [AS alias] WHERE condition`` (``condition`` ``None``: every row),
    by the engine of the table's kind (arguments: see :class:`DmlRequest`).

    Raises:
        CommitConflictError: a concurrent commit removed one of the files being rewritten
            (nothing was changed; run the statement again).
    """
    return run_dml(DmlRequest(spark, table, condition, None, alias, time_zone))


def update_where(
    spark: SparkSession,
    table: FileStoreTable,
    assignments: Mapping[str, str] | Sequence[tuple[str, str]],
    condition: str | None,
    *,
    alias: str | None = None,
    time_zone: str | None = None,
) -> DmlResult:
    """``UPDATE table [AS alias] SET column = expr, ... WHERE condition``, by the engine of the
    table's kind (other arguments: see :class:`DmlRequest`).

    Args:
        assignments: column -> Spark SQL expression (may use the row's current values); the
            value is cast to the column's type as INSERT casts (NOT NULL is checked).

    Raises:
        ColumnNotFoundError: an assigned column is not in the table.
        InvalidArgumentError: a column is assigned twice, or nothing is assigned.
        CommitConflictError: a concurrent commit removed one of the files being rewritten.
    """
    resolved = resolve_set(table, assignments)
    return run_dml(DmlRequest(spark, table, condition, resolved, alias, time_zone))


def merge_into(
    spark: SparkSession,
    table: FileStoreTable,
    source: DataFrame,
    *,
    on: str,
    source_alias: str,
    alias: str | None = None,
    matched: Sequence[MergeAction] = (),
    not_matched: Sequence[MergeAction] = (),
    not_matched_by_source: Sequence[MergeAction] = (),
    time_zone: str | None = None,
) -> MergeResult:
    """``MERGE INTO table [AS alias] USING source AS source_alias ON on WHEN ...``, by the engine
    of the table's kind (arguments: see :class:`MergeRequest`; semantics: :func:`_cow_merge`)."""
    request = MergeRequest(
        spark,
        table,
        source,
        on=on,
        source_alias=source_alias,
        alias=alias,
        matched=tuple(matched),
        not_matched=tuple(not_matched),
        not_matched_by_source=tuple(not_matched_by_source),
        time_zone=time_zone,
    )
    return run_merge(request)


def run_dml(request: DmlRequest) -> DmlResult:
    """A DELETE or UPDATE, by the engine of the table's kind (the one dispatch point); run
    again from its planning while its commit conflicts (``retry_on_conflict``)."""
    return retry_on_conflict(
        request.table, lambda: engine_for(request.table).delete_update(request)
    )


def run_merge(request: MergeRequest) -> MergeResult:
    """A MERGE INTO, by the engine of the table's kind (the one dispatch point); run again
    from its planning while its commit conflicts (``retry_on_conflict``)."""
    return retry_on_conflict(request.table, lambda: engine_for(request.table).merge(request))


def _copy_on_write(request: DmlRequest) -> DmlResult:
    """DELETE / UPDATE: the four steps of the module docstring."""
    spark, table, assignments = request.spark, request.table, request.assignments
    c = plan_candidates(request)
    if not c.files:
        return c.nothing()
    row_type = table.schema.row_type
    candidates = list(c.files)
    cond, as_alias, what = c.cond, f"AS {quote_identifier(c.alias)}", c.what
    counts = sql_over(
        spark,
        files_frame(spark, table, candidates),
        lambda view: (
            f"SELECT {FILE_COLUMN}, count(*) AS n FROM {view} {as_alias} "
            f"WHERE {cond} GROUP BY {FILE_COLUMN}"
        ),
    ).collect()
    matched = {str(r[FILE_COLUMN]): int(r["n"]) for r in counts}
    affected = [e for e in candidates if e.file.file_name in matched]
    if not affected:
        return c.nothing()
    hit = f"coalesce({cond}, false)"
    if assignments is None:
        columns = ", ".join(quote_identifier(f.name) for f in row_type)
        select, where = f"SELECT {columns}", f"WHERE NOT {hit}"
    else:
        items = []
        for f in row_type:
            q = quote_identifier(f.name)
            if f.name in assignments:
                value = f"CAST(({assignments[f.name]}) AS {f.type.spark_ddl()})"
                items.append(f"CASE WHEN {hit} THEN {value} ELSE {q} END AS {q}")
            else:
                items.append(q)
        select, where = f"SELECT {', '.join(items)}", ""
    rewritten = sql_over(
        spark,
        files_frame(spark, table, affected),
        lambda view: f"{select} FROM {view} {as_alias} {where}",
    )
    new_entries = write_entries(table, align_by_position(rewritten, row_type, what)).added
    try:
        snap = table.commit(
            new_entries,
            deleted=affected,
            kind=CommitKind.OVERWRITE,
            overwrite_partitions=[],
            concurrent_check=c.concurrent_check(table),
        )
    except CommitConflictError as e:
        remove_files(table, new_entries)
        raise CommitConflictError(f"{what}: nothing was changed, run it again ({e})") from e
    before = sum(e.file.row_count for e in affected)
    after = sum(e.file.row_count for e in new_entries)
    rows = before - after if assignments is None else sum(matched.values())
    return DmlResult(
        rows=rows,
        files_scanned=len(candidates),
        files_removed=len(affected),
        files_rewritten=len(affected),
        files_added=len(new_entries),
        snapshot_id=snap.id if snap is not None else None,
        report=c.report,
    )


# -- MERGE INTO (copy-on-write) ----------------------------------------------------------


def _cow_merge(request: MergeRequest) -> MergeResult:
    """``MERGE INTO table [AS alias] USING source AS source_alias ON on WHEN ...``, copy-on-write.

    Spark's semantics: per target row the first WHEN MATCHED (or NOT MATCHED BY SOURCE) clause
    whose condition is TRUE applies; a target row matched by more than one source row is an
    error when there are WHEN MATCHED clauses; per unmatched source row the first WHEN NOT
    MATCHED clause inserts. Only the files holding a row that an UPDATE or DELETE applies to are
    rewritten; inserted rows go to new files; one atomic commit (the conflict checks of DELETE,
    and :func:`~lakeskip.spark.modify.base.merge_concurrent_check`).

    Raises:
        InvalidArgumentError: a target row matches several source rows; a condition is not
            deterministic; a column is assigned twice.
        ColumnNotFoundError: a SET / INSERT column is not in the table.
        CommitConflictError: a concurrent commit removed a file being rewritten.
    """
    spark, table, source = request.spark, request.table, request.source
    spec = merge_spec(request)
    what = spec.what
    row_type = table.schema.row_type
    updates, deletes = spec.updates, spec.deletes
    planned = merge_target(spark, table, spec, source)
    entries, report, source = list(planned.files), planned.report, planned.source
    t, s = quote_identifier(spec.alias), quote_identifier(spec.source_alias)
    src = source.select("*", F.lit(True).alias(SOURCE_MARK))
    action = spec.action_sql()
    identity = (FILE_COLUMN, ROW_COLUMN)

    affected: list[ManifestEntry] = []
    counts: dict[int, int] = {}
    pieces: list[DataFrame] = []
    if entries and (spec.matched or spec.not_matched_by_source):
        rows = sql_with(
            spark,
            {"t": files_frame(spark, table, entries), "s": src},
            lambda v: (
                f"SELECT f, a, count(*) AS n, max(m) AS m FROM (SELECT {t}.{FILE_COLUMN} AS f, "
                f"max({action}) AS a, count({s}.{SOURCE_MARK}) AS m FROM {merge_joined(spec, v, identity)} "
                f"GROUP BY {t}.{FILE_COLUMN}, {t}.{ROW_COLUMN}) GROUP BY f, a"
            ),
        ).collect()
        check_single_match(spec, max((int(r["m"]) for r in rows), default=0))
        files: set[str] = set()
        for r in rows:
            code = int(r["a"])
            if code:
                counts[code] = counts.get(code, 0) + int(r["n"])
                files.add(str(r["f"]))
        affected = [e for e in entries if e.file.file_name in files]
    if affected:
        names = list(row_type.names)
        values = []
        for code, assigned in updates.items():
            for column, value in assigned.items():
                ddl = row_type.field(column).type.spark_ddl()
                values.append(f"CAST(({value}) AS {ddl}) AS __v{code}_{names.index(column)}")
        inner_items = ", ".join([f"{t}.*", f"{action} AS {ACTION_COLUMN}", *values])
        outer = []
        for i, f in enumerate(row_type):
            q = quote_identifier(f.name)
            whens = [f"WHEN {c} THEN __v{c}_{i}" for c, a in updates.items() if f.name in a]
            outer.append(
                f"CASE {ACTION_COLUMN} {' '.join(whens)} ELSE {q} END AS {q}" if whens else q
            )
        keep = f"WHERE {ACTION_COLUMN} NOT IN ({', '.join(map(str, deletes))})" if deletes else ""
        pieces.append(
            sql_with(
                spark,
                {"t": files_frame(spark, table, affected), "s": src},
                lambda v: (
                    f"SELECT {', '.join(outer)} FROM (SELECT {inner_items} FROM "
                    f"{merge_joined(spec, v, identity)}) {keep}"
                ),
            )
        )
    if spec.not_matched:
        only = dataclasses.replace(spec, matched=(), not_matched_by_source=())
        target = files_frame(spark, table, entries) if entries else None
        inserts = merge_changes(spark, only, row_type, target, source, ())
        assert inserts is not None  # there is a WHEN NOT MATCHED clause
        pieces.append(inserts.where(F.col(ACTION_COLUMN) == INSERT_CODE))
    if not pieces:
        return MergeResult(0, 0, 0, len(entries), 0, 0, None, report)
    names = [quote_identifier(f.name) for f in row_type]
    data = align_by_position(pieces[0].select(*names), row_type, what)
    for p in pieces[1:]:
        data = data.unionAll(align_by_position(p.select(*names), row_type, what))
    new_entries = write_entries(table, data).added
    check = merge_concurrent_check(table, spec, planned)
    try:
        if affected:
            snap = table.commit(
                new_entries,
                deleted=affected,
                kind=CommitKind.OVERWRITE,
                overwrite_partitions=[],
                concurrent_check=check,
            )
        else:
            snap = table.commit(new_entries, kind=CommitKind.APPEND, concurrent_check=check)
    except CommitConflictError as e:
        remove_files(table, new_entries)
        raise CommitConflictError(f"{what}: nothing was changed, run it again ({e})") from e
    deleted = sum(counts.get(c, 0) for c in deletes)
    updated = sum(counts.get(c, 0) for c in updates)
    kept = sum(e.file.row_count for e in affected) - deleted
    inserted = sum(e.file.row_count for e in new_entries) - kept
    return MergeResult(
        updated=updated,
        deleted=deleted,
        inserted=inserted,
        files_scanned=len(entries),
        files_removed=len(affected),
        files_rewritten=len(affected),
        files_added=len(new_entries),
        snapshot_id=snap.id if snap is not None else None,
        report=report,
    )


#: plain append tables: rewrite the files that hold affected rows (this module)
COPY_ON_WRITE = DmlEngine("copy-on-write", _copy_on_write, _cow_merge)


def engine_for(table: FileStoreTable) -> DmlEngine:
    """The engine for ``table``'s kind, at its latest schema (an ALTER may have turned
    deletion vectors on): copy-on-write for an append table, deletion vectors
    (:mod:`lakeskip.spark.modify.dv`) for one with DVs, new versions of keys
    (:mod:`lakeskip.spark.modify.pk`) for a primary-key table."""
    table = table.refresh()
    check_writable(table.schema.options)  # before any file is written (the commit checks too)
    kind = table.kind
    match kind:
        case Append():
            return COPY_ON_WRITE
        case AppendDv():
            return DELETION_VECTORS
        case PkMerge() | PkRaw():
            return PRIMARY_KEY
        case _:
            assert_never(kind)
