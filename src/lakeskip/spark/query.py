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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.manifest import ManifestEntry
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import LakeskipError, TableNotFoundError
from lakeskip.planner.report import PruningReport, ScanPlan
from lakeskip.planner.scan import ScanPlanner
from lakeskip.sql.query import TableScan, analyze_query, rewrite_tables
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
        plan = planner_for(table).plan(scan.predicate, time_zone=time_zone)
        view = _new_view_name(name)
        paths = table_file_paths(table, plan.files)
        views.append((view, view_over_files(spark, table.schema.row_type, paths)))
        mapping[id(scan.node)] = view
        plans.append(plan)
    return PlannedQuery(
        sql=rewrite_tables(query.tree, mapping), views=tuple(views), plans=tuple(plans)
    )


def run_planned(spark: SparkSession, planned: PlannedQuery) -> DataFrame:
    """Register the views, let Spark analyse the rewritten query, drop the views."""
    for name, df in planned.views:
        df.createOrReplaceTempView(name)
    try:
        return spark.sql(planned.sql)
    finally:
        for name, _ in planned.views:
            spark.catalog.dropTempView(name)
