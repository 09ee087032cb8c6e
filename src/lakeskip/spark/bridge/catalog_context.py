"""What every handler of the Spark catalog's callbacks shares: the catalogs by name, the
calling session, the pruning reports and errors filed by query tag, and the snapshot a
request names.

:class:`~lakeskip.spark.bridge.catalog_service.CatalogService` is this context plus the dispatch;
the handlers (``catalog_tables``, ``catalog_scans``, ``catalog_writes``,
``catalog_procedures``) take it, a typed request (:mod:`lakeskip.spark.jvm.protocol`) and return
a typed reply.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.ops.time_travel import TimeTravel, resolve_snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError, LakeskipError
from lakeskip.planner.report import PruningReport
from lakeskip.spark.jvm.protocol import CatalogRequest, NamespaceRequest, TableRequest
from lakeskip.spark.read.store import spark_catalog

__all__ = ["DmlRunner", "ErrorLog", "ReportLog", "ServiceContext", "snapshot_for", "snapshot_token"]

_MAX_TAGS = 256

#: runs a DELETE / UPDATE / MERGE INTO planned by ``LakeDmlStrategy``: (catalog, spark, sql,
#: database, table) -> pruning reports
DmlRunner = Callable[[Catalog, SparkSession, str, str, str], list[PruningReport]]


def snapshot_for(
    table: FileStoreTable, version: str | None, timestamp_micros: int | None
) -> Snapshot | None:
    """The snapshot ``VERSION AS OF`` / ``TIMESTAMP AS OF`` names (``None``: the latest).

    A version is a tag name or a snapshot id (a tag first, as Paimon); a timestamp selects
    the newest snapshot committed at or before it (:mod:`lakeskip.catalog.ops.time_travel`).

    Raises:
        SnapshotNotFoundError: no such snapshot or tag.
    """
    clause = TimeTravel.of_clause(
        str(version).strip() if version is not None else None,
        timestamp_micros // 1000 if timestamp_micros is not None else None,
    )
    return resolve_snapshot(table, clause) if clause is not None else None


def snapshot_token(table: FileStoreTable, snapshot: Snapshot | None) -> str:
    """Names what a scan of ``table`` at ``snapshot`` reads, for the JVM's scan cache
    (``ScanCache.java``): any commit, schema change, rollback (Paimon may reuse a snapshot
    id) or re-creation of the table changes it; the manifest list names are unique per
    commit."""
    where = f"{table.file_io.uri(table.path)}|schema {table.schema.id}"
    if snapshot is None:
        return f"{where}|empty"
    return (
        f"{where}|{snapshot.id}|{snapshot.time_millis}|{snapshot.commit_user}|"
        f"{snapshot.commit_identifier}|{snapshot.base_manifest_list}|"
        f"{snapshot.delta_manifest_list}|{snapshot.index_manifest}"
    )


class ReportLog:
    """Pruning reports by query tag (bounded: the newest tags are kept)."""

    def __init__(self) -> None:
        self._by_tag: OrderedDict[str, list[PruningReport]] = OrderedDict()
        self._ids: OrderedDict[str, PruningReport] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, tag: str, report: PruningReport) -> str:
        rid = uuid.uuid4().hex
        with self._lock:
            self._by_tag.setdefault(tag, []).append(report)
            self._by_tag.move_to_end(tag)
            while len(self._by_tag) > _MAX_TAGS:
                self._by_tag.popitem(last=False)
            if len(self._by_tag[tag]) > 1024:
                del self._by_tag[tag][:-1024]
            self._ids[rid] = report
            while len(self._ids) > 4 * _MAX_TAGS:
                self._ids.popitem(last=False)
        return rid

    def pop(self, tag: str) -> list[PruningReport]:
        with self._lock:
            return self._by_tag.pop(tag, [])

    def get(self, tag: str) -> list[PruningReport]:
        with self._lock:
            return list(self._by_tag.get(tag, []))

    def by_id(self, report_id: str) -> PruningReport | None:
        with self._lock:
            return self._ids.get(report_id)


class ErrorLog:
    """The first lakeskip error a callback raised, by query tag (bounded), so the querying
    thread can raise the typed error instead of Spark's AnalysisException wrapping it."""

    def __init__(self) -> None:
        self._by_tag: OrderedDict[str, LakeskipError] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, tag: str, error: LakeskipError) -> None:
        if not tag:
            return
        with self._lock:
            self._by_tag.setdefault(tag, error)
            while len(self._by_tag) > _MAX_TAGS:
                self._by_tag.popitem(last=False)

    def pop(self, tag: str) -> LakeskipError | None:
        with self._lock:
            return self._by_tag.pop(tag, None)


