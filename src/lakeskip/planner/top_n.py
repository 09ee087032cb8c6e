"""``LIMIT k`` and ``ORDER BY c LIMIT k`` pushed into a scan (Spark's ``SupportsPushDownLimit``
and ``SupportsPushDownTopN``; Paimon's connector does the same): of the files a scan reads,
keep only those that can hold the first ``k`` rows. Spark still sorts and limits the rows read.

Only an append table's files are counted (deleted rows subtracted by their count; never a
primary-key table, whose rows are merges of versions), and for ``ORDER BY`` only on a column
whose stats are exact bounds (BOOLEAN, integers, DECIMAL, DATE, TIMESTAMP in ms/us; the rule
of :mod:`lakeskip.planner.aggregate`), or VARCHAR / STRING in the files written with stats
mode ``full`` for it (others rank from first to last). Python orders strings by code point,
as Spark (UTF-8 bytes, the binary collation of lakeskip's columns).

With a filter, a file's rows count towards the limit only where *every* row of it is a row
of the answer's input (``matches``, from :func:`rows_all_match`: the filter, translated
exactly, proven true on each row by the partition values and the exact stats); a file that
may match only in part counts no row, but is kept wherever its best rank could be among the
first rows. Without a filter every file matches.

``LIMIT k``: the matching files in plan order until their live rows reach ``k`` (all files
when they never do).

``ORDER BY c [ASC|DESC] [NULLS FIRST|LAST], ... LIMIT k``: each file's rows lie, in the order
of the first key, between its *best* rank (the first any of its rows can take: its min for
ASC, its max for DESC, NULL where it has NULLs and they sort first) and its *worst* (the
last). Taking the matching files by worst rank until their live rows reach ``k`` gives a rank ``T``
with at least ``k`` rows at or before it, so every row of the first ``k`` ranks at or before
``T``: a file whose best rank is after ``T`` holds none of them and is skipped; every file
that may tie with ``T`` is kept (later keys and ties decide among those rows, Spark sorts
them). A deleted row only narrows a file's rows, so its stats still bound the live ones. A
file with no stats of the column (or stats that do not decode) ranks from first to last:
always kept, never counted towards ``T`` unless it is all NULL. A file holding both NULLs and
values counts its first group (its NULLs, or its values) at that group's last rank.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

import numpy as np

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.manifest_columns import LiveColumns
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.stats import file_column_stats, parse_stats_mode
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw, schema_kind
from lakeskip.catalog.options import (
    DEFAULT_STATS_MODE,
    FIELDS_PREFIX,
    STATS_MODE,
    STATS_MODE_SUFFIX,
)
from lakeskip.errors import LakeskipError
from lakeskip.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, bind
from lakeskip.planner.aggregate import min_max_exact
from lakeskip.planner.columnar_stats import ColumnArrays, ColumnarStats
from lakeskip.planner.index_gain import stats_prove_all_match
from lakeskip.planner.report import FileDecision, PruningReport
from lakeskip.planner.stats import ColumnStats, FileStats
from lakeskip.types import DataType, RowType, TypeRoot

__all__ = [
    "SortKey",
    "limit_columns",
    "limit_files",
    "limited_columns_report",
    "limited_report",
    "rows_all_match",
]


@dataclass(frozen=True, slots=True)
class SortKey:
    """One key of ``ORDER BY``: a top-level column, its direction and where its NULLs go."""

    column: str
    descending: bool = False
    nulls_first: bool = True


# a rank: (group, value); groups order NULLs first (0) or last (2) around the values (1)
_FIRST: tuple[int, Any] = (-1, 0)  # before everything: a file that may hold anything
_LAST: tuple[int, Any] = (3, 0)


def limit_files(
    schema: TableSchema,
    entries: Sequence[ManifestEntry],
    order: Sequence[SortKey],
    limit: int,
    *,
    schema_by_id: Callable[[int], TableSchema],
    deleted_rows: Callable[[ManifestEntry], int],
    matches: Sequence[bool] | None = None,
) -> list[ManifestEntry] | None:
    """The files of ``entries`` that can hold the first ``limit`` rows in ``order`` (plain
    ``LIMIT`` when empty), in their order; ``None`` when nothing can be skipped soundly
    (module docstring). ``matches``: per file, whether every row of it is a row of the
    answer's input (``None``: all are, no filter).

    >>> import pyarrow as pa
    >>> from lakeskip.catalog.format.data_file import make_data_file_meta
    >>> from lakeskip.catalog.format.manifest import FileKind
    >>> from lakeskip.catalog.format.stats import collect_stats
    >>> from lakeskip.types import BIGINT, RowType
    >>> s = TableSchema.create(0, RowType.of(("ts", BIGINT)), (), {}, None)
    >>> def entry(name, ts):
    ...     st, cols = collect_stats(pa.table({"ts": ts}), s.row_type, "full")
    ...     return ManifestEntry(FileKind.ADD, (), 0, -1,
    ...                          make_data_file_meta(name, 1, len(ts), st, cols, 0, None, ()))
    >>> files = [entry("a", [1, 2, 3]), entry("b", [7, 8, 9]), entry("c", [5, 9, 6])]
    >>> kept = limit_files(s, files, [SortKey("ts", descending=True, nulls_first=False)], 2,
    ...     schema_by_id=lambda _: s, deleted_rows=lambda e: 0)
    >>> [e.file.file_name for e in kept]
    ['b', 'c']
    """
    kind = schema_kind(schema)
    match kind:
        case PkMerge() | PkRaw():  # a file's rows are versions, or level 0 is not read
            return None
        case Append() | AppendDv():
            pass
        case _:
            assert_never(kind)
    if limit < 0:
        return None
    counts = [True] * len(entries) if matches is None else list(matches)
    live = [
        max(e.file.row_count - deleted_rows(e), 0) if c else 0
        for e, c in zip(entries, counts, strict=True)
    ]
    if not order:
        kept, rows = [], 0
        for e, n, c in zip(entries, live, counts, strict=True):
            if rows >= limit:
                break
            if c:
                kept.append(e)
                rows += n
        return kept if rows >= limit else list(entries)
    key = order[0]
    row_type = schema.row_type
    if not row_type.has(key.column):
        return None
    field = row_type.field(key.column)
    if not min_max_exact(field.type) and not _is_varchar(field.type):
        return None
    ranks = [
        _ranks(e, live[i], deleted_rows(e), schema, field.id, field.name, key, schema_by_id)
        for i, e in enumerate(entries)
    ]
    # (rank, rows): at least ``rows`` live rows of a matching file at or before ``rank``
    pieces = sorted(
        (piece for (_, ps), c in zip(ranks, counts, strict=True) if c for piece in ps),
        key=lambda p: p[0],
    )
    rows, bound = 0, None
    for rank, n in pieces:
        if rows >= limit:
            break
        rows += n
        bound = rank
    if rows < limit or bound is None:
        return list(entries)  # fewer rows than the limit: every file
    return [e for e, (best, _) in zip(entries, ranks, strict=True) if best <= bound]


# the types whose stats columns are int64 in the order of their values (integers, DATE,
# TIMESTAMP in ms / us: min_max_exact's, BOOLEAN and DECIMAL aside)
_LONG_ROOTS = frozenset(
    {TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.DATE}
)


def limit_columns(
    schema: TableSchema,
    row_count: np.ndarray,
    stats: Callable[[], ColumnarStats],
    order: Sequence[SortKey],
    limit: int,
    matches: np.ndarray | None = None,
) -> np.ndarray | None:
    """:func:`limit_files` over files none of which has deleted rows, from
    their row counts and stats as columns (numpy: no per-file object, no rank tuple): a mask
    of the kept files; None where the columns do not decide it (a primary-key table, a
    negative limit, an order by a column whose stats are not int64 columns in its order:
    then :func:`limit_files`, record by record).

    Args:
        row_count: each file's row count.
        stats: the files' stats as columns (decoded on first use: plain ``LIMIT`` reads none).
        matches: per file, whether every row of it is a row of the answer's input (None: all
            are), as :func:`limit_files` takes it.
    """
    if not isinstance(schema_kind(schema), (Append, AppendDv)) or limit < 0:
        return None
    rc = np.asarray(row_count, dtype=np.int64)
    n = len(rc)
    counts = np.ones(n, dtype=np.bool_) if matches is None else np.asarray(matches, np.bool_)
    live = np.where(counts, rc, 0)  # rows counted towards the limit
    if not order:  # the matching files in order until their rows reach the limit
        total = np.cumsum(live)
        if limit == 0:
            return np.zeros(n, dtype=np.bool_)
        if not n or total[-1] < limit:
            return np.ones(n, dtype=np.bool_)
        return counts & (np.arange(n) <= int(np.searchsorted(total, limit)))
    key = order[0]
    row_type = schema.row_type
    if not row_type.has(key.column):
        return None
    field = row_type.field(key.column)
    t = field.type
    if not min_max_exact(t) or not (t.root in _LONG_ROOTS or t.is_timestamp):
        return None
    got = stats()
    col = got.columns.get(field.name)
    if col is None:
        col = ColumnArrays.empty(n, t)
    if col.min.dtype != np.int64:
        return None
    nulls = col.null_count
    # ranks as (group, value): _FIRST -1, NULLs first 0, values 1, NULLs last 2, _LAST 3;
    # a descending order ranks ~v (-v - 1: reversed, no overflow)
    null_g = 0 if key.nulls_first else 2
    lo, hi = (~col.max, ~col.min) if key.descending else (col.min, col.max)
    all_null = (nulls >= 0) & (nulls >= rc)
    unknown = ~all_null & ~(col.min_known & col.max_known)
    values = ~all_null & ~unknown
    some = values & (nulls > 0) & (nulls < rc)  # NULLs and values: two groups
    open_ = values & (nulls < 0)  # values, NULL count unknown
    best_g = np.where(all_null, null_g, np.where(unknown, -1, 1))
    best_v = np.where(values, lo, 0)
    if key.nulls_first:  # an unknown NULL count or some NULLs: may rank first
        best_g = np.where(open_ | some, null_g, best_g)
        best_v = np.where(open_ | some, 0, best_v)
    # the pieces: (group, value, rows) -- first group at its last rank, the rest at the last
    last_g = np.where(all_null, null_g, np.where(unknown, 3, 1))
    last_v = np.where(values, hi, 0)
    if not key.nulls_first:  # NULLs last: an unknown NULL count ranks last at the NULLs'
        last_g = np.where(open_, null_g, last_g)
        last_v = np.where(open_, 0, last_v)
    early = np.zeros(n, dtype=np.int64)
    early_g = np.full(n, null_g, dtype=np.int64)
    early_v = np.zeros(n, dtype=np.int64)
    if key.nulls_first:  # its NULLs at the NULLs' rank, its values at its last
        early[some] = np.minimum(nulls[some], live[some])
    else:  # its values at its last value, its NULLs at the NULLs' rank
        early[some] = np.minimum(rc[some] - nulls[some], live[some])
        early_g[some], early_v[some] = 1, hi[some]
        last_g = np.where(some, null_g, last_g)
        last_v = np.where(some, 0, last_v)
    g = np.concatenate([early_g[some], last_g])
    v = np.concatenate([early_v[some], last_v])
    rows = np.concatenate([early[some], live - early])
    if limit == 0 or int(rows.sum()) < limit:
        return np.ones(n, dtype=np.bool_)  # fewer rows than the limit: every file
    at = np.lexsort((v, g))
    k = at[int(np.searchsorted(np.cumsum(rows[at]), limit))]
    bound_g, bound_v = g[k], v[k]
    keep: np.ndarray = (best_g < bound_g) | ((best_g == bound_g) & (best_v <= bound_v))
    return keep


@functools.total_ordering
class _Desc:
    """A value ranked in descending order (any ordered type: numbers, strings)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.value == other.value

    def __lt__(self, other: _Desc) -> bool:
        result: bool = other.value < self.value
        return result

    def __hash__(self) -> int:
        return hash(self.value)


