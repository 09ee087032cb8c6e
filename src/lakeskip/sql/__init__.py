"""SQL text -> typed statements and lakeskip predicates (sqlglot, Spark dialect)."""

from __future__ import annotations

from lakeskip.sql.statement_types import Statement, TableIdent
from lakeskip.sql.statements import parse_statement, parse_statements

__all__ = ["Statement", "TableIdent", "parse_statement", "parse_statements"]
