"""The Python–JVM protocol of the Spark catalog: one module owns the boundary.

The catalog's Java classes (``jvm/java/lakeskip/jvm`` and its sub-packages) ask Python every question through one
callback, ``PythonBridge.call(op, json, arg)`` (``arg``: a JVM object JSON cannot carry, the
Dataset of a write or the calling session). This module defines that conversation:

* :class:`Op` -- the operations, and for each (:data:`OPERATIONS`) a frozen request type and
  its reply type(s), decoded from / encoded to the JSON objects Java sends and reads
  (:func:`decode`, :func:`encode`; a field's name is its JSON key);
* :class:`ErrorKind` -- the error reply's stable ``kind``, mapped from the
  :mod:`lakeskip.errors` classes (:func:`error_kind`), so renaming a Python class cannot
  change what Spark throws;
* :class:`PredicateKey`, :class:`PredicateOp`, :class:`LiteralType` and
  :data:`MAP_KEY_SEPARATOR` -- the predicate tree inside ``filters`` / ``condition``
  (``PredicateJson.java`` writes it, :mod:`lakeskip.spark.read.predicate_json` reads it);
* :data:`PROTOCOL` (the version both sides check) and the shared property names.

Java's twin is ``Protocol.java``, generated from this module
(``python -m lakeskip.spark.jvm.protocol_java``); a Spark-free test fails when the checked-in
file differs, or when another Java file spells an operation or key as a literal. Changing an
operation's JSON means: change its type here, regenerate, bump :data:`PROTOCOL`.

>>> req = decode(TableRequest, {"protocol": 4, "tag": "q1", "catalog": "lake",
...                             "namespace": ["db"], "name": "t"})
>>> req.namespace, req.name
(('db',), 't')
>>> encode(ExistsReply(exists=True))
{'exists': True}
>>> encode(ErrorReply(error=ErrorInfo(kind=ErrorKind.TABLE_NOT_FOUND, message="no t")))
{'error': {'kind': 'table_not_found', 'message': 'no t'}}
"""

from __future__ import annotations

import array
import base64
import dataclasses
import functools
import operator
import sys
import types
import typing
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from lakeskip.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    LakeskipError,
    ProtocolError,
    ProtocolMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnknownOperationError,
)

__all__ = [
    "MAP_KEY_SEPARATOR",
    "OPERATIONS",
    "PROTOCOL",
    "TAG_PROPERTY",
    "ColumnChangeKind",
    "ErrorKind",
    "Json",
    "LiteralType",
    "Op",
    "OpSpec",
    "PredicateKey",
    "PredicateOp",
    "TableKindTag",
    "TableProperty",
    "decode",
    "decode_reply",
    "encode",
    "envelope",
    "error_kind",
    "message_types",
    "pack_longs",
    "unpack_longs",
    "wire_keys",
]

#: Version of the JSON protocol: Java sends it with every callback and returns it on
#: registration; a mismatch is "rebuild the jar". Bump it when an operation's JSON changes.
PROTOCOL = 4

#: Spark local property correlating callbacks with the Python thread that ran the query
#: (callbacks run on py4j's threads): pruning reports and errors are filed under it.
TAG_PROPERTY = "lakeskip.query.tag"

#: A JSON value passed through as it is (a predicate tree, a procedure's rows).
Json = Any


class TableProperty(StrEnum):
    """Table property names both sides read or write."""

    #: Paimon's option (``lakeskip.catalog.pk.primary_key.PRIMARY_KEY_OPTION``)
    PRIMARY_KEY = "primary-key"
    PROVIDER = "provider"
    #: DESCRIBE EXTENDED's line when the table state cannot be had
    STATE = "lakeskip.state"
    SYSTEM_TABLE = "system-table"


class TableKindTag(StrEnum):
    """A table's kind (:data:`lakeskip.catalog.kind.TableKind`) on the wire: how its rows live
    in its files. Java switches on it (``LakeTable``) instead of re-deriving it."""

    #: every row of every file
    APPEND = "append"
    #: the rows of the files minus their deletion vectors
    APPEND_DV = "append-dv"
    #: versions of keys, merged when read (``LakePkScan``)
    PK_MERGE = "pk-merge"
    #: one live version per key in the files above level 0, read minus their DVs
    PK_RAW = "pk-raw"


class Op(StrEnum):
    """The callback operations."""

    TABLE_EXISTS = "table_exists"
    LOAD_TABLE = "load_table"
    CREATE_TABLE = "create_table"
    ALTER_TABLE = "alter_table"
    DROP_TABLE = "drop_table"
    LIST_TABLES = "list_tables"
    LIST_NAMESPACES = "list_namespaces"
    NAMESPACE_EXISTS = "namespace_exists"
    CREATE_NAMESPACE = "create_namespace"
    DROP_NAMESPACE = "drop_namespace"
    STAGE_TABLE = "stage_table"
    COMMIT_STAGED = "commit_staged"
    ABORT_STAGED = "abort_staged"
    TABLE_DETAIL = "table_detail"
    PLAN_SCAN = "plan_scan"
    STREAM_START = "stream_start"
    STREAM_LATEST = "stream_latest"
    STREAM_PLAN = "stream_plan"
    RUNTIME_FILTER = "runtime_filter"
    AGGREGATE_SCAN = "aggregate_scan"
    FILE_REPORT = "file_report"
    SYSTEM_ROWS = "system_rows"
    EXPLAIN_ROWS = "explain_rows"
    WRITE = "write"
    STREAM_WRITE = "stream_write"
    DML = "dml"
    PROCEDURE_INFO = "procedure_info"
    LIST_PROCEDURES = "list_procedures"
    CALL_PROCEDURE = "call_procedure"
    REWRITE_SQL = "rewrite_sql"
    SHOW_CREATE_TABLE = "show_create_table"
    CREATE_TABLE_LIKE = "create_table_like"
    LIST_PARTITIONS = "list_partitions"
    DROP_PARTITION = "drop_partition"


