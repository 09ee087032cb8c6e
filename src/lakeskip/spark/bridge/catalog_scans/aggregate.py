"""Spark's aggregate push-down (``AggregatePushDown.java``): ``COUNT`` / ``MIN`` / ``MAX``
over a scan's files answered from the manifests, or refused."""

from __future__ import annotations

import warnings
from typing import Any

from lakeskip.errors import LakeskipWarning
from lakeskip.planner.aggregate import (
    AggregateCall,
    AggregateFunction,
    Refusal,
    aggregate_from_metadata,
)
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark.bridge.catalog_context import ServiceContext
from lakeskip.spark.bridge.catalog_scans.target import deleted_rows_of, partition_json, scan_target
from lakeskip.spark.jvm.protocol import (
    AggregatePartition,
    AggregateRefusedReply,
    AggregateScanReply,
    AggregateScanRequest,
)
from lakeskip.spark.read.query import spark_path

__all__ = ["aggregate_scan"]


def aggregate_scan(
    ctx: ServiceContext, req: AggregateScanRequest, arg: Any
) -> AggregateScanReply | AggregateRefusedReply:
    """Spark's aggregate push-down (``AggregatePushDown.java``): ``aggregates``
    over the files ``plan_scan`` would read, answered from the manifests
    (:mod:`lakeskip.planner.aggregate`): one partial row per partition -- its values, and
    one of its files (path, size) by which Java narrows the partitions to the query's
    filters exactly, as Spark's file index does -- or ``refused``: why not (then Spark
    reads the rows)."""
    target = scan_target(ctx, req)
    table, snap, schema = target.table, target.snapshot, target.schema
    if target.system is not None:
        return AggregateRefusedReply(refused=f"system table ${target.system}")
    calls = [AggregateCall(AggregateFunction(a.function.value), a.column) for a in req.aggregates]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LakeskipWarning)
        plan = ScanPlanner(table).plan(target.predicate, time_zone=target.time_zone, snapshot=snap)
    answer = aggregate_from_metadata(
        schema,
        plan.files,
        calls,
        schema_by_id=table.schema_by_id,
        deleted_rows=deleted_rows_of(table, snap),
    )
    if isinstance(answer, Refusal):
        return AggregateRefusedReply(refused=answer.reason)
    row_type = schema.row_type
    part_types = [row_type.field(k).type for k in schema.partition_keys]
    # a count is a number; a min / max is a column value, in LakeFileIndex's form
    value_types = [
        None
        if c.column is None or c.function is AggregateFunction.COUNT
        else row_type.field(c.column).type
        for c in calls
    ]
    return AggregateScanReply(
        partitions=tuple(
            AggregatePartition(
                path=spark_path(table.file_io.uri(table.data_file_path(a.sample))),
                size=a.sample.file.file_size,
                partition=tuple(
                    partition_json(t, v) for t, v in zip(part_types, a.partition, strict=True)
                ),
                values=tuple(
                    v if t is None else partition_json(t, v)
                    for t, v in zip(value_types, a.values, strict=True)
                ),
                files=a.files,
            )
            for a in answer.partitions
        ),
        files=len(plan.files),
        report_id=ctx.reports.add(req.tag, plan.report),
    )
