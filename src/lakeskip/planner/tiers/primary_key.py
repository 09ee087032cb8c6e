"""The skip rule of a primary-key table merged on read, over the per-file tiers.

A primary-key table's files hold *versions* of keys, merged at read time: a file may be
skipped only where that cannot bring back an older version (Paimon's
``KeyValueFileStoreScan``).

* Conjuncts on key columns (primary key, partition columns) prune per file: a file they
  rule out holds no version of a matching key.
* The whole predicate prunes only whole buckets: when no file of a (partition, bucket) may
  hold a matching version, no merged row of it can match. If any file may, every file of
  the bucket that the key conjuncts keep is read.
* ``merge-engine = partial-update``: a merged row mixes columns of several versions, and
  each of its values (NULL too) is one some version holds in that column, so only
  conjuncts that read at most one non-key column may prune a bucket (a file none of whose
  rows satisfies such a conjunct holds no version that makes the merged row satisfy it);
  ``a = 1 AND b = 2`` is two such conjuncts, judged apart.
* ``merge-engine = aggregation``: the same, but only for columns whose function returns a
  value some version holds (max, min, first_*, bool_*); a sum can match where no version
  does, so conjuncts on summed columns never prune; nor do those on ``ignore-retract``
  columns (a key of retracts only merges to NULL there). With sequence groups, a retract
  sets a group's columns to NULL (a value no version may hold): conjuncts on them never
  prune.

Row-level index results are dropped (rows of a file are versions, not rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.pk.aggregation import VALUE_PRESERVING
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, and_, bind
from lakeskip.expressions.visitors import column_names, conjuncts
from lakeskip.planner.report import FileDecision, SkipTier, same_decisions
from lakeskip.planner.tiers.columns import PlanColumns
from lakeskip.planner.tiers.files import FileTiers
from lakeskip.types import RowType

__all__ = ["decide_merged", "key_columns"]


def key_columns(primary_keys: Sequence[str], partition_keys: Sequence[str]) -> set[str]:
    """The columns whose conjuncts prune a merged table's files one by one (lower case)."""
    return {k.lower() for k in (*primary_keys, *partition_keys)}


def decide_merged(
    tiers: FileTiers,
    entries: Sequence[ManifestEntry],
    cols: PlanColumns,
    pred: BooleanExpression,
    bound: Any,
    row_type: RowType,
    use_indexes: bool,
    time_zone: str,
    merge: MergeEngine,
) -> tuple[list[FileDecision], int]:
    """Every file's decision by the rule above, and the number of ``.index`` files read.

    Args:
        tiers: the per-file tiers of this plan.
        entries: the files to decide (``cols``: their stats, in order).
        pred: the unbound predicate (split into conjuncts here).
        bound: ``pred`` bound to ``row_type``.
        use_indexes: consult file indexes.
        time_zone: Spark's session time zone (timestamp literals).
        merge: the table's merge engine.
    """
    schema = tiers.table.schema
    key_names = key_columns(schema.primary_keys, schema.partition_keys)
    key_part: BooleanExpression = AlwaysTrue()
    for c in conjuncts(pred):
        if column_names(c) <= key_names:
            key_part = and_(key_part, c)
    engine = merge
    if engine.partial_update or engine.aggregation:
        # aggregation: only columns whose merged value is a value some version holds;
        # not with ignore-retract: a key whose versions are all retracts (or start
        # with them) merges to NULL in the column, which no version need hold
        held: set[str] | None = None
        if engine.aggregation:
            held = {
                a.column.lower()
                for a in engine.aggs
                if a.function in VALUE_PRESERVING and not a.ignore_retract
            }
        elif engine.groups:  # a retract clears a group's columns to NULL
            cleared = {c.lower() for seq, cols in engine.groups for c in cols if c not in seq}
            held = {n.lower() for n in row_type.names} - cleared
        full, n_full = _decide_by_conjunct(
            tiers, entries, cols, pred, key_names, row_type, use_indexes, time_zone, held
        )
    else:
        full, n_full = tiers.decide(entries, cols, bound, row_type, use_indexes)
    key_bound = bind(row_type, key_part, time_zone=time_zone)
    if isinstance(key_bound, AlwaysTrue):
        by_key = same_decisions(entries, True)
        n_key = 0
    elif isinstance(key_bound, AlwaysFalse):
        by_key = same_decisions(entries, False, SkipTier.PREDICATE)
        n_key = 0
    else:
        by_key, n_key = tiers.decide(entries, cols, key_bound, row_type, use_indexes)
    live: set[tuple[Any, ...]] = {
        (e.partition, e.bucket) for e, d in zip(entries, full, strict=True) if d.keep
    }
    out: list[FileDecision] = []
    for e, f, k in zip(entries, full, by_key, strict=True):
        if (e.partition, e.bucket) not in live:
            out.append(f)
        elif k.keep:
            out.append(FileDecision(e, keep=True))
        else:
            out.append(k)
    return out, n_full + n_key


def _decide_by_conjunct(
    tiers: FileTiers,
    entries: Sequence[ManifestEntry],
    cols: PlanColumns,
    pred: BooleanExpression,
    key_names: set[str],
    row_type: RowType,
    use_indexes: bool,
    time_zone: str,
    held: set[str] | None = None,
) -> tuple[list[FileDecision], int]:
    """Per file: kept unless its bucket has no file that may satisfy some conjunct
    reading at most one non-key column (each conjunct judged on its own: the merged row
    may take each column from a different version). ``held``: the non-key columns that
    may be that one (None: any; aggregation: those whose function returns a value of
    some version, e.g. max, not sum)."""
    out = same_decisions(entries, True)
    n = 0
    for c in conjuncts(pred):
        extra = column_names(c) - key_names
        if len(extra) > 1 or (held is not None and not extra <= held):
            continue
        b = bind(row_type, c, time_zone=time_zone)
        if isinstance(b, AlwaysTrue):
            continue
        if isinstance(b, AlwaysFalse):
            decisions = same_decisions(entries, False, SkipTier.PREDICATE)
        else:
            decisions, k = tiers.decide(entries, cols, b, row_type, use_indexes)
            n += k
        alive = {(e.partition, e.bucket) for e, d in zip(entries, decisions, strict=True) if d.keep}
        for i, (e, d) in enumerate(zip(entries, decisions, strict=True)):
            if (e.partition, e.bucket) not in alive and out[i].keep:
                out[i] = d
    return out, n
