"""Type spellings in: Spark SQL / Paimon type strings (:func:`parse_sql_type`), Paimon's schema
JSON (:func:`parse_paimon_json`, :func:`parse_paimon_field`), Spark's JSON
(:func:`from_spark_json`) and Arrow (:func:`from_arrow`), each to a
:class:`~lakeskip.types.data_type.DataType`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pyarrow as pa

from lakeskip.errors import TypeMismatchError
from lakeskip.types.data_type import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    MAX_VARCHAR,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    DataType,
    Field,
    TypeRoot,
    array_of,
    decimal_type,
    map_of,
    row_of,
)

__all__ = [
    "from_arrow",
    "from_spark_json",
    "parse_paimon_field",
    "parse_paimon_json",
    "parse_sql_type",
]


_SQL_SIMPLE = {
    "BOOLEAN": BOOLEAN,
    "BOOL": BOOLEAN,
    "TINYINT": TINYINT,
    "BYTE": TINYINT,
    "SMALLINT": SMALLINT,
    "SHORT": SMALLINT,
    "INT": INT,
    "INTEGER": INT,
    "BIGINT": BIGINT,
    "LONG": BIGINT,
    "FLOAT": FLOAT,
    "REAL": FLOAT,
    "DOUBLE": DOUBLE,
    "STRING": STRING,
    "TEXT": STRING,
    "BINARY": BINARY,
    "BYTES": BINARY,
    "VARBINARY": BINARY,
    "DATE": DATE,
    "TIMESTAMP": TIMESTAMP_LTZ,  # Spark's TIMESTAMP is with local time zone
    "TIMESTAMP_LTZ": TIMESTAMP_LTZ,
    "TIMESTAMP_NTZ": TIMESTAMP,
    "DECIMAL": decimal_type(10, 0),
    "DEC": decimal_type(10, 0),
    "NUMERIC": decimal_type(10, 0),
}

_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\d+|[<>(),:]|`(?:[^`]|``)*`|'(?:[^'\\]|\\.|'')*')")


class _TypeParser:
    """Recursive-descent parser for Spark and Paimon type spellings."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                raise TypeMismatchError(f"cannot parse type {text!r} at position {pos}")
            self.tokens.append(m.group(1))
            pos = m.end()
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok.upper() != expected):
            want = expected or "a type"
            raise TypeMismatchError(f"cannot parse type {self.text!r}: expected {want}")
        self.i += 1
        return tok

    def number(self) -> int:
        tok = self.take()
        if not tok.isdigit():
            raise TypeMismatchError(f"cannot parse type {self.text!r}: expected a number")
        return int(tok)

    def args(self) -> list[int]:
        if self.peek() != "(":
            return []
        self.take("(")
        out = [self.number()]
        while self.peek() == ",":
            self.take(",")
            out.append(self.number())
        self.take(")")
        return out

    def parse(self) -> DataType:
        t = self.parse_type()
        if self.peek() is not None:
            raise TypeMismatchError(f"cannot parse type {self.text!r}: unexpected {self.peek()!r}")
        return t

    def field_name(self) -> str:
        tok = self.take()
        if tok.startswith("`"):
            return tok[1:-1].replace("``", "`")
        if not (tok[0].isalpha() or tok[0] == "_"):
            raise TypeMismatchError(f"cannot parse type {self.text!r}: expected a field name")
        return tok

    def row(self) -> DataType:
        """``ROW<x INT, y STRING>`` (Paimon) or ``STRUCT<x: INT, y: STRING>`` (Spark), each
        field optionally ``NOT NULL`` and ``COMMENT '...'`` (Paimon: a bare ``'...'``)."""
        self.take("<")
        fields: list[tuple[str, DataType] | Field] = []
        while True:
            name = self.field_name()
            if self.peek() == ":":
                self.take(":")
            t = self.parse_type()
            description = None
            if (self.peek() or "").upper() == "COMMENT":
                self.take()
            if (self.peek() or "").startswith("'"):
                description = _unquote(self.take())
            fields.append(Field(len(fields), name, t, description))
            if self.peek() != ",":
                break
            self.take(",")
        self.take(">")
        return self.nullability(row_of(*fields))

    def parse_type(self) -> DataType:
        name = self.take().upper()
        if name in ("ROW", "STRUCT"):
            return self.row()
        if name == "MAP":
            self.take("<")
            k = self.parse_type()
            self.take(",")
            v = self.parse_type()
            self.take(">")
            return self.nullability(map_of(k, v))
        if name == "ARRAY":
            self.take("<")
            e = self.parse_type()
            self.take(">")
            return self.nullability(array_of(e))
        if name in ("DECIMAL", "DEC", "NUMERIC"):
            a = self.args()
            p, s = (a + [10, 0][len(a) :])[:2] if a else (10, 0)
            if len(a) == 1:
                p, s = a[0], 0
            return self.nullability(decimal_type(p, s))
        if name in ("CHAR", "VARCHAR", "CHARACTER"):
            a = self.args()
            n = a[0] if a else (1 if name == "CHAR" else MAX_VARCHAR)
            return self.nullability(DataType(TypeRoot.STRING, length=n, fixed=name != "VARCHAR"))
        if name in ("BINARY", "VARBINARY") and self.peek() == "(":
            n = self.args()[0]
            return self.nullability(DataType(TypeRoot.BINARY, length=n, fixed=name == "BINARY"))
        if name == "TIMESTAMP":
            a = self.args()
            precision = a[0] if a else 6
            if not 0 <= precision <= 9:
                raise TypeMismatchError(f"invalid TIMESTAMP precision {precision}")
            if self._words("WITH", "LOCAL", "TIME", "ZONE"):
                return self.nullability(DataType(TypeRoot.TIMESTAMP_LTZ, precision=precision))
            if self._words("WITHOUT", "TIME", "ZONE"):
                return self.nullability(DataType(TypeRoot.TIMESTAMP, precision=precision))
            # Paimon writes "TIMESTAMP(p)" for no zone; bare Spark "TIMESTAMP" is LTZ.
            root = TypeRoot.TIMESTAMP if a else TypeRoot.TIMESTAMP_LTZ
            return self.nullability(DataType(root, precision=precision))
        if name in ("TIMESTAMP_LTZ", "TIMESTAMP_NTZ"):
            a = self.args()
            base = _SQL_SIMPLE[name]
            return self.nullability(replace(base, precision=a[0]) if a else base)
        if name in _SQL_SIMPLE:
            return self.nullability(_SQL_SIMPLE[name])
        raise TypeMismatchError(f"unknown type {name!r} in {self.text!r}")

    def _words(self, *words: str) -> bool:
        n = len(words)
        got = [t.upper() for t in self.tokens[self.i : self.i + n]]
        if got == list(words):
            self.i += n
            return True
        return False

    def nullability(self, t: DataType) -> DataType:
        if self._words("NOT", "NULL"):
            return t.with_nullable(False)
        self._words("NULL")
        return t


