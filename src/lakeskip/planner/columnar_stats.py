"""Every file's min/max/null counts as columns: one array per statistic, one slot per file.

The per-file :class:`~lakeskip.planner.stats.FileStats` dicts cost a Python object per file
and column, and a visitor call per file and predicate leaf; at 100,000 files that is
seconds. :class:`ColumnarStats` holds the same facts as arrays, and
:class:`~lakeskip.planner.vector_evaluator.VectorStatsEvaluator` answers every file in one
array operation per leaf, with the same verdicts as :class:`StatsEvaluator` file by file.

Per column: ``min``/``max`` values (``int64`` for integers, dates and timestamps,
``float64`` for FLOAT/DOUBLE -- a float32 widens exactly -- and Python objects otherwise),
a ``known`` mask per bound (unknown: no stats, truncation failure, NaN), and ``null_count``
(``-1`` = unknown). A column no file has stats for is simply absent (every file "unknown").

:func:`decode_file_stats` reads the stats straight from the manifests' ``BinaryRow`` bytes,
grouped by layout (files written with the same schema and stats columns share one), with
numpy over all rows of a group at once: fixed slots are a gather of 8 bytes per row, strings
a slice per row. A group whose bytes do not look right (wrong arity, short rows, bad UTF-8)
is decoded file by file as before, where a bad file is "unknown" and warned about.

>>> from lakeskip.planner.stats import ColumnStats, FileStats
>>> from lakeskip import types as T
>>> rt = T.RowType.of(("id", T.BIGINT))
>>> cs = ColumnarStats.from_file_stats(
...     [FileStats(3, {"id": ColumnStats(1, 5, 0)}), FileStats(2, {})], rt)
>>> cs.columns["id"].min.tolist(), cs.columns["id"].min_known.tolist(), cs.columns["id"].null_count.tolist()
([1, 0], [True, False], [0, -1])
"""

from __future__ import annotations

import decimal
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lakeskip.catalog.format.binary_row import null_bits_width
from lakeskip.types import DataType, RowType, TypeRoot

if TYPE_CHECKING:
    from lakeskip.catalog.format.data_file import DataFileMeta
    from lakeskip.catalog.format.schema import TableSchema
    from lakeskip.planner.stats import FileStats

__all__ = ["ColumnArrays", "ColumnarStats", "FileStatsColumns", "decode_file_stats"]

_INT_ROOTS = frozenset(
    {TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.DATE}
)
_FLOAT_ROOTS = frozenset({TypeRoot.FLOAT, TypeRoot.DOUBLE})


def _dtype(t: DataType) -> Any:
    if t.root in _INT_ROOTS or t.is_timestamp:
        return np.int64
    if t.root in _FLOAT_ROOTS:
        return np.float64
    return object


@dataclass(slots=True)
class ColumnArrays:
    """One column's stats over ``n`` files (see the module docstring)."""

    min: np.ndarray
    max: np.ndarray
    min_known: np.ndarray
    max_known: np.ndarray
    null_count: np.ndarray  # int64, -1 = unknown
    _arrow: dict[str, pa.Array | None] = field(default_factory=dict)

    def arrow(self, side: str) -> pa.Array | None:
        """``min`` or ``max`` as an Arrow string/binary array (null where unknown), built
        once; ``None`` when the values are not all ``str`` or all ``bytes``."""
        if side not in self._arrow:
            values, known = (
                (self.min, self.min_known) if side == "min" else (self.max, self.max_known)
            )
            got: pa.Array | None = None
            vals = values[known].tolist()
            kinds = {type(v) for v in vals}
            if kinds in ({str}, {bytes}):
                try:
                    got = pa.array(
                        [
                            v if k else None
                            for v, k in zip(values.tolist(), known.tolist(), strict=True)
                        ],
                        pa.large_string() if kinds == {str} else pa.large_binary(),
                    )
                except (pa.ArrowException, UnicodeEncodeError):
                    got = None  # e.g. lone surrogates: compare in Python
            self._arrow[side] = got
        return self._arrow[side]

    @classmethod
    def empty(cls, n: int, t: DataType) -> ColumnArrays:
        dt = _dtype(t)
        fill: Any = 0 if dt is not object else None
        return cls(
            np.full(n, fill, dtype=dt),
            np.full(n, fill, dtype=dt),
            np.zeros(n, dtype=np.bool_),
            np.zeros(n, dtype=np.bool_),
            np.full(n, -1, dtype=np.int64),
        )

    def take(self, idx: np.ndarray) -> ColumnArrays:
        return ColumnArrays(
            self.min[idx],
            self.max[idx],
            self.min_known[idx],
            self.max_known[idx],
            self.null_count[idx],
        )

    @property
    def nbytes(self) -> int:
        n = 0
        for a in (self.min, self.max):
            # Python objects: ~64 bytes each (a short str or a Decimal), not counted one by one
            n += a.nbytes if a.dtype != object else a.nbytes * 9
        return n + self.min_known.nbytes * 2 + self.null_count.nbytes


