"""The lakeskip exception hierarchy: one root, a family per layer.

Every error a user can cause is a subclass of :class:`LakeskipError`, carries a one-line
message that names the problem, and mixes in the matching builtin where one fits (so
``except ValueError`` still works for bad arguments).

Example:
    >>> try:
    ...     raise TableNotFoundError("table not found: db.t")
    ... except CatalogError as e:
    ...     print(e)
    table not found: db.t
"""

from __future__ import annotations

__all__ = [
    "CatalogError",
    "ColumnNotFoundError",
    "CommitConflictError",
    "CorruptDeletionVectorError",
    "CorruptIndexError",
    "CorruptMetadataError",
    "DatabaseAlreadyExistsError",
    "DatabaseNotEmptyError",
    "DatabaseNotFoundError",
    "IndexError_",
    "InvalidArgumentError",
    "InvalidOptionError",
    "LakeskipError",
    "LakeskipWarning",
    "ProcedureError",
    "ProtocolError",
    "ProtocolMismatchError",
    "QueryFailedError",
    "SchemaChangeError",
    "SnapshotNotFoundError",
    "SqlError",
    "SqlParseError",
    "StreamReadError",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TypeMismatchError",
    "UnknownIndexTypeError",
    "UnknownOperationError",
    "UnknownProcedureError",
    "UnsupportedIndexTypeError",
    "UnsupportedStatementError",
]


class LakeskipError(Exception):
    """Root of every error lakeskip raises on purpose."""


class InvalidArgumentError(ValueError, LakeskipError):
    """An argument, option value or literal is not acceptable."""


class TypeMismatchError(InvalidArgumentError):
    """A value or expression does not fit the type it is used with."""


class InvalidOptionError(InvalidArgumentError):
    """A table option is unknown or its value is malformed."""


class SchemaChangeError(InvalidArgumentError):
    """An ``ALTER TABLE`` schema change the table cannot take (Paimon refuses it too, or old
    files could no longer be read right under the new schema)."""


class ColumnNotFoundError(InvalidArgumentError, KeyError):
    """A column named in SQL, an option or a predicate does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


# --- catalog ---------------------------------------------------------------------------


class CatalogError(LakeskipError):
    """Something about databases, tables, snapshots or commits."""


class DatabaseNotFoundError(CatalogError):
    """The database does not exist."""


class DatabaseAlreadyExistsError(CatalogError):
    """CREATE DATABASE of a database that exists."""


class DatabaseNotEmptyError(CatalogError):
    """DROP DATABASE of a database that still holds tables (without CASCADE)."""


class TableNotFoundError(CatalogError):
    """The table does not exist."""


class TableAlreadyExistsError(CatalogError):
    """CREATE TABLE of a table that exists."""


class CommitConflictError(CatalogError):
    """A commit lost the race for the next snapshot too many times, or its base changed."""


class SnapshotNotFoundError(CatalogError, InvalidArgumentError):
    """A time-travel read names a snapshot, tag or time the table does not have."""


class StreamReadError(CatalogError, InvalidArgumentError):
    """A streaming read the table cannot serve (a primary-key table), or offsets that do not
    fit it."""


class CorruptMetadataError(CatalogError):
    """A snapshot, manifest or schema file cannot be decoded."""


class CorruptDeletionVectorError(CorruptMetadataError):
    """A deletion vector (or its index file) that cannot be read or does not fit its data file.

    Unlike a file index, a deletion vector is data: reading the file without it would return
    deleted rows, so the read fails, naming the index file.
    """


# --- index -----------------------------------------------------------------------------


class IndexError_(LakeskipError):
    """Something about file-index formats or options."""


class CorruptIndexError(IndexError_):
    """Index bytes that cannot be decoded.

    The planner turns this into "keep the file" plus a warning; it never fails a query.

    Args:
        offset: byte offset where decoding failed (-1 if unknown).
        reason: what was wrong there.
    """

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"corrupt file index at byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason

    def __reduce__(self) -> tuple[type[CorruptIndexError], tuple[int, str]]:
        return (type(self), (self.offset, self.reason))


class UnknownIndexTypeError(IndexError_, InvalidArgumentError):
    """An index type name that lakeskip does not know (e.g. ``file-index.blom.columns``)."""


class UnsupportedIndexTypeError(IndexError_, InvalidArgumentError):
    """An index that cannot handle a column's type (e.g. bloom filter on BOOLEAN)."""


# --- sql -------------------------------------------------------------------------------


class SqlError(LakeskipError):
    """Something about SQL text."""


class SqlParseError(SqlError, ValueError):
    """Malformed SQL.

    Args:
        message: what is wrong.
        line: 1-based line of the problem, if known.
        col: 1-based column of the problem, if known.
    """

    def __init__(self, message: str, line: int | None = None, col: int | None = None) -> None:
        where = f" (line {line}, col {col})" if line is not None and col is not None else ""
        super().__init__(f"{message}{where}")
        self.message = message
        self.line = line
        self.col = col

    def __reduce__(self) -> tuple[type[SqlParseError], tuple[str, int | None, int | None]]:
        return (type(self), (self.message, self.line, self.col))


class QueryFailedError(SqlError):
    """Spark rejected or failed a statement lakeskip handed to it (message: Spark's first line)."""


class UnsupportedStatementError(SqlError, InvalidArgumentError):
    """A statement lakeskip recognises but does not support in this form."""


class ProcedureError(LakeskipError):
    """A procedure failed for a reason the user can act on."""


class UnknownProcedureError(SqlError, ProcedureError, InvalidArgumentError):
    """``CALL sys.<name>`` of a procedure that does not exist."""


# --- the Spark catalog's Python-JVM protocol --------------------------------------------


class ProtocolError(LakeskipError):
    """A callback from the Spark catalog's Java side that Python cannot read (a key or value
    the protocol does not define): the two sides disagree."""


class ProtocolMismatchError(ProtocolError):
    """The catalog's Java classes speak another protocol version than this Python package."""


class UnknownOperationError(ProtocolError):
    """A callback names an operation the protocol does not define."""


# --- warnings --------------------------------------------------------------------------


class LakeskipWarning(UserWarning):
    """Something was skipped safely (e.g. a corrupt index: the file is kept and read)."""
