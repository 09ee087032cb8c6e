"""SQL text -> typed statements and lakeskip predicates (sqlglot, Spark dialect)."""

from __future__ import annotations

from lakeskip.sql.statements import Statement, TableIdent, parse_statement, parse_statements

__all__ = ["Statement", "TableIdent", "parse_statement", "parse_statements"]
