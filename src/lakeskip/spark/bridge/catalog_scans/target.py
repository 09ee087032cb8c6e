"""What every scan callback reads (:func:`scan_target`: the table, its snapshot and schema,
the query's filters as one predicate) and the forms in which a scan's answer goes back to
Java: a partition or column value as the Java file index reads it, a pruning report's
figures, and how many rows of a file its deletion vector deletes."""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.ops.system_tables import split_system_name
from lakeskip.catalog.ops.time_travel import read_snapshot, table_at, table_with_schema
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import LakeskipError
from lakeskip.expressions import BooleanExpression, bind
from lakeskip.planner.report import PruningReport
from lakeskip.spark.bridge.catalog_context import ServiceContext
from lakeskip.spark.jvm.protocol import PlanScanRequest, PruningFigures
from lakeskip.spark.read.predicate_json import filters_exact, predicate_from_json
from lakeskip.spark.read.query import scan_settings
from lakeskip.types import DataType, TypeRoot

__all__ = [
    "ScanTarget",
    "deleted_rows_of",
    "partition_json",
    "pruning_figures",
    "scan_target",
]


def partition_json(t: DataType, value: Any) -> Any:
    """A partition value (internal form) as the Java file index reads it."""
    if value is None:
        return None
    r = t.root
    if t.is_timestamp:
        return int(value) * 1000 if t.timestamp_unit == "ms" else int(value)
    if r is TypeRoot.DECIMAL:
        return format(value, "f")
    if r is TypeRoot.BINARY:
        return base64.b64encode(bytes(value)).decode()
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        f = float(value)
        return f if math.isfinite(f) else repr(f).replace("inf", "Infinity").replace("nan", "NaN")
    return value


def pruning_figures(report: PruningReport, planning_ms: float) -> PruningFigures:
    """What the JVM scan shows of a pruning report: its EXPLAIN text and its Spark metrics
    (``LakePruning.java``); ``planning_ms`` is the time this scan's planning took (a plan
    served from the planner's cache keeps the first plan's time in its report)."""
    return PruningFigures(
        snapshot=report.snapshot_id,
        total=report.total_files,
        kept=report.kept_files,
        partition=report.skipped_by_partition,
        bucket=report.skipped_by_bucket,
        stats=report.skipped_by_stats,
        index=dict(sorted(report.skipped_by_index.items())),
        column=dict(sorted(report.skipped_by_column.items())),
        other=report.skipped_files
        - report.skipped_by_partition
        - report.skipped_by_bucket
        - report.skipped_by_stats
        - sum(report.skipped_by_index.values())
        - sum(report.skipped_at_runtime.values())
        - sum(report.skipped_by_limit.values()),
        index_files_read=report.index_files_read,
        index_bytes_read=report.index_bytes_read,
        planning_ms=round(planning_ms, 3),
        runtime=dict(sorted(report.skipped_at_runtime.items())),
        limit=dict(sorted(report.skipped_by_limit.items())),
    )


@dataclass(frozen=True, slots=True)
class ScanTarget:
    """What a scan callback reads (:func:`scan_target`)."""

    table: FileStoreTable
    #: ``None``: the table has no snapshot
    snapshot: Snapshot | None
    schema: TableSchema
    time_zone: str
    #: the query's filters as one predicate (``None``: none Python can use)
    predicate: BooleanExpression | None
    #: ``read_optimized`` / ``audit_log`` when the request names ``t$system``
    system: str | None
    #: whether ``predicate`` selects exactly the filters' rows (not a superset)
    exact: bool = False


def scan_target(
    ctx: ServiceContext, req: PlanScanRequest, schema_id: int | None = None
) -> ScanTarget:
    """What a scan callback (``plan_scan``, ``aggregate_scan``) reads: the table, the
    snapshot (pinned by ``load_table``, else the session's time travel settings, else the
    latest), its schema (``schema_id``: this one instead of the snapshot's) and the query's
    filters as one predicate."""
    base, system = split_system_name(req.name)
    # t$read_optimized: the table's scan, other files
    table = ctx.table(req, base)
    snapshot_id = req.snapshot_id
    # the querying session's settings travel with the callback (Bridge.session): each
    # spark.conf.get from here would be one more round trip into the JVM per query
    session = req.session
    snap: Snapshot | None
    if snapshot_id is None:  # else the snapshot load_table chose from the AS OF clause
        settings = (
            scan_settings(dict(session.settings).get)
            if session is not None
            else scan_settings(lambda key: ctx.spark.conf.get(key, ""))
        )
        snap = read_snapshot(table, None, settings)
        if snap is None:
            # the latest, named once: the plan and its token are of the same snapshot
            snap = table.latest_snapshot()
        else:
            snapshot_id = snap.id
    else:
        snap = table.snapshot(snapshot_id)
    schema = (
        table.schema_by_id(snap.schema_id) if snapshot_id and snap is not None else table.schema
    )
    if schema_id is not None:
        schema = table.schema_by_id(schema_id)
        table = table_with_schema(table, schema_id)
    elif snap is not None and schema.id != table.schema.id:
        table = table_at(table, snap)  # plan with the columns the snapshot has (renamed since)
    row_type = schema.row_type
    tz = str(session.time_zone or "UTC") if session is not None else ctx.time_zone

    def binds(e: BooleanExpression) -> bool:
        try:
            bind(row_type, e, time_zone=tz)
        except LakeskipError:
            return False
        return True

    predicate = predicate_from_json(req.filters, row_type, check=binds, time_zone=tz)
    exact = filters_exact(req.filters, row_type, check=binds, time_zone=tz)
    return ScanTarget(table, snap, schema, tz, predicate, system, exact)


def deleted_rows_of(table: FileStoreTable, snap: Snapshot | None) -> Callable[[ManifestEntry], int]:
    """How many rows of a file its deletion vector in ``snap`` deletes (0: none)."""
    refs = table.deletion_files(snap) if snap is not None else {}

    def deleted_rows(e: ManifestEntry) -> int:
        ref = refs.get(e.file.file_name)
        if ref is None:
            return 0
        if ref.meta.cardinality is not None:
            return int(ref.meta.cardinality)
        return len(table.read_deletion_vector(ref, e.file.row_count))

    return deleted_rows
