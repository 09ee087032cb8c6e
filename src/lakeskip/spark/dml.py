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
from typing import Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeskip.catalog.manifest import ManifestEntry
from lakeskip.catalog.options import deletion_vectors_enabled
from lakeskip.catalog.snapshot import CommitKind, Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    ColumnNotFoundError,
    CommitConflictError,
    InvalidArgumentError,
    UnsupportedStatementError,
)
from lakeskip.expressions import AlwaysTrue
from lakeskip.planner.report import PruningReport
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark.dv_dml import dv_delete_update
from lakeskip.spark.pk_dml import PkDmlResult, pk_delete_where, pk_update_where
from lakeskip.spark.query import table_file_paths, view_over_files
from lakeskip.spark.writer import align_by_position, write_entries
from lakeskip.sql.merge import MergeAction, MergeActionKind
from lakeskip.sql.query import condition_predicate, nondeterministic_function
from lakeskip.types import RowType

__all__ = [
    "COPY_ON_WRITE",
    "CopyOnWrite",
    "DmlEngine",
    "DmlResult",
    "MergeResult",
    "delete_where",
    "merge_into",
    "update_where",
]

FILE_COLUMN = "__lakeskip_file"
ROW_COLUMN = "__lakeskip_row"


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
    return df.select(
        "*",
        F.col("_metadata.file_name").alias(FILE_COLUMN),
        F.col("_metadata.row_index").alias(ROW_COLUMN),
    )


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


# -- MERGE INTO -----------------------------------------------------------------------------

SOURCE_MARK = "__lakeskip_src"
ACTION_COLUMN = "__lakeskip_action"


@dataclass(frozen=True, slots=True)
class MergeResult:
    """What a MERGE INTO did.

    Attributes:
        updated / deleted / inserted: rows per action.
        files_scanned: target files read to find matches.
        files_removed: files rewritten (only those holding a row an action applied to).
        files_added: files the snapshot added (rewritten + inserted rows).
        snapshot_id: the committed snapshot, ``None`` when nothing changed.
        report: the planner's report for the target scan.
    """

    updated: int
    deleted: int
    inserted: int
    files_scanned: int
    files_removed: int
    files_added: int
    snapshot_id: int | None
    report: PruningReport | None = None


def _case_chain(actions: Sequence[MergeAction], first_code: int) -> str:
    """``CASE WHEN cond THEN code ... ELSE 0 END``: the first clause whose condition is TRUE
    (SQL: a NULL condition does not apply)."""
    if not actions:
        return "0"
    parts = []
    for i, a in enumerate(actions):
        cond = f"coalesce(({a.condition}), false)" if a.condition is not None else "TRUE"
        parts.append(f"WHEN {cond} THEN {first_code + i}")
    return "CASE " + " ".join(parts) + " ELSE 0 END"