@dataclass(slots=True)
class ColumnarStats:
    """The stats of ``len(row_count)`` files, by current column name."""

    row_count: np.ndarray  # int64
    columns: dict[str, ColumnArrays]
    types: dict[str, DataType]

    def __len__(self) -> int:
        return len(self.row_count)

    @property
    def nbytes(self) -> int:
        return 200 + self.row_count.nbytes + sum(c.nbytes + 200 for c in self.columns.values())

    def take(self, idx: np.ndarray) -> ColumnarStats:
        return ColumnarStats(
            self.row_count[idx], {k: c.take(idx) for k, c in self.columns.items()}, self.types
        )

    def with_columns(self, other: ColumnarStats) -> ColumnarStats:
        """These stats with ``other``'s columns (same files) replacing or adding theirs."""
        return ColumnarStats(
            self.row_count, {**self.columns, **other.columns}, self.types | other.types
        )

    @classmethod
    def from_file_stats(cls, files: Sequence[FileStats], row_type: RowType) -> ColumnarStats:
        """The generic (per-file) form, as the per-file evaluator sees it."""
        n = len(files)
        rc = np.fromiter((f.row_count for f in files), dtype=np.int64, count=n)
        types = {f.name: f.type for f in row_type}
        cols: dict[str, ColumnArrays] = {}
        for name, t in types.items():
            rows = [(i, f.columns.get(name)) for i, f in enumerate(files)]
            present = [(i, cs) for i, cs in rows if cs is not None]
            if not present:
                continue
            col = ColumnArrays.empty(n, t)
            for i, cs in present:
                _set(col, i, cs.min, cs.max, cs.null_count)
            cols[name] = col
        return cls(rc, cols, types)

    @classmethod
    def of_values(
        cls,
        row_count: np.ndarray,
        values: Mapping[str, Sequence[Any]],
        types: Mapping[str, DataType],
    ) -> ColumnarStats:
        """Exact stats of single-valued columns (partition values): min = max = the value,
        every row null when it is ``None``."""
        cols: dict[str, ColumnArrays] = {}
        n = len(row_count)
        for name, vals in values.items():
            col = ColumnArrays.empty(n, types[name])
            if not _set_all(col, vals, row_count):
                for i, v in enumerate(vals):
                    _set(col, i, v, v, int(row_count[i]) if v is None else 0)
            cols[name] = col
        return cls(row_count, cols, dict(types))


def _set_all(col: ColumnArrays, vals: Sequence[Any], row_count: np.ndarray) -> bool:
    """:func:`_set` of ``vals`` as both bounds of every file at once, where each is an ``int``
    (an int64 column) or a ``str`` (an object column) or ``None``; False (nothing set) for any
    other value: then file by file."""
    dt = col.min.dtype
    kinds = set(map(type, vals))
    kinds.discard(type(None))
    if dt == np.int64 and kinds <= {int}:
        try:
            got = np.fromiter((0 if v is None else v for v in vals), np.int64, len(vals))
        except OverflowError:
            return False  # beyond int64: left unknown file by file
    elif dt.kind == "O" and kinds <= {str}:
        got = np.empty(len(vals), dtype=object)
        got[:] = list(vals)
    else:
        return False
    known = np.fromiter((v is not None for v in vals), np.bool_, len(vals))
    col.min[:] = got
    col.max[:] = got
    col.min_known[:] = known
    col.max_known[:] = known
    col.null_count[:] = np.where(known, 0, np.asarray(row_count, dtype=np.int64))
    return True


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _set(col: ColumnArrays, i: int, lo: Any, hi: Any, nulls: int | None) -> None:
    """Put one file's stats in slot ``i`` (a value that does not fit the array's type is
    left unknown: the scalar evaluator would compare it as it is, this one cannot)."""
    for arr, known, v in ((col.min, col.min_known, lo), (col.max, col.max_known, hi)):
        if v is None or _is_nan(v):
            continue
        try:
            if arr.dtype == np.int64 and not isinstance(v, int):
                raise TypeError
            if arr.dtype == np.float64 and not isinstance(v, (int, float)):
                raise TypeError
            arr[i] = v
        except (TypeError, ValueError, OverflowError):
            continue
        known[i] = True
    col.null_count[i] = -1 if nulls is None else nulls


