"""lakeskip's data types: what a column holds, and how that maps to Paimon, Arrow and Spark.

A :class:`DataType` is a small frozen value. Three spellings meet here:

* Paimon's type strings as stored in ``schema/schema-N`` (``"BIGINT"``, ``"STRING"``,
  ``"DECIMAL(10, 2)"``, ``"TIMESTAMP(6) WITH LOCAL TIME ZONE"``; maps and arrays as JSON
  objects) -- :meth:`DataType.to_paimon_json` / :func:`parse_paimon_json`;
* Spark SQL DDL (``BIGINT``, ``STRING``, ``TIMESTAMP`` = with local time zone,
  ``TIMESTAMP_NTZ``, ``MAP<STRING, INT>``) -- :meth:`DataType.spark_ddl` / :func:`parse_sql_type`;
* Arrow -- :meth:`DataType.to_arrow` / :func:`from_arrow`.

Values have one *internal* (physical) form per type, the one Paimon's Java code hashes and
compares: integers as ``int``; FLOAT/DOUBLE as ``float``; DECIMAL as :class:`decimal.Decimal`;
strings as ``str``; binary as ``bytes``; DATE as epoch days (``int``); TIMESTAMP as ``int``
millis when precision <= 3, else micros. :func:`to_internal` converts a Python literal.

Example:
    >>> parse_sql_type("decimal(10,2)").to_paimon_json()
    'DECIMAL(10, 2)'
    >>> parse_sql_type("timestamp").to_paimon_json()
    'TIMESTAMP(6) WITH LOCAL TIME ZONE'
    >>> to_internal(DATE, datetime.date(1970, 1, 2))
    1
"""

from __future__ import annotations

import datetime
import decimal
import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from lakeskip.errors import ColumnNotFoundError, InvalidArgumentError, TypeMismatchError

__all__ = [
    "BIGINT",
    "BINARY",
    "BOOLEAN",
    "DATE",
    "DOUBLE",
    "FLOAT",
    "INT",
    "SMALLINT",
    "STRING",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "TINYINT",
    "DataType",
    "Field",
    "RowType",
    "TypeRoot",
    "array_of",
    "assign_field_ids",
    "decimal_type",
    "field_ids",
    "from_arrow",
    "from_spark_json",
    "map_of",
    "parse_paimon_json",
    "parse_sql_type",
    "row_of",
    "session_time_zone",
    "to_internal",
]

EPOCH_DATE = datetime.date(1970, 1, 1)
EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

_UTC_NAMES = frozenset({"UTC", "ETC/UTC", "GMT", "ETC/GMT", "Z", "UCT", "ZULU", "UNIVERSAL"})
_ZONE_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$")


def session_time_zone(name: str) -> tuple[datetime.tzinfo, bool]:
    """A Spark session time zone (``spark.sql.session.timeZone``: a region id, ``UTC``, or
    an offset such as ``+05:30``) and whether its offset never changes.

    >>> session_time_zone("+05:30")
    (datetime.timezone(datetime.timedelta(seconds=19800)), True)
    >>> session_time_zone("America/Los_Angeles")[1]
    False

    Raises:
        ValueError: an unknown zone.
    """
    import zoneinfo

    key = name.strip()
    if key.upper() in _UTC_NAMES:
        return datetime.timezone.utc, True
    m = _ZONE_OFFSET.match(key)
    if m:
        offset = datetime.timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        if offset >= datetime.timedelta(hours=18):
            raise ValueError(f"unknown time zone {name!r}")
        return datetime.timezone(-offset if m.group(1) == "-" else offset), True
    try:
        return zoneinfo.ZoneInfo(key), False
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
        raise ValueError(f"unknown time zone {name!r}") from e


MAX_VARCHAR = 2147483647


