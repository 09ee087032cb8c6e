"""The contract every file-index type implements: an indexer (factory), a writer, a reader.

This mirrors Paimon's ``FileIndexer`` / ``FileIndexWriter`` / ``FileIndexReader``:

* :class:`FileIndexer` is registered under Paimon's type name (``"bloom-filter"``,
  ``"bitmap"``, ``"bsi"``) and says which column types it supports.
* :class:`FileIndexWriter` receives a column's values as whole Arrow arrays (vectorised; it
  may be called several times per file, in row order) and serialises to Paimon's bytes.
* :class:`FileIndexReader` answers leaf predicates. Every ``visit_*`` returns
  :data:`~lakeskip.index.result.REMAIN` unless overridden -- a reader only decides what it can.

Literal values passed to readers are in the *internal* form of the column type (see
:mod:`lakeskip.types`): ints, floats, ``Decimal``, ``str``, ``bytes``, ``bool``, epoch days,
timestamp millis/micros. They are never ``None``: null tests come as
``visit_is_null``/``visit_not_null``, and comparisons with NULL never reach a reader.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.errors import InvalidOptionError
from lakeskip.index.result import REMAIN, SKIP, FileIndexResult
from lakeskip.types import DataType

__all__ = [
    "BufferedWriter",
    "FileIndexReader",
    "FileIndexWriter",
    "FileIndexer",
    "answers",
    "parse_memory_size",
    "valid_rows",
]


class FileIndexReader:
    """Answers leaf predicates on one column of one data file. Defaults to REMAIN."""

    def visit_equal(self, value: Any) -> FileIndexResult:
        return REMAIN

    def visit_not_equal(self, value: Any) -> FileIndexResult:
        return REMAIN

    def visit_less_than(self, value: Any) -> FileIndexResult:
        return REMAIN

    def visit_less_than_or_equal(self, value: Any) -> FileIndexResult:
        return REMAIN

    def visit_greater_than(self, value: Any) -> FileIndexResult:
        return REMAIN

    def visit_greater_than_or_equal(self, value: Any) -> FileIndexResult:
        return REMAIN

    def visit_in(self, values: Sequence[Any]) -> FileIndexResult:
        """OR of :meth:`visit_equal` over the values (Paimon's default)."""
        result: FileIndexResult = SKIP
        for v in values:
            result = result.or_(self.visit_equal(v))
            if result is REMAIN:
                break
        return result

    def visit_not_in(self, values: Sequence[Any]) -> FileIndexResult:
        """AND of :meth:`visit_not_equal` over the values."""
        result: FileIndexResult = REMAIN
        for v in values:
            result = result.and_(self.visit_not_equal(v))
            if result is SKIP:
                break
        return result

    def visit_is_null(self) -> FileIndexResult:
        return REMAIN

    def visit_not_null(self) -> FileIndexResult:
        return REMAIN

    def visit_starts_with(self, prefix: Any) -> FileIndexResult:
        return REMAIN

    def visit_not_starts_with(self, prefix: Any) -> FileIndexResult:
        return REMAIN


class FileIndexWriter:
    """Builds one index over one column of one data file."""

    def write(self, values: pa.Array | pa.ChunkedArray) -> None:
        """Add the next rows (nulls included: they count as rows)."""
        raise NotImplementedError

    @property
    def empty(self) -> bool:
        """True until any row was written (Paimon then writes the EMPTY flag)."""
        raise NotImplementedError

    @property
    def usable(self) -> bool:
        """False when the values cannot be indexed faithfully (e.g. BSI and Long.MIN_VALUE):
        the index is then left out of the file, and readers fall back to REMAIN."""
        return True

    def serialize(self) -> bytes:
        raise NotImplementedError


class BufferedWriter(FileIndexWriter):
    """A writer that keeps the arrays it is given and builds the index in ``serialize``
    (bitmap, BSI and range-bitmap need every value of the file at once)."""

    def __init__(self) -> None:
        self.parts: list[pa.Array] = []
        self.rows = 0

    @property
    def empty(self) -> bool:
        return self.rows == 0

    def write(self, values: pa.Array | pa.ChunkedArray) -> None:
        arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        self.parts.append(arr)
        self.rows += len(arr)

    def column(self) -> pa.Array | None:
        """Every written value in row order (``None`` before the first write)."""
        if not self.parts:
            return None
        if len(self.parts) > 1:
            self.parts = [pa.concat_arrays(self.parts)]
        return self.parts[0]

    def split_nulls(self, t: DataType) -> tuple[Any, pa.Array]:
        """(bool numpy mask of the non-null rows, the non-null values) of every written row;
        see :func:`valid_rows`."""
        arr = self.column()
        return valid_rows(pa.array([], t.to_arrow()) if arr is None else arr)


def valid_rows(arr: pa.Array) -> tuple[Any, pa.Array]:
    """(bool numpy mask of the non-null rows, the non-null values), without copying a column
    that has no nulls."""
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=np.bool_), arr
    return pc.is_valid(arr).to_numpy(zero_copy_only=False), pc.drop_null(arr)


