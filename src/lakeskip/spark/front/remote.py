"""``lakeskip.connect(warehouse, spark=<Spark Connect session>)``: a handle on a server's catalog.

A Spark Connect client has no JVM of its own: the lakeskip catalog must already be configured
on the server (``lakeskip connect-server``, or the conf of ``lakeskip spark-conf``), where the
catalog's Python brain serves it. :func:`connect_remote` checks that the server has the
catalog on the same warehouse and returns a :class:`RemoteSession`: its SQL runs on the
server (Paimon's ``WITH (...)``, ``CALL sys.x``, ``EXPLAIN PRUNING`` included, through the
server's parser extension), unqualified names resolve in the catalog's current database.
"""

from __future__ import annotations

import os
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from lakeskip.catalog.catalog import Catalog
from lakeskip.errors import InvalidArgumentError, UnsupportedStatementError
from lakeskip.planner.report import PruningReport
from lakeskip.spark.front.catalog_setup import (
    CATALOG_CLASS,
    SESSION_CATALOG_CLASS,
    is_connect_session,
)
from lakeskip.types import quote_identifier

__all__ = ["connect_remote", "is_connect_session"]


def _literal(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'"


def server_problem(spark: SparkSession, warehouse: str | None, name: str) -> str | None:
    """Why the Connect server cannot serve catalog ``name`` on ``warehouse`` (``None``: it
    can)."""
    start = (
        f"start the server with `lakeskip connect-server --warehouse {warehouse or '<path>'}"
        + (f" --catalog-name {name}" if name != "lakeskip" else "")
        + "` (or the --conf flags `lakeskip spark-conf` prints)"
    )
    configured = spark.conf.get(f"spark.sql.catalog.{name}", None)
    if configured not in (CATALOG_CLASS, SESSION_CATALOG_CLASS):
        return (
            f"the Spark Connect server has no lakeskip catalog {name!r} "
            f"(spark.sql.catalog.{name} = {configured or 'unset'}): {start}"
        )
    served = spark.conf.get(f"spark.sql.catalog.{name}.warehouse", None)
    if warehouse is not None and served and served.rstrip("/") != warehouse.rstrip("/"):
        return (
            f"the Spark Connect server's catalog {name!r} serves warehouse {served}, "
            f"not {warehouse}: {start}"
        )
    return None


class RemoteSession:
    """SQL and writes on a Spark Connect server's lakeskip catalog (see the module doc).

    The same surface as :class:`~lakeskip.spark.front.session.Session` where the server can do the
    work: ``sql``, ``write``, ``call``, ``table(...).files()``; pruning reports are read with
    ``EXPLAIN PRUNING`` (the callbacks' reports stay in the server's brain).
    """

    def __init__(
        self, catalog: Catalog, spark: SparkSession, catalog_name: str, handle: Any = None
    ) -> None:
        self.catalog = catalog
        self._handle = handle
        self.spark = spark
        self.catalog_name = catalog_name
        self.current_database = "default"
        # unqualified names resolve in the lakeskip catalog, as in Session.sql
        spark.sql(f"USE {quote_identifier(catalog_name)}.`default`")

    @property
    def last_reports(self) -> list[PruningReport]:
        return []

    def qualify(self, name: str) -> str:
        return name if "." in name else f"{self.current_database}.{name}"

    def sql(self, text: str) -> DataFrame:
        """Run ``text`` on the server (one statement; Spark's and Paimon's SQL)."""
        return self.spark.sql(text)

    def explain(self, query: str) -> list[PruningReport]:
        raise UnsupportedStatementError(
            "explain() needs the brain in this process; on Spark Connect run "
            "EXPLAIN PRUNING <query> through sql()"
        )

    def write(self, df: DataFrame, table: str, mode: str = "append") -> None:
        """Write ``df`` into ``table`` (append, or overwrite the whole table)."""
        if mode not in ("append", "overwrite"):
            raise InvalidArgumentError(f"unknown write mode {mode!r} (use 'append' or 'overwrite')")
        writer = df.writeTo(f"{quote_identifier(self.catalog_name)}.{self.qualify(table)}")
        if mode == "append":
            writer.append()
        else:
            from pyspark.sql.functions import lit

            writer.overwrite(lit(True))

    def call(self, procedure: str, *args: Any, **kwargs: Any) -> DataFrame:
        """``CALL <catalog>.sys.<procedure>(...)`` on the server."""
        name = procedure if procedure.startswith("sys.") else f"sys.{procedure}"
        parts = [_literal(a) for a in args] + [f"{k} => {_literal(v)}" for k, v in kwargs.items()]
        return self.spark.sql(
            f"CALL {quote_identifier(self.catalog_name)}.{name}({', '.join(parts)})"
        )

    def table(self, name: str) -> Any:
        """A handle on one table of the warehouse (read here: it must be reachable)."""
        return self._handle(self, self.catalog.get_table(self.qualify(name)))


def connect_remote(
    spark: SparkSession, warehouse: str | None, catalog_name: str, handle: Any
) -> RemoteSession:
    """A :class:`RemoteSession` on ``spark``'s server, or a one-line
    :class:`~lakeskip.errors.InvalidArgumentError` saying what the server needs."""
    local = None
    if warehouse is not None:
        local = warehouse if "://" in warehouse else os.path.abspath(warehouse)
    problem = server_problem(spark, local, catalog_name)
    if problem is not None:
        raise InvalidArgumentError(problem)
    served = spark.conf.get(f"spark.sql.catalog.{catalog_name}.warehouse", None)
    return RemoteSession(Catalog(str(local or served)), spark, catalog_name, handle)
