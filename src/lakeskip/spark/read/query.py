"""The read path: plan every lakeskip table in a query, then let Spark run it over the survivors.

For each reference to a lakeskip table the query's predicates on that table are translated
(``lakeskip.sql.query.analyze_query``), the planner picks the files that might hold matches,
and the reference is replaced by a uniquely named temporary view over exactly those Parquet
files (with the table's schema, so an empty list works). Spark then runs the query *as
written*: every predicate is still applied, Spark keeps its own column pruning and Parquet
row-group filtering. The views are dropped as soon as Spark has analysed the query -- the
DataFrame keeps the resolved plan -- so concurrent queries never see each other's views.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import assert_never

from pyspark.sql import Column, DataFrame, SparkSession

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.ops.time_travel import (
    SCAN_OPTIONS,
    TimeTravel,
    resolve_snapshot,
    table_at,
    time_travel_from_options,
)
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND, RowKind, schema_key_layout
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    LakeskipError,
    TableNotFoundError,
)
from lakeskip.expressions import AlwaysTrue, BooleanExpression, bind
from lakeskip.planner.report import PruningReport, ScanPlan
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark.read.dv import (
    live_rows_frame,
    pushdown_safe_frame,
    read_vectors,
    spark_path,
    table_file_paths,
    view_over_files,
)
from lakeskip.sql.query import AsOf, TableScan, analyze_query, rewrite_tables
from lakeskip.sql.statements import Query, TableIdent
from lakeskip.types import BIGINT, TINYINT, Field, RowType

__all__ = [
    "PlannedQuery",
    "plan_query",
    "run_planned",
    "spark_path",
    "table_file_paths",
    "view_over_files",
]

_view_counter = itertools.count()
_view_lock = threading.Lock()


def table_view(
    spark: SparkSession,
    table: FileStoreTable,
    entries: Sequence[ManifestEntry],
    snapshot: Snapshot | None = None,
) -> DataFrame:
    """The table's rows in exactly these files, by the table's kind: the live rows of the
    files (DVs applied) on an append table, the merged rows (newest version per key, deletes
    dropped) on a primary-key table read by merge, the live rows of files at level > 0 (DVs
    applied, no merge) on one read raw. ``snapshot``: where the DVs are read (default: the
    latest)."""
    kind = table.kind
    match kind:
        case PkRaw():
            return _live_rows(spark, table, [e for e in entries if e.file.level > 0], snapshot)
        case PkMerge(merge=merge):
            paths = table_file_paths(table, entries)
            merged = merged_view(spark, table.schema, paths, merge)
            return pushdown_safe_frame(merged, table, entries)
        case Append() | AppendDv():  # DVs also on a plain append table Paimon wrote to
            return _live_rows(spark, table, entries, snapshot)
        case _:
            assert_never(kind)


def _live_rows(
    spark: SparkSession,
    table: FileStoreTable,
    entries: Sequence[ManifestEntry],
    snapshot: Snapshot | None,
) -> DataFrame:
    snapshot = snapshot if snapshot is not None else table.latest_snapshot()
    return live_rows_frame(spark, table, entries, read_vectors(table, entries, snapshot))


def merged_view(
    spark: SparkSession, schema: TableSchema, paths: Sequence[str], engine: MergeEngine
) -> DataFrame:
    """Merge-on-read of a primary-key table's files as a Spark plan (a window per key): the
    path of reads that do not go through the Spark catalog (the catalog's scan merges the
    sorted files of each bucket without a shuffle)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    layout = schema_key_layout(schema)
    row_type = schema.row_type
    kv_fields = [
        *(
            Field(-1, kc, row_type.field(k).type)
            for k, kc in zip(layout.trimmed, layout.key_columns, strict=True)
        ),
        Field(-1, SEQUENCE_NUMBER, BIGINT),
        Field(-1, VALUE_KIND, TINYINT),
        *row_type.fields,
    ]
    df = spark.read.schema(RowType(tuple(kv_fields)).spark_ddl()).parquet(
        *[spark_path(p) for p in paths]
    )
    keys = [F.col(f"`{k}`") for k in (*schema.partition_keys, *layout.key_columns)]
    if engine.partial_update:
        return _partial_update_view(df, schema, keys, engine)
    rank = "__lakeskip_version"
    newest = Window.partitionBy(*keys).orderBy(F.col(SEQUENCE_NUMBER).desc())
    return (
        df.withColumn(rank, F.row_number().over(newest))
        .where(
            (F.col(rank) == 1)
            & F.col(VALUE_KIND).isin(int(RowKind.INSERT), int(RowKind.UPDATE_AFTER))
        )
        .select(*[F.col(f"`{n}`") for n in row_type.names])
    )


