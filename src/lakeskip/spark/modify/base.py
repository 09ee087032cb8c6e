"""What every DML engine shares: the results, the requests, the engine protocol, the "plan
the candidates" prologue of DELETE / UPDATE and the Spark helpers (the resolution of MERGE
clauses and the MERGE "changes" frame: :mod:`lakeskip.spark.modify.merge_frame`).

The engines (copy-on-write in :mod:`lakeskip.spark.modify.dispatch`, primary key in
:mod:`lakeskip.spark.modify.pk`, deletion vectors in :mod:`lakeskip.spark.modify.dv`) differ only in
how they read the target's live rows and how they write what changed; everything before that
is here, once.

"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
)
from lakeskip.expressions import BooleanExpression
from lakeskip.planner.report import PruningReport
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark.modify.serializable import serializable_check
from lakeskip.spark.read.dv import files_frame_by_id, pushdown_safe_frame
from lakeskip.sql.merge import MergeAction
from lakeskip.sql.query import condition_predicate, nondeterministic_function

__all__ = [
    "ACTION_COLUMN",
    "FILE_COLUMN",
    "INSERT_CODE",
    "MATCHES_COLUMN",
    "ROW_COLUMN",
    "SOURCE_MARK",
    "Candidates",
    "DmlEngine",
    "DmlRequest",
    "DmlResult",
    "MergeRequest",
    "MergeResult",
    "files_frame",
    "plan_candidates",
    "remove_files",
    "resolve_set",
    "sql_over",
    "sql_with",
]

FILE_COLUMN = "__lakeskip_file"
ROW_COLUMN = "__lakeskip_row"
SOURCE_MARK = "__lakeskip_src"
ACTION_COLUMN = "__lakeskip_action"
MATCHES_COLUMN = "__lakeskip_m"
INSERT_CODE = -1


@dataclass(frozen=True, slots=True)
class DmlResult:
    """What a DELETE or UPDATE did.

    Attributes:
        rows: rows deleted (DELETE) or updated (UPDATE).
        files_scanned: files the planner kept (Spark read them to find matching rows).
        files_removed: files deleted by the snapshot: rewritten (copy-on-write, or compacted
            by a primary-key table's write), or with every row now deleted (deletion
            vectors); 0 on primary-key tables without deletion vectors.
        files_added: files the snapshot added.
        snapshot_id: the committed snapshot, ``None`` when nothing matched.
        report: the planner's pruning report for the condition (``None``: empty table).
        files_rewritten: files whose remaining rows were written again into new files.
        files_marked: files whose rows were marked deleted (deletion vectors): given a new
            or larger DV, or removed when no live row is left. Not rewritten.
    """

    rows: int
    files_scanned: int
    files_removed: int
    files_added: int
    snapshot_id: int | None
    report: PruningReport | None = None
    files_rewritten: int = 0
    files_marked: int = 0


@dataclass(frozen=True, slots=True)
class MergeResult:
    """What a MERGE INTO did.

    Attributes:
        updated / deleted / inserted: rows per action.
        files_scanned: target files read to find matches.
        files_removed: files deleted by the snapshot: rewritten (copy-on-write, or compacted
            by a primary-key table's write), or with every row now deleted (deletion
            vectors); 0 on primary-key tables without deletion vectors.
        files_added: files the snapshot added.
        snapshot_id: the committed snapshot, ``None`` when nothing changed.
        report: the planner's report for the target scan.
        files_rewritten / files_marked: as in :class:`DmlResult`.
    """

    updated: int
    deleted: int
    inserted: int
    files_scanned: int
    files_removed: int
    files_added: int
    snapshot_id: int | None
    report: PruningReport | None = None
    files_rewritten: int = 0
    files_marked: int = 0


@dataclass(frozen=True, slots=True)
class DmlRequest:
    """A DELETE or an UPDATE as the dispatcher (:func:`lakeskip.spark.modify.dispatch.run_dml`) hands it
    to the engine of the table's kind.

    Attributes:
        spark: the session that evaluates the condition and runs the write tasks.
        table: the lakeskip target.
        condition: a Spark SQL boolean expression over the table's columns (``None``: every
            row).
        assignments: UPDATE's ``SET``, already resolved (:func:`resolve_set`); ``None``: a
            DELETE.
        alias: the name the condition may qualify columns with (default: the table's name).
        time_zone: Spark's session time zone for timestamp literals (default: the session's).
    """

    spark: SparkSession
    table: FileStoreTable
    condition: str | None
    assignments: Mapping[str, str] | None = None
    alias: str | None = None
    time_zone: str | None = None

    @property
    def update(self) -> bool:
        return self.assignments is not None


@dataclass(frozen=True, slots=True)
class MergeRequest:
    """A MERGE INTO as the dispatcher (:func:`lakeskip.spark.modify.dispatch.run_merge`) hands it to the
    engine of the table's kind (checked and resolved by :func:`merge_spec`).

    Attributes:
        spark: the session that evaluates the statement and runs the write tasks.
        table: the lakeskip target.
        source: the source rows (any DataFrame).
        on: the match condition (Spark SQL over ``alias`` and ``source_alias``).
        source_alias / alias: the names the condition and the clauses use (``alias`` default:
            the table's name).
        matched / not_matched / not_matched_by_source: the clauses, in order.
        time_zone: Spark's session time zone (default: the session's).
    """

    spark: SparkSession
    table: FileStoreTable
    source: DataFrame
    on: str
    source_alias: str
    alias: str | None = None
    matched: Sequence[MergeAction] = ()
    not_matched: Sequence[MergeAction] = ()
    not_matched_by_source: Sequence[MergeAction] = ()
    time_zone: str | None = None


@dataclass(frozen=True, slots=True)
class DmlEngine:
    """DELETE / UPDATE / MERGE INTO for some kinds of table: :func:`lakeskip.spark.modify.dispatch.engine_for`
    matches the table's kind (:mod:`lakeskip.catalog.kind`) to its engine, and the dispatcher
    hands it the statement as one request.

    Attributes:
        name: for messages and tests.
        delete_update: a DELETE (``request.assignments`` is ``None``) or an UPDATE.
        merge: a MERGE INTO.
    """

    name: str
    delete_update: Callable[[DmlRequest], DmlResult]
    merge: Callable[[MergeRequest], MergeResult]


def session_time_zone(spark: SparkSession, time_zone: str | None) -> str:
    return time_zone or str(spark.conf.get("spark.sql.session.timeZone") or "UTC")


# -- DELETE / UPDATE ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidates:
    """The prologue of a DELETE / UPDATE: the files that might hold a matching row.

    Attributes:
        snapshot: the latest snapshot (``None``: the table is empty).
        files: the planner's kept files (empty: nothing can match).
        cond: the condition as SQL (``TRUE`` without one).
        alias: the name the condition qualifies the target's columns with.
        what: ``"DELETE FROM t"`` / ``"UPDATE t"`` for messages.
        report: the planner's report (``None``: empty table).
    """

    snapshot: Snapshot | None
    files: tuple[ManifestEntry, ...]
    cond: str
    alias: str
    what: str
    report: PruningReport | None
    predicate: BooleanExpression | None = None
    time_zone: str = "UTC"

    def nothing(self) -> DmlResult:
        """The result when nothing matched."""
        return DmlResult(0, len(self.files), 0, 0, None, self.report)

    def concurrent_check(self, table: FileStoreTable) -> Callable[[Snapshot | None], None]:
        """The commit's check that the rows the condition may match are the same at the
        snapshot it commits on as at :attr:`snapshot`: a row committed since was never read
        (committing would leave it un-deleted / un-updated although the statement commits
        after it: a lost update), a row deleted since would be written again
        (:func:`~lakeskip.spark.modify.serializable.serializable_check`). A
        :class:`~lakeskip.errors.CommitConflictError` makes ``retry_on_conflict`` plan the statement again
        on the newer snapshot (Delta's ConcurrentAppendException, Iceberg's serializable
        isolation)."""
        assert self.snapshot is not None and self.predicate is not None
        return serializable_check(
            table, self.snapshot, self.predicate, self.time_zone, self.what, read_files=self.files
        )


def plan_candidates(request: DmlRequest) -> Candidates:
    """Check the condition is deterministic (it is evaluated more than once), refresh the
    table, and plan the files that might hold a row where it is TRUE (stats, indexes; never
    resurrecting a version on primary-key tables)."""
    spark, table, condition = request.spark, request.table, request.condition
    update, alias, time_zone = request.update, request.alias, request.time_zone
    what = f"{'UPDATE' if update else 'DELETE FROM'} {table.identifier}"
    if condition is not None and (fn := nondeterministic_function(condition)) is not None:
        raise InvalidArgumentError(f"{what}: the condition must be deterministic ({fn}() is not)")
    table.refresh()
    snapshot = table.latest_snapshot()
    alias = alias or table.identifier.rsplit(".", 1)[-1]
    cond = f"({condition})" if condition is not None else "TRUE"
    if snapshot is None:
        return Candidates(None, (), cond, alias, what, None)
    tz = session_time_zone(spark, time_zone)
    predicate = condition_predicate(condition, table.schema.row_type, alias, tz)
    plan = ScanPlanner(table).plan(predicate, time_zone=tz, snapshot=snapshot)
    return Candidates(snapshot, tuple(plan.files), cond, alias, what, plan.report, predicate, tz)


def resolve_set(
    table: FileStoreTable, assignments: Mapping[str, str] | Sequence[tuple[str, str]]
) -> dict[str, str]:
    """UPDATE's ``SET`` as resolved column name -> Spark SQL value.

    Raises:
        ColumnNotFoundError: an assigned column is not in the table.
        InvalidArgumentError: a column is assigned twice, or nothing is assigned.
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
    return resolved


