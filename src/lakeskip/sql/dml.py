"""The DML parsers of :mod:`lakeskip.sql.statements`, from sqlglot trees: DELETE, UPDATE,
MERGE INTO (the target checked here, the clauses by :mod:`lakeskip.sql.merge`) and INSERT.

A clause lakeskip does not implement is never silently dropped: on DELETE / UPDATE it makes
an :class:`~lakeskip.sql.statement_types.OtherTableStatement` (refused with its name), on
INSERT or on the target table an :class:`~lakeskip.errors.UnsupportedStatementError`.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from lakeskip.errors import SqlParseError, UnsupportedStatementError
from lakeskip.sql.literals import literal_value
from lakeskip.sql.merge import merge_from_tree
from lakeskip.sql.statement_types import (
    DIALECT,
    Delete,
    Insert,
    OtherTableStatement,
    Passthrough,
    Statement,
    TableIdent,
    Update,
)

__all__ = ["delete_from", "insert_into", "merge_into", "update"]


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


def delete_from(tree: exp.Delete, text: str) -> Statement:
    """DELETE FROM (a target that is not a table: Spark's :class:`Passthrough`)."""
    if not isinstance(tree.this, exp.Table):
        return Passthrough(text)
    ident = TableIdent.of(tree.this)
    _check_target(tree.this, "DELETE FROM")
    extra = _dml_extra(tree, "DELETE", {"this", "where"})
    if extra is not None:
        return OtherTableStatement(ident, extra, text)
    return Delete(ident, tree.this.alias or None, _where_sql(tree), text)


def update(tree: exp.Update, text: str) -> Statement:
    """UPDATE ... SET column = expr [WHERE]."""
    if not isinstance(tree.this, exp.Table):
        return Passthrough(text)
    ident = TableIdent.of(tree.this)
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


def merge_into(tree: exp.Merge, text: str) -> Statement:
    """MERGE INTO (its clauses: :func:`~lakeskip.sql.merge.merge_from_tree`)."""
    if not isinstance(tree.this, exp.Table):
        return Passthrough(text)
    _check_target(tree.this, "MERGE INTO")
    return merge_from_tree(tree, TableIdent.of(tree.this), text)


_INSERT_ARGS = frozenset({"this", "expression", "overwrite", "by_name", "with_"})


def insert_into(tree: exp.Insert, text: str) -> Statement:
    """INSERT [OVERWRITE] [PARTITION (k=v)] [(columns)] SELECT / VALUES."""
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
    ident = TableIdent.of(target)
    return Insert(
        ident=ident,
        overwrite=bool(tree.args.get("overwrite")),
        partition=partition,
        columns=columns,
        query_sql=query_sql,
        sql=text,
        by_name=bool(tree.args.get("by_name")),
    )
