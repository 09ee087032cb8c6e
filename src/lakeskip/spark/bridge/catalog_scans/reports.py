"""What reads report beyond their files: a reused scan's pruning report filed again under
the query's tag, EXPLAIN PRUNING's rows, and a metadata system table's rows."""

from __future__ import annotations

from typing import Any

from lakeskip.catalog.ops.system_tables import split_system_name
from lakeskip.errors import InvalidArgumentError
from lakeskip.spark.bridge.catalog_context import ServiceContext
from lakeskip.spark.bridge.system_service import system_rows as system_table_rows
from lakeskip.spark.jvm.protocol import (
    ExplainRowsRequest,
    FileReportRequest,
    FoundReply,
    RowsReply,
    SystemRowsRequest,
)

__all__ = ["explain_rows", "file_report", "system_rows"]


def system_rows(ctx: ServiceContext, req: SystemRowsRequest, arg: Any) -> RowsReply:
    """The rows of ``t$name`` (at ``snapshot_id``, else the latest snapshot)."""
    base, system = split_system_name(req.name)
    if system is None:
        raise InvalidArgumentError(f"{req.name} is not a system table")
    table = ctx.table(req, base)
    sid = req.snapshot_id
    snap = table.snapshot(sid) if sid is not None else table.latest_snapshot()
    return system_table_rows(table, system, snap, req.time_zone or ctx.time_zone)


def file_report(ctx: ServiceContext, req: FileReportRequest, arg: Any) -> FoundReply:
    """A scan Java reused (``ScanCache``) reports again: its stored report is filed under
    this query's tag; ``found`` false if the log has let it go."""
    report = ctx.reports.by_id(req.report_id)
    if report is not None:
        ctx.reports.add(req.tag, report)
    return FoundReply(found=report is not None)


def explain_rows(ctx: ServiceContext, req: ExplainRowsRequest, arg: Any) -> RowsReply:
    """``EXPLAIN PRUNING`` in plain Spark SQL (``LakeExplain.java``): the reports the
    query's scans filed under ``query_tag``, as ``Session.sql``'s EXPLAIN PRUNING rows."""
    reports = ctx.reports.pop(req.query_tag)
    return RowsReply(rows=tuple([r.table, k, v] for r in reports for k, v in r.lines()))
