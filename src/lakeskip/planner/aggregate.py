"""Aggregates answered from the manifests: ``count(*)``, ``count(c)``, ``min(c)`` and ``max(c)``
over the files a scan reads, without reading a data file (Spark's aggregate push-down,
``AggregatePushDown.java``; Paimon's and Iceberg's connectors do the same).

Exact or nothing. Per file the manifest holds the row count, and per column the null count,
min and max; a file's answer is exact only where these describe exactly the rows a scan of
the file returns::

    table kind / file            count(*)            count(c)             min(c) / max(c)
    append                       row count           rows - nulls         the stats
    append, file with a DV       rows - |DV|         where no row or      its stats bound the
                                                         every row is NULL    live rows: below
    primary key read raw         as append (the scan reads the files above level 0 as they
      (DVs or first-row)         are, minus their DVs: no merge)
    primary key, merge-on-read   refused (the rows are the merge of versions)

A file with a deletion vector adds nothing exact to a ``min`` / ``max``, but its stats still
bound its live rows: the partition's answer is that of its files without deleted rows, provided
no file with deleted rows has a bound beyond it (a file with deleted rows whose ``min`` is below
the others' is refused: a deleted row may have been it; Spark then reads the rows).

A column's stats must be there and untruncated:

* ``min``/``max`` only of BOOLEAN, integers, DECIMAL, DATE and TIMESTAMP (millisecond or
  microsecond): never STRING/BINARY (``truncate(N)``, Paimon's default stats mode, cuts them
  and the manifest does not say which file was cut), never FLOAT/DOUBLE (a NaN leaves no
  min/max, issue 26, and Spark's ``min`` of -0.0 and 0.0 is the first it meets);
* a file without the column's stats (``none``/``counts`` mode, retyped column) refuses,
  unless the null count says every row is NULL there; a file written before the column was
  added holds only NULLs of it (Spark reads them as NULL), so it adds nothing;
* stats that do not decode refuse.

The answer is one partial row per partition (Spark's final aggregate combines them: sums the
counts, takes the min of the mins). The caller narrows the partitions by the query's filters
exactly (Spark evaluates them on each partition's values); the files here are the planner's
(a superset: it never drops a file that holds a matching row).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

import numpy as np

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw, schema_kind
from lakeskip.errors import LakeskipError
from lakeskip.planner.columnar_stats import ColumnarStats
from lakeskip.types import DataType, TypeRoot

__all__ = [
    "AggregateCall",
    "AggregateFunction",
    "MetadataAggregate",
    "PartitionAggregate",
    "Refusal",
    "aggregate_from_columns",
    "aggregate_from_metadata",
    "min_max_exact",
]


class AggregateFunction(enum.Enum):
    """The aggregates a manifest can answer (values: the protocol's names)."""

    COUNT_STAR = "count_star"
    COUNT = "count"
    MIN = "min"
    MAX = "max"


@dataclass(frozen=True, slots=True)
class AggregateCall:
    """One aggregate of the query: ``function(column)`` (``column`` ``None`` for ``count(*)``)."""

    function: AggregateFunction
    column: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionAggregate:
    """The partial aggregates of one partition's files.

    Attributes:
        partition: the partition's values (internal form, as the manifest holds them).
        values: per call, in order: a count (int) or a min/max (``None``: no non-NULL value).
        files: the partition's files that were summed.
        sample: one of those files (the caller names the partition by it).
    """

    partition: tuple[Any, ...]
    values: tuple[Any, ...]
    files: int
    sample: ManifestEntry


@dataclass(frozen=True, slots=True)
class MetadataAggregate:
    """The answer: one partial row per partition that has files."""

    partitions: tuple[PartitionAggregate, ...]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the manifests cannot answer exactly (Spark then aggregates the rows itself)."""

    reason: str


_MIN_MAX_ROOTS = frozenset(
    {
        TypeRoot.BOOLEAN,
        TypeRoot.TINYINT,
        TypeRoot.SMALLINT,
        TypeRoot.INT,
        TypeRoot.BIGINT,
        TypeRoot.DECIMAL,
        TypeRoot.DATE,
    }
)


def min_max_exact(t: DataType) -> bool:
    """Whether a column's min/max stats are exact (never truncated, no NaN left out)."""
    if t.root in _MIN_MAX_ROOTS:
        return True
    return t.is_timestamp and t.timestamp_unit in ("ms", "us")


def aggregate_from_metadata(
    schema: TableSchema,
    entries: Sequence[ManifestEntry],
    calls: Sequence[AggregateCall],
    *,
    schema_by_id: Callable[[int], TableSchema],
    deleted_rows: Callable[[ManifestEntry], int],
) -> MetadataAggregate | Refusal:
    """The partial aggregates of ``calls`` over ``entries`` (the files a scan reads), or why
    they cannot be exact (module docstring).

    Args:
        schema: the schema the scan reads with (the snapshot's, for time travel).
        entries: the planner's kept files.
        calls: the aggregates, in the order of the answer's values.
        schema_by_id: a file's schema by its id.
        deleted_rows: how many rows of a file its deletion vector deletes (0: none).

    >>> import pyarrow as pa
    >>> from lakeskip.catalog.format.data_file import make_data_file_meta
    >>> from lakeskip.catalog.format.manifest import FileKind
    >>> from lakeskip.catalog.format.stats import collect_stats
    >>> from lakeskip.types import BIGINT, RowType
    >>> s = TableSchema.create(0, RowType.of(("id", BIGINT)), (), {}, None)
    >>> def entry(name, ids):
    ...     st, cols = collect_stats(pa.table({"id": ids}), s.row_type, "full")
    ...     meta = make_data_file_meta(name, 1, len(ids), st, cols, 0, None, ())
    ...     return ManifestEntry(FileKind.ADD, (), 0, -1, meta)
    >>> calls = [AggregateCall(AggregateFunction.COUNT_STAR),
    ...          AggregateCall(AggregateFunction.MAX, "id"),
    ...          AggregateCall(AggregateFunction.COUNT, "id")]
    >>> out = aggregate_from_metadata(s, [entry("a", [1, 5]), entry("b", [None, 9, 2])],
    ...     calls, schema_by_id=lambda _: s, deleted_rows=lambda e: 0)
    >>> out.partitions[0].values
    (5, 9, 4)
    """
    refused = _refused(schema, calls)
    if refused is not None:
        return refused
    row_type = schema.row_type
    by_id = {f.id: f for f in row_type}
    stats_needed = any(c.function is not AggregateFunction.COUNT_STAR for c in calls)
    groups: dict[tuple[Any, ...], list[Any]] = {}
    counts: dict[tuple[Any, ...], int] = {}
    samples: dict[tuple[Any, ...], ManifestEntry] = {}
    # per partition: (call index, bound) of files with deleted rows, checked at the end
    bounds: dict[tuple[Any, ...], list[tuple[int, Any]]] = {}
    for e in entries:
        meta = e.file
        deleted = deleted_rows(e)
        values: list[Any] = []
        stats: dict[str, tuple[Any, Any, int | None]] = {}
        file_ids: set[int] = set()
        key = tuple(e.partition)
        if stats_needed:
            try:
                file_schema = schema_by_id(meta.schema_id)
                stats = file_column_stats(meta, file_schema, schema)
            except (LakeskipError, LookupError, ValueError) as err:
                return Refusal(f"{meta.file_name}: stats unreadable ({err})")
            file_ids = {f.id for f in file_schema.row_type}
        for i, call in enumerate(calls):
            if call.function is AggregateFunction.COUNT_STAR:
                values.append(meta.row_count - deleted)
                continue
            assert call.column is not None
            field = row_type.field(call.column)
            if field.id not in file_ids or field.id not in by_id:
                # added after the file was written: every row of it is NULL there
                values.append(0 if call.function is AggregateFunction.COUNT else None)
                continue
            s = stats.get(field.name)
            lo, hi, nulls = s if s is not None else (None, None, None)
            if nulls is None:
                return Refusal(f"{meta.file_name} has no null count of {field.name}")
            if call.function is AggregateFunction.COUNT:
                if deleted and 0 < nulls < meta.row_count:
                    return Refusal(f"{meta.file_name} has deleted rows, some NULL in {field.name}")
                values.append(0 if nulls == meta.row_count else meta.row_count - deleted - nulls)
            elif nulls == meta.row_count or deleted >= meta.row_count:
                values.append(None)  # only NULLs (or no live row): nothing to a min or a max
            elif lo is None or hi is None:
                return Refusal(f"{meta.file_name} has no min/max of {field.name}")
            elif deleted:  # a bound of the live rows, not their extreme
                bounds.setdefault(key, []).append(
                    (i, lo if call.function is AggregateFunction.MIN else hi)
                )
                values.append(None)
            else:
                values.append(lo if call.function is AggregateFunction.MIN else hi)
        if key not in groups:
            groups[key], counts[key], samples[key] = values, 1, e
            continue
        counts[key] += 1
        groups[key] = [
            _combine(c.function, a, b) for c, a, b in zip(calls, groups[key], values, strict=True)
        ]
    for key, found in bounds.items():
        for i, bound in found:
            exact = groups[key][i]
            is_min = calls[i].function is AggregateFunction.MIN
            if exact is None or (bound < exact if is_min else bound > exact):
                return Refusal(
                    f"{calls[i].function.value}({calls[i].column}): a file with deleted rows "
                    "may hold it"
                )
    return MetadataAggregate(
        tuple(
            PartitionAggregate(key, tuple(values), counts[key], samples[key])
            for key, values in groups.items()
        )
    )


def _refused(schema: TableSchema, calls: Sequence[AggregateCall]) -> Refusal | None:
    """Why no file of ``schema`` can answer ``calls`` exactly (None: each file may)."""
    kind = schema_kind(schema)
    match kind:
        case PkMerge():
            return Refusal("a primary-key table read by merge: its rows are the merge of versions")
        case Append() | AppendDv() | PkRaw():  # a file's rows (minus its DVs) are table rows
            pass
        case _:
            assert_never(kind)
    row_type = schema.row_type
    for call in calls:
        if call.function is AggregateFunction.COUNT_STAR:
            continue
        if call.column is None or not row_type.has(call.column):
            return Refusal(f"{call.function.value} of an unknown column {call.column}")
        t = row_type.field(call.column).type
        if call.function is not AggregateFunction.COUNT and not min_max_exact(t):
            return Refusal(
                f"{call.function.value}({call.column}): {t.root.name} stats may be truncated "
                "or leave NaN out"
            )
    return None


def aggregate_from_columns(
    schema: TableSchema,
    row_count: np.ndarray,
    stats: Callable[[], ColumnarStats],
    partition_ids: np.ndarray,
    partitions: Sequence[tuple[Any, ...]],
    calls: Sequence[AggregateCall],
    *,
    entry_at: Callable[[int], ManifestEntry],
    schema_by_id: Callable[[int], TableSchema],
) -> MetadataAggregate | Refusal | None:
    """:func:`aggregate_from_metadata` of files none of which has deleted rows, from their
    row counts and stats as columns (no per-file object: at 100,000 files the record-by-record
    answer decodes each file's stats, seconds). ``None`` wherever the columns do not decide
    it alone (some file without a known null count, or without a known min/max it would
    add): then the caller answers record by record, as before.

    Args:
        row_count: each file's row count.
        stats: the files' stats as columns (decoded on first use: ``count(*)`` reads none).
        partition_ids: each file's partition, as a position in ``partitions`` (its values).
        entry_at: file ``i``'s entry (made only for the one sample file of each partition,
            and the file holding each partition's min / max, whose value is taken from its
            own decoded stats: exactly the value the record-by-record answer gives).

    Files whose column stats are not in the columns refuse or fall back as above; a file
    written before the column was added has a null count of all its rows there (every row
    NULL), as :func:`aggregate_from_metadata` reads it.
    """
    refused = _refused(schema, calls)
    if refused is not None:
        return refused
    if not isinstance(schema_kind(schema), (Append, AppendDv)):
        return None  # a primary-key table's files: record by record
    n = len(row_count)
    rc = np.asarray(row_count, dtype=np.int64)
    ids = np.asarray(partition_ids, dtype=np.int64)
    width = len(partitions)
    files = np.bincount(ids, minlength=width) if n else np.zeros(width, dtype=np.int64)
    first = np.full(width, n, dtype=np.int64)
    np.minimum.at(first, ids, np.arange(n, dtype=np.int64))
    present = np.flatnonzero(files > 0)
    present = present[np.argsort(first[present], kind="stable")]  # in order of first file
    columns: list[list[Any]] = []
    got: ColumnarStats | None = None
    for call in calls:
        if call.function is AggregateFunction.COUNT_STAR:
            total = np.zeros(width, dtype=np.int64)
            np.add.at(total, ids, rc)
            columns.append(total.tolist())
            continue
        got = stats() if got is None else got
        assert call.column is not None
        name = schema.row_type.field(call.column).name
        col = got.columns.get(name)
        if col is None:
            return None
        nulls = col.null_count
        if (nulls < 0).any():
            return None
        if call.function is AggregateFunction.COUNT:
            total = np.zeros(width, dtype=np.int64)
            np.add.at(total, ids, rc - nulls)
            columns.append(total.tolist())
            continue
        is_min = call.function is AggregateFunction.MIN
        adds = np.flatnonzero(nulls < rc)  # files with a non-NULL value
        known = col.min_known if is_min else col.max_known
        if not known[adds].all():
            return None
        values = (col.min if is_min else col.max)[adds]
        winner = _extreme_files(ids[adds], values, is_min)
        out: list[Any] = [None] * width
        for part, at in winner.items():
            value = _file_value(entry_at(int(adds[at])), name, is_min, schema, schema_by_id)
            if value is None:
                return None
            out[part] = value
        columns.append(out)
    return MetadataAggregate(
        tuple(
            PartitionAggregate(
                tuple(partitions[p]),
                tuple(c[p] for c in columns),
                int(files[p]),
                entry_at(int(first[p])),
            )
            for p in present.tolist()
        )
    )


def _extreme_files(ids: np.ndarray, values: np.ndarray, is_min: bool) -> dict[int, int]:
    """Per partition id of ``ids``: the position of one of its files holding the smallest
    (``is_min``) or largest of ``values``."""
    if not len(ids):
        return {}
    if values.dtype != object:
        order = np.lexsort((values, ids))
        bounds = np.flatnonzero(np.diff(ids[order])) + 1
        at = np.r_[0, bounds] if is_min else np.r_[bounds - 1, len(order) - 1]
        return dict(zip(ids[order][at].tolist(), order[at].tolist(), strict=True))
    best: dict[int, int] = {}
    vals = values.tolist()
    for i, (p, v) in enumerate(zip(ids.tolist(), vals, strict=True)):
        b = best.get(p)
        if b is None or (v < vals[b] if is_min else v > vals[b]):
            best[p] = i
    return best


def _file_value(
    e: ManifestEntry,
    column: str,
    is_min: bool,
    schema: TableSchema,
    schema_by_id: Callable[[int], TableSchema],
) -> Any:
    """A file's min or max of ``column`` as its own decoded stats give it (None: unknown)."""
    try:
        got = file_column_stats(e.file, schema_by_id(e.file.schema_id), schema).get(column)
    except (LakeskipError, LookupError, ValueError):
        return None
    return None if got is None else got[0 if is_min else 1]


def _combine(function: AggregateFunction, a: Any, b: Any) -> Any:
    if function in (AggregateFunction.COUNT_STAR, AggregateFunction.COUNT):
        return a + b
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b) if function is AggregateFunction.MIN else max(a, b)
