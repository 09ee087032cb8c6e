"""The typed statements :mod:`lakeskip.sql.statements` parses SQL into (frozen dataclasses;
:class:`Query` keeps its sqlglot tree for the table rewriting of :mod:`lakeskip.sql.query`).
Import them from here; :mod:`lakeskip.sql.statements` holds the parser."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from lakeskip.catalog.schema_evolution import SchemaChange
from lakeskip.errors import SqlParseError, UnsupportedStatementError
from lakeskip.types import DataType, split_identifier

__all__ = [
    "DIALECT",
    "IDENTIFIER",
    "MULTIPART_IDENTIFIER",
    "AlterTableColumns",
    "AlterTableSetOptions",
    "AlterTableUnsetOptions",
    "Call",
    "ColumnDef",
    "CreateDatabase",
    "CreateTable",
    "Delete",
    "DescribeTable",
    "DropDatabase",
    "DropTable",
    "Explain",
    "Help",
    "Insert",
    "OtherTableStatement",
    "Passthrough",
    "Query",
    "RenameTable",
    "ShowCreateTable",
    "ShowDatabases",
    "ShowTables",
    "Statement",
    "TableIdent",
    "TruncateTable",
    "Update",
    "UseDatabase",
]


#: the sqlglot dialect statements are parsed and printed in
DIALECT = "spark"

# one SQL identifier part inside a regular expression: a bare word, or backquoted (a doubled
# backquote inside); MULTIPART_IDENTIFIER: parts joined by dots (read a match with
# lakeskip.types.split_identifier)
IDENTIFIER = r"(?:`(?:[^`]|``)*`|\w+)"
MULTIPART_IDENTIFIER = rf"{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER})*"


@dataclass(frozen=True, slots=True)
class TableIdent:
    database: str | None
    name: str

    @classmethod
    def of(cls, table: exp.Expression) -> TableIdent:
        """The name of a table node of a parsed statement (``db.t`` or ``t``)."""
        if isinstance(table, exp.Schema):
            table = table.this
        if not isinstance(table, exp.Table) or not table.name:
            raise SqlParseError(f"expected a table name, got {table.sql(DIALECT)!r}")
        if table.catalog:
            raise UnsupportedStatementError(
                f"catalog-qualified names are not supported: {table.sql(DIALECT)}"
            )
        return cls(table.db or None, table.name)

    @classmethod
    def parse(cls, name: str) -> TableIdent:
        """``db.t`` / ``t`` as matched by :data:`MULTIPART_IDENTIFIER` (parts read by
        :func:`~lakeskip.types.split_identifier`: a quoted dot is part of a name)."""
        parts = split_identifier(name)
        if len(parts) == 1:
            return cls(None, parts[0])
        if len(parts) == 2:
            return cls(parts[0], parts[1])
        raise UnsupportedStatementError(f"catalog-qualified names are not supported: {name}")

    def qualified(self, default_db: str) -> str:
        return f"{self.database or default_db}.{self.name}"

    def __str__(self) -> str:
        return f"{self.database}.{self.name}" if self.database else self.name


class Statement:
    """Base of every parsed statement."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ColumnDef:
    name: str
    type: DataType
    comment: str | None = None
    nullable: bool = True


@dataclass(frozen=True, slots=True)
class CreateDatabase(Statement):
    name: str
    if_not_exists: bool = False
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class DropDatabase(Statement):
    name: str
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True, slots=True)
class ShowDatabases(Statement):
    pass


@dataclass(frozen=True, slots=True)
class UseDatabase(Statement):
    name: str


@dataclass(frozen=True, slots=True)
class CreateTable(Statement):
    ident: TableIdent
    columns: tuple[ColumnDef, ...]
    partition_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    if_not_exists: bool = False
    comment: str | None = None
    as_select: str | None = None
    primary_keys: tuple[str, ...] = ()
    #: the Spark catalog the name was qualified with (``lakeskip.db.t``), if any
    catalog: str | None = None


@dataclass(frozen=True, slots=True)
class AlterTableSetOptions(Statement):
    ident: TableIdent
    options: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class AlterTableUnsetOptions(Statement):
    ident: TableIdent
    keys: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class AlterTableColumns(Statement):
    """``ALTER TABLE t ADD|DROP|RENAME|ALTER COLUMN ...``: Paimon schema changes, in order."""

    ident: TableIdent
    changes: tuple[SchemaChange, ...]
    sql: str = ""


@dataclass(frozen=True, slots=True)
class RenameTable(Statement):
    ident: TableIdent
    new_ident: TableIdent
    sql: str = ""


@dataclass(frozen=True, slots=True)
class TruncateTable(Statement):
    ident: TableIdent
    sql: str = ""


@dataclass(frozen=True, slots=True)
class OtherTableStatement(Statement):
    """A statement on one table that lakeskip does not implement (UPDATE, DELETE, MERGE,
    ALTER TABLE DROP COLUMN, ...): an error on a lakeskip table, Spark's on any other."""

    ident: TableIdent
    what: str
    sql: str = ""


@dataclass(frozen=True, slots=True)
class Delete(Statement):
    """``DELETE FROM t [[AS] alias] [WHERE condition]``: ``condition`` is Spark SQL (``None``:
    every row)."""

    ident: TableIdent
    alias: str | None
    condition: str | None
    sql: str = ""


@dataclass(frozen=True, slots=True)
class Update(Statement):
    """``UPDATE t [[AS] alias] SET c = expr, ... [WHERE condition]``: the assignments are
    ``(column, Spark SQL expression)`` pairs; ``condition`` ``None`` means every row."""

    ident: TableIdent
    alias: str | None
    assignments: tuple[tuple[str, str], ...]
    condition: str | None
    sql: str = ""


@dataclass(frozen=True, slots=True)
class DropTable(Statement):
    ident: TableIdent
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class ShowTables(Statement):
    database: str | None = None


@dataclass(frozen=True, slots=True)
class DescribeTable(Statement):
    ident: TableIdent
    extended: bool = False


@dataclass(frozen=True, slots=True)
class ShowCreateTable(Statement):
    ident: TableIdent


@dataclass(frozen=True, slots=True)
class Insert(Statement):
    ident: TableIdent
    overwrite: bool
    partition: Mapping[str, Any] | None
    columns: tuple[str, ...] | None
    query_sql: str
    sql: str = ""
    by_name: bool = False  # INSERT ... BY NAME: the query's column names pick the columns


@dataclass(frozen=True, slots=True)
class Call(Statement):
    procedure: str  # sys.<name>
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    catalog: str | None = None  # CALL <catalog>.sys.<name>(...): that catalog's procedure

    def spark_sql(self, catalog: str) -> str:
        """This call as Spark SQL on ``catalog``.

        >>> print(Call("sys.compact", ("x",), {"table": "db.t", "full": True}).spark_sql("lk2"))
        CALL `lk2`.sys.compact('x', table => 'db.t', full => true)
        """
        args = [_spark_literal(a) for a in self.args]
        args += [f"{k} => {_spark_literal(v)}" for k, v in self.kwargs.items()]
        quoted = "`" + catalog.replace("`", "``") + "`"
        return f"CALL {quoted}.{self.procedure}({', '.join(args)})"


def _spark_literal(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True, slots=True)
class Query(Statement):
    sql: str
    tree: exp.Expression = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Explain(Statement):
    query: Query
    pruning: bool = False


@dataclass(frozen=True, slots=True)
class Help(Statement):
    """``HELP``: what the shell understands."""


@dataclass(frozen=True, slots=True)
class Passthrough(Statement):
    sql: str
