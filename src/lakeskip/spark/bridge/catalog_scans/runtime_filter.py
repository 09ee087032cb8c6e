"""Spark's runtime filters on a planned scan (``LakeScan.filter``): the scan's files narrowed
by a join's keys (:func:`~lakeskip.planner.runtime.refine_plan`)."""

from __future__ import annotations

import time
import warnings
from typing import Any

from lakeskip.errors import LakeskipWarning
from lakeskip.planner.runtime import refine_plan
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark.bridge.catalog_context import ServiceContext
from lakeskip.spark.bridge.catalog_scans.target import pruning_figures, scan_target
from lakeskip.spark.jvm.protocol import RuntimeFilterReply, RuntimeFilterRequest
from lakeskip.spark.read.predicate_json import predicate_from_json
from lakeskip.spark.read.query import spark_path

__all__ = ["runtime_filter"]


def runtime_filter(ctx: ServiceContext, req: RuntimeFilterRequest, arg: Any) -> RuntimeFilterReply:
    """Spark's runtime filters on a planned scan (``LakeScan.filter``): the scan's plan (the
    same snapshot and filters, so the planner's cache answers it) narrowed by the join's
    keys (:func:`~lakeskip.planner.runtime.refine_plan`); the paths of the files kept, a
    subset of the scan's, and its figures with the runtime tier. The report is filed under
    the query's tag like the scan's (EXPLAIN PRUNING shows the runtime tier)."""
    target = scan_target(ctx, req)
    table, snap, schema, tz = target.table, target.snapshot, target.schema, target.time_zone
    runtime = predicate_from_json(req.runtime, schema.row_type, time_zone=tz)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LakeskipWarning)
        started = time.perf_counter()
        planner = ScanPlanner(table)
        plan = planner.plan(target.predicate, time_zone=tz, snapshot=snap)
        refined = refine_plan(planner, plan, snap, runtime, time_zone=tz)
        planned_ms = (time.perf_counter() - started) * 1000
    ctx.reports.add(req.tag, refined.report)
    return RuntimeFilterReply(
        files=tuple(spark_path(table.file_io.uri(table.data_file_path(e))) for e in refined.files),
        pruning=pruning_figures(refined.report, planned_ms),
    )
