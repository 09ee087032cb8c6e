"""``CALL sys.rewrite_file_index(table => 'db.t' [, where => '<partition predicate>'])``.

Brings every data file's indexes in line with the table's current ``file-index.*`` options
without rewriting data (Paimon's ``FileIndexProcessor``):

* one Spark task per data file reads only the indexed columns (mapped by field id, so files
  written under older schemas work; a column the file predates is all nulls), builds the
  configured indexes, and compares the container with the file's current one;
* current files are untouched; changed ones get the new container embedded (when at most
  ``file-index.in-manifest-threshold``) or written to a new ``.index`` file named as Paimon
  does (``x.parquet.index`` -> ``x.parquet-1.index`` -> ``x.parquet-2.index``), never reusing a
  name an older snapshot may still reference; indexes no longer configured disappear (the new
  container replaces the old one whole, embedded or external);
* the driver commits one COMPACT snapshot (delete old entry, add new entry per file). A no-op
  call commits nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.options import file_index_options
from lakeskip.catalog.schema_evolution import drop_index_options, rename_in_options
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CommitConflictError
from lakeskip.index.file_index import build_file_index
from lakeskip.procedures.base import (
    Executor,
    ProcedureParameter,
    ProcedureResult,
    TableProcedure,
)
from lakeskip.procedures.partition_filter import filter_partitions
from lakeskip.types import Field, RowType

__all__ = ["RewriteFileIndex", "next_index_file_name", "rewrite_one"]

INDEX_SUFFIX = ".index"


def next_index_file_name(data_file: str, current: str | None, exists: Any) -> str:
    """Paimon's ``createNewFileIndexFilePath``, skipping names that already exist.

    >>> next_index_file_name("x.parquet", None, lambda n: False)
    'x.parquet.index'
    >>> next_index_file_name("x.parquet", "x.parquet.index", lambda n: False)
    'x.parquet-1.index'
    >>> next_index_file_name("x.parquet", "x.parquet-1.index", lambda n: n == "x.parquet-2.index")
    'x.parquet-3.index'
    """
    base = data_file + INDEX_SUFFIX
    if current is None:
        n = 0
    elif current == base:
        n = 1
    else:
        stem = current[: -len(INDEX_SUFFIX)]
        tail = stem.rsplit("-", 1)[-1]
        n = int(tail) + 1 if tail.isdigit() else 1
    while True:
        name = base if n == 0 else f"{data_file}-{n}{INDEX_SUFFIX}"
        if not exists(name):
            return name
        n += 1


@dataclass(frozen=True, slots=True)
class RewriteTask:
    """One data file's rewrite (picklable; runs in a Spark task)."""

    file_io: FileIO
    table_path: str
    table_schema: TableSchema
    file_schema: TableSchema
    entry: ManifestEntry
    directory: str


@dataclass(frozen=True, slots=True)
class RewriteOutcome:
    old: ManifestEntry
    new: ManifestEntry | None  # None: already current
    indexes_written: int


def _read_indexed_columns(task: RewriteTask, columns: list[str], schema: TableSchema) -> pa.Table:
    """Read the named columns of ``schema`` from the file, mapping by field id."""
    current = schema.row_type
    file_fields = {f.id: f for f in task.file_schema.row_type}
    path = f"{task.directory}/{task.entry.file.file_name}"
    wanted: list[tuple[Field, str | None]] = []
    for name in columns:
        f = current.field(name)
        prior = file_fields.get(f.id)
        wanted.append((f, prior.name if prior is not None else None))
    present = [old for _, old in wanted if old is not None]
    with task.file_io.open_input(path) as src:
        data = pq.read_table(src, columns=present) if present else None
    n = task.entry.file.row_count
    arrays = []
    for f, old in wanted:
        if old is None or data is None:
            arrays.append(pa.nulls(n, f.type.to_arrow()))
        else:
            arrays.append(data[old].cast(f.type.to_arrow()))
    return pa.table(arrays, names=[f.name for f, _ in wanted])


def index_schema_of(file_schema: TableSchema, table_schema: TableSchema) -> TableSchema | None:
    """The file's schema with the table's current ``file-index.*`` options under the file's
    own column names (a renamed column under its name then; a column the file predates
    has no index in it); ``None`` when a name the file used is another column's now (its
    indexes are then left as they are: a file keeps what it has)."""
    by_id = {f.id: f for f in file_schema.fields}
    current = {f.name for f in table_schema.fields}
    options = dict(table_schema.options)
    for f in table_schema.fields:
        if f.id not in by_id:
            options = drop_index_options(options, f.name)
    for f in table_schema.fields:
        old = by_id.get(f.id)
        if old is not None and old.name != f.name:
            if old.name in current:
                return None
            options = rename_in_options(options, f.name, old.name)
    return dataclasses.replace(file_schema, options=options)


