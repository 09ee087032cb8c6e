"""The Python brain behind the Spark catalog: one handler for every JVM callback.

Java (``lakeskip.spark.jvm``) calls :meth:`CatalogService.call` with an operation name and a
JSON object; each operation is a call into the same layers ``Session.sql`` uses -- the
:class:`~lakeskip.catalog.Catalog`, :class:`~lakeskip.planner.scan.ScanPlanner`, the Spark-task
writer and the procedure registry -- so the two entry points cannot drift. Errors come back
as ``{"error": {"kind", "message"}}`` and surface in Spark as one-line AnalysisExceptions.

Callbacks run on py4j's callback threads, not the thread that ran the query: pruning reports
are filed under the Spark local property :data:`TAG_PROPERTY` of the querying thread.
"""

from __future__ import annotations

import base64
import datetime
import json
import math
import threading
import time
import uuid
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, assert_never

from pyspark.sql import DataFrame, SparkSession

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.format.stats import unpushable_columns
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw, merge_engine_of, schema_kind
from lakeskip.catalog.ops.staging import can_stage, publish, staging_identifier
from lakeskip.catalog.ops.system_tables import read_optimized_level, table_details
from lakeskip.catalog.ops.time_travel import TimeTravel, resolve_snapshot
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import PRIMARY_KEY_OPTION
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    InvalidArgumentError,
    LakeskipError,
    LakeskipWarning,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedStatementError,
)
from lakeskip.expressions import BooleanExpression, and_, bind, evaluate_arrow
from lakeskip.index.primitives.roaring import serialize_bitmap
from lakeskip.planner.report import PruningReport, ScanPlan
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark.bridge.error_text import spark_error_message
from lakeskip.spark.bridge.system_service import describe_system, system_payload_name, system_rows
from lakeskip.spark.read.predicate_json import predicate_from_json, translate
from lakeskip.spark.read.query import configured_time_travel, settings_time_travel, spark_path
from lakeskip.sql.ddl import OUR_FORMATS
from lakeskip.types import DataType, Field, RowType, TypeRoot, from_internal, parse_sql_type

__all__ = ["PROTOCOL", "TAG_PROPERTY", "CallbackStats", "CatalogService", "snapshot_for"]

#: must equal ``lakeskip.jvm.Bridge.PROTOCOL``
PROTOCOL = 1
TAG_PROPERTY = "lakeskip.query.tag"

# properties Spark adds to CREATE TABLE that are not table options
_RESERVED = frozenset(["owner", "provider", "external", "is_managed_location", "comment"])
#: the properties Spark's parser turns Hive-only clauses into
_HIVE_CLAUSES = {
    "hive.stored-as": "STORED AS",
    "hive.input-format": "STORED AS INPUTFORMAT",
    "hive.output-format": "STORED AS OUTPUTFORMAT",
    "hive.serde": "ROW FORMAT SERDE",
}
# the table state DESCRIBE EXTENDED shows as properties (table_details): SHOW CREATE TABLE
# prints them, and a CREATE from its text must not turn them into options
_STATE_PREFIX = "lakeskip."


def _is_option(key: str) -> bool:
    return key not in _RESERVED and not key.startswith(_STATE_PREFIX)


_MAX_TAGS = 256