class TypeRoot(enum.Enum):
    BOOLEAN = "BOOLEAN"
    TINYINT = "TINYINT"
    SMALLINT = "SMALLINT"
    INT = "INT"
    BIGINT = "BIGINT"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    DECIMAL = "DECIMAL"
    STRING = "STRING"  # CHAR(n) / VARCHAR(n) / STRING: ``length`` keeps n
    BINARY = "BINARY"  # BINARY(n) / VARBINARY(n) / BYTES
    DATE = "DATE"
    TIMESTAMP = "TIMESTAMP"  # without time zone (Spark TIMESTAMP_NTZ)
    TIMESTAMP_LTZ = "TIMESTAMP_LTZ"  # with local time zone (Spark TIMESTAMP)
    MAP = "MAP"
    ARRAY = "ARRAY"
    ROW = "ROW"  # Spark STRUCT: ``fields`` holds the nested fields, with Paimon's field ids


_INTEGERS = frozenset({TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT})
_INT_RANGES = {
    TypeRoot.TINYINT: (-(2**7), 2**7 - 1),
    TypeRoot.SMALLINT: (-(2**15), 2**15 - 1),
    TypeRoot.INT: (-(2**31), 2**31 - 1),
    TypeRoot.BIGINT: (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True, slots=True)
class DataType:
    """A column type. Build with the module constants and :func:`decimal_type` & co."""

    root: TypeRoot
    nullable: bool = True
    precision: int | None = None  # DECIMAL precision; TIMESTAMP fractional digits
    scale: int | None = None  # DECIMAL scale
    length: int | None = None  # CHAR/VARCHAR/BINARY length; None = unbounded
    fixed: bool = False  # CHAR / BINARY(n) rather than VARCHAR / VARBINARY
    key: DataType | None = None  # MAP key
    value: DataType | None = None  # MAP value, ARRAY element
    fields: tuple[Field, ...] | None = None  # ROW fields, in order

    # -- classification ------------------------------------------------------------------

    @property
    def is_integer(self) -> bool:
        return self.root in _INTEGERS

    @property
    def is_numeric(self) -> bool:
        return self.is_integer or self.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE, TypeRoot.DECIMAL)

    @property
    def is_timestamp(self) -> bool:
        return self.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ)

    @property
    def is_nested(self) -> bool:
        return self.root in (TypeRoot.MAP, TypeRoot.ARRAY, TypeRoot.ROW)

    @property
    def row_fields(self) -> tuple[Field, ...]:
        """A ROW's fields (empty for any other type)."""
        return self.fields or ()

    @property
    def is_orderable(self) -> bool:
        """Whether min/max stats and range predicates make sense for this type."""
        return not self.is_nested

    @property
    def timestamp_unit(self) -> str:
        """``"ms"`` or ``"us"``: the unit of this timestamp's internal integer."""
        return "ms" if (self.precision if self.precision is not None else 6) <= 3 else "us"

    def with_nullable(self, nullable: bool) -> DataType:
        return replace(self, nullable=nullable)

    def as_nullable(self) -> DataType:
        """This type with every nested ROW field nullable too (Spark's ``asNullable``, which
        a CTAS applies to its query's schema)."""
        fields = self.fields
        if fields is not None:
            fields = tuple(replace(f, type=f.type.as_nullable()) for f in fields)
        value = self.value.as_nullable() if self.value is not None else None
        return replace(self, nullable=True, fields=fields, value=value)

    # -- Paimon -----------------------------------------------------------------------------

    def to_paimon_json(self) -> Any:
        """Paimon's schema-file form: a type string, or a JSON object for MAP/ARRAY."""
        suffix = "" if self.nullable else " NOT NULL"
        r = self.root
        if r is TypeRoot.MAP:
            assert self.key is not None and self.value is not None
            return {
                "type": "MAP" + suffix,
                "key": self.key.to_paimon_json(),
                "value": self.value.to_paimon_json(),
            }
        if r is TypeRoot.ARRAY:
            assert self.value is not None
            return {"type": "ARRAY" + suffix, "element": self.value.to_paimon_json()}
        if r is TypeRoot.ROW:
            return {"type": "ROW" + suffix, "fields": [f.to_paimon_json() for f in self.row_fields]}
        return self._paimon_atomic() + suffix

    def _paimon_atomic(self) -> str:
        r = self.root
        if r is TypeRoot.DECIMAL:
            return f"DECIMAL({self.precision}, {self.scale})"
        if r is TypeRoot.STRING:
            if self.fixed:
                return f"CHAR({self.length})"
            return "STRING" if self.length in (None, MAX_VARCHAR) else f"VARCHAR({self.length})"
        if r is TypeRoot.BINARY:
            if self.fixed:
                return f"BINARY({self.length})"
            return "BYTES" if self.length in (None, MAX_VARCHAR) else f"VARBINARY({self.length})"
        if r is TypeRoot.TIMESTAMP:
            return f"TIMESTAMP({self._ts_precision})"
        if r is TypeRoot.TIMESTAMP_LTZ:
            return f"TIMESTAMP({self._ts_precision}) WITH LOCAL TIME ZONE"
        return str(r.value)

    @property
    def _ts_precision(self) -> int:
        return self.precision if self.precision is not None else 6

    # -- Spark ------------------------------------------------------------------------------

    def spark_ddl(self) -> str:
        """The Spark SQL spelling, e.g. ``MAP<STRING, BIGINT>``."""
        r = self.root
        if r is TypeRoot.MAP:
            assert self.key is not None and self.value is not None
            return f"MAP<{self.key.spark_ddl()}, {self.value.spark_ddl()}>"
        if r is TypeRoot.ARRAY:
            assert self.value is not None
            return f"ARRAY<{self.value.spark_ddl()}>"
        if r is TypeRoot.ROW:
            return f"STRUCT<{', '.join(f.spark_ddl(':') for f in self.row_fields)}>"
        if r is TypeRoot.DECIMAL:
            return f"DECIMAL({self.precision},{self.scale})"
        if r is TypeRoot.STRING:
            return "STRING"
        if r is TypeRoot.TIMESTAMP:
            return "TIMESTAMP_NTZ"
        if r is TypeRoot.TIMESTAMP_LTZ:
            return "TIMESTAMP"
        return str(r.value)

    def simple_string(self) -> str:
        """Spark's ``simpleString`` (what DESCRIBE shows): ``struct<x:int,y:map<string,int>>``.

        >>> parse_sql_type("ROW<Ab INT, c MAP<STRING, ARRAY<BIGINT>>>").simple_string()
        'struct<Ab:int,c:map<string,array<bigint>>>'
        """
        r = self.root
        if r is TypeRoot.MAP:
            assert self.key is not None and self.value is not None
            return f"map<{self.key.simple_string()},{self.value.simple_string()}>"
        if r is TypeRoot.ARRAY:
            assert self.value is not None
            return f"array<{self.value.simple_string()}>"
        if r is TypeRoot.ROW:
            inner = ",".join(f"{f.name}:{f.type.simple_string()}" for f in self.row_fields)
            return f"struct<{inner}>"
        return self.spark_ddl().lower()

    # -- Arrow ------------------------------------------------------------------------------

    def to_arrow(self) -> pa.DataType:
        r = self.root
        simple = {
            TypeRoot.BOOLEAN: pa.bool_(),
            TypeRoot.TINYINT: pa.int8(),
            TypeRoot.SMALLINT: pa.int16(),
            TypeRoot.INT: pa.int32(),
            TypeRoot.BIGINT: pa.int64(),
            TypeRoot.FLOAT: pa.float32(),
            TypeRoot.DOUBLE: pa.float64(),
            TypeRoot.STRING: pa.string(),
            TypeRoot.BINARY: pa.binary(),
            TypeRoot.DATE: pa.date32(),
        }
        if r in simple:
            return simple[r]
        if r is TypeRoot.DECIMAL:
            assert self.precision is not None and self.scale is not None
            return pa.decimal128(self.precision, self.scale)
        if r is TypeRoot.TIMESTAMP:
            return pa.timestamp(self.timestamp_unit)
        if r is TypeRoot.TIMESTAMP_LTZ:
            return pa.timestamp(self.timestamp_unit, tz="UTC")
        if r is TypeRoot.MAP:
            assert self.key is not None and self.value is not None
            return pa.map_(self.key.to_arrow(), self.value.to_arrow())
        if r is TypeRoot.ROW:
            # nested fields are nullable in Arrow (and so optional in Parquet) even when NOT
            # NULL: under a NULL row Spark's Arrow batches hold NULL children, which Arrow
            # refuses to cast to a non-nullable field; the writer checks NOT NULL fields itself
            return pa.struct([pa.field(f.name, f.type.to_arrow()) for f in self.row_fields])
        assert r is TypeRoot.ARRAY and self.value is not None
        return pa.list_(self.value.to_arrow())

    def __str__(self) -> str:
        return self.spark_ddl()


