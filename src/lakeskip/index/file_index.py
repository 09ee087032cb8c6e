"""All indexes of one data file: building them (Paimon's ``DataFileIndexWriter``) and
opening them for the planner.

>>> import pyarrow as pa
>>> from lakeskip import types as T
>>> from lakeskip.index.options import parse_file_index_options
>>> rt = T.RowType.of(("id", T.BIGINT))
>>> opts = parse_file_index_options({"file-index.bloom-filter.columns": "id",
...                                  "file-index.bloom-filter.id.items": "10"}, rt)
>>> built = build_file_index(pa.table({"id": [1, 2, 3]}), rt, opts)
>>> built.embedded is not None, built.external is None, dict(built.index_types)
(True, True, {'id': ('bloom-filter',)})
>>> f = FileIndexFile.from_bytes(built.embedded, rt)
>>> [r.visit_equal(2) for _, r in f.typed_readers("id")], [r.visit_equal(7) for r in f.readers("id")]
([REMAIN], [SKIP])
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.errors import CorruptIndexError, LakeskipError, UnknownIndexTypeError
from lakeskip.index.base import FileIndexReader, FileIndexWriter
from lakeskip.index.format import FileIndexContainer, write_container
from lakeskip.index.options import FileIndexOptions
from lakeskip.index.primitives.hashing import timestamp_ints
from lakeskip.index.registry import get_indexer
from lakeskip.types import DataType, RowType, TypeRoot

__all__ = [
    "FileIndexBuilder",
    "FileIndexFile",
    "IndexBuildResult",
    "build_file_index",
    "map_lookup_first",
]

_MAP_KEY = re.compile(r"^(?P<col>[^\[\]]+)\[(?P<key>[^\[\]]*)\]$")


@dataclass(frozen=True, slots=True)
class IndexBuildResult:
    """``embedded`` xor ``external`` holds the container (both ``None``: nothing indexed)."""

    embedded: bytes | None
    external: bytes | None
    index_types: Mapping[str, tuple[str, ...]]

    @property
    def size(self) -> int:
        data = self.embedded if self.embedded is not None else self.external
        return len(data) if data is not None else 0


def _values(table: pa.Table, column: str, map_key: str | None, dtype: DataType) -> pa.Array:
    col = table[column]
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if map_key is not None:
        col = map_lookup_first(col, map_key)
    target = dtype.to_arrow()
    if col.type == target:
        return col
    if pa.types.is_timestamp(col.type) and pa.types.is_timestamp(target):
        # floor to the column's unit as Paimon does (Arrow's cast refuses or truncates)
        ints = pa.array(timestamp_ints(pc.fill_null(col, 0), target.unit), pa.int64())
        return pc.if_else(pc.is_null(col), pa.scalar(None, target), ints.cast(target))
    return col.cast(target)


def map_lookup_first(col: pa.MapArray, key: str) -> pa.Array:
    """``pc.map_lookup(col, key, "first")`` for MAP<STRING, ...>: each map's value of its first
    entry with ``key``, null when the map is null or has no such entry.

    Arrow's kernel measured ~0.5 us per map (40 ms for 78k two-entry maps, the biggest part of
    an index build); this is one string comparison over all keys and a ``take``.

    >>> m = pa.array([[("a", "1"), ("a", "2")], None, [("b", "3")], []],
    ...              pa.map_(pa.string(), pa.string()))
    >>> map_lookup_first(m.slice(0), "a").to_pylist()
    ['1', None, None, None]
    """
    keys = col.keys  # every map's keys, not sliced: col.offsets index into them
    if not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
        return pc.map_lookup(col, pa.scalar(key, pa.string()), "first")
    offsets = col.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    lo, hi = int(offsets[0]), int(offsets[-1])
    hit = pc.fill_null(pc.equal(keys.slice(lo, hi - lo), key), False)
    positions = np.flatnonzero(hit.to_numpy(zero_copy_only=False)) + lo
    # the map of each hit (np.repeat: ~2x searchsorted over the offsets, measured)
    rows = np.repeat(np.arange(len(col)), np.diff(offsets))[positions - lo]
    first = np.ones(len(rows), dtype=np.bool_)
    np.not_equal(rows[1:], rows[:-1], out=first[1:])  # hits ascend: a map's first hit leads
    rows, positions = rows[first], positions[first]
    take = np.zeros(len(col), dtype=np.int64)
    found = np.zeros(len(col), dtype=np.bool_)
    take[rows] = positions
    found[rows] = True
    if col.null_count:
        found &= col.is_valid().to_numpy(zero_copy_only=False)
    indices = pa.array(take, mask=~found)
    return col.items.take(indices)


class FileIndexBuilder:
    """Every configured index of one data file, fed a batch of rows at a time (a file
    streamed to Parquet): :meth:`add` each batch in file order, :meth:`finish` once.

    Each index writer takes the values of its own column only: the bloom filter hashes them
    as they come; bitmap, BSI and range-bitmap keep that column's values until
    :meth:`finish` (their layouts need every value of the file at once), never the file's
    other columns.
    """

    def __init__(self, schema: RowType, options: FileIndexOptions) -> None:
        self.options = options
        self.writers: list[tuple[str, str, str, str | None, DataType, FileIndexWriter]] = []
        for spec in options.specs:
            f = schema.field(spec.column)
            dtype = spec.data_type
            if dtype is None:
                dtype = f.type if spec.map_key is None else f.type.value
            assert dtype is not None
            writer = get_indexer(spec.index_type).create_writer(dtype, spec.options)
            self.writers.append((spec.name, spec.index_type, f.name, spec.map_key, dtype, writer))

    def add(self, table: pa.Table) -> None:
        """The file's next rows."""
        if table.num_rows == 0:
            return
        for _, _, column, map_key, dtype, writer in self.writers:
            writer.write(_values(table, column, map_key, dtype))

    def finish(self) -> IndexBuildResult:
        if not self.writers:
            return IndexBuildResult(None, None, {})
        mapping: dict[str, dict[str, bytes | None]] = {}
        for name, index_type, _, _, _, writer in self.writers:
            if not writer.usable:
                continue
            mapping.setdefault(name, {})[index_type] = None if writer.empty else writer.serialize()
        if not mapping:
            return IndexBuildResult(None, None, {})
        data = write_container(_in_paimon_order(mapping, self.options))
        types = {col: tuple(by_type) for col, by_type in mapping.items()}
        if len(data) <= self.options.in_manifest_threshold:
            return IndexBuildResult(data, None, types)
        return IndexBuildResult(None, data, types)


