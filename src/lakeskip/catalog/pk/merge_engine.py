"""Merge engines of primary-key tables: how the versions of one key become its row.

The one place in Python that names the merge rules (Java's ``LakePkScan`` has the other,
fed by :meth:`MergeEngine.to_json`). Versions of a key are taken in sequence-number order
(oldest first), as Paimon's ``MergeFunction`` receives them::

    deduplicate      the newest version wins; a -U/-D newest version means "no row"
    partial-update   every column takes the newest non-null value (Paimon's
                     PartialUpdateMergeFunction without sequence groups or aggregation):
                       - no +I/+U version at all                    -> no row
                       - a -U/-D version is an error, unless
                           ignore-delete = true                     -> it is skipped
                           partial-update.remove-record-on-delete   -> a -D resets the row
                                                                      to its own values
                             and, when it is the newest, means "no row" (-U is skipped)
                       - a -U/-D *first* version seeds the row with its values (Paimon's
                         ``initRow``), then later +I/+U versions overwrite non-null columns

A merged partial-update row mixes columns of several versions: every value of it (NULL
included) is a value some version of the key holds in the same column. The planner relies
on exactly that (a predicate on one value column may prune a whole bucket).

    first-row        the oldest version wins (Paimon's FirstRowMergeFunction); a table that
                     accepts no DELETE / UPDATE / MERGE

    aggregation      each column folds its versions with its aggregate function
                     (:mod:`lakeskip.catalog.pk.aggregation`); no DELETE / UPDATE / MERGE

``sequence.field`` (one or more columns, any engine but first-row) orders the versions of a
key before the engine sees them: by those columns (NULL oldest; ``sequence.field.sort-order``
= ascending, the default, or descending; nulls stay oldest either way: Paimon's
``UserDefinedSeqComparator``), ties by sequence number (Paimon's ``SortMergeReader``). The
writer's in-write merge orders a write's rows the same way, arrival breaking ties. Paimon 0.9
has no ``sequence.field.sort-order`` (its readers order ascending); later Paimons do.

The error texts of a merge are defined here once (:data:`ERRORS`) and sent to Java with the
rest of :meth:`MergeEngine.to_json`; ``tests/cases/pk_merge_cases.json`` is the one table of
cases both implementations (and the Spark view over this one) are tested against.

Paimon's batch reads skip the level-0 files of a first-row table
(``CoreOptions.batchScanSkipLevel0``) and read the higher levels as they are, so lakeskip
writes first-row tables as it writes primary-key tables with deletion vectors
(:mod:`lakeskip.catalog.write.pk_dv_write`): each bucket's task looks the new keys up in the
bucket's files, drops the rows whose key is already there, and writes the rest one level
down. Both layouts are the table kind :class:`~lakeskip.catalog.kind.PkRaw`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.catalog.pk.aggregation import (
    OVERFLOW_ERROR,
    RETRACT_ERROR,
    FieldAgg,
    field_aggs,
    fold,
)
from lakeskip.catalog.pk.merge_options import (
    _ADD,
    _DELETE,
    _KINDS,
    AGGREGATION,
    DEDUPLICATE,
    FIRST_ROW,
    IGNORE_DELETE,
    MERGE_ENGINE,
    PARTIAL_UPDATE,
    REMOVE_RECORD_ON_DELETE,
    SEQUENCE_FIELD,
    SEQUENCE_FIELD_SORT_ORDER,
    _descending,
    _engine,
    _flag,
    check_merge_options,
    is_merge_option,
    sequence_fields,
    sequence_groups,
    unsupported_merge_option,
)
from lakeskip.errors import CorruptMetadataError, InvalidOptionError
from lakeskip.types import RowType, TypeRoot


class _Schema(Protocol):
    """What :meth:`MergeEngine.for_schema` reads of a table schema (no catalog import)."""

    @property
    def options(self) -> Mapping[str, str]: ...

    @property
    def row_type(self) -> RowType: ...

    @property
    def primary_keys(self) -> Sequence[str]: ...


__all__ = [
    "AGGREGATION",
    "DEDUPLICATE",
    "ERRORS",
    "FIRST_ROW",
    "IGNORE_DELETE",
    "MERGE_ENGINE",
    "PARTIAL_UPDATE",
    "REMOVE_RECORD_ON_DELETE",
    "SEQUENCE_FIELD",
    "SEQUENCE_FIELD_SORT_ORDER",
    "MergeEngine",
    "check_merge_options",
    "dedupe_latest",
    "is_merge_option",
    "sequence_fields",
    "sequence_groups",
    "unsupported_merge_option",
]

# The texts of a merge's errors, Python's and Java's (sent with to_json)
ERRORS = {
    "partial_update_retract": (
        "a partial-update table holds -U/-D versions but neither 'ignore-delete' nor "
        "'partial-update.remove-record-on-delete' is set (Paimon fails to read it too)"
    ),
    "first_row_retract": (
        "a first-row table holds -U/-D versions (Paimon's first-row engine accepts none "
        "without 'ignore-delete')"
    ),
    "aggregate_retract": RETRACT_ERROR,
    "aggregate_overflow": OVERFLOW_ERROR,
}


@dataclass(frozen=True, slots=True)
class MergeEngine:
    """The merge engine of a primary-key table: its kind, delete handling, sequence fields
    and (aggregation) every column's function."""

    kind: str = DEDUPLICATE
    ignore_delete: bool = False
    remove_record_on_delete: bool = False
    sequence_fields: tuple[str, ...] = ()
    sequence_descending: bool = False
    aggs: tuple[FieldAgg, ...] = field(default=())
    # partial-update sequence groups: (sequence columns, the columns they order)
    groups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = field(default=())
    # DECIMAL precision/scale and type roots of the aggregated columns
    types: tuple[tuple[str, TypeRoot, int, int], ...] = field(default=())

    @classmethod
    def of(
        cls,
        options: Mapping[str, str],
        row_type: RowType | None = None,
        primary_keys: Sequence[str] = (),
    ) -> MergeEngine:
        """The engine a table's (validated) options name; an aggregation engine needs the
        columns (``row_type``, ``primary_keys``) to merge."""
        kind = _engine(options)
        if kind not in _KINDS:
            raise InvalidOptionError(f"option {MERGE_ENGINE!r} = {kind!r} is not supported")
        seq = sequence_fields(options)
        desc = _descending(options) if seq else False
        if kind == DEDUPLICATE:
            return cls(sequence_fields=seq, sequence_descending=desc)
        aggs: tuple[FieldAgg, ...] = ()
        types: tuple[tuple[str, TypeRoot, int, int], ...] = ()
        if kind == AGGREGATION and row_type is not None:
            aggs = field_aggs(options, row_type, primary_keys)
            types = tuple(
                (
                    f.name,
                    f.type.root,
                    getattr(f.type, "precision", 0) or 0,
                    getattr(f.type, "scale", 0) or 0,
                )
                for f in row_type
            )
        return cls(
            kind,
            _flag(options, IGNORE_DELETE),
            _flag(options, REMOVE_RECORD_ON_DELETE),
            seq,
            desc,
            aggs,
            sequence_groups(options) if kind == PARTIAL_UPDATE else (),
            types,
        )

    @classmethod
    def for_schema(cls, schema: _Schema) -> MergeEngine:
        """The engine of a primary-key table's schema, ready to merge."""
        return cls.of(schema.options, schema.row_type, schema.primary_keys)

    @property
    def partial_update(self) -> bool:
        return self.kind == PARTIAL_UPDATE

    @property
    def first_row(self) -> bool:
        return self.kind == FIRST_ROW

    @property
    def aggregation(self) -> bool:
        return self.kind == AGGREGATION

    def dml_refusal(self, statement: str, table: str) -> str | None:
        """Why DELETE / UPDATE / MERGE cannot run on this table (None: they may)."""
        if self.first_row:
            return (
                f"{statement} on {table}: a first-row table keeps the first row written for "
                "each key and accepts no deletes or updates (Paimon's first-row engine)"
            )
        if self.aggregation:
            return (
                f"{statement} on {table}: an aggregation table folds every version of a key "
                "into its row; a delete or update record would be retracted from the "
                "aggregates, not replace the row (INSERT adds to them)"
            )
        return None

    def to_json(self) -> dict[str, object]:
        """What Java's ``LakePkScan`` needs to merge (the error texts included)."""
        return {
            "engine": self.kind,
            "ignore_delete": self.ignore_delete,
            "remove_record_on_delete": self.remove_record_on_delete,
            "sequence_fields": list(self.sequence_fields),
            "sequence_descending": self.sequence_descending,
            "aggregates": {a.column: a.to_json() for a in self.aggs},
            "sequence_groups": [
                {"sequence": list(seq), "fields": list(fields)} for seq, fields in self.groups
            ],
            "errors": dict(ERRORS),
        }

    def delete_refusal(self, table: str) -> str | None:
        """Why DELETE cannot run on this table (None: it can), as Paimon would decide."""
        if self.groups and not self.ignore_delete:
            return (
                f"DELETE FROM {table}: on a table with sequence groups a delete record only "
                "clears each group's columns (Paimon's retract), it does not remove the row"
            )
        if not self.partial_update or self.remove_record_on_delete:
            return None
        if self.ignore_delete:
            return (
                f"DELETE FROM {table}: the table ignores delete records ('ignore-delete' = "
                "'true'), so DELETE would remove nothing"
            )
        return (
            f"DELETE FROM {table}: a partial-update table accepts deletes only with "
            "'partial-update.remove-record-on-delete' = 'true' (Paimon fails to read the "
            "table otherwise)"
        )

    def _order(
        self, table: pa.Table, tie: pa.Array | pa.ChunkedArray
    ) -> list[tuple[pa.Array | pa.ChunkedArray, bool]]:
        """What orders the versions of a key, oldest first: the sequence fields (descending
        or not), then ``tie`` (sequence numbers, or arrival in a write)."""
        return [(table.column(c), self.sequence_descending) for c in self.sequence_fields] + [
            (tie, False)
        ]

    def merge_write(self, table: pa.Table, key_columns: Sequence[str], kind: int) -> pa.Table:
        """Merge the rows of one write that share a key (arrival order = sequence order, after
        the sequence fields), as Paimon's write buffer does; returns unique keys sorted by
        key. ``kind``: the value kind of every row of the write (a
        :class:`~lakeskip.catalog.pk.primary_key.RowKind`); the merged rows keep it (where
        Paimon's buffer turns several retracts of one aggregation key into a +I row: lakeskip
        writes retracts only by DELETE, which names a key once)."""
        n = table.num_rows
        if n <= 1:
            return table
        arrival = pa.array(np.arange(n, dtype=np.int64))
        order, starts = _group(table, key_columns, self._order(table, arrival))
        ordered = table.take(pa.array(order))
        ends = np.append(starts[1:], n) - 1
        add = kind in _ADD
        if self.aggregation:
            kinds = np.full(n, kind, dtype=np.int64)
            merged, _ = self._aggregate(ordered, starts, kinds)
            return merged
        if self.first_row:  # the first row of each key stands
            return ordered.take(pa.array(starts))
        if not self.partial_update:
            return ordered.take(pa.array(ends))
        if self.groups and add:
            return self._grouped(ordered, starts, np.full(n, kind, dtype=np.int64))[0]
        if not add:
            if kind == _DELETE and self.remove_record_on_delete:
                return ordered.take(pa.array(ends))  # the last -D resets the row
            # any other retract only seeds the row when it comes first: the first one stands
            return ordered.take(pa.array(starts))
        is_add = np.ones(n, dtype=bool)
        base = np.full(len(starts), -1, dtype=np.int64)
        return _partial_columns(ordered, key_columns, starts, is_add, base)

    def merge_versions(
        self, table: pa.Table, key_columns: Sequence[str], sequence: str, kind: str
    ) -> pa.Table:
        """Merge every version of each key (``sequence``/``kind`` columns present) into the
        key's row; returns the rows that exist (sorted by key), with the newest sequence
        number of the key and the merged row kind (+I for partial-update, as Paimon)."""
        n = table.num_rows
        if n == 0:
            return table
        order, starts = _group(table, key_columns, self._order(table, table.column(sequence)))
        ordered = table.take(pa.array(order))
        kinds = np.asarray(ordered.column(kind).to_numpy(zero_copy_only=False), dtype=np.int64)
        ends = np.append(starts[1:], n) - 1
        if self.first_row:
            if not np.isin(kinds, _ADD).all() and not self.ignore_delete:
                raise CorruptMetadataError(ERRORS["first_row_retract"])
            adds = np.nonzero(np.isin(kinds, _ADD))[0]
            # per key the oldest +I/+U version; a key with none has no row
            run = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
            pick = _first_add(run, adds, len(starts))
            rows = pick[pick >= 0]
            return ordered.take(pa.array(rows))
        if self.aggregation:
            merged, merged_kinds = self._aggregate(ordered, starts, kinds)
            seq = ordered.column(sequence).take(pa.array(ends))
            merged = merged.set_column(
                merged.schema.get_field_index(sequence), sequence, seq
            ).set_column(
                merged.schema.get_field_index(kind),
                kind,
                pa.array(merged_kinds.astype(np.int8)),
            )
            return merged.filter(pa.array(np.isin(merged_kinds, _ADD)))
        if not self.partial_update:
            last = ordered.take(pa.array(ends))
            alive = np.isin(kinds[ends], _ADD)
            return last.filter(pa.array(alive))
        if self.groups:
            merged, alive = self._grouped(ordered, starts, kinds)
            seq = ordered.column(sequence).take(pa.array(ends))
            merged = merged.set_column(
                merged.schema.get_field_index(sequence), sequence, seq
            ).set_column(
                merged.schema.get_field_index(kind),
                kind,
                pa.array(np.zeros(len(starts), dtype=np.int8)),
            )
            return merged.filter(pa.array(alive))
        is_add = np.isin(kinds, _ADD)
        if not is_add.all() and not (self.ignore_delete or self.remove_record_on_delete):
            raise CorruptMetadataError(ERRORS["partial_update_retract"])
        idx = np.arange(n, dtype=np.int64)
        starts_i = starts.astype(np.int64)
        base = np.full(len(starts), -1, dtype=np.int64)
        if self.remove_record_on_delete and not self.ignore_delete:
            base = np.maximum.reduceat(np.where(kinds == _DELETE, idx, -1), starts_i)
        # a retract version first seeds the row with its own values (Paimon's initRow)
        first_retract = ~is_add[starts_i]
        base = np.where((base < 0) & first_retract, starts_i, base)
        merged = _partial_columns(ordered, key_columns, starts, is_add, base)
        any_add = np.maximum.reduceat(is_add.astype(np.int8), starts_i) > 0
        removes = self.remove_record_on_delete and not self.ignore_delete
        deleted = (kinds[ends] == _DELETE) if removes else np.zeros(len(ends), dtype=bool)
        alive = any_add & ~deleted
        seq = ordered.column(sequence).take(pa.array(ends))
        merged = merged.set_column(
            merged.schema.get_field_index(sequence), sequence, seq
        ).set_column(
            merged.schema.get_field_index(kind),
            kind,
            pa.array(np.zeros(len(starts), dtype=np.int8)),
        )
        return merged.filter(pa.array(alive))

    def _grouped(
        self, ordered: pa.Table, starts: np.ndarray, kinds: np.ndarray
    ) -> tuple[pa.Table, np.ndarray]:
        """Partial-update with sequence groups (Paimon's ``updateWithSequenceGroup`` /
        ``retractWithSequenceGroup``), one row per key run and whether it exists: a version
        whose group sequence is not all NULL and not older than the row's (NULL oldest) sets
        the whole group, NULLs included (a retract sets the sequence columns and clears the
        others); columns outside groups take the newest non-null value; retracts are skipped
        with ignore-delete; a key with no +I/+U version has no row; a key with one version
        keeps it as it is (Paimon's ``ReducerMergeFunctionWrapper``: its group columns stand
        even when its group sequence is NULL)."""
        n = ordered.num_rows
        names = ordered.column_names
        data = {c: ordered.column(c).to_pylist() for c in names}
        in_group = {c for seq, fields in self.groups for c in (*seq, *fields)}
        plain = [c for c in names if c not in in_group and not _is_system(c)]
        ends = np.append(starts[1:], n).tolist()
        out: dict[str, list[Any]] = {c: [] for c in names}
        alive = np.zeros(len(starts), dtype=bool)
        for r, (s, e) in enumerate(zip(starts.tolist(), ends, strict=True)):
            row: dict[str, Any] = dict.fromkeys(names)
            if e - s == 1:  # a lone version stays as it is (ReducerMergeFunctionWrapper)
                row = {c: data[c][s] for c in names}
                alive[r] = int(kinds[s]) in _ADD
            for i in range(s, e if e - s > 1 else s):
                retract = int(kinds[i]) not in _ADD
                if retract and self.ignore_delete:
                    continue
                if not retract:
                    alive[r] = True
                    for c in plain:
                        if data[c][i] is not None:
                            row[c] = data[c][i]
                for seq, fields in self.groups:
                    new = tuple(data[c][i] for c in seq)
                    if all(v is None for v in new):
                        continue  # an empty group sequence leaves the group alone
                    if _seq_key(new) >= _seq_key(tuple(row[c] for c in seq)):
                        for c in fields:
                            row[c] = None if retract else data[c][i]
                        for c in seq:
                            row[c] = data[c][i]
            for c in names:
                out[c].append(data[c][e - 1] if _is_system(c) else row[c])
        columns = [pa.array(out[c], type=ordered.schema.field(c).type) for c in names]
        return pa.Table.from_arrays(columns, schema=ordered.schema), alive

    def _aggregate(
        self, ordered: pa.Table, starts: np.ndarray, kinds: np.ndarray
    ) -> tuple[pa.Table, np.ndarray]:
        """One row per key run of ``ordered`` (versions oldest first) and its kind: a lone
        version as it is, else every column folded by its function (+I)."""
        if not self.aggs:
            raise InvalidOptionError("an aggregation engine needs the table's columns to merge")
        n = ordered.num_rows
        ends = np.append(starts[1:], n) - 1
        single = starts == ends
        out_kinds = np.where(single, kinds[ends], 0)
        by_name = {a.column: a for a in self.aggs}
        types = {t[0]: t[1:] for t in self.types}
        retract = ~np.isin(kinds, _ADD)
        bounds = list(zip(starts.tolist(), (ends + 1).tolist(), strict=True))
        columns = []
        for name in ordered.column_names:
            col = ordered.column(name)
            last = col.take(pa.array(ends))
            agg = by_name.get(name)
            if agg is None or single.all():
                columns.append(last)
                continue
            root, precision, scale = types[name]
            run = fold(agg, root, precision, scale)
            values: list[Any] = col.to_pylist()
            flags: list[bool] = retract.tolist()
            merged = [
                values[e - 1] if e - s == 1 else run(values[s:e], flags[s:e]) for s, e in bounds
            ]
            columns.append(pa.array(merged, type=col.type))
        return pa.Table.from_arrays(columns, schema=ordered.schema), out_kinds