def snapshot_for(
    table: FileStoreTable, version: str | None, timestamp_micros: int | None
) -> Snapshot | None:
    """The snapshot ``VERSION AS OF`` / ``TIMESTAMP AS OF`` names (``None``: the latest).

    A version is a tag name or a snapshot id (a tag first, as Paimon); a timestamp selects
    the newest snapshot committed at or before it (:mod:`lakeskip.catalog.ops.time_travel`).

    Raises:
        SnapshotNotFoundError: no such snapshot or tag.
    """
    if version is not None:
        return resolve_snapshot(table, TimeTravel(version=str(version).strip()))
    if timestamp_micros is not None:
        return resolve_snapshot(table, TimeTravel(timestamp_millis=timestamp_micros // 1000))
    return None


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


def _deletion_vectors(
    table: FileStoreTable, snapshot_id: int | None, entries: Sequence[ManifestEntry]
) -> dict[str, str]:
    """Data file name -> its DV (portable RoaringBitmap, base64) for the Java reader; read and
    checked here, in the plan's snapshot (a corrupt DV fails the query)."""
    if snapshot_id is None:
        return {}
    refs = table.deletion_files(table.snapshot(snapshot_id))
    out: dict[str, str] = {}
    for e in entries:
        ref = refs.get(e.file.file_name)
        if ref is not None:
            bm = table.read_deletion_vector(ref, e.file.row_count)
            if len(bm):
                out[e.file.file_name] = base64.b64encode(serialize_bitmap(bm)).decode("ascii")
    return out


def _partition_json(t: DataType, value: Any) -> Any:
    """A partition value (internal form) as the Java file index reads it."""
    if value is None:
        return None
    r = t.root
    if t.is_timestamp:
        return int(value) * 1000 if t.timestamp_unit == "ms" else int(value)
    if r is TypeRoot.DECIMAL:
        return format(value, "f")
    if r is TypeRoot.BINARY:
        return base64.b64encode(bytes(value)).decode()
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        f = float(value)
        return f if math.isfinite(f) else repr(f).replace("inf", "Infinity").replace("nan", "NaN")
    return value


def _merge_keys(schema: TableSchema) -> list[str]:
    """The key Java merges a table's files by (``LakePkScan``); none on a table read as its
    files are (an append table, or a primary-key table read raw: minus their DVs,
    ``LakeDvScan``, as Paimon reads them)."""
    kind = schema_kind(schema)
    match kind:
        case PkMerge():
            return [k for k in schema.primary_keys if k not in schema.partition_keys]
        case Append() | AppendDv() | PkRaw():
            return []
        case _:
            assert_never(kind)


def _top_level_only(plan: ScanPlan, level: int) -> ScanPlan:
    """``t$read_optimized`` of a primary-key table: only the files at the top level (fully
    compacted: one version per key, read without a merge), as Paimon's
    ``ReadOptimizedTable``; the report counts only those files."""
    r = plan.report
    return ScanPlan.build(
        table=f"{r.table}$read_optimized",
        predicate=r.predicate,
        snapshot_id=r.snapshot_id,
        decisions=[d for d in plan.decisions if d.entry.file.level == level],
        index_files_read=r.index_files_read,
        planning_ms=r.planning_ms,
        warnings=r.warnings,
        index_bytes_read=r.index_bytes_read,
    )


def pruning_json(report: PruningReport, planning_ms: float) -> dict[str, Any]:
    """What the JVM scan shows of a pruning report: its EXPLAIN text and its Spark metrics
    (``LakePruning.java``); ``planning_ms`` is the time this scan's planning took (a plan
    served from the planner's cache keeps the first plan's time in its report)."""
    return {
        "snapshot": report.snapshot_id,
        "total": report.total_files,
        "kept": report.kept_files,
        "partition": report.skipped_by_partition,
        "bucket": report.skipped_by_bucket,
        "stats": report.skipped_by_stats,
        # files skipped by each index type and by each index(column)
        "index": dict(sorted(report.skipped_by_index.items())),
        "column": dict(sorted(report.skipped_by_column.items())),
        "other": report.skipped_files
        - report.skipped_by_partition
        - report.skipped_by_bucket
        - report.skipped_by_stats
        - sum(report.skipped_by_index.values()),
        "index_files_read": report.index_files_read,
        "index_bytes_read": report.index_bytes_read,
        "planning_ms": round(planning_ms, 3),
    }


def _json_value(v: Any) -> Any:
    """A procedure result value as ``LakeProcedure.internal`` reads it, of any type: lists
    for arrays, ``[key, value]`` pairs for maps, field lists for structs (tuples), days for
    dates, microseconds for timestamps (naive ones are UTC), text for decimals and
    non-finite floats (Java's spelling), base64 for binary.

    >>> _json_value({"a": [1.5, float("nan")]}), _json_value(datetime.date(1970, 1, 3))
    ([['a', [1.5, 'NaN']]], 2)
    """
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, Mapping):
        return [[_json_value(k), _json_value(x)] for k, x in v.items()]
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, datetime.datetime):
        aware = v if v.tzinfo is not None else v.replace(tzinfo=datetime.UTC)
        return (aware - _EPOCH) // datetime.timedelta(microseconds=1)
    if isinstance(v, datetime.date):
        return (v - _EPOCH.date()).days
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    return str(v)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


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


