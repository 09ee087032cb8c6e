"""Rows aligned to a table before a write: INSERT's columns by position
(:func:`align_by_position`), a DataFrame write's by name (:func:`align_by_name`), cast to the
table's types, NOT NULL columns and ROW fields checked in the Spark job."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakeskip.errors import ColumnNotFoundError, InvalidArgumentError
from lakeskip.types import DataType, Field, RowType, TypeRoot

__all__ = ["align_by_name", "align_by_position"]


def align_by_position(
    df: DataFrame, row_type: RowType, what: str, *, extra: Sequence[str] = ()
) -> DataFrame:
    """INSERT semantics: columns by position, cast to the table's types (ANSI store rules).
    ``extra``: trailing columns of ``df`` kept as they are, after the table's."""
    columns = [c for c in df.columns if c not in extra]
    if len(columns) != len(row_type):
        raise InvalidArgumentError(
            f"{what}: the query produces {len(columns)} columns, the table has "
            f"{len(row_type)} ({', '.join(row_type.names)})"
        )
    cols: list[Column] = [
        _not_null(F.col(f"`{src}`").cast(_cast_type(f.type)), f, what).alias(f.name)
        for src, f in zip(columns, row_type.fields, strict=True)
    ]
    return df.select(*cols, *(F.col(f"`{e}`") for e in extra))


def _not_null(col: Column, f: Field, what: str) -> Column:
    """A NOT NULL column, or a NOT NULL field of a ROW column (``st.x``: only where ``st``
    is not NULL), fails the write with a one-line message naming it."""
    checks = [] if f.type.nullable else [(col.isNull(), f.name)]
    checks += _nested_null_checks(col, f.type, f.name)
    if not checks:
        return col
    out = None
    for cond, name in checks:
        error = F.raise_error(F.lit(f"{what}: NULL in NOT NULL column {name}"))
        out = F.when(cond, error) if out is None else out.when(cond, error)
    assert out is not None
    return out.otherwise(col)


def _nested_null_checks(col: Column, t: DataType, path: str) -> list[tuple[Column, str]]:
    out: list[tuple[Column, str]] = []
    for nf in t.row_fields:
        child = col.getField(nf.name)
        name = f"{path}.{nf.name}"
        if not nf.type.nullable:
            out.append((col.isNotNull() & child.isNull(), name))
        out += _nested_null_checks(child, nf.type, name)
    return out


def _cast_type(t: DataType) -> str:
    """The Spark type to cast a written column to: nested ROW fields nullable (Spark refuses
    a cast to a NOT NULL field; :func:`_not_null` checks them instead)."""
    return t.as_nullable().spark_ddl()


def align_by_name(df: DataFrame, row_type: RowType, what: str) -> DataFrame:
    """DataFrame-write semantics: columns by name (case-insensitive), cast to the table's types."""
    by_lower = {c.lower(): c for c in df.columns}
    missing = [f.name for f in row_type if f.name.lower() not in by_lower]
    if missing:
        raise ColumnNotFoundError(f"{what}: the DataFrame lacks column(s) {', '.join(missing)}")
    extra = sorted(set(by_lower) - {f.name.lower() for f in row_type})
    if extra:
        raise ColumnNotFoundError(f"{what}: the table has no column(s) {', '.join(extra)}")
    source = {f.name: f.dataType for f in df.schema.fields}
    cols = []
    for f in row_type:
        src = by_lower[f.name.lower()]
        col = _struct_by_name(F.col(f"`{src}`"), source[src], f.type, f.name, what)
        cols.append(_not_null(col.cast(_cast_type(f.type)), f, what).alias(f.name))
    return df.select(*cols)


def _struct_by_name(col: Column, src: Any, t: DataType, path: str, what: str) -> Column:
    """A ROW column's fields matched by name (case-insensitive), at every depth, as Spark's
    by-name writes do; a cast alone would match them by position."""
    if t.root is not TypeRoot.ROW or not isinstance(src, StructType):
        return col
    by_lower = {sf.name.lower(): sf for sf in src.fields}
    missing = [f"{path}.{nf.name}" for nf in t.row_fields if nf.name.lower() not in by_lower]
    if missing:
        raise ColumnNotFoundError(f"{what}: the DataFrame lacks field(s) {', '.join(missing)}")
    extra = sorted(set(by_lower) - {nf.name.lower() for nf in t.row_fields})
    if extra:
        names = ", ".join(f"{path}.{by_lower[e].name}" for e in extra)
        raise ColumnNotFoundError(f"{what}: the table has no field(s) {names}")
    parts = []
    for nf in t.row_fields:
        sf = by_lower[nf.name.lower()]
        child = _struct_by_name(
            col.getField(sf.name), sf.dataType, nf.type, f"{path}.{nf.name}", what
        )
        parts.append(child.alias(nf.name))
    return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*parts))
