"""Files written under an older schema, read under the current one by field id: whether
Spark's by-name read of such a file is right (:func:`reads_by_name`), and its rows mapped onto
the current columns -- renamed columns under their new names, widened ones cast, columns
added since as NULL, dropped ones gone (:func:`arrow_by_id`; a primary-key table's key-value
files by :func:`kv_by_id`). :mod:`lakeskip.catalog.schema_evolution` makes the schemas; this
module reads the files they leave behind. Java's catalog scan does the same per file
(``LakeEvolvedScan``, ``LakePkScan``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.pk.primary_key import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from lakeskip.types import Field, RowType, TypeRoot

__all__ = ["arrow_by_id", "kv_by_id", "kv_key_columns", "reads_by_name"]


def reads_by_name(file_type: RowType, table_type: RowType) -> bool:
    """Whether reading a file written with ``file_type`` by column *name* under ``table_type``
    gives what reading it by field id would (a reader fills a column the file lacks with
    NULL): every column the file has under the table's id has the same name and type (nested
    fields too), and no column of the table takes a name the file uses for another id (a
    dropped, then re-added, or renamed-over column).

    >>> from lakeskip.types import BIGINT, INT
    >>> old = RowType((Field(0, "a", INT), Field(1, "b", INT)))
    >>> reads_by_name(old, RowType((*old, Field(2, "c", INT))))
    True
    >>> reads_by_name(old, RowType((Field(0, "a", INT), Field(1, "bb", INT))))
    False
    >>> reads_by_name(old, RowType((Field(0, "a", BIGINT),)))
    False
    >>> reads_by_name(old, RowType((Field(0, "a", INT), Field(2, "b", INT))))
    False
    """
    return _same_fields(file_type.fields, table_type.fields)


def _same_fields(file_fields: Sequence[Field], table_fields: Sequence[Field]) -> bool:
    by_id = {f.id: f for f in file_fields}
    by_name = {f.name.lower(): f for f in file_fields}
    for f in table_fields:
        g = by_id.get(f.id)
        if g is None:
            if f.name.lower() in by_name:
                return False
            continue
        if g.name != f.name:
            return False
        a, b = g.type.with_nullable(True), f.type.with_nullable(True)
        if a.root is TypeRoot.ROW and b.root is TypeRoot.ROW:
            if not _same_fields(a.row_fields, b.row_fields):
                return False
        elif a != b:
            return False
    return True


def arrow_by_id(
    data: pa.Table, file_type: RowType, table_type: RowType, names: Sequence[str] | None = None
) -> pa.Table:
    """A data file's rows, read under its own column names (``file_type``: the schema it was
    written with), as the columns of ``table_type`` (only ``names``, in that order, when
    given) matched by field id: renamed columns under their new names, widened ones cast,
    columns added since as NULL, dropped ones gone; nested ROW fields likewise. What every
    rewrite of old files (compaction) must do, or a renamed column's values are lost.

    >>> import pyarrow as pa
    >>> from lakeskip.types import BIGINT, INT
    >>> old = RowType((Field(0, "a", INT), Field(1, "b", INT)))
    >>> new = RowType((Field(2, "c", INT), Field(0, "a", BIGINT), Field(1, "bb", INT)))
    >>> arrow_by_id(pa.table({"a": pa.array([1], pa.int32()), "b": pa.array([2], pa.int32())}),
    ...             old, new).to_pylist()
    [{'c': None, 'a': 1, 'bb': 2}]
    """
    by_id = {f.id: f for f in file_type}
    wanted = [table_type.field(n) for n in names] if names is not None else list(table_type)
    schema = table_type.to_arrow()
    arrays = []
    for f in wanted:
        g = by_id.get(f.id)
        present = g is not None and g.name in data.column_names
        column = data.column(g.name).combine_chunks() if g is not None and present else None
        arrays.append(_arrow_field(column, g, f, data.num_rows))
    return pa.table(arrays, schema=pa.schema([schema.field(f.name) for f in wanted]))


def _arrow_field(column: pa.Array | None, stored: Field | None, now: Field, n: int) -> pa.Array:
    target = now.type.to_arrow()
    if column is None or stored is None:
        return pa.nulls(n, target)
    if stored.type.root is TypeRoot.ROW and now.type.root is TypeRoot.ROW:
        children = column.flatten()  # with the struct's own nulls and offset applied
        inner = {g.id: g for g in stored.type.row_fields}
        parts = []
        for c in now.type.row_fields:
            g = inner.get(c.id)
            i = column.type.get_field_index(g.name) if g is not None else -1
            parts.append(_arrow_field(children[i] if i >= 0 else None, g, c, len(column)))
        return pa.StructArray.from_arrays(parts, fields=list(target), mask=column.is_null())
    return column.cast(target)


def kv_by_id(data: pa.Table, file_schema: TableSchema, table_schema: TableSchema) -> pa.Table:
    """A key-value file's rows (read under the names of ``file_schema``, the schema it was
    written with) as the columns of a key-value file of ``table_schema``, by field id: the
    ``_KEY_`` columns under the key's current names, sequence number and kind as read, the
    value columns as :func:`arrow_by_id` maps them (renamed, widened, NULL if added since,
    dropped ones gone). The same table back when the schemas are the same.

    >>> import pyarrow as pa
    >>> from lakeskip.catalog.schema_evolution import RenameColumn, UpdateColumnType, apply_changes
    >>> from lakeskip.types import BIGINT, INT
    >>> old = TableSchema.create(0, RowType((Field(0, "k", INT), Field(1, "v", INT))), [],
    ...                          {}, None, ("k",))
    >>> new = apply_changes(old, [RenameColumn(("k",), "id"), RenameColumn(("v",), "w"),
    ...                           UpdateColumnType(("w",), BIGINT)])
    >>> data = pa.table({"_KEY_k": [1], "_SEQUENCE_NUMBER": [7], "_VALUE_KIND": pa.array([0],
    ...                  pa.int8()), "k": pa.array([1], pa.int32()), "v": pa.array([2], pa.int32())})
    >>> kv_by_id(data, old, new).to_pylist()
    [{'_KEY_id': 1, '_SEQUENCE_NUMBER': 7, '_VALUE_KIND': 0, 'id': 1, 'w': 2}]
    """
    if file_schema.id == table_schema.id:
        return data
    file_type, table_type = file_schema.row_type, table_schema.row_type
    by_id = {f.id: f for f in file_type}
    columns: dict[str, pa.ChunkedArray | pa.Array] = {}
    for k in table_schema.primary_keys:
        if k in table_schema.partition_keys:
            continue
        g = by_id.get(table_type.field(k).id)
        old = KEY_PREFIX + (g.name if g is not None else k)
        if old in data.column_names:
            columns[KEY_PREFIX + k] = data.column(old)
    for name in (SEQUENCE_NUMBER, VALUE_KIND):
        if name in data.column_names:
            columns[name] = data.column(name)
    values = arrow_by_id(data, file_type, table_type)
    for name in values.column_names:
        columns[name] = values.column(name)
    return pa.table(columns)


def kv_key_columns(file_schema: TableSchema, table_schema: TableSchema) -> tuple[str, ...]:
    """The ``_KEY_`` column names a key-value file of ``file_schema`` holds for the trimmed
    key of ``table_schema``, in its order (a key column renamed since: its old name)."""
    by_id = {f.id: f.name for f in file_schema.row_type}
    row_type = table_schema.row_type
    return tuple(
        KEY_PREFIX + by_id.get(row_type.field(k).id, k)
        for k in table_schema.primary_keys
        if k not in table_schema.partition_keys
    )