def _is_varchar(t: DataType) -> bool:
    """VARCHAR / STRING (not CHAR(n): Spark pads it when read, which may reorder values)."""
    return t.root is TypeRoot.STRING and not t.fixed


def _full_stats(file_schema: TableSchema, field_id: int) -> bool:
    """Whether a file written under ``file_schema`` kept untruncated min/max of the column
    (stats mode ``full``; the options of the schema version it was written with). Truncated
    string stats are left unused: a truncated max is an incremented prefix, and Paimon's
    increment of a code point below the surrogates is no upper bound."""
    options = file_schema.options
    name = next((f.name for f in file_schema.row_type if f.id == field_id), None)
    mode = options.get(
        f"{FIELDS_PREFIX}{name}{STATS_MODE_SUFFIX}",
        options.get(STATS_MODE, DEFAULT_STATS_MODE),
    )
    try:
        return parse_stats_mode(str(mode))[0] == "full"
    except LakeskipError:
        return False


def _ranks(
    e: ManifestEntry,
    live: int,
    deleted: int,
    schema: TableSchema,
    field_id: int,
    name: str,
    key: SortKey,
    schema_by_id: Callable[[int], TableSchema],
) -> tuple[tuple[int, Any], list[tuple[tuple[int, Any], int]]]:
    """The first rank a live row of ``e`` can take under ``key``, and how many of its live
    rows lie at or before which ranks: all at its last rank, or, where it holds both NULLs
    and values, those of the group that sorts first (less the deleted rows, which may be
    theirs) at that group's last rank and the rest at the file's last."""
    null = (0, 0) if key.nulls_first else (2, 0)
    meta = e.file
    try:
        file_schema = schema_by_id(meta.schema_id)
        if field_id not in {f.id for f in file_schema.row_type}:
            return null, [(null, live)]  # added after the file was written: NULL in every row
        stats = file_column_stats(meta, file_schema, schema)
    except (LakeskipError, LookupError, ValueError):
        return _FIRST, [(_LAST, live)]
    s = stats.get(name)
    if s is None:
        return _FIRST, [(_LAST, live)]
    lo, hi, nulls = s
    if nulls is not None and nulls >= meta.row_count:
        return null, [(null, live)]
    if lo is None or hi is None or (isinstance(lo, str) and not _full_stats(file_schema, field_id)):
        return _FIRST, [(_LAST, live)]
    first, last = ((1, _Desc(hi)), (1, _Desc(lo))) if key.descending else ((1, lo), (1, hi))
    if nulls == 0:
        return first, [(last, live)]
    if nulls is None:
        return min(first, null), [(max(last, null), live)]
    if key.nulls_first:
        early = min(max(nulls - deleted, 0), live)
        return null, [(null, early), (last, live - early)]
    early = min(max(meta.row_count - nulls - deleted, 0), live)
    return first, [(last, early), (null, live - early)]