class CatalogService:
    """Serves the JVM catalog's callbacks for one SparkSession (any number of catalogs)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.reports = ReportLog()
        self.errors = ErrorLog()
        self._calls: dict[str, int] = {}
        self._seconds: dict[str, float] = {}
        self._stats_lock = threading.Lock()
        self._catalogs: dict[str, Catalog] = {}
        self._warehouses: dict[str, str] = {}  # catalog name -> warehouse (set by attach)
        self._lock = threading.Lock()
        self._ops: dict[str, Callable[[dict[str, Any], Any], dict[str, Any]]] = {
            "table_exists": self._table_exists,
            "load_table": self._load_table,
            "create_table": self._create_table,
            "alter_table": self._alter_table,
            "drop_table": self._drop_table,
            "list_tables": self._list_tables,
            "list_namespaces": self._list_namespaces,
            "namespace_exists": self._namespace_exists,
            "create_namespace": self._create_namespace,
            "drop_namespace": self._drop_namespace,
            "plan_scan": self._plan_scan,
            "file_report": self._file_report,
            "system_rows": self._system_rows,
            "table_detail": self._table_detail,
            "write": self._write,
            "procedure_info": self._procedure_info,
            "list_procedures": self._list_procedures,
            "call_procedure": self._call_procedure,
            "rewrite_sql": self._rewrite_sql,
            "explain_rows": self._explain_rows,
            "dml": self._dml,
            "stage_table": self._stage_table,
            "commit_staged": self._commit_staged,
            "abort_staged": self._abort_staged,
        }
        #: runs a DELETE / UPDATE / MERGE INTO planned by ``LakeDmlStrategy``: (catalog, spark,
        #: sql, database, table) -> pruning reports. Set by ``lakeskip.connect`` (the
        #: statement executor lives above this module).
        self.dml_runner: (
            Callable[[Catalog, SparkSession, str, str, str], list[PruningReport]] | None
        ) = None

    def bind_catalog(self, name: str, warehouse: str) -> None:
        """Serve catalog ``name`` from ``warehouse`` (overrides the JVM's conf value)."""
        with self._lock:
            self._warehouses[name] = warehouse
        # tables the JVM kept for this catalog name may be another warehouse's
        jvm = self.spark._jvm
        assert jvm is not None
        jvm.lakeskip.jvm.TableCache.clear()

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

    def catalog(self, payload: Mapping[str, Any]) -> Catalog:
        name = str(payload.get("catalog", ""))
        warehouse = self._warehouses.get(name) or payload.get("warehouse")
        if not warehouse:
            raise InvalidArgumentError(
                f"catalog {name} has no warehouse: set spark.sql.catalog.{name}.warehouse"
            )
        with self._lock:
            cat = self._catalogs.get(warehouse)
            if cat is None:
                cat = self._catalogs[warehouse] = Catalog(warehouse)
        return cat

    # -- the callback ---------------------------------------------------------------------

    def callback_stats(self) -> CallbackStats:
        """Callbacks served so far (``make bench`` reports them per query)."""
        with self._stats_lock:
            return CallbackStats(dict(self._calls), dict(self._seconds))

    def call(self, op: str, payload_json: str, arg: Any) -> str:
        """py4j entry point: never raises (an exception would reach Spark as a py4j stack)."""
        started = time.perf_counter()
        try:
            return self._call(op, payload_json, arg)
        finally:
            elapsed = time.perf_counter() - started
            with self._stats_lock:
                self._calls[op] = self._calls.get(op, 0) + 1
                self._seconds[op] = self._seconds.get(op, 0.0) + elapsed

    def _call(self, op: str, payload_json: str, arg: Any) -> str:
        payload: dict[str, Any] = {}
        try:
            payload = json.loads(payload_json)
            if payload.get("protocol") != PROTOCOL:
                raise LakeskipError(
                    f"lakeskip catalog protocol mismatch (jar {payload.get('protocol')}, "
                    f"Python {PROTOCOL}): rebuild the jar"
                )
            handler = self._ops.get(op)
            if handler is None:
                raise UnsupportedStatementError(f"unknown catalog operation {op!r}")
            return json.dumps(handler(payload, arg))
        except LakeskipError as e:
            # the querying thread re-raises this typed error (native_query.run_native_query)
            self.errors.add(str(payload.get("tag") or ""), e)
            return _error(type(e).__name__, str(e))
        except Exception as e:
            return _error("InternalError", f"{type(e).__name__}: {spark_error_message(e)}")

    class Java:
        implements: ClassVar[list[str]] = ["lakeskip.jvm.PythonBridge"]

    # -- tables ---------------------------------------------------------------------------

    @staticmethod
    def _ident(payload: Mapping[str, Any]) -> str:
        ns = list(payload.get("namespace") or [])
        if len(ns) != 1:
            raise InvalidArgumentError(
                f"lakeskip tables are named db.table, got {'.'.join([*ns, payload['name']])}"
            )
        return f"{ns[0]}.{payload['name']}"

    def _table(self, p: Mapping[str, Any]) -> FileStoreTable:
        """The table, read fresh (schema, snapshots); decoded manifests come from the
        process-wide metadata cache (:mod:`lakeskip.catalog.cache`), keyed by table directory
        and the immutable, uniquely named manifest file."""
        return self.catalog(p).get_table(self._ident(p))

    def _table_exists(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        base, system = system_payload_name(p)
        if system is not None:
            try:
                describe_system(self._table({**p, "name": base}), system, None)
            except LakeskipError:
                return {"exists": False}
            return {"exists": True}
        try:
            return {"exists": self.catalog(p).table_exists(self._ident(p))}
        except InvalidArgumentError:
            return {"exists": False}

    def _describe(
        self, table: FileStoreTable, snapshot: Snapshot | None, pinned: bool
    ) -> dict[str, Any]:
        schema = table.schema
        if pinned and snapshot is not None:
            schema = table.schema_by_id(snapshot.schema_id)
        props = dict(schema.options)
        if schema.comment:
            props["comment"] = schema.comment
        props["provider"] = "lakeskip"
        if schema.primary_keys:
            props[PRIMARY_KEY_OPTION] = ",".join(schema.primary_keys)
        return {
            "schema": schema.row_type.spark_ddl(),
            "partition_keys": list(schema.partition_keys),
            "trimmed_keys": _merge_keys(schema),
            "properties": props,
            "snapshot_id": snapshot.id if pinned and snapshot is not None else None,
            "pinned": pinned,
            "location": table.file_io.uri(table.path),
        }

    def _load_table(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        version, ts = p.get("version"), p.get("timestamp_micros")
        base, system = system_payload_name(p)
        if system is not None:  # t$snapshots ...: LakeSystemTable.java
            table = self._table({**p, "name": base})
            snap = snapshot_for(table, version, ts)
            if system in ("read_optimized", "audit_log"):
                # the table's own scan (LakeTable): read_optimized over other files without
                # a merge; audit_log with rowkind first and deleted keys kept (LakeAuditScan)
                pinned = version is not None or ts is not None
                out = self._describe(table, snap, pinned=pinned)
                if system == "read_optimized":
                    out["trimmed_keys"] = []
                elif out["trimmed_keys"] and (engine := MergeEngine.of(table.schema.options)) != (
                    MergeEngine()
                ):
                    # the keep-delete merge is deduplicate's (LakePkScan)
                    raise TableNotFoundError(
                        f"system table $audit_log is not supported yet for merge-engine "
                        f"{engine.kind}{' with ignore-delete' if engine.ignore_delete else ''}"
                    )
                out["system"] = system
                out["token"] = snapshot_token(table, snap) + f"|${system}"
                return out
            out = describe_system(table, system, snap)
            out["location"] = table.file_io.uri(table.path)
            return out
        if version is not None or ts is not None:
            table = self._table(p)
            snap = snapshot_for(table, version, ts)
            out = self._describe(table, snap, pinned=True)
            out["token"] = snapshot_token(table, snap)
            return out
        # the latest: with the files that prove it current, so that Java can reuse this
        # answer (LakeOps' table cache) until one of them changes
        current = self.catalog(p).get_table_version(self._ident(p))
        out = self._describe(current.table, current.snapshot, pinned=False)
        out["token"] = snapshot_token(current.table, current.snapshot)
        out["unchanged_while"] = {
            "absent": [spark_path(current.table.file_io.uri(f)) for f in current.next_files],
            "sha256": [
                [spark_path(current.table.file_io.uri(f)), digest]
                for f, digest in current.read_files
            ],
        }
        return out

    def _create_table(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        return self._describe(self._create(p, self._ident(p)), None, pinned=False)

    def _create(self, p: dict[str, Any], name: str) -> FileStoreTable:
        """Create table ``name`` from a create_table payload (schema, partitions, properties)."""
        from pyspark.sql.types import StructType

        struct = StructType.fromJson(json.loads(p["schema"]))
        fields = []
        for i, f in enumerate(struct.fields):
            t = parse_sql_type(f.dataType.simpleString())
            fields.append(
                Field(
                    i,
                    f.name,
                    t if f.nullable else t.with_nullable(False),
                    (f.metadata or {}).get("comment"),
                )
            )
        props = dict(p.get("properties") or {})
        if props.get("location"):
            raise InvalidArgumentError(
                f"{name}: lakeskip tables live in the catalog's warehouse; LOCATION is not supported"
            )
        props.pop("location", None)
        provider = props.get("provider")
        if provider is not None and provider.lower() not in OUR_FORMATS:
            raise UnsupportedStatementError(
                f"CREATE TABLE {name}: USING {provider} is not supported (the lakeskip catalog "
                "makes lakeskip tables: USING lakeskip or paimon, or no USING)"
            )
        for key in props:
            if key.startswith("hive."):
                clause = _HIVE_CLAUSES.get(key, key)
                raise UnsupportedStatementError(
                    f"CREATE TABLE {name}: {clause} is not supported (a Hive clause; lakeskip "
                    "tables are Paimon tables of Parquet files)"
                )
        comment = props.get("comment")
        options = {}
        for k, v in props.items():
            if not _is_option(k):
                continue
            options[k[len("option.") :] if k.startswith("option.") else k] = v
        return self.catalog(p).create_table(
            name,
            RowType(tuple(fields)),
            partition_keys=list(p.get("partition_keys") or []),
            options=options,
            comment=comment,
        )

    # -- CREATE / REPLACE TABLE ... AS SELECT (Spark's StagingTableCatalog) ----------------

    def _stage_table(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        """Stage a CTAS / RTAS target (mode create | replace | create_or_replace): a hidden
        table the query's rows are written to, published by ``commit_staged``
        (:mod:`lakeskip.catalog.ops.staging`). ``staged`` names it (``null``: no staging on this
        filesystem, the table was created or replaced up front)."""
        cat = self.catalog(p)
        name = self._ident(p)
        mode = str(p.get("mode", "create"))
        exists = cat.table_exists(name)
        if mode == "create" and exists:
            raise TableAlreadyExistsError(f"table already exists: {name}")
        if mode == "replace" and not exists:
            raise TableNotFoundError(f"table not found: {name}")
        if not can_stage(cat):
            if exists:
                cat.drop_table(name)
            return {**self._describe(self._create(p, name), None, pinned=False), "staged": None}
        staged = staging_identifier(name)
        table = self._create(p, staged)
        return {**self._describe(table, None, pinned=False), "staged": staged.split(".", 1)[1]}

    def _commit_staged(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        cat = self.catalog(p)
        name = self._ident(p)
        staged = f"{name.split('.', 1)[0]}.{p['staged']}"
        publish(cat, staged, name, replace=str(p.get("mode")) != "create")
        return {}

    def _abort_staged(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        cat = self.catalog(p)
        name = self._ident(p)
        staged = p.get("staged")
        if staged:
            cat.drop_table(f"{name.split('.', 1)[0]}.{staged}", ignore_if_not_exists=True)
        else:  # created up front (no staging here): a failed write leaves no table
            cat.drop_table(name, ignore_if_not_exists=True)
        return {}

    def _alter_table(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        cat = self.catalog(p)
        name = self._ident(p)
        sets = {k: v for k, v in dict(p.get("set") or {}).items() if _is_option(k)}
        unset = [k for k in p.get("unset") or [] if _is_option(k)]
        if not cat.table_exists(name):
            raise TableNotFoundError(f"table not found: {name}")
        cat.alter_table(name, set_options=sets, unset_options=unset)
        return self._describe(cat.get_table(name), None, pinned=False)

    def _drop_table(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        cat = self.catalog(p)
        name = self._ident(p)
        if not cat.table_exists(name):
            return {"dropped": False}
        cat.drop_table(name, ignore_if_not_exists=True)
        return {"dropped": True}

    def _list_tables(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        ns = list(p.get("namespace") or [])
        if len(ns) != 1:
            return {"tables": []}
        return {"tables": self.catalog(p).list_tables(ns[0])}

    def _list_namespaces(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        dbs = self.catalog(p).list_databases()
        return {"namespaces": sorted({*dbs, "default"})}

    def _namespace_exists(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        ns = list(p.get("namespace") or [])
        ok = len(ns) == 1 and (ns[0] == "default" or self.catalog(p).database_exists(ns[0]))
        return {"exists": ok}

    def _create_namespace(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        ns = list(p.get("namespace") or [])
        if len(ns) != 1:
            raise InvalidArgumentError(f"lakeskip databases are one level: {'.'.join(ns)}")
        self.catalog(p).create_database(ns[0])
        return {}

    def _drop_namespace(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        ns = list(p.get("namespace") or [])
        cat = self.catalog(p)
        if len(ns) != 1 or not cat.database_exists(ns[0]):
            return {"dropped": False}
        cat.drop_database(ns[0], cascade=bool(p.get("cascade")))
        return {"dropped": True}

    # -- reads ----------------------------------------------------------------------------

    @property
    def time_zone(self) -> str:
        return str(self.spark.conf.get("spark.sql.session.timeZone") or "UTC")

    def _plan_scan(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        base, system = system_payload_name(p)
        if system is not None:  # t$read_optimized: the table's scan, other files
            p = {**p, "name": base}
        table = self._table(p)
        snapshot_id = p.get("snapshot_id")
        # the querying session's settings travel with the callback (LakeScanBuilder): each
        # spark.conf.get from here would be one more round trip into the JVM per query
        session = p.get("session")
        snap: Snapshot | None
        if snapshot_id is None:
            travel = (
                settings_time_travel(dict(session.get("settings") or {}), table)
                if isinstance(session, dict)
                else configured_time_travel(self.spark, table)
            )
            snap = resolve_snapshot(table, travel) if travel is not None else None
            if snap is None:
                # the latest, named once: the plan and its token are of the same snapshot
                snap = table.latest_snapshot()
            else:
                snapshot_id = snap.id
        else:
            snap = table.snapshot(snapshot_id)
        schema = (
            table.schema_by_id(snap.schema_id) if snapshot_id and snap is not None else table.schema
        )
        row_type = schema.row_type
        tz = str(session.get("time_zone") or "UTC") if isinstance(session, dict) else self.time_zone

        def binds(e: BooleanExpression) -> bool:
            try:
                bind(row_type, e, time_zone=tz)
            except LakeskipError:
                return False
            return True

        predicate = predicate_from_json(p.get("filters") or [], row_type, check=binds)
        with warnings.catch_warnings():
            # this is a py4j callback thread: the warnings travel in the report instead
            # (Session.sql re-issues them on the querying thread)
            warnings.simplefilter("ignore", LakeskipWarning)
            started = time.perf_counter()
            plan = ScanPlanner(table).plan(predicate, time_zone=tz, snapshot=snap)
            if system == "read_optimized" and schema.primary_keys:
                plan = _top_level_only(plan, read_optimized_level(schema.options))
            # this callback's planning (the report's is the first plan's when it was cached)
            planned_ms = (time.perf_counter() - started) * 1000
        types = [row_type.field(k).type for k in schema.partition_keys]
        vectors = _deletion_vectors(table, plan.report.snapshot_id, plan.files)
        files = [
            {
                "path": spark_path(table.file_io.uri(table.data_file_path(e))),
                "size": e.file.file_size,
                "mtime": e.file.creation_time or 0,
                "partition": [
                    _partition_json(t, v) for t, v in zip(types, e.partition, strict=True)
                ],
                "dv": vectors.get(e.file.file_name),
                # merge-on-read unit of a primary-key table: its (partition, bucket)
                "group": repr((e.partition, e.bucket)),
            }
            for e in plan.files
        ]
        report_id = self.reports.add(str(p.get("tag") or ""), plan.report)
        # how LakePkScan merges the versions of a key (primary-key tables)
        engine = merge_engine_of(schema_kind(schema))
        merge = engine.to_json() if engine is not None else None
        return {
            "files": files,
            "report_id": report_id,
            "pruning": pruning_json(plan.report, planned_ms),
            "merge": merge,
            # columns whose filters Spark's Parquet reader may answer wrongly from the
            # statistics, dictionaries or bloom filters of some of these files (NaN left out
            # of min/max, -0.0 vs 0.0, millisecond timestamps): not pushed into the scan
            "unpushable": sorted(
                unpushable_columns(plan.files, schema, table.schema_by_id, p.get("filter_columns"))
            ),
            # an empty table may have gained its first snapshot while planning: then the
            # files are not the token's, and the JVM must not keep the scan under it
            "token": (
                snapshot_token(table, snap)
                if plan.report.snapshot_id == (snap.id if snap is not None else None)
                else ""
            ),
        }

    def _table_detail(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        """The table state ``DESCRIBE TABLE EXTENDED`` lists (``LakeTable.properties``), at
        ``snapshot_id`` (time travel) or the latest snapshot."""
        try:
            table = self._table(p)
            sid = p.get("snapshot_id")
            snap = table.snapshot(int(sid)) if sid is not None else table.latest_snapshot()
            return {"properties": dict(table_details(table, snap))}
        except LakeskipError as e:  # never the query's error (ErrorLog): DESCRIBE says it
            return {"properties": {"lakeskip.state": f"unavailable: {e}"}}

    def _system_rows(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        """The rows of ``t$name`` (at ``snapshot_id``, else the latest snapshot)."""
        base, system = system_payload_name(p)
        if system is None:
            raise InvalidArgumentError(f"{p.get('name')} is not a system table")
        table = self._table({**p, "name": base})
        sid = p.get("snapshot_id")
        snap = table.snapshot(int(sid)) if sid is not None else table.latest_snapshot()
        return system_rows(table, system, snap, str(p.get("time_zone") or self.time_zone))

    def _file_report(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        """A scan Java reused (``ScanCache``) reports again: its stored report is filed
        under this query's tag; ``found`` false if the log has let it go."""
        report = self.reports.by_id(str(p.get("report_id") or ""))
        if report is not None:
            self.reports.add(str(p.get("tag") or ""), report)
        return {"found": report is not None}

    # -- writes ---------------------------------------------------------------------------

    def _write(self, p: dict[str, Any], jdf: Any) -> dict[str, Any]:
        from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

        from lakeskip.spark.write.writer import align_by_position, write_dataframe

        table = self._table(p)
        row_type = table.schema.row_type
        mode = p.get("mode", "append")
        df: DataFrame = ClassicDataFrame(jdf, self.session_of(jdf.sparkSession()))
        session = p.get("session")
        tz = str(session.get("time_zone") or "UTC") if isinstance(session, dict) else self.time_zone
        what = f"write to {table.identifier}"
        partitions: list[tuple[Any, ...]] | None = None
        if mode == "overwrite":
            partitions = self._overwrite_partitions(table, p.get("condition") or [], tz)
        aligned = align_by_position(df, row_type, what)
        if mode == "append":
            snap = write_dataframe(table, aligned)
        else:
            snap = write_dataframe(
                table,
                aligned,
                overwrite=True,
                overwrite_partitions=partitions,
                overwrite_all=partitions is None,
            )
        return {"snapshot_id": snap.id if snap is not None else None}

    def _overwrite_partitions(
        self, table: FileStoreTable, condition: list[Any], time_zone: str
    ) -> list[tuple[Any, ...]] | None:
        """The live partitions an overwrite condition selects exactly (``None``: all)."""
        import pyarrow as pa

        schema = table.schema
        keys = list(schema.partition_keys)
        problem = (
            f"overwrite of {table.identifier} by a condition: only conditions on partition "
            f"columns ({', '.join(keys) or 'none'}) are supported"
        )
        part_type = RowType(tuple(schema.row_type.field(k) for k in keys))
        if not keys:
            raise InvalidArgumentError(problem)
        exprs = []
        for c in condition:
            t = translate(c, part_type)
            if t is None or not t[1]:
                raise InvalidArgumentError(problem)
            exprs.append(t[0])
        if not exprs:
            return None
        pred = exprs[0]
        for e in exprs[1:]:
            pred = and_(pred, e)
        live = sorted({e.partition for e in table.scan_files()}, key=repr)
        if not live:
            return []
        columns = {
            k: [from_internal(part_type.field(k).type, v[i]) for v in live]
            for i, k in enumerate(keys)
        }
        batch = pa.table(
            {k: pa.array(columns[k], type=part_type.field(k).type.to_arrow()) for k in keys}
        )
        mask = evaluate_arrow(bind(part_type, pred, time_zone=time_zone), batch)
        return [part for part, keep in zip(live, mask.to_pylist(), strict=True) if keep]

    # -- DML ------------------------------------------------------------------------------

    def _dml(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        runner = self.dml_runner
        if runner is None:
            raise UnsupportedStatementError(
                f"{p.get('verb', 'DML')} on a lakeskip table needs lakeskip.connect() in this "
                "Python process"
            )
        db, name = self._ident(p).split(".", 1)
        reports = runner(self.catalog(p), self.session_of(arg), str(p["sql"]), db, name)
        tag = str(p.get("tag") or "")
        for r in reports:
            self.reports.add(tag, r)
        return {}

    # -- the parser extension -------------------------------------------------------------

    def _rewrite_sql(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        """Spark SQL for what Spark's parser rejects or cannot route: Paimon's
        ``CREATE TABLE ... WITH (...)`` and ``CALL sys.x(...)`` (``{"sql": null}``: no idea)."""
        from lakeskip.spark.bridge.sql_rewrite import lakeskip_catalogs, rewrite_for_spark

        with self._lock:
            bound = list(self._warehouses)
        # the calling session's lakeskip catalogs (its current one first, sent by LakeParser),
        # then attached ones
        given = [str(c) for c in p.get("catalogs") or []]
        catalogs = list(dict.fromkeys([*given, *lakeskip_catalogs(self.spark, bound)]))
        current = p.get("current_catalog")
        if current is None:
            current = str(self.spark.catalog.currentCatalog())
        return {"sql": rewrite_for_spark(str(p["sql"]), catalogs, str(current))}

    def _explain_rows(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        """``EXPLAIN PRUNING`` in plain Spark SQL (``LakeExplain.java``): the reports the
        query's scans filed under ``query_tag``, as ``Session.sql``'s EXPLAIN PRUNING rows."""
        reports = self.reports.pop(str(p.get("query_tag") or ""))
        return {"rows": [[r.table, k, v] for r in reports for k, v in r.lines()]}

    # -- procedures -----------------------------------------------------------------------

    def _procedure_info(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        from lakeskip.procedures.registry import get_procedure

        name = str(p["procedure"])
        proc = get_procedure(name)
        # every parameter is declared STRING to Spark (numbers and booleans cast to it), so
        # Python checks and converts the value (Procedure.bind_arguments) and a bad one is a
        # one-line error naming the argument, not Spark's CAST_INVALID_INPUT
        return {
            "name": name,
            "description": proc.doc,
            "parameters": [
                {"name": q.name, "type": "string", "required": q.required} for q in proc.parameters
            ],
        }

    def _list_procedures(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        from lakeskip.procedures.registry import PROCEDURES

        return {"procedures": sorted(k.split(".", 1)[1] for k in PROCEDURES)}

    def _call_procedure(self, p: dict[str, Any], arg: Any) -> dict[str, Any]:
        from lakeskip.procedures.base import run_procedure
        from lakeskip.procedures.registry import get_procedure
        from lakeskip.spark.write.executor import SparkExecutor

        proc = get_procedure(str(p["procedure"]))
        bound = proc.bind_arguments([], dict(p.get("arguments") or {}))
        # the calling session's namespace when its current catalog is this one (USE db)
        current = list(p.get("current_namespace") or [])
        catalog = self.catalog(p)
        result = run_procedure(
            proc,
            catalog=catalog,
            executor=SparkExecutor(self.session_of(arg)),
            arguments=bound,
            default_database=current[0] if len(current) == 1 else "default",
        )
        return {
            "schema": result.spark_schema(),
            "rows": [[_json_value(v) for v in row] for row in result.rows()],
        }


def _error(kind: str, message: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else kind
    return json.dumps({"error": {"kind": kind, "message": first}})