def _unquote(tok: str) -> str:
    body = tok[1:-1]
    return re.sub(r"\\(.)|''", lambda m: m.group(1) if m.group(1) is not None else "'", body)


def parse_sql_type(text: str) -> DataType:
    """Parse a Spark SQL or Paimon type spelling.

    Raises:
        TypeMismatchError: the text is not a type we support.

    >>> parse_sql_type("MAP<STRING, ARRAY<INT>>").spark_ddl()
    'MAP<STRING, ARRAY<INT>>'
    """
    return _TypeParser(text).parse()


def parse_paimon_json(obj: Any) -> DataType:
    """Parse a type as stored in a Paimon schema file (string, or MAP/ARRAY object)."""
    if isinstance(obj, str):
        return parse_sql_type(obj)
    if isinstance(obj, dict) and isinstance(obj.get("type"), str):
        head = obj["type"].upper().split()
        nullable = not (len(head) >= 3 and head[-2:] == ["NOT", "NULL"])
        if head[0] == "MAP":
            return map_of(
                parse_paimon_json(obj["key"]), parse_paimon_json(obj["value"])
            ).with_nullable(nullable)
        if head[0] == "ARRAY":
            return array_of(parse_paimon_json(obj["element"])).with_nullable(nullable)
        if head[0] == "ROW":
            return row_of(*(parse_paimon_field(f) for f in obj["fields"])).with_nullable(nullable)
        raise TypeMismatchError(f"unsupported Paimon type {obj['type']!r}")
    raise TypeMismatchError(f"malformed Paimon type {obj!r}")