def _partial_update_view(
    df: DataFrame, schema: TableSchema, keys: Sequence[Column], engine: MergeEngine
) -> DataFrame:
    """``merge-engine = partial-update`` as a Spark plan, the rules of
    :mod:`lakeskip.catalog.pk.merge_engine`: per key, a *base* version (the newest -D with
    remove-record-on-delete, else a retract version that comes first), then each column's
    newest non-null value among the +I/+U versions after the base, else the base's value."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    seq, kind = F.col(SEQUENCE_NUMBER), F.col(VALUE_KIND)
    is_add = kind.isin(int(RowKind.INSERT), int(RowKind.UPDATE_AFTER))
    if not (engine.ignore_delete or engine.remove_record_on_delete):
        df = df.withColumn(
            VALUE_KIND,
            F.when(
                is_add | kind.isNull(),
                kind,
            ).otherwise(
                F.raise_error(
                    F.lit(
                        "a partial-update table holds -U/-D versions but neither "
                        "'ignore-delete' nor 'partial-update.remove-record-on-delete' is set"
                    )
                ).cast("tinyint")
            ),
        )
    group = Window.partitionBy(*keys)
    removes = engine.remove_record_on_delete and not engine.ignore_delete
    base = "__lakeskip_base"
    first_retract = F.when(~F.min_by(is_add, seq).over(group), F.min(seq).over(group))
    if removes:
        base_col = F.coalesce(
            F.max(F.when(kind == int(RowKind.DELETE), seq)).over(group), first_retract
        )
    else:
        base_col = first_retract
    with_base = df.withColumn(base, base_col)
    b = F.col(base)
    after = b.isNull() | (seq > b)
    values = []
    for n in schema.row_type.names:
        c = F.col(f"`{n}`")
        if n in schema.partition_keys:
            continue  # a grouping column already
        if n in schema.primary_keys:
            values.append(F.first(c).alias(n))
            continue
        newest = F.max_by(c, F.when(is_add & c.isNotNull() & after, seq))
        values.append(F.coalesce(newest, F.max_by(c, F.when(seq == b, seq))).alias(n))
    alive = F.max(is_add.cast("int")) == 1
    if removes:
        alive = alive & (F.max_by(kind, seq) != int(RowKind.DELETE))
    return (
        with_base.groupBy(*keys)
        .agg(alive.alias("__lakeskip_alive"), *values)
        .where(F.col("__lakeskip_alive"))
        .select(*[F.col(f"`{n}`") for n in schema.row_type.names])
    )


def _new_view_name(ident: str) -> str:
    with _view_lock:
        n = next(_view_counter)
    safe = "".join(c if c.isalnum() else "_" for c in ident)
    return f"__lakeskip_{safe}_{n}_{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    """A query rewritten onto pruned views, with one plan per lakeskip table reference."""

    sql: str
    views: tuple[tuple[str, DataFrame], ...]
    plans: tuple[ScanPlan, ...]

    @property
    def reports(self) -> list[PruningReport]:
        return [p.report for p in self.plans]


def plan_query(
    spark: SparkSession,
    catalog: Catalog,
    query: Query,
    default_db: str,
    time_zone: str,
    planner_for: Callable[[FileStoreTable], ScanPlanner] = ScanPlanner,
) -> PlannedQuery:
    """Plan every lakeskip table reference of ``query`` (no Spark job runs here)."""
    tables: dict[str, FileStoreTable] = {}

    def lookup(ident: TableIdent) -> RowType | None:
        name = ident.qualified(default_db)
        if name in tables:
            return tables[name].schema.row_type
        try:
            table = catalog.get_table(name)
        except (TableNotFoundError, LakeskipError):
            return None
        tables[name] = table
        return table.schema.row_type

    scans: list[TableScan] = analyze_query(
        query.tree, tables=lookup, default_db=default_db, time_zone=time_zone
    )
    if not scans:
        return PlannedQuery(sql=query.sql, views=(), plans=())
    mapping: dict[int, str] = {}
    views: list[tuple[str, DataFrame]] = []
    plans: list[ScanPlan] = []
    for scan in scans:
        name = scan.ident.qualified(default_db)
        table = tables[name]
        snapshot = _time_travel_snapshot(spark, table, scan.as_of)
        if snapshot is not None:
            table = table_at(table, snapshot)
        predicate = scan.predicate
        if snapshot is not None and not _columns_exist(predicate, table.schema.row_type):
            predicate = AlwaysTrue()  # a column added later: Spark reports it, we prune nothing
        plan = planner_for(table).plan(
            predicate,
            time_zone=time_zone,
            snapshot_id=snapshot.id if snapshot is not None else None,
        )
        view = _new_view_name(name)
        plan_snapshot = table.snapshot(plan.report.snapshot_id) if plan.report.snapshot_id else None
        views.append((view, table_view(spark, table, plan.files, plan_snapshot)))
        mapping[id(scan.node)] = view
        plans.append(plan)
    return PlannedQuery(
        sql=rewrite_tables(query.tree, mapping), views=tuple(views), plans=tuple(plans)
    )


SPARK_CONF_PREFIX = "spark.paimon."


def _time_travel_snapshot(
    spark: SparkSession, table: FileStoreTable, as_of: AsOf | None
) -> Snapshot | None:
    """The snapshot a reference reads: its AS OF clause, else the session's
    ``spark.paimon.scan.*`` settings, else the table's ``scan.*`` options; ``None``: latest."""
    travel: TimeTravel | None = None
    if as_of is not None and as_of.timestamp_sql is not None:
        row = spark.sql(
            f"SELECT unix_micros(CAST(({as_of.timestamp_sql}) AS TIMESTAMP)) AS us"
        ).first()
        if row is None or row[0] is None:
            raise InvalidArgumentError(
                f"TIMESTAMP AS OF {as_of.timestamp_sql}: not a timestamp (it is NULL)"
            )
        travel = TimeTravel(timestamp_millis=int(row[0]) // 1000)
    elif as_of is not None and as_of.version is not None:
        travel = TimeTravel.version_of(as_of.version)
    else:
        travel = configured_time_travel(spark, table)
    if travel is None:
        return None
    return resolve_snapshot(table, travel)


def configured_time_travel(spark: SparkSession, table: FileStoreTable) -> TimeTravel | None:
    """The time travel a read without an AS OF clause does: the session's
    ``spark.paimon.scan.*`` settings, else the table's ``scan.*`` options (``None``: latest)."""
    conf = {k: str(spark.conf.get(SPARK_CONF_PREFIX + k, "") or "") for k in SCAN_OPTIONS}
    return time_travel_from_options(conf) or time_travel_from_options(table.schema.options)


def settings_time_travel(settings: Mapping[str, str], table: FileStoreTable) -> TimeTravel | None:
    """:func:`configured_time_travel` from the session's ``spark.paimon.*`` settings as the
    JVM sent them with a callback (no round trip back into the JVM per key)."""
    conf = {k: str(settings.get(SPARK_CONF_PREFIX + k, "") or "") for k in SCAN_OPTIONS}
    return time_travel_from_options(conf) or time_travel_from_options(table.schema.options)


def _columns_exist(predicate: BooleanExpression, row_type: RowType) -> bool:
    try:
        bind(row_type, predicate)
    except ColumnNotFoundError:
        return False
    return True


def run_planned(spark: SparkSession, planned: PlannedQuery) -> DataFrame:
    """Register the views, let Spark analyse the rewritten query, drop the views."""
    for name, df in planned.views:
        df.createOrReplaceTempView(name)
    try:
        return spark.sql(planned.sql)
    finally:
        for name, _ in planned.views:
            spark.catalog.dropTempView(name)