class FileIndexer:
    """Factory for one index type. Subclasses set :attr:`name` and implement the rest."""

    name: str = ""
    #: option keys this index understands (per column), e.g. ``{"items", "fpp"}``
    option_keys: frozenset[str] = frozenset()
    #: the class :meth:`create_reader` returns: the planner reads from its ``visit_*``
    #: methods which leaves it can answer (:func:`answers`) before opening any file's index
    reader_type: type[FileIndexReader] = FileIndexReader

    def supports(self, data_type: DataType) -> bool:
        raise NotImplementedError

    def validate_options(self, data_type: DataType, options: Mapping[str, str]) -> None:
        """Raise :class:`InvalidOptionError` for an unknown or malformed option."""
        for k in options:
            if k not in self.option_keys:
                known = ", ".join(sorted(self.option_keys)) or "none"
                close = difflib.get_close_matches(k, sorted(self.option_keys), n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise InvalidOptionError(
                    f"unknown option {k!r} for {self.name} index ({hint}known: {known})"
                )

    def create_writer(self, data_type: DataType, options: Mapping[str, str]) -> FileIndexWriter:
        raise NotImplementedError

    def row_count(self, data: bytes | memoryview) -> int | None:
        """How many rows the serialised index ``data`` says it was built over (its data
        file's row count), from the fixed start of the layout alone; ``None`` where the
        format records none (the bloom filter).

        Raises:
            CorruptIndexError: ``data`` too short to hold it.
        """
        return None

    def create_reader(
        self, data_type: DataType, options: Mapping[str, str], data: bytes | memoryview
    ) -> FileIndexReader:
        """Decode ``data``. Raises :class:`~lakeskip.errors.CorruptIndexError` on bad bytes
        (eagerly for headers; lazily-read parts may raise later from ``visit_*``)."""
        raise NotImplementedError


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}


def parse_memory_size(text: str, key: str = "size") -> int:
    """Paimon's MemorySize syntax: ``500``, ``500 B``, ``16kb``, ``128 mb``.

    >>> parse_memory_size("16kb")
    16384
    """
    s = str(text).strip().lower()
    i = 0
    while i < len(s) and s[i].isdigit():
        i += 1
    unit = s[i:].strip()
    if i == 0 or unit not in _SIZE_UNITS:
        raise InvalidOptionError(
            f"invalid size for {key}: {text!r} (e.g. '500 B', '16kb', '128mb')"
        )
    return int(s[:i]) * _SIZE_UNITS[unit]


#: the reader methods that answer each leaf operator (IN and NOT IN fall back to the
#: per-value methods, as :class:`FileIndexReader`'s defaults do)
_LEAF_METHODS: dict[str, tuple[str, ...]] = {
    "=": ("visit_equal",),
    "<>": ("visit_not_equal",),
    "<": ("visit_less_than",),
    "<=": ("visit_less_than_or_equal",),
    ">": ("visit_greater_than",),
    ">=": ("visit_greater_than_or_equal",),
    "IN": ("visit_in", "visit_equal"),
    "NOT IN": ("visit_not_in", "visit_not_equal"),
    "IS NULL": ("visit_is_null",),
    "IS NOT NULL": ("visit_not_null",),
    "STARTS WITH": ("visit_starts_with",),
    "NOT STARTS WITH": ("visit_not_starts_with",),
}


def answers(reader_type: type[FileIndexReader], op: str) -> bool:
    """Whether readers of ``reader_type`` can answer a leaf of operator ``op`` (its SQL
    spelling) with anything but REMAIN: some method answering it overrides the base's
    (unknown operators: True)."""
    methods = _LEAF_METHODS.get(op)
    if methods is None:
        return True
    return any(getattr(reader_type, m, None) is not getattr(FileIndexReader, m) for m in methods)
