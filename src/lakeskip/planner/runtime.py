"""Runtime filters: a planned scan narrowed again by the values a join found at run time.

Spark's dynamic pruning (``SupportsRuntimeV2Filtering``) hands a scan, after planning, the
join keys the other side produced: ``ss_sold_date_sk IN (2451484, ..., 2451513)``, often
thousands of values. :func:`refine_plan` takes the plan the scan was built from and
re-decides only its **kept** files, through the same tiers as the planner (partition values,
buckets, min/max, embedded indexes, ``.index`` files), conjunct by conjunct, cheapest first:

* the snapshot's columnar stats and bloom matrix are already cached by the first plan, so a
  runtime filter decodes nothing; an IN list of any length is one sorted array against every
  file's [min, max] (``np.searchsorted``, :data:`~lakeskip.planner.vector_evaluator.SORTED_IN_FROM`);
* the index tiers (bloom, bitmap, BSI, range-bitmap) are consulted only for files the stats
  kept, and only for a conjunct whose IN lists hold at most :data:`INDEX_VALUES_LIMIT`
  values: an index answers an IN list value by value (a bloom probe, a bitmap lookup each),
  so a list of thousands costs more per file than reading a file the stats could not rule
  out. Past the limit the conjunct prunes by stats, partitions and buckets only.

A runtime filter only removes files the plan kept (never adds one), each skip carries
:attr:`~lakeskip.planner.report.SkipTier.RUNTIME` with the tier and column that decided it,
and the result is not cached (its literals change with every run of the join).

Primary-key tables merged on read prune at run time only by conjuncts on key columns
(primary key, partition): a file they rule out holds no version of a matching key, which is
the planner's own rule for key conjuncts (:func:`~lakeskip.planner.tiers.primary_key.decide_merged`).
"""

from __future__ import annotations

import contextlib
import time
from typing import assert_never

from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.format.stats import parse_stats_mode
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.options import (
    DEFAULT_STATS_MODE,
    STATS_MODE,
    STATS_MODE_SUFFIX,
    file_index_options,
)
from lakeskip.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, bind
from lakeskip.expressions.tree import And, Not, Or, SetPredicate
from lakeskip.expressions.visitors import column_names, conjuncts
from lakeskip.planner.report import FileDecision, ScanPlan, SkipTier
from lakeskip.planner.scan import ScanPlanner
from lakeskip.planner.tiers.notes import PlanNotes
from lakeskip.planner.tiers.primary_key import key_columns
from lakeskip.types import TypeRoot

__all__ = [
    "INDEX_VALUES_LIMIT",
    "describe_runtime",
    "narrowing_columns",
    "prunable_columns",
    "refine_plan",
    "runtime_columns",
]

#: IN lists longer than this are not evaluated against file indexes at run time (stats,
#: partitions and buckets still apply): a bloom filter answers a list by one probe per
#: value and file, a bitmap by one lookup per value; at 256 values and ~100 surviving
#: files that is ~25,000 probes (a few ms in numpy), where 5,000 values would cost more
#: than the files it could still skip. The join keys of a selective dimension filter
#: (a month of dates, one category's items) fall below it.
INDEX_VALUES_LIMIT = 256