def _resolve_assignments(
    table: FileStoreTable, row_type: RowType, action: MergeAction, source_alias: str, what: str
) -> dict[str, str]:
    """column -> Spark SQL value of an UPDATE/INSERT action (``*``: the source's columns)."""
    if action.assignments is None:
        s = _quote(source_alias)
        return {f.name: f"{s}.{_quote(f.name)}" for f in row_type}
    out: dict[str, str] = {}
    for column, value in action.assignments:
        if not row_type.has(column):
            raise ColumnNotFoundError(
                f"{what}: no column {column} in {table.identifier} (columns: "
                f"{', '.join(row_type.names)})"
            )
        name = row_type.field(column).name
        if name in out:
            raise InvalidArgumentError(f"{what}: column {name} assigned twice")
        out[name] = value
    return out


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
    """``MERGE INTO table [AS alias] USING source AS source_alias ON on WHEN ...``, copy-on-write.

    Spark's semantics: per target row the first WHEN MATCHED (or NOT MATCHED BY SOURCE) clause
    whose condition is TRUE applies; a target row matched by more than one source row is an
    error when there are WHEN MATCHED clauses; per unmatched source row the first WHEN NOT
    MATCHED clause inserts. Only the files holding a row that an UPDATE or DELETE applies to are
    rewritten; inserted rows go to new files; one atomic commit (the conflict check of DELETE).

    Args:
        spark: the session that evaluates the statement and runs the write tasks.
        table: the lakeskip target.
        source: the source rows (any DataFrame).
        on: the match condition (Spark SQL over ``alias`` and ``source_alias``).
        source_alias / alias: the names the condition and the clauses use.
        matched / not_matched / not_matched_by_source: the clauses, in order.
        time_zone: Spark's session time zone (default: the session's).

    Raises:
        InvalidArgumentError: a target row matches several source rows; a condition is not
            deterministic; a column is assigned twice.
        ColumnNotFoundError: a SET / INSERT column is not in the table.
        CommitConflictError: a concurrent commit removed a file being rewritten.
    """
    what = f"MERGE INTO {table.identifier}"
    table.refresh()
    # copy-on-write reads the data files as they are: right for plain append tables only
    # (a primary-key table's files hold row versions, a deletion-vector table's hold deleted rows)
    if table.schema.is_primary_key_table:
        raise UnsupportedStatementError(
            f"{what}: MERGE INTO is not supported for primary-key tables yet"
        )
    if deletion_vectors_enabled(table.schema.options):
        raise UnsupportedStatementError(
            f"{what}: MERGE INTO is not supported for deletion-vector tables yet"
        )
    for text in [on, *(a.condition for a in (*matched, *not_matched, *not_matched_by_source))]:
        if text is not None and (fn := nondeterministic_function(text)) is not None:
            raise InvalidArgumentError(f"{what}: conditions must be deterministic ({fn}() is not)")
    table.refresh()
    row_type = table.schema.row_type
    alias = alias or table.identifier.rsplit(".", 1)[-1]
    if alias.lower() == source_alias.lower():
        raise InvalidArgumentError(f"{what}: target and source are both named {alias}")
    updates = {
        i: _resolve_assignments(table, row_type, a, source_alias, what)
        for i, a in enumerate((*matched, *not_matched_by_source), start=1)
        if a.kind is MergeActionKind.UPDATE
    }
    deletes = [
        i
        for i, a in enumerate((*matched, *not_matched_by_source), start=1)
        if a.kind is MergeActionKind.DELETE
    ]
    inserts = [_resolve_assignments(table, row_type, a, source_alias, what) for a in not_matched]
    tz = time_zone or str(spark.conf.get("spark.sql.session.timeZone") or "UTC")
    snapshot = table.latest_snapshot()
    entries: list[ManifestEntry] = []
    report: PruningReport | None = None
    if snapshot is not None:
        plan = ScanPlanner(table).plan(AlwaysTrue(), time_zone=tz, snapshot_id=snapshot.id)
        entries, report = list(plan.files), plan.report
    t, s = _quote(alias), _quote(source_alias)
    src = source.select("*", F.lit(True).alias(SOURCE_MARK))
    cond = f"({on})"
    action = (
        f"CASE WHEN {s}.{SOURCE_MARK} IS NOT NULL THEN {_case_chain(matched, 1)} "
        f"ELSE {_case_chain(not_matched_by_source, 1 + len(matched))} END"
    )

    def joined(views: Mapping[str, str], target_view: str) -> str:
        """Each target row once, with its matching source row (NULLs: none)."""
        if matched:  # at most one match per row (checked before any rewrite)
            return f"{target_view} AS {t} LEFT JOIN {views['s']} AS {s} ON {cond}"
        # no WHEN MATCHED: the source's columns are not needed, only whether a match exists
        return (
            f"{target_view} AS {t} LEFT JOIN (SELECT DISTINCT {t}.{FILE_COLUMN} AS __f, "
            f"{t}.{ROW_COLUMN} AS __r, TRUE AS {SOURCE_MARK} FROM {target_view} AS {t} "
            f"JOIN {views['s']} AS {s} ON {cond}) AS {s} "
            f"ON {t}.{FILE_COLUMN} = {s}.__f AND {t}.{ROW_COLUMN} = {s}.__r"
        )

    affected: list[ManifestEntry] = []
    counts: dict[int, int] = {}
    pieces: list[DataFrame] = []
    if entries and (matched or not_matched_by_source):
        rows = _sql_with(
            spark,
            {"t": _files_frame(spark, table, entries), "s": src},
            lambda v: (
                f"SELECT f, a, count(*) AS n, max(m) AS m FROM (SELECT {t}.{FILE_COLUMN} AS f, "
                f"max({action}) AS a, count({s}.{SOURCE_MARK}) AS m FROM {joined(v, v['t'])} "
                f"GROUP BY {t}.{FILE_COLUMN}, {t}.{ROW_COLUMN}) GROUP BY f, a"
            ),
        ).collect()
        if matched and any(int(r["m"]) > 1 for r in rows):
            raise InvalidArgumentError(
                f"{what}: a target row matches more than one source row (each target row may "
                "be updated or deleted by one source row only)"
            )
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
            q = _quote(f.name)
            whens = [f"WHEN {c} THEN __v{c}_{i}" for c, a in updates.items() if f.name in a]
            outer.append(
                f"CASE {ACTION_COLUMN} {' '.join(whens)} ELSE {q} END AS {q}" if whens else q
            )
        keep = f"WHERE {ACTION_COLUMN} NOT IN ({', '.join(map(str, deletes))})" if deletes else ""
        pieces.append(
            _sql_with(
                spark,
                {"t": _files_frame(spark, table, affected), "s": src},
                lambda v: (
                    f"SELECT {', '.join(outer)} FROM (SELECT {inner_items} FROM "
                    f"{joined(v, v['t'])}) {keep}"
                ),
            )
        )
    if not_matched:
        frames = {"s": src}
        if entries:
            frames["t"] = _files_frame(spark, table, entries)
        firsts = [
            f"coalesce(({a.condition}), false)" if a.condition is not None else "TRUE"
            for a in not_matched
        ]
        items = []
        for f in row_type:
            ddl = f.type.spark_ddl()
            # one branch per clause, in order: the first clause that applies decides
            whens = [
                f"WHEN {c} THEN "
                + (f"CAST(({assigned[f.name]}) AS {ddl})" if f.name in assigned else "NULL")
                for c, assigned in zip(firsts, inserts, strict=True)
            ]
            value = f"CAST(CASE {' '.join(whens)} END AS {ddl})"
            items.append(f"{value} AS {_quote(f.name)}")

        def insert_sql(v: Mapping[str, str]) -> str:
            anti = f" LEFT ANTI JOIN {v['t']} AS {t} ON {cond}" if "t" in v else ""
            return (
                f"SELECT {', '.join(items)} FROM {v['s']} AS {s}{anti} WHERE {' OR '.join(firsts)}"
            )

        pieces.append(_sql_with(spark, frames, insert_sql))
    if not pieces:
        return MergeResult(0, 0, 0, len(entries), 0, 0, None, report)
    data = align_by_position(pieces[0], row_type, what)
    for p in pieces[1:]:
        data = data.unionAll(align_by_position(p, row_type, what))
    new_entries = write_entries(table, data)
    try:
        if affected:
            snap = table.commit(
                new_entries, deleted=affected, kind=CommitKind.OVERWRITE, overwrite_partitions=[]
            )
        else:
            snap = table.commit(new_entries, kind=CommitKind.APPEND)
    except CommitConflictError as e:
        _remove_files(table, new_entries)
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
        files_added=len(new_entries),
        snapshot_id=snap.id if snap is not None else None,
        report=report,
    )


