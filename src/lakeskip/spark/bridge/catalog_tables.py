"""The Spark catalog's table and namespace callbacks: exists, load (time travel, system
tables), CREATE / ALTER / DROP, CTAS / RTAS staging, and the table state DESCRIBE shows.

Each handler takes the :class:`~lakeskip.spark.bridge.catalog_context.ServiceContext`, its typed
request (:mod:`lakeskip.spark.jvm.protocol`) and the JVM argument, and returns its typed reply.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace as replace_fields
from typing import Any, assert_never

from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import CommitKind, Snapshot
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw, TableKind, schema_kind
from lakeskip.catalog.ops.staging import can_stage, publish, staging_identifier
from lakeskip.catalog.ops.system_tables import split_system_name
from lakeskip.catalog.ops.table_details import table_details
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import PRIMARY_KEY_OPTION
from lakeskip.catalog.schema_evolution import (
    AddColumn,
    DropColumn,
    Move,
    RenameColumn,
    SchemaChange,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
)
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    InvalidArgumentError,
    LakeskipError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedStatementError,
)
from lakeskip.spark.bridge.catalog_context import ServiceContext, snapshot_for, snapshot_token
from lakeskip.spark.bridge.system_service import describe_system
from lakeskip.spark.jvm.protocol import (
    AlterTableRequest,
    CatalogRequest,
    ColumnChange,
    ColumnChangeKind,
    CreateSqlReply,
    CreateTableLikeRequest,
    CreateTableRequest,
    DropNamespaceRequest,
    DropPartitionRequest,
    DroppedReply,
    EmptyReply,
    ExistsReply,
    Freshness,
    ListNamespacesReply,
    ListTablesReply,
    LoadTableRequest,
    NamespaceRequest,
    PropertiesReply,
    RowsReply,
    SnapshotRequest,
    StagedRequest,
    StageMode,
    StageTableRequest,
    SystemTableDescription,
    TableDescription,
    TableKindTag,
    TableProperty,
    TableRequest,
)
from lakeskip.spark.read.query import spark_path
from lakeskip.sql.ddl import OUR_FORMATS
from lakeskip.types import DataType, Field, RowType, TypeRoot, from_spark_json

__all__ = [
    "abort_staged",
    "alter_table",
    "commit_staged",
    "create_namespace",
    "create_table",
    "describe",
    "drop_namespace",
    "drop_table",
    "list_namespaces",
    "list_tables",
    "load_table",
    "namespace_exists",
    "show_create_table",
    "stage_table",
    "table_detail",
    "table_exists",
]

# properties Spark adds to CREATE TABLE that are not table options
_RESERVED = frozenset(
    ["owner", TableProperty.PROVIDER.value, "external", "is_managed_location", "comment"]
)
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


def _merge_keys(schema: TableSchema, kind: TableKind) -> tuple[str, ...]:
    """The key Java merges a table's files by (``LakePkScan``); none on a table read as its
    files are (an append table, or a primary-key table read raw: minus their DVs,
    ``LakeDvScan``, as Paimon reads them)."""
    match kind:
        case PkMerge():
            return tuple(k for k in schema.primary_keys if k not in schema.partition_keys)
        case Append() | AppendDv() | PkRaw():
            return ()
        case _:
            assert_never(kind)


def kind_tag(kind: TableKind) -> TableKindTag:
    """``kind`` as the wire names it (Java's ``Protocol.TableKindTag``)."""
    match kind:
        case Append():
            return TableKindTag.APPEND
        case AppendDv():
            return TableKindTag.APPEND_DV
        case PkMerge():
            return TableKindTag.PK_MERGE
        case PkRaw():
            return TableKindTag.PK_RAW
        case _:
            assert_never(kind)


def describe(table: FileStoreTable, snapshot: Snapshot | None, pinned: bool) -> TableDescription:
    """``table`` as ``LakeTable`` reads it (at ``snapshot`` when ``pinned``)."""
    schema = table.schema
    if pinned and snapshot is not None:
        schema = table.schema_by_id(snapshot.schema_id)
    props = dict(schema.options)
    if schema.comment:
        props["comment"] = schema.comment
    props[TableProperty.PROVIDER.value] = "lakeskip"
    if schema.primary_keys:
        props[PRIMARY_KEY_OPTION] = ",".join(schema.primary_keys)
    kind = schema_kind(schema)
    return TableDescription(
        schema=schema.row_type.spark_ddl(),
        partition_keys=tuple(schema.partition_keys),
        kind=kind_tag(kind),
        trimmed_keys=_merge_keys(schema, kind),
        properties=props,
        snapshot_id=snapshot.id if pinned and snapshot is not None else None,
        pinned=pinned,
        location=table.file_io.uri(table.path),
        schema_id=schema.id,
        record_count=snapshot.total_record_count if snapshot is not None else None,
    )


def table_exists(ctx: ServiceContext, req: TableRequest, arg: Any) -> ExistsReply:
    base, system = split_system_name(req.name)
    if system is not None:
        try:
            describe_system(ctx.table(req, base), system, None)
        except LakeskipError:
            return ExistsReply(exists=False)
        return ExistsReply(exists=True)
    try:
        return ExistsReply(exists=ctx.catalog(req).table_exists(ctx.ident(req, req.name)))
    except InvalidArgumentError:
        return ExistsReply(exists=False)


def load_table(
    ctx: ServiceContext, req: LoadTableRequest, arg: Any
) -> TableDescription | SystemTableDescription:
    version, ts = req.version, req.timestamp_micros
    base, system = split_system_name(req.name)
    if system is not None:  # t$snapshots ...: LakeSystemTable.java
        table = ctx.table(req, base)
        snap = snapshot_for(table, version, ts)
        if system in ("read_optimized", "audit_log"):
            # the table's own scan (LakeTable): read_optimized over other files without
            # a merge (LakeTable.readByMerge); audit_log with rowkind first and deleted keys
            # kept (LakeAuditScan)
            pinned = version is not None or ts is not None
            out = describe(table, snap, pinned=pinned)
            if (
                system == "audit_log"
                and out.kind is TableKindTag.PK_MERGE
                and (engine := MergeEngine.of(table.schema.options)) != MergeEngine()
            ):
                # the keep-delete merge is deduplicate's (LakePkScan)
                raise TableNotFoundError(
                    f"system table $audit_log is not supported yet for merge-engine "
                    f"{engine.kind}{' with ignore-delete' if engine.ignore_delete else ''}"
                )
            return replace_fields(
                out, system=system, token=snapshot_token(table, snap) + f"|${system}"
            )
        desc = describe_system(table, system, snap)
        return replace_fields(desc, location=table.file_io.uri(table.path))
    if version is not None or ts is not None:
        table = ctx.table(req)
        snap = snapshot_for(table, version, ts)
        return replace_fields(describe(table, snap, pinned=True), token=snapshot_token(table, snap))
    # the latest: with the files that prove it current, so that Java can reuse this
    # answer (LakeOps' table cache) until one of them changes
    current = ctx.catalog(req).get_table_version(ctx.ident(req, req.name))
    uri = current.table.file_io.uri
    return replace_fields(
        describe(current.table, current.snapshot, pinned=False),
        token=snapshot_token(current.table, current.snapshot),
        unchanged_while=Freshness(
            absent=tuple(spark_path(uri(f)) for f in current.next_files),
            sha256=tuple((spark_path(uri(f)), digest) for f, digest in current.read_files),
        ),
    )


def create_table(ctx: ServiceContext, req: CreateTableRequest, arg: Any) -> TableDescription:
    return describe(_create(ctx, req, ctx.ident(req, req.name)), None, pinned=False)


def _create(ctx: ServiceContext, req: CreateTableRequest, name: str) -> FileStoreTable:
    """Create table ``name`` from a create_table request (schema, partitions, properties)."""
    from pyspark.sql.types import StructType

    struct = StructType.fromJson(json.loads(req.schema))
    fields = []
    for i, f in enumerate(struct.fields):
        t = from_spark_json(f.dataType.jsonValue())
        fields.append(
            Field(
                i,
                f.name,
                t if f.nullable else t.with_nullable(False),
                (f.metadata or {}).get("comment"),
            )
        )
    props = dict(req.properties)
    options = _create_options(name, props)
    comment = props.get("comment")
    return ctx.catalog(req).create_table(
        name,
        RowType(tuple(fields)),
        partition_keys=list(req.partition_keys),
        options=options,
        comment=comment,
    )


def _create_options(name: str, props: Mapping[str, str]) -> dict[str, str]:
    """The table options among a CREATE TABLE's Spark properties; refuses in one line what
    a lakeskip table cannot keep (LOCATION, another provider, Hive clauses)."""
    if props.get("location"):
        raise InvalidArgumentError(
            f"{name}: lakeskip tables live in the catalog's warehouse; LOCATION is not supported"
        )
    provider = props.get(TableProperty.PROVIDER.value)
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
    options = {}
    for k, v in props.items():
        if k == "location" or not _is_option(k):
            continue
        options[k[len("option.") :] if k.startswith("option.") else k] = v
    return options


def create_table_like(
    ctx: ServiceContext, req: CreateTableLikeRequest, arg: Any
) -> TableDescription:
    """``CREATE TABLE name LIKE source``: the source's columns (NOT NULL and comments),
    partitioning, primary key, comment and options, with the statement's TBLPROPERTIES
    over them; no rows. Field ids start again at 0, as for any new table."""
    name = ctx.ident(req, req.name)
    if len(req.source_namespace) != 1:
        raise InvalidArgumentError(
            f"lakeskip tables are named db.table, got {'.'.join([*req.source_namespace, req.source_name])}"
        )
    cat = ctx.catalog(req)
    source = cat.get_table(f"{req.source_namespace[0]}.{req.source_name}").schema
    props = dict(req.properties)
    options = {**source.options, **_create_options(name, props)}
    table = cat.create_table(
        name,
        source.fields,
        partition_keys=source.partition_keys,
        options=options,
        comment=props.get("comment", source.comment),
        primary_keys=source.primary_keys,
    )
    return describe(table, None, pinned=False)


# -- CREATE / REPLACE TABLE ... AS SELECT (Spark's StagingTableCatalog) --------------------


def stage_table(ctx: ServiceContext, req: StageTableRequest, arg: Any) -> TableDescription:
    """Stage a CTAS / RTAS target (mode create | replace | create_or_replace): a hidden
    table the query's rows are written to, published by ``commit_staged``
    (:mod:`lakeskip.catalog.ops.staging`). ``staged`` names it (absent: no staging on this
    filesystem, the table was created or replaced up front)."""
    cat = ctx.catalog(req)
    name = ctx.ident(req, req.name)
    exists = cat.table_exists(name)
    if req.mode is StageMode.CREATE and exists:
        raise TableAlreadyExistsError(f"table already exists: {name}")
    if req.mode is StageMode.REPLACE and not exists:
        raise TableNotFoundError(f"table not found: {name}")
    if not can_stage(cat):
        if exists:
            cat.drop_table(name)
        return describe(_create(ctx, req, name), None, pinned=False)
    staged = staging_identifier(name)
    table = _create(ctx, req, staged)
    return replace_fields(describe(table, None, pinned=False), staged=staged.split(".", 1)[1])


def commit_staged(ctx: ServiceContext, req: StagedRequest, arg: Any) -> EmptyReply:
    cat = ctx.catalog(req)
    name = ctx.ident(req, req.name)
    staged = f"{name.split('.', 1)[0]}.{req.staged}"
    publish(cat, staged, name, replace=req.mode is not StageMode.CREATE)
    return EmptyReply()


def abort_staged(ctx: ServiceContext, req: StagedRequest, arg: Any) -> EmptyReply:
    cat = ctx.catalog(req)
    name = ctx.ident(req, req.name)
    if req.staged:
        cat.drop_table(f"{name.split('.', 1)[0]}.{req.staged}", ignore_if_not_exists=True)
    else:  # created up front (no staging here): a failed write leaves no table
        cat.drop_table(name, ignore_if_not_exists=True)
    return EmptyReply()


def alter_table(ctx: ServiceContext, req: AlterTableRequest, arg: Any) -> TableDescription:
    cat = ctx.catalog(req)
    name = ctx.ident(req, req.name)
    sets = {k: v for k, v in req.set.items() if _is_option(k)}
    unset = [k for k in req.unset if _is_option(k)]
    if not cat.table_exists(name):
        raise TableNotFoundError(f"table not found: {name}")
    if req.columns:
        cat.alter_columns(name, [_schema_change(c) for c in req.columns])
    if sets or unset:
        cat.alter_table(name, set_options=sets, unset_options=unset)
    return describe(cat.get_table(name), None, pinned=False)


def _schema_change(c: ColumnChange) -> SchemaChange:
    """Spark's column change (``LakeOps.alterTable``) as Paimon's schema change."""
    path = tuple(c.names)

    def spark_type() -> DataType:
        raw = json.loads(c.spark_type) if isinstance(c.spark_type, str) else c.spark_type
        return from_spark_json(raw)

    move: Move | None = None
    if c.position == "FIRST":
        move = Move.first()
    elif c.position == "AFTER" and c.after is not None:
        move = Move.after(c.after)
    match c.change:
        case ColumnChangeKind.ADD:
            t = spark_type()
            return AddColumn(path, t.with_nullable(c.nullable is not False), c.comment, move)
        case ColumnChangeKind.RENAME if c.new_name is not None:
            return RenameColumn(path, c.new_name)
        case ColumnChangeKind.DROP:
            return DropColumn(path)
        case ColumnChangeKind.TYPE:
            return UpdateColumnType(path, spark_type())
        case ColumnChangeKind.NULLABILITY if c.nullable is not None:
            return UpdateColumnNullability(path, c.nullable)
        case ColumnChangeKind.COMMENT:
            return UpdateColumnComment(path, c.comment)
        case ColumnChangeKind.POSITION if move is not None:
            return UpdateColumnPosition(path, move)
    raise InvalidArgumentError(f"malformed column change {c!r}")


def drop_table(ctx: ServiceContext, req: TableRequest, arg: Any) -> DroppedReply:
    cat = ctx.catalog(req)
    name = ctx.ident(req, req.name)
    if not cat.table_exists(name):
        return DroppedReply(dropped=False)
    cat.drop_table(name, ignore_if_not_exists=True)
    return DroppedReply(dropped=True)


def table_detail(ctx: ServiceContext, req: SnapshotRequest, arg: Any) -> PropertiesReply:
    """The table state ``DESCRIBE TABLE EXTENDED`` lists (``LakeTable.properties``), at
    ``snapshot_id`` (time travel) or the latest snapshot."""
    try:
        table = ctx.table(req)
        sid = req.snapshot_id
        snap = table.snapshot(sid) if sid is not None else table.latest_snapshot()
        return PropertiesReply(properties=dict(table_details(table, snap)))
    except LakeskipError as e:  # never the query's error (ErrorLog): DESCRIBE says it
        return PropertiesReply(properties={TableProperty.STATE.value: f"unavailable: {e}"})


#: partition column types whose values are the same in Spark's internal form and lakeskip's
_PARTITION_ROOTS = frozenset(
    {
        TypeRoot.STRING,
        TypeRoot.BOOLEAN,
        TypeRoot.TINYINT,
        TypeRoot.SMALLINT,
        TypeRoot.INT,
        TypeRoot.BIGINT,
        TypeRoot.DATE,
    }
)


def _partitioned(ctx: ServiceContext, req: TableRequest, what: str) -> FileStoreTable:
    table = ctx.table(req)
    schema = table.schema
    if not schema.partition_keys:
        raise InvalidArgumentError(f"{what}: {table.identifier} is not partitioned")
    for k in schema.partition_keys:
        t = schema.fields.field(k).type
        if t.root not in _PARTITION_ROOTS:
            raise UnsupportedStatementError(
                f"{what} on {table.identifier}: partition column {k} of type {t} is not "
                "supported yet (strings, integers, booleans and dates are)"
            )
    return table


def list_partitions(ctx: ServiceContext, req: TableRequest, arg: Any) -> RowsReply:
    """``SHOW PARTITIONS``: the partitions that hold data files, as Paimon lists them."""
    table = _partitioned(ctx, req, "SHOW PARTITIONS")
    live = sorted({e.partition for e in table.scan_files()}, key=repr)
    return RowsReply(rows=tuple(list(p) for p in live))


def drop_partition(ctx: ServiceContext, req: DropPartitionRequest, arg: Any) -> DroppedReply:
    """``ALTER TABLE ... DROP PARTITION``, as Paimon's: one OVERWRITE snapshot deleting the
    partition's files (``dropped`` false: it holds none)."""
    table = _partitioned(ctx, req, "ALTER TABLE DROP PARTITION")
    values = tuple(req.values)
    if values not in {e.partition for e in table.scan_files()}:
        return DroppedReply(dropped=False)
    table.commit([], kind=CommitKind.OVERWRITE, overwrite_partitions=[values])
    return DroppedReply(dropped=True)


def show_create_table(ctx: ServiceContext, req: TableRequest, arg: Any) -> CreateSqlReply:
    """``SHOW CREATE TABLE``: Spark SQL that recreates the table (``LakeShowCreateExec``)."""
    from lakeskip.spark.bridge.sql_rewrite import show_create_sql

    table = ctx.table(req)
    return CreateSqlReply(
        sql=show_create_sql([req.catalog, *req.namespace, req.name], table.schema)
    )


# -- namespaces ----------------------------------------------------------------------------


def list_tables(ctx: ServiceContext, req: NamespaceRequest, arg: Any) -> ListTablesReply:
    ns = req.namespace
    if len(ns) != 1:
        return ListTablesReply(tables=())
    return ListTablesReply(tables=tuple(ctx.catalog(req).list_tables(ns[0])))


def list_namespaces(ctx: ServiceContext, req: CatalogRequest, arg: Any) -> ListNamespacesReply:
    dbs = ctx.catalog(req).list_databases()
    return ListNamespacesReply(namespaces=tuple(sorted({*dbs, "default"})))


def namespace_exists(ctx: ServiceContext, req: NamespaceRequest, arg: Any) -> ExistsReply:
    ns = req.namespace
    ok = len(ns) == 1 and (ns[0] == "default" or ctx.catalog(req).database_exists(ns[0]))
    return ExistsReply(exists=ok)


def create_namespace(ctx: ServiceContext, req: NamespaceRequest, arg: Any) -> EmptyReply:
    ns = req.namespace
    if len(ns) != 1:
        raise InvalidArgumentError(f"lakeskip databases are one level: {'.'.join(ns)}")
    ctx.catalog(req).create_database(ns[0])
    return EmptyReply()


def drop_namespace(ctx: ServiceContext, req: DropNamespaceRequest, arg: Any) -> DroppedReply:
    ns = req.namespace
    cat = ctx.catalog(req)
    if len(ns) != 1 or not cat.database_exists(ns[0]):
        return DroppedReply(dropped=False)
    cat.drop_database(ns[0], cascade=req.cascade)
    return DroppedReply(dropped=True)