BOOLEAN = DataType(TypeRoot.BOOLEAN)
TINYINT = DataType(TypeRoot.TINYINT)
SMALLINT = DataType(TypeRoot.SMALLINT)
INT = DataType(TypeRoot.INT)
BIGINT = DataType(TypeRoot.BIGINT)
FLOAT = DataType(TypeRoot.FLOAT)
DOUBLE = DataType(TypeRoot.DOUBLE)
STRING = DataType(TypeRoot.STRING)
BINARY = DataType(TypeRoot.BINARY)
DATE = DataType(TypeRoot.DATE)
TIMESTAMP = DataType(TypeRoot.TIMESTAMP, precision=6)
TIMESTAMP_LTZ = DataType(TypeRoot.TIMESTAMP_LTZ, precision=6)


def decimal_type(precision: int, scale: int) -> DataType:
    if not 1 <= precision <= 38 or not 0 <= scale <= precision:
        raise InvalidArgumentError(f"invalid DECIMAL({precision}, {scale})")
    return DataType(TypeRoot.DECIMAL, precision=precision, scale=scale)


def map_of(key: DataType, value: DataType) -> DataType:
    return DataType(TypeRoot.MAP, key=key.with_nullable(False), value=value)


def array_of(element: DataType) -> DataType:
    return DataType(TypeRoot.ARRAY, value=element)