def build_file_index(
    table: pa.Table, schema: RowType, options: FileIndexOptions
) -> IndexBuildResult:
    """Build every configured index over ``table`` (one data file's rows, in file order)."""
    if not options.specs:
        return IndexBuildResult(None, None, {})
    builder = FileIndexBuilder(schema, options)
    builder.add(table)
    return builder.finish()


def _in_paimon_order(
    mapping: dict[str, dict[str, bytes | None]], options: FileIndexOptions
) -> dict[str, dict[str, bytes | None]]:
    """Columns and index types as Paimon's ``DataFileIndexWriter`` iterates its HashMaps
    (see :mod:`lakeskip.index.container_order`), so the container is byte-identical."""
    out: dict[str, dict[str, bytes | None]] = {}
    for name, types in options.container_order:
        by_type = mapping.get(name)
        if by_type is None:
            continue
        for t in types:
            if t in by_type:
                out.setdefault(name, {})[t] = by_type[t]
    for name, by_type in mapping.items():  # anything the order does not name keeps its place
        for t, payload in by_type.items():
            out.setdefault(name, {}).setdefault(t, payload)
    return out


class FileIndexFile:
    """An opened container; readers are created on first use and cached.

    ``row_count``: the data file's rows (its manifest entry's). Every index whose format
    records the rows it was built over (bitmap, bsi, range-bitmap) must count as many, or
    the container is another file's or damaged: :meth:`typed_readers` then raises
    :class:`~lakeskip.errors.CorruptIndexError` (the planner keeps the file and warns)
    rather than hand out any reader of it, the bloom filters (which count nothing) included.
    Only payloads already loaded are checked, each once (an ``.index`` file read by range
    holds the predicate's sections: those of other columns are checked when loaded).
    """

    def __init__(
        self,
        container: FileIndexContainer,
        schema: RowType,
        stored_names: Mapping[str, str] | None = None,
        row_count: int | None = None,
    ) -> None:
        self.container = container
        self.schema = schema
        #: a column's name in the container when it differs from ``schema``'s (a file
        #: written before the column was renamed: its index keeps the old name)
        self.stored_names = dict(stored_names or {})
        self.row_count = row_count
        self._readers: dict[str, list[tuple[str, FileIndexReader]]] = {}
        #: stored indexes whose recorded row count is still to be checked
        self._uncounted = (
            [] if row_count is None else [e for e in container.entries if e.length > 0]
        )

    @classmethod
    def from_bytes(
        cls,
        data: bytes | memoryview,
        schema: RowType,
        stored_names: Mapping[str, str] | None = None,
        row_count: int | None = None,
    ) -> FileIndexFile:
        """Raises :class:`~lakeskip.errors.CorruptIndexError` on a bad header."""
        return cls(FileIndexContainer.decode(data), schema, stored_names, row_count)

    def _check_row_counts(self) -> None:
        """Raise :class:`~lakeskip.errors.CorruptIndexError` when a loaded index counts
        other rows than the data file has."""
        left = []
        for e in self._uncounted:
            payload = self.container.loaded_payload(e)
            if payload is None:
                left.append(e)
                continue
            try:
                indexer = get_indexer(e.index_type)
            except UnknownIndexTypeError:  # this build cannot read it: it gives no reader
                continue
            counted = indexer.row_count(payload)
            if counted is not None and counted != self.row_count:
                raise CorruptIndexError(
                    -1,
                    f"{e.index_type} index of {e.column} counts {counted} rows, the data "
                    f"file has {self.row_count} (another file's index?)",
                )
        self._uncounted = left

    def stored_name(self, name: str) -> str:
        """``name`` (``col`` or ``col[key]``) as the container names it."""
        m = _MAP_KEY.match(name)
        column = m.group("col") if m else name
        stored = self.stored_names.get(column)
        if stored is None:
            return name
        return stored + name[len(column) :]

    def _type_of(self, name: str) -> DataType | None:
        m = _MAP_KEY.match(name)
        column = m.group("col") if m else name
        if not self.schema.has(column):
            return None
        t = self.schema.field(column).type
        if m is None:
            return t
        if t.root is not TypeRoot.MAP or t.value is None:
            return None
        return t.value

    def typed_readers(self, name: str) -> list[tuple[str, FileIndexReader]]:
        """(index type, reader) for a container column (``col`` or ``col[key]``); index types
        this build does not know, and columns the schema lacks, give no reader.

        Raises:
            CorruptIndexError: a loaded index counts other rows than ``row_count``.
        """
        if self._uncounted:
            self._check_row_counts()
        got = self._readers.get(name)
        if got is not None:
            return got
        out: list[tuple[str, FileIndexReader]] = []
        dtype = self._type_of(name)
        stored = self.stored_name(name)
        if dtype is not None:
            for e in self.container.entries:
                if e.column != stored:
                    continue
                payload = self.container.payload(e.column, e.index_type)
                if payload is None:
                    continue  # EMPTY: the writer saw no rows; nothing to decide with
                try:
                    indexer = get_indexer(e.index_type)
                except LakeskipError:
                    continue
                if not indexer.supports(dtype):
                    continue
                out.append((e.index_type, indexer.create_reader(dtype, {}, payload)))
        self._readers[name] = out
        return out

    def readers(self, name: str) -> list[FileIndexReader]:
        return [r for _, r in self.typed_readers(name)]