def refine_plan(
    planner: ScanPlanner,
    plan: ScanPlan,
    snapshot: Snapshot | None,
    runtime: BooleanExpression | None,
    time_zone: str = "UTC",
    use_indexes: bool = True,
) -> ScanPlan:
    """``plan`` with its kept files narrowed by ``runtime`` (see the module docstring).

    Args:
        planner: the planner of the plan's table.
        plan: the scan's plan (of ``snapshot``, by the scan's own predicate).
        snapshot: the snapshot ``plan`` was made of (``None``: an empty table).
        runtime: the runtime filters as one unbound predicate (``None``: none).
        time_zone: Spark's session time zone (timestamp literals).
        use_indexes: consult file indexes (for lists of at most :data:`INDEX_VALUES_LIMIT`).
    """
    started = time.perf_counter()
    cpu = time.thread_time()
    if runtime is None or snapshot is None or not plan.files:
        return plan
    table = planner.table
    row_type = table.schema.row_type
    kind = table.kind
    key_names: set[str] | None
    match kind:
        case PkMerge():
            key_names = key_columns(table.schema.primary_keys, table.schema.partition_keys)
        case Append() | AppendDv() | PkRaw():
            key_names = None
        case _:
            assert_never(kind)
    kept_at = [i for i, d in enumerate(plan.decisions) if d.keep]
    alive = [plan.decisions[i].entry for i in kept_at]
    live = table.scan_files(snapshot)
    notes = PlanNotes()
    tiers = planner.file_tiers(snapshot, notes)
    out: dict[int, FileDecision] = {}  # position in ``alive`` -> runtime skip
    n_read = 0
    for c in conjuncts(runtime):
        columns = column_names(c)
        if key_names is not None and not columns <= key_names:
            continue
        bound = bind(row_type, c, time_zone=time_zone)
        if isinstance(bound, AlwaysTrue):
            continue
        positions = [i for i in range(len(alive)) if i not in out]
        if not positions:
            break
        column = ",".join(sorted(columns)) or None
        if isinstance(bound, AlwaysFalse):
            for i in positions:
                out[i] = FileDecision(alive[i], keep=False, tier=SkipTier.RUNTIME, column=column)
            continue
        entries = [alive[i] for i in positions]
        cols = planner.columns(snapshot, live, entries, notes)
        indexes = use_indexes and _largest_list(c) <= INDEX_VALUES_LIMIT
        decisions, n = tiers.decide(entries, cols, bound, row_type, indexes)
        n_read += n
        for i, d in zip(positions, decisions, strict=True):
            if not d.keep:
                how = d.index_type or (
                    d.tier.value if d.tier in (SkipTier.PARTITION, SkipTier.BUCKET) else None
                )
                out[i] = FileDecision(
                    d.entry,
                    keep=False,
                    tier=SkipTier.RUNTIME,
                    index_type=how,
                    column=d.column or column,
                )
    decisions = list(plan.decisions)
    for i, d in out.items():
        decisions[kept_at[i]] = d
    r = plan.report
    return ScanPlan.build(
        table=r.table,
        predicate=f"{r.predicate} AND runtime {describe_runtime(runtime)}",
        snapshot_id=r.snapshot_id,
        decisions=decisions,
        index_files_read=r.index_files_read + n_read,
        planning_ms=r.planning_ms + (time.perf_counter() - started) * 1000,
        planning_cpu_ms=r.planning_cpu_ms + (time.thread_time() - cpu) * 1000,
        warnings=[*r.warnings, *(m for m in notes.messages if m not in r.warnings)],
        index_bytes_read=r.index_bytes_read,
        # files the plan skipped by partition undecided: still in the totals
        unread_files=max(0, r.total_files - len(plan.decisions)),
        unread_bytes=max(0, r.total_bytes - sum(d.entry.file.file_size for d in plan.decisions)),
        unread_rows=max(0, r.total_rows - sum(d.entry.file.row_count for d in plan.decisions)),
    )


def prunable_columns(schema: TableSchema, kind: object) -> tuple[str, ...]:
    """The top-level columns a runtime filter may prune by (Spark's ``filterAttributes``):
    partition and bucket keys, columns whose stats mode keeps min/max, columns with a file
    index. A primary-key table merged on read: its primary and partition keys only (the
    only conjuncts :func:`refine_plan` uses there)."""
    row_type = schema.row_type
    keys = [*schema.partition_keys]
    if isinstance(kind, PkMerge):
        keys += schema.primary_keys
        return tuple(n for n in row_type.names if n in keys)
    try:
        spec = schema.bucket_spec()
    except Exception:  # options we cannot read: no bucket pruning either
        spec = None
    if spec is not None:
        keys += spec.key
    options = schema.options
    table_mode = str(options.get(STATS_MODE, DEFAULT_STATS_MODE))
    try:
        indexed = {
            s.name for s in file_index_options(options, row_type, schema.partition_keys).specs
        }
    except Exception:  # unreadable index options: the planner keeps such files anyway
        indexed = set()
    out = []
    for f in row_type:
        if f.name in keys or f.name in indexed:
            out.append(f.name)
            continue
        if f.type.root in (TypeRoot.ROW, TypeRoot.MAP, TypeRoot.ARRAY):
            continue  # no min/max stats for nested columns
        mode = str(options.get(f"fields.{f.name}{STATS_MODE_SUFFIX}", table_mode))
        try:
            kept = parse_stats_mode(mode)[0] in ("full", "truncate")
        except Exception:
            kept = False
        if kept:
            out.append(f.name)
    return tuple(out)