def rows_all_match(
    schema: TableSchema,
    entries: Sequence[ManifestEntry],
    predicate: BooleanExpression,
    *,
    time_zone: str,
    schema_by_id: Callable[[int], TableSchema],
    stats: ColumnarStats | None = None,
) -> list[bool]:
    """Per file of ``entries``: whether every row of it satisfies ``predicate`` (which must
    select exactly the rows of the query's filter), proven by its partition values and the
    stats of its columns of exact types (:func:`~lakeskip.planner.index_gain.
    stats_prove_all_match`); False wherever that is not proven. ``stats``: the stats of
    ``entries`` as columns, as the planner decodes them (:meth:`~lakeskip.planner.scan.
    ScanPlanner.kept_stats`; None: decoded here file by file).

    >>> import pyarrow as pa
    >>> from lakeskip.catalog.format.data_file import make_data_file_meta
    >>> from lakeskip.catalog.format.manifest import FileKind
    >>> from lakeskip.catalog.format.stats import collect_stats
    >>> from lakeskip.expressions import GreaterThan
    >>> from lakeskip.types import BIGINT, RowType
    >>> s = TableSchema.create(0, RowType.of(("ts", BIGINT)), (), {}, None)
    >>> def entry(name, ts):
    ...     st, cols = collect_stats(pa.table({"ts": ts}), s.row_type, "full")
    ...     return ManifestEntry(FileKind.ADD, (), 0, -1,
    ...                          make_data_file_meta(name, 1, len(ts), st, cols, 0, None, ()))
    >>> rows_all_match(s, [entry("a", [1, 5]), entry("b", [6, 9])], GreaterThan("ts", 4),
    ...     time_zone="UTC", schema_by_id=lambda _: s)
    [False, True]
    """
    n = len(entries)
    row_type = schema.row_type
    try:
        bound = bind(row_type, predicate, time_zone=time_zone)
    except LakeskipError:
        return [False] * n
    if isinstance(bound, AlwaysTrue):
        return [True] * n
    if isinstance(bound, AlwaysFalse) or not n:
        return [False] * n
    part_keys = list(schema.partition_keys)
    exact = [f for f in row_type if f.name not in part_keys and min_max_exact(f.type)]
    if stats is not None:  # only the exact columns count
        names = {f.name for f in exact}
        stats = ColumnarStats(
            stats.row_count,
            {k: c for k, c in stats.columns.items() if k in names},
            {f.name: f.type for f in exact},
        )
    else:
        files: list[FileStats] = []
        for e in entries:
            try:
                got = file_column_stats(e.file, schema_by_id(e.file.schema_id), schema)
            except (LakeskipError, LookupError, ValueError):
                got = {}
            files.append(
                FileStats(
                    e.file.row_count,
                    {f.name: ColumnStats(*got[f.name]) for f in exact if f.name in got},
                )
            )
        stats = ColumnarStats.from_file_stats(files, RowType(tuple(exact)))
    exact_parts: frozenset[str] = frozenset()
    if part_keys:
        types = {k: row_type.field(k).type for k in part_keys}
        stats = stats.with_columns(
            ColumnarStats.of_values(
                stats.row_count,
                {k: [e.partition[j] for e in entries] for j, k in enumerate(part_keys)},
                types,
            )
        )
        # a partition value is the value of every row of its files (NaN aside: not floats)
        exact_parts = frozenset(
            k for k, t in types.items() if t.root not in (TypeRoot.FLOAT, TypeRoot.DOUBLE)
        )
    out: list[bool] = stats_prove_all_match(bound, stats, exact_parts).tolist()
    return out


