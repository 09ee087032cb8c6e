"""Column statistics of a data file: collect them (vectorised) and read them back by field id.

``metadata.stats-mode`` chooses what is kept per column, as in Paimon:

* ``none`` -- nothing (the column is left out of the dense stats row);
* ``counts`` -- null count only;
* ``full`` -- min, max, null count;
* ``truncate(N)`` (Java's default, N=16) -- like full, but strings/binaries are cut to N
  characters/bytes: the min is the prefix, the max is the prefix with its last character
  incremented so it stays an upper bound; when no character can be incremented the
  column's min and max are dropped (Paimon's ``TruncateSimpleColStatsCollector``).

MAP and ARRAY columns keep null counts only. A FLOAT/DOUBLE column holding NaN keeps no
min/max: NaN sorts above every number in Java and Spark, and a max that hides it could let a
planner skip a file whose NaN rows match ``x > c``.

Stats are stored "dense" (``metadata.stats-dense-store``, Paimon's default): only columns
with stats appear, ``_VALUE_STATS_COLS`` names them (``None`` when it is every column).

Example:
    >>> import pyarrow as pa
    >>> from lakeskip.types import BIGINT, STRING, RowType
    >>> rt = RowType.of(("id", BIGINT), ("s", STRING))
    >>> t = pa.table({"id": [3, None, 1], "s": ["b" * 20, "a", None]})
    >>> stats, cols = collect_stats(t, rt)
    >>> from lakeskip.catalog.format.binary_row import deserialize_row
    >>> deserialize_row(stats.max_values, [BIGINT, STRING]), stats.null_counts, cols
    ((3, 'bbbbbbbbbbbbbbbc'), (1, 1), None)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.catalog.format.binary_row import deserialize_row, serialize_row
from lakeskip.catalog.format.data_file import DataFileMeta, SimpleStats
from lakeskip.catalog.format.parquet_options import parquet_write_options
from lakeskip.errors import CorruptMetadataError, InvalidOptionError, LakeskipError
from lakeskip.types import DataType, RowType, TypeRoot

if TYPE_CHECKING:
    from lakeskip.catalog.format.manifest import ManifestEntry
    from lakeskip.catalog.format.schema import TableSchema

__all__ = [
    "StatsCollector",
    "collect_stats",
    "file_column_stats",
    "parse_stats_mode",
    "truncate_max",
    "truncate_min",
    "unpushable_columns",
]

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


_STATS_MODE_RE = re.compile(r"^(none|counts|full|truncate\((\d+)\))$", re.IGNORECASE)


def parse_stats_mode(text: str) -> tuple[str, int | None]:
    """``("truncate", 16)``, ``("full", None)``, ... for a stats-mode string.

    Raises:
        InvalidOptionError: not one of none, counts, full, truncate(N) with N > 0.

    >>> parse_stats_mode("Truncate(8)")
    ('truncate', 8)
    """
    m = _STATS_MODE_RE.match(str(text).strip())
    if m is None or (m.group(2) is not None and int(m.group(2)) <= 0):
        raise InvalidOptionError(
            f"invalid stats mode {text!r} (expected none, counts, full or truncate(N))"
        )
    kind = m.group(1).lower()
    if m.group(2) is not None:
        return "truncate", int(m.group(2))
    return kind, None


def truncate_min(value: Any, length: int) -> Any:
    """A value <= ``value`` of at most ``length`` characters (strings) or bytes (binary).

    >>> truncate_min("abcdef", 3)
    'abc'
    """
    if isinstance(value, (str, bytes)):
        return value[:length]
    return value


def truncate_max(value: Any, length: int) -> Any:
    """A value >= ``value`` of at most ``length`` characters/bytes, or None if none exists.

    >>> truncate_max("abcdef", 3), truncate_max(b"a\\xff\\xff", 2), truncate_max(b"\\xff\\xff\\x01", 2)
    ('abd', b'b', None)
    """
    if isinstance(value, str):
        if len(value) <= length:
            return value
        chars = list(value[:length])
        for i in range(length - 1, -1, -1):
            nxt = ord(chars[i]) + 1
            if nxt in _SURROGATES:
                nxt = _SURROGATES.stop
            if nxt <= _MAX_CODE_POINT:
                return "".join(chars[:i]) + chr(nxt)
        return None
    if isinstance(value, bytes):
        if len(value) <= length:
            return value
        head = bytearray(value[:length])
        for i in range(length - 1, -1, -1):
            if head[i] != 0xFF:
                head[i] += 1
                return bytes(head[: i + 1])
        return None
    return value


def _scalar_internal(s: pa.Scalar, t: DataType) -> Any:
    if not s.is_valid:
        return None
    if t.root is TypeRoot.DATE:
        return s.cast(pa.int32()).as_py()
    if t.is_timestamp:
        return s.cast(pa.int64()).as_py()
    if t.root is TypeRoot.BINARY:
        return bytes(s.as_py())
    return s.as_py()


def _column_raw(
    column: pa.ChunkedArray, t: DataType, mode: str
) -> tuple[Any, Any, int | None, bool]:
    """(min, max, null count, holds NaN) of one column of one batch, before truncation."""
    if t.root is TypeRoot.ROW:
        # as Paimon's ParquetSimpleStatsExtractor: a ROW's Parquet columns are its leaves
        # (st.x, st.y), none is named st, so min, max and null count are all null
        return None, None, None, False
    nulls = int(column.null_count)
    if mode == "counts" or t.is_nested:
        return None, None, nulls, False
    want = t.to_arrow()
    if column.type != want:
        column = column.cast(want)
    if nulls == len(column):
        return None, None, nulls, False
    if column.type == pa.bool_():
        return bool(pc.min(column).as_py()), bool(pc.max(column).as_py()), nulls, False
    if t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE) and pc.any(pc.is_nan(column)).as_py():
        return None, None, nulls, True
    mm = pc.min_max(column)
    lo, hi = _scalar_internal(mm["min"], t), _scalar_internal(mm["max"], t)
    if isinstance(lo, float) and (math.isnan(lo) or math.isnan(hi)):
        return None, None, nulls, True
    return lo, hi, nulls, False


class StatsCollector:
    """:func:`collect_stats` over a file written a batch at a time: :meth:`add` each batch,
    :meth:`result` once. Keeps one (min, max, null count) per column, so a streamed file's
    stats need none of its rows held; truncation (``truncate(N)``) is applied to the file's
    min and max at the end, as for the whole file at once.

    >>> from lakeskip.types import BIGINT, STRING, RowType
    >>> rt = RowType.of(("id", BIGINT), ("s", STRING))
    >>> c = StatsCollector(rt, "truncate(2)")
    >>> c.add(pa.table({"id": [3, None], "s": ["bcd", None]}))
    >>> c.add(pa.table({"id": [1], "s": ["a"]}))
    >>> c.result() == collect_stats(pa.table({"id": [3, None, 1], "s": ["bcd", None, "a"]}),
    ...                             rt, "truncate(2)")
    True
    """

    def __init__(self, row_type: RowType, mode: str = "truncate(16)") -> None:
        self.row_type = row_type
        self.kind, self.length = parse_stats_mode(mode)
        n = len(row_type.fields)
        self.mins: list[Any] = [None] * n
        self.maxs: list[Any] = [None] * n
        # a ROW has no null count (its Parquet columns are its leaves)
        self.nulls: list[int | None] = [
            None if f.type.root is TypeRoot.ROW else 0 for f in row_type
        ]
        self.nan = [False] * n

    def add(self, table: pa.Table) -> None:
        """Take the next rows of the file (columns matched to the row type by name)."""
        if self.kind == "none" or table.num_rows == 0:
            return
        for i, f in enumerate(self.row_type):
            lo, hi, n, nan = _column_raw(table.column(f.name), f.type, self.kind)
            known = self.nulls[i]
            self.nulls[i] = None if n is None or known is None else known + n
            if nan:
                self.nan[i] = True
            if lo is not None:
                # ties keep the first seen (-0.0 / 0.0), as Arrow's min_max over the file
                if self.mins[i] is None or lo < self.mins[i]:
                    self.mins[i] = lo
                if self.maxs[i] is None or hi > self.maxs[i]:
                    self.maxs[i] = hi

    def result(self) -> tuple[SimpleStats, tuple[str, ...] | None]:
        """The dense ``SimpleStats`` and the names it covers (``None`` = all columns)."""
        if self.kind == "none":
            return SimpleStats(serialize_row((), ()), serialize_row((), ()), ()), ()
        mins: list[Any] = []
        maxs: list[Any] = []
        types: list[DataType] = []
        for i, f in enumerate(self.row_type):
            lo, hi = (None, None) if self.nan[i] else (self.mins[i], self.maxs[i])
            if self.kind == "truncate" and self.length is not None and isinstance(lo, (str, bytes)):
                lo = truncate_min(lo, self.length)
                hi = truncate_max(hi, self.length)
                if hi is None:
                    lo = None
            mins.append(lo)
            maxs.append(hi)
            types.append(f.type)
        return (
            SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(self.nulls)),
            None,
        )


def collect_stats(
    table: pa.Table, row_type: RowType, mode: str = "truncate(16)"
) -> tuple[SimpleStats, tuple[str, ...] | None]:
    """Stats of every column of ``table`` (columns matched to ``row_type`` by name).

    Args:
        table: the file's rows.
        row_type: the table schema's columns.
        mode: ``metadata.stats-mode``.

    Returns:
        The dense ``SimpleStats`` and the names it covers (``None`` = all columns).
    """
    collector = StatsCollector(row_type, mode)
    collector.add(table)
    return collector.result()


def file_column_stats(
    meta: DataFileMeta, file_schema: TableSchema, table_schema: TableSchema
) -> dict[str, tuple[Any, Any, int | None]]:
    """A file's stats keyed by *current* column name, mapped by field id.

    Columns without stats (stats mode ``none``, or added after the file was written) are
    absent; ``min``/``max`` may be ``None`` (``counts`` mode, truncation failure, NaN).

    Raises:
        CorruptMetadataError: the stats bytes do not decode against the file's schema.
    """
    file_rt = file_schema.row_type
    cols = meta.value_stats_cols
    names = list(cols) if cols is not None else file_rt.names
    if not names:
        return {}
    try:
        fields = [file_rt.field(n) for n in names]
    except LookupError as e:
        raise CorruptMetadataError(f"{meta.file_name}: stats name unknown column: {e}") from e
    types = [f.type for f in fields]
    stats = meta.value_stats
    mins = deserialize_row(stats.min_values, types)
    maxs = deserialize_row(stats.max_values, types)
    counts = stats.null_counts
    if counts and len(counts) != len(fields):
        raise CorruptMetadataError(
            f"{meta.file_name}: {len(counts)} null counts for {len(fields)} stats columns"
        )
    current = {f.id: f for f in table_schema.row_type}
    out: dict[str, tuple[Any, Any, int | None]] = {}
    for i, f in enumerate(fields):
        now = current.get(f.id)
        if now is None:
            continue  # dropped column
        if now.type.with_nullable(True) != f.type.with_nullable(True):
            continue  # type changed: old stats are in the old type's form
        out[now.name] = (mins[i], maxs[i], counts[i] if counts else None)
    return out


def unpushable_columns(
    entries: Iterable[ManifestEntry],
    table_schema: TableSchema,
    schema_by_id: Callable[[int], TableSchema],
    columns: Iterable[str] | None = None,
) -> frozenset[str]:
    """Top-level columns (current names; among ``columns`` when given, matched without case:
    those a query filters on) that Spark must not filter on by the Parquet
    statistics, dictionaries or bloom filters of these files (its pushed Parquet filters would
    skip row groups holding matches); Spark still applies every filter to the rows.

    * FLOAT/DOUBLE that some file may hold NaN in (issue 26): files written before the fix
      have Parquet min/max that leave NaN out (pyarrow), and Spark orders NaN above
      +Infinity, so ``c = NaN`` or ``c > x`` skipped the NaN rows. The manifest stats tell
      which files cannot hold a NaN: those with a min/max (a NaN drops them, see
      :func:`collect_stats`) or only nulls. Everything else -- NaN, ``counts``/``none`` stats
      mode, undecodable or retyped stats -- counts; the manifest does not say which writer
      wrote a file, so files rewritten since count too.
    * FLOAT/DOUBLE that some file may hold a zero in (min <= 0 <= max): parquet-mr's
      dictionary filter compares with ``Double.equals``, so ``c = 0.0`` skips a row group of
      -0.0 (Spark's own files too), though Spark's ``-0.0 = 0.0`` is true.
    * FLOAT/DOUBLE with a Parquet bloom filter configured: files written before lakeskip
      stopped writing them hash -0.0 and 0.0 (and NaNs of other bits) apart.
    * TIMESTAMP_LTZ stored in milliseconds (precision <= 3): Spark truncates a microsecond
      literal to milliseconds, so ``ts < '...01.0005'`` skipped the row at ``01.000``.

    >>> from lakeskip.catalog.format.data_file import make_data_file_meta
    >>> from lakeskip.catalog.format.manifest import FileKind, ManifestEntry
    >>> from lakeskip.catalog.format.schema import TableSchema
    >>> from lakeskip.types import BIGINT, DOUBLE
    >>> schema = TableSchema.create(0, RowType.of(("id", BIGINT), ("a", DOUBLE),
    ...                             ("b", DOUBLE)), (), {}, None)
    >>> t = pa.table({"id": [1, 2], "a": [1.0, float("nan")], "b": [1.0, 2.0]})
    >>> stats, cols = collect_stats(t, schema.row_type, "full")
    >>> meta = make_data_file_meta("f", 1, 2, stats, cols, schema.id, None, ())
    >>> e = ManifestEntry(kind=FileKind.ADD, partition=(), bucket=0, total_buckets=-1, file=meta)
    >>> sorted(unpushable_columns([e], schema, lambda _: schema))
    ['a']
    """
    wanted = None if columns is None else {c.lower() for c in columns}
    fields = [f for f in table_schema.row_type if wanted is None or f.name.lower() in wanted]
    unsafe: set[str] = {
        f.name
        for f in fields
        if f.type.root is TypeRoot.TIMESTAMP_LTZ and f.type.timestamp_unit == "ms"
    }
    floats = {f.id: f.name for f in fields if f.type.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE)}
    if not floats:
        return frozenset(unsafe)
    try:
        blooms = parquet_write_options(
            table_schema.options, table_schema.row_type, strict=False
        ).bloom_filters
        unsafe.update(name for name in floats.values() if name in blooms)
    except LakeskipError:  # options the writer would reject: assume every bloom filter
        unsafe.update(floats.values())
    for e in entries:
        if unsafe.issuperset(floats.values()):
            break
        meta = e.file
        try:
            file_schema = schema_by_id(meta.schema_id)
        except Exception:  # unknown schema: any float column may hold NaN
            unsafe.update(floats.values())
            break
        try:
            stats = file_column_stats(meta, file_schema, table_schema)
        except Exception:  # undecodable stats: as if there were none
            stats = {}
        file_ids = {f.id for f in file_schema.row_type}
        for fid, name in floats.items():
            if name in unsafe or fid not in file_ids:
                continue  # a column added after the file was written is all nulls in it
            s = stats.get(name)
            lo, hi, nulls = s if s is not None else (None, None, None)
            if lo is None or hi is None:
                if nulls != meta.row_count:
                    unsafe.add(name)
            elif lo <= 0.0 <= hi:
                unsafe.add(name)
    return frozenset(unsafe)
