"""``Session.sql`` queries through the Spark catalog: qualify, run, collect the reports.

The query text goes to ``spark.sql`` with each lakeskip table reference qualified with the
catalog's name (``events`` -> ``lakeskip.default.events``; CTE names and ordinary Spark
tables are left alone, using the same scope analysis as the temp-view path). Spark then
plans it like any other catalog query, and the catalog's callbacks file their pruning
reports under a Spark local property set for this thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from lakeskip.catalog.ops.system_tables import split_system_name
from lakeskip.errors import LakeskipError, UnsupportedStatementError
from lakeskip.planner.report import PruningReport
from lakeskip.spark.bridge.catalog_service import CatalogService
from lakeskip.spark.jvm.protocol import TAG_PROPERTY
from lakeskip.sql.query import qualify_tables
from lakeskip.sql.statement_types import Query, TableIdent
from lakeskip.types import RowType

if TYPE_CHECKING:
    from lakeskip.catalog.catalog import Catalog

__all__ = ["pruning_reports", "qualify_query", "run_native_query", "tagged"]


@contextmanager
def tagged(spark: SparkSession) -> Iterator[str]:
    """Set a fresh query tag on this thread's Spark local properties for the block."""
    sc = spark.sparkContext
    previous = sc.getLocalProperty(TAG_PROPERTY)
    tag = uuid.uuid4().hex
    sc.setLocalProperty(TAG_PROPERTY, tag)
    try:
        yield tag
    finally:
        sc.setLocalProperty(TAG_PROPERTY, previous)  # type: ignore[arg-type]


@contextmanager
def pruning_reports(spark: SparkSession) -> Iterator[list[PruningReport]]:
    """Collect the pruning reports of every lakeskip scan planned inside the block.

    Example:
        >>> with pruning_reports(spark) as reports:                      # doctest: +SKIP
        ...     spark.sql("SELECT * FROM lakeskip.db.t WHERE id = 5").collect()
        >>> reports[0].summary()                                         # doctest: +SKIP
        'db.t: files 1/32 kept; skipped by stats 31; planned in 2.1 ms'
    """
    from lakeskip.spark.front.catalog_setup import is_connect_session, service_for

    if is_connect_session(spark):
        raise UnsupportedStatementError(
            "pruning_reports needs the Spark driver in this process; on Spark Connect use "
            "spark.sql('EXPLAIN PRUNING <query>') (the report as rows) or df.explain() (the "
            "scan's Pruning: line)"
        )
    service = service_for(spark)
    out: list[PruningReport] = []
    with tagged(spark) as tag:
        try:
            yield out
        finally:
            out.extend(service.reports.pop(tag))


def qualify_query(query: Query, catalog: Catalog, catalog_name: str, default_db: str) -> str:
    """The query's Spark SQL with every lakeskip table reference catalog-qualified."""

    def lookup(ident: TableIdent) -> RowType | None:
        base, system = split_system_name(ident.qualified(default_db))
        try:
            row_type = catalog.get_table(base).schema.row_type
            # t$snapshots ...: the catalog's, with no column to prune by
            return row_type if system is None else RowType(())
        except LakeskipError:
            return None

    return qualify_tables(query, lookup, catalog_name, default_db)


def run_native_query(
    spark: SparkSession,
    service: CatalogService,
    sql: str,
) -> tuple[DataFrame, list[PruningReport]]:
    """Run ``sql`` through the catalog; returns the DataFrame and its pruning reports.

    The optimizer runs here (that is when the catalog plans its scans), so the reports are
    complete when this returns; the DataFrame keeps that plan for its actions.
    """
    with tagged(spark) as tag:
        try:
            df = spark.sql(sql)
            df._jdf.queryExecution().optimizedPlan()
        except PySparkException as e:
            typed = service.errors.pop(tag)
            if typed is not None:
                raise typed from e
            raise
        finally:
            service.errors.pop(tag)
    return df, service.reports.pop(tag)
