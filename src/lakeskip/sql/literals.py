"""SQL literal nodes -> Python values (constant folding of literal-only expressions).

>>> import sqlglot
>>> literal_value(sqlglot.parse_one("DATE '2024-01-02'", read="spark"))
datetime.date(2024, 1, 2)
>>> literal_value(sqlglot.parse_one("-1.50", read="spark"))
Decimal('-1.50')
>>> literal_value(sqlglot.parse_one("CAST('7' AS INT)", read="spark"))
7
>>> try_literal(sqlglot.parse_one("a + 1", read="spark"))
(False, None)
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from sqlglot import exp

from lakeskip.errors import SqlParseError

__all__ = ["NULL", "literal_value", "try_literal"]


class _Null:
    """SQL NULL as a literal (distinct from "not a literal")."""

    _instance: _Null | None = None

    def __new__(cls) -> _Null:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


class _NotLiteral(Exception):
    pass


def _number(text: str) -> Any:
    t = text.strip()
    suffix = t[-1:].upper()
    if suffix in ("L", "S", "Y") and t[:-1].lstrip("-").isdigit():
        return int(t[:-1])
    if suffix == "D" and not t.upper().endswith("BD"):
        return float(t[:-1])
    if t.upper().endswith("BD"):
        return decimal.Decimal(t[:-2])
    if "e" in t.lower():
        return float(t)
    if "." in t:
        return decimal.Decimal(t)
    return int(t)


def _cast(value: Any, to: exp.DataType) -> Any:
    t = to.this
    T = exp.DataType.Type
    if value is NULL:
        return NULL
    if t in (T.DATE,):
        if isinstance(value, datetime.datetime):
            return value.date()
        if isinstance(value, datetime.date):
            return value
        return datetime.date.fromisoformat(str(value).strip())
    if t in (T.TIMESTAMP, T.TIMESTAMPLTZ, T.TIMESTAMPNTZ, T.DATETIME, T.TIMESTAMPTZ):
        if isinstance(value, datetime.datetime):
            return value
        if isinstance(value, datetime.date):
            return datetime.datetime(value.year, value.month, value.day)
        return datetime.datetime.fromisoformat(str(value).strip().replace(" ", "T", 1))
    if t in (T.TINYINT, T.SMALLINT, T.INT, T.BIGINT):
        if isinstance(value, str):
            return int(value.strip())
        if isinstance(value, (int, decimal.Decimal)) and not isinstance(value, bool):
            return int(value)
        raise _NotLiteral
    if t in (T.FLOAT, T.DOUBLE):
        return float(value)
    if t == T.DECIMAL:
        return decimal.Decimal(str(value).strip())
    if t in (T.VARCHAR, T.TEXT, T.CHAR):
        if isinstance(value, (str, int, decimal.Decimal)) and not isinstance(value, bool):
            return str(value)
        raise _NotLiteral
    if t == T.BOOLEAN and isinstance(value, bool):
        return value
    raise _NotLiteral


def _value(node: exp.Expression) -> Any:
    if isinstance(node, exp.Paren):
        return _value(node.this)
    if isinstance(node, exp.Null):
        return NULL
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        return str(node.this) if node.is_string else _number(str(node.this))
    if isinstance(node, exp.Neg):
        v = _value(node.this)
        if isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
            return -v
        raise _NotLiteral
    if isinstance(node, exp.HexString):
        return bytes.fromhex(str(node.this))
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return _cast(_value(node.this), node.to)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        a, b = _value(node.this), _value(node.expression)
        if not all(
            isinstance(x, (int, decimal.Decimal)) and not isinstance(x, bool) for x in (a, b)
        ):
            raise _NotLiteral
        if isinstance(node, exp.Add):
            return a + b
        if isinstance(node, exp.Sub):
            return a - b
        return a * b
    # DATE '...' / TIMESTAMP '...' typed literals parse as casts in sqlglot; anything else
    # (columns, functions, subqueries) is not a constant.
    raise _NotLiteral


def try_literal(node: exp.Expression) -> tuple[bool, Any]:
    """``(True, value)`` when ``node`` is a constant (``NULL`` for SQL NULL), else ``(False, None)``."""
    try:
        return True, _value(node)
    except (_NotLiteral, ValueError, ArithmeticError, TypeError):
        return False, None


def literal_value(node: exp.Expression) -> Any:
    """The constant's Python value (``None`` for NULL).

    Raises:
        SqlParseError: ``node`` is not a constant.
    """
    ok, value = try_literal(node)
    if not ok:
        raise SqlParseError(f"expected a literal value, got {node.sql('spark')!r}")
    return None if value is NULL else value
