"""Paimon-style statements Spark's own parser rejects, rewritten into Spark SQL on the catalog.

Used by the ``LakeParser`` session extension: Spark parses first, and only a statement it
rejects (``CREATE TABLE ... WITH ('k'='v')``), or a ``CALL sys.x(...)`` without a catalog,
comes here. The statement is parsed by lakeskip's sqlglot layer (:mod:`lakeskip.sql`) and
printed back as Spark SQL against the lakeskip catalog.

>>> rewrite_for_spark("CREATE TABLE db.t (id BIGINT, s STRING) WITH ('a'='b')", ["lakeskip"])
"CREATE TABLE lakeskip.db.t (`id` BIGINT, `s` STRING) TBLPROPERTIES ('a' = 'b')"
>>> rewrite_for_spark("CALL sys.compact(table => 'db.t')", ["lakeskip"])
"CALL lakeskip.sys.compact(table => 'db.t')"
>>> rewrite_for_spark("CREATE TABLE lake2.db.t (id INT) WITH ('a'='b')", ["lakeskip", "lake2"])
"CREATE TABLE lake2.db.t (`id` INT) TBLPROPERTIES ('a' = 'b')"
>>> rewrite_for_spark("SELEC 1", ["lakeskip"]) is None
True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from lakeskip.errors import LakeskipError
from lakeskip.sql.statements import Call, CreateTable, parse_statements

__all__ = ["rewrite_for_spark"]


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _literal(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return _quote(str(v))


def _create(s: CreateTable, catalog: str) -> str:
    session_catalog = catalog == "spark_catalog"
    name = f"{s.ident.database or 'default'}.{s.ident.name}"
    parts = ["CREATE TABLE"]
    if s.if_not_exists:
        parts.append("IF NOT EXISTS")
    parts.append(name if session_catalog else f"{catalog}.{name}")
    if s.columns:
        cols = []
        for c in s.columns:
            col = f"`{c.name}` {c.type.spark_ddl()}"
            if not c.nullable:
                col += " NOT NULL"
            if c.comment:
                col += f" COMMENT {_quote(c.comment)}"
            cols.append(col)
        parts.append("(" + ", ".join(cols) + ")")
    if session_catalog:
        parts.append("USING lakeskip")
    if s.comment:
        parts.append(f"COMMENT {_quote(s.comment)}")
    if s.partition_keys:
        parts.append("PARTITIONED BY (" + ", ".join(f"`{k}`" for k in s.partition_keys) + ")")
    if s.options:
        props = ", ".join(f"{_quote(k)} = {_quote(v)}" for k, v in s.options.items())
        parts.append(f"TBLPROPERTIES ({props})")
    if s.as_select:
        parts.append(f"AS {s.as_select}")
    return " ".join(parts)


def _call(s: Call, catalog: str) -> str | None:
    if catalog == "spark_catalog" or not s.procedure.lower().startswith("sys."):
        return None  # already routable as written
    args = [_literal(a) for a in s.args]
    args += [f"{k} => {_literal(v)}" for k, v in s.kwargs.items()]
    return f"CALL {catalog}.{s.procedure}({', '.join(args)})"


_CREATE_HEAD = r"(?is)^(\s*CREATE\s+(?:OR\s+REPLACE\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?)"


def _strip_catalog(sql: str, catalogs: Sequence[str]) -> tuple[str, str | None]:
    """``CREATE TABLE <catalog>.db.t ...`` naming one of ``catalogs``: the statement without
    the catalog (lakeskip's own SQL names tables db.t) and that catalog."""
    for c in catalogs:
        m = re.match(_CREATE_HEAD + r"(?:`" + re.escape(c) + r"`|" + re.escape(c) + r")\.", sql)
        if m is not None:
            return m.group(1) + sql[m.end() :], c
    return sql, None


def rewrite_for_spark(sql: str, catalogs: Sequence[str]) -> str | None:
    """Spark SQL for ``sql`` on the catalog it names, else the first of ``catalogs``
    (``lakeskip`` preferred), or ``None`` when there is nothing to rewrite."""
    if not catalogs:
        return None
    sql, named = _strip_catalog(sql, catalogs)
    catalog = named or ("lakeskip" if "lakeskip" in catalogs else catalogs[0])
    try:
        statements = parse_statements(sql)
    except LakeskipError:
        return None
    if len(statements) != 1:
        return None
    s = statements[0]
    if isinstance(s, CreateTable):
        return _create(s, catalog)
    if isinstance(s, Call):
        return _call(s, catalog)
    return None
