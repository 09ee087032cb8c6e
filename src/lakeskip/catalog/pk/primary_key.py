"""Primary-key tables: the key-value data file layout, as Paimon writes it.

A primary-key table's data file is not the table's rows: each row is one *version* of a key
(Paimon's ``KeyValue``), with system columns before the value::

    +-------------+-----+-------------+-------------------+--------------+----------------+
    | _KEY_<k1>   | ... | _KEY_<kn>   | _SEQUENCE_NUMBER  | _VALUE_KIND  | every column   |
    | (trimmed    |     |             | BIGINT NOT NULL   | TINYINT NOT  | of the table,  |
    |  key)       |     |             | per (partition,   | NULL: 0 +I,  | in table order |
    |             |     |             |  bucket), rising  | 1 -U, 2 +U,  | (the "value")  |
    |             |     |             |                   | 3 -D         |                |
    +-------------+-----+-------------+-------------------+--------------+----------------+

The *trimmed* key is the primary key minus the partition columns (``KeyValueFileWriterFactory``,
``SpecialFields``, pypaimon's ``KeyValueDataWriter._add_system_fields``). Inside one file the
rows are sorted by key and each key appears once; across the files of a bucket the newest
sequence number of a key wins, and ``-U``/``-D`` versions mean "no row" (merge-on-read,
``merge-engine = deduplicate``; other engines: :mod:`lakeskip.catalog.pk.merge_engine`).

Example:
    >>> from lakeskip.types import BIGINT, STRING, RowType
    >>> from lakeskip.catalog.format.schema import TableSchema
    >>> s = TableSchema.create(0, RowType.of(("id", BIGINT), ("v", STRING)), [], {}, None,
    ...                        primary_keys=["id"])
    >>> kv_field_names(s)
    ['_KEY_id', '_SEQUENCE_NUMBER', '_VALUE_KIND', 'id', 'v']
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lakeskip.catalog.pk.merge_engine import DEDUPLICATE, MERGE_ENGINE, check_merge_options
from lakeskip.errors import InvalidArgumentError, InvalidOptionError
from lakeskip.types import DataType, Field, RowType, TypeRoot

if TYPE_CHECKING:
    from lakeskip.catalog.format.schema import TableSchema

__all__ = [
    "KEY_PREFIX",
    "MERGE_ENGINE",
    "PRIMARY_KEY_OPTION",
    "SEQUENCE_NUMBER",
    "TOP_LEVEL",
    "VALUE_KIND",
    "KeyLayout",
    "RowKind",
    "check_primary_key",
    "kv_field_names",
    "to_key_value",
]

KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
PRIMARY_KEY_OPTION = "primary-key"
DEFAULT_MERGE_ENGINE = DEDUPLICATE
# Paimon's default for a primary-key table without ``bucket`` is dynamic bucket (-1), which
# needs a hash index mapping each key to its bucket. lakeskip writes an explicit fixed
# ``bucket`` instead (Paimon's own default before dynamic bucket existed): every reader
# (Paimon Java, pypaimon) reads a fixed-bucket table, and no index file is needed.
DEFAULT_PK_BUCKETS = "1"
# Paimon's ``num-levels`` defaults to ``num-sorted-run.compaction-trigger`` (5) + 1 = 6, and
# its full compaction writes to the top level, 5: so do lakeskip's compaction and a
# deletion-vector write into an empty bucket. Paimon's ``t$read_optimized`` reads exactly
# that level (level 4 was read correctly by every reader, but was not "read-optimized").
TOP_LEVEL = 5

# Key types whose order is the same in pyarrow's sort (the writer), Spark's ordering (the
# merging reader) and Paimon's key comparator: integers, decimals, dates, timestamps,
# booleans, strings and binary (unsigned byte order). FLOAT/DOUBLE are left out: NaN and
# -0.0 order differently between them.
_KEY_ROOTS = frozenset(
    {
        TypeRoot.BOOLEAN,
        TypeRoot.TINYINT,
        TypeRoot.SMALLINT,
        TypeRoot.INT,
        TypeRoot.BIGINT,
        TypeRoot.DECIMAL,
        TypeRoot.DATE,
        TypeRoot.TIMESTAMP,
        TypeRoot.TIMESTAMP_LTZ,
        TypeRoot.STRING,
        TypeRoot.BINARY,
    }
)


class RowKind(enum.IntEnum):
    """``_VALUE_KIND`` (Paimon's ``RowKind`` byte values)."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """The key of a primary-key table: the trimmed key columns and their types."""

    primary_keys: tuple[str, ...]
    trimmed: tuple[str, ...]
    types: tuple[DataType, ...]

    @property
    def key_columns(self) -> tuple[str, ...]:
        """``_KEY_<k>`` for every trimmed key column."""
        return tuple(KEY_PREFIX + k for k in self.trimmed)


def key_layout(
    primary_keys: Sequence[str], partition_keys: Sequence[str], row_type: RowType
) -> KeyLayout:
    trimmed = tuple(k for k in primary_keys if k not in partition_keys)
    return KeyLayout(tuple(primary_keys), trimmed, tuple(row_type.field(k).type for k in trimmed))


def schema_key_layout(schema: TableSchema) -> KeyLayout:
    """The key layout of a primary-key table's schema."""
    return key_layout(schema.primary_keys, schema.partition_keys, schema.row_type)


def kv_field_names(schema: TableSchema) -> list[str]:
    """Column names of a key-value data file of ``schema``."""
    layout = schema_key_layout(schema)
    return [*layout.key_columns, SEQUENCE_NUMBER, VALUE_KIND, *schema.row_type.names]


def check_primary_key(
    primary_keys: Sequence[str],
    row_type: RowType,
    partition_keys: Sequence[str],
    options: Mapping[str, str],
) -> tuple[tuple[str, ...], RowType, dict[str, str]]:
    """Validate a primary key as Paimon does and return (keys, row type, options) as stored.

    Key columns become NOT NULL; ``bucket`` defaults to :data:`DEFAULT_PK_BUCKETS`; a
    ``bucket-key`` must lie within the trimmed key.

    Raises:
        InvalidArgumentError: unknown or repeated key column, a partition column missing from
            the key, a key equal to the partition columns, a key type that cannot be merged.
        InvalidOptionError: ``bucket = -1`` (dynamic bucket), a bad ``bucket-key``, a merge
            engine or merge option lakeskip does not implement (:mod:`.merge_engine`).
    """
    keys: list[str] = []
    for k in primary_keys:
        if not row_type.has(k):
            raise InvalidArgumentError(
                f"primary key column not found: {k} (columns: {', '.join(row_type.names)})"
            )
        name = row_type.field(k).name
        if name in keys:
            raise InvalidArgumentError(f"primary key column {name} listed twice")
        t = row_type.field(name).type
        if t.root not in _KEY_ROOTS:
            raise InvalidArgumentError(
                f"primary key column {name} of type {t} is not supported yet "
                "(integers, decimals, strings, binary, booleans, dates, timestamps)"
            )
        keys.append(name)
    if not keys:
        raise InvalidArgumentError("a primary key needs at least one column")
    missing = [p for p in partition_keys if p not in keys]
    if missing:
        raise InvalidArgumentError(
            f"primary key ({', '.join(keys)}) must contain all partition columns "
            f"(missing: {', '.join(missing)})"
        )
    if len(keys) == len(partition_keys):
        raise InvalidArgumentError(
            f"primary key ({', '.join(keys)}) must not be just the partition columns"
        )
    trimmed = [k for k in keys if k not in partition_keys]
    fields = tuple(
        Field(f.id, f.name, f.type.with_nullable(False), f.description) if f.name in keys else f
        for f in row_type
    )
    opts = dict(options)
    check_merge_options(opts, keys)
    bucket = opts.setdefault("bucket", DEFAULT_PK_BUCKETS).strip()
    try:
        n = int(bucket)
    except ValueError:
        raise InvalidOptionError(f"option 'bucket' = {bucket!r}: not an integer") from None
    if n <= 0:
        raise InvalidOptionError(
            f"option 'bucket' = {bucket!r}: primary-key tables need a fixed bucket count > 0 "
            "(dynamic bucket -1 is not supported yet)"
        )
    if opts.get("clustering.columns"):
        raise InvalidOptionError(
            "option 'clustering.columns' is not supported on primary-key tables "
            "(files are sorted by the primary key)"
        )
    bucket_key = opts.get("bucket-key")
    if bucket_key is not None:
        for c in (c.strip() for c in bucket_key.split(",")):
            if c not in trimmed:
                raise InvalidOptionError(
                    f"option 'bucket-key': {c!r} is not a primary key column outside the "
                    f"partition columns ({', '.join(trimmed)})"
                )
    return tuple(keys), RowType(fields), opts


def default_bucket_key(
    primary_keys: Sequence[str], partition_keys: Sequence[str]
) -> tuple[str, ...]:
    """Paimon's bucket key when ``bucket-key`` is not set: the trimmed primary key."""
    return tuple(k for k in primary_keys if k not in partition_keys)


def to_key_value(
    values: pa.Table,
    layout: KeyLayout,
    first_sequence: int,
    kind: RowKind,
    versions: tuple[pa.Array, pa.Array] | None = None,
) -> pa.Table:
    """The key-value file table of ``values`` (already sorted by key, unique keys): key
    columns, sequence numbers ``first_sequence ...``, ``kind``, then the value columns.
    ``versions``: the rows' own (sequence numbers, kinds) instead (compaction)."""
    n = values.num_rows
    arrays: list[pa.Array | pa.ChunkedArray] = []
    fields: list[pa.Field] = []
    for k, kc in zip(layout.trimmed, layout.key_columns, strict=True):
        col = values.column(k)
        arrays.append(col)
        fields.append(pa.field(kc, col.type, nullable=False))
    if versions is not None:
        arrays.append(versions[0].cast(pa.int64()))
    else:
        arrays.append(pa.array(np.arange(first_sequence, first_sequence + n, dtype=np.int64)))
    fields.append(pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False))
    if versions is not None:
        arrays.append(versions[1].cast(pa.int8()))
    else:
        arrays.append(pa.array(np.full(n, int(kind), dtype=np.int8)))
    fields.append(pa.field(VALUE_KIND, pa.int8(), nullable=False))
    for i, f in enumerate(values.schema):
        arrays.append(values.column(i))
        fields.append(f)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
