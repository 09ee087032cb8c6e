"""A streaming read's callbacks (``LakeMicroBatchStream``): its initial offset, the end of
its next micro-batch, and a micro-batch's files, replied as a batch scan's."""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Any

from lakeskip.catalog.ops.system_tables import split_system_name
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import LakeskipWarning, StreamReadError
from lakeskip.planner.scan import ScanPlanner
from lakeskip.planner.stream import (
    StreamOffset,
    check_streamable,
    plan_stream_batch,
    stream_end,
)
from lakeskip.planner.stream import stream_start as start_offset
from lakeskip.spark.bridge.catalog_context import ServiceContext
from lakeskip.spark.bridge.catalog_scans.batch import scan_reply
from lakeskip.spark.bridge.catalog_scans.target import scan_target
from lakeskip.spark.jvm.protocol import (
    PlanScanReply,
    StreamLatestRequest,
    StreamOffsetReply,
    StreamPlanRequest,
    StreamStartRequest,
    TableRequest,
)

__all__ = ["stream_latest", "stream_plan", "stream_start"]


def stream_start(ctx: ServiceContext, req: StreamStartRequest, arg: Any) -> StreamOffsetReply:
    """A new streaming read's initial offset (:func:`lakeskip.planner.stream.stream_start`)."""
    table = _stream_table(ctx, req)
    offset = start_offset(table, req.options)
    return StreamOffsetReply(snapshot=offset.snapshot, full=offset.full)


def stream_latest(ctx: ServiceContext, req: StreamLatestRequest, arg: Any) -> StreamOffsetReply:
    """The end of a streaming read's next micro-batch (:func:`~lakeskip.planner.stream.
    stream_end`), or with no start the table's latest snapshot id (0: none)."""
    table = _stream_table(ctx, req)
    if req.snapshot is None:
        return StreamOffsetReply(snapshot=table.snapshot_manager.latest_id() or 0)
    end = stream_end(table, StreamOffset(req.snapshot, req.full), req.max_files, req.until)
    return StreamOffsetReply(snapshot=end.snapshot, full=end.full)


def stream_plan(ctx: ServiceContext, req: StreamPlanRequest, arg: Any) -> PlanScanReply:
    """The kept files of one micro-batch of a streaming read, as ``plan_scan`` replies (Java
    builds the batch's Parquet scan from it as a batch read's)."""
    _stream_table(ctx, req)
    # the stream's columns are those of the schema it started with: its files are planned
    # and mapped (by name, or by field id: LakeEvolvedScan) against that schema, whichever
    # schema they were written with, before or after it
    target = scan_target(ctx, req, schema_id=req.stream_schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LakeskipWarning)
        started = time.perf_counter()
        planner = ScanPlanner(target.table)
        batch = plan_stream_batch(
            planner,
            StreamOffset(req.start, req.start_full),
            StreamOffset(req.end),
            target.predicate,
            target.time_zone,
        )
        planned_ms = (time.perf_counter() - started) * 1000
    # a micro-batch's files come from several snapshots, and its scan takes no runtime filter
    reply = scan_reply(
        ctx, req, target, planner, batch.plan, planned_ms, runtime_filters=False, of_snapshot=False
    )
    if batch.changes is None:
        return reply
    return dataclasses.replace(reply, changes=dict(batch.changes), token="")


def _stream_table(ctx: ServiceContext, req: TableRequest) -> FileStoreTable:
    base, system = split_system_name(req.name)
    if system is not None:
        raise StreamReadError(f"{req.name}: a system table cannot be read as a stream")
    table = ctx.table(req, base)
    check_streamable(table)
    return table
