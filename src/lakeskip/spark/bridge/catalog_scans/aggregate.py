"""Spark's aggregate push-down (``AggregatePushDown.java``): ``COUNT`` / ``MIN`` / ``MAX``
over a scan's files answered from the manifests, or refused."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.errors import LakeskipWarning
from lakeskip.planner.aggregate import (
    AggregateCall,
    AggregateFunction,
    MetadataAggregate,
    Refusal,
    aggregate_from_columns,
    aggregate_from_metadata,
)
from lakeskip.planner.report import ScanPlan
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
    planner = ScanPlanner(table)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LakeskipWarning)
        plan = planner.plan(target.predicate, time_zone=target.time_zone, snapshot=snap)
        answer = _from_columns(planner, plan, snap, schema, calls)
    if answer is None:  # record by record
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
        files=plan.report.kept_files,  # not len(plan.files): no per-file object
        report_id=ctx.reports.add(req.tag, plan.report),
    )


def _from_columns(
    planner: ScanPlanner,
    plan: ScanPlan,
    snap: Snapshot | None,
    schema: TableSchema,
    calls: list[AggregateCall],
) -> MetadataAggregate | Refusal | None:
    """The answer from the kept files' columns (:func:`aggregate_from_columns`) where no
    file of the snapshot has a deletion vector; None: answer record by record."""
    table = planner.table
    # the columns are decoded under the planner's table schema: the scan's own only
    if snap is None or table.schema != schema or table.deletion_files(snap):
        return None
    live = plan.kept
    if live is not None:  # a whole-table plan: no per-file object
        ids, parts, _ = live.partitions()
        return aggregate_from_columns(
            schema,
            live.longs("_ROW_COUNT"),
            lambda: planner.kept_stats(plan, snap),
            ids,
            parts,
            calls,
            entry_at=live.entry_at,
            schema_by_id=table.schema_by_id,
        )
    files = plan.files
    numbered: dict[tuple[Any, ...], int] = {}
    ids = np.fromiter(
        (numbered.setdefault(tuple(e.partition), len(numbered)) for e in files),
        dtype=np.int64,
        count=len(files),
    )
    return aggregate_from_columns(
        schema,
        np.fromiter((e.file.row_count for e in files), dtype=np.int64, count=len(files)),
        lambda: planner.kept_stats(plan, snap),
        ids,
        list(numbered),
        calls,
        entry_at=files.__getitem__,
        schema_by_id=table.schema_by_id,
    )