def row_of(*fields: tuple[str, DataType] | Field) -> DataType:
    """A nullable ROW of ``(name, type)`` pairs or :class:`Field` s.

    Pairs are numbered 0, 1, ... here; a table's schema renumbers every nested field by
    Paimon's rule when the column is created (:func:`assign_field_ids`).

    >>> row_of(("x", INT), ("y", STRING)).spark_ddl()
    'STRUCT<`x`: INT, `y`: STRING>'
    """
    out = tuple(f if isinstance(f, Field) else Field(i, f[0], f[1]) for i, f in enumerate(fields))
    if not out:
        raise TypeMismatchError("a ROW needs at least one field")
    seen: set[str] = set()
    for f in out:
        if f.name.lower() in seen:
            raise TypeMismatchError(f"duplicate field name in ROW: {f.name}")
        seen.add(f.name.lower())
    return DataType(TypeRoot.ROW, fields=out)


def assign_field_ids(
    columns: Iterable[tuple[str, DataType, str | None]], highest: int
) -> tuple[tuple[Field, ...], int]:
    """Number new top-level columns and every field nested in them as Paimon does.

    Paimon's ``Schema.Builder.column`` takes the next id for the column, then
    ``ReassignFieldId`` walks its type: a nested ROW field's own type is renumbered before the
    field takes its id (Java evaluates the argument first), so inner fields get the lower ids.

    Args:
        columns: ``(name, type, description)`` of each new column, in order.
        highest: the schema's ``highestFieldId`` so far (-1 for a new table).

    Returns:
        The fields and the new highest id.

    >>> fs, top = assign_field_ids(
    ...     [("id", INT, None), ("st", row_of(("a", row_of(("b", INT))), ("c", INT)), None)], -1)
    >>> [(f.name, f.id) for f in fs], [(f.name, f.id) for f in fs[1].type.row_fields], top
    ([('id', 0), ('st', 1)], [('a', 3), ('c', 4)], 4)
    """
    counter = [highest]

    def renumber(t: DataType) -> DataType:
        if t.root is TypeRoot.ROW:
            nested = []
            for f in t.row_fields:
                inner = renumber(f.type)
                counter[0] += 1
                nested.append(Field(counter[0], f.name, inner, f.description))
            return replace(t, fields=tuple(nested))
        if t.root is TypeRoot.MAP:
            assert t.key is not None and t.value is not None
            return replace(t, key=renumber(t.key), value=renumber(t.value))
        if t.root is TypeRoot.ARRAY:
            assert t.value is not None
            return replace(t, value=renumber(t.value))
        return t

    out = []
    for name, t, description in columns:
        counter[0] += 1
        top = counter[0]
        out.append(Field(top, name, renumber(t), description))
    return tuple(out), counter[0]