class ErrorKind(StrEnum):
    """The ``kind`` of an error reply: what Spark may turn into one of its own exceptions
    (``LakeOps.tableError``); any other kind is a one-line AnalysisException."""

    TABLE_NOT_FOUND = "table_not_found"
    TABLE_ALREADY_EXISTS = "table_already_exists"
    DATABASE_NOT_FOUND = "database_not_found"
    INVALID_ARGUMENT = "invalid_argument"
    PROTOCOL_MISMATCH = "protocol_mismatch"
    UNKNOWN_OPERATION = "unknown_operation"
    BAD_REQUEST = "bad_request"
    #: any other lakeskip error (its message says what)
    LAKESKIP = "lakeskip_error"
    #: not a lakeskip error: a bug, or a failure underneath (Spark, I/O)
    INTERNAL = "internal_error"


class WriteMode(StrEnum):
    """How a ``write`` treats the table's rows (``LakeWriteBuilder``)."""

    APPEND = "append"
    TRUNCATE = "truncate"
    OVERWRITE = "overwrite"
    #: replace the partitions the written rows land in (partitionOverwriteMode=dynamic)
    DYNAMIC = "dynamic"


class AggregateKind(StrEnum):
    """The aggregates Spark may push (``AggregatePushDown.java``); the names of
    :class:`lakeskip.planner.aggregate.AggregateFunction`."""

    COUNT_STAR = "count_star"
    COUNT = "count"
    MIN = "min"
    MAX = "max"


class StageMode(StrEnum):
    """What a CTAS / RTAS does to an existing table (``LakeCatalog.stage*``)."""

    CREATE = "create"
    REPLACE = "replace"
    CREATE_OR_REPLACE = "create_or_replace"


class ColumnChangeKind(StrEnum):
    """The kinds of a column change of ``ALTER TABLE`` (:class:`ColumnChange`)."""

    ADD = "add"
    RENAME = "rename"
    DROP = "drop"
    TYPE = "type"
    NULLABILITY = "nullability"
    COMMENT = "comment"
    POSITION = "position"


# -- the predicate tree (``filters`` / ``condition``) -----------------------------------------
#
#   predicate: {"op": "=", "args": [expr, ...]}       (op: Spark's V2 predicate name)
#   expr:      {"ref": ["col", "nested"]} | {"lit": value, "type": "integer"} | predicate
#              | {"fn": "SUBSTRING", "args": [expr, ...], "other": "SUBSTRING(s, 1, 3)"}
#              | {"fn": "CAST", "to": "date", "args": [expr], "other": ...}
#              | {"fn": "EXTRACT", "field": "YEAR", "args": [expr], "other": ...}
#              | {"other": "UPPER(cat)"}              (anything else: unknown, might match)
#   a filter Spark could not express: null


class PredicateKey(StrEnum):
    """The keys of a predicate tree's nodes."""

    #: a column: its field names (``[col]``; a map key: ``[col<MAP_KEY_SEPARATOR>key]``)
    REF = "ref"
    #: a predicate: Spark's V2 name (:class:`PredicateOp`, or one Python does not know)
    OP = "op"
    ARGS = "args"
    #: a literal: its value in :class:`LiteralType`'s form, beside its ``type``
    LIT = "lit"
    TYPE = "type"
    #: any other expression, as Spark prints it (never translated); also beside ``fn``
    OTHER = "other"
    #: a scalar function: Spark's V2 name (``GeneralScalarExpression.name()``, ``CAST``,
    #: ``EXTRACT``), its arguments in ``args``
    FN = "fn"
    #: a ``CAST``'s target type (Spark's ``DataType.typeName()``: ``date``, ``timestamp``)
    TO = "to"
    #: an ``EXTRACT``'s field (``YEAR``, ``MONTH``, ...)
    FIELD = "field"


class PredicateOp(StrEnum):
    """The Spark V2 predicate names Python translates (``Predicate.name()``, sent as they
    are: Java does not interpret them; any other name is "might match")."""

    EQ = "="
    NE = "<>"
    NULL_SAFE_EQ = "<=>"
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    IN = "IN"
    IS_NULL = "IS_NULL"
    IS_NOT_NULL = "IS_NOT_NULL"
    STARTS_WITH = "STARTS_WITH"
    AND = "AND"
    OR = "OR"
    NOT = "NOT"
    ALWAYS_TRUE = "ALWAYS_TRUE"
    ALWAYS_FALSE = "ALWAYS_FALSE"


class PredicateFunction(StrEnum):
    """The ``fn`` names of function nodes: Spark's V2 ``Cast`` and ``Extract`` (which carry
    no name of their own), and the scalar functions Python maps to ranges
    (``GeneralScalarExpression.name()``, sent as Spark names them)."""

    CAST = "CAST"
    EXTRACT = "EXTRACT"
    SUBSTRING = "SUBSTRING"


