"""``plan_scan``: a batch scan's files as Spark reads them -- by name, or by field id for
files written under an older schema --, their deletion vectors in the plan's snapshot, the
merge rule of a primary-key table, a pushed ``LIMIT`` / top-N, the pruning figures, and the
report filed under the query's tag. :func:`scan_reply` is also a streaming micro-batch's."""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np

from lakeskip.catalog.field_mapping import reads_by_name
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.manifest_columns import LiveColumns
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.stats import unpushable_columns
from lakeskip.catalog.ops.system_tables import read_optimized_level
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.schema_evolution import widens
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import LakeskipWarning, UnsupportedStatementError
from lakeskip.index.primitives.roaring import serialize_bitmap
from lakeskip.planner.columnar_stats import ColumnarStats
from lakeskip.planner.report import ScanPlan
from lakeskip.planner.runtime import prunable_columns, runtime_columns
from lakeskip.planner.scan import ScanPlanner
from lakeskip.planner.top_n import (
    SortKey,
    limit_columns,
    limit_files,
    limited_columns_report,
    limited_report,
    rows_all_match,
)
from lakeskip.spark.bridge.catalog_context import ServiceContext, snapshot_token
from lakeskip.spark.bridge.catalog_scans.target import (
    ScanTarget,
    deleted_rows_of,
    partition_json,
    pruning_figures,
    scan_target,
)
from lakeskip.spark.jvm.protocol import (
    EvolvedFiles,
    MergeSpec,
    PlanScanReply,
    PlanScanRequest,
    ScanFiles,
    decode,
    pack_longs,
)
from lakeskip.spark.read.query import spark_path
from lakeskip.types import DataType, RowType

__all__ = ["plan_scan", "scan_files", "scan_reply"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Files:
    """What a reply says of some files, as columns: from their entries or straight from the
    manifests' columns (:class:`LiveColumns`, no object per file). ``part`` numbers each
    file's partition among ``partitions`` (a tuple of values each); ``mtime`` is 0 where the
    creation time is unknown."""

    names: Sequence[str]
    external: Sequence[str | None]
    size: np.ndarray
    rows: np.ndarray
    mtime: np.ndarray
    schema_id: np.ndarray
    part: np.ndarray
    partitions: Sequence[tuple[Any, ...]]
    bucket: np.ndarray

    @staticmethod
    def of(files: Sequence[ManifestEntry] | LiveColumns) -> _Files:
        if isinstance(files, LiveColumns):
            number, distinct, _ = files.partitions()
            return _Files(
                files.field("_FILE_NAME"),
                files.field("_EXTERNAL_PATH"),
                files.longs("_FILE_SIZE"),
                files.longs("_ROW_COUNT"),
                files.longs("_CREATION_TIME"),
                files.longs("_SCHEMA_ID"),
                number,
                distinct,
                files.buckets(),
            )
        # entries of one partition share one partition tuple (decoded once per manifest):
        # numbered by identity
        ids: dict[int, int] = {}
        partitions: list[tuple[Any, ...]] = []
        part: list[int] = []
        for e in files:
            k = ids.get(id(e.partition))
            if k is None:
                k = ids[id(e.partition)] = len(partitions)
                partitions.append(e.partition)
            part.append(k)

        def longs(values: list[int]) -> np.ndarray:
            return np.asarray(values, dtype=np.int64).reshape(len(values))

        return _Files(
            [e.file.file_name for e in files],
            [e.file.external_path for e in files],
            longs([e.file.file_size for e in files]),
            longs([e.file.row_count for e in files]),
            longs([e.file.creation_time or 0 for e in files]),
            longs([e.file.schema_id for e in files]),
            longs(part),
            partitions,
            longs([e.bucket for e in files]),
        )

    def take(self, at: Sequence[int]) -> _Files:
        if len(at) == len(self.names):
            return self
        idx = np.asarray(at, dtype=np.int64).reshape(len(at))
        return _Files(
            [self.names[i] for i in at],
            [self.external[i] for i in at],
            self.size[idx],
            self.rows[idx],
            self.mtime[idx],
            self.schema_id[idx],
            self.part[idx],
            self.partitions,
            self.bucket[idx],
        )


def _deletion_vectors(
    table: FileStoreTable, snapshot_id: int | None, files: _Files
) -> dict[str, str]:
    """Data file name -> its DV (portable RoaringBitmap, base64) for the Java reader; read and
    checked here, in the plan's snapshot (a corrupt DV fails the query)."""
    if snapshot_id is None:
        return {}
    refs = table.deletion_files(table.snapshot(snapshot_id))
    out: dict[str, str] = {}
    if not refs:
        return out
    for i in [i for i, name in enumerate(files.names) if name in refs]:
        name = files.names[i]
        ref = refs[name]
        if ref is not None:
            bm = table.read_deletion_vector(ref, int(files.rows[i]))
            if len(bm):
                out[name] = base64.b64encode(serialize_bitmap(bm)).decode("ascii")
    return out


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
        planning_cpu_ms=r.planning_cpu_ms,
    )