# -- Spark helpers --------------------------------------------------------------------------


def files_frame(
    spark: SparkSession, table: FileStoreTable, entries: Sequence[ManifestEntry]
) -> DataFrame:
    """Exactly these files with the table's schema, plus each row's data file name and
    position (``FILE_COLUMN``, ``ROW_COLUMN``)."""
    df = files_frame_by_id(
        spark, table, entries, {FILE_COLUMN: "file_name", ROW_COLUMN: "row_index"}
    )
    return pushdown_safe_frame(df, table, entries)


def sql_over(spark: SparkSession, df: DataFrame, query: Callable[[str], str]) -> DataFrame:
    """Run ``query(view)`` over a temporary view of ``df``; the view is dropped once Spark has
    analysed the query (the DataFrame keeps the resolved plan)."""
    return sql_with(spark, {"v": df}, lambda views: query(views["v"]))


def sql_with(
    spark: SparkSession, frames: Mapping[str, DataFrame], query: Callable[[Mapping[str, str]], str]
) -> DataFrame:
    """Run ``query(view names)`` over temporary views of ``frames``; the views are dropped
    once Spark has analysed the query (the DataFrame keeps the resolved plan)."""
    views = {k: f"__lakeskip_dml_{uuid.uuid4().hex}" for k in frames}
    for k, df in frames.items():
        df.createOrReplaceTempView(views[k])
    try:
        return spark.sql(query(views))
    finally:
        for v in views.values():
            spark.catalog.dropTempView(v)


def remove_files(table: FileStoreTable, entries: Sequence[ManifestEntry]) -> None:
    """Best effort: delete files no snapshot references (a failed commit's output)."""
    table.remove_unpublished(entries)
