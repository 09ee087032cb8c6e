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
    Call(procedure='sys.compact', args=(), kwargs={'table': 'db.t', 'order_by': 'a,b'}, catalog=None)
    >>> parse_statement("CALL lk2.sys.compact(table => 'db.t')").catalog
    'lk2'
    >>> parse_statement("SELECT * FROM t WHERE")
    Traceback (most recent call last):
    ...
    lakeskip.errors.SqlParseError: Syntax error at or near 'WHERE': Required keyword: 'this' missing for Where (line 1, col 17)
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import TokenType

from lakeskip.errors import SqlParseError, UnsupportedStatementError
from lakeskip.sql.ddl import (
    alter_table,
    create_database,
    create_table,
    parse_column_position,
    parse_unset,
)
from lakeskip.sql.dml import delete_from, insert_into, merge_into, update
from lakeskip.sql.literals import literal_value
from lakeskip.sql.splitter import (
    LEADING_COMMENTS,
    position,
    split_statements,
    strip_comments,
)
from lakeskip.sql.statement_types import (
    DIALECT,
    IDENTIFIER,
    MULTIPART_IDENTIFIER,
    Call,
    CreateTable,
    DescribeTable,
    DropDatabase,
    DropTable,
    Explain,
    Help,
    OtherTableStatement,
    Passthrough,
    Query,
    ShowCreateTable,
    ShowDatabases,
    ShowTables,
    Statement,
    TableIdent,
    TruncateTable,
    UseDatabase,
)
from lakeskip.types import split_identifier

__all__ = [
    # the statement types are imported from lakeskip.sql.statement_types; these four stay
    # importable from here for spark/read/query.py and spark/bridge/sql_rewrite.py (owned by
    # others this session)
    "Call",
    "CreateTable",
    "Query",
    "TableIdent",
    "parse_dml",
    "parse_statement",
    "parse_statements",
    "split_statements",
]

logging.getLogger("sqlglot").setLevel(logging.ERROR)


# -- parsing --------------------------------------------------------------------------------


def parse_statements(text: str) -> list[Statement]:
    """Parse ``;``-separated statements; positions in errors refer to ``text``."""
    out = []
    for piece in split_statements(text):
        chunk, offset = piece.text, piece.offset
        m = LEADING_COMMENTS.match(chunk)
        lead = m.end() if m else 0
        chunk, offset = chunk[lead:], offset + lead
        try:
            out.append(parse_statement(chunk))
        except SqlParseError as e:
            if e.line is None or e.col is None:
                raise
            base_line, base_col = position(text, offset)
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
        line, col = position(text, first.start)
        raise SqlParseError(f"Syntax error at or near {first.text!r}", line, col)


def parse_statement(sql: str) -> Statement:
    """Parse one statement (no trailing ``;`` needed)."""
    text = LEADING_COMMENTS.sub("", sql).strip().rstrip(";").strip()
    if not text:
        raise SqlParseError("empty statement")
    words = strip_comments(text).split(None, 1)
    by_head = _BY_HEAD.get(words[0].upper() if words else "")
    statement = by_head(text) if by_head is not None else None
    if statement is not None:
        return statement
    _check_head(text)
    try:
        tree = sqlglot.parse_one(_normalize_row_types(_normalize_time_travel(text)), read=DIALECT)
    except (ParseError, TokenError) as e:
        raise _parse_error(e, text) from e
    return _from_tree(tree, text)  # type: ignore[arg-type]


def parse_dml(sql: str) -> Statement:
    """Parse a DELETE / UPDATE / MERGE INTO whose target a Spark catalog has already resolved:
    the target may be catalog-qualified (``lakeskip.db.t``); the caller replaces ``ident``."""
    text = LEADING_COMMENTS.sub("", sql).strip().rstrip(";").strip()
    try:
        tree = sqlglot.parse_one(text, read=DIALECT)
    except (ParseError, TokenError) as e:
        raise _parse_error(e, text) from e
    if isinstance(tree, (exp.Delete, exp.Update, exp.Merge)) and isinstance(tree.this, exp.Table):
        tree.this.set("catalog", None)
        return _from_tree(tree, text)
    raise SqlParseError(f"not a DELETE, UPDATE or MERGE INTO statement: {text[:60]!r}")