def _split_by_name(
    table: FileStoreTable, schema: TableSchema, files: _Files
) -> tuple[list[int], dict[int, list[int]]]:
    """Of the kept files (positions), those Spark's Parquet scan reads right by column name,
    and the others by schema version (Java reads those by field id: ``LakeEvolvedScan`` for
    plain, deletion-vector, audit and change scans, ``LakePkScan`` per file for merge-on-read);
    a nested or non-widening mapping is refused in one line."""
    if (files.schema_id == schema.id).all():
        return list(range(len(files.names))), {}
    plain: list[int] = []
    evolved: dict[int, list[int]] = {}
    verdict: dict[int, bool] = {}
    for i, sid in enumerate(files.schema_id.tolist()):
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
            plain.append(i)
        else:
            evolved.setdefault(sid, []).append(i)
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
    table: FileStoreTable, schema: TableSchema, sid: int, files: ScanFiles
) -> EvolvedFiles:
    stored = table.schema_by_id(sid)
    by_id = {f.id: f for f in stored.row_type}
    data = RowType(tuple(f for f in stored.row_type if f.name not in stored.partition_keys))
    names = {f.name: by_id[f.id].name for f in schema.row_type if f.id in by_id}
    return EvolvedFiles(files=files, stored_schema=data.spark_ddl(), stored_names=names)


def scan_files(
    table: FileStoreTable,
    types: Sequence[DataType],
    entries: Sequence[ManifestEntry] | LiveColumns,
    vectors: Mapping[str, str],
) -> ScanFiles:
    """``entries`` (or the same files as columns) as a reply's file columns (``types``: the
    partition columns' types; ``vectors``: DVs by file name)."""
    return _scan_files(table, types, _Files.of(entries), vectors)


def _scan_files(
    table: FileStoreTable, types: Sequence[DataType], files: _Files, vectors: Mapping[str, str]
) -> ScanFiles:
    # what the files of one (partition, bucket) share -- their directory, partition values
    # and group -- is found once per pair, in the order the pairs first appear, each
    # distinct value listed once: the partition's by its JSON text (-0.0 is not 0.0, True
    # is not 1)
    n = len(files.names)
    part, bucket = files.part, files.bucket
    pair_of = np.zeros(n, dtype=np.int64)  # each file's pair, numbered as first seen
    pairs: list[tuple[int, int]] = []
    if n:
        low = int(bucket.min())
        key = part * (int(bucket.max()) - low + 1) + (bucket - low)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        pair_of = rank[inverse.reshape(n)]
        at = first[order]
        pairs = list(zip(part[at].tolist(), bucket[at].tolist(), strict=True))
    dirs: dict[str, int] = {}
    partitions: dict[str, int] = {}
    partition_values: list[tuple[Any, ...]] = []
    groups: dict[str, int] = {}
    refs: list[tuple[int, int, int]] = []
    uri = table.file_io.uri
    for p, b in pairs:
        partition = files.partitions[p]
        values = tuple(partition_json(t, v) for t, v in zip(types, partition, strict=True))
        text = json.dumps(values)
        if text not in partitions:
            partitions[text] = len(partitions)
            partition_values.append(values)
        # merge-on-read unit of a primary-key table: its (partition, bucket)
        group = repr((partition, b))
        # the pair's directory (not data_file_dir: an external file's is its own)
        directory = spark_path(uri(f"{table.path}/{table.partition_path(partition, b)}"))
        refs.append(
            (
                dirs.setdefault(directory, len(dirs)),
                partitions[text],
                groups.setdefault(group, len(groups)),
            )
        )
    shared = np.asarray(refs, dtype=np.int64).reshape(len(refs), 3)[pair_of]
    dir_of = shared[:, 0]
    names = list(files.names)
    for i in [i for i, path in enumerate(files.external) if path]:
        names[i] = spark_path(uri(cast(str, files.external[i])))
        dir_of[i] = -1
    dv: dict[str, str] = {}
    if vectors:
        for i in [i for i, name in enumerate(files.names) if name in vectors]:
            dv[str(i)] = vectors[files.names[i]]
    return ScanFiles(
        dirs=tuple(dirs),
        partitions=tuple(partition_values),
        groups=tuple(groups),
        names=tuple(names),
        dir=pack_longs(dir_of.tolist()),
        partition=pack_longs(shared[:, 1].tolist()),
        group=pack_longs(shared[:, 2].tolist()),
        size=pack_longs(files.size.tolist()),
        mtime=pack_longs(files.mtime.tolist()),
        dv=dv,
    )


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
    return scan_reply(ctx, req, target, planner, plan, planned_ms)


