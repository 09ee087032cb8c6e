"""The Spark catalog's read callbacks: plan a scan (the files to read, their deletion
vectors, the pruning report), answer a pushed aggregate from the manifests, file a reused
scan's report again, a metadata system table's rows, and EXPLAIN PRUNING's rows.

Callbacks run on py4j's callback threads, not the thread that ran the query: pruning reports
are filed under the query's tag (:data:`~lakeskip.spark.jvm.protocol.TAG_PROPERTY`).
"""

from __future__ import annotations

import base64
import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.format.stats import unpushable_columns
from lakeskip.catalog.ops.system_tables import read_optimized_level, split_system_name
from lakeskip.catalog.ops.time_travel import read_snapshot, table_at, table_with_schema
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.schema_evolution import reads_by_name, widens
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    InvalidArgumentError,
    LakeskipError,
    LakeskipWarning,
    StreamReadError,
    UnsupportedStatementError,
)
from lakeskip.expressions import BooleanExpression, bind
from lakeskip.index.primitives.roaring import serialize_bitmap
from lakeskip.planner.aggregate import (
    AggregateCall,
    AggregateFunction,
    Refusal,
    aggregate_from_metadata,
)
from lakeskip.planner.report import PruningReport, ScanPlan
from lakeskip.planner.runtime import prunable_columns, refine_plan, runtime_columns
from lakeskip.planner.scan import ScanPlanner
from lakeskip.planner.stream import (
    StreamOffset,
    check_streamable,
    plan_stream_batch,
    stream_end,
)
from lakeskip.planner.stream import stream_start as start_offset
from lakeskip.planner.top_n import SortKey, limit_files, limited_report, rows_all_match
from lakeskip.spark.bridge.catalog_context import ServiceContext, snapshot_token
from lakeskip.spark.bridge.system_service import system_rows as system_table_rows
from lakeskip.spark.jvm.protocol import (
    AggregatePartition,
    AggregateRefusedReply,
    AggregateScanReply,
    AggregateScanRequest,
    EvolvedFiles,
    ExplainRowsRequest,
    FileReportRequest,
    FoundReply,
    MergeSpec,
    PlanScanReply,
    PlanScanRequest,
    PruningFigures,
    RowsReply,
    RuntimeFilterReply,
    RuntimeFilterRequest,
    ScanFile,
    StreamLatestRequest,
    StreamOffsetReply,
    StreamPlanRequest,
    StreamStartRequest,
    SystemRowsRequest,
    TableRequest,
    decode,
)
from lakeskip.spark.read.predicate_json import filters_exact, predicate_from_json
from lakeskip.spark.read.query import scan_settings, spark_path
from lakeskip.types import DataType, RowType, TypeRoot

__all__ = [
    "ScanTarget",
    "aggregate_scan",
    "explain_rows",
    "file_report",
    "plan_scan",
    "pruning_figures",
    "runtime_filter",
    "scan_target",
    "stream_latest",
    "stream_plan",
    "stream_start",
    "system_rows",
]


def _deletion_vectors(
    table: FileStoreTable, snapshot_id: int | None, entries: Sequence[ManifestEntry]
) -> dict[str, str]:
    """Data file name -> its DV (portable RoaringBitmap, base64) for the Java reader; read and
    checked here, in the plan's snapshot (a corrupt DV fails the query)."""
    if snapshot_id is None:
        return {}
    refs = table.deletion_files(table.snapshot(snapshot_id))
    out: dict[str, str] = {}
    for e in entries:
        ref = refs.get(e.file.file_name)
        if ref is not None:
            bm = table.read_deletion_vector(ref, e.file.row_count)
            if len(bm):
                out[e.file.file_name] = base64.b64encode(serialize_bitmap(bm)).decode("ascii")
    return out


def _partition_json(t: DataType, value: Any) -> Any:
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


def _top_level_only(plan: ScanPlan, level: int) -> ScanPlan:
    """``t$read_optimized`` of a primary-key table: only the files at the top level (fully
    compacted: one version per key, read without a merge), as Paimon's
    ``ReadOptimizedTable``; the report counts only those files."""
    r = plan.report
    return ScanPlan.build(
        table=f"{r.table}$read_optimized",
        predicate=r.predicate,
        snapshot_id=r.snapshot_id,
        decisions=[d for d in plan.decisions if d.entry.file.level == level],
        index_files_read=r.index_files_read,
        planning_ms=r.planning_ms,
        warnings=r.warnings,
        index_bytes_read=r.index_bytes_read,
    )


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


