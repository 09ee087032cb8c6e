"""Rows aligned to a table before a write: INSERT's columns by position
(:func:`align_by_position`), a DataFrame write's by name (:func:`align_by_name`), cast to the
table's types, NOT NULL columns and ROW fields checked in the Spark job.

Both build their projection as SQL text and hand it to the JVM at once (:func:`select_exprs`).
Why: every PySpark ``Column`` call (``col``, ``cast``, ``alias``, ``getField``) is wrapped to
record its call site in the JVM (``getActiveSession``, a conf read, set and clear: about ten
py4j round trips), so a projection built column by column cost ~35 round trips a column
before the write's Spark job started (245 of a 7-column INSERT's 384 in the write callback,
278 for 4 columns and 2,685 for 40 in ``align_by_position`` alone); the text costs a fixed
handful whatever the column count."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from lakeskip.errors import ColumnNotFoundError, InvalidArgumentError
from lakeskip.types import DataType, Field, RowType, TypeRoot, quote_identifier

__all__ = ["align_by_name", "align_by_position", "select_exprs"]

#: separates the expressions of :func:`select_exprs` in the one string sent to the JVM
_SEP = "\x00"


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
    exprs = [
        _stored(quote_identifier(src), f, what)
        for src, f in zip(columns, row_type.fields, strict=True)
    ]
    return select_exprs(df, [*exprs, *(quote_identifier(e) for e in extra)])


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
    exprs = []
    for f in row_type:
        src = by_lower[f.name.lower()]
        exprs.append(
            _stored(
                _struct_by_name(quote_identifier(src), source[src], f.type, f.name, what), f, what
            )
        )
    return select_exprs(df, exprs)


def select_exprs(df: DataFrame, exprs: Sequence[str]) -> DataFrame:
    """``df.selectExpr(*exprs)`` in a fixed number of py4j round trips: the expressions go to
    the JVM as one string, split there into the ``String[]`` of ``Dataset.selectExpr``'s Java
    varargs form (py4j sends a Python list element by element: a round trip each). A
    DataFrame without a JVM handle (Spark Connect), or an expression holding the separator,
    takes PySpark's ``selectExpr``."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None or len(exprs) < 2 or any(_SEP in e for e in exprs):
        return df.selectExpr(*exprs)
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    session = df.sparkSession
    pattern = getattr(session._jvm, "java.util.regex.Pattern")
    split = pattern.compile(_SEP).split(_SEP.join(exprs))
    return ClassicDataFrame(jdf.selectExpr(split), session)


def _stored(expr: str, f: Field, what: str) -> str:
    """The SQL expression ``expr`` as column ``f`` stores it: cast, NULLs checked, named."""
    cast = f"CAST({expr} AS {_cast_type(f.type)})"
    return f"{_not_null(cast, f, what)} AS {quote_identifier(f.name)}"


def _text(text: str) -> str:
    """``text`` as a SQL string expression read alike whatever
    ``spark.sql.parser.escapedStringLiterals`` says (a quote or backslash: decoded bytes)."""
    if "'" in text or "\\" in text:
        return f"decode(X'{text.encode().hex()}', 'UTF-8')"
    return f"'{text}'"


def _field(expr: str, name: str) -> str:
    """Field ``name`` of the ROW the SQL expression ``expr`` is. ``coalesce`` keeps a bare
    column name from reading as a qualified name (``s.x``: column ``x`` of a relation ``s``,
    where one is in scope); of one argument it is the argument."""
    return f"coalesce({expr}).{quote_identifier(name)}"


def _not_null(expr: str, f: Field, what: str) -> str:
    """A NOT NULL column, or a NOT NULL field of a ROW column (``st.x``: only where ``st``
    is not NULL), fails the write with a one-line message naming it."""
    checks = [] if f.type.nullable else [(f"({expr}) IS NULL", f.name)]
    checks += _nested_null_checks(expr, f.type, f.name)
    if not checks:
        return expr
    whens = " ".join(
        f"WHEN {cond} THEN raise_error({_text(f'{what}: NULL in NOT NULL column {name}')})"
        for cond, name in checks
    )
    return f"CASE {whens} ELSE {expr} END"


def _nested_null_checks(expr: str, t: DataType, path: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for nf in t.row_fields:
        child = _field(expr, nf.name)
        name = f"{path}.{nf.name}"
        if not nf.type.nullable:
            out.append((f"({expr}) IS NOT NULL AND ({child}) IS NULL", name))
        out += _nested_null_checks(child, nf.type, name)
    return out


def _cast_type(t: DataType) -> str:
    """The Spark type to cast a written column to: nested ROW fields nullable (Spark refuses
    a cast to a NOT NULL field; :func:`_not_null` checks them instead)."""
    return t.as_nullable().spark_ddl()


def _struct_by_name(expr: str, src: Any, t: DataType, path: str, what: str) -> str:
    """A ROW column's fields matched by name (case-insensitive), at every depth, as Spark's
    by-name writes do; a cast alone would match them by position."""
    if t.root is not TypeRoot.ROW or not isinstance(src, StructType):
        return expr
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
            _field(expr, sf.name), sf.dataType, nf.type, f"{path}.{nf.name}", what
        )
        parts.append(f"{child} AS {quote_identifier(nf.name)}")
    return f"CASE WHEN ({expr}) IS NULL THEN NULL ELSE struct({', '.join(parts)}) END"
