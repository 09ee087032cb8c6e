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

Paimon's batch reads skip the level-0 files of a first-row table
(``CoreOptions.batchScanSkipLevel0``) and read the higher levels as they are, so lakeskip
writes first-row tables as it writes primary-key tables with deletion vectors
(:mod:`lakeskip.catalog.write.pk_dv_write`): each bucket's task looks the new keys up in the
bucket's files, drops the rows whose key is already there, and writes the rest one level
down. Both layouts are the table kind :class:`~lakeskip.catalog.kind.PkRaw`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.errors import CorruptMetadataError, InvalidOptionError

__all__ = [
    "DEDUPLICATE",
    "FIRST_ROW",
    "IGNORE_DELETE",
    "MERGE_ENGINE",
    "PARTIAL_UPDATE",
    "REMOVE_RECORD_ON_DELETE",
    "MergeEngine",
    "check_merge_options",
    "dedupe_latest",
]

MERGE_ENGINE = "merge-engine"
DEDUPLICATE = "deduplicate"
PARTIAL_UPDATE = "partial-update"
FIRST_ROW = "first-row"
IGNORE_DELETE = "ignore-delete"
REMOVE_RECORD_ON_DELETE = "partial-update.remove-record-on-delete"

_KINDS = (DEDUPLICATE, PARTIAL_UPDATE, FIRST_ROW)
# row kinds (Paimon's RowKind bytes): +I 0, -U 1, +U 2, -D 3
_ADD = (0, 2)
_DELETE = 3
# Paimon options of the merge functions lakeskip does not implement (named in the error)
_UNSUPPORTED_EXACT = {
    "fields.default-aggregate-function": "aggregation functions",
    "partial-update.remove-record-on-sequence-group": "sequence groups",
    "sequence.field": "user-defined sequence fields",
    "sequence.field.sort-order": "user-defined sequence fields",
    "first-row.ignore-delete": "use 'ignore-delete'",
    "partial-update.ignore-delete": "use 'ignore-delete'",
    "deduplicate.ignore-delete": "use 'ignore-delete'",
}
_UNSUPPORTED_FIELD_SUFFIXES = {
    ".sequence-group": "sequence groups",
    ".aggregate-function": "aggregation functions",
    ".ignore-retract": "aggregation functions",
    ".distinct": "aggregation functions",
    ".list-agg-delimiter": "aggregation functions",
    ".nested-key": "aggregation functions",
}


def _flag(options: Mapping[str, str], key: str) -> bool:
    raw = str(options.get(key, "false")).strip().lower()
    if raw not in ("true", "false"):
        raise InvalidOptionError(f"option {key!r} = {options[key]!r}: expected true or false")
    return raw == "true"


def unsupported_merge_option(key: str) -> str | None:
    """Why ``key`` (a Paimon merge-function option) is refused, or None if it is not one."""
    if key in _UNSUPPORTED_EXACT:
        return _UNSUPPORTED_EXACT[key]
    if key.startswith("fields."):
        for suffix, what in _UNSUPPORTED_FIELD_SUFFIXES.items():
            if key.endswith(suffix):
                return what
    return None


def check_merge_options(options: Mapping[str, str], primary_keys: Sequence[str]) -> None:
    """Validate the merge-engine options of a table (any table: they need a primary key).

    Raises:
        InvalidOptionError: an unknown or unsupported engine (``first-row``, ``aggregation``),
            a merge option on an append table or with the wrong engine, sequence groups /
            aggregation functions, a malformed boolean.
    """
    for key in options:
        why = unsupported_merge_option(key)
        if why is not None:
            raise InvalidOptionError(
                f"option {key!r} is not supported yet ({why}; lakeskip's partial-update "
                "merges each column to its newest non-null value)"
            )
    engine = str(options.get(MERGE_ENGINE, DEDUPLICATE)).strip().lower()
    if engine not in _KINDS:
        raise InvalidOptionError(
            f"option {MERGE_ENGINE!r} = {options[MERGE_ENGINE]!r} is not supported yet "
            f"(only {', '.join(repr(k) for k in _KINDS)})"
        )
    for key in (IGNORE_DELETE, REMOVE_RECORD_ON_DELETE):
        if key not in options:
            continue
        _flag(options, key)
        if engine != PARTIAL_UPDATE:
            raise InvalidOptionError(
                f"option {key!r} is supported with 'merge-engine' = 'partial-update' only"
            )
    if MERGE_ENGINE in options and not primary_keys and engine != DEDUPLICATE:
        raise InvalidOptionError(f"option {MERGE_ENGINE!r} needs a primary key")
    if engine in (PARTIAL_UPDATE, FIRST_ROW) and _flag(options, "deletion-vectors.enabled"):
        raise InvalidOptionError(
            "option 'deletion-vectors.enabled' is not supported with "
            f"'merge-engine' = '{engine}' yet"
        )