def from_spark_json(obj: Any) -> DataType:
    """Our type for a Spark ``DataType`` in Spark's JSON form (``dataType.jsonValue()``).

    Atomic types are Spark's names (``"integer"``, ``"decimal(10,2)"``); a STRUCT keeps each
    field's nullability and comment, which ``simpleString()`` drops. Raises
    :class:`TypeMismatchError` for a type lakeskip has no equivalent of.

    >>> x = {"name": "x", "type": "integer", "nullable": False, "metadata": {"comment": "c"}}
    >>> from_spark_json({"type": "struct", "fields": [x]}).spark_ddl()
    "STRUCT<`x`: INT NOT NULL COMMENT 'c'>"
    """
    if isinstance(obj, str):
        return parse_sql_type(obj)
    if not isinstance(obj, dict):
        raise TypeMismatchError(f"malformed Spark type {obj!r}")
    kind = obj.get("type")
    if kind == "array":
        return array_of(from_spark_json(obj["elementType"]))
    if kind == "map":
        return map_of(from_spark_json(obj["keyType"]), from_spark_json(obj["valueType"]))
    if kind == "struct":
        fields = []
        for i, f in enumerate(obj["fields"]):
            t = from_spark_json(f["type"])
            comment = (f.get("metadata") or {}).get("comment")
            fields.append(
                Field(i, f["name"], t.with_nullable(bool(f.get("nullable", True))), comment)
            )
        return row_of(*fields)
    raise TypeMismatchError(f"unsupported Spark type {kind!r}")


def parse_paimon_field(obj: Any) -> Field:
    """A :class:`~lakeskip.types.data_type.Field` from Paimon's ``DataField`` JSON (``id``,
    ``name``, ``type``, ``description``)."""
    try:
        return Field(
            int(obj["id"]),
            str(obj["name"]),
            parse_paimon_json(obj["type"]),
            obj.get("description"),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise TypeMismatchError(f"malformed Paimon field {obj!r}") from e


def from_arrow(t: pa.DataType) -> DataType:
    """Our type for an Arrow type.

    Raises:
        TypeMismatchError: Arrow type with no lakeskip equivalent.
    """
    if pa.types.is_boolean(t):
        return BOOLEAN
    for arrow_t, ours in (
        (pa.int8(), TINYINT),
        (pa.int16(), SMALLINT),
        (pa.int32(), INT),
        (pa.int64(), BIGINT),
        (pa.float32(), FLOAT),
        (pa.float64(), DOUBLE),
    ):
        if t == arrow_t:
            return ours
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return STRING
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return BINARY
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return DATE
    if pa.types.is_decimal(t):
        return decimal_type(t.precision, t.scale)
    if pa.types.is_timestamp(t):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        root = TypeRoot.TIMESTAMP_LTZ if t.tz is not None else TypeRoot.TIMESTAMP
        return DataType(root, precision=max(precision, 3) if precision <= 3 else 6)
    if pa.types.is_map(t):
        return map_of(from_arrow(t.key_type), from_arrow(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return array_of(from_arrow(t.value_type))
    if pa.types.is_struct(t):
        return row_of(
            *(
                Field(i, f.name, from_arrow(f.type).with_nullable(f.nullable))
                for i, f in enumerate(t)
            )
        )
    raise TypeMismatchError(f"unsupported Arrow type {t}")