def scan_reply(
    ctx: ServiceContext,
    req: PlanScanRequest,
    target: ScanTarget,
    planner: ScanPlanner,
    plan: ScanPlan,
    planned_ms: float,
    *,
    runtime_filters: bool = True,
    of_snapshot: bool = True,
) -> PlanScanReply:
    """The reply of a planned scan: the kept files as Spark reads them (with their DVs in the
    plan's snapshot), the merge rule, the figures, the report filed under the query's tag.
    ``of_snapshot``: ``plan`` is of the target snapshot's live files (not a micro-batch's),
    whose stats columns a pushed limit may read."""
    table, snap, schema, system = target.table, target.snapshot, target.schema, target.system
    row_type = schema.row_type
    types = [row_type.field(k).type for k in schema.partition_keys]
    kept: Sequence[ManifestEntry] | LiveColumns
    if plan.kept is not None and _unlimited(target, req):
        kept = plan.kept  # every kept file read from the manifests' columns
    elif of_snapshot and (got := _limited_columns(target, planner, plan, req)) is not None:
        kept, note = got  # a whole-table plan narrowed on its columns
        if note:
            plan = dataclasses.replace(
                plan,
                report=limited_columns_report(plan.report, got[0], _limit_label(req), note),
            )
    else:
        stats = (
            functools.partial(planner.kept_stats, plan, snap)
            if snap is not None and of_snapshot
            else None
        )
        kept, note = _limited(target, plan.files, req, stats)
        if note:
            plan = dataclasses.replace(
                plan,
                report=limited_report(plan.report, plan.decisions, kept, _limit_label(req), note),
            )
    listed = _Files.of(kept)
    vectors = _deletion_vectors(table, plan.report.snapshot_id, listed)
    plain, evolved = _split_by_name(table, schema, listed)
    files = _scan_files(table, types, listed.take(plain), vectors)
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
            sorted(
                unpushable_columns(_files_of(plan), schema, table.schema_by_id, req.filter_columns)
            )
        ),
        # an empty table may have gained its first snapshot while planning: then the
        # files are not the token's, and the JVM must not keep the scan under it
        token=(
            snapshot_token(table, snap)
            if plan.report.snapshot_id == (snap.id if snap is not None else None)
            else ""
        ),
        evolved=tuple(
            _evolved_files(table, schema, sid, _scan_files(table, types, listed.take(at), vectors))
            for sid, at in sorted(evolved.items())
        ),
        prunable=declared,
        index_values=by_index or None,
    )


def _files_of(plan: ScanPlan) -> Iterator[ManifestEntry]:
    """``plan``'s kept files, made only when iterated (most replies never look)."""
    yield from plan.files


def _unlimited(target: ScanTarget, req: PlanScanRequest) -> bool:
    """Whether :func:`_limited` keeps every file as it is, without looking at them."""
    return req.limit is None or target.system is not None or target.snapshot is None