class LiteralType(StrEnum):
    """The ``type`` of a literal node, and the form of its ``lit``."""

    #: ``lit`` is null
    NULL = "null"
    BOOLEAN = "boolean"
    #: byte, short, int and long: a JSON integer
    INTEGER = "integer"
    #: a JSON number, or "NaN" / "Infinity" / "-Infinity"
    FLOAT = "float"
    DOUBLE = "double"
    #: the plain decimal string
    DECIMAL = "decimal"
    STRING = "string"
    #: days since 1970-01-01
    DATE = "date"
    #: microseconds since the epoch (UTC)
    TIMESTAMP_LTZ = "timestamp_ltz"
    #: microseconds since 1970-01-01T00:00 (no time zone)
    TIMESTAMP_NTZ = "timestamp_ntz"
    #: base64
    BINARY = "binary"


#: separates column and key of a map-key reference (``attrs['device']``: ``attrs<NUL>device``)
MAP_KEY_SEPARATOR = "\x00"


#: The error kind of each error class. The exact class, not a subclass: e.g.
#: SnapshotNotFoundError is an InvalidArgumentError, but not a malformed table name.
_ERROR_KINDS: Mapping[type[BaseException], ErrorKind] = {
    TableNotFoundError: ErrorKind.TABLE_NOT_FOUND,
    TableAlreadyExistsError: ErrorKind.TABLE_ALREADY_EXISTS,
    DatabaseNotFoundError: ErrorKind.DATABASE_NOT_FOUND,
    InvalidArgumentError: ErrorKind.INVALID_ARGUMENT,
    ProtocolMismatchError: ErrorKind.PROTOCOL_MISMATCH,
    UnknownOperationError: ErrorKind.UNKNOWN_OPERATION,
    ProtocolError: ErrorKind.BAD_REQUEST,
}


def error_kind(error: BaseException) -> ErrorKind:
    """The wire kind of ``error``.

    >>> error_kind(TableNotFoundError("t")), error_kind(KeyError("k"))
    (<ErrorKind.TABLE_NOT_FOUND: 'table_not_found'>, <ErrorKind.INTERNAL: 'internal_error'>)
    """
    kind = _ERROR_KINDS.get(type(error))
    if kind is not None:
        return kind
    return ErrorKind.LAKESKIP if isinstance(error, LakeskipError) else ErrorKind.INTERNAL


#: field metadata: left out of the JSON when ``None`` (Java tests for the key's presence)
_OMIT_NONE: Mapping[str, bool] = {"omit_none": True}


