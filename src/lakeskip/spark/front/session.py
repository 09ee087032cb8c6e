"""``lakeskip.connect()`` and the :class:`Session`: SQL and Python over a lakeskip warehouse.

Example:
    >>> import lakeskip                                        # doctest: +SKIP
    >>> s = lakeskip.connect("./warehouse")                    # doctest: +SKIP
    >>> s.sql("CREATE TABLE t (id BIGINT, user_id STRING) "
    ...       "WITH ('file-index.bloom-filter.columns'='user_id')")  # doctest: +SKIP
    >>> s.sql("INSERT INTO t VALUES (1, 'u1'), (2, 'u2')")    # doctest: +SKIP
    >>> s.sql("SELECT * FROM t WHERE user_id = 'u2'").show()  # doctest: +SKIP
    >>> s.last_reports[0].summary()                            # doctest: +SKIP
    'default.t: files 1/1 kept; planned in 0.4 ms'
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError, LakeskipError, LakeskipWarning, QueryFailedError
from lakeskip.planner.report import PruningReport
from lakeskip.spark.bridge.catalog_service import CatalogService
from lakeskip.spark.bridge.error_text import spark_error_message
from lakeskip.spark.front import statements as st_exec
from lakeskip.spark.front.builder import (
    build_spark_session,
    fix_worker_python,
    quiet_spark_logging,
)
from lakeskip.spark.front.catalog_setup import (
    DEFAULT_CATALOG,
    SESSION_CATALOG_CLASS,
    attach_catalog,
    catalog_conf,
    catalog_jar,
)
from lakeskip.spark.front.native_query import qualify_query, run_native_query
from lakeskip.spark.front.remote import connect_remote, is_connect_session
from lakeskip.spark.read.dv import files_read_by_name
from lakeskip.spark.read.query import plan_query, run_planned
from lakeskip.spark.read.store import spark_catalog
from lakeskip.spark.write.align import align_by_name
from lakeskip.spark.write.writer import write_dataframe
from lakeskip.sql.query import table_references
from lakeskip.sql.statement_types import Query, Statement
from lakeskip.sql.statements import parse_statements

__all__ = ["Session", "TableHandle", "connect"]

DEFAULT_DATABASE = "default"


def connect(
    warehouse: str | None = None,
    spark: SparkSession | None = None,
    *,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    catalog_name: str = DEFAULT_CATALOG,
    as_session_catalog: bool = False,
) -> Session:
    """Open a lakeskip session on a warehouse, with the lakeskip Spark catalog installed.

    On a Spark Connect client session (``SparkSession.builder.remote(...)``) the server must
    have the catalog configured already (``lakeskip connect-server``): the server's catalog
    is checked and a :class:`~lakeskip.spark.front.remote.RemoteSession` returned, or a one-line
    error says what the server needs.

    After this, the SparkSession itself knows the tables: ``spark.sql("SELECT ... FROM
    lakeskip.db.t")``, ``spark.table(...)``, ``df.writeTo(...)`` all prune and write through
    lakeskip. Without a ``javac`` the catalog cannot be built: only :meth:`Session.sql` then
    prunes (through temporary views), announced once.

    Args:
        warehouse: a local path or a URI any pyarrow filesystem handles (``s3://...``);
            default: ``spark.sql.catalog.<catalog_name>.warehouse`` if set, else
            ``./warehouse``.
        spark: an existing SparkSession to use (the catalog is attached at run time); by
            default the active one, or a new local one with lakeskip's defaults
            (:data:`lakeskip.spark.front.builder.DEFAULT_CONF`) and the catalog configured.
        master: Spark master when building a session (``local[*]`` by default).
        conf: extra Spark configuration when building a session.
        catalog_name: the Spark catalog name (``lakeskip.db.t``).
        as_session_catalog: when building a session, also install the catalog as
            ``spark_catalog``, so unqualified names resolve to lakeskip tables beside
            ordinary Spark tables (``CREATE TABLE t ... USING lakeskip``).
    """
    if spark is not None and is_connect_session(spark):
        return connect_remote(spark, warehouse, catalog_name, TableHandle)  # type: ignore[return-value]
    if warehouse is None and spark is not None:
        warehouse = spark.conf.get(f"spark.sql.catalog.{catalog_name}.warehouse", None)
    warehouse = warehouse or "./warehouse"
    if spark is None:
        jar = catalog_jar()
        extra = dict(conf or {})
        if jar is not None:
            extra = {
                **catalog_conf(
                    warehouse, catalog_name, as_session_catalog=as_session_catalog, jar=jar
                ),
                **extra,
            }
        spark = build_spark_session(master=master, conf=extra)
    else:
        quiet_spark_logging(spark)
        problem = fix_worker_python(spark)
        if problem is not None:
            warnings.warn(problem, LakeskipWarning, stacklevel=2)
        if as_session_catalog and spark.conf.get("spark.sql.catalog.spark_catalog", None) != (
            SESSION_CATALOG_CLASS
        ):
            raise InvalidArgumentError(
                "as_session_catalog needs the catalog configured when the session starts: "
                "build it with lakeskip.spark.catalog_conf(..., as_session_catalog=True)"
            )
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    if int(spark.conf.get(key) or "32") < 4096 and not (conf and key in conf):
        spark.conf.set(key, "4096")  # see DEFAULT_CONF: avoid a listing job per query
    service = attach_catalog(spark, warehouse, catalog_name)
    if service is not None:
        service.dml_runner = st_exec.run_catalog_dml
    return Session(
        spark_catalog(spark, warehouse), spark, catalog_name=catalog_name, service=service
    )


class Session:
    """A SQL and Python entry point bound to one catalog and one SparkSession.

    Thread-safe for queries: every query uses its own uniquely named, immediately dropped
    temporary views. ``USE`` changes the session's current database.
    """

    def __init__(
        self,
        catalog: Catalog,
        spark: SparkSession,
        *,
        catalog_name: str | None = None,
        service: CatalogService | None = None,
    ) -> None:
        self.catalog = catalog
        self.spark = spark
        #: the Spark catalog serving this warehouse (``None``: temp-view fallback)
        self.catalog_name = catalog_name if service is not None else None
        self._service = service
        self.current_database = DEFAULT_DATABASE
        self._local = threading.local()

    # -- properties ---------------------------------------------------------------------------

    @property
    def time_zone(self) -> str:
        return str(self.spark.conf.get("spark.sql.session.timeZone") or "UTC")

    @property
    def last_reports(self) -> list[PruningReport]:
        """Pruning reports of the last query run by this thread (one per table reference)."""
        return list(getattr(self._local, "reports", []))

    def _set_reports(self, reports: list[PruningReport]) -> None:
        self._local.reports = reports

    def qualify(self, name: str) -> str:
        return name if "." in name else f"{self.current_database}.{name}"

    # -- SQL ----------------------------------------------------------------------------------

    def sql(self, text: str) -> DataFrame:
        """Run one or more ``;``-separated statements; returns the last one's result.

        Queries return a lazy DataFrame over the pruned files; statements return a small
        result DataFrame. Raises typed :mod:`lakeskip.errors` exceptions.
        """
        statements = parse_statements(text)
        if not statements:
            raise InvalidArgumentError("no SQL statement to run")
        result: DataFrame | None = None
        for statement in statements:
            result = self.execute(statement)
        assert result is not None
        return result

    def execute(self, statement: Statement) -> DataFrame:
        """Run one parsed statement."""
        self._set_reports([])
        try:
            ctx = self._context()
            result = st_exec.execute(ctx, statement)
            if ctx.current_database != self.current_database:  # USE, DROP DATABASE
                self.current_database = ctx.current_database
            if ctx.reports is not None:
                self._set_reports(ctx.reports)
            return result
        except LakeskipError:
            raise
        except PySparkException as e:
            raise QueryFailedError(spark_error_message(e)) from e

    def _plan_native(self, query: Query) -> tuple[DataFrame, list[PruningReport]]:
        """The query through the Spark catalog, optimised (so every scan is planned)."""
        assert self._service is not None and self.catalog_name is not None
        sql = qualify_query(query, self.catalog, self.catalog_name, self.current_database)
        return run_native_query(self.spark, self._service, sql)

    def _native(self, query: Query) -> bool:
        """Whether ``query`` runs through the Spark catalog: it is active, and no lakeskip
        table the query names has files that must be read by field id (a column renamed,
        retyped, or dropped and its name reused since some schema version: Spark's Parquet
        scan matches by name), which the planned read does."""
        if self._service is None or self.catalog_name is None:
            return False
        for catalog, ident in table_references(query):
            if catalog is not None and catalog != self.catalog_name:
                continue
            try:
                table = self.catalog.get_table(ident.qualified(self.current_database))
            except LakeskipError:
                continue  # not a lakeskip table (a CTE, a view): Spark's business
            if not files_read_by_name(table):
                return False
        return True

    def _query(self, query: Query) -> DataFrame:
        if self._native(query):
            df, reports = self._plan_native(query)
            self._set_reports(reports)
            for message in dict.fromkeys(w for r in reports for w in r.warnings):
                # at the caller of Session.sql (sql -> execute -> the statements' execute ->
                # their query handler -> here)
                warnings.warn(message, LakeskipWarning, stacklevel=6)
            return df
        planned = plan_query(self.spark, self.catalog, query, self.current_database, self.time_zone)
        self._set_reports(planned.reports)
        return run_planned(self.spark, planned)

    def explain(self, query: str) -> list[PruningReport]:
        """Plan a query without running it; one report per lakeskip table reference."""
        statements = parse_statements(query)
        if len(statements) != 1 or not isinstance(statements[0], Query):
            raise InvalidArgumentError("explain() takes exactly one query")
        if self._native(statements[0]):
            try:
                return self._plan_native(statements[0])[1]
            except PySparkException as e:
                raise QueryFailedError(spark_error_message(e)) from e
        planned = plan_query(
            self.spark, self.catalog, statements[0], self.current_database, self.time_zone
        )
        return planned.reports

    # -- Python API ---------------------------------------------------------------------------

    def write(self, df: DataFrame, table: str, mode: str = "append") -> None:
        """Write a DataFrame into a table, matching columns by name.

        Args:
            df: the rows.
            table: ``db.t`` or ``t`` (current database).
            mode: ``"append"`` or ``"overwrite"`` (dynamic per partition on partitioned tables).
        """
        if mode not in ("append", "overwrite"):
            raise InvalidArgumentError(f"unknown write mode {mode!r} (use 'append' or 'overwrite')")
        t = self.catalog.get_table(self.qualify(table))
        try:
            aligned = align_by_name(df, t.schema.row_type, f"write to {t.identifier}")
            write_dataframe(t, aligned, overwrite=mode == "overwrite")
        except PySparkException as e:
            raise QueryFailedError(spark_error_message(e)) from e

    def table(self, name: str) -> TableHandle:
        """A handle on one table: its files, snapshots, and procedures."""
        return TableHandle(self, self.catalog.get_table(self.qualify(name)))

    def call(self, procedure: str, *args: Any, **kwargs: Any) -> DataFrame:
        """Run a procedure, as ``CALL sys.<procedure>(...)`` does."""
        return st_exec.call_procedure(self._context(), procedure, args, kwargs)

    def _context(self) -> st_exec.StatementContext:
        return st_exec.StatementContext(
            catalog=self.catalog,
            spark=self.spark,
            current_database=self.current_database,
            run_query=self.sql,
            plan_native=self._plan_native if self._service is not None else None,
            run_parsed=self._query,
            catalog_name=self.catalog_name,
        )


class TableHandle:
    """A small facade over one table (``session.table("db.t")``)."""

    def __init__(self, session: Session, table: FileStoreTable) -> None:
        self._session = session
        self._table = table

    @property
    def identifier(self) -> str:
        return self._table.identifier

    @property
    def table(self) -> FileStoreTable:
        return self._table

    def to_df(self) -> DataFrame:
        """All rows, unpruned."""
        return self._session.sql(f"SELECT * FROM {self.identifier}")

    def files(self) -> list[str]:
        """Absolute paths of the live data files."""
        t = self._session.catalog.get_table(self.identifier)
        return [t.data_file_path(e) for e in t.scan_files()]

    def rewrite_file_index(self, where: str | None = None) -> DataFrame:
        kwargs: dict[str, Any] = {"table": self.identifier}
        if where is not None:
            kwargs["where"] = where
        return self._session.call("sys.rewrite_file_index", **kwargs)

    def compact(
        self,
        order_strategy: str | None = None,
        order_by: str | list[str] | None = None,
        where: str | None = None,
    ) -> DataFrame:
        kwargs: dict[str, Any] = {"table": self.identifier}
        if order_strategy is not None:
            kwargs["order_strategy"] = order_strategy
        if order_by is not None:
            kwargs["order_by"] = order_by if isinstance(order_by, str) else ",".join(order_by)
        if where is not None:
            kwargs["where"] = where
        return self._session.call("sys.compact", **kwargs)
