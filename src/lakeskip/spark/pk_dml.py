"""``DELETE`` and ``UPDATE`` on primary-key tables: new versions of the matched keys.

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
    commit    one APPEND snapshot (no file is removed)

With deletion vectors (:mod:`lakeskip.catalog.pk_dv_write`) the matched rows are read as
they are (files at level > 0 minus their DVs); DELETE only marks each matched key's live
position in its file's DV (no ``-D`` row: Paimon's raw readers must never meet one), UPDATE
marks it and writes the new row one level lower; one snapshot carries files and DVs.

The primary key itself (which includes the partition columns) cannot be assigned by UPDATE:
changing a key is a DELETE of the old key plus an INSERT of the new one, as in Paimon.

Every row of the merged result that the condition matches is found: a key whose newest
version lies in a file the planner skipped cannot match (see the planner's primary-key rule),
so filtering the merge of the kept files by the condition is exact.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import SparkSession

from lakeskip.catalog.merge_engine import MergeEngine
from lakeskip.catalog.primary_key import RowKind
from lakeskip.catalog.snapshot import CommitKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError, UnsupportedStatementError
from lakeskip.planner.report import PruningReport
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark.query import table_view
from lakeskip.spark.writer import (
    WrittenEntries,
    align_by_position,
    commit_written,
    write_entries,
)
from lakeskip.sql.query import condition_predicate, nondeterministic_function
from lakeskip.types import RowType

__all__ = ["PkDmlResult", "pk_delete_where", "pk_update_where"]


@dataclass(frozen=True, slots=True)
class PkDmlResult:
    """What a DELETE or UPDATE on a primary-key table did (same fields as ``DmlResult``;
    ``files_removed`` is always 0: versions are appended, nothing is rewritten)."""

    rows: int
    files_scanned: int
    files_removed: int
    files_added: int
    snapshot_id: int | None
    report: PruningReport | None = None


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def pk_delete_where(
    spark: SparkSession,
    table: FileStoreTable,
    condition: str | None,
    *,
    alias: str | None = None,
    time_zone: str | None = None,
) -> PkDmlResult:
    """``DELETE FROM table WHERE condition`` on a primary-key table: ``-D`` versions of the
    matched keys."""
    return _write_versions(spark, table, condition, None, alias, time_zone)


def pk_update_where(
    spark: SparkSession,
    table: FileStoreTable,
    assignments: Mapping[str, str],
    condition: str | None,
    *,
    alias: str | None = None,
    time_zone: str | None = None,
) -> PkDmlResult:
    """``UPDATE table SET ... WHERE condition`` on a primary-key table: ``+U`` versions.

    ``assignments``: resolved column name -> Spark SQL expression.

    Raises:
        InvalidArgumentError: a primary-key (or partition) column is assigned.
    """
    keys = set(table.schema.primary_keys) | set(table.schema.partition_keys)
    assigned = sorted(k for k in assignments if k in keys)
    if assigned:
        raise InvalidArgumentError(
            f"UPDATE {table.identifier}: cannot assign primary key column(s) "
            f"{', '.join(assigned)} (DELETE the row and INSERT the new key)"
        )
    return _write_versions(spark, table, condition, assignments, alias, time_zone)


def _refuse_null_assignments(
    spark: SparkSession,
    view: str,
    alias: str,
    cond: str,
    assignments: Mapping[str, str],
    row_type: RowType,
    what: str,
) -> None:
    """A partial-update table keeps a column's newest *non-null* value: an UPDATE that sets a
    non-null column to NULL would silently keep the old value, so it is refused instead."""
    nulled = [
        f"({_quote(f.name)} IS NOT NULL AND CAST(({assignments[f.name]}) AS "
        f"{f.type.spark_ddl()}) IS NULL)"
        for f in row_type
        if f.name in assignments
    ]
    found = spark.sql(
        f"SELECT 1 FROM {view} AS {_quote(alias)} WHERE coalesce({cond}, false) "
        f"AND ({' OR '.join(nulled)}) LIMIT 1"
    ).collect()
    if found:
        raise UnsupportedStatementError(
            f"{what}: cannot set a column to NULL on a partial-update table (the merge keeps "
            "each column's newest non-null value)"
        )


def _write_versions(
    spark: SparkSession,
    table: FileStoreTable,
    condition: str | None,
    assignments: Mapping[str, str] | None,
    alias: str | None,
    time_zone: str | None,
) -> PkDmlResult:
    verb = "DELETE FROM" if assignments is None else "UPDATE"
    what = f"{verb} {table.identifier}"
    engine = MergeEngine.of(table.schema.options)
    if assignments is None and (why := engine.delete_refusal(table.identifier)) is not None:
        raise UnsupportedStatementError(why)
    if condition is not None and (fn := nondeterministic_function(condition)) is not None:
        raise InvalidArgumentError(f"{what}: the condition must be deterministic ({fn}() is not)")
    table = table.refresh()
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return PkDmlResult(0, 0, 0, 0, None)
    alias = alias or table.identifier.rsplit(".", 1)[-1]
    tz = time_zone or str(spark.conf.get("spark.sql.session.timeZone") or "UTC")
    row_type = table.schema.row_type
    predicate = condition_predicate(condition, row_type, alias, tz)
    plan = ScanPlanner(table).plan(predicate, time_zone=tz, snapshot_id=snapshot.id)
    candidates = list(plan.files)
    if not candidates:
        return PkDmlResult(0, 0, 0, 0, None, plan.report)
    cond = f"({condition})" if condition is not None else "TRUE"
    items = []
    for f in row_type:
        q = _quote(f.name)
        if assignments is not None and f.name in assignments:
            items.append(f"CAST(({assignments[f.name]}) AS {f.type.spark_ddl()}) AS {q}")
        else:
            items.append(q)
    view = f"__lakeskip_pk_dml_{uuid.uuid4().hex}"
    table_view(spark, table, candidates, snapshot).createOrReplaceTempView(view)
    try:
        matched = spark.sql(
            f"SELECT {', '.join(items)} FROM {view} AS {_quote(alias)} WHERE coalesce({cond}, false)"
        )
        if engine.partial_update and assignments:
            _refuse_null_assignments(spark, view, alias, cond, assignments, row_type, what)
    finally:
        spark.catalog.dropTempView(view)
    kind = RowKind.DELETE if assignments is None else RowKind.UPDATE_AFTER
    entries = write_entries(table, align_by_position(matched, row_type, what), value_kind=kind)
    if isinstance(entries, WrittenEntries):  # deletion vectors: older versions marked
        if not entries and not entries.removed and entries.vectors is None:
            return PkDmlResult(0, len(candidates), 0, 0, None, plan.report)
        snap = commit_written(table, entries)
        return PkDmlResult(
            rows=entries.marked,
            files_scanned=len(candidates),
            files_removed=len(entries.removed),
            files_added=len(entries),
            snapshot_id=snap.id if snap is not None else None,
            report=plan.report,
        )
    if not entries:
        return PkDmlResult(0, len(candidates), 0, 0, None, plan.report)
    snap = table.commit(entries, kind=CommitKind.APPEND)
    return PkDmlResult(
        rows=sum(e.file.row_count for e in entries),
        files_scanned=len(candidates),
        files_removed=0,
        files_added=len(entries),
        snapshot_id=snap.id if snap is not None else None,
        report=plan.report,
    )