def _limited(
    target: ScanTarget,
    files: Sequence[ManifestEntry],
    req: PlanScanRequest,
    stats: Callable[[], ColumnarStats] | None = None,
) -> tuple[Sequence[ManifestEntry], str]:
    """The planned files narrowed by a pushed ``LIMIT`` / top-N (:mod:`lakeskip.planner.top_n`)
    and, when any was skipped, what was pushed and why the kept files were kept (else "").
    With filters, only the files on whose every row they hold (exactly translated, proven by
    partition values and stats) count towards the limit. Not on a system table. ``stats``:
    the stats of ``files`` as columns: used (numpy, :func:`~lakeskip.planner.top_n.
    limit_columns`) on an append table whose snapshot has no deletion vector."""
    table, snap, schema = target.table, target.snapshot, target.schema
    limit = req.limit
    if _unlimited(target, req) or snap is None or limit is None:
        return files, ""
    got: list[ColumnarStats] = []
    columns = (
        stats is not None
        and not schema.primary_keys
        and table.schema == schema  # the columns are decoded under the table's schema
        and not table.deletion_files(snap)
    )

    def decoded() -> ColumnarStats:
        if not got:
            assert stats is not None
            got.append(stats())
        return got[0]

    matches: list[bool] | None = None
    if req.filters:
        matches = (
            rows_all_match(
                schema,
                files,
                target.predicate,
                time_zone=target.time_zone,
                schema_by_id=table.schema_by_id,
                stats=decoded() if columns else None,
            )
            if target.exact and target.predicate is not None
            else [False] * len(files)
        )
    order = [SortKey(k.column, k.descending, k.nulls_first) for k in req.order]
    keep = (
        limit_columns(
            schema,
            np.fromiter((e.file.row_count for e in files), dtype=np.int64, count=len(files)),
            decoded,
            order,
            limit,
            None if matches is None else np.asarray(matches, dtype=np.bool_),
        )
        if columns
        else None
    )
    kept = (
        [files[i] for i in np.flatnonzero(keep).tolist()]
        if keep is not None
        else limit_files(
            schema,
            files,
            order,
            limit,
            schema_by_id=table.schema_by_id,
            deleted_rows=deleted_rows_of(table, snap),
            matches=matches,
        )
    )
    if kept is None or len(kept) == len(files):
        return files, ""
    counted = len(files) if matches is None else sum(matches)
    return kept, _limit_note(req, counted, len(files))


def _limited_columns(
    target: ScanTarget, planner: ScanPlanner, plan: ScanPlan, req: PlanScanRequest
) -> tuple[LiveColumns, str] | None:
    """:func:`_limited` of a plan of every live file made from their columns
    (``plan.kept``), without a filter, in a snapshot without deletion vectors: the kept files
    as columns (:func:`~lakeskip.planner.top_n.limit_columns`); None: record by record."""
    live, snap, table = plan.kept, target.snapshot, planner.table
    if live is None or _unlimited(target, req) or snap is None or req.limit is None:
        return None
    # the columns are decoded under the planner's table schema: the scan's own only
    if req.filters or table.schema != target.schema or table.deletion_files(snap):
        return None
    keep = limit_columns(
        target.schema,
        live.longs("_ROW_COUNT"),
        lambda: planner.kept_stats(plan, snap),
        [SortKey(k.column, k.descending, k.nulls_first) for k in req.order],
        req.limit,
    )
    if keep is None:
        return None
    if keep.all():
        return live, ""
    return live.take(keep), _limit_note(req, len(live), len(live))


def _limit_note(req: PlanScanRequest, counted: int, files: int) -> str:
    """What was pushed and why the kept files were kept (``counted`` of ``files`` counted
    towards the limit), for ``EXPLAIN PRUNING``."""
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
    return f"{pushed}; {counted} of {files} files counted (every row a row of the filtered input)"


def _limit_label(req: PlanScanRequest) -> str:
    """How EXPLAIN names the tier: ``limit`` or ``top-n(ts)``."""
    return f"top-n({req.order[0].column})" if req.order else "limit"