def _split_by_name(
    table: FileStoreTable,
    schema: TableSchema,
    entries: Sequence[ManifestEntry],
) -> tuple[list[ManifestEntry], dict[int, list[ManifestEntry]]]:
    """The kept files Spark's Parquet scan reads right by column name, and the others by
    schema version (Java reads those by field id: ``LakeEvolvedScan`` for plain, deletion-
    vector, audit and change scans, ``LakePkScan`` per file for merge-on-read); a nested or
    non-widening mapping is refused in one line."""
    plain: list[ManifestEntry] = []
    evolved: dict[int, list[ManifestEntry]] = {}
    verdict: dict[int, bool] = {}
    for e in entries:
        sid = e.file.schema_id
        if sid not in verdict:
            stored = table.schema_by_id(sid).row_type if sid != schema.id else schema.row_type
            verdict[sid] = sid == schema.id or reads_by_name(stored, schema.row_type)
            if not verdict[sid] and not _flat_mapping(stored, schema.row_type):
                raise UnsupportedStatementError(
                    f"{table.identifier}: files written under schema {sid} hold nested fields "
                    "renamed, retyped or dropped since, which the Spark catalog scan cannot "
                    "read by field id yet: read with lakeskip.connect(...).sql or `lakeskip sql`"
                )
        if verdict[sid]:
            plain.append(e)
        else:
            evolved.setdefault(sid, []).append(e)
    return plain, evolved


def _flat_mapping(stored: RowType, current: RowType) -> bool:
    """Whether each current column the files have is the same type or a top-level widening
    (the projection ``LakeEvolvedScan`` makes: rename, cast, NULL)."""
    by_id = {f.id: f for f in stored}
    for f in current:
        g = by_id.get(f.id)
        if g is None:
            continue
        a, b = g.type.with_nullable(True), f.type.with_nullable(True)
        if a != b and (a.is_nested or b.is_nested or not widens(a, b)):
            return False
    return True


def _evolved_files(
    table: FileStoreTable, schema: TableSchema, sid: int, files: tuple[ScanFile, ...]
) -> EvolvedFiles:
    stored = table.schema_by_id(sid)
    by_id = {f.id: f for f in stored.row_type}
    data = RowType(tuple(f for f in stored.row_type if f.name not in stored.partition_keys))
    names = {f.name: by_id[f.id].name for f in schema.row_type if f.id in by_id}
    return EvolvedFiles(files=files, stored_schema=data.spark_ddl(), stored_names=names)


def plan_scan(ctx: ServiceContext, req: PlanScanRequest, arg: Any) -> PlanScanReply:
    target = scan_target(ctx, req)
    table, snap, schema, tz = target.table, target.snapshot, target.schema, target.time_zone
    predicate, system = target.predicate, target.system
    with warnings.catch_warnings():
        # this is a py4j callback thread: the warnings travel in the report instead
        # (Session.sql re-issues them on the querying thread)
        warnings.simplefilter("ignore", LakeskipWarning)
        started = time.perf_counter()
        planner = ScanPlanner(table)
        plan = planner.plan(predicate, time_zone=tz, snapshot=snap)
        if system == "read_optimized" and schema.primary_keys:
            plan = _top_level_only(plan, read_optimized_level(schema.options))
        # this callback's planning (the report's is the first plan's when it was cached)
        planned_ms = (time.perf_counter() - started) * 1000
    return _scan_reply(ctx, req, target, planner, plan, planned_ms)