def field_ids(t: DataType) -> Iterator[int]:
    """Every field id nested in ``t`` (Paimon's ``collectFieldIds``)."""
    for f in t.row_fields:
        yield f.id
        yield from field_ids(f.type)
    if t.key is not None:
        yield from field_ids(t.key)
    if t.value is not None:
        yield from field_ids(t.value)


# -- parsing -------------------------------------------------------------------------------

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


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


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
            return row_of(*(Field.from_paimon_json(f) for f in obj["fields"])).with_nullable(
                nullable
            )
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


# -- fields and rows -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Field:
    """A named, numbered column. ``id`` is Paimon's field id, stable across renames."""

    id: int
    name: str
    type: DataType
    description: str | None = None

    def to_paimon_json(self) -> dict[str, Any]:
        """Paimon's ``DataField`` JSON (``id``, ``name``, ``type``, ``description``)."""
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type.to_paimon_json()}
        if self.description is not None:
            out["description"] = self.description
        return out

    @classmethod
    def from_paimon_json(cls, obj: Any) -> Field:
        try:
            return cls(
                int(obj["id"]),
                str(obj["name"]),
                parse_paimon_json(obj["type"]),
                obj.get("description"),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise TypeMismatchError(f"malformed Paimon field {obj!r}") from e

    def spark_ddl(self, sep: str = "") -> str:
        """```name` TYPE [NOT NULL] [COMMENT '...']`` (``sep`` ``":"`` inside a STRUCT)."""
        text = f"`{self.name.replace('`', '``')}`{sep} {self.type.spark_ddl()}"
        if not self.type.nullable:
            text += " NOT NULL"
        if self.description is not None:
            text += " COMMENT " + _quote(self.description)
        return text

    def to_arrow(self) -> pa.Field:
        return pa.field(self.name, self.type.to_arrow(), self.type.nullable)


@dataclass(frozen=True, slots=True)
class RowType:
    """An ordered list of fields with by-name lookup (exact first, then case-insensitive)."""

    fields: tuple[Field, ...]
    _by_name: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, int] = {}
        for i, f in enumerate(self.fields):
            if f.name in by_name:
                raise InvalidArgumentError(f"duplicate column name: {f.name}")
            by_name[f.name] = i
        object.__setattr__(self, "_by_name", by_name)

    @classmethod
    def of(cls, *columns: tuple[str, DataType]) -> RowType:
        return cls(tuple(Field(i, n, t) for i, (n, t) in enumerate(columns)))

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def index_of(self, name: str) -> int:
        """Position of a column.

        Raises:
            ColumnNotFoundError: no such column.
        """
        i = self._by_name.get(name)
        if i is not None:
            return i
        lowered = [j for j, f in enumerate(self.fields) if f.name.lower() == name.lower()]
        if len(lowered) == 1:
            return lowered[0]
        raise ColumnNotFoundError(f"column not found: {name} (columns: {', '.join(self.names)})")

    def field(self, name: str) -> Field:
        return self.fields[self.index_of(name)]

    def has(self, name: str) -> bool:
        try:
            self.index_of(name)
        except ColumnNotFoundError:
            return False
        return True

    def project(self, names: Iterable[str]) -> RowType:
        return RowType(tuple(self.field(n) for n in names))

    def to_arrow(self) -> pa.Schema:
        return pa.schema(
            [pa.field(f.name, f.type.to_arrow(), f.type.nullable) for f in self.fields]
        )

    def spark_ddl(self) -> str:
        return ", ".join(f"`{f.name}` {f.type.spark_ddl()}" for f in self.fields)

    @classmethod
    def from_arrow(cls, schema: pa.Schema) -> RowType:
        return cls(
            tuple(
                Field(i, f.name, from_arrow(f.type).with_nullable(f.nullable))
                for i, f in enumerate(schema)
            )
        )