def limited_report(
    report: PruningReport,
    decisions: Sequence[FileDecision],
    kept: Sequence[ManifestEntry],
    label: str,
    note: str,
) -> PruningReport:
    """``report`` after a pushed limit kept only ``kept`` of its kept files: the kept totals
    of those, the others as skipped by ``label`` (``limit`` / ``top-n(ts)``), and ``note``
    (what was pushed and why these files were kept) for ``EXPLAIN PRUNING``."""
    ids = {id(e) for e in kept}
    still = [d for d in decisions if d.keep and id(d.entry) in ids]
    return dataclasses.replace(
        report,
        kept_files=len(still),
        kept_bytes=sum(d.entry.file.file_size for d in still),
        kept_rows=sum(len(d.rows) if d.rows is not None else d.entry.file.row_count for d in still),
        skipped_by_limit={label: report.kept_files - len(still)},
        limit_note=note,
    )


def limited_columns_report(
    report: PruningReport, kept: LiveColumns, label: str, note: str
) -> PruningReport:
    """:func:`limited_report` of a plan made from the live files' columns (no file narrowed
    to rows), after a pushed limit kept only the files ``kept``."""
    files = len(kept)
    return dataclasses.replace(
        report,
        kept_files=files,
        kept_bytes=int(kept.longs("_FILE_SIZE").sum()),
        kept_rows=int(kept.longs("_ROW_COUNT").sum()),
        skipped_by_limit={label: report.kept_files - files},
        limit_note=note,
    )
