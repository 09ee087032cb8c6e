"""A table's columns: :class:`RowType`, an ordered list of
:class:`~lakeskip.types.data_type.Field` with by-name lookup."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from lakeskip.errors import ColumnNotFoundError, InvalidArgumentError
from lakeskip.types.data_type import DataType, Field, quote_identifier
from lakeskip.types.type_parser import from_arrow

__all__ = ["RowType"]


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
        return ", ".join(f"{quote_identifier(f.name)} {f.type.spark_ddl()}" for f in self.fields)

    @classmethod
    def from_arrow(cls, schema: pa.Schema) -> RowType:
        return cls(
            tuple(
                Field(i, f.name, from_arrow(f.type).with_nullable(f.nullable))
                for i, f in enumerate(schema)
            )
        )
