"""The DDL parsers of :mod:`lakeskip.sql.statements`: CREATE DATABASE / TABLE and ALTER TABLE
(SET / UNSET options, ADD COLUMNS, RENAME) from their sqlglot trees, into the statements of
:mod:`lakeskip.sql.statement_types`. A clause lakeskip would ignore on one of its tables is an
error, never dropped.

Example:
    >>> import sqlglot
    >>> t = sqlglot.parse_one("CREATE TABLE t (k INT PRIMARY KEY, v STRING)", read=DIALECT)
    >>> s = create_table(t, "")
    >>> [c.name for c in s.columns], s.primary_keys
    (['k', 'v'], ('k',))
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

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
from lakeskip.errors import SqlParseError, TypeMismatchError, UnsupportedStatementError
from lakeskip.sql.literals import literal_value
from lakeskip.sql.statement_types import (
    DIALECT,
    IDENTIFIER,
    MULTIPART_IDENTIFIER,
    AlterTableColumns,
    AlterTableSetOptions,
    AlterTableUnsetOptions,
    ColumnDef,
    CreateDatabase,
    CreateTable,
    OtherTableStatement,
    Passthrough,
    RenameTable,
    Statement,
    TableIdent,
)
from lakeskip.types import parse_sql_type, split_identifier

__all__ = [
    "alter_table",
    "create_database",
    "create_table",
    "parse_column_position",
    "parse_unset",
]

#: ``USING`` formats that make a lakeskip table (any other goes to Spark as it is)
OUR_FORMATS = {"paimon", "lakeskip"}


def create_database(tree: exp.Create) -> Statement:
    """``CREATE DATABASE|SCHEMA [IF NOT EXISTS] name [COMMENT '...']``."""
    t = tree.this
    name = t.name or t.db
    props = tree.args.get("properties")
    for p in props.expressions if props is not None else []:
        if not isinstance(p, exp.SchemaCommentProperty):  # LOCATION, WITH DBPROPERTIES
            raise UnsupportedStatementError(
                f"CREATE DATABASE {name}: {p.sql(DIALECT)} is not supported "
                "(databases live in the warehouse)"
            )
    return CreateDatabase(name, bool(tree.args.get("exists")), _comment(tree))


def _comment(tree: exp.Expression) -> str | None:
    props = tree.args.get("properties")
    if props is None:
        return None
    for p in props.expressions:
        if isinstance(p, exp.SchemaCommentProperty):
            return str(p.this.name)
    return None


def _props_to_options(props: list[exp.Expression]) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in props:
        if isinstance(p, exp.Property):
            key = p.this.name if isinstance(p.this, exp.Expression) else str(p.this)
            value = p.args.get("value")
        elif isinstance(p, exp.EQ):
            key, value = p.this.name, p.expression
        else:
            continue
        if value is None:
            raise SqlParseError(f"option {key!r} has no value")
        v = literal_value(value) if isinstance(value, exp.Expression) else value
        out[str(key)] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def create_table(tree: exp.Create, text: str) -> Statement:
    schema = tree.this
    table = schema.this if isinstance(schema, exp.Schema) else schema
    catalog = table.catalog if isinstance(table, exp.Table) and table.catalog else None
    if catalog is not None:  # lakeskip.db.t: the caller decides whether it names a lakeskip catalog
        table = table.copy()
        table.set("catalog", None)
    ident = TableIdent.of(table)
    props = tree.args.get("properties")
    prop_list = list(props.expressions) if props is not None else []
    options: dict[str, str] = {}
    partition_keys: list[str] = []
    extra_cols: list[ColumnDef] = []
    unsupported: list[exp.Expression] = []
    comment = None
    for p in prop_list:
        if isinstance(p, exp.FileFormatProperty):
            fmt = (p.this.name if isinstance(p.this, exp.Expression) else str(p.this)).lower()
            if fmt not in OUR_FORMATS:
                return Passthrough(text)
        elif isinstance(p, exp.PartitionedByProperty):
            for c in (
                p.this.expressions if isinstance(p.this, (exp.Schema, exp.Tuple)) else [p.this]
            ):
                if isinstance(c, exp.ColumnDef):
                    extra_cols.append(_column_def(c))
                    partition_keys.append(c.name)
                elif isinstance(c, (exp.Column, exp.Identifier)):
                    partition_keys.append(c.name)
                else:  # days(ts), bucket(4, id), ...: transforms Paimon has no layout for
                    raise UnsupportedStatementError(
                        f"CREATE TABLE {ident}: PARTITIONED BY {c.sql(DIALECT)} is not "
                        "supported (partition by columns)"
                    )
        elif isinstance(p, exp.SchemaCommentProperty):
            comment = str(p.this.name)
        elif type(p) is exp.Property:  # 'key' = 'value' (subclasses are other clauses)
            options.update(_props_to_options([p]))
        elif isinstance(p, exp.LocationProperty):
            raise UnsupportedStatementError(
                "LOCATION is not supported: tables live in the warehouse"
            )
        elif isinstance(p, (exp.TemporaryProperty,)):
            return Passthrough(text)
        elif isinstance(p, exp.OptionsProperty):  # USING paimon OPTIONS (...)
            options.update(_props_to_options(list(p.expressions)))
        else:
            unsupported.append(p)
    # a lakeskip table from here on: a clause it would ignore is an error, never dropped
    if unsupported:
        clause = unsupported[0].sql(DIALECT)
        raise UnsupportedStatementError(f"CREATE TABLE {ident}: {clause} is not supported")
    if tree.args.get("replace"):
        raise UnsupportedStatementError(
            f"CREATE OR REPLACE TABLE {ident} is not supported (DROP TABLE, then CREATE TABLE)"
        )
    columns: list[ColumnDef] = []
    primary_keys: list[str] = []
    if isinstance(schema, exp.Schema):
        for c in schema.expressions:
            if isinstance(c, exp.ColumnDef):
                columns.append(_column_def(c, allow_primary_key=True))
                if _is_primary_key_column(c):
                    primary_keys.append(c.name)
            elif isinstance(c, (exp.PrimaryKey, exp.Constraint)):
                keys = _primary_key_columns(c)
                if primary_keys:
                    raise SqlParseError(f"CREATE TABLE {ident}: more than one PRIMARY KEY")
                primary_keys.extend(keys)
    columns += extra_cols
    as_select = tree.expression.sql(DIALECT) if tree.expression is not None else None
    if as_select is None and not columns:
        raise SqlParseError(f"CREATE TABLE {ident} needs a column list or AS SELECT")
    return CreateTable(
        ident=ident,
        columns=tuple(columns),
        partition_keys=tuple(partition_keys),
        options=options,
        if_not_exists=bool(tree.args.get("exists")),
        comment=comment,
        as_select=as_select,
        primary_keys=tuple(primary_keys),
        catalog=catalog,
    )


def _is_primary_key_column(c: exp.ColumnDef) -> bool:
    return any(
        isinstance(cons.args.get("kind"), exp.PrimaryKeyColumnConstraint)
        for cons in c.args.get("constraints") or []
    )


def _primary_key_columns(c: exp.Expression) -> list[str]:
    """``PRIMARY KEY (a, b) [NOT ENFORCED]`` or ``CONSTRAINT name PRIMARY KEY (a, b)``."""
    pk = c if isinstance(c, exp.PrimaryKey) else None
    if pk is None:
        found = [e for e in c.expressions if isinstance(e, exp.PrimaryKey)]
        if len(found) != 1 or len(c.expressions) != 1:
            raise UnsupportedStatementError(
                f"{c.sql(DIALECT)} is not supported (only PRIMARY KEY constraints)"
            )
        pk = found[0]
    for o in pk.args.get("options") or []:
        text = (o.sql(DIALECT) if isinstance(o, exp.Expression) else str(o)).upper()
        if text != "NOT ENFORCED":
            raise UnsupportedStatementError(f"PRIMARY KEY option {text} is not supported")
    cols = [e.name for e in pk.expressions]
    if not cols or any(not n for n in cols):
        raise SqlParseError(f"{pk.sql(DIALECT)}: expected PRIMARY KEY (column, ...)")
    return cols


def _column_def(c: exp.ColumnDef, allow_primary_key: bool = False) -> ColumnDef:
    kind = c.args.get("kind")
    if kind is None:
        raise SqlParseError(f"column {c.name} has no type")
    try:
        dtype = parse_sql_type(kind.sql(DIALECT))
    except TypeMismatchError as e:
        raise TypeMismatchError(f"column {c.name}: {e}") from e
    nullable, comment = True, None
    for cons in c.args.get("constraints") or []:
        k = cons.args.get("kind")
        if isinstance(k, exp.NotNullColumnConstraint) and not k.args.get("allow_null"):
            nullable = False
        elif isinstance(k, exp.CommentColumnConstraint):
            comment = str(k.this.name)
        elif isinstance(k, exp.PrimaryKeyColumnConstraint):
            if not allow_primary_key:
                raise UnsupportedStatementError(
                    f"column {c.name}: PRIMARY KEY is only allowed in CREATE TABLE"
                )
            for o in k.args.get("options") or []:
                text = (o.sql(DIALECT) if isinstance(o, exp.Expression) else str(o)).upper()
                if text != "NOT ENFORCED":
                    raise UnsupportedStatementError(f"PRIMARY KEY option {text} is not supported")
        elif not (isinstance(k, exp.NotNullColumnConstraint) and k.args.get("allow_null")):
            raise UnsupportedStatementError(
                f"column {c.name}: {cons.sql(DIALECT)} is not supported (only NOT NULL, COMMENT)"
            )
    return ColumnDef(c.name, dtype, comment, nullable)


def alter_table(tree: exp.Alter, text: str) -> Statement:
    if (tree.args.get("kind") or "").upper() != "TABLE":
        return Passthrough(text)
    actions = tree.args.get("actions") or []
    if len(actions) == 1 and isinstance(actions[0], exp.AlterSet):
        items: list[exp.Expression] = []
        for e in actions[0].expressions:
            items += list(e.expressions) if isinstance(e, exp.Properties) else [e]
        opts = _props_to_options(items)
        if opts:
            return AlterTableSetOptions(TableIdent.of(tree.this), opts)
    ident = TableIdent.of(tree.this)
    if len(actions) == 1 and isinstance(actions[0], exp.AlterRename):
        return RenameTable(ident, TableIdent.of(actions[0].this), text)
    changes: list[SchemaChange] = []
    for a in actions:
        got = _column_changes(a)
        if got is None:
            return OtherTableStatement(ident, "ALTER TABLE " + _action_name(actions), text)
        changes += got
    if changes:
        return AlterTableColumns(ident, tuple(changes), text)
    return OtherTableStatement(ident, "ALTER TABLE " + _action_name(actions), text)


def _path(e: exp.Expression) -> tuple[str, ...]:
    """``a`` / ``st.x`` (a Column, Dot or Identifier) as a column path."""
    if isinstance(e, exp.Identifier):
        return (e.name,)
    if isinstance(e, exp.Dot):
        return (*_path(e.this), *_path(e.expression))
    if isinstance(e, exp.Column):
        return tuple(p.name for p in e.parts)
    raise UnsupportedStatementError(f"not a column name: {e.sql(DIALECT)}")


def _move(position: exp.Expression | None) -> Move | None:
    if not isinstance(position, exp.ColumnPosition):
        return None
    where = str(position.args.get("position") or "").upper()
    if where == "FIRST":
        return Move.first()
    if where == "AFTER" and position.this is not None:
        return Move.after(_path(position.this)[-1])
    raise UnsupportedStatementError(f"column position {position.sql(DIALECT)} is not supported")


def _column_changes(a: exp.Expression) -> list[SchemaChange] | None:
    """One ALTER action as schema changes; None: not a column change lakeskip knows."""
    if isinstance(a, (exp.ColumnDef, exp.Schema)):
        out: list[SchemaChange] = []
        for c in a.expressions if isinstance(a, exp.Schema) else [a]:
            if not isinstance(c, exp.ColumnDef):
                return None
            path = _path(c.this)
            plain = c.copy()
            plain.set("this", exp.to_identifier(path[-1]))
            plain.set("position", None)
            d = _column_def(plain)
            dtype = d.type if d.nullable else d.type.with_nullable(False)
            out.append(AddColumn(path, dtype, d.comment, _move(c.args.get("position"))))
        return out
    if isinstance(a, exp.RenameColumn):
        to = a.args.get("to")
        if to is None:
            return None
        return [RenameColumn(_path(a.this), _path(to)[-1])]
    if isinstance(a, exp.Drop) and str(a.args.get("kind") or "").upper() in ("COLUMN", "COLUMNS"):
        paths: list[tuple[str, ...]] = []
        for t in a.args.get("tables") or []:
            items = t.expressions if isinstance(t, exp.Schema) else [t]
            paths += [_path(i) for i in items]
        return [DropColumn(p) for p in paths]
    if isinstance(a, exp.AlterColumn):
        path = _path(a.this)
        if a.args.get("default") is not None:
            return None
        changes: list[SchemaChange] = []
        rename_to = a.args.get("rename_to")  # Hive's CHANGE COLUMN a b TYPE
        if isinstance(rename_to, exp.Identifier) and rename_to.name != path[-1]:
            changes.append(RenameColumn(path, rename_to.name))
            path = (*path[:-1], rename_to.name)
        kind = a.args.get("dtype")
        if isinstance(kind, exp.DataType):
            try:
                changes.append(UpdateColumnType(path, parse_sql_type(kind.sql(DIALECT))))
            except TypeMismatchError as e:
                raise TypeMismatchError(f"column {'.'.join(path)}: {e}") from e
        comment = a.args.get("comment")
        if isinstance(comment, exp.Literal):
            changes.append(UpdateColumnComment(path, str(comment.this)))
        if a.args.get("drop") and a.args.get("allow_null"):
            changes.append(UpdateColumnNullability(path, True))
        elif a.args.get("allow_null") is False and not a.args.get("drop"):
            changes.append(UpdateColumnNullability(path, False))
        return changes or None
    return None


def _action_name(actions: list[exp.Expression]) -> str:
    if not actions:
        return "(unknown action)"
    a = actions[0]
    words = {
        "Drop": "DROP COLUMN",
        "RenameColumn": "RENAME COLUMN",
        "AlterColumn": "ALTER COLUMN",
        "AlterSet": "SET",
    }
    return words.get(type(a).__name__, a.sql(DIALECT).split("(")[0].strip().upper()[:40])


_POSITION = re.compile(
    rf"(?is)^ALTER\s+TABLE\s+(?P<t>{MULTIPART_IDENTIFIER})\s+(?:ALTER|CHANGE)\s+(?:COLUMN\s+)?"
    rf"(?P<c>{MULTIPART_IDENTIFIER})\s+(?:(?P<first>FIRST)|AFTER\s+(?P<after>{IDENTIFIER}))\s*;?\s*$"
)


def parse_column_position(text: str) -> Statement | None:
    """``ALTER TABLE t ALTER COLUMN c FIRST | AFTER b`` (Spark's syntax; sqlglot has no node
    for it); anything else: ``None``.

    >>> parse_column_position("ALTER TABLE t ALTER COLUMN c AFTER b").changes
    (UpdateColumnPosition(path=('c',), move=Move(kind='AFTER', reference='b')),)
    """
    m = _POSITION.match(text.strip())
    if not m:
        return None
    path = split_identifier(m.group("c"))
    move = Move.first() if m.group("first") else Move.after(split_identifier(m.group("after"))[0])
    return AlterTableColumns(
        TableIdent.parse(m.group("t")), (UpdateColumnPosition(path, move),), text
    )


_UNSET = re.compile(
    rf"(?is)^ALTER\s+TABLE\s+(?P<t>{MULTIPART_IDENTIFIER})\s+(?:UNSET\s+TBLPROPERTIES|UNSET|RESET)"
    r"\s*(?P<ie>IF\s+EXISTS)?\s*\((?P<keys>.*)\)\s*$"
)


_WORD = re.compile(r"[A-Za-z0-9_]+")


def _option_keys(text: str) -> list[str]:
    """Spark's property keys, comma-separated: a string literal (quotes and backslash
    escapes as in SET TBLPROPERTIES, adjacent literals joined, as Spark joins them) or a
    dotted name (plain or backquoted parts). Raises :class:`SqlParseError` otherwise."""
    from sqlglot.dialects.spark import Spark
    from sqlglot.errors import TokenError
    from sqlglot.tokenizer_core import TokenType

    try:
        tokens = Spark().tokenize(text)
    except TokenError as e:
        raise SqlParseError(f"cannot read the option keys ({text!r}): {e}") from None
    groups: list[list[Any]] = [[]]
    for tok in tokens:
        if tok.token_type is TokenType.COMMA:
            groups.append([])
        else:
            groups[-1].append(tok)
    keys = []
    for group in groups:
        kinds = {t.token_type for t in group}
        if group and kinds == {TokenType.STRING}:
            keys.append("".join(t.text for t in group))
            continue
        names = group[::2]
        dots = group[1::2]
        if (
            len(group) % 2 == 1
            and all(t.token_type is TokenType.DOT for t in dots)
            and all(t.token_type is TokenType.IDENTIFIER or _WORD.fullmatch(t.text) for t in names)
        ):
            keys.append(".".join(t.text for t in names))
            continue
        raise SqlParseError(f"expected option keys ('key', ...), got ({text})")
    return keys


def parse_unset(text: str) -> Statement:
    m = _UNSET.match(text)
    if not m:
        raise SqlParseError(
            "expected ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] ('key', ...)", 1, 1
        )
    keys = _option_keys(m.group("keys"))
    return AlterTableUnsetOptions(TableIdent.parse(m.group("t")), tuple(keys), bool(m.group("ie")))
