"""The Python brain behind the Spark catalog: the one entry point of every JVM callback.

Java (``lakeskip.spark.jvm``) calls :meth:`CatalogService.call` with an operation name and a
JSON object (:mod:`lakeskip.spark.jvm.protocol` defines both); the service decodes the typed
request, calls the operation's handler and encodes its typed reply. Each handler is a call
into the same layers ``Session.sql`` uses -- the :class:`~lakeskip.catalog.Catalog`,
:class:`~lakeskip.planner.scan.ScanPlanner`, the Spark-task writer and the procedure
registry -- so the two entry points cannot drift. The handlers live by concern:
:mod:`~lakeskip.spark.bridge.catalog_tables` (tables, namespaces, staging),
:mod:`~lakeskip.spark.bridge.catalog_scans` (reads), :mod:`~lakeskip.spark.bridge.catalog_writes` (writes,
DML) and :mod:`~lakeskip.spark.bridge.catalog_procedures` (procedures, the parser extension).

Errors come back as ``{"error": {"kind", "message"}}`` (:class:`~lakeskip.spark.jvm.protocol.
ErrorKind`) and surface in Spark as one-line AnalysisExceptions, or as Spark's own exception
where its analyzer acts on one (table not found, ...).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql import SparkSession

from lakeskip.errors import (
    LakeskipError,
    ProtocolError,
    ProtocolMismatchError,
    UnknownOperationError,
)
from lakeskip.index.registry import load_all
from lakeskip.spark.bridge import catalog_procedures, catalog_scans, catalog_tables, catalog_writes
from lakeskip.spark.bridge.catalog_context import ServiceContext
from lakeskip.spark.bridge.error_text import spark_error_message
from lakeskip.spark.jvm.protocol import (
    OPERATIONS,
    PROTOCOL,
    ErrorInfo,
    ErrorKind,
    ErrorReply,
    Op,
    Request,
    decode,
    encode,
    envelope,
    error_kind,
)

__all__ = ["HANDLERS", "CallbackStats", "CatalogService"]

#: A handler: (the service's context, the typed request, the JVM argument) -> typed reply.
Handler = Callable[[ServiceContext, Any, Any], Any]

#: The handler of every operation.
HANDLERS: Mapping[Op, Handler] = {
    Op.TABLE_EXISTS: catalog_tables.table_exists,
    Op.LOAD_TABLE: catalog_tables.load_table,
    Op.CREATE_TABLE: catalog_tables.create_table,
    Op.ALTER_TABLE: catalog_tables.alter_table,
    Op.DROP_TABLE: catalog_tables.drop_table,
    Op.LIST_TABLES: catalog_tables.list_tables,
    Op.LIST_NAMESPACES: catalog_tables.list_namespaces,
    Op.NAMESPACE_EXISTS: catalog_tables.namespace_exists,
    Op.CREATE_NAMESPACE: catalog_tables.create_namespace,
    Op.DROP_NAMESPACE: catalog_tables.drop_namespace,
    Op.STAGE_TABLE: catalog_tables.stage_table,
    Op.COMMIT_STAGED: catalog_tables.commit_staged,
    Op.ABORT_STAGED: catalog_tables.abort_staged,
    Op.TABLE_DETAIL: catalog_tables.table_detail,
    Op.SHOW_CREATE_TABLE: catalog_tables.show_create_table,
    Op.CREATE_TABLE_LIKE: catalog_tables.create_table_like,
    Op.LIST_PARTITIONS: catalog_tables.list_partitions,
    Op.DROP_PARTITION: catalog_tables.drop_partition,
    Op.PLAN_SCAN: catalog_scans.plan_scan,
    Op.STREAM_START: catalog_scans.stream_start,
    Op.STREAM_LATEST: catalog_scans.stream_latest,
    Op.STREAM_PLAN: catalog_scans.stream_plan,
    Op.RUNTIME_FILTER: catalog_scans.runtime_filter,
    Op.AGGREGATE_SCAN: catalog_scans.aggregate_scan,
    Op.FILE_REPORT: catalog_scans.file_report,
    Op.SYSTEM_ROWS: catalog_scans.system_rows,
    Op.EXPLAIN_ROWS: catalog_scans.explain_rows,
    Op.WRITE: catalog_writes.write,
    Op.STREAM_WRITE: catalog_writes.stream_write,
    Op.DML: catalog_writes.dml,
    Op.PROCEDURE_INFO: catalog_procedures.procedure_info,
    Op.LIST_PROCEDURES: catalog_procedures.list_procedures,
    Op.CALL_PROCEDURE: catalog_procedures.call_procedure,
    Op.REWRITE_SQL: catalog_procedures.rewrite_sql,
}


@dataclass(frozen=True, slots=True)
class CallbackStats:
    """Callbacks served per operation and the seconds Python spent on them (from the
    payload's arrival to the reply's encoding; py4j's transport is not included)."""

    calls: Mapping[str, int]
    seconds: Mapping[str, float]

    def since(self, earlier: CallbackStats) -> CallbackStats:
        """What happened between ``earlier`` and this one."""
        return CallbackStats(
            {k: v - earlier.calls.get(k, 0) for k, v in self.calls.items()},
            {k: v - earlier.seconds.get(k, 0.0) for k, v in self.seconds.items()},
        )


class CatalogService(ServiceContext):
    """Serves the JVM catalog's callbacks for one SparkSession (any number of catalogs)."""

    def __init__(self, spark: SparkSession) -> None:
        super().__init__(spark)
        # imported now rather than in the first query's planning callback
        load_all()
        self._calls: dict[str, int] = {}
        self._seconds: dict[str, float] = {}
        self._stats_lock = threading.Lock()

    def callback_stats(self) -> CallbackStats:
        """Callbacks served so far (``make bench`` reports them per query)."""
        with self._stats_lock:
            return CallbackStats(dict(self._calls), dict(self._seconds))

    def call(self, op: str, payload_json: str, arg: Any) -> str:
        """py4j entry point: never raises (an exception would reach Spark as a py4j stack)."""
        started = time.perf_counter()
        try:
            return self._serve(op, payload_json, arg)
        finally:
            elapsed = time.perf_counter() - started
            with self._stats_lock:
                self._calls[op] = self._calls.get(op, 0) + 1
                self._seconds[op] = self._seconds.get(op, 0.0) + elapsed

    def _serve(self, op: str, payload_json: str, arg: Any) -> str:
        """The JSON reply to one callback: its handler's, or an :class:`ErrorReply`'s."""
        tag = ""
        try:
            payload = json.loads(payload_json)
            if not isinstance(payload, dict):
                raise ProtocolError(f"{op}: the payload is not a JSON object")
            head = envelope(payload)
            tag = head.tag
            if head.protocol != PROTOCOL:
                raise ProtocolMismatchError(
                    f"lakeskip catalog protocol mismatch (jar {head.protocol}, "
                    f"Python {PROTOCOL}): rebuild the jar"
                )
            try:
                operation = Op(op)
            except ValueError:
                raise UnknownOperationError(f"unknown catalog operation {op!r}") from None
            spec = OPERATIONS[operation]
            request: Request = decode(spec.request, payload, op)
            reply = HANDLERS[operation](self, request, arg)
            if not isinstance(reply, spec.replies):
                raise TypeError(f"{op} handler replied {type(reply).__name__}")
            # no space after each separator: a whole-table scan's reply lists 100,000 files
            return json.dumps(encode(reply), separators=(",", ":"))
        except LakeskipError as e:
            # the querying thread re-raises this typed error (native_query.run_native_query)
            self.errors.add(tag, e)
            return _error(error_kind(e), str(e))
        except Exception as e:
            return _error(ErrorKind.INTERNAL, f"{type(e).__name__}: {spark_error_message(e)}")

    class Java:
        implements: ClassVar[list[str]] = ["lakeskip.jvm.bridge.PythonBridge"]


def _error(kind: ErrorKind, message: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else kind.value
    return json.dumps(encode(ErrorReply(error=ErrorInfo(kind=kind, message=first))))