_TRAVEL_WORDS = {"SYSTEM_VERSION": "VERSION", "SYSTEM_TIME": "TIMESTAMP"}


def _normalize_row_types(text: str) -> str:
    """Paimon's ``ROW<x INT, ...>`` in the column list of a CREATE TABLE / ALTER TABLE spelled
    as the ``STRUCT<x INT, ...>`` sqlglot parses.

    Only inside the statement's first parenthesised list (the column list), before any ``AS``
    / ``SELECT``, so that ``row < 5`` in a query is never touched.

    >>> _normalize_row_types("CREATE TABLE t (id INT, st ROW<x INT, y ARRAY<ROW<z INT>>>)")
    'CREATE TABLE t (id INT, st STRUCT<x INT, y ARRAY<STRUCT<z INT>>>)'
    >>> _normalize_row_types("CREATE TABLE t AS SELECT * FROM s WHERE (row < 5)")
    'CREATE TABLE t AS SELECT * FROM s WHERE (row < 5)'
    """
    if "ROW" not in text.upper():
        return text
    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except TokenError:
        return text
    if not tokens or tokens[0].text.upper() not in ("CREATE", "ALTER"):
        return text
    depth = 0
    starts: list[int] = []
    for i, tok in enumerate(tokens):
        kind = tok.token_type
        if depth == 0 and kind in (TokenType.ALIAS, TokenType.SELECT):
            break
        if kind is TokenType.L_PAREN:
            depth += 1
        elif kind is TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                break
        elif (
            depth > 0
            and tok.text.upper() == "ROW"
            and i + 1 < len(tokens)
            and tokens[i + 1].token_type is TokenType.LT
            and tok.token_type is not TokenType.STRING
        ):
            starts.append(tok.start)
    for start in reversed(starts):
        text = text[:start] + "STRUCT" + text[start + 3 :]
    return text


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


def _from_tree(tree: exp.Expression, text: str) -> Statement:
    """The statement of a parsed tree: the builder of its node type (:data:`_BY_TREE`, the
    nearest base class that has one), else :class:`Passthrough`."""
    for node_type in type(tree).__mro__:
        build = _BY_TREE.get(node_type)
        if build is not None:
            return build(tree, text)
    return Passthrough(text)


def _query(tree: exp.Expression, text: str) -> Statement:
    return Query(text, tree)


def _table(tree: exp.Table, text: str) -> Statement:
    """``TABLE t``: a query (sqlglot parses it to a bare table node)."""
    return Query(text, tree) if text.upper().startswith("TABLE") else Passthrough(text)


def _create(tree: exp.Create, text: str) -> Statement:
    kind = (tree.args.get("kind") or "").upper()
    if kind in ("DATABASE", "SCHEMA"):
        return create_database(tree)
    if kind == "TABLE":
        return create_table(tree, text)
    return Passthrough(text)


def _drop(tree: exp.Drop, text: str) -> Statement:
    kind = (tree.args.get("kind") or "").upper()
    targets = tree.args.get("tables") or [tree.this]
    if kind in ("DATABASE", "SCHEMA"):
        t = targets[0]
        return DropDatabase(
            t.name or t.db, bool(tree.args.get("exists")), bool(tree.args.get("cascade"))
        )
    if kind == "TABLE" and not tree.args.get("temporary"):
        return DropTable(TableIdent.of(targets[0]), bool(tree.args.get("exists")))
    return Passthrough(text)


def _use(tree: exp.Use, text: str) -> Statement:
    if tree.args.get("kind"):  # USE CATALOG ... and the like: Spark's
        return Passthrough(text)
    return UseDatabase(tree.this.name)


def _truncate(tree: exp.TruncateTable, text: str) -> Statement:
    targets = tree.expressions
    if len(targets) == 1 and not tree.args.get("partition"):
        return TruncateTable(TableIdent.of(targets[0]), text)
    if len(targets) == 1:
        return OtherTableStatement(TableIdent.of(targets[0]), "TRUNCATE TABLE ... PARTITION", text)
    return Passthrough(text)