def _scan_reply(
    ctx: ServiceContext,
    req: PlanScanRequest,
    target: ScanTarget,
    planner: ScanPlanner,
    plan: ScanPlan,
    planned_ms: float,
    *,
    runtime_filters: bool = True,
) -> PlanScanReply:
    """The reply of a planned scan: the kept files as Spark reads them (with their DVs in the
    plan's snapshot), the merge rule, the figures, the report filed under the query's tag."""
    table, snap, schema, system = target.table, target.snapshot, target.schema, target.system
    row_type = schema.row_type
    types = [row_type.field(k).type for k in schema.partition_keys]
    entries, note = _limited(target, plan.files, req)
    if note:
        plan = dataclasses.replace(
            plan,
            report=limited_report(plan.report, plan.decisions, entries, _limit_label(req), note),
        )
    vectors = _deletion_vectors(table, plan.report.snapshot_id, entries)
    plain, evolved = _split_by_name(table, schema, entries)

    def scan_files(entries: Sequence[ManifestEntry]) -> tuple[ScanFile, ...]:
        return tuple(
            ScanFile(
                path=spark_path(table.file_io.uri(table.data_file_path(e))),
                size=e.file.file_size,
                mtime=e.file.creation_time or 0,
                partition=tuple(
                    _partition_json(t, v) for t, v in zip(types, e.partition, strict=True)
                ),
                dv=vectors.get(e.file.file_name),
                # merge-on-read unit of a primary-key table: its (partition, bucket)
                group=repr((e.partition, e.bucket)),
            )
            for e in entries
        )

    files = scan_files(plain)
    report_id = ctx.reports.add(req.tag, plan.report)
    # how LakePkScan merges the versions of a key (primary-key tables)
    # (a key to_json gains must be added to MergeSpec, and Protocol.java regenerated)
    merge = (
        decode(MergeSpec, MergeEngine.for_schema(schema).to_json()) if schema.primary_keys else None
    )
    figures = pruning_figures(plan.report, planned_ms)
    # the columns Spark may plan runtime filters on: those that can narrow these files
    declared, by_index = (
        runtime_columns(planner, plan, snap, prunable_columns(schema, table.kind))
        if system is None and runtime_filters
        else ((), {})
    )
    return PlanScanReply(
        files=files,
        report_id=report_id,
        pruning=figures,
        merge=merge,
        # columns whose filters Spark's Parquet reader may answer wrongly from the
        # statistics, dictionaries or bloom filters of some of these files (NaN left out
        # of min/max, -0.0 vs 0.0, millisecond timestamps): not pushed into the scan
        unpushable=tuple(
            sorted(unpushable_columns(plan.files, schema, table.schema_by_id, req.filter_columns))
        ),
        # an empty table may have gained its first snapshot while planning: then the
        # files are not the token's, and the JVM must not keep the scan under it
        token=(
            snapshot_token(table, snap)
            if plan.report.snapshot_id == (snap.id if snap is not None else None)
            else ""
        ),
        evolved=tuple(
            _evolved_files(table, schema, sid, scan_files(group))
            for sid, group in sorted(evolved.items())
        ),
        prunable=declared,
        index_values=by_index or None,
    )


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
    reply = _scan_reply(ctx, req, target, planner, batch.plan, planned_ms, runtime_filters=False)
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


def _limited(
    target: ScanTarget, files: Sequence[ManifestEntry], req: PlanScanRequest
) -> tuple[Sequence[ManifestEntry], str]:
    """The planned files narrowed by a pushed ``LIMIT`` / top-N (:mod:`lakeskip.planner.top_n`)
    and, when any was skipped, what was pushed and why the kept files were kept (else "").
    With filters, only the files on whose every row they hold (exactly translated, proven by
    partition values and stats) count towards the limit. Not on a system table."""
    table, snap, schema = target.table, target.snapshot, target.schema
    if req.limit is None or target.system is not None or snap is None:
        return files, ""
    matches: list[bool] | None = None
    if req.filters:
        matches = (
            rows_all_match(
                schema,
                files,
                target.predicate,
                time_zone=target.time_zone,
                schema_by_id=table.schema_by_id,
            )
            if target.exact and target.predicate is not None
            else [False] * len(files)
        )
    kept = limit_files(
        schema,
        files,
        [SortKey(k.column, k.descending, k.nulls_first) for k in req.order],
        req.limit,
        schema_by_id=table.schema_by_id,
        deleted_rows=_deleted_rows(table, snap),
        matches=matches,
    )
    if kept is None or len(kept) == len(files):
        return files, ""
    if req.order:
        k = req.order[0]
        pushed = (
            f"ORDER BY {k.column}{' DESC' if k.descending else ''} "
            f"NULLS {'FIRST' if k.nulls_first else 'LAST'}{', ...' if len(req.order) > 1 else ''} "
            f"LIMIT {req.limit}: kept the files whose stats of {k.column} can rank a row among "
            "the first"
        )
    else:
        pushed = f"LIMIT {req.limit}: kept files in order until their rows reach the limit"
    counted = len(files) if matches is None else sum(matches)
    return kept, (
        f"{pushed}; {counted} of {len(files)} files counted (every row a row of the filtered input)"
    )


def _deleted_rows(table: FileStoreTable, snap: Snapshot | None) -> Callable[[ManifestEntry], int]:
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


def _limit_label(req: PlanScanRequest) -> str:
    """How EXPLAIN names the tier: ``limit`` or ``top-n(ts)``."""
    return f"top-n({req.order[0].column})" if req.order else "limit"


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
        deleted_rows=_deleted_rows(table, snap),
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
                    _partition_json(t, v) for t, v in zip(part_types, a.partition, strict=True)
                ),
                values=tuple(
                    v if t is None else _partition_json(t, v)
                    for t, v in zip(value_types, a.values, strict=True)
                ),
                files=a.files,
            )
            for a in answer.partitions
        ),
        files=len(plan.files),
        report_id=ctx.reports.add(req.tag, plan.report),
    )


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