# -- values ----------------------------------------------------------------------------------


def to_internal(t: DataType, value: Any) -> Any:
    """Convert a Python literal to the internal form of ``t`` (see the module docstring).

    ``None`` stays ``None``. Raises :class:`TypeMismatchError` when the value does not fit.

    >>> to_internal(TIMESTAMP, datetime.datetime(1970, 1, 1, 0, 0, 1))
    1000000
    >>> to_internal(decimal_type(5, 2), "1.5")
    Decimal('1.50')
    """
    if value is None:
        return None
    r = t.root
    try:
        if t.is_integer:
            if isinstance(value, bool) or not isinstance(value, int):
                if (isinstance(value, float) and value.is_integer()) or (
                    isinstance(value, decimal.Decimal) and value == value.to_integral_value()
                ):
                    value = int(value)
                else:
                    raise TypeMismatchError(f"{value!r} is not a valid {t}")
            lo, hi = _INT_RANGES[r]
            if not lo <= value <= hi:
                raise TypeMismatchError(f"{value} is out of range for {t}")
            return value
        if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
                raise TypeMismatchError(f"{value!r} is not a valid {t}")
            return float(value)
        if r is TypeRoot.DECIMAL:
            if isinstance(value, bool):
                raise TypeMismatchError(f"{value!r} is not a valid {t}")
            d = decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)
            assert t.scale is not None and t.precision is not None
            if not d.is_finite():
                raise TypeMismatchError(f"{value} is not a valid {t}")
            q = d.quantize(decimal.Decimal(1).scaleb(-t.scale))
            if q != d or len(q.as_tuple().digits) - t.scale > t.precision - t.scale:
                raise TypeMismatchError(f"{value} does not fit {t}")
            return q
        if r is TypeRoot.STRING:
            if not isinstance(value, str):
                raise TypeMismatchError(f"{value!r} is not a string")
            return value
        if r is TypeRoot.BINARY:
            if isinstance(value, (bytes, bytearray, memoryview)):
                return bytes(value)
            raise TypeMismatchError(f"{value!r} is not binary")
        if r is TypeRoot.BOOLEAN:
            if not isinstance(value, bool):
                raise TypeMismatchError(f"{value!r} is not a boolean")
            return value
        if r is TypeRoot.DATE:
            if isinstance(value, datetime.datetime):
                raise TypeMismatchError(f"{value!r} is a timestamp, not a date")
            if isinstance(value, datetime.date):
                return (value - EPOCH_DATE).days
            if isinstance(value, str):
                return (datetime.date.fromisoformat(value.strip()) - EPOCH_DATE).days
            raise TypeMismatchError(f"{value!r} is not a date")
        if t.is_timestamp:
            return _timestamp_internal(t, value)
    except (ValueError, ArithmeticError, TypeError) as e:
        if isinstance(e, TypeMismatchError):
            raise
        raise TypeMismatchError(f"{value!r} is not a valid {t}: {e}") from e
    raise TypeMismatchError(f"no literal values for type {t}")


def _timestamp_internal(t: DataType, value: Any) -> int:
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value.strip().replace(" ", "T", 1))
    elif isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime.datetime):
        raise TypeMismatchError(f"{value!r} is not a timestamp")
    if value.tzinfo is not None:
        delta = value - EPOCH_UTC
    else:
        # Naive values are wall-clock time; for LTZ columns we interpret them in UTC, which
        # is the session time zone lakeskip configures for Spark.
        delta = value - EPOCH_NAIVE
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if t.timestamp_unit == "ms":
        return micros // 1000
    return micros


def from_internal(t: DataType, value: Any) -> Any:
    """Inverse of :func:`to_internal` for display (dates and timestamps back to datetime)."""
    if value is None:
        return None
    if t.root is TypeRoot.DATE:
        return EPOCH_DATE + datetime.timedelta(days=value)
    if t.is_timestamp:
        micros = value * 1000 if t.timestamp_unit == "ms" else value
        base = EPOCH_UTC if t.root is TypeRoot.TIMESTAMP_LTZ else EPOCH_NAIVE
        return base + datetime.timedelta(microseconds=micros)
    return value
