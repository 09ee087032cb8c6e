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

from pyspark.sql import DataFrame, SparkSession

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.manifest import ManifestEntry
from lakeskip.catalog.snapshot import Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.time_travel import (
    SCAN_OPTIONS,
    TimeTravel,
    resolve_snapshot,
    table_at,
    time_travel_from_options,
)
from lakeskip.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    LakeskipError,
    TableNotFoundError,
)
from lakeskip.expressions import AlwaysTrue, BooleanExpression, bind
from lakeskip.planner.report import PruningReport, ScanPlan
from lakeskip.planner.scan import ScanPlanner
from lakeskip.sql.query import AsOf, TableScan, analyze_query, rewrite_tables
from lakeskip.sql.statements import Query, TableIdent
from lakeskip.types import RowType

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


def spark_path(path: str) -> str:
    """A path Spark's Hadoop filesystem understands (local paths become ``file://``)."""
    if "://" in path:
        return path
    return "file://" + path if path.startswith("/") else path


def table_file_paths(table: FileStoreTable, entries: Sequence[ManifestEntry]) -> list[str]:
    """Spark-readable URIs of the entries' data files."""
    return [spark_path(table.file_io.uri(table.data_file_path(e))) for e in entries]


def view_over_files(spark: SparkSession, row_type: RowType, paths: Sequence[str]) -> DataFrame:
    """A DataFrame over exactly these Parquet files with the table's schema."""
    reader = spark.read.schema(row_type.spark_ddl())
    return reader.parquet(*[spark_path(p) for p in paths])


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
        paths = table_file_paths(table, plan.files)
        views.append((view, view_over_files(spark, table.schema.row_type, paths)))
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
