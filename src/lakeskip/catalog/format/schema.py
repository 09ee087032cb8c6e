"""Table schemas: ``<table>/schema/schema-N``, JSON as Paimon's ``SchemaSerializer`` writes it.

::

    {
      "version" : 3,
      "id" : 0,
      "fields" : [ {"id" : 0, "name" : "a", "type" : "BIGINT"}, ... ],
      "highestFieldId" : 1,
      "partitionKeys" : [ "dt" ],
      "primaryKeys" : [ ],
      "options" : { "bucket" : "-1", ... },
      "comment" : "...",          (only when set)
      "timeMillis" : 1700000000000
    }

Every ``ALTER TABLE`` writes the next ``schema-N`` with an atomic create-if-absent, so two
concurrent alters cannot both claim the same id. Data files record the schema id they were
written with; field ids map their columns to the current schema.

Example:
    >>> from lakeskip.types import BIGINT, RowType, STRING
    >>> s = TableSchema.create(0, RowType.of(("id", BIGINT), ("dt", STRING)), ["dt"], {}, None)
    >>> TableSchema.from_json(s.to_json()) == s
    True
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.bucket import BucketSpec, bucket_spec
from lakeskip.errors import CorruptMetadataError, InvalidArgumentError, LakeskipError
from lakeskip.types import DataType, Field, RowType, field_ids, parse_paimon_field

__all__ = [
    "SCHEMA_VERSION",
    "SYSTEM_FIELD_NAMES",
    "SchemaManager",
    "TableSchema",
    "check_field_names",
]

SCHEMA_VERSION = 3
SCHEMA_DIR = "schema"
SCHEMA_PREFIX = "schema-"

#: top-level column names Paimon refuses in a table's schema (``SpecialFields``'
#: ``SYSTEM_FIELD_NAMES``, checked with the ``_KEY_`` prefix by ``SchemaValidation``)
SYSTEM_FIELD_NAMES = ("_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID")
KEY_FIELD_PREFIX = "_KEY_"


def check_field_names(names: Sequence[str]) -> None:
    """Refuse the top-level column names Paimon's ``SchemaValidation`` refuses on CREATE and
    ALTER (its system columns, case-sensitive as there): any other name, backquotes, quotes,
    dots, spaces and unicode included, is a column name.

    Raises:
        InvalidArgumentError: a system column name or one starting with ``_KEY_``.
    """
    for name in names:
        if name in SYSTEM_FIELD_NAMES:
            raise InvalidArgumentError(
                f"column name {name!r} is one of Paimon's system columns "
                f"({', '.join(SYSTEM_FIELD_NAMES)}): rename it"
            )
        if name.startswith(KEY_FIELD_PREFIX):
            raise InvalidArgumentError(
                f"column name {name!r} starts with {KEY_FIELD_PREFIX!r}, the prefix of "
                "Paimon's key columns: rename it"
            )


@dataclass(frozen=True, slots=True)
class TableSchema:
    """One version of a table's schema (``schema/schema-<id>``)."""

    id: int
    fields: RowType
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: Mapping[str, str]
    comment: str | None
    highest_field_id: int
    time_millis: int
    version: int = field(default=SCHEMA_VERSION)

    @classmethod
    def create(
        cls,
        schema_id: int,
        row_type: RowType,
        partition_keys: Sequence[str],
        options: Mapping[str, str],
        comment: str | None,
        primary_keys: Sequence[str] = (),
    ) -> TableSchema:
        """A new schema; field ids (nested ones too) are taken from ``row_type`` as given."""
        highest = _highest_id(row_type)
        return cls(
            id=schema_id,
            fields=row_type,
            partition_keys=tuple(partition_keys),
            primary_keys=tuple(primary_keys),
            options=dict(options),
            comment=comment,
            highest_field_id=highest,
            time_millis=int(time.time() * 1000),
        )

    @property
    def row_type(self) -> RowType:
        return self.fields

    @property
    def partition_type(self) -> RowType:
        """The partition columns, in partition-key order."""
        return self.fields.project(self.partition_keys)

    @property
    def is_primary_key_table(self) -> bool:
        return bool(self.primary_keys)

    def bucket_spec(self) -> BucketSpec | None:
        """The fixed-bucket spec (``None``: unaware-bucket); a primary-key table's bucket key
        defaults to its primary key minus the partition columns, as in Paimon."""
        default = [k for k in self.primary_keys if k not in self.partition_keys]
        return bucket_spec(self.options, self.fields, default)

    def partition_types(self) -> tuple[DataType, ...]:
        return tuple(f.type for f in self.partition_type)

    def with_options(self, schema_id: int, options: Mapping[str, str]) -> TableSchema:
        """The next schema version with new options (same fields)."""
        return TableSchema(
            id=schema_id,
            fields=self.fields,
            partition_keys=self.partition_keys,
            primary_keys=self.primary_keys,
            options=dict(options),
            comment=self.comment,
            highest_field_id=self.highest_field_id,
            time_millis=int(time.time() * 1000),
        )

    def to_json(self) -> str:
        obj: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [_field_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:
            obj["comment"] = self.comment
        obj["timeMillis"] = self.time_millis
        return json.dumps(obj, indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> TableSchema:
        """Parse a schema file.

        Raises:
            CorruptMetadataError: not a Paimon schema we can read.
        """
        try:
            obj = json.loads(text)
            fields = RowType(tuple(parse_paimon_field(f) for f in obj["fields"]))
            return cls(
                id=int(obj["id"]),
                fields=fields,
                partition_keys=tuple(obj.get("partitionKeys") or ()),
                primary_keys=tuple(obj.get("primaryKeys") or ()),
                options={str(k): str(v) for k, v in (obj.get("options") or {}).items()},
                comment=obj.get("comment"),
                highest_field_id=int(obj.get("highestFieldId", _highest_id(fields))),
                time_millis=int(obj.get("timeMillis") or 0),
                version=int(obj.get("version", 1)),
            )
        except (ValueError, KeyError, TypeError, LakeskipError) as e:
            if isinstance(e, CorruptMetadataError):
                raise
            raise CorruptMetadataError(f"cannot parse table schema: {e}") from e


def _field_json(f: Field) -> dict[str, Any]:
    return f.to_paimon_json()


def _highest_id(row_type: RowType) -> int:
    """Paimon's ``RowType.currentHighestFieldId``: the largest id, nested fields included."""
    return max((i for f in row_type for i in (f.id, *field_ids(f.type))), default=-1)


class SchemaManager:
    """Reads and commits ``schema-N`` files of one table."""

    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.dir = f"{table_path}/{SCHEMA_DIR}"

    def path(self, schema_id: int) -> str:
        return f"{self.dir}/{SCHEMA_PREFIX}{schema_id}"

    def list_ids(self) -> list[int]:
        n = len(SCHEMA_PREFIX)
        return sorted(
            int(st.name[n:])
            for st in self.file_io.list_dir(self.dir)
            if st.name.startswith(SCHEMA_PREFIX) and st.name[n:].isdigit()
        )

    def latest(self) -> TableSchema | None:
        ids = self.list_ids()
        return self.read(ids[-1]) if ids else None

    def read(self, schema_id: int) -> TableSchema:
        return TableSchema.from_json(self.read_bytes(schema_id))

    def read_bytes(self, schema_id: int) -> bytes:
        """The ``schema-<id>`` file as stored; raises CorruptMetadataError if missing."""
        try:
            return self.file_io.read_bytes(self.path(schema_id))
        except FileNotFoundError as e:
            raise CorruptMetadataError(f"schema {schema_id} not found in {self.dir}") from e

    def try_commit(self, schema: TableSchema) -> bool:
        """Publish ``schema`` as ``schema-<id>``; False if that id is taken.

        A ``schema-<id>`` already holding exactly these bytes is this call's own write
        whose answer was lost (:meth:`FileIO.try_publish`; the schema's ``timeMillis``
        makes its bytes its own): committed, so that CREATE TABLE does not report an
        existing table and ALTER does not apply its change a second time."""
        return self.file_io.try_publish(self.path(schema.id), schema.to_json().encode("utf-8"))