def _is_system(column: str) -> bool:
    """A key-value file's system column (``lakeskip.catalog.pk.primary_key``'s layout)."""
    return column.startswith("_KEY_") or column in ("_SEQUENCE_NUMBER", "_VALUE_KIND")


def _seq_key(values: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    """A group's sequence values as a sort key: NULL smallest (Paimon's comparator)."""
    return tuple((0, 0) if v is None else (1, v) for v in values)


def _first_add(run: np.ndarray, adds: np.ndarray, runs: int) -> np.ndarray:
    """Per key run, the first index in ``adds`` (sorted ascending) that belongs to it; -1
    for a run with none."""
    pick = np.full(runs, -1, dtype=np.int64)
    if len(adds):
        owners = run[adds]
        firsts = np.concatenate([[True], owners[1:] != owners[:-1]])
        pick[owners[firsts]] = adds[firsts]
    return pick


def _group(
    table: pa.Table,
    key_columns: Sequence[str],
    order_by: Sequence[tuple[pa.Array | pa.ChunkedArray, bool]],
) -> tuple[np.ndarray, np.ndarray]:
    """Row order sorted by key, then by each ``order_by`` column (``True``: descending; NULL
    first either way, as Paimon's sequence comparator), and the start of every key's run."""
    n = table.num_rows
    cols: dict[str, pa.Array | pa.ChunkedArray] = {
        f"k{i}": table.column(k) for i, k in enumerate(key_columns)
    }
    sort_keys = [(f"k{i}", "ascending", "at_start") for i in range(len(key_columns))]
    for j, (col, desc) in enumerate(order_by):
        cols[f"o{j}"] = col
        sort_keys.append((f"o{j}", "descending" if desc else "ascending", "at_start"))
    order = np.asarray(pc.sort_indices(pa.table(cols), sort_keys=sort_keys), dtype=np.int64)
    differs = np.zeros(max(n - 1, 0), dtype=bool)
    for k in key_columns:
        col = table.column(k).take(pa.array(order)).combine_chunks()
        ne = pc.not_equal(col.slice(0, n - 1), col.slice(1))
        differs |= np.asarray(pc.fill_null(ne, True).to_numpy(zero_copy_only=False), dtype=bool)
    starts = np.concatenate([[0], np.nonzero(differs)[0] + 1]).astype(np.int64)
    return order, starts


def _partial_columns(
    ordered: pa.Table,
    key_columns: Sequence[str],
    starts: np.ndarray,
    is_add: np.ndarray,
    base: np.ndarray,
) -> pa.Table:
    """One row per key run of ``ordered``: each column's newest non-null value among the +I/+U
    versions after the run's ``base`` version (-1: none), else the base version's value."""
    n = ordered.num_rows
    idx = np.arange(n, dtype=np.int64)
    run = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    after_base = idx > base[run]
    columns = []
    for name in ordered.column_names:
        col = ordered.column(name)
        if name in key_columns:
            pick = starts
        else:
            valid = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
            cand = np.where(valid & is_add & after_base, idx, -1)
            newest = np.maximum.reduceat(cand, starts)
            pick = np.where(newest >= 0, newest, base)
        mask = pick < 0
        columns.append(col.take(pa.array(np.where(mask, 0, pick), mask=mask)))
    return pa.Table.from_arrays(columns, schema=ordered.schema)


def dedupe_latest(table: pa.Table, key_columns: Sequence[str]) -> pa.Table:
    """Sort ``table`` by key and keep, per key, the row that arrived last (Paimon's write
    buffer with the deduplicate merge engine: the later record of a key wins).

    >>> t = pa.table({"k": [2, 1, 2], "v": ["a", "b", "c"]})
    >>> dedupe_latest(t, ["k"]).to_pydict()
    {'k': [1, 2], 'v': ['b', 'c']}
    """
    n = table.num_rows
    if n == 0:
        return table
    order_col = "__lakeskip_arrival"
    with_order = table.append_column(order_col, pa.array(np.arange(n, dtype=np.int64)))
    idx = pc.sort_indices(
        with_order,
        sort_keys=[(k, "ascending") for k in key_columns] + [(order_col, "ascending")],
    )
    ordered = table.take(idx)
    if n == 1:
        return ordered
    # the last row of each run of equal keys: the key differs from the next row's
    last = np.zeros(n, dtype=bool)
    last[-1] = True
    differs = np.zeros(n - 1, dtype=bool)
    for k in key_columns:
        col = ordered.column(k).combine_chunks()
        ne = pc.not_equal(col.slice(0, n - 1), col.slice(1))
        differs |= np.asarray(pc.fill_null(ne, True).to_numpy(zero_copy_only=False), dtype=bool)
    last[:-1] = differs
    if last.all():
        return ordered
    return ordered.filter(pa.array(last))
