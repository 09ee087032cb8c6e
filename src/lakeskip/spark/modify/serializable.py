"""The serializable check of DELETE / UPDATE / MERGE INTO: may a statement that read the table
at one snapshot commit on a newer one?

A statement reads the rows that can matter to it (its *predicate*: the condition, or a
MERGE's ON keys) at snapshot ``R`` and commits on the latest snapshot ``L``. It is
serializable -- the table equals the statements replayed in commit order -- when the rows it
would read at ``L`` are the rows it read at ``R``. Two levels decide::

    files     the planner keeps, at L, no file that R did not have, and every file the
              statement read is still live with the same DV        -> commit, nothing read
    rows      the table's rows satisfying the predicate, read from the kept files at R and
              at L as the statement reads them (merged on a primary-key table, DVs
              applied), are equal (as a multiset on append tables)  -> commit
              else                                                  -> CommitConflictError

The file level alone fails a statement whenever a concurrent commit wrote a file whose stats
*may* hold a matching row: on a small primary-key table nearly every write (a file's key
range spans the table), every compaction (it rewrites a bucket's rows unchanged) and every
DV change in the bucket (its index file is rewritten), so under contention a MERGE starved
(bench/soak_commits.py: 98.2 % committed). The row level asks what actually matters: a
concurrent commit of other keys, a compaction, a DV set on another row pass; a commit that
changed, added or removed a row the predicate selects fails the attempt, and
``retry_on_conflict`` runs the whole statement again on the newer snapshot.

Why equal rows suffice: the statement's output is a function of those rows (and its source);
what it writes must also still fit the table, which the commit checks itself (files it
deletes still live, DVs it extends unchanged, no file added to a bucket a lookup write read).
On an append table two equal rows are interchangeable: a row that matches the condition is
in a file the statement rewrites or marks, which the commit checks, so equal multisets leave
the same rows for it to change at both snapshots.

What the row level reads is bounded: the kept files at both snapshots, at most
:data:`ROW_CHECK_MAX_BYTES` together (the statement read the ``R`` side itself, pruned by
its keys); beyond that, or if a file cannot be read (expired), or the schema changed, the
attempt conflicts as at the file level. The check runs on the driver, at commit time, only
when the file level found a difference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeskip.catalog.field_mapping import arrow_by_id, kv_by_id
from lakeskip.catalog.format.deletion_vectors import drop_deleted
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CommitConflictError, TypeMismatchError
from lakeskip.expressions import BooleanExpression, bind
from lakeskip.expressions.arrow_eval import evaluate_arrow_3vl
from lakeskip.planner.scan import ScanPlanner

__all__ = ["ROW_CHECK_MAX_BYTES", "serializable_check"]

#: the most data-file bytes the row-level check reads (both snapshots together)
ROW_CHECK_MAX_BYTES = 64 * 1024 * 1024


def serializable_check(
    table: FileStoreTable,
    read: Snapshot | None,
    predicate: BooleanExpression,
    time_zone: str,
    what: str,
    *,
    read_files: Sequence[ManifestEntry] = (),
) -> Callable[[Snapshot | None], None]:
    """A commit's check (``FileStoreTable.commit(concurrent_check=...)``) that the statement,
    which read the table at ``read``, still sees what it would see at the snapshot it commits
    on, as far as rows satisfying ``predicate`` go; else :class:`CommitConflictError`, and
    ``retry_on_conflict`` runs the statement again on the newer snapshot (module docstring).

    File level, what may differ:

    * a file committed since ``read`` that the planner says may hold a row satisfying
      ``predicate`` (stats, indexes, partitions, buckets): a row the statement never read
      (DELETE / UPDATE / MERGE would leave it untouched although they commit after it; a
      MERGE would insert a second row for its key);
    * one of ``read_files`` (the files the statement read, planned at ``read``) is no longer
      live or its deletion vector changed: a row the statement saw may be gone (a MERGE that
      saw the key would not insert it; an UPDATE would write again a key deleted meanwhile).

    Either only leads to the row level, which conflicts when the rows differ. (Files the
    statement deletes or marks are checked by the commit itself: the rows it writes back
    must be what they were.)

    Args:
        read: the snapshot the statement read (``None``: it read an empty table).
        predicate: what a row must satisfy to matter to the statement (planned with it at
            ``read``, which gave ``read_files``).
        what: the statement, for the message.
        read_files: the files the statement read.
    """
    read_ids = {e.identifier for e in table.scan_files(read)} if read is not None else set()
    read_dvs = table.deletion_files(read) if read is not None and read_files else {}
    since = f"snapshot {read.id}" if read is not None else "the empty table"
    at_read: list[pa.Table] = []  # the rows at ``read``, computed once

    def check(latest: Snapshot | None) -> None:
        if latest is None or (read is not None and latest.id == read.id):
            return
        try:
            plan = ScanPlanner(table).plan(predicate, time_zone=time_zone, snapshot=latest)
        except TypeMismatchError as err:  # the schema changed under the statement
            raise CommitConflictError(f"{what}: the table changed after it read {since}") from err
        new = [e for e in plan.files if e.identifier not in read_ids]
        changed = _changed(table, latest, read_files, read_dvs)
        if not new and not changed:
            return
        why = _rows_differ(
            table, read, latest, predicate, time_zone, read_files, plan.files, at_read
        )
        if why is not None:
            raise CommitConflictError(
                f"{what}: a commit after it read {since} changed rows its condition matches ({why})"
            )

    return check


def _changed(
    table: FileStoreTable,
    latest: Snapshot,
    read_files: Sequence[ManifestEntry],
    read_dvs: dict[str, Any],
) -> list[str]:
    """The names of ``read_files`` that are gone at ``latest`` or whose DV moved."""
    if not read_files:
        return []
    live = {e.identifier for e in table.scan_files(latest)}
    dvs = table.deletion_files(latest)
    out = []
    for entry in read_files:
        name = entry.file.file_name
        old, now = read_dvs.get(name), dvs.get(name)
        if entry.identifier not in live or (
            (old.index_file if old else None) != (now.index_file if now else None)
        ):
            out.append(name)
    return out


def _rows_differ(
    table: FileStoreTable,
    read: Snapshot | None,
    latest: Snapshot,
    predicate: BooleanExpression,
    time_zone: str,
    read_files: Sequence[ManifestEntry],
    latest_files: Sequence[ManifestEntry],
    at_read: list[pa.Table],
) -> str | None:
    """Why the rows satisfying ``predicate`` differ between the two snapshots (``None``: they
    do not). Anything that stops an exact answer counts as a difference."""
    if read is not None and read.schema_id != latest.schema_id:
        return "the schema changed"
    names = {e.file.file_name: e.file.file_size for e in (*read_files, *latest_files)}
    if sum(names.values()) > ROW_CHECK_MAX_BYTES:
        return f"{len(latest_files)} file(s) may hold them, too many to compare the rows"
    try:
        bound = bind(table.schema.row_type, predicate, time_zone=time_zone)
        if not at_read:
            at_read.append(
                _rows(table, read, read_files, bound) if read is not None else _empty(table)
            )
        now = _rows(table, latest, latest_files, bound)
    except Exception as err:  # expired file, unreadable DV, ...: cannot tell, so conflict
        return f"the rows could not be compared: {type(err).__name__}: {err}"
    before = at_read[0]
    if before.num_rows != now.num_rows or not before.equals(now):
        return f"{before.num_rows} row(s) then, {now.num_rows} now, not the same"
    return None


def _empty(table: FileStoreTable) -> pa.Table:
    return _nullable(table.schema.row_type.to_arrow()).empty_table()


def _nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_nullable(True) for f in schema])


def _rows(
    table: FileStoreTable,
    snapshot: Snapshot,
    files: Sequence[ManifestEntry],
    predicate: BooleanExpression,
) -> pa.Table:
    """The table's rows in ``files`` at ``snapshot`` as the statement reads them (its
    kind's read, as ``table_view``: merged on a primary-key table read by merge, files at
    level > 0 minus DVs on one read raw, files minus DVs on an append table), those where
    ``predicate`` is not FALSE, sorted by the primary key (append: by every column)."""
    kind = table.kind
    schema = table.schema
    arrow = _nullable(schema.row_type.to_arrow())
    keys = list(dict.fromkeys((*schema.partition_keys, *schema.primary_keys))) or arrow.names
    dvs = table.deletion_files(snapshot) if not isinstance(kind, PkMerge) else {}
    parts: list[pa.Table] = []
    for e in files:
        if isinstance(kind, PkRaw) and e.file.level == 0:
            continue  # a raw read skips level 0 (as table_view does)
        with table.file_io.open_input(table.data_file_path(e)) as src:
            data = pq.read_table(src)
        ref = dvs.get(e.file.file_name)
        if ref is not None:
            deleted = table.read_deletion_vector(ref, e.file.row_count)
            data = drop_deleted(data, deleted.serialize(), e.file.file_name)
        sid = e.file.schema_id
        if sid != schema.id and isinstance(kind, PkMerge):  # older schema: by field id
            data = kv_by_id(data, table.schema_by_id(sid), schema)
        elif sid != schema.id:
            data = arrow_by_id(data, table.schema_by_id(sid).row_type, schema.row_type)
        n = data.num_rows
        columns = {
            f.name: (
                data[f.name].cast(f.type) if f.name in data.column_names else pa.nulls(n, f.type)
            )
            for f in arrow
        }
        if isinstance(kind, PkMerge):
            columns[SEQUENCE_NUMBER] = data[SEQUENCE_NUMBER].cast(pa.int64())
            columns[VALUE_KIND] = data[VALUE_KIND].cast(pa.int8())
        parts.append(pa.table(columns))
    match kind:
        case PkMerge(merge=merge):
            rows = _merged(parts, keys, merge, arrow)
        case PkRaw() | Append() | AppendDv():
            rows = pa.concat_tables(parts) if parts else arrow.empty_table()
    rows = rows.select(arrow.names).cast(arrow)
    if rows.num_rows:
        # rows where the predicate is TRUE or unknown: only a definite FALSE is left out
        rows = rows.filter(pc.fill_null(evaluate_arrow_3vl(predicate, rows), True))
    return rows.sort_by([(k, "ascending") for k in keys]) if rows.num_rows else rows


def _merged(
    parts: Sequence[pa.Table], keys: Sequence[str], merge: MergeEngine, arrow: pa.Schema
) -> pa.Table:
    if not parts:
        return arrow.empty_table()
    schema = _nullable(parts[0].schema)
    versions = pa.concat_tables([p.cast(schema) for p in parts])
    return merge.merge_versions(versions, keys, SEQUENCE_NUMBER, VALUE_KIND)
