"""Schema evolution with Paimon's semantics: ``ALTER TABLE`` column changes as typed values,
applied to a schema as Paimon's ``SchemaManager.generateTableSchema`` applies them.

A change names its column by path (``("st", "x")`` is field ``x`` of ROW column ``st``).
The result is the next ``schema-N``: fields keep their ids across renames, moves, type and
nullability changes; a new column (and every field nested in it) takes fresh ids after
``highestFieldId``; a dropped column's id is never reused. Files keep the schema id they were
written with, and readers map their columns to the current schema by id
(:mod:`lakeskip.catalog.field_mapping`).

What is refused, in one line (:class:`~lakeskip.errors.SchemaChangeError`), as Paimon does:
NOT NULL on an added column; renaming, retyping or dropping a partition column; retyping or
dropping a primary-key column, or making one nullable; dropping every column; a type change
Paimon would call lossy; NULL -> NOT NULL unless the table's option
``alter-column-null-to-not-null.disabled`` is ``false`` (and then
:meth:`~lakeskip.catalog.catalog.Catalog.alter_columns` also wants every live file's stats to
prove the column holds no NULL, which Paimon does not check). Stricter than Paimon, where
old files would read wrong here: only the widenings that cast every old value exactly
(:func:`widens`, a subset of Paimon's implicit casts), no retyping of a ``bucket-key``
or ``sequence.field`` column (old files were bucketed / ordered by the old type's bytes), and
on primary-key tables no RENAME, TYPE or DROP of a nested field. Top-level columns of
primary-key tables evolve as Paimon lets them (RENAME of a value or key column, TYPE of a
value column, DROP of a value column): their key-value files are read by field id too
(:func:`kv_by_id` in Python, ``LakePkScan`` in Java). A ``sequence.field`` or
``fields.*.sequence-group`` column is renamed in its option.

Options follow a rename (Paimon renames ``bucket-key``, ``sequence.field`` and ``fields.<c>.*``;
lakeskip also renames the column in ``file-index.<type>.columns`` and its per-column index
options, so an index keeps working under the new name); a dropped column leaves
``file-index.*`` (its index is no longer written or read), and a column other options name
cannot be dropped.

Example:
    >>> from lakeskip.catalog.format.schema import TableSchema
    >>> from lakeskip.types import BIGINT, INT, STRING, RowType
    >>> s = TableSchema.create(0, RowType.of(("id", INT), ("s", STRING)), [], {}, None)
    >>> s = dataclasses.replace(s, fields=RowType(tuple(
    ...     dataclasses.replace(f, id=i) for i, f in enumerate(s.fields))), highest_field_id=1)
    >>> n = apply_changes(s, [RenameColumn(("s",), "name"), UpdateColumnType(("id",), BIGINT),
    ...                       AddColumn(("c",), INT, move=Move.first())])
    >>> [(f.id, f.name, str(f.type)) for f in n.fields], n.highest_field_id, n.id
    ([(2, 'c', 'INT'), (0, 'id', 'BIGINT'), (1, 'name', 'STRING')], 2, 1)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from lakeskip.catalog.format.schema import TableSchema
from lakeskip.errors import ColumnNotFoundError, SchemaChangeError
from lakeskip.index.options import PREFIX as FILE_INDEX_PREFIX
from lakeskip.types import DataType, Field, RowType, TypeRoot, assign_field_ids

__all__ = [
    "NULL_TO_NOT_NULL_DISABLED",
    "AddColumn",
    "DropColumn",
    "Move",
    "RenameColumn",
    "SchemaChange",
    "UpdateColumnComment",
    "UpdateColumnNullability",
    "UpdateColumnPosition",
    "UpdateColumnType",
    "apply_changes",
    "drop_index_options",
    "rename_in_options",
    "widens",
]

#: Paimon's option: while true (the default), NULL -> NOT NULL is refused
NULL_TO_NOT_NULL_DISABLED = "alter-column-null-to-not-null.disabled"
#: options whose value is a comma-separated list of top-level column names
_LIST_OPTIONS = ("bucket-key", "sequence.field", "clustering.columns")
_FIELDS_PREFIX = "fields."


@dataclass(frozen=True, slots=True)
class Move:
    """Where a column goes: ``FIRST``, ``LAST``, or ``AFTER`` / ``BEFORE`` ``reference``."""

    kind: Literal["FIRST", "LAST", "AFTER", "BEFORE"]
    reference: str | None = None

    @classmethod
    def first(cls) -> Move:
        return cls("FIRST")

    @classmethod
    def after(cls, reference: str) -> Move:
        return cls("AFTER", reference)


@dataclass(frozen=True, slots=True)
class AddColumn:
    path: tuple[str, ...]
    type: DataType
    comment: str | None = None
    move: Move | None = None


@dataclass(frozen=True, slots=True)
class RenameColumn:
    path: tuple[str, ...]
    new_name: str


@dataclass(frozen=True, slots=True)
class DropColumn:
    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class UpdateColumnType:
    """A new type for the column; its nullability is kept (Spark's ``ALTER COLUMN TYPE``)."""

    path: tuple[str, ...]
    type: DataType


@dataclass(frozen=True, slots=True)
class UpdateColumnNullability:
    path: tuple[str, ...]
    nullable: bool


@dataclass(frozen=True, slots=True)
class UpdateColumnComment:
    path: tuple[str, ...]
    comment: str | None


@dataclass(frozen=True, slots=True)
class UpdateColumnPosition:
    path: tuple[str, ...]
    move: Move


SchemaChange = (
    AddColumn
    | RenameColumn
    | DropColumn
    | UpdateColumnType
    | UpdateColumnNullability
    | UpdateColumnComment
    | UpdateColumnPosition
)


_VERBS: Mapping[type, str] = {
    AddColumn: "ADD COLUMN",
    RenameColumn: "RENAME COLUMN",
    DropColumn: "DROP COLUMN",
    UpdateColumnType: "ALTER COLUMN TYPE",
}


def widens(old: DataType, new: DataType) -> bool:
    """Whether every value of ``old`` reads exactly as ``new`` (a subset of Paimon's implicit
    casts that Spark's and pyarrow's Parquet readers also widen).

    >>> from lakeskip.types import BIGINT, DOUBLE, FLOAT, INT, STRING, decimal_type
    >>> widens(INT, BIGINT), widens(BIGINT, INT), widens(FLOAT, DOUBLE), widens(INT, STRING)
    (True, False, True, False)
    >>> widens(decimal_type(10, 2), decimal_type(12, 3)), widens(decimal_type(10, 2), decimal_type(10, 3))
    (True, False)
    """
    a, b = old.with_nullable(True), new.with_nullable(True)
    if a == b:
        return True
    ints = [TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT]
    if a.root in ints and b.root in ints:
        return ints.index(a.root) <= ints.index(b.root)
    if a.root in ints[:3] and b.root is TypeRoot.DOUBLE:
        return True
    if a.root is TypeRoot.FLOAT and b.root is TypeRoot.DOUBLE:
        return True
    if a.root is TypeRoot.DECIMAL and b.root is TypeRoot.DECIMAL:
        ap, as_, bp, bs = a.precision or 0, a.scale or 0, b.precision or 0, b.scale or 0
        return bs >= as_ and bp - bs >= ap - as_
    if a.root is b.root and a.root in (TypeRoot.STRING, TypeRoot.BINARY):
        if a.fixed or b.fixed:  # CHAR / BINARY(n) pad: a length change changes the value
            return False
        return b.length is None or (a.length is not None and a.length <= b.length)
    return False


def apply_changes(
    current: TableSchema, changes: Sequence[SchemaChange], identifier: str = "table"
) -> TableSchema:
    """The next schema (id + 1) after ``changes``, applied in order.

    Raises:
        SchemaChangeError: a change the table cannot take (above).
        ColumnNotFoundError: a column or move reference that does not exist.
    """
    fields = list(current.fields)
    highest = current.highest_field_id
    options = dict(current.options)
    null_to_not_null_disabled = (
        options.get(NULL_TO_NOT_NULL_DISABLED, "true").strip().lower() != "false"
    )
    primary_keys = list(current.primary_keys)
    for change in changes:
        top = change.path[0] if len(change.path) == 1 else None
        nested = isinstance(change, (RenameColumn, UpdateColumnType, DropColumn)) and top is None
        if primary_keys and nested:
            raise SchemaChangeError(
                f"{_VERBS[type(change)]} of a nested field is not supported on primary-key "
                f"tables yet ({identifier}: their merge maps top-level columns only)"
            )
        match change:
            case AddColumn():
                if not change.type.nullable:
                    raise SchemaChangeError(
                        f"Column {'.'.join(change.path)} cannot specify NOT NULL in the "
                        f"{identifier} table (rows already written would hold NULL)"
                    )
                (new,), highest = assign_field_ids(
                    [(change.path[-1], change.type, change.comment)], highest
                )

                def add(level: list[Field], new: Field = new, c: AddColumn = change) -> None:
                    if _find(level, new.name, none_ok=True) is not None:
                        raise SchemaChangeError(
                            f"table {identifier} already has a column {'.'.join(c.path)}"
                        )
                    level.append(new)
                    if c.move is not None:
                        _move(level, new.name, c.move)

                fields = _at_parent(fields, change.path, add)
            case RenameColumn():
                if top in current.partition_keys:
                    raise SchemaChangeError(f"Cannot rename partition column: [{top}]")

                def rename(level: list[Field], c: RenameColumn = change) -> None:
                    i = _find(level, c.path[-1])
                    assert i is not None
                    if _find(level, c.new_name, none_ok=True) not in (None, i):
                        raise SchemaChangeError(
                            f"cannot rename {'.'.join(c.path)} to {c.new_name}: that column exists"
                        )
                    level[i] = dataclasses.replace(level[i], name=c.new_name)

                if top is not None:
                    top = fields[_index(fields, top)].name
                fields = _at_parent(fields, change.path, rename)
                if top is not None:
                    primary_keys = [change.new_name if k == top else k for k in primary_keys]
                    options = rename_in_options(options, top, change.new_name)
            case DropColumn():
                if top is not None:
                    top = fields[_index(fields, top)].name
                    if top in current.partition_keys or top in primary_keys:
                        raise SchemaChangeError(
                            f"Cannot drop partition key or primary key: [{top}]"
                        )
                    options = _drop_from_options(options, top)

                def drop(level: list[Field], c: DropColumn = change) -> None:
                    i = _find(level, c.path[-1])
                    assert i is not None
                    del level[i]
                    if not level:
                        raise SchemaChangeError("Cannot drop all fields in table")

                fields = _at_parent(fields, change.path, drop)
            case UpdateColumnType():
                if top is not None:
                    top = fields[_index(fields, top)].name
                    if top in current.partition_keys:
                        raise SchemaChangeError(f"Cannot update partition column: [{top}]")
                    if top in primary_keys:
                        raise SchemaChangeError("Cannot update primary key")
                    for key in ("bucket-key", "sequence.field"):
                        if top in _names(options.get(key)):
                            raise SchemaChangeError(
                                f"Cannot update type of column {top}: option {key!r} names it "
                                "(old files were bucketed or ordered by the old type)"
                            )

                def retype(f: Field, c: UpdateColumnType = change) -> Field:
                    new_type = c.type.with_nullable(f.type.nullable)
                    if f.type.is_nested or new_type.is_nested or not widens(f.type, new_type):
                        raise SchemaChangeError(
                            f"Column type {f.name}[{f.type}] cannot be converted to "
                            f"{new_type.with_nullable(True)} without losing information"
                        )
                    return dataclasses.replace(f, type=new_type)

                fields = _update(fields, change.path, retype)
            case UpdateColumnNullability():
                if change.nullable and top is not None and top in primary_keys:
                    raise SchemaChangeError("Cannot change nullability of primary key")

                def nullability(f: Field, c: UpdateColumnNullability = change) -> Field:
                    if f.type.nullable and not c.nullable and null_to_not_null_disabled:
                        raise SchemaChangeError(
                            f"Cannot update column type from nullable to non nullable for "
                            f"{'.'.join(c.path)}. You can set table configuration option "
                            f"'{NULL_TO_NOT_NULL_DISABLED}' = 'false' to allow converting null "
                            "columns to not null"
                        )
                    return dataclasses.replace(f, type=f.type.with_nullable(c.nullable))

                fields = _update(fields, change.path, nullability)
            case UpdateColumnComment():
                fields = _update(
                    fields,
                    change.path,
                    lambda f, c=change: dataclasses.replace(f, description=c.comment),  # type: ignore[misc]
                )
            case UpdateColumnPosition():

                def position(level: list[Field], c: UpdateColumnPosition = change) -> None:
                    _move(level, level[_index(level, c.path[-1])].name, c.move)

                fields = _at_parent(fields, change.path, position)
    return TableSchema(
        id=current.id + 1,
        fields=RowType(tuple(fields)),
        partition_keys=current.partition_keys,
        primary_keys=tuple(primary_keys),
        options=options,
        comment=current.comment,
        highest_field_id=highest,
        time_millis=int(time.time() * 1000),
    )


# -- fields by path ----------------------------------------------------------------------


def _find(level: Sequence[Field], name: str, none_ok: bool = False) -> int | None:
    """The index of ``name`` in ``level``: an exact match, else the one match ignoring case."""
    for i, f in enumerate(level):
        if f.name == name:
            return i
    folded = [i for i, f in enumerate(level) if f.name.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    if none_ok:
        return None
    raise ColumnNotFoundError(
        f"column not found: {name} (columns: {', '.join(f.name for f in level)})"
    )


def _index(level: Sequence[Field], name: str) -> int:
    i = _find(level, name)
    assert i is not None
    return i


def _at_parent(
    fields: list[Field], path: tuple[str, ...], edit: Callable[[list[Field]], None]
) -> list[Field]:
    """``fields`` with ``edit`` applied to the list that holds ``path[-1]`` (a ROW's fields
    for a nested path)."""
    if len(path) == 1:
        out = list(fields)
        edit(out)
        return out
    i = _index(fields, path[0])
    f = fields[i]
    if f.type.root is not TypeRoot.ROW:
        raise SchemaChangeError(f"column {f.name} is {f.type}, not a ROW: no field {path[1]}")
    inner = _at_parent(list(f.type.row_fields), path[1:], edit)
    out = list(fields)
    out[i] = dataclasses.replace(f, type=dataclasses.replace(f.type, fields=tuple(inner)))
    return out


def _update(
    fields: list[Field], path: tuple[str, ...], fn: Callable[[Field], Field]
) -> list[Field]:
    def edit(level: list[Field]) -> None:
        i = _index(level, path[-1])
        level[i] = fn(level[i])

    return _at_parent(fields, path, edit)


def _move(level: list[Field], name: str, move: Move) -> None:
    """Paimon's ``SchemaManager.applyMove`` on one level of fields."""
    i = _index(level, name)
    if move.kind == "LAST":
        level.append(level.pop(i))
        return
    if move.kind == "FIRST":
        level.insert(0, level.pop(i))
        return
    assert move.reference is not None
    ref = _find(level, move.reference)
    assert ref is not None
    if ref == i:
        raise SchemaChangeError(f"Cannot move itself for column {name}")
    target = ref
    if move.kind == "AFTER" and i > ref:
        target += 1
    if move.kind == "BEFORE" and i < ref:
        target -= 1
    target = min(target, len(level) - 1)
    level.insert(target, level.pop(i))


# -- options that name columns -------------------------------------------------------------


def _names(value: str | None) -> list[str]:
    return [c.strip() for c in value.split(",")] if value else []


def _index_columns(value: str) -> list[tuple[str, str]]:
    """``file-index.<type>.columns`` as (column, suffix): ``m[k]`` is ``("m", "[k]")``."""
    out = []
    for part in value.split(","):
        col, bracket, rest = part.strip().partition("[")
        out.append((col.strip(), bracket + rest))
    return out


def rename_in_options(options: Mapping[str, str], old: str, new: str) -> dict[str, str]:
    """``options`` with column ``old`` named ``new`` where they name it (list options,
    ``file-index.*`` columns and per-column options, ``fields.<c>.*``)."""
    out: dict[str, str] = {}
    for key, value in options.items():
        if key in _LIST_OPTIONS:
            value = ",".join(new if c == old else c for c in _names(value))
        elif key.startswith(FILE_INDEX_PREFIX) and key.endswith(".columns"):
            value = ",".join(
                (new if c == old else c) + suffix for c, suffix in _index_columns(value)
            )
        elif key.startswith(FILE_INDEX_PREFIX):
            index_type, _, tail = key[len(FILE_INDEX_PREFIX) :].partition(".")
            col, dot, opt = tail.rpartition(".")
            base, bracket, rest = col.partition("[")
            if dot and base == old:
                key = f"{FILE_INDEX_PREFIX}{index_type}.{new}{bracket}{rest}.{opt}"
        elif key.startswith(f"{_FIELDS_PREFIX}{old}."):
            key = f"{_FIELDS_PREFIX}{new}." + key[len(_FIELDS_PREFIX) + len(old) + 1 :]
        elif key.startswith(_FIELDS_PREFIX) and key.endswith(".sequence-group"):
            cols = key[len(_FIELDS_PREFIX) : -len(".sequence-group")]
            key = f"{_FIELDS_PREFIX}{','.join(new if c == old else c for c in _names(cols))}"
            key += ".sequence-group"
            value = ",".join(new if c == old else c for c in _names(value))
        out[key] = value
    return out


def _drop_from_options(options: Mapping[str, str], column: str) -> dict[str, str]:
    """Options without the dropped ``column``'s file indexes; refused if another option
    names it."""
    for key, value in options.items():
        named = key in _LIST_OPTIONS and column in _names(value)
        named |= key.startswith(f"{_FIELDS_PREFIX}{column}.")
        named |= key.startswith(_FIELDS_PREFIX) and column in _names(value)
        if named:
            raise SchemaChangeError(f"Cannot drop column {column}: option {key!r} names it")
    return drop_index_options(options, column)


def drop_index_options(options: Mapping[str, str], column: str) -> dict[str, str]:
    """``options`` without ``column``'s ``file-index.*`` entries (its indexes, its
    per-column index options)."""
    out: dict[str, str] = {}
    for key, value in options.items():
        if key.startswith(FILE_INDEX_PREFIX) and key.endswith(".columns"):
            kept = [c + s for c, s in _index_columns(value) if c != column]
            if kept:
                out[key] = ",".join(kept)
            continue
        if key.startswith(FILE_INDEX_PREFIX):
            tail = key[len(FILE_INDEX_PREFIX) :].partition(".")[2]
            col, dot, _ = tail.rpartition(".")
            if dot and col.partition("[")[0] == column:
                continue
        out[key] = value
    return out