def narrowing_columns(
    planner: ScanPlanner,
    plan: ScanPlan,
    snapshot: Snapshot | None,
    columns: tuple[str, ...],
) -> tuple[str, ...]:
    """Of ``columns`` (:func:`prunable_columns`), those by which a runtime filter can narrow
    ``plan``'s kept files: what the scan declares to Spark (``filterAttributes``).

    Spark's ``PartitionPruning`` plans a dynamic pruning subquery against every scan that
    declares a join key, and the subquery is a copy of the join's other side *with the
    subqueries already planned in it*; physical planning then compiles every copy. When the
    scans of a many-way join all declare their keys (TPC-DS q64: 18 tables, twice), each join
    doubles the plan: q64 at SF 0.01 grew past 30,000 plan nodes with subqueries nested 7 deep
    and ran out of driver memory, where with runtime filtering off its plan has 162 nodes. So
    a scan declares only what can narrow its files:

    * nothing when it kept fewer than two files (a one-file dimension: nothing to choose);
    * partition keys, bucket keys, columns with a file index (their tiers answer by value);
    * any other column (min/max) only when two of the kept files have disjoint ranges of it,
      i.e. the files are clustered by it. Where every file's range overlaps every other's (a
      column in arrival order, a fact table's foreign keys), an IN list of join keys spans
      them all and skips next to nothing.

    Fewer attributes only mean fewer runtime filters: never a different answer.
    """
    return runtime_columns(planner, plan, snapshot, columns)[0]


def runtime_columns(
    planner: ScanPlanner,
    plan: ScanPlan,
    snapshot: Snapshot | None,
    columns: tuple[str, ...],
) -> tuple[tuple[str, ...], dict[str, int]]:
    """:func:`narrowing_columns`, and of those the columns that only a file index narrows
    (not a partition or bucket key, and the kept files not clustered by it), each with the
    longest IN list :func:`refine_plan` still answers by index (:data:`INDEX_VALUES_LIMIT`).
    A longer runtime list on such a column is answered by stats alone, and the stats of
    files not clustered by it skip next to nothing -- the reason such a column is not
    declared at all without an index: the JVM does not ask about such a list (TPC-H q8 /
    q21: a filter of 450,000-730,000 order keys on ``lineitem``'s bloom-indexed
    ``l_orderkey`` cost 1.8-3.1 s a run and kept every file). Leaving a runtime filter out
    only keeps files: never a different answer."""
    if snapshot is None or plan.report.kept_files < 2 or not columns:
        return (), {}
    table = planner.table
    schema = table.schema
    keys = set(schema.partition_keys)
    try:
        spec = schema.bucket_spec()
    except Exception:  # options we cannot read: prunable_columns left its keys out too
        spec = None
    if spec is not None:
        keys.update(spec.key)
    indexed: set[str] = set()
    with contextlib.suppress(Exception):  # unreadable index options: prunable_columns too
        indexed = {
            s.name
            for s in file_index_options(
                schema.options, schema.row_type, schema.partition_keys
            ).specs
        }
    ranged = [c for c in columns if c not in keys]
    clustered: set[str] = set()
    if ranged:
        stats = planner.kept_stats(plan, snapshot)
        for c in ranged:
            col = stats.columns.get(c)
            if col is None:
                continue
            known = col.min_known & col.max_known
            if int(known.sum()) < 2:
                continue
            try:
                # two disjoint ranges: the smallest max lies below the largest min
                if min(col.max[known].tolist()) < max(col.min[known].tolist()):
                    clustered.add(c)
            except TypeError:  # values of kinds that do not compare: no runtime filter
                continue
    declared = tuple(c for c in columns if c in keys or c in indexed or c in clustered)
    by_index = {
        c: INDEX_VALUES_LIMIT
        for c in declared
        if c in indexed and c not in keys and c not in clustered
    }
    return declared, by_index


def describe_runtime(expr: BooleanExpression) -> str:
    """A short text of runtime filters: long IN lists as their size, not their values."""
    if isinstance(expr, And):
        return f"{describe_runtime(expr.left)} AND {describe_runtime(expr.right)}"
    if isinstance(expr, Or):
        return f"({describe_runtime(expr.left)} OR {describe_runtime(expr.right)})"
    if isinstance(expr, SetPredicate) and len(expr.values) > 8:
        return f"{type(expr).__name__}({expr.term.name}, {len(expr.values)} values)"
    return repr(expr)


def _largest_list(expr: BooleanExpression) -> int:
    if isinstance(expr, (And, Or)):
        return max(_largest_list(expr.left), _largest_list(expr.right))
    if isinstance(expr, Not):
        return _largest_list(expr.child)
    if isinstance(expr, SetPredicate):
        return len(expr.values)
    return 1
