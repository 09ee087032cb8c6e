"""SQL text -> typed statements (sqlglot, Spark dialect).

Statements lakeskip owns become frozen dataclasses; queries become :class:`Query` (their
lakeskip tables are pruned before Spark runs them); anything else becomes
:class:`Passthrough` and goes to Spark unchanged.

Example:
    >>> s = parse_statement("CREATE TABLE db.t (id BIGINT, s STRING) "
    ...                     "WITH ('file-index.bloom-filter.columns'='s')")
    >>> s.ident.qualified("default"), [c.name for c in s.columns], dict(s.options)
    ('db.t', ['id', 's'], {'file-index.bloom-filter.columns': 's'})
    >>> parse_statement("CALL sys.compact(table => 'db.t', order_by => 'a,b')")
    Call(procedure='sys.compact', args=(), kwargs={'table': 'db.t', 'order_by': 'a,b'})
    >>> parse_statement("SELECT * FROM t WHERE")
    Traceback (most recent call last):
    ...
    lakeskip.errors.SqlParseError: Syntax error at or near 'WHERE': Required keyword: 'this' missing for Where (line 1, col 17)
"""

from __future__ import annotations

import logging
import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import TokenType

from lakeskip.errors import SqlParseError, TypeMismatchError, UnsupportedStatementError
from lakeskip.sql.literals import literal_value
from lakeskip.sql.statement_types import (
    AlterTableAddColumns,
    AlterTableSetOptions,
    AlterTableUnsetOptions,
    Call,
    ColumnDef,
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
from lakeskip.types import parse_sql_type

__all__ = [
    "AlterTableAddColumns",
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
    "parse_dml",
    "parse_statement",
    "parse_statements",
    "split_statements",
]

logging.getLogger("sqlglot").setLevel(logging.ERROR)

DIALECT = "spark"
OUR_FORMATS = {"paimon", "lakeskip"}


# -- splitting ------------------------------------------------------------------------------


def split_statements(text: str) -> list[tuple[str, int]]:
    """Split on ``;`` outside quotes and comments: (statement, offset of its first char).

    >>> [s for s, _ in split_statements("select ';' ; -- c;\\nselect 2;")]
    ["select ';' ", ' -- c;\\nselect 2']
    """
    out: list[tuple[str, int]] = []
    start, i, n = 0, 0, len(text)
    quote: str | None = None
    while i < n:
        c = text[i]
        if quote:
            if c == "\\" and quote != "`":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in ("'", '"', "`"):
            quote = c
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        elif c == ";":
            out.append((text[start:i], start))
            start = i + 1
        i += 1
    out.append((text[start:], start))
    return [(s, o) for s, o in out if _strip_comments(s).strip()]


def _strip_comments(s: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", s, flags=re.S)


_LEADING_COMMENTS = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)+", re.S)


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


# -- parsing --------------------------------------------------------------------------------


def parse_statements(text: str) -> list[Statement]:
    """Parse ``;``-separated statements; positions in errors refer to ``text``."""
    out = []
    for chunk, offset in split_statements(text):
        m = _LEADING_COMMENTS.match(chunk)
        lead = m.end() if m else 0
        chunk, offset = chunk[lead:], offset + lead
        try:
            out.append(parse_statement(chunk))
        except SqlParseError as e:
            if e.line is None or e.col is None:
                raise
            base_line, base_col = _position(text, offset)
            line = base_line + e.line - 1
            col = e.col + (base_col - 1 if e.line == 1 else 0)
            raise SqlParseError(e.message, line, col) from e
    return out


def _parse_error(e: ParseError | TokenError, sql: str) -> SqlParseError:
    """Spark's wording: ``Syntax error at or near '<token>'``, at the token's first column."""
    if isinstance(e, ParseError) and e.errors:
        err = e.errors[0]
        desc = str(err.get("description") or e).split(". Line")[0]
        desc = re.sub(r"<class 'sqlglot\.expressions\.(?:\w+\.)*(\w+)'>", r"\1", desc)
        token = str(err.get("highlight") or "")
        line, col = err.get("line"), err.get("col")
        if token and isinstance(col, int):
            col = max(1, col - len(token) + 1)  # sqlglot points at the token's last char
        near = f"Syntax error at or near {token!r}" if token else "Syntax error"
        return SqlParseError(f"{near}: {desc}", line, col)
    return SqlParseError(f"cannot tokenize SQL: {str(e).splitlines()[0]}")


# First words of every statement Spark SQL (or lakeskip) accepts; anything else is a typo.
_STATEMENT_HEADS = frozenset(
    [
        "SELECT",
        "WITH",
        "VALUES",
        "TABLE",
        "FROM",
        "INSERT",
        "CREATE",
        "DROP",
        "ALTER",
        "USE",
        "SHOW",
        "DESCRIBE",
        "DESC",
        "EXPLAIN",
        "CALL",
        "SET",
        "RESET",
        "UPDATE",
        "DELETE",
        "MERGE",
        "TRUNCATE",
        "CACHE",
        "UNCACHE",
        "REFRESH",
        "ANALYZE",
        "MSCK",
        "ADD",
        "LIST",
        "REPLACE",
        "LOAD",
        "CLEAR",
        "COMMENT",
        "GRANT",
        "REVOKE",
        "DECLARE",
        "EXECUTE",
        "HELP",
        "MAP",
        "REDUCE",
        # statements of Spark extensions (e.g. Delta), passed to Spark as they are
        "OPTIMIZE",
        "VACUUM",
        "RESTORE",
        "GENERATE",
        "CONVERT",
        "FSCK",
        "SYNC",
    ]
)


def _check_head(text: str) -> None:
    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except TokenError:
        return
    if not tokens or tokens[0].token_type in (TokenType.L_PAREN, TokenType.STRING):
        return
    first = tokens[0]
    if first.text.upper() not in _STATEMENT_HEADS:
        line, col = _position(text, first.start)
        raise SqlParseError(f"Syntax error at or near {first.text!r}", line, col)


def parse_statement(sql: str) -> Statement:
    """Parse one statement (no trailing ``;`` needed)."""
    text = _LEADING_COMMENTS.sub("", sql).strip().rstrip(";").strip()
    if not text:
        raise SqlParseError("empty statement")
    words = _strip_comments(text).split(None, 1)
    head = words[0].upper() if words else ""
    if head == "HELP" and len(words) == 1:
        return Help()
    if head == "CALL":
        return _parse_call(text)
    if head == "EXPLAIN":
        return _parse_explain(text)
    if head == "SHOW":
        return _parse_show(text)
    _check_head(text)
    if head == "ALTER" and re.match(r"(?is)ALTER\s+TABLE\s+\S+\s+(UNSET|RESET)\b", text):
        return _parse_unset(text)
    try:
        tree = sqlglot.parse_one(_normalize_time_travel(text), read=DIALECT)
    except (ParseError, TokenError) as e:
        raise _parse_error(e, text) from e
    return _from_tree(tree, text)  # type: ignore[arg-type]


def parse_dml(sql: str) -> Statement:
    """Parse a DELETE / UPDATE / MERGE INTO whose target a Spark catalog has already resolved:
    the target may be catalog-qualified (``lakeskip.db.t``); the caller replaces ``ident``."""
    text = _LEADING_COMMENTS.sub("", sql).strip().rstrip(";").strip()
    try:
        tree = sqlglot.parse_one(text, read=DIALECT)
    except (ParseError, TokenError) as e:
        raise _parse_error(e, text) from e
    if isinstance(tree, (exp.Delete, exp.Update, exp.Merge)) and isinstance(tree.this, exp.Table):
        tree.this.set("catalog", None)
        return _from_tree(tree, text)
    raise SqlParseError(f"not a DELETE, UPDATE or MERGE INTO statement: {text[:60]!r}")


_TRAVEL_WORDS = {"SYSTEM_VERSION": "VERSION", "SYSTEM_TIME": "TIMESTAMP"}


def _normalize_time_travel(text: str) -> str:
    """Spark's ``[FOR] SYSTEM_VERSION AS OF`` / ``[FOR] SYSTEM_TIME AS OF`` spelled as the
    ``VERSION AS OF`` / ``TIMESTAMP AS OF`` sqlglot parses (padded, so error columns stay)."""
    if "SYSTEM_" not in text.upper():
        return text
    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except TokenError:
        return text
    out = text
    for i, tok in enumerate(tokens[:-2]):
        word = tok.text.upper()
        nxt, after = tokens[i + 1], tokens[i + 2]
        if (
            word in _TRAVEL_WORDS
            and tok.token_type is not TokenType.STRING
            and nxt.text.upper() == "AS"
            and after.text.upper() == "OF"
        ):
            new = _TRAVEL_WORDS[word].ljust(tok.end - tok.start + 1)
            out = out[: tok.start] + new + out[tok.end + 1 :]
    return out


def _ident(table: exp.Expression) -> TableIdent:
    if isinstance(table, exp.Schema):
        table = table.this
    if not isinstance(table, exp.Table) or not table.name:
        raise SqlParseError(f"expected a table name, got {table.sql(DIALECT)!r}")
    if table.catalog:
        raise UnsupportedStatementError(
            f"catalog-qualified names are not supported: {table.sql(DIALECT)}"
        )
    return TableIdent(table.db or None, table.name)


def _from_tree(tree: exp.Expression, text: str) -> Statement:
    if isinstance(tree, (exp.Query, exp.Values)) or (
        isinstance(tree, exp.Table) and text.upper().startswith("TABLE")
    ):
        return Query(text, tree)
    if isinstance(tree, exp.Create):
        kind = (tree.args.get("kind") or "").upper()
        if kind in ("DATABASE", "SCHEMA"):
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
        if kind == "TABLE":
            return _create_table(tree, text)
        return Passthrough(text)
    if isinstance(tree, exp.Drop):
        kind = (tree.args.get("kind") or "").upper()
        targets = tree.args.get("tables") or [tree.this]
        if kind in ("DATABASE", "SCHEMA"):
            t = targets[0]
            return DropDatabase(
                t.name or t.db, bool(tree.args.get("exists")), bool(tree.args.get("cascade"))
            )
        if kind == "TABLE" and not tree.args.get("temporary"):
            return DropTable(_ident(targets[0]), bool(tree.args.get("exists")))
        return Passthrough(text)
    if isinstance(tree, exp.Use) and not tree.args.get("kind"):
        t = tree.this
        return UseDatabase(t.name)
    if isinstance(tree, exp.Describe):
        style = (tree.args.get("style") or "").upper()
        return DescribeTable(_ident(tree.this), style in ("EXTENDED", "FORMATTED"))
    if isinstance(tree, exp.Alter):
        return _alter(tree, text)
    if isinstance(tree, exp.Insert):
        return _insert(tree, text)
    if isinstance(tree, exp.TruncateTable):
        targets = tree.expressions
        if len(targets) == 1 and not tree.args.get("partition"):
            return TruncateTable(_ident(targets[0]), text)
        if len(targets) == 1:
            return OtherTableStatement(_ident(targets[0]), "TRUNCATE TABLE ... PARTITION", text)
        return Passthrough(text)
    if isinstance(tree, exp.Delete) and isinstance(tree.this, exp.Table):
        return _delete(tree, text)
    if isinstance(tree, exp.Update) and isinstance(tree.this, exp.Table):
        return _update(tree, text)
    if isinstance(tree, exp.Merge) and isinstance(tree.this, exp.Table):
        from lakeskip.sql.merge import merge_from_tree  # merge imports this module

        _check_target(tree.this, "MERGE INTO")
        return merge_from_tree(tree, _ident(tree.this), text)
    dml = {exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Merge: "MERGE INTO"}
    for kind, what in dml.items():
        if isinstance(tree, kind) and isinstance(tree.this, exp.Table):
            return OtherTableStatement(_ident(tree.this), what, text)
    return Passthrough(text)


def _dml_extra(tree: exp.Expression, verb: str, allowed: set[str]) -> str | None:
    """The first clause of a DELETE/UPDATE that lakeskip does not implement, if any."""
    names = {"using": "USING", "from_": "FROM", "from": "FROM", "returning": "RETURNING"}
    for key, value in tree.args.items():
        if key in allowed or value is None or value is False or value == []:
            continue
        return f"{verb} ... {names.get(key, key.upper())}"
    return None


def _check_target(table: exp.Table, verb: str) -> None:
    """A DELETE/UPDATE target is a plain table name (with an alias): a clause on it (time
    travel, TABLESAMPLE, ...) would be silently ignored, so it is an error."""
    names = {"version": "time travel (AS OF)", "sample": "TABLESAMPLE", "pivots": "PIVOT"}
    for key, value in table.args.items():
        if key in ("this", "db", "catalog", "alias") or value is None or value == []:
            continue
        raise UnsupportedStatementError(
            f"{verb} {table.sql(DIALECT)}: {names.get(key, key.upper())} on the target table "
            "is not supported"
        )


def _where_sql(tree: exp.Expression) -> str | None:
    where = tree.args.get("where")
    return where.this.sql(DIALECT) if where is not None else None


def _delete(tree: exp.Delete, text: str) -> Statement:
    ident = _ident(tree.this)
    _check_target(tree.this, "DELETE FROM")
    extra = _dml_extra(tree, "DELETE", {"this", "where"})
    if extra is not None:
        return OtherTableStatement(ident, extra, text)
    return Delete(ident, tree.this.alias or None, _where_sql(tree), text)


def _update(tree: exp.Update, text: str) -> Statement:
    ident = _ident(tree.this)
    _check_target(tree.this, "UPDATE")
    extra = _dml_extra(tree, "UPDATE", {"this", "where", "expressions"})
    if extra is not None:
        return OtherTableStatement(ident, extra, text)
    alias = tree.this.alias or None
    assignments: list[tuple[str, str]] = []
    for a in tree.expressions:
        target = a.this if isinstance(a, exp.EQ) else None
        if not isinstance(target, exp.Column) or target.args.get("db"):
            raise UnsupportedStatementError(
                f"UPDATE {ident}: SET {a.sql(DIALECT)} is not supported (use SET column = expr)"
            )
        if target.table and target.table not in (alias or ident.name, ident.name):
            raise SqlParseError(f"UPDATE {ident}: SET names column {target.sql(DIALECT)}")
        assignments.append((target.name, a.expression.sql(DIALECT)))
    return Update(ident, alias, tuple(assignments), _where_sql(tree), text)


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


def _create_table(tree: exp.Create, text: str) -> Statement:
    schema = tree.this
    ident = _ident(schema)
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


def _alter(tree: exp.Alter, text: str) -> Statement:
    if (tree.args.get("kind") or "").upper() != "TABLE":
        return Passthrough(text)
    actions = tree.args.get("actions") or []
    if len(actions) == 1 and isinstance(actions[0], exp.AlterSet):
        items: list[exp.Expression] = []
        for e in actions[0].expressions:
            items += list(e.expressions) if isinstance(e, exp.Properties) else [e]
        opts = _props_to_options(items)
        if opts:
            return AlterTableSetOptions(_ident(tree.this), opts)
    ident = _ident(tree.this)
    if actions and all(isinstance(a, (exp.ColumnDef, exp.Schema)) for a in actions):
        columns: list[ColumnDef] = []
        for a in actions:
            defs = a.expressions if isinstance(a, exp.Schema) else [a]
            columns += [_column_def(c) for c in defs if isinstance(c, exp.ColumnDef)]
        return AlterTableAddColumns(ident, tuple(columns), text)
    if len(actions) == 1 and isinstance(actions[0], exp.AlterRename):
        return RenameTable(ident, _ident(actions[0].this), text)
    return OtherTableStatement(ident, "ALTER TABLE " + _action_name(actions), text)


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


_UNSET = re.compile(
    r"(?is)^ALTER\s+TABLE\s+(?P<t>[\w.`]+)\s+(?:UNSET\s+TBLPROPERTIES|UNSET|RESET)"
    r"\s*(?P<ie>IF\s+EXISTS)?\s*\((?P<keys>.*)\)\s*$"
)


def _parse_unset(text: str) -> Statement:
    m = _UNSET.match(text)
    if not m:
        raise SqlParseError(
            "expected ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] ('key', ...)", 1, 1
        )
    keys = [k.strip().strip("'\"`") for k in m.group("keys").split(",") if k.strip()]
    if not keys:
        raise SqlParseError("UNSET needs at least one option key")
    return AlterTableUnsetOptions(_table_name(m.group("t")), tuple(keys), bool(m.group("ie")))


def _table_name(name: str) -> TableIdent:
    parts = [p.strip("`") for p in name.split(".")]
    if len(parts) == 1:
        return TableIdent(None, parts[0])
    if len(parts) == 2:
        return TableIdent(parts[0], parts[1])
    raise UnsupportedStatementError(f"catalog-qualified names are not supported: {name}")


_INSERT_ARGS = frozenset({"this", "expression", "overwrite", "by_name", "with_"})


def _insert(tree: exp.Insert, text: str) -> Statement:
    target = tree.this
    columns: tuple[str, ...] | None = None
    if isinstance(target, exp.Schema):
        columns = tuple(c.name for c in target.expressions)
        target = target.this
    if not isinstance(target, exp.Table):
        return Passthrough(text)
    partition: dict[str, Any] | None = None
    part = target.args.get("partition")
    if part is not None:
        partition = {}
        for e in part.expressions:
            if isinstance(e, exp.EQ):
                partition[e.this.name] = literal_value(e.expression)
            else:
                raise UnsupportedStatementError(
                    "only static PARTITION (k=v, ...) specs are supported in INSERT"
                )
    extra = sorted(k for k, v in tree.args.items() if v and k not in _INSERT_ARGS)
    if extra:  # REPLACE WHERE, IF NOT EXISTS, ...: never silently dropped
        named = {"where": "REPLACE WHERE", "exists": "IF NOT EXISTS"}
        raise UnsupportedStatementError(
            f"INSERT ... {named.get(extra[0], extra[0].upper())} is not supported"
        )
    source = tree.expression
    if source is None:
        raise SqlParseError("INSERT needs SELECT or VALUES")
    if isinstance(source, exp.Values):
        query_sql = "SELECT * FROM " + source.sql(DIALECT)
    else:
        query_sql = source.sql(DIALECT)
    with_ = tree.args.get("with_")
    if with_ is not None:  # WITH x AS (...) INSERT INTO t SELECT ... FROM x
        query_sql = f"{with_.sql(DIALECT)} {query_sql}"
    ident = _ident(target)
    return Insert(
        ident=ident,
        overwrite=bool(tree.args.get("overwrite")),
        partition=partition,
        columns=columns,
        query_sql=query_sql,
        sql=text,
        by_name=bool(tree.args.get("by_name")),
    )


_SHOW_TABLES = re.compile(r"(?is)^SHOW\s+TABLES(?:\s+(?:IN|FROM)\s+(?P<db>[\w`]+))?\s*$")
_SHOW_DBS = re.compile(r"(?is)^SHOW\s+(?:DATABASES|SCHEMAS|NAMESPACES)\s*$")
_SHOW_CREATE = re.compile(r"(?is)^SHOW\s+CREATE\s+TABLE\s+(?P<t>[\w.`]+)\s*$")


def _parse_show(text: str) -> Statement:
    if m := _SHOW_TABLES.match(text):
        db = m.group("db")
        return ShowTables(db.strip("`") if db else None)
    if _SHOW_DBS.match(text):
        return ShowDatabases()
    if m := _SHOW_CREATE.match(text):
        return ShowCreateTable(_table_name(m.group("t")))
    return Passthrough(text)


_EXPLAIN = re.compile(
    r"(?is)^EXPLAIN\s+(?:(?P<mode>PRUNING|EXTENDED|FORMATTED|CODEGEN|COST)\s+)?(?P<q>.*)$"
)


def _parse_explain(text: str) -> Statement:
    m = _EXPLAIN.match(text)
    if not m or not m.group("q").strip():
        raise SqlParseError("EXPLAIN needs a query", 1, len(text) + 1)
    inner = parse_statement(m.group("q"))
    if not isinstance(inner, Query):
        return Passthrough(text)
    return Explain(inner, (m.group("mode") or "").upper() == "PRUNING")


def _doubled_quotes(text: str) -> str:
    r"""SQL's ``''`` inside a single-quoted string, rewritten as ``\'``.

    For CALL arguments only: Spark itself reads ``'a''b'`` as two adjacent literals, but
    Paimon's docs write ``where => 'dt = ''2024-01-01'''``.

    >>> print(_doubled_quotes("x => 'region = ''eu''', y => ''"))
    x => 'region = \'eu\'', y => ''
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        i += 1
        out.append(c)
        if c != "'":
            continue
        while i < n:
            d = text[i]
            if d == "\\" and i + 1 < n:
                out.append(text[i : i + 2])
                i += 2
            elif d == "'" and i + 1 < n and text[i + 1] == "'":
                out.append("\\'")
                i += 2
            else:
                out.append(d)
                i += 1
                if d == "'":
                    break
    return "".join(out)


def _parse_call(text: str) -> Statement:
    tail = _doubled_quotes(text[4:].strip())
    try:
        tree = sqlglot.parse_one(tail, read=DIALECT)
    except (ParseError, TokenError) as e:
        err = _parse_error(e, tail)
        col = (err.col or 0) + 5 if err.line == 1 else err.col
        raise SqlParseError(f"malformed CALL: {err.message}", err.line, col) from e
    name_parts: list[str] = []
    func = tree
    while isinstance(func, exp.Dot):
        name_parts.append(func.this.name)
        func = func.expression
    if not isinstance(func, (exp.Anonymous, exp.Func)):
        raise SqlParseError("expected CALL sys.<procedure>(arguments)", 1, 6)
    fname = func.this if isinstance(func, exp.Anonymous) else func.sql_name()
    name_parts.append(str(fname).lower())
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    raw = func.expressions if isinstance(func, exp.Anonymous) else list(func.args.values())
    for a in raw:
        if a is None:
            continue
        if isinstance(a, exp.Kwarg):
            key = a.this.name.lower()
            if key in kwargs:
                raise SqlParseError(f"CALL: argument {key!r} given twice")
            kwargs[key] = literal_value(a.expression)
        else:
            if kwargs:
                raise SqlParseError("CALL: positional argument after named arguments")
            args.append(literal_value(a))
    return Call(".".join(name_parts), tuple(args), kwargs)