def _sql_with(
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


# -- engines: how DML runs on one kind of table ---------------------------------------------


class DmlEngine(Protocol):
    """DELETE / UPDATE / MERGE INTO for one kind of table; :mod:`lakeskip.spark.dml_engines`
    picks the first engine whose :meth:`handles` accepts the table. The arguments are those of
    :func:`delete_where`, :func:`update_where` and :func:`merge_into`."""

    name: str

    def handles(self, table: FileStoreTable) -> bool: ...

    def delete(
        self,
        spark: SparkSession,
        table: FileStoreTable,
        condition: str | None,
        *,
        alias: str | None,
        time_zone: str | None,
    ) -> DmlResult: ...

    def update(
        self,
        spark: SparkSession,
        table: FileStoreTable,
        assignments: Sequence[tuple[str, str]],
        condition: str | None,
        *,
        alias: str | None,
        time_zone: str | None,
    ) -> DmlResult: ...

    def merge(
        self,
        spark: SparkSession,
        table: FileStoreTable,
        source: DataFrame,
        *,
        on: str,
        source_alias: str,
        alias: str | None,
        matched: Sequence[MergeAction],
        not_matched: Sequence[MergeAction],
        not_matched_by_source: Sequence[MergeAction],
        time_zone: str | None,
    ) -> MergeResult: ...


class CopyOnWrite:
    """Append tables: rewrite the files that hold affected rows (this module)."""

    name = "copy-on-write"

    def handles(self, table: FileStoreTable) -> bool:
        return True

    def delete(
        self,
        spark: SparkSession,
        table: FileStoreTable,
        condition: str | None,
        *,
        alias: str | None,
        time_zone: str | None,
    ) -> DmlResult:
        return delete_where(spark, table, condition, alias=alias, time_zone=time_zone)

    def update(
        self,
        spark: SparkSession,
        table: FileStoreTable,
        assignments: Sequence[tuple[str, str]],
        condition: str | None,
        *,
        alias: str | None,
        time_zone: str | None,
    ) -> DmlResult:
        return update_where(spark, table, assignments, condition, alias=alias, time_zone=time_zone)

    def merge(
        self,
        spark: SparkSession,
        table: FileStoreTable,
        source: DataFrame,
        *,
        on: str,
        source_alias: str,
        alias: str | None,
        matched: Sequence[MergeAction],
        not_matched: Sequence[MergeAction],
        not_matched_by_source: Sequence[MergeAction],
        time_zone: str | None,
    ) -> MergeResult:
        return merge_into(
            spark,
            table,
            source,
            on=on,
            source_alias=source_alias,
            alias=alias,
            matched=matched,
            not_matched=not_matched,
            not_matched_by_source=not_matched_by_source,
            time_zone=time_zone,
        )


COPY_ON_WRITE = CopyOnWrite()
