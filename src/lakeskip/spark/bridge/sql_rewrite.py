"""Paimon-style statements Spark's own parser rejects, rewritten into Spark SQL on the catalog.

Used by the ``LakeParser`` session extension: Spark parses first, and only a statement it
rejects (``CREATE TABLE ... WITH ('k'='v')``), or a ``CALL sys.x(...)`` without a catalog,
comes here. The statement is parsed by lakeskip's sqlglot layer (:mod:`lakeskip.sql`) and
printed back as Spark SQL against a lakeskip catalog. Every clause lakeskip parsed is printed
back (the primary key as Paimon's ``'primary-key'`` option); a CREATE TABLE lakeskip cannot
keep whole (an unsupported clause) raises its typed error instead of Spark's syntax error.

>>> rewrite_for_spark("CREATE TABLE db.t (id BIGINT, s STRING) WITH ('a'='b')", ["lakeskip"])
"CREATE TABLE lakeskip.db.t (`id` BIGINT, `s` STRING) TBLPROPERTIES ('a' = 'b')"
>>> rewrite_for_spark("CREATE TABLE t (id INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('a'='b')",
...                   ["lakeskip"], current_catalog="lakeskip")
"CREATE TABLE t (`id` INT) TBLPROPERTIES ('a' = 'b', 'primary-key' = 'id')"
>>> rewrite_for_spark("CALL sys.compact(table => 'db.t')", ["lakeskip"])
"CALL `lakeskip`.sys.compact(table => 'db.t')"
>>> rewrite_for_spark("CREATE TABLE lake2.db.t (id INT) WITH ('a'='b')", ["lakeskip", "lake2"])
"CREATE TABLE lake2.db.t (`id` INT) TBLPROPERTIES ('a' = 'b')"
>>> rewrite_for_spark("SELEC 1", ["lakeskip"]) is None
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pyspark.sql import SparkSession

from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.pk.primary_key import PRIMARY_KEY_OPTION
from lakeskip.errors import InvalidArgumentError, LakeskipError, SqlParseError
from lakeskip.sql.statements import Call, CreateTable, parse_statements
from lakeskip.types import quote_identifier, quote_sql_string

__all__ = ["create_table_sql", "lakeskip_catalogs", "rewrite_for_spark", "show_create_sql"]

_CATALOG_CLASSES = ("lakeskip.jvm.LakeCatalog", "lakeskip.jvm.LakeSessionCatalog")


def _target(s: CreateTable, catalogs: Sequence[str], current: str | None) -> tuple[str, str]:
    """(the catalog the table is created in, the name to print): a catalog-qualified name
    stays in its catalog; an unqualified one in the current catalog when that is a lakeskip
    catalog (Spark resolves the name as it would any other), else in ``lakeskip``."""
    ident = s.ident
    if s.catalog is not None:
        if s.catalog not in catalogs:
            raise InvalidArgumentError(
                f"CREATE TABLE {s.catalog}.{ident}: {s.catalog} is not a lakeskip catalog, "
                f"so Paimon's WITH (...) has no meaning there (lakeskip catalogs: "
                f"{', '.join(catalogs)})"
            )
        return s.catalog, f"{s.catalog}.{ident.database or 'default'}.{ident.name}"
    if current is not None and current in catalogs:
        return current, str(ident)
    catalog = "lakeskip" if "lakeskip" in catalogs else catalogs[0]
    name = f"{ident.database or 'default'}.{ident.name}"
    return catalog, name if catalog == "spark_catalog" else f"{catalog}.{name}"


def _options(s: CreateTable) -> dict[str, str]:
    """The table's options, with the PRIMARY KEY clause as Paimon's ``primary-key`` option."""
    options = dict(s.options)
    if s.primary_keys:
        keys = ",".join(s.primary_keys)
        given = options.get(PRIMARY_KEY_OPTION)
        if given is not None and [k.strip().lower() for k in given.split(",")] != [
            k.lower() for k in s.primary_keys
        ]:
            raise InvalidArgumentError(
                f"primary key given twice: ({', '.join(s.primary_keys)}) and option "
                f"'{PRIMARY_KEY_OPTION}' = {given!r}"
            )
        options[PRIMARY_KEY_OPTION] = keys
    return options


def lakeskip_catalogs(spark: SparkSession, names: Iterable[str]) -> list[str]:
    """Those of ``names`` (and ``spark_catalog``) that are lakeskip catalogs in ``spark``."""
    out: list[str] = []
    for name in [*names, "spark_catalog"]:
        if name not in out and spark.conf.get(f"spark.sql.catalog.{name}", None) in (
            _CATALOG_CLASSES
        ):
            out.append(name)
    return out


def create_table_sql(s: CreateTable, catalogs: Sequence[str], current: str | None = None) -> str:
    """Spark SQL that creates the table ``s`` describes in one of the lakeskip ``catalogs``."""
    catalog, name = _target(s, catalogs, current)
    session_catalog = catalog == "spark_catalog"
    parts = ["CREATE TABLE"]
    if s.if_not_exists:
        parts.append("IF NOT EXISTS")
    parts.append(name)
    if s.columns:
        cols = []
        for c in s.columns:
            col = f"{quote_identifier(c.name)} {c.type.spark_ddl()}"
            if not c.nullable:
                col += " NOT NULL"
            if c.comment:
                col += f" COMMENT {quote_sql_string(c.comment)}"
            cols.append(col)
        parts.append("(" + ", ".join(cols) + ")")
    if session_catalog:
        parts.append("USING lakeskip")
    if s.comment:
        parts.append(f"COMMENT {quote_sql_string(s.comment)}")
    if s.partition_keys:
        parts.append(
            "PARTITIONED BY (" + ", ".join(quote_identifier(k) for k in s.partition_keys) + ")"
        )
    options = _options(s)
    if options:
        props = ", ".join(
            f"{quote_sql_string(k)} = {quote_sql_string(v)}" for k, v in options.items()
        )
        parts.append(f"TBLPROPERTIES ({props})")
    if s.as_select:
        parts.append(f"AS {s.as_select}")
    return " ".join(parts)


def show_create_sql(name: Sequence[str], schema: TableSchema) -> str:
    """Spark SQL that recreates a table with ``schema`` as ``name`` (catalog, database,
    table) through plain ``spark.sql``: columns with NOT NULL and comments, the primary key
    as Paimon's ``primary-key`` option, partitioning, the table comment and its options.

    >>> from lakeskip.types import Field, RowType, parse_sql_type
    >>> cols = RowType((Field(0, "id", parse_sql_type("BIGINT NOT NULL")),
    ...                 Field(1, "dt", parse_sql_type("STRING"))))
    >>> print(show_create_sql(["lakeskip", "db", "t"], TableSchema.create(
    ...     0, cols, ["dt"], {"bucket": "2"}, None, primary_keys=["id", "dt"])))
    CREATE TABLE `lakeskip`.`db`.`t` (
      `id` BIGINT NOT NULL,
      `dt` STRING)
    USING lakeskip
    PARTITIONED BY (`dt`)
    TBLPROPERTIES (
      'bucket' = '2',
      'primary-key' = 'id,dt')
    """
    quoted = ".".join(quote_identifier(part) for part in name)
    columns = ",\n".join(f"  {f.spark_ddl()}" for f in schema.fields)
    text = f"CREATE TABLE {quoted} (\n{columns})\nUSING lakeskip"
    if schema.partition_keys:
        keys = ", ".join(quote_identifier(k) for k in schema.partition_keys)
        text += f"\nPARTITIONED BY ({keys})"
    if schema.comment:
        text += f"\nCOMMENT {quote_sql_string(schema.comment)}"
    options = dict(schema.options)
    if schema.primary_keys:
        options[PRIMARY_KEY_OPTION] = ",".join(schema.primary_keys)
    if options:
        props = ",\n".join(
            f"  {quote_sql_string(k)} = {quote_sql_string(v)}" for k, v in sorted(options.items())
        )
        text += f"\nTBLPROPERTIES (\n{props})"
    return text


def _call(s: Call, catalog: str) -> str | None:
    if s.catalog is not None or catalog == "spark_catalog":
        return None  # already routable as written (CALL lk2.sys.x goes to lk2)
    if not s.procedure.lower().startswith("sys."):
        return None
    return s.spark_sql(catalog)


_CREATE_TABLE = re.compile(r"(?is)^\s*CREATE\s+(?:OR\s+REPLACE\s+)?TABLE\b")


def rewrite_for_spark(
    sql: str, catalogs: Sequence[str], current_catalog: str | None = None
) -> str | None:
    """Spark SQL for ``sql`` on one of the lakeskip ``catalogs`` (see :func:`_target`), or
    ``None`` when there is nothing to rewrite (Spark then reports its own syntax error).

    Raises:
        LakeskipError: a CREATE TABLE lakeskip parsed but cannot keep whole (an unsupported
            clause, an unknown type, a key given twice, a catalog that is not lakeskip's).
    """
    if not catalogs:
        return None
    try:
        statements = parse_statements(sql)
    except SqlParseError:
        return None
    except LakeskipError:
        if _CREATE_TABLE.match(sql):
            raise
        return None
    if len(statements) != 1:
        return None
    s = statements[0]
    if isinstance(s, CreateTable):
        return create_table_sql(s, catalogs, current_catalog)
    if isinstance(s, Call):
        # CALL sys.x runs in the current catalog when it is a lakeskip one (as Paimon's)
        if current_catalog is not None and current_catalog in catalogs:
            return _call(s, current_catalog)
        return _call(s, "lakeskip" if "lakeskip" in catalogs else catalogs[0])
    return None