@dataclass(frozen=True, slots=True)
class MergeEngine:
    """The merge engine of a primary-key table and its delete handling."""

    kind: str = DEDUPLICATE
    ignore_delete: bool = False
    remove_record_on_delete: bool = False

    @classmethod
    def of(cls, options: Mapping[str, str]) -> MergeEngine:
        """The engine a table's (validated) options name."""
        kind = str(options.get(MERGE_ENGINE, DEDUPLICATE)).strip().lower()
        if kind not in _KINDS:
            raise InvalidOptionError(f"option {MERGE_ENGINE!r} = {kind!r} is not supported yet")
        if kind == DEDUPLICATE:
            return cls()
        return cls(kind, _flag(options, IGNORE_DELETE), _flag(options, REMOVE_RECORD_ON_DELETE))

    @property
    def partial_update(self) -> bool:
        return self.kind == PARTIAL_UPDATE

    @property
    def first_row(self) -> bool:
        return self.kind == FIRST_ROW

    def dml_refusal(self, statement: str, table: str) -> str | None:
        """Why DELETE / UPDATE / MERGE cannot run on this table (None: they may)."""
        if self.first_row:
            return (
                f"{statement} on {table}: a first-row table keeps the first row written for "
                "each key and accepts no deletes or updates (Paimon's first-row engine)"
            )
        return None

    def to_json(self) -> dict[str, object]:
        """What Java's ``LakePkScan`` needs to merge."""
        return {
            "engine": self.kind,
            "ignore_delete": self.ignore_delete,
            "remove_record_on_delete": self.remove_record_on_delete,
        }

    def delete_refusal(self, table: str) -> str | None:
        """Why DELETE cannot run on this table (None: it can), as Paimon would decide."""
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

    def merge_write(self, table: pa.Table, key_columns: Sequence[str], kind: int) -> pa.Table:
        """Merge the rows of one write that share a key (arrival order = sequence order), as
        Paimon's write buffer does; returns unique keys sorted by key. ``kind``: the value
        kind of every row of the write (a :class:`~lakeskip.catalog.pk.primary_key.RowKind`)."""
        add = kind in (0, 2)  # +I, +U
        if self.first_row:  # the first row of each key stands
            return dedupe_latest(table.take(pa.array(np.arange(table.num_rows)[::-1])), key_columns)
        if not self.partial_update:
            return dedupe_latest(table, key_columns)
        if not add:
            if kind == 3 and self.remove_record_on_delete:
                return dedupe_latest(table, key_columns)  # the last -D resets the row
            # any other retract only seeds the row when it comes first: the first one stands
            return dedupe_latest(table.take(pa.array(np.arange(table.num_rows)[::-1])), key_columns)
        n = table.num_rows
        if n <= 1:
            return table
        arrival = np.arange(n, dtype=np.int64)
        order, starts = _group(table, key_columns, pa.array(arrival))
        ordered = table.take(pa.array(order))
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
        order, starts = _group(table, key_columns, table.column(sequence))
        ordered = table.take(pa.array(order))
        kinds = np.asarray(ordered.column(kind).to_numpy(zero_copy_only=False), dtype=np.int64)
        ends = np.append(starts[1:], n) - 1
        if self.first_row:
            if not np.isin(kinds, _ADD).all() and not self.ignore_delete:
                raise CorruptMetadataError(
                    "a first-row table holds -U/-D versions (Paimon's first-row engine "
                    "accepts none without 'ignore-delete')"
                )
            adds = np.nonzero(np.isin(kinds, _ADD))[0]
            # per key the oldest +I/+U version; a key with none has no row
            run = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
            pick = _first_add(run, adds, len(starts))
            rows = pick[pick >= 0]
            return ordered.take(pa.array(rows))
        if not self.partial_update:
            last = ordered.take(pa.array(ends))
            alive = np.isin(kinds[ends], _ADD)
            return last.filter(pa.array(alive))
        is_add = np.isin(kinds, _ADD)
        if not is_add.all() and not (self.ignore_delete or self.remove_record_on_delete):
            raise CorruptMetadataError(
                "a partial-update table holds -U/-D versions but neither 'ignore-delete' nor "
                "'partial-update.remove-record-on-delete' is set (Paimon fails to read it too)"
            )
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
    table: pa.Table, key_columns: Sequence[str], order_by: pa.Array | pa.ChunkedArray
) -> tuple[np.ndarray, np.ndarray]:
    """Row order sorted by (key, ``order_by``) and the start of every key's run in it."""
    n = table.num_rows
    with_order = pa.table(
        {**{f"k{i}": table.column(k) for i, k in enumerate(key_columns)}, "o": order_by}
    )
    sort_keys = [(f"k{i}", "ascending") for i in range(len(key_columns))] + [("o", "ascending")]
    order = np.asarray(pc.sort_indices(with_order, sort_keys=sort_keys), dtype=np.int64)
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
