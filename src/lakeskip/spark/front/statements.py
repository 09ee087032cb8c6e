"""Executing parsed statements (everything but plain queries) against catalog and Spark."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeskip.catalog.catalog import DEFAULT_DATABASE, Catalog
from lakeskip.catalog.format.manifest import FileKind, read_manifest, read_manifest_list
from lakeskip.catalog.format.snapshot import CommitKind, Snapshot
from lakeskip.catalog.ops.staging import can_stage, publish, staging_identifier
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidOptionError,
    TableNotFoundError,
    UnsupportedStatementError,
)
from lakeskip.planner.report import PruningReport
from lakeskip.spark.front.describe import describe_rows, show_create_text
from lakeskip.spark.modify.base import DmlRequest, MergeRequest, resolve_set
from lakeskip.spark.modify.engines import run_dml, run_merge
from lakeskip.spark.write.align import align_by_position
from lakeskip.spark.write.writer import write_dataframe
from lakeskip.sql.help import HELP
from lakeskip.sql.merge import Merge
from lakeskip.sql.statement_types import (
    AlterTableColumns,
    AlterTableSetOptions,
    AlterTableUnsetOptions,
    Call,
    CreateDatabase,
    CreateTable,
    Delete,
    DescribeTable,
    DropDatabase,
    DropTable,
    Explain,
    Help,
    Insert,
    OtherTableStatement,
    Passthrough,
    Query,
    RenameTable,
    ShowCreateTable,
    ShowDatabases,
    ShowTables,
    Statement,
    TableIdent,
    TruncateTable,
    Update,
    UseDatabase,
)
from lakeskip.sql.statements import parse_dml
from lakeskip.types import Field, RowType, from_spark_json, quote_identifier

__all__ = ["HANDLERS", "StatementContext", "call_procedure", "execute", "run_catalog_dml"]


@dataclass(slots=True)
class StatementContext:
    """What running a statement needs from its caller (a :class:`~lakeskip.spark.front.session.Session`
    builds one per statement): the catalog, the SparkSession, the current database (``USE``
    changes it here), a way to run a query through lakeskip (CTAS, INSERT ... SELECT), and the
    pruning reports the statement produced (``None``: leave the caller's as they are)."""

    catalog: Catalog
    spark: SparkSession
    current_database: str
    run_query: Callable[[str], DataFrame]
    reports: list[PruningReport] | None = None
    #: a query through the Spark catalog, planned (its DataFrame and pruning reports);
    #: ``None``: no catalog (temp-view fallback)
    plan_native: Callable[[Query], tuple[DataFrame, list[PruningReport]]] | None = None
    #: how a parsed query runs (the session's: over the pruned files); ``None``: Spark runs
    #: its text as it is
    run_parsed: Callable[[Query], DataFrame] | None = None
    #: the Spark catalog name the session serves (``None``: no catalog)
    catalog_name: str | None = None

    @property
    def time_zone(self) -> str:
        return str(self.spark.conf.get("spark.sql.session.timeZone") or "UTC")


def _rows(ctx: StatementContext, schema: str, rows: Sequence[Sequence[Any]]) -> DataFrame:
    return ctx.spark.createDataFrame([tuple(r) for r in rows], schema)


def _ok(ctx: StatementContext, message: str) -> DataFrame:
    return _rows(ctx, "result STRING", [(message,)])


def _ident(ctx: StatementContext, ident: TableIdent) -> str:
    return ident.qualified(ctx.current_database)


def execute(ctx: StatementContext, s: Statement) -> DataFrame:
    """Run one statement (its handler in :data:`HANDLERS`); returns its result DataFrame."""
    handler = HANDLERS.get(type(s))
    if handler is None:
        raise UnsupportedStatementError(f"unsupported statement: {type(s).__name__}")
    return handler(ctx, s)


def _query(ctx: StatementContext, s: Query) -> DataFrame:
    return ctx.run_parsed(s) if ctx.run_parsed is not None else ctx.spark.sql(s.sql)


def _passthrough(ctx: StatementContext, s: Passthrough) -> DataFrame:
    return ctx.spark.sql(s.sql)


def _help(ctx: StatementContext, s: Help) -> DataFrame:
    rows = [(r.syntax, r.description) for r in HELP]
    return _rows(ctx, "statement STRING, description STRING", rows)


# -- databases ------------------------------------------------------------------------------


def _create_database(ctx: StatementContext, s: CreateDatabase) -> DataFrame:
    existed = s.if_not_exists and ctx.catalog.database_exists(s.name)
    ctx.catalog.create_database(s.name, ignore_if_exists=s.if_not_exists)
    return _ok(ctx, f"database {s.name} " + ("already exists" if existed else "created"))


def _drop_database(ctx: StatementContext, s: DropDatabase) -> DataFrame:
    ctx.catalog.drop_database(s.name, ignore_if_not_exists=s.if_exists, cascade=s.cascade)
    if ctx.current_database == s.name:
        ctx.current_database = "default"
    return _ok(ctx, f"database {s.name} dropped")


def _show_databases(ctx: StatementContext, s: ShowDatabases) -> DataFrame:
    names = sorted({DEFAULT_DATABASE, *ctx.catalog.list_databases()})  # default always exists
    return _rows(ctx, "namespace STRING", [(d,) for d in names])


def _use_database(ctx: StatementContext, s: UseDatabase) -> DataFrame:
    if not ctx.catalog.database_exists(s.name):
        raise DatabaseNotFoundError(f"database not found: {s.name}")
    ctx.current_database = s.name
    return _ok(ctx, f"using database {s.name}")


# -- table options, DROP, SHOW TABLES, CALL -------------------------------------------------


def _set_options(ctx: StatementContext, s: AlterTableSetOptions) -> DataFrame:
    schema = ctx.catalog.alter_table(_ident(ctx, s.ident), set_options=dict(s.options))
    return _ok(ctx, f"table {_ident(ctx, s.ident)} altered (schema {schema.id})")


def _unset_options(ctx: StatementContext, s: AlterTableUnsetOptions) -> DataFrame:
    name = _ident(ctx, s.ident)
    if not s.if_exists:
        current = ctx.catalog.get_table(name).schema.options
        missing = [k for k in s.keys if k not in current]
        if missing:
            raise InvalidOptionError(
                f"cannot unset option(s) not set on {name}: {', '.join(missing)}"
            )
    schema = ctx.catalog.alter_table(name, unset_options=list(s.keys))
    return _ok(ctx, f"table {name} altered (schema {schema.id})")


def _spark_table(ctx: StatementContext, ident: TableIdent) -> str | None:
    """The name of the ordinary Spark table (not a lakeskip one) ``ident`` names, if any:
    Spark's own statement runs on it."""
    name = _ident(ctx, ident)
    if not ctx.catalog.table_exists(name) and ctx.spark.catalog.tableExists(name):
        return name
    return None


def _drop_table(ctx: StatementContext, s: DropTable) -> DataFrame:
    if (spark_name := _spark_table(ctx, s.ident)) is not None:
        return ctx.spark.sql(f"DROP TABLE {spark_name}")
    ctx.catalog.drop_table(_ident(ctx, s.ident), ignore_if_not_exists=s.if_exists)
    return _ok(ctx, f"table {_ident(ctx, s.ident)} dropped")


def _show_tables(ctx: StatementContext, s: ShowTables) -> DataFrame:
    db = s.database or ctx.current_database
    return _rows(
        ctx,
        "namespace STRING, tableName STRING, isTemporary BOOLEAN",
        [(db, t, False) for t in ctx.catalog.list_tables(db)],
    )


def _call(ctx: StatementContext, s: Call) -> DataFrame:
    if s.catalog is not None and s.catalog != ctx.catalog_name:
        # another catalog's procedure (CALL lk2.sys.x): Spark routes it to that catalog
        return ctx.spark.sql(s.spark_sql(s.catalog))
    return call_procedure(ctx, s.procedure, s.args, s.kwargs)


# -- ALTER ADD COLUMNS / RENAME / TRUNCATE / unsupported DML --------------------------------


def _table_statement(
    ctx: StatementContext,
    s: AlterTableColumns | RenameTable | TruncateTable | OtherTableStatement,
) -> DataFrame:
    cat = ctx.catalog
    name = _ident(ctx, s.ident)
    if not cat.table_exists(name):
        if s.sql and ctx.spark.catalog.tableExists(name):  # an ordinary Spark table
            return ctx.spark.sql(s.sql)
        raise TableNotFoundError(f"table not found: {name}")
    if isinstance(s, OtherTableStatement):
        raise UnsupportedStatementError(
            f"{s.what} is not supported for append tables (yet): {name} is a lakeskip "
            "append-only table (INSERT, INSERT OVERWRITE, DELETE, UPDATE and TRUNCATE TABLE "
            "are supported)"
        )
    if isinstance(s, AlterTableColumns):
        schema = cat.alter_columns(name, s.changes)
        return _ok(ctx, f"table {name} altered (schema {schema.id})")
    if isinstance(s, RenameTable):
        new_name = _ident(ctx, s.new_ident)
        cat.rename_table(name, new_name)
        return _ok(ctx, f"table {name} renamed to {new_name}")
    table = cat.get_table(name)
    snap = table.commit([], kind=CommitKind.OVERWRITE)
    return _ok(
        ctx,
        f"table {name} truncated" + (f" (snapshot {snap.id})" if snap else " (it was empty)"),
    )


# -- CREATE TABLE ---------------------------------------------------------------------------


def _create_table(ctx: StatementContext, s: CreateTable) -> DataFrame:
    if s.catalog is not None:  # lakeskip.db.t: the same statement through that Spark catalog
        from lakeskip.spark.bridge.sql_rewrite import create_table_sql, lakeskip_catalogs

        # a catalog error reaches the caller as Session.execute's one-line QueryFailedError
        ctx.spark.sql(create_table_sql(s, lakeskip_catalogs(ctx.spark, [s.catalog])))
        return _ok(ctx, f"table {s.catalog}.{s.ident.qualified('default')} created")
    cat = ctx.catalog
    name = _ident(ctx, s.ident)
    if s.as_select is None:
        row_type = RowType(
            tuple(
                Field(i, c.name, c.type if c.nullable else c.type.with_nullable(False), c.comment)
                for i, c in enumerate(s.columns)
            )
        )
        cat.create_table(
            name,
            row_type,
            partition_keys=s.partition_keys,
            options=dict(s.options),
            comment=s.comment,
            ignore_if_exists=s.if_not_exists,
            primary_keys=s.primary_keys,
        )
        return _ok(ctx, f"table {name} created")
    # CTAS: the query runs through lakeskip (so its own sources are pruned too)
    if cat.table_exists(name):
        if s.if_not_exists:
            return _ok(ctx, f"table {name} already exists")
        cat.create_table(name, RowType(()))  # raises TableAlreadyExistsError
    df = ctx.run_query(s.as_select)
    row_type = RowType(
        tuple(
            Field(i, f.name, from_spark_json(f.dataType.jsonValue()).as_nullable())
            for i, f in enumerate(df.schema.fields)
        )
    )
    # built under a hidden name and published by one rename (lakeskip.catalog.ops.staging): the
    # table never half-exists, and no reader sees it empty
    target = staging_identifier(name) if can_stage(cat) else name
    table = cat.create_table(
        target,
        row_type,
        partition_keys=s.partition_keys,
        options=dict(s.options),
        comment=s.comment,
        primary_keys=s.primary_keys,
    )
    try:
        write_dataframe(table, align_by_position(df, row_type, f"CREATE TABLE {name} AS SELECT"))
        if target != name:
            publish(cat, target, name, replace=False)
    except BaseException:
        cat.drop_table(target, ignore_if_not_exists=True)  # the table must not half-exist
        raise
    return _ok(ctx, f"table {name} created")


# -- INSERT ---------------------------------------------------------------------------------


def _insert(ctx: StatementContext, s: Insert) -> DataFrame:
    name = _ident(ctx, s.ident)
    try:
        table = ctx.catalog.get_table(name)
    except TableNotFoundError:
        if s.sql and ctx.spark.catalog.tableExists(name):  # an ordinary Spark table
            return ctx.spark.sql(s.sql)
        raise
    row_type = table.schema.row_type
    df = ctx.run_query(s.query_sql)
    names = list(df.columns)
    # INSERT is positional: unnamed, duplicate or NULL select items get distinct names first
    df = df.toDF(*[f"_col{i}" for i in range(len(df.columns))])
    static = dict(s.partition or {})
    for key in static:
        if key not in table.schema.partition_keys:
            raise InvalidArgumentError(f"{key} is not a partition column of {name}")
    target_cols = [f.name for f in row_type if f.name not in static]
    if s.by_name:  # INSERT ... BY NAME: the query's column names (missing ones: NULL)
        listed = [row_type.field(c).name for c in names]
        if len(set(listed)) != len(listed):
            raise InvalidArgumentError(f"INSERT INTO {name} BY NAME: a column is given twice")
        by_name = dict(zip(listed, df.columns, strict=True))
    elif s.columns is not None:
        listed = [row_type.field(c).name for c in s.columns]
        if len(listed) != len(df.columns):
            raise InvalidArgumentError(
                f"INSERT INTO {name}: {len(listed)} column(s) listed but the query produces "
                f"{len(df.columns)}"
            )
        by_name = dict(zip(listed, df.columns, strict=True))
    else:
        if len(target_cols) != len(df.columns):
            raise InvalidArgumentError(
                f"INSERT INTO {name}: the query produces {len(df.columns)} column(s), the table "
                f"expects {len(target_cols)} ({', '.join(target_cols)})"
            )
        by_name = dict(zip(target_cols, df.columns, strict=True))
    cols = []
    for f in row_type:
        if f.name in static:
            cols.append(F.lit(static[f.name]).alias(f.name))
        elif f.name in by_name:
            cols.append(F.col(quote_identifier(by_name[f.name])).alias(f.name))
        else:
            cols.append(F.lit(None).cast(f.type.spark_ddl()).alias(f.name))
    aligned = align_by_position(df.select(*cols), row_type, f"INSERT INTO {name}")
    snap = write_dataframe(table, aligned, overwrite=s.overwrite, static_partition=static or None)
    return _write_result(ctx, table, snap)


def _write_result(ctx: StatementContext, table: FileStoreTable, snap: Snapshot | None) -> DataFrame:
    """``rows_written``: the rows of the files the snapshot added (an OVERWRITE's snapshot
    also deletes files, so its ``deltaRecordCount`` -- added minus deleted -- is not it)."""
    if snap is None:
        return _rows(ctx, "snapshot_id BIGINT, rows_written BIGINT", [(None, 0)])
    written = 0
    for meta in read_manifest_list(table.file_io, table.path, snap.delta_manifest_list):
        entries = read_manifest(table.file_io, table.path, meta.file_name, table.partition_types)
        written += sum(e.file.row_count for e in entries if e.kind is FileKind.ADD)
    return _rows(ctx, "snapshot_id BIGINT, rows_written BIGINT", [(snap.id, written)])


# -- DELETE / UPDATE ------------------------------------------------------------------------


def _dml_target(ctx: StatementContext, s: Delete | Update | Merge) -> FileStoreTable | None:
    """The lakeskip target, or ``None`` for an ordinary Spark table (Spark runs the statement)."""
    name = _ident(ctx, s.ident)
    try:
        return ctx.catalog.get_table(name)
    except TableNotFoundError:
        if s.sql and ctx.spark.catalog.tableExists(name):  # an ordinary Spark table
            return None
        raise


def _dml(ctx: StatementContext, s: Delete | Update) -> DataFrame:
    table = _dml_target(ctx, s)
    if table is None:
        return ctx.spark.sql(s.sql)
    if isinstance(s, Delete):
        assigned, counted = None, "rows_deleted"
    else:
        assigned, counted = resolve_set(table, s.assignments), "rows_updated"
    result = run_dml(DmlRequest(ctx.spark, table, s.condition, assigned, s.alias, ctx.time_zone))
    ctx.reports = [result.report] if result.report is not None else []
    return _rows(
        ctx,
        f"snapshot_id BIGINT, {counted} BIGINT, files_rewritten INT, files_marked INT, "
        "files_added INT",
        [
            (
                result.snapshot_id,
                result.rows,
                result.files_rewritten,
                result.files_marked,
                result.files_added,
            )
        ],
    )


def _merge(ctx: StatementContext, s: Merge) -> DataFrame:
    table = _dml_target(ctx, s)
    if table is None:
        return ctx.spark.sql(s.sql)
    source = ctx.run_query(s.source_sql)  # through lakeskip: its own tables are pruned too
    clauses = (s.matched, s.not_matched, s.not_matched_by_source)
    request = MergeRequest(
        ctx.spark, table, source, s.on, s.source_alias, s.alias, *clauses, time_zone=ctx.time_zone
    )
    result = run_merge(request)
    ctx.reports = [result.report] if result.report is not None else []
    return _rows(
        ctx,
        "snapshot_id BIGINT, rows_updated BIGINT, rows_deleted BIGINT, rows_inserted BIGINT, "
        "files_rewritten INT, files_marked INT, files_added INT",
        [
            (
                result.snapshot_id,
                result.updated,
                result.deleted,
                result.inserted,
                result.files_rewritten,
                result.files_marked,
                result.files_added,
            )
        ],
    )


def run_catalog_dml(
    catalog: Catalog, spark: SparkSession, sql: str, database: str, name: str
) -> list[PruningReport]:
    """A DELETE / UPDATE / MERGE INTO that plain ``spark.sql`` planned on the lakeskip table
    ``database.name`` (the catalog's ``LakeDmlStrategy``): the statement text is parsed here
    and runs exactly as through ``Session.sql``; other table names in it (a MERGE source, a
    subquery) resolve in Spark as the user wrote them."""
    statement = parse_dml(sql)
    if not isinstance(statement, (Delete, Update, Merge)):
        assert isinstance(statement, OtherTableStatement)
        raise UnsupportedStatementError(
            f"{statement.what} is not supported on lakeskip table {database}.{name}"
        )
    target = replace(statement, ident=TableIdent(database, name), sql="")
    ctx = StatementContext(catalog, spark, database, run_query=spark.sql)
    if isinstance(target, Merge):
        _merge(ctx, target)
    else:
        _dml(ctx, target)
    return ctx.reports or []


# -- DESCRIBE / SHOW CREATE -----------------------------------------------------------------


def _describe(ctx: StatementContext, s: DescribeTable) -> DataFrame:
    if (spark_name := _spark_table(ctx, s.ident)) is not None:
        verb = "DESCRIBE TABLE EXTENDED" if s.extended else "DESCRIBE TABLE"
        return ctx.spark.sql(f"{verb} {spark_name}")
    name = _ident(ctx, s.ident)
    rows = describe_rows(name, ctx.catalog.get_table(name), s.extended)
    return _rows(ctx, "col_name STRING, data_type STRING, comment STRING", rows)


def _show_create_table(ctx: StatementContext, s: ShowCreateTable) -> DataFrame:
    if (spark_name := _spark_table(ctx, s.ident)) is not None:
        return ctx.spark.sql(f"SHOW CREATE TABLE {spark_name}")
    name = _ident(ctx, s.ident)
    text = show_create_text(name, ctx.catalog.get_table(name).schema)
    return _rows(ctx, "createtab_stmt STRING", [(text,)])


# -- EXPLAIN --------------------------------------------------------------------------------


def _explain(ctx: StatementContext, s: Explain) -> DataFrame:
    from lakeskip.spark.read.query import plan_query, run_planned

    if ctx.plan_native is not None:  # the catalog's own planning, as the query would run
        df, reports = ctx.plan_native(s.query)
    else:
        planned = plan_query(ctx.spark, ctx.catalog, s.query, ctx.current_database, ctx.time_zone)
        df, reports = run_planned(ctx.spark, planned), planned.reports
    ctx.reports = reports
    rows: list[tuple[str, str, str]] = []
    for r in reports:
        rows += [(r.table, k, v) for k, v in r.lines()]
    if s.pruning:
        return _rows(ctx, "table STRING, metric STRING, value STRING", rows)
    spark_plan = df._jdf.queryExecution().toString()
    text = "\n".join(f"{t}: {k} = {v}" for t, k, v in rows)
    return _rows(ctx, "plan STRING", [(text + ("\n\n" if text else "") + spark_plan,)])


# -- CALL -----------------------------------------------------------------------------------


def call_procedure(
    ctx: StatementContext, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> DataFrame:
    """Run ``CALL <name>(args, kwargs)`` and return its result row(s)."""
    from lakeskip.procedures.base import run_procedure
    from lakeskip.procedures.registry import get_procedure
    from lakeskip.spark.write.executor import SparkExecutor

    procedure = get_procedure(name)
    bound = procedure.bind_arguments(args, kwargs)
    result = run_procedure(
        procedure,
        catalog=ctx.catalog,
        executor=SparkExecutor(ctx.spark),
        arguments=bound,
        default_database=ctx.current_database,
    )
    return _rows(ctx, result.spark_schema(), result.rows())


# -- the routing table ----------------------------------------------------------------------

#: statement type -> its handler. Every statement type the parser makes has one, and a
#: ``HELP`` row (:mod:`lakeskip.sql.help`): tests/unit/spark/front/test_statement_routing.py
HANDLERS: Mapping[type[Statement], Callable[[StatementContext, Any], DataFrame]] = {
    Query: _query,
    Explain: _explain,
    CreateTable: _create_table,
    Insert: _insert,
    AlterTableSetOptions: _set_options,
    AlterTableUnsetOptions: _unset_options,
    AlterTableColumns: _table_statement,
    RenameTable: _table_statement,
    TruncateTable: _table_statement,
    OtherTableStatement: _table_statement,
    DropTable: _drop_table,
    DescribeTable: _describe,
    ShowCreateTable: _show_create_table,
    ShowTables: _show_tables,
    ShowDatabases: _show_databases,
    CreateDatabase: _create_database,
    DropDatabase: _drop_database,
    UseDatabase: _use_database,
    Call: _call,
    Delete: _dml,
    Update: _dml,
    Merge: _merge,
    Help: _help,
    Passthrough: _passthrough,
}
