"""Copy-on-write ``DELETE`` and ``UPDATE`` on append tables (primary-key tables go to
:mod:`lakeskip.spark.pk_dml`, which appends new versions instead).

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

Concurrency is that of ``sys.compact``: the commit checks that every file it deletes is still
live in the latest snapshot. If a concurrent commit removed one (a compaction, an overwrite,
another DELETE), the statement fails with :class:`~lakeskip.errors.CommitConflictError`, deletes
the files it wrote, and leaves the table as it was -- rows are never resurrected nor lost. Rows
appended concurrently are not in the files being rewritten, so they are simply kept.

The functions take a :class:`~lakeskip.catalog.table.FileStoreTable` and Spark SQL text, so the
SQL front end (:mod:`lakeskip.spark.statements`) and a Spark catalog can share them.
Limitation: the condition is evaluated by Spark over a view of the table's files, so tables it
names in subqueries must be Spark tables (a lakeskip table in a subquery is not resolved).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeskip.catalog.manifest import ManifestEntry
from lakeskip.catalog.options import deletion_vectors_enabled
from lakeskip.catalog.snapshot import CommitKind, Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import ColumnNotFoundError, CommitConflictError, InvalidArgumentError
from lakeskip.planner.report import PruningReport
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark.dv_dml import dv_delete_update
from lakeskip.spark.pk_dml import PkDmlResult, pk_delete_where, pk_update_where
from lakeskip.spark.query import table_file_paths, view_over_files
from lakeskip.spark.writer import align_by_position, write_entries
from lakeskip.sql.query import condition_predicate, nondeterministic_function

__all__ = ["DmlResult", "delete_where", "update_where"]

FILE_COLUMN = "__lakeskip_file"


@dataclass(frozen=True, slots=True)
class DmlResult:
    """What a DELETE or UPDATE did.

    Attributes:
        rows: rows deleted (DELETE) or updated (UPDATE).
        files_scanned: files the planner kept (Spark read them to find matching rows).
        files_removed: files rewritten, i.e. deleted by the snapshot.
        files_added: files the snapshot added.
        snapshot_id: the committed snapshot, ``None`` when nothing matched.
        report: the planner's pruning report for the condition (``None``: empty table).
    """

    rows: int
    files_scanned: int
    files_removed: int
    files_added: int
    snapshot_id: int | None
    report: PruningReport | None = None


def delete_where(
    spark: SparkSession,
    table: FileStoreTable,
    condition: str | None,
    *,
    alias: str | None = None,
    time_zone: str | None = None,
) -> DmlResult:
    """``DELETE FROM table [AS alias] WHERE condition`` (``condition`` ``None``: every row).

    Args:
        spark: the session that evaluates the condition and runs the write tasks.
        table: the lakeskip table.
        condition: a Spark SQL boolean expression over the table's columns.
        alias: the name the condition may qualify columns with (default: the table's name).
        time_zone: Spark's session time zone for timestamp literals (default: the session's).

    Raises:
        CommitConflictError: a concurrent commit removed one of the files being rewritten
            (nothing was changed; run the statement again).
    """
    if table.refresh().schema.is_primary_key_table:
        r = pk_delete_where(spark, table, condition, alias=alias, time_zone=time_zone)
        return _from_pk(r)
    return _copy_on_write(spark, table, condition, None, alias, time_zone)


def update_where(
    spark: SparkSession,
    table: FileStoreTable,
    assignments: Mapping[str, str] | Sequence[tuple[str, str]],
    condition: str | None,
    *,
    alias: str | None = None,
    time_zone: str | None = None,
) -> DmlResult:
    """``UPDATE table [AS alias] SET column = expr, ... WHERE condition``.

    Args:
        spark: the session that evaluates the condition and runs the write tasks.
        table: the lakeskip table.
        assignments: column -> Spark SQL expression (may use the row's current values); the
            value is cast to the column's type as INSERT casts (NOT NULL is checked).
        condition: a Spark SQL boolean expression (``None``: every row).
        alias: the name the condition may qualify columns with (default: the table's name).
        time_zone: Spark's session time zone for timestamp literals (default: the session's).

    Raises:
        ColumnNotFoundError: an assigned column is not in the table.
        InvalidArgumentError: a column is assigned twice, or nothing is assigned.
        CommitConflictError: a concurrent commit removed one of the files being rewritten.
    """
    pairs = list(assignments.items()) if isinstance(assignments, Mapping) else list(assignments)
    if not pairs:
        raise InvalidArgumentError(f"UPDATE {table.identifier}: no column is assigned")
    row_type = table.refresh().schema.row_type
    resolved: dict[str, str] = {}
    for column, value in pairs:
        if not row_type.has(column):
            raise ColumnNotFoundError(
                f"UPDATE {table.identifier}: no column {column} (columns: "
                f"{', '.join(row_type.names)})"
            )
        name = row_type.field(column).name
        if name in resolved:
            raise InvalidArgumentError(f"UPDATE {table.identifier}: column {name} assigned twice")
        resolved[name] = value
    if table.refresh().schema.is_primary_key_table:
        r = pk_update_where(spark, table, resolved, condition, alias=alias, time_zone=time_zone)
        return _from_pk(r)
    return _copy_on_write(spark, table, condition, resolved, alias, time_zone)


def _from_pk(r: PkDmlResult) -> DmlResult:
    return DmlResult(
        rows=r.rows,
        files_scanned=r.files_scanned,
        files_removed=r.files_removed,
        files_added=r.files_added,
        snapshot_id=r.snapshot_id,
        report=r.report,
    )


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _copy_on_write(
    spark: SparkSession,
    table: FileStoreTable,
    condition: str | None,
    assignments: Mapping[str, str] | None,
    alias: str | None,
    time_zone: str | None,
) -> DmlResult:
    verb = "DELETE FROM" if assignments is None else "UPDATE"
    if condition is not None and (fn := nondeterministic_function(condition)) is not None:
        raise InvalidArgumentError(
            f"{verb} {table.identifier}: the condition must be deterministic ({fn}() is not)"
        )
    table.refresh()
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return DmlResult(0, 0, 0, 0, None)
    alias = alias or table.identifier.rsplit(".", 1)[-1]
    tz = time_zone or str(spark.conf.get("spark.sql.session.timeZone") or "UTC")
    row_type = table.schema.row_type
    predicate = condition_predicate(condition, row_type, alias, tz)
    plan = ScanPlanner(table).plan(predicate, time_zone=tz, snapshot_id=snapshot.id)
    candidates = list(plan.files)
    if not candidates:
        return DmlResult(0, 0, 0, 0, None, plan.report)
    cond = f"({condition})" if condition is not None else "TRUE"
    as_alias = f"AS {_quote(alias)}"
    if deletion_vectors_enabled(table.schema.options):
        return _merge_on_read(
            spark, table, snapshot, candidates, cond, as_alias, assignments, plan.report, verb
        )
    counts = _sql_over(
        spark,
        _files_frame(spark, table, candidates),
        lambda view: (
            f"SELECT {FILE_COLUMN}, count(*) AS n FROM {view} {as_alias} "
            f"WHERE {cond} GROUP BY {FILE_COLUMN}"
        ),
    ).collect()
    matched = {str(r[FILE_COLUMN]): int(r["n"]) for r in counts}
    affected = [e for e in candidates if e.file.file_name in matched]
    if not affected:
        return DmlResult(0, len(candidates), 0, 0, None, plan.report)
    hit = f"coalesce({cond}, false)"
    if assignments is None:
        columns = ", ".join(_quote(f.name) for f in row_type)
        select, where = f"SELECT {columns}", f"WHERE NOT {hit}"
    else:
        items = []
        for f in row_type:
            q = _quote(f.name)
            if f.name in assignments:
                value = f"CAST(({assignments[f.name]}) AS {f.type.spark_ddl()})"
                items.append(f"CASE WHEN {hit} THEN {value} ELSE {q} END AS {q}")
            else:
                items.append(q)
        select, where = f"SELECT {', '.join(items)}", ""
    rewritten = _sql_over(
        spark,
        _files_frame(spark, table, affected),
        lambda view: f"{select} FROM {view} {as_alias} {where}",
    )
    what = f"{verb} {table.identifier}"
    new_entries = write_entries(table, align_by_position(rewritten, row_type, what))
    try:
        snap = table.commit(
            new_entries, deleted=affected, kind=CommitKind.OVERWRITE, overwrite_partitions=[]
        )
    except CommitConflictError as e:
        _remove_files(table, new_entries)
        raise CommitConflictError(f"{what}: nothing was changed, run it again ({e})") from e
    before = sum(e.file.row_count for e in affected)
    after = sum(e.file.row_count for e in new_entries)
    rows = before - after if assignments is None else sum(matched.values())
    return DmlResult(
        rows=rows,
        files_scanned=len(candidates),
        files_removed=len(affected),
        files_added=len(new_entries),
        snapshot_id=snap.id if snap is not None else None,
        report=plan.report,
    )


def _merge_on_read(
    spark: SparkSession,
    table: FileStoreTable,
    snapshot: Snapshot,
    candidates: Sequence[ManifestEntry],
    cond: str,
    as_alias: str,
    assignments: Mapping[str, str] | None,
    report: PruningReport,
    verb: str,
) -> DmlResult:
    """DELETE/UPDATE on a deletion-vector table (:mod:`lakeskip.spark.dv_dml`)."""
    updated_select = None
    if assignments is not None:
        items = []
        for f in table.schema.row_type:
            q = _quote(f.name)
            if f.name in assignments:
                items.append(f"CAST(({assignments[f.name]}) AS {f.type.spark_ddl()}) AS {q}")
            else:
                items.append(q)
        updated_select = f"SELECT {', '.join(items)}"
    what = f"{verb} {table.identifier}"
    try:
        out = dv_delete_update(
            spark,
            table,
            snapshot,
            candidates,
            cond,
            as_alias,
            updated_select,
            _sql_over,
            _remove_files,
            what,
        )
    except CommitConflictError as e:
        raise CommitConflictError(f"{what}: nothing was changed, run it again ({e})") from e
    return DmlResult(
        rows=out.rows,
        files_scanned=len(candidates),
        files_removed=out.files_removed,
        files_added=len(out.added),
        snapshot_id=out.snapshot_id,
        report=report,
    )


def _files_frame(
    spark: SparkSession, table: FileStoreTable, entries: Sequence[ManifestEntry]
) -> DataFrame:
    """Exactly these files with the table's schema, plus each row's data file name."""
    df = view_over_files(spark, table.schema.row_type, table_file_paths(table, entries))
    return df.select("*", F.col("_metadata.file_name").alias(FILE_COLUMN))


def _sql_over(spark: SparkSession, df: DataFrame, query: Callable[[str], str]) -> DataFrame:
    """Run ``query(view)`` over a temporary view of ``df``; the view is dropped once Spark has
    analysed the query (the DataFrame keeps the resolved plan)."""
    view = f"__lakeskip_dml_{uuid.uuid4().hex}"
    df.createOrReplaceTempView(view)
    try:
        return spark.sql(query(view))
    finally:
        spark.catalog.dropTempView(view)


def _remove_files(table: FileStoreTable, entries: Sequence[ManifestEntry]) -> None:
    """Best effort: delete files no snapshot references (a failed commit's output)."""
    for e in entries:
        directory = table.data_file_dir(e)
        for path in (table.data_file_path(e), *(f"{directory}/{x}" for x in e.file.extra_files)):
            with contextlib.suppress(OSError):  # else an orphan for sys.remove_orphan_files
                table.file_io.delete(path)
