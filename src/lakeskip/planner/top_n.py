"""``LIMIT k`` and ``ORDER BY c LIMIT k`` pushed into a scan (Spark's ``SupportsPushDownLimit``
and ``SupportsPushDownTopN``; Paimon's connector does the same): of the files a scan reads,
keep only those that can hold the first ``k`` rows. Spark still sorts and limits the rows read.

Only where every row of a kept file is a row of the answer's input (no filter at all: the
caller checks; an append table, deleted rows subtracted by their count; never a primary-key
table, whose rows are merges of versions), and for ``ORDER BY`` only on a column whose stats
are exact bounds (BOOLEAN, integers, DECIMAL, DATE, TIMESTAMP in ms/us; the rule of
:mod:`lakeskip.planner.aggregate`).

``LIMIT k``: files in plan order until their live rows reach ``k``.

``ORDER BY c [ASC|DESC] [NULLS FIRST|LAST], ... LIMIT k``: each file's rows lie, in the order
of the first key, between its *best* rank (the first any of its rows can take: its min for
ASC, its max for DESC, NULL where it has NULLs and they sort first) and its *worst* (the
last). Taking the files by worst rank until their live rows reach ``k`` gives a rank ``T``
with at least ``k`` rows at or before it, so every row of the first ``k`` ranks at or before
``T``: a file whose best rank is after ``T`` holds none of them and is skipped; every file
that may tie with ``T`` is kept (later keys and ties decide among those rows, Spark sorts
them). A deleted row only narrows a file's rows, so its stats still bound the live ones. A
file with no stats of the column (or stats that do not decode) ranks from first to last:
always kept, never counted towards ``T`` unless it is all NULL. A file holding both NULLs and
values counts its first group (its NULLs, or its values) at that group's last rank.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw, schema_kind
from lakeskip.errors import LakeskipError
from lakeskip.planner.aggregate import min_max_exact

__all__ = ["SortKey", "limit_files"]


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
) -> list[ManifestEntry] | None:
    """The files of ``entries`` that can hold the first ``limit`` rows in ``order`` (plain
    ``LIMIT`` when empty), in their order; ``None`` when nothing can be skipped soundly
    (module docstring).

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
    live = [max(e.file.row_count - deleted_rows(e), 0) for e in entries]
    if not order:
        kept, rows = [], 0
        for e, n in zip(entries, live, strict=True):
            if rows >= limit:
                break
            kept.append(e)
            rows += n
        return kept
    key = order[0]
    row_type = schema.row_type
    if not row_type.has(key.column):
        return None
    field = row_type.field(key.column)
    if not min_max_exact(field.type):
        return None
    ranks = [
        _ranks(e, live[i], deleted_rows(e), schema, field.id, field.name, key, schema_by_id)
        for i, e in enumerate(entries)
    ]
    # (rank, rows): at least ``rows`` live rows of a file at or before ``rank``
    pieces = sorted((piece for _, ps in ranks for piece in ps), key=lambda p: p[0])
    rows, bound = 0, None
    for rank, n in pieces:
        if rows >= limit:
            break
        rows += n
        bound = rank
    if rows < limit or bound is None:
        return list(entries)  # fewer rows than the limit: every file
    return [e for e, (best, _) in zip(entries, ranks, strict=True) if best <= bound]


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
    if lo is None or hi is None:
        return _FIRST, [(_LAST, live)]
    first, last = ((1, -hi), (1, -lo)) if key.descending else ((1, lo), (1, hi))
    if nulls == 0:
        return first, [(last, live)]
    if nulls is None:
        return min(first, null), [(max(last, null), live)]
    if key.nulls_first:
        early = min(max(nulls - deleted, 0), live)
        return null, [(null, early), (last, live - early)]
    early = min(max(meta.row_count - nulls - deleted, 0), live)
    return first, [(last, early), (null, live - early)]