class ServiceContext:
    """The state the callback handlers of one SparkSession share (any number of catalogs)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.reports = ReportLog()
        self.errors = ErrorLog()
        self._catalogs: dict[str, Catalog] = {}
        self._warehouses: dict[str, str] = {}  # catalog name -> warehouse (set by attach)
        self._lock = threading.Lock()
        #: runs a DELETE / UPDATE / MERGE INTO planned by ``LakeDmlStrategy``. Set by
        #: ``lakeskip.connect`` (the statement executor lives above this module).
        self.dml_runner: DmlRunner | None = None

    def bind_catalog(self, name: str, warehouse: str) -> None:
        """Serve catalog ``name`` from ``warehouse`` (overrides the JVM's conf value)."""
        with self._lock:
            self._warehouses[name] = warehouse
        # tables the JVM kept for this catalog name may be another warehouse's
        jvm = self.spark._jvm
        assert jvm is not None
        jvm.lakeskip.jvm.catalog.TableCache.clear()

    def bound_catalogs(self) -> list[str]:
        """The catalog names :meth:`bind_catalog` bound."""
        with self._lock:
            return list(self._warehouses)

    def session_of(self, jsession: Any) -> SparkSession:
        """The calling Spark session (a JVM session object a callback passed), as PySpark's:
        one brain serves every session of its JVM (a Thrift server opens one per JDBC
        connection, Connect one per client), and a statement runs with its own session's
        settings and current namespace. ``None``: this service's own session."""
        if jsession is None:
            return self.spark
        if jsession.equals(self.spark._jsparkSession):
            return self.spark
        return SparkSession(self.spark.sparkContext, jsession)

    def catalog(self, request: CatalogRequest) -> Catalog:
        name = request.catalog
        warehouse = self._warehouses.get(name) or request.warehouse
        if not warehouse:
            raise InvalidArgumentError(
                f"catalog {name} has no warehouse: set spark.sql.catalog.{name}.warehouse"
            )
        with self._lock:
            cat = self._catalogs.get(warehouse)
            if cat is None:
                cat = self._catalogs[warehouse] = spark_catalog(self.spark, warehouse)
        return cat

    @staticmethod
    def ident(request: NamespaceRequest, name: str) -> str:
        """``db.name`` of a table in the request's namespace."""
        ns = request.namespace
        if len(ns) != 1:
            raise InvalidArgumentError(
                f"lakeskip tables are named db.table, got {'.'.join([*ns, name])}"
            )
        return f"{ns[0]}.{name}"

    def table(self, request: TableRequest, name: str | None = None) -> FileStoreTable:
        """The request's table (or ``name`` in its namespace), read fresh (schema,
        snapshots); decoded manifests come from the process-wide metadata cache
        (:mod:`lakeskip.catalog.cache`), keyed by table directory and the immutable,
        uniquely named manifest file."""
        ident = self.ident(request, request.name if name is None else name)
        return self.catalog(request).get_table(ident)

    @property
    def time_zone(self) -> str:
        return str(self.spark.conf.get("spark.sql.session.timeZone") or "UTC")