def rewrite_one(task: RewriteTask) -> RewriteOutcome:
    """Rebuild one file's index container; report whether it changed."""
    schema = task.table_schema
    meta = task.entry.file
    if task.file_schema.id != schema.id:
        # an older schema version's file keeps its schema id (its columns and stats are
        # under it): its indexes are built as if written then, under its own column names
        # (readers map a renamed column to them by field id)
        as_written = index_schema_of(task.file_schema, schema)
        if as_written is None:
            return RewriteOutcome(task.entry, None, 0)
        schema = as_written
    options = file_index_options(schema.options, schema.row_type, schema.partition_keys)
    current_index = meta.index_file_name
    old_bytes: bytes | None = meta.embedded_index
    if current_index is not None:
        old_bytes = task.file_io.read_bytes(f"{task.directory}/{current_index}")
    columns = sorted({s.column for s in options.specs}) if options.enabled else []
    if columns:
        data = _read_indexed_columns(task, columns, schema)
        row_type = RowType(tuple(schema.row_type.field(c) for c in columns))
        built = build_file_index(data, row_type, options)
        new_bytes = built.embedded if built.embedded is not None else built.external
        n_indexes = sum(len(v) for v in built.index_types.values())
    else:
        built = None
        new_bytes = None
        n_indexes = 0
    embed_now = built is not None and built.embedded is not None
    was_embedded = meta.embedded_index is not None
    if new_bytes == old_bytes and (new_bytes is None or embed_now == was_embedded):
        return RewriteOutcome(task.entry, None, 0)
    extra = [f for f in meta.extra_files if not f.endswith(INDEX_SUFFIX)]
    embedded: bytes | None = None
    if built is not None and built.embedded is not None:
        embedded = built.embedded
    elif built is not None and built.external is not None:
        name = next_index_file_name(
            meta.file_name,
            current_index,
            lambda n: task.file_io.exists(f"{task.directory}/{n}"),
        )
        task.file_io.write_bytes(f"{task.directory}/{name}", built.external)
        extra.append(name)
    new_meta = dataclasses.replace(meta, embedded_index=embedded, extra_files=tuple(extra))
    return RewriteOutcome(task.entry, dataclasses.replace(task.entry, file=new_meta), n_indexes)


class RewriteFileIndex(TableProcedure):
    name = "sys.rewrite_file_index"
    doc = "Rebuild every data file's file indexes from the table's current file-index options."
    parameters = (
        ProcedureParameter("table", str, required=True, doc="db.table"),
        ProcedureParameter("where", str, doc="partition predicate, e.g. dt = '2024-01-01'"),
    )

    def run_on(
        self, table: FileStoreTable, arguments: Mapping[str, Any], executor: Executor
    ) -> ProcedureResult:
        snapshot = table.latest_snapshot()
        entries = table.scan_files(snapshot) if snapshot is not None else []
        if arguments.get("where"):
            entries = filter_partitions(table, entries, arguments["where"])
        tasks = [
            RewriteTask(
                file_io=table.file_io,
                table_path=table.path,
                table_schema=table.schema,
                file_schema=table.schema_by_id(e.file.schema_id),
                entry=e,
                directory=table.data_file_dir(e),
            )
            for e in entries
        ]
        outcomes = executor.map(rewrite_one, tasks, f"rewrite_file_index {table.identifier}")
        changed = [o for o in outcomes if o.new is not None]
        snapshot_id = None
        if changed:
            try:
                snap = table.commit(
                    [o.new for o in changed if o.new is not None],
                    deleted=[o.old for o in changed],
                    kind=CommitKind.COMPACT,
                )
            except CommitConflictError:  # nothing was published: the new index files go
                for o in changed:
                    kept = set(o.old.file.extra_files)
                    directory = table.data_file_dir(o.old)
                    for x in o.new.file.extra_files if o.new is not None else ():
                        if x not in kept:
                            table.file_io.delete(f"{directory}/{x}")
                raise
            snapshot_id = snap.id if snap is not None else None
        return ProcedureResult(
            columns=(
                ("files_rewritten", "INT"),
                ("files_unchanged", "INT"),
                ("indexes_written", "INT"),
                ("snapshot_id", "BIGINT"),
            ),
            values=(
                (
                    len(changed),
                    len(outcomes) - len(changed),
                    sum(o.indexes_written for o in changed),
                    snapshot_id,
                ),
            ),
        )
