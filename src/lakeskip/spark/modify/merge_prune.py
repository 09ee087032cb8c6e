"""MERGE INTO's target scan: the files that may hold a row matching some source row
(dynamic file pruning by the source's keys), and a source evaluated once.

A target row can only match where every conjunct of ON is TRUE, so for each conjunct
``t.col = <source expr>`` (:func:`lakeskip.sql.merge_keys.merge_pruning`) one Spark job
collects the expression's distinct non-NULL values over the source, and the planner keeps
the files that may hold ``col IN (values)`` -- stats, indexes, buckets and partitions all
apply -- ANDed with ON's target-only conjuncts (``t.p = 'x'``). Composite keys give one IN
per column, an over-approximation of the tuples. A file the plan drops holds no row that
matches any source row, so:

* its rows are neither updated nor deleted, and stay in the new snapshot as they are;
* they do not stop an insert (the anti-join finds every match among the kept files);
* the multiple-match check sees every matched row.

Never pruned (every file is kept): a WHEN NOT MATCHED BY SOURCE clause (it acts on every
unmatched target row); more than :data:`MAX_KEYS_CONF` distinct key tuples in the source
(default :data:`DEFAULT_MAX_KEYS`; 0 turns pruning off); a key whose source type differs from
the column's (Spark would coerce both sides, and equality after a coercion is not equality
of the values: ``'01' = 1`` is TRUE), except integer against integer, which Spark compares
exactly; FLOAT/DOUBLE, MAP and ARRAY keys. ``<=>`` keys prune too: a NULL source value adds
``col IS NULL``. ``=`` never matches a NULL, so NULL source values are dropped.

The source is evaluated more than once by every engine (the key job, the match and the
insert anti-join; copy-on-write reads it once more to rewrite). A non-deterministic source
(``rand()``, ``uuid()``) could then give different rows each time, so it is materialised
first with ``localCheckpoint``: its rows are computed once into the executors' block
manager (memory, spilling to disk) and the plan's lineage is cut, so Spark never recomputes
them -- a lost block fails the statement rather than silently drawing new rows. A written
temporary table would survive an executor loss too, but costs a Parquet round trip and a
cleanup for the common case of a small source; deterministic sources are not materialised.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError, TypeMismatchError
from lakeskip.expressions import AlwaysTrue, BooleanExpression, IsNull, and_, in_, or_
from lakeskip.planner.report import PruningReport
from lakeskip.planner.scan import ScanPlanner
from lakeskip.sql.merge_keys import MergeKey, merge_pruning
from lakeskip.types import EPOCH_UTC, DataType, TypeRoot

__all__ = [
    "DEFAULT_MAX_KEYS",
    "MAX_KEYS_CONF",
    "MergeTarget",
    "evaluated_once",
    "plan_merge_target",
]

MAX_KEYS_CONF = "spark.lakeskip.merge.prune-max-keys"
DEFAULT_MAX_KEYS = 10_000

_INTEGERS = frozenset({"tinyint", "smallint", "int", "bigint"})
_SAME = {
    TypeRoot.BOOLEAN: "boolean",
    TypeRoot.STRING: "string",
    TypeRoot.BINARY: "binary",
    TypeRoot.DATE: "date",
    TypeRoot.TIMESTAMP: "timestamp_ntz",
    TypeRoot.TIMESTAMP_LTZ: "timestamp",
}
_REPORT_PREDICATE_CHARS = 300


@dataclass(frozen=True, slots=True)
class MergeTarget:
    """The target scan of a MERGE INTO.

    Attributes:
        snapshot: the latest snapshot (``None``: the table is empty).
        files: the files that may hold a row matching a source row.
        report: the planner's report (``None``: empty table).
        source: the source to read from here on (materialised when non-deterministic).
        pruned_by: the target columns whose source values pruned the scan (empty: none).
    """

    snapshot: Snapshot | None
    files: tuple[ManifestEntry, ...]
    report: PruningReport | None
    source: DataFrame
    pruned_by: tuple[str, ...] = ()


def plan_merge_target(
    spark: SparkSession,
    table: FileStoreTable,
    source: DataFrame,
    *,
    on: str,
    alias: str,
    source_alias: str,
    by_source: bool,
    time_zone: str,
) -> MergeTarget:
    """Plan the target files a MERGE must read (module docstring); ``table`` is refreshed.

    Args:
        by_source: the statement has WHEN NOT MATCHED BY SOURCE clauses (no pruning).

    Raises:
        InvalidArgumentError: :data:`MAX_KEYS_CONF` is not a non-negative integer.
    """
    source = evaluated_once(source)
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return MergeTarget(None, (), None, source)
    predicate: BooleanExpression = AlwaysTrue()
    pruned_by: tuple[str, ...] = ()
    limit = _max_keys(spark)
    if not by_source and limit > 0:
        row_type = table.schema.row_type
        ons = merge_pruning(on, row_type, alias, source_alias, source.columns, time_zone)
        keyed = _source_key_predicate(source, source_alias, ons.keys, table, limit)
        if keyed is not None:
            predicate, pruned_by = keyed
        predicate = and_(ons.target_predicate, predicate)
    planner = ScanPlanner(table)
    try:
        plan = planner.plan(predicate, time_zone=time_zone, snapshot=snapshot)
    except TypeMismatchError:  # not expected (types are checked): keep every file
        plan = planner.plan(AlwaysTrue(), time_zone=time_zone, snapshot=snapshot)
        pruned_by = ()
    report = plan.report
    if len(report.predicate) > _REPORT_PREDICATE_CHARS:  # thousands of key values
        report = dataclasses.replace(
            report, predicate=report.predicate[:_REPORT_PREDICATE_CHARS] + " ...)"
        )
    return MergeTarget(snapshot, tuple(plan.files), report, source, pruned_by)


def evaluated_once(source: DataFrame) -> DataFrame:
    """``source`` itself if Spark says its plan is deterministic, else its rows computed once
    (``localCheckpoint``; module docstring)."""
    try:
        deterministic = bool(source._jdf.queryExecution().analyzed().deterministic())
    except Exception:  # no JVM plan to ask (Spark Connect): assume the worst
        deterministic = False
    return source if deterministic else source.localCheckpoint(eager=True)


def _max_keys(spark: SparkSession) -> int:
    text = str(spark.conf.get(MAX_KEYS_CONF, str(DEFAULT_MAX_KEYS)) or DEFAULT_MAX_KEYS).strip()
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidArgumentError(
            f"{MAX_KEYS_CONF} must be a non-negative integer (0: no pruning), not {text!r}"
        )
    return value


def _equality_kept(source_type: str, column: DataType) -> bool:
    """Spark's ``=`` between a source value of ``source_type`` (``simpleString``) and the
    column compares the values themselves: same type, or integer against integer."""
    if column.is_integer:
        return source_type in _INTEGERS
    if column.root is TypeRoot.DECIMAL:
        return source_type == f"decimal({column.precision},{column.scale})"
    return _SAME.get(column.root) == source_type


def _source_key_predicate(
    source: DataFrame,
    source_alias: str,
    keys: Sequence[MergeKey],
    table: FileStoreTable,
    limit: int,
) -> tuple[BooleanExpression, tuple[str, ...]] | None:
    """``col IN (distinct source values) [OR col IS NULL]`` ANDed over the usable keys, by
    one bounded Spark job (``None``: no usable key, or more than ``limit`` distinct tuples)."""
    if not keys:
        return None
    row_type = table.schema.row_type
    try:  # analysis only, no job: the alias resolves as in ON
        probe = source.alias(source_alias).selectExpr(
            *(f"{k.source_sql} AS __k{i}" for i, k in enumerate(keys))
        )
    except AnalysisException:  # ON resolves differently than we read it: Spark will say
        return None
    usable: list[tuple[MergeKey, DataType, str]] = []
    for i, (k, f) in enumerate(zip(keys, probe.schema.fields, strict=True)):
        column = row_type.field(k.column).type
        if _equality_kept(f.dataType.simpleString(), column):
            usable.append((k, column, f"__k{i}"))
    if not usable:
        return None
    cols = []
    for _, column, name in usable:
        # TIMESTAMP (with local zone) values as UTC microseconds: a collected datetime would
        # be a wall clock in the Python process's zone, not Spark's session zone
        c = F.unix_micros(F.col(name)) if column.root is TypeRoot.TIMESTAMP_LTZ else F.col(name)
        cols.append(c.alias(name))
    rows = probe.select(*cols)
    for k, _, name in usable:
        if not k.null_safe:  # `=` never matches a NULL
            rows = rows.where(F.col(name).isNotNull())
    found = rows.distinct().limit(limit + 1).collect()
    if len(found) > limit:
        return None
    predicate: BooleanExpression = AlwaysTrue()
    for i, (k, column, _) in enumerate(usable):
        values = {_value(r[i], column) for r in found}
        has_null = None in values
        values.discard(None)
        p = in_(k.column, values)
        if has_null:
            p = or_(p, IsNull(k.column))
        predicate = and_(predicate, p)
    return predicate, tuple(dict.fromkeys(k.column for k, _, _ in usable))


def _value(v: Any, column: DataType) -> Any:
    if v is None:
        return None
    if column.root is TypeRoot.TIMESTAMP_LTZ:
        return EPOCH_UTC + datetime.timedelta(microseconds=int(v))
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    return v
