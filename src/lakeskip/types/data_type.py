"""The type model: :class:`TypeRoot`, :class:`DataType` (a small frozen value, with its Paimon,
Spark and Arrow spellings out) and :class:`Field` (a named, numbered column), the type
constants and constructors, and Paimon's numbering of nested fields (:func:`assign_field_ids`).

Spellings in (parsing Paimon, Spark and Arrow types): :mod:`lakeskip.types.type_parser`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from lakeskip.errors import InvalidArgumentError, SqlParseError, TypeMismatchError

__all__ = [
    "BIGINT",
    "BINARY",
    "BOOLEAN",
    "DATE",
    "DOUBLE",
    "FLOAT",
    "INT",
    "INT_RANGES",
    "MAX_VARCHAR",
    "SMALLINT",
    "STRING",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "TINYINT",
    "DataType",
    "Field",
    "TypeRoot",
    "array_of",
    "assign_field_ids",
    "decimal_type",
    "field_ids",
    "map_of",
    "quote_identifier",
    "quote_sql_string",
    "row_of",
    "split_identifier",
]

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
INT_RANGES = {
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

        >>> row_of(("Ab", INT), ("c", map_of(STRING, array_of(BIGINT)))).simple_string()
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

    def spark_ddl(self, sep: str = "") -> str:
        """```name` TYPE [NOT NULL] [COMMENT '...']`` (``sep`` ``":"`` inside a STRUCT)."""
        text = f"{quote_identifier(self.name)}{sep} {self.type.spark_ddl()}"
        if not self.type.nullable:
            text += " NOT NULL"
        if self.description is not None:
            text += " COMMENT " + quote_sql_string(self.description)
        return text

    def to_arrow(self) -> pa.Field:
        return pa.field(self.name, self.type.to_arrow(), self.type.nullable)


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


def quote_identifier(name: str) -> str:
    """``name`` (a column, table, database, alias or option key) as a backquoted SQL
    identifier, a backquote doubled: the one quoting of every SQL text lakeskip builds."""
    return "`" + name.replace("`", "``") + "`"


def split_identifier(text: str) -> tuple[str, ...]:
    """The parts of a multi-part SQL identifier, as Spark reads them: parts joined by dots,
    each a bare name or backquoted (a dot inside is part of the name, a doubled backquote
    is one backquote); the inverse of :func:`quote_identifier` joined by dots.

    Raises:
        SqlParseError: an empty part, an unclosed backquote, or a backquote inside a bare
            part; ``col`` is the 1-based position in ``text``.

    >>> split_identifier("db.`a.b`.`c``d`")
    ('db', 'a.b', 'c`d')
    """
    parts: list[str] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i < n and text[i] == "`":
            start, chars = i, []
            i += 1
            while True:
                j = text.find("`", i)
                if j < 0:
                    raise SqlParseError(f"unclosed backquote in identifier {text!r}", 1, start + 1)
                chars.append(text[i:j])
                if text.startswith("``", j):
                    chars.append("`")
                    i = j + 2
                    continue
                i = j + 1
                break
            parts.append("".join(chars))
        else:
            start = i
            while i < n and text[i] not in ".`":
                i += 1
            name = text[start:i].strip()
            if i < n and text[i] == "`":
                raise SqlParseError(f"backquote inside a name in identifier {text!r}", 1, i + 1)
            if not name:
                raise SqlParseError(f"empty name in identifier {text!r}", 1, start + 1)
            parts.append(name)
        while i < n and text[i].isspace():
            i += 1
        if i == n:
            return tuple(parts)
        if text[i] != ".":
            raise SqlParseError(
                f"expected '.' after a quoted name in identifier {text!r}", 1, i + 1
            )
        i += 1


def quote_sql_string(text: str) -> str:
    """``text`` as a single-quoted SQL string literal (backslash escapes)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
