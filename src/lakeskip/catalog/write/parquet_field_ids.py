"""Parquet field ids, numbered as Paimon's Parquet writer numbers them.

Paimon's ``ParquetSchemaConverter`` gives every Parquet field the id of its Paimon field (a
ROW's nested fields their own ids), and the fields it adds for nested types ids derived from
their column's (``SpecialFields``): an ARRAY's element ``STRUCTURED_TYPE_FIELD_ID_BASE + id *
1024 + depth``, a MAP's key ``BASE - id * 1024 - depth`` and value ``BASE + id * 1024 +
depth``, ``depth`` counting from 1 below the column (and restarting at 0 inside a ROW). In a
primary-key table's key-value file, ``_KEY_<k>`` is ``k``'s id plus ``KEY_FIELD_ID_START``,
``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` are ``Integer.MAX_VALUE - 1`` and ``- 2``. Ids are
Java ``int`` arithmetic (wrapping at 32 bits). pyarrow writes an Arrow field's
``PARQUET:field_id`` metadata as the Parquet field id.

Example:
    >>> from lakeskip.types import BIGINT, RowType, array_of
    >>> row_type = RowType.of(("a", BIGINT), ("xs", array_of(BIGINT)))
    >>> s = with_field_ids(row_type.to_arrow(), row_type)
    >>> [f.metadata[FIELD_ID_KEY] for f in s]
    [b'0', b'1']
    >>> s.field("xs").type.value_field.metadata[FIELD_ID_KEY]
    b'536871936'
"""

from __future__ import annotations

import pyarrow as pa

from lakeskip.catalog.pk.primary_key import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from lakeskip.types import DataType, RowType, TypeRoot

__all__ = ["FIELD_ID_KEY", "with_field_ids"]

FIELD_ID_KEY = b"PARQUET:field_id"
INT_MAX = 2**31 - 1
#: ``SpecialFields``
KEY_FIELD_ID_START = INT_MAX // 2
STRUCTURED_TYPE_FIELD_ID_BASE = INT_MAX // 4
STRUCTURED_TYPE_FIELD_DEPTH_LIMIT = 1 << 10
_SYSTEM_IDS = {SEQUENCE_NUMBER: INT_MAX - 1, VALUE_KIND: INT_MAX - 2}


def _int32(v: int) -> int:
    """Java ``int`` overflow."""
    return (v + 2**31) % 2**32 - 2**31


def _with_id(f: pa.Field, field_id: int) -> pa.Field:
    return f.with_metadata({**(f.metadata or {}), FIELD_ID_KEY: str(field_id).encode()})


def _nested(t: pa.DataType, dt: DataType, field_id: int, depth: int) -> pa.DataType:
    """``t`` with ids on the fields nested in it (``dt`` is its Paimon type, ``field_id`` the
    id of the column or nested field it belongs to, ``depth`` its own depth)."""
    if dt.root is TypeRoot.ROW and pa.types.is_struct(t):
        by_name = {f.name: f for f in dt.row_fields}
        children = []
        for i in range(t.num_fields):
            child = t.field(i)
            sub = by_name.get(child.name)
            if sub is not None:
                child = _with_id(child.with_type(_nested(child.type, sub.type, sub.id, 0)), sub.id)
            children.append(child)
        return pa.struct(children)
    if dt.root is TypeRoot.ARRAY and dt.value is not None and pa.types.is_list(t):
        element = t.value_field
        element_id = _int32(
            STRUCTURED_TYPE_FIELD_ID_BASE + field_id * STRUCTURED_TYPE_FIELD_DEPTH_LIMIT + depth + 1
        )
        element = element.with_type(_nested(element.type, dt.value, field_id, depth + 1))
        return pa.list_(_with_id(element, element_id))
    map_parts = dt.key is not None and dt.value is not None
    if dt.root is TypeRoot.MAP and map_parts and pa.types.is_map(t):
        assert dt.key is not None and dt.value is not None
        step = field_id * STRUCTURED_TYPE_FIELD_DEPTH_LIMIT + depth + 1
        key = t.key_field.with_type(_nested(t.key_type, dt.key, field_id, depth + 1))
        item = t.item_field.with_type(_nested(t.item_type, dt.value, field_id, depth + 1))
        return pa.map_(
            _with_id(key, _int32(STRUCTURED_TYPE_FIELD_ID_BASE - step)),
            _with_id(item, _int32(STRUCTURED_TYPE_FIELD_ID_BASE + step)),
            t.keys_sorted,
        )
    return t


def with_field_ids(schema: pa.Schema, row_type: RowType) -> pa.Schema:
    """``schema`` (a data file's columns: ``row_type``'s, or a key-value file's) with Paimon's
    Parquet field id on every field of ``row_type`` and every system column; other fields are
    left without one."""
    fields = []
    for f in schema:
        column = f.name
        field_id = _SYSTEM_IDS.get(column)
        if field_id is None and column.startswith(KEY_PREFIX) and not row_type.has(column):
            key = column[len(KEY_PREFIX) :]
            if row_type.has(key):
                field_id = row_type.field(key).id + KEY_FIELD_ID_START
        if field_id is not None:
            fields.append(_with_id(f, field_id))
        elif row_type.has(column) and row_type.field(column).name == column:
            p = row_type.field(column)
            fields.append(_with_id(f.with_type(_nested(f.type, p.type, p.id, 0)), p.id))
        else:
            fields.append(f)
    return pa.schema(fields, metadata=schema.metadata)