def _describe(tree: exp.Describe, text: str) -> Statement:
    """DESCRIBE [TABLE] [EXTENDED|FORMATTED] t; DESCRIBE FUNCTION / DATABASE go to Spark; any
    other form (Delta's DESCRIBE HISTORY / DETAIL, a PARTITION spec) is an error, never read
    as a plain DESCRIBE of the table."""
    kind = (tree.args.get("kind") or "").upper()
    if kind and kind != "TABLE":
        return Passthrough(text)
    style = (tree.args.get("style") or "").upper()
    if style not in ("", "EXTENDED", "FORMATTED"):
        raise UnsupportedStatementError(f"DESCRIBE {style} is not supported")
    extra = [k for k, v in tree.args.items() if v and k not in ("this", "style", "kind", "as_json")]
    if extra:
        raise UnsupportedStatementError(f"DESCRIBE ... {extra[0].upper()} is not supported")
    return DescribeTable(TableIdent.of(tree.this), style in ("EXTENDED", "FORMATTED"))


_SHOW_TABLES = re.compile(rf"(?is)^SHOW\s+TABLES(?:\s+(?:IN|FROM)\s+(?P<db>{IDENTIFIER}))?\s*$")
_SHOW_DBS = re.compile(r"(?is)^SHOW\s+(?:DATABASES|SCHEMAS|NAMESPACES)\s*$")
_SHOW_CREATE = re.compile(rf"(?is)^SHOW\s+CREATE\s+TABLE\s+(?P<t>{MULTIPART_IDENTIFIER})\s*$")


def _parse_help(text: str) -> Statement | None:
    """``HELP`` alone (``HELP <topic>`` is Spark's)."""
    return Help() if len(strip_comments(text).split()) == 1 else None


_ALTER_UNSET = re.compile(rf"(?is)ALTER\s+TABLE\s+{MULTIPART_IDENTIFIER}\s+(UNSET|RESET)\b")


def _parse_alter_unset(text: str) -> Statement | None:
    """``ALTER TABLE t UNSET|RESET ...`` and ``ALTER TABLE t ALTER COLUMN c FIRST|AFTER b``
    (sqlglot has no node for them); other ALTERs: ``None``."""
    if _ALTER_UNSET.match(text):
        return parse_unset(text)
    return parse_column_position(text)


def _parse_show(text: str) -> Statement:
    if m := _SHOW_TABLES.match(text):
        db = m.group("db")
        return ShowTables(split_identifier(db)[0] if db else None)
    if _SHOW_DBS.match(text):
        return ShowDatabases()
    if m := _SHOW_CREATE.match(text):
        return ShowCreateTable(TableIdent.parse(m.group("t")))
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


def _dotted(node: exp.Expression) -> list[str]:
    """The parts of a dotted name (``a.b`` nests as ``Dot(a, b)``)."""
    if isinstance(node, exp.Dot):
        return _dotted(node.this) + _dotted(node.expression)
    return [node.name]


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
        # ``a.b.f(...)`` nests as Dot(Dot(a, b), f(...)): every part of the left side counts
        name_parts += _dotted(func.this)
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
    if len(name_parts) > 3:
        raise SqlParseError(f"CALL: expected [catalog.]sys.<procedure>, got {'.'.join(name_parts)}")
    catalog = name_parts.pop(0) if len(name_parts) == 3 else None
    return Call(".".join(name_parts), tuple(args), kwargs, catalog)


# -- the routing tables ---------------------------------------------------------------------

#: statements told by their first word, before (or instead of) sqlglot; ``None`` from a
#: parser: not its form after all, sqlglot parses the text
_BY_HEAD: dict[str, Callable[[str], Statement | None]] = {
    "HELP": _parse_help,
    "CALL": _parse_call,
    "EXPLAIN": _parse_explain,
    "SHOW": _parse_show,
    "ALTER": _parse_alter_unset,
}

#: sqlglot node type -> the statement built from it (:func:`_from_tree`); a node type with
#: no entry (nor a base class with one) is Spark's: :class:`Passthrough`
_BY_TREE: dict[type[exp.Expr], Callable[[Any, str], Statement]] = {
    exp.Query: _query,
    exp.Values: _query,
    exp.Table: _table,
    exp.Create: _create,
    exp.Drop: _drop,
    exp.Use: _use,
    exp.Describe: _describe,
    exp.Alter: alter_table,
    exp.Insert: insert_into,
    exp.TruncateTable: _truncate,
    exp.Delete: delete_from,
    exp.Update: update,
    exp.Merge: merge_into,
}