# -- decoding straight from the manifests -------------------------------------------------

_FIXED: dict[TypeRoot, str] = {
    TypeRoot.TINYINT: "<i1",
    TypeRoot.SMALLINT: "<i2",
    TypeRoot.INT: "<i4",
    TypeRoot.DATE: "<i4",
    TypeRoot.BIGINT: "<i8",
    TypeRoot.FLOAT: "<f4",
    TypeRoot.DOUBLE: "<f8",
}


_DECIMAL_CTX = decimal.Context(prec=80, rounding=decimal.ROUND_HALF_UP)  # as binary_row's


class _Undecodable(Exception):
    """A group's bytes are not what its layout says: decode it file by file instead."""


def _gather_slots(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The 8 bytes at each ``pos`` of ``buf`` as an (n, 8) uint8 array."""
    return buf[pos[:, None] + np.arange(8)]


def _decode_rows(
    rows: Sequence[bytes], types: Sequence[DataType]
) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Each field of every row: (values, known) or None for types decoded file by file.

    Raises:
        _Undecodable: a row's arity or size does not match ``types``.
    """
    n = len(rows)
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=n)
    return _decode_rows_at(b"".join(rows), np.cumsum(lens) - lens, lens, types)


def _decode_rows_at(
    joined: bytes, starts: np.ndarray, lens: np.ndarray, types: Sequence[DataType]
) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """:func:`_decode_rows` of the rows at ``starts`` (of ``lens`` bytes each) in ``joined``."""
    n, arity = len(starts), len(types)
    width = null_bits_width(arity)
    if n == 0:
        return [None] * arity
    if (lens < 4 + width + 8 * arity).any():
        raise _Undecodable("short row")
    buf = np.frombuffer(joined, dtype=np.uint8)
    head = buf[starts[:, None] + np.arange(4)].view(">i4").ravel()
    if (head != arity).any():
        raise _Undecodable("arity")
    row0 = starts + 4
    out: list[tuple[np.ndarray, np.ndarray] | None] = []
    for i, t in enumerate(types):
        bit = i + 8
        is_null = (buf[row0 + bit // 8] & (1 << (bit % 8))) != 0
        known = ~is_null
        slot = row0 + width + 8 * i
        r = t.root
        raw = _gather_slots(buf, slot)
        if r in _FIXED:
            code = _FIXED[r]
            size = np.dtype(code).itemsize
            vals = np.ascontiguousarray(raw[:, :size]).view(code).ravel()
            out.append((vals.astype(_dtype(t)), known))
        elif t.is_timestamp and (t.precision if t.precision is not None else 6) <= 3:
            out.append((raw.view("<i8").ravel().astype(np.int64), known))
        elif t.is_timestamp:
            # offset << 32 | nanoOfMillisecond, the epoch millis in an 8-byte chunk at offset
            word = raw.view("<u8").ravel()
            at = row0 + (word >> np.uint64(32)).astype(np.int64)
            nanos = (word & np.uint64(0xFFFFFFFF)).astype(np.int64)
            if (known & ((at + 8 > starts + lens) | (nanos >= 1_000_000))).any():
                raise _Undecodable("timestamp slot")
            millis = _gather_slots(buf, np.where(known, at, row0)).view("<i8").ravel()
            micros = millis.astype(np.int64) * 1000 + nanos // 1000
            out.append((micros if t.timestamp_unit == "us" else micros // 1000, known))
        elif r is TypeRoot.DECIMAL and (t.precision if t.precision is not None else 10) <= 18:
            unscaled = raw.view("<i8").ravel().tolist()
            scale = t.scale or 0
            vals = np.empty(n, dtype=object)
            vals[:] = [
                decimal.Decimal(u).scaleb(-scale, context=_DECIMAL_CTX) if k else None
                for u, k in zip(unscaled, known.tolist(), strict=True)
            ]
            out.append((vals, known))
        elif r is TypeRoot.BOOLEAN:
            vals = np.empty(n, dtype=object)
            vals[:] = list(raw[:, 0] != 0)
            out.append((vals, known))
        elif r in (TypeRoot.STRING, TypeRoot.BINARY):
            word = raw.view("<u8").ravel()
            inline = (word >> np.uint64(63)) != 0
            length = np.where(
                inline,
                (word >> np.uint64(56)) & np.uint64(0x7F),
                word & np.uint64(0xFFFFFFFF),
            ).astype(np.int64)
            begin = np.where(inline, slot, row0 + (word >> np.uint64(32)).astype(np.int64))
            end = begin + length
            if (known & (inline & (length > 7) | (end > starts + lens))).any():
                raise _Undecodable("string slot")
            vals = np.empty(n, dtype=object)
            if r is TypeRoot.STRING:
                try:
                    vals[:] = [
                        joined[b:e].decode("utf-8") if k else None
                        for b, e, k in zip(
                            begin.tolist(), end.tolist(), known.tolist(), strict=True
                        )
                    ]
                except UnicodeDecodeError as e:
                    raise _Undecodable("utf-8") from e
            else:
                vals[:] = [
                    joined[b:e] if k else None
                    for b, e, k in zip(begin.tolist(), end.tolist(), known.tolist(), strict=True)
                ]
            out.append((vals, known))
        else:
            out.append(None)
    return out


@dataclass(frozen=True, slots=True)
class FileStatsColumns:
    """What :func:`decode_file_stats` reads of each data file, as columns: its row count,
    schema id, stats columns (``None``: every column of its schema) and value stats (min and
    max ``BinaryRow`` bytes, null counts)."""

    row_count: np.ndarray
    schema_id: Sequence[int]
    stats_cols: Sequence[tuple[str, ...] | None]
    mins: Sequence[bytes]
    maxs: Sequence[bytes]
    null_counts: Sequence[tuple[int | None, ...]]
    #: the min and max rows where they lie in one buffer (a decoded manifest's), instead of
    #: ``mins`` / ``maxs`` (then empty): (buffer, starts, ends) each
    spans: (
        tuple[tuple[bytes, np.ndarray, np.ndarray], tuple[bytes, np.ndarray, np.ndarray]] | None
    ) = None

    def rows(
        self, which: int, members: list[int], types: Sequence[DataType]
    ) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """:func:`_decode_rows` of the min (``which`` 0) or max (1) rows of ``members``."""
        if self.spans is None:
            listed = self.mins if which == 0 else self.maxs
            return _decode_rows([listed[i] for i in members], types)
        raw, start, end = self.spans[which]
        at = np.asarray(members, dtype=np.int64).reshape(len(members))
        return _decode_rows_at(raw, start[at], end[at] - start[at], types)

    @staticmethod
    def of_metas(metas: Sequence[DataFileMeta]) -> FileStatsColumns:
        n = len(metas)
        return FileStatsColumns(
            np.fromiter((m.row_count for m in metas), dtype=np.int64, count=n),
            [m.schema_id for m in metas],
            [m.value_stats_cols for m in metas],
            [m.value_stats.min_values for m in metas],
            [m.value_stats.max_values for m in metas],
            [m.value_stats.null_counts for m in metas],
        )


def decode_file_stats(
    files: FileStatsColumns,
    schema_by_id: Callable[[int], TableSchema],
    table_schema: TableSchema,
    per_file: Callable[[int], dict[str, tuple[Any, Any, int | None]] | None],
) -> ColumnarStats:
    """The value stats of ``files`` by current column name, as
    :func:`~lakeskip.catalog.format.stats.file_column_stats` maps them, decoded group by group.

    Args:
        per_file: decodes file ``i`` alone (the fallback; ``None``: its stats are unknown,
            the callee has warned).
    """
    rc = files.row_count
    n = len(rc)
    row_type = table_schema.row_type
    current = {f.id: f for f in row_type}
    types = {f.name: f.type for f in row_type}
    cols: dict[str, ColumnArrays] = {}

    def column(name: str) -> ColumnArrays:
        col = cols.get(name)
        if col is None:
            col = cols[name] = ColumnArrays.empty(n, types[name])
        return col

    groups: dict[tuple[int, tuple[str, ...] | None], list[int]] = {}
    one_schema = n and all(map(operator.eq, files.schema_id, repeat(files.schema_id[0])))
    if one_schema and len(set(files.stats_cols)) == 1:  # most snapshots: one group
        groups[(files.schema_id[0], files.stats_cols[0])] = list(range(n))
    else:
        for i, key in enumerate(zip(files.schema_id, files.stats_cols, strict=True)):
            groups.setdefault(key, []).append(i)
    for (schema_id, stats_cols), members in groups.items():
        idx = np.asarray(members, dtype=np.int64)
        try:
            file_rt = schema_by_id(schema_id).row_type
            names = list(stats_cols) if stats_cols is not None else file_rt.names
            fields = [file_rt.field(nm) for nm in names]
            # a column added after these files were written is NULL in every row of them
            # (Paimon's schema evolution); its values are unknown, its null count is not
            stored = {f.id for f in file_rt}
            for f in row_type:
                if f.id not in stored and not f.type.is_nested:
                    column(f.name).null_count[idx] = rc[idx]
        except Exception:
            fields = None
        decoded: list[tuple[np.ndarray, np.ndarray] | None] | None = None
        maxes: list[tuple[np.ndarray, np.ndarray] | None] | None = None
        counts: np.ndarray | None = None
        if fields is not None and fields:
            ftypes = [f.type for f in fields]
            try:
                decoded = files.rows(0, members, ftypes)
                maxes = files.rows(1, members, ftypes)
                counts = _null_counts([files.null_counts[i] for i in members], len(fields))
            except _Undecodable:
                decoded = None
        if fields is not None and not fields:
            continue  # no stats at all (stats mode none)
        if decoded is None or maxes is None or counts is None or fields is None:
            for i in members:
                one = per_file(i)
                for name, (lo, hi, nulls) in (one or {}).items():
                    if name in types:
                        _set(column(name), i, lo, hi, nulls)
            continue
        for k, f in enumerate(fields):
            now = current.get(f.id)
            if now is None or now.type.with_nullable(True) != f.type.with_nullable(True):
                continue
            col = column(now.name)
            lo, hi = decoded[k], maxes[k]
            if lo is None or hi is None:  # decimals, long timestamps: one by one
                for j, i in enumerate(members):
                    one = per_file(i)
                    if one is None:
                        continue
                    lo_v, hi_v, _ = one.get(now.name, (None, None, None))
                    _set(col, i, lo_v, hi_v, int(counts[j, k]) if counts[j, k] >= 0 else None)
                continue
            for (vals, known), arr, known_arr in (
                (lo, col.min, col.min_known),
                (hi, col.max, col.max_known),
            ):
                if vals.dtype == np.float64:
                    known = known & ~np.isnan(vals)
                arr[idx] = vals
                known_arr[idx] = known
            col.null_count[idx] = counts[:, k]
    return ColumnarStats(rc, cols, types)


def _null_counts(counts: Sequence[tuple[int | None, ...]], width: int) -> np.ndarray:
    """(files, width) int64, -1 = unknown; an empty tuple is every count unknown."""
    first = counts[0] if counts else None
    if first and len(first) == width and all(map(operator.is_, counts, repeat(first))):
        # one tuple for every file (the manifest decoder shares one, e.g. files without
        # nulls): converted once
        one = np.array([-1 if v is None else v for v in first], dtype=np.int64)
        return np.tile(one, (len(counts), 1))
    try:  # the common case: every file has every count
        fast = np.array(counts, dtype=np.int64)
        if fast.shape == (len(counts), width):
            return fast
    except (TypeError, ValueError):
        pass
    out = np.full((len(counts), width), -1, dtype=np.int64)
    for j, c in enumerate(counts):
        if not c:
            continue
        if len(c) != width:
            raise _Undecodable("null counts")
        out[j] = [-1 if v is None else v for v in c]
    return out