# -- requests ------------------------------------------------------------------------------
# kw_only: a subclass adds required fields after the base's defaults


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """What every callback carries (``Bridge.call`` adds it)."""

    protocol: int | None = None
    #: the querying thread's TAG_PROPERTY ("" when untagged)
    tag: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogRequest(Request):
    """A question about one catalog (``LakeOps.payload``)."""

    catalog: str = ""
    #: the catalog's warehouse option (a catalog bound by ``attach`` overrides it)
    warehouse: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespaceRequest(CatalogRequest):
    namespace: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRequest(NamespaceRequest):
    #: the table's name, ``t$snapshots`` for a system table
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DropNamespaceRequest(NamespaceRequest):
    cascade: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadTableRequest(TableRequest):
    """``VERSION AS OF`` / ``TIMESTAMP AS OF`` when given."""

    version: str | None = None
    timestamp_micros: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTableRequest(TableRequest):
    #: Spark's StructType as JSON
    schema: str
    partition_keys: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTableLikeRequest(TableRequest):
    """``CREATE TABLE name LIKE source``: ``source`` a table of the same catalog."""

    source_namespace: tuple[str, ...]
    source_name: str
    #: the statement's TBLPROPERTIES (over the source's options)
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class DropPartitionRequest(TableRequest):
    """``ALTER TABLE ... DROP PARTITION``: the partition's values (Spark's internal forms)."""

    values: tuple[Json, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StageTableRequest(CreateTableRequest):
    mode: StageMode = StageMode.CREATE


@dataclass(frozen=True, slots=True, kw_only=True)
class StagedRequest(TableRequest):
    """Publish or drop what ``stage_table`` made (``staged``: its hidden name, if any)."""

    mode: StageMode
    staged: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnChange:
    """One of Spark's column ``TableChange``s (``jvm/catalog/LakeOps.alterTable``), for
    Paimon's schema evolution (``catalog/schema_evolution.py``)."""

    change: ColumnChangeKind
    #: the column, nested fields by path
    names: tuple[str, ...]
    #: add / type: the Spark type as its JSON text (``DataType.json()``)
    spark_type: Json = None
    nullable: bool | None = None
    comment: str | None = None
    new_name: str | None = None
    #: add / position: FIRST or AFTER (None: last)
    position: str | None = None
    #: AFTER which column
    after: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterTableRequest(TableRequest):
    set: Mapping[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    #: column changes, in the order Spark gave them
    columns: tuple[ColumnChange, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotRequest(TableRequest):
    """A question about the table at ``snapshot_id`` (``None``: the latest)."""

    snapshot_id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemRowsRequest(SnapshotRequest):
    time_zone: str | None = None


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """The querying session's settings, sent along so Python need not ask the JVM."""

    time_zone: str | None = None
    #: its ``spark.paimon.*`` settings (time travel)
    settings: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SortKeyRequest:
    """One key of a pushed ``ORDER BY``: a top-level column, its direction, its NULLs."""

    column: str
    descending: bool = False
    nulls_first: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanScanRequest(SnapshotRequest):
    #: Spark's pushed filters (``PredicateJson.java``; :mod:`lakeskip.spark.read.predicate_json`)
    filters: tuple[Json, ...] = ()
    #: the columns Spark may push filters on
    filter_columns: tuple[str, ...] | None = None
    session: SessionInfo | None = None
    #: a pushed ``LIMIT`` (``SupportsPushDownLimit``, ``SupportsPushDownTopN``): plan only
    #: the files that can hold the first rows (:mod:`lakeskip.planner.top_n`); ``None``: none
    limit: int | None = None
    #: the ``ORDER BY`` of a pushed top-N (empty: a plain ``LIMIT``)
    order: tuple[SortKeyRequest, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamStartRequest(TableRequest):
    """Where a new streaming read of the table starts (``LakeMicroBatchStream``): its
    read options (``scan.mode``, ``scan.snapshot-id``, ``scan.timestamp-millis``)."""

    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamLatestRequest(TableRequest):
    """The end of a streaming read's next micro-batch after ``snapshot`` / ``full`` (its
    start offset); ``snapshot`` ``None``: the table's latest snapshot id, uncapped."""

    snapshot: int | None = None
    full: bool = False
    #: at most this many added files per micro-batch (whole snapshots, at least one)
    max_files: int | None = None
    #: no snapshot after this one (``Trigger.AvailableNow``: the latest at the query's start)
    until: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamPlanRequest(PlanScanRequest):
    """The files of one micro-batch of a streaming read: from the offset ``start`` /
    ``start_full`` to the snapshot ``end`` (``lakeskip.planner.stream``)."""

    start: int
    start_full: bool = False
    end: int
    #: the schema the stream's columns are of (its ``LakeTable``'s, from ``load_table``)
    stream_schema: int | None = None


@dataclass(frozen=True, slots=True)
class AggregateRequest:
    """One pushed aggregate: ``function(column)`` (``column`` ``None`` for ``count(*)``)."""

    function: AggregateKind
    column: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeFilterRequest(PlanScanRequest):
    """Spark's runtime filters (dynamic pruning: a join's keys) on a planned scan: the same
    table, snapshot (``snapshot_id``: the plan's) and filters as its ``plan_scan``, and the
    runtime predicates (``PredicateJson.java``, usually ``IN`` lists of thousands)."""

    runtime: tuple[Json, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregateScanRequest(PlanScanRequest):
    """``count`` / ``min`` / ``max`` without GROUP BY over the files ``plan_scan`` would
    read (``filters``: the partition filters only)."""

    aggregates: tuple[AggregateRequest, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class FileReportRequest(Request):
    """File the report of a reused scan (``ScanCache``) under this query's tag again."""

    report_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExplainRowsRequest(CatalogRequest):
    query_tag: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteRequest(TableRequest):
    mode: WriteMode = WriteMode.APPEND
    #: an overwrite's condition, as Spark's predicates (``PredicateJson.java``)
    condition: tuple[Json, ...] = ()
    session: SessionInfo | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamWriteRequest(TableRequest):
    """One micro-batch of a streaming query into the table (``LakeStreamWrite``), committed
    with the query's id and the batch id as the snapshot's commit user and identifier."""

    query_id: str
    batch_id: int
    #: APPEND (output mode append) or TRUNCATE (complete: each batch replaces the table)
    mode: WriteMode = WriteMode.APPEND
    session: SessionInfo | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DmlRequest(TableRequest):
    """A DELETE / UPDATE / MERGE INTO ``LakeDmlStrategy`` planned: its text and target."""

    verb: str = "DML"
    sql: str
    current_catalog: str | None = None
    current_namespace: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcedureInfoRequest(CatalogRequest):
    #: ``sys.name``
    procedure: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CallProcedureRequest(ProcedureInfoRequest):
    arguments: Mapping[str, Json] = field(default_factory=dict)
    #: the session's namespace when its current catalog is this one
    current_namespace: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteSqlRequest(Request):
    """A statement Spark's parser rejected (``LakeParser``)."""

    sql: str
    #: the session's lakeskip catalogs, its current one first
    catalogs: tuple[str, ...] = ()
    current_catalog: str | None = None


# -- replies -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EmptyReply:
    pass


@dataclass(frozen=True, slots=True)
class ExistsReply:
    exists: bool


@dataclass(frozen=True, slots=True)
class DroppedReply:
    dropped: bool


@dataclass(frozen=True, slots=True)
class FoundReply:
    found: bool


@dataclass(frozen=True, slots=True)
class ListTablesReply:
    tables: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ListNamespacesReply:
    namespaces: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ListProceduresReply:
    procedures: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Freshness:
    """The files that prove a loaded table current (``TableCache.java``): while none of
    ``absent`` exists and each of ``sha256`` (path, digest) is unchanged."""

    absent: tuple[str, ...]
    sha256: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableDescription:
    """A table as ``LakeTable`` reads it."""

    #: Spark DDL of the columns
    schema: str
    partition_keys: tuple[str, ...]
    #: how its rows live in its files
    kind: TableKindTag
    #: the key Java merges by (``LakePkScan``): a primary-key table read by merge, its key
    #: minus its partition columns; empty for any other table
    trimmed_keys: tuple[str, ...]
    properties: Mapping[str, str]
    snapshot_id: int | None
    #: pinned by time travel (read-only)
    pinned: bool
    location: str
    #: the id of the schema ``schema`` is of (a stream checks its files against it)
    schema_id: int | None = field(default=None, metadata=_OMIT_NONE)
    #: names the schema and snapshot (``ScanCache``)
    token: str | None = field(default=None, metadata=_OMIT_NONE)
    unchanged_while: Freshness | None = field(default=None, metadata=_OMIT_NONE)
    #: ``read_optimized`` / ``audit_log``: a system table read by the table's own scan
    system: str | None = field(default=None, metadata=_OMIT_NONE)
    #: ``stage_table``: the hidden table to write to (``None``: created up front)
    staged: str | None = field(default=None, metadata=_OMIT_NONE)
    #: rows in the loaded snapshot (``LakeJoinKeys`` tells a join's fact from its dimension)
    record_count: int | None = field(default=None, metadata=_OMIT_NONE)


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemTableDescription:
    """A metadata system table (``t$snapshots``: ``LakeSystemTable``); told apart from a
    :class:`TableDescription` by ``system`` without ``token``."""

    system: str
    schema: str
    snapshot_id: int | None
    properties: Mapping[str, str]
    location: str = ""


@dataclass(frozen=True, slots=True)
class PropertiesReply:
    properties: Mapping[str, str]


def pack_longs(values: Iterable[int]) -> str:
    """Integers as one packed column of the wire: 64-bit little-endian two's complement,
    zlib-compressed (level 1), in base64 (``ScanFiles.java`` reads it with ``Base64``, an
    ``InflaterInputStream`` and a ``LongBuffer``). Compressed because py4j copies a reply
    character by character: a whole-table reply's position columns (a run per partition)
    shrink to next to nothing.

    >>> unpack_longs(pack_longs([0, 2**63 - 1, -(2**63), -1]))
    (0, 9223372036854775807, -9223372036854775808, -1)
    """
    packed = array.array("q", values)
    if sys.byteorder != "little":
        packed.byteswap()
    return base64.b64encode(zlib.compress(packed.tobytes(), 1)).decode("ascii")


def unpack_longs(text: str) -> tuple[int, ...]:
    """The integers of a :func:`pack_longs` column ("": none).

    Raises:
        ProtocolError: not base64 of zlib-compressed whole 64-bit values.
    """
    if not text:
        return ()
    try:
        raw = zlib.decompress(base64.b64decode(text, validate=True))
    except (ValueError, zlib.error) as e:
        raise ProtocolError(f"a packed column is not base64 of zlib data: {e}") from e
    if len(raw) % 8:
        raise ProtocolError(f"a packed column of {len(raw)} bytes (not whole 64-bit values)")
    packed = array.array("q")
    packed.frombytes(raw)
    if sys.byteorder != "little":
        packed.byteswap()
    return tuple(packed)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScanFiles:
    """The data files a scan reads, column-wise: one list per field, a file's values at the
    same position in each (``jvm/read/ScanFiles.java`` reads it). What files share -- their
    directory, their partition's values, their merge-on-read group -- is listed once and
    named by position. Why: a whole-table reply of 100,000 files as one JSON object per
    file spent seconds in Python's encoder and in Jackson's tree (a map per file). The
    integer columns are packed (:func:`pack_longs`: one base64 string each, read by
    :meth:`column`): 500,000 JSON numbers of a 100,000-file reply were a fifth of the JVM's
    planning in Jackson's number parser."""

    #: the files' directories, as Spark reads them
    dirs: tuple[str, ...] = ()
    #: each distinct partition's values, as ``LakeFileIndex`` reads them
    partitions: tuple[tuple[Json, ...], ...] = ()
    #: each distinct merge-on-read unit of a primary-key table: its (partition, bucket)
    groups: tuple[str, ...] = ()
    #: per file: its name in ``dirs[dir]``, or its whole path where ``dir`` is -1 (external)
    names: tuple[str, ...] = ()
    #: per file, packed (:func:`pack_longs`): its position in ``dirs`` (-1: none), in
    #: ``partitions`` and in ``groups``, its size and its modification time
    dir: str = ""
    partition: str = ""
    group: str = ""
    size: str = ""
    mtime: str = ""
    #: deletion vectors (portable RoaringBitmap, base64) by file position (its decimal text)
    dv: Mapping[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.names)

    def column(self, name: str) -> tuple[int, ...]:
        """A packed column (``dir``, ``partition``, ``group``, ``size``, ``mtime``) unpacked;
        every file's value, in order (a column sent empty: none)."""
        if name not in ("dir", "partition", "group", "size", "mtime"):
            raise KeyError(name)
        return unpack_longs(getattr(self, name))

    def path(self, i: int) -> str:
        """The path of file ``i`` as Spark reads it."""
        return self.paths()[i]

    def paths(self) -> list[str]:
        """Every file's path, in order."""
        dirs, names = self.dirs, self.names
        return [
            n if d < 0 else f"{dirs[d]}/{n}" for d, n in zip(self.column("dir"), names, strict=True)
        ]


@dataclass(frozen=True, slots=True, kw_only=True)
class PruningFigures:
    """A pruning report as the scan shows it (EXPLAIN text, Spark metrics: ``LakePruning``)."""

    snapshot: int | None
    total: int
    kept: int
    partition: int
    bucket: int
    stats: int
    #: files skipped by each index type and by each index(column)
    index: Mapping[str, int]
    column: Mapping[str, int]
    other: int
    index_files_read: int
    index_bytes_read: int
    planning_ms: float
    #: files skipped by runtime filters, by tier and column (``stats(ss_sold_date_sk)``)
    runtime: Mapping[str, int] = field(default_factory=dict)
    #: files skipped by a pushed ``LIMIT`` (``limit``) or top-N (``top-n(ts)``)
    limit: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AggregateSpec:
    """One value column's aggregate function (``merge-engine`` = ``aggregation``)."""

    function: str
    ignore_retract: bool
    delimiter: str


@dataclass(frozen=True, slots=True)
class SequenceGroupSpec:
    """A partial-update sequence group: its sequence columns and the columns they order."""

    sequence: tuple[str, ...]
    fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MergeErrors:
    """The merge's error texts, written once in Python (``merge_engine.ERRORS``); a new
    text is a new field here (and a regenerated ``Protocol.java``)."""

    partial_update_retract: str = ""
    first_row_retract: str = ""
    aggregate_retract: str = ""
    aggregate_overflow: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeSpec:
    """How ``LakePkScan`` merges the versions of a key
    (:meth:`lakeskip.catalog.pk.merge_engine.MergeEngine.to_json`)."""

    engine: str
    ignore_delete: bool
    remove_record_on_delete: bool
    sequence_fields: tuple[str, ...] = ()
    sequence_descending: bool = False
    aggregates: Mapping[str, AggregateSpec] = field(default_factory=dict)
    sequence_groups: tuple[SequenceGroupSpec, ...] = ()
    errors: MergeErrors = field(default_factory=MergeErrors)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanScanReply:
    files: ScanFiles
    report_id: str
    pruning: PruningFigures
    #: primary-key tables only
    merge: MergeSpec | None
    #: columns whose filters Spark's Parquet reader must not use on these files
    unpushable: tuple[str, ...]
    #: the snapshot the files are of ("": not the table's token, do not cache)
    token: str
    #: kept files of older schema versions that must be read by field id (``files`` holds
    #: the rest), one entry per version (``jvm/read/LakeEvolvedScan``)
    evolved: tuple[EvolvedFiles, ...] = ()
    #: the columns runtime filters may prune on (``SupportsRuntimeV2Filtering``): partition
    #: and bucket keys, columns with stats or a file index
    prunable: tuple[str, ...] = ()
    #: of ``prunable``, the columns only a file index narrows, each with the longest IN list
    #: ``runtime_filter`` answers by index: a longer runtime list on one is not asked about
    #: (stats alone keep every file; ``lakeskip.planner.runtime.runtime_columns``)
    index_values: Mapping[str, int] | None = None
    #: a primary-key table's streaming micro-batch (``lakeskip.planner.stream``): the files
    #: are read as written, no merge, only ``+I`` / ``+U`` rows, and a file named here only
    #: its rows of at least this sequence number (``None``: a table read)
    changes: Mapping[str, int] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvolvedFiles:
    """Kept files of one older schema version, read with its own column names and types."""

    files: ScanFiles
    #: the version's data columns as Spark DDL (``StructType.fromDDL``)
    stored_schema: str
    #: current column name -> its name in these files (the columns they have)
    stored_names: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class RuntimeFilterReply:
    """The planned files the runtime filters keep (their paths, as in ``plan_scan``'s reply)
    and the scan's pruning figures with the runtime tier."""

    files: tuple[str, ...]
    pruning: PruningFigures


@dataclass(frozen=True, slots=True)
class AggregateRefusedReply:
    """The manifests cannot answer the aggregate exactly: Spark reads the rows."""

    #: why not (one line)
    refused: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregatePartition:
    """A partition's partial aggregate row."""

    #: one of its files (``path``, ``size``): Java narrows the partitions to the query's
    #: filters by it through Spark's file index (``LakeFileIndex``), as a scan does
    path: str
    size: int
    #: partition values as ``LakeFileIndex`` reads them
    partition: tuple[Json, ...]
    #: one per requested aggregate: a count, else a value in ``LakeFileIndex``'s form
    #: (``None``: no non-null value)
    values: tuple[Json, ...]
    #: the data files the row covers
    files: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregateScanReply:
    partitions: tuple[AggregatePartition, ...]
    #: the data files the answer is of (all partitions, before Java's partition filter)
    files: int
    report_id: str


@dataclass(frozen=True, slots=True)
class RowsReply:
    """Rows as lists of JSON values (the forms the Java reader decodes)."""

    rows: tuple[Json, ...]


@dataclass(frozen=True, slots=True)
class WriteReply:
    snapshot_id: int | None


@dataclass(frozen=True, slots=True)
class StreamWriteReply:
    snapshot_id: int | None
    #: the table held the batch already (a replay after a restart): nothing was written
    replayed: bool


@dataclass(frozen=True, slots=True)
class StreamOffsetReply:
    """A streaming read's offset: snapshots up to ``snapshot`` delivered (0: none), or, with
    ``full``, snapshot ``snapshot`` to be read whole next."""

    snapshot: int
    full: bool = False


@dataclass(frozen=True, slots=True)
class ProcedureParameter:
    name: str
    #: Spark type name: string, bigint or boolean
    type: str
    required: bool


@dataclass(frozen=True, slots=True)
class ProcedureInfoReply:
    name: str
    description: str
    parameters: tuple[ProcedureParameter, ...]


@dataclass(frozen=True, slots=True)
class ProcedureResultReply:
    #: Spark DDL of the result's columns
    schema: str
    rows: tuple[Json, ...]


@dataclass(frozen=True, slots=True)
class RewriteSqlReply:
    #: Spark SQL for the statement (``None``: nothing to rewrite)
    sql: str | None


@dataclass(frozen=True, slots=True)
class CreateSqlReply:
    #: Spark SQL that creates the table as it is (``SHOW CREATE TABLE``)
    sql: str


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    kind: ErrorKind
    #: one line
    message: str


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """The reply of a callback that failed (``Bridge.PythonError``)."""

    error: ErrorInfo


# -- operations ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpSpec:
    """An operation's request type, its reply types, and whether it changes nothing (then
    Java may ask a restarted brain again)."""

    request: type[Request]
    replies: tuple[type, ...]
    read_only: bool = False


_TABLE = (TableDescription,)

OPERATIONS: Mapping[Op, OpSpec] = {
    Op.TABLE_EXISTS: OpSpec(TableRequest, (ExistsReply,), read_only=True),
    Op.LOAD_TABLE: OpSpec(
        LoadTableRequest, (TableDescription, SystemTableDescription), read_only=True
    ),
    Op.CREATE_TABLE: OpSpec(CreateTableRequest, _TABLE),
    Op.ALTER_TABLE: OpSpec(AlterTableRequest, _TABLE),
    Op.DROP_TABLE: OpSpec(TableRequest, (DroppedReply,)),
    Op.LIST_TABLES: OpSpec(NamespaceRequest, (ListTablesReply,), read_only=True),
    Op.LIST_NAMESPACES: OpSpec(CatalogRequest, (ListNamespacesReply,), read_only=True),
    Op.NAMESPACE_EXISTS: OpSpec(NamespaceRequest, (ExistsReply,), read_only=True),
    Op.CREATE_NAMESPACE: OpSpec(NamespaceRequest, (EmptyReply,)),
    Op.DROP_NAMESPACE: OpSpec(DropNamespaceRequest, (DroppedReply,)),
    Op.STAGE_TABLE: OpSpec(StageTableRequest, _TABLE),
    Op.COMMIT_STAGED: OpSpec(StagedRequest, (EmptyReply,)),
    Op.ABORT_STAGED: OpSpec(StagedRequest, (EmptyReply,)),
    Op.TABLE_DETAIL: OpSpec(SnapshotRequest, (PropertiesReply,)),
    Op.PLAN_SCAN: OpSpec(PlanScanRequest, (PlanScanReply,), read_only=True),
    Op.STREAM_START: OpSpec(StreamStartRequest, (StreamOffsetReply,), read_only=True),
    Op.STREAM_LATEST: OpSpec(StreamLatestRequest, (StreamOffsetReply,), read_only=True),
    Op.STREAM_PLAN: OpSpec(StreamPlanRequest, (PlanScanReply,), read_only=True),
    Op.RUNTIME_FILTER: OpSpec(RuntimeFilterRequest, (RuntimeFilterReply,), read_only=True),
    Op.AGGREGATE_SCAN: OpSpec(
        AggregateScanRequest, (AggregateScanReply, AggregateRefusedReply), read_only=True
    ),
    Op.FILE_REPORT: OpSpec(FileReportRequest, (FoundReply,), read_only=True),
    Op.SYSTEM_ROWS: OpSpec(SystemRowsRequest, (RowsReply,)),
    Op.EXPLAIN_ROWS: OpSpec(ExplainRowsRequest, (RowsReply,)),
    Op.WRITE: OpSpec(WriteRequest, (WriteReply,)),
    Op.STREAM_WRITE: OpSpec(StreamWriteRequest, (StreamWriteReply,)),
    Op.DML: OpSpec(DmlRequest, (EmptyReply,)),
    Op.PROCEDURE_INFO: OpSpec(ProcedureInfoRequest, (ProcedureInfoReply,), read_only=True),
    Op.LIST_PROCEDURES: OpSpec(CatalogRequest, (ListProceduresReply,), read_only=True),
    Op.CALL_PROCEDURE: OpSpec(CallProcedureRequest, (ProcedureResultReply,)),
    Op.REWRITE_SQL: OpSpec(RewriteSqlRequest, (RewriteSqlReply,), read_only=True),
    Op.SHOW_CREATE_TABLE: OpSpec(TableRequest, (CreateSqlReply,), read_only=True),
    Op.CREATE_TABLE_LIKE: OpSpec(CreateTableLikeRequest, _TABLE),
    Op.LIST_PARTITIONS: OpSpec(TableRequest, (RowsReply,), read_only=True),
    Op.DROP_PARTITION: OpSpec(DropPartitionRequest, (DroppedReply,)),
}


def message_types() -> tuple[type, ...]:
    """Every dataclass on the wire (requests, replies and their parts), each once."""
    seen: dict[type, None] = {}

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            if tp in seen:
                return
            seen[tp] = None
            for t in _hints(tp).values():
                visit(t)
        for arg in typing.get_args(tp):
            visit(arg)

    for spec in OPERATIONS.values():
        visit(spec.request)
        for r in spec.replies:
            visit(r)
    visit(ErrorReply)
    return tuple(seen)


def wire_keys() -> tuple[str, ...]:
    """Every JSON key of the protocol, sorted."""
    return tuple(sorted({f.name for tp in message_types() for f in dataclasses.fields(tp)}))


# -- the codec -----------------------------------------------------------------------------

T = TypeVar("T")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, bool], ...]:
    return tuple((f.name, bool(f.metadata.get("omit_none"))) for f in dataclasses.fields(cls))


def decode(cls: type[T], obj: Any, where: str = "") -> T:
    """``cls`` from a JSON object: every key must be one of its fields; a missing key takes
    the field's default, and so does a JSON ``null`` for a field that cannot be ``None``.

    Raises:
        ProtocolError: an unknown key, a missing required key or a value of the wrong type.
    """
    where = where or cls.__name__
    if not isinstance(obj, dict):
        raise ProtocolError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    hints = _hints(cls)  # type: ignore[arg-type]
    unknown = sorted(set(obj) - set(hints))
    if unknown:
        raise ProtocolError(f"{where}: unknown key(s) {', '.join(unknown)}")
    kwargs = {
        k: _value(hints[k], v, f"{where}.{k}")
        for k, v in obj.items()
        if v is not None or _nullable(hints[k])
    }
    try:
        return cls(**kwargs)
    except TypeError as e:  # a required key missing
        raise ProtocolError(f"{where}: {e}") from e


def _nullable(tp: Any) -> bool:
    return tp is Any or type(None) in typing.get_args(tp)


def _value(tp: Any, v: Any, where: str) -> Any:
    if tp is Any:
        return v
    origin = typing.get_origin(tp)
    if origin is types.UnionType or origin is typing.Union:
        if v is None:
            return None
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return _value(inner, v, where)
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(v, list):
            raise ProtocolError(f"{where}: expected a list, got {v!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], x, where) for x in v)
        if len(args) != len(v):
            raise ProtocolError(f"{where}: expected {len(args)} items, got {v!r}")
        return tuple(_value(a, x, where) for a, x in zip(args, v, strict=True))
    if origin is Mapping or origin is dict:
        if not isinstance(v, dict):
            raise ProtocolError(f"{where}: expected an object, got {v!r}")
        vt = typing.get_args(tp)[1]
        return {str(k): _value(vt, x, f"{where}.{k}") for k, x in v.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return decode(tp, v, where)
    if isinstance(tp, type) and issubclass(tp, StrEnum):
        try:
            return tp(v)
        except ValueError as e:
            raise ProtocolError(f"{where}: {v!r} is not one of {[m.value for m in tp]}") from e
    if tp is float and isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if tp is int and isinstance(v, int) and not isinstance(v, bool):
        return v
    if tp in (str, bool) and isinstance(v, tp):
        return v
    raise ProtocolError(f"{where}: expected {getattr(tp, '__name__', tp)}, got {v!r}")


def envelope(obj: Mapping[str, Any]) -> Request:
    """The version and tag any request carries, read before its operation's type reads it
    (a request of another version may not fit that type)."""
    try:
        return decode(Request, {f.name: obj.get(f.name) for f in dataclasses.fields(Request)})
    except ProtocolError:
        return Request()


def decode_reply(op: Op, obj: Any) -> Any:
    """A reply of ``op`` (or an :class:`ErrorReply`) from its JSON: the first of its types
    that reads it (no two of an operation's reply types read the same JSON)."""
    if isinstance(obj, dict) and "error" in obj:
        return decode(ErrorReply, obj)
    problems = []
    for tp in OPERATIONS[op].replies:
        try:
            return decode(tp, obj)
        except ProtocolError as e:
            problems.append(str(e))
    raise ProtocolError(f"reply to {op}: {'; '.join(problems)}")


def encode(message: Any) -> dict[str, Json]:
    """The JSON object of a request or reply (a field marked ``_OMIT_NONE`` is
    left out)."""
    out = _plain(message)
    assert isinstance(out, dict)
    return out


_SCALARS = frozenset([str, int, float, bool, type(None)])


@functools.cache
def _getter(cls: type) -> Callable[[Any], tuple[Any, ...]] | None:
    """The fields of a dataclass as one tuple (one C call: a scan's reply encodes one
    ScanFile per file), and their names beside; None for any other type."""
    if not dataclasses.is_dataclass(cls):
        return None
    names = [name for name, _ in _fields(cls)]
    if not names:
        return lambda v: ()
    if len(names) == 1:
        (only,) = names
        return lambda v: (getattr(v, only),)
    getter: Callable[[Any], tuple[Any, ...]] = operator.attrgetter(*names)
    return getter


@functools.cache
def _scalar_lists(cls: type) -> frozenset[str]:
    """The fields of a dataclass declared ``tuple[int, ...]`` / ``tuple[str, ...]`` (a scan's
    file columns: copied as lists in one C call, not item by item)."""
    scalars = (int, str, float, bool)
    return frozenset(
        name
        for name, tp in _hints(cls).items()
        if typing.get_origin(tp) is tuple
        and typing.get_args(tp)[1:] == (Ellipsis,)
        and typing.get_args(tp)[0] in scalars
    )


def _plain(v: Any) -> Json:
    # a scan's reply holds one ScanFile per file: the common cases are tested first
    t: type = type(v)
    if t in _SCALARS:
        return v
    if t is tuple or t is list:
        return [x if type(x) in _SCALARS else _plain(x) for x in v]
    getter = _getter(t)
    if getter is not None:
        out: dict[str, Json] = {}
        lists = _scalar_lists(t)
        for (name, omit), x in zip(_fields(t), getter(v), strict=True):
            if x is None and omit:
                continue
            out[name] = x if type(x) in _SCALARS else list(x) if name in lists else _plain(x)
        return out
    if isinstance(v, StrEnum):
        return v.value
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    return v
