"""The read path: plan every lakeskip table in a query, then let Spark run it over the survivors.

For each reference to a lakeskip table the query's predicates on that table are translated
(``lakeskip.sql.query.analyze_query``), the planner picks the files that might hold matches,
and the reference is replaced by a uniquely named temporary view over exactly those Parquet
files (with the table's schema, so an empty list works). Spark then runs the query *as
written*: every predicate is still applied, Spark keeps its own column pruning and Parquet
row-group filtering. The views are dropped as soon as Spark has analysed the query -- the
DataFrame keeps the resolved plan -- so concurrent queries never see each other's views.
"""

from __future__ import annotations

import functools
import itertools
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import assert_never

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.field_mapping import kv_key_columns
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.kind import Append, AppendDv, PkMerge, PkRaw
from lakeskip.catalog.ops.time_travel import SCAN_OPTIONS, TimeTravel, read_snapshot, table_at
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND, schema_key_layout
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    LakeskipError,
    TableNotFoundError,
)
from lakeskip.expressions import AlwaysTrue, BooleanExpression, bind
from lakeskip.planner.report import PruningReport, ScanPlan
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark.read.arrow_map import map_in_arrow, spark_struct
from lakeskip.spark.read.dv import (
    by_id_column,
    live_rows_frame,
    pushdown_safe_frame,
    read_vectors,
    spark_path,
    table_file_paths,
    view_over_files,
)
from lakeskip.sql.query import AsOf, TableScan, analyze_query, rewrite_tables
from lakeskip.sql.statements import Query, TableIdent
from lakeskip.types import BIGINT, TINYINT, Field, RowType, quote_identifier

__all__ = [
    "PlannedQuery",
    "plan_query",
    "run_planned",
    "spark_path",
    "table_file_paths",
    "view_over_files",
]

_view_counter = itertools.count()
_view_lock = threading.Lock()


def table_view(
    spark: SparkSession,
    table: FileStoreTable,
    entries: Sequence[ManifestEntry],
    snapshot: Snapshot | None = None,
) -> DataFrame:
    """The table's rows in exactly these files, by the table's kind: the live rows of the
    files (DVs applied) on an append table, the merged rows (newest version per key, deletes
    dropped) on a primary-key table read by merge, the live rows of files at level > 0 (DVs
    applied, no merge) on one read raw. ``snapshot``: where the DVs are read (default: the
    latest)."""
    kind = table.kind
    match kind:
        case PkRaw():
            return _live_rows(spark, table, [e for e in entries if e.file.level > 0], snapshot)
        case PkMerge(merge=merge):
            merged = merged_view(spark, table, entries, merge)
            return pushdown_safe_frame(merged, table, entries)
        case Append() | AppendDv():  # DVs also on a plain append table Paimon wrote to
            return _live_rows(spark, table, entries, snapshot)
        case _:
            assert_never(kind)


def _live_rows(
    spark: SparkSession,
    table: FileStoreTable,
    entries: Sequence[ManifestEntry],
    snapshot: Snapshot | None,
) -> DataFrame:
    snapshot = snapshot if snapshot is not None else table.latest_snapshot()
    return live_rows_frame(spark, table, entries, read_vectors(table, entries, snapshot))


def merged_view(
    spark: SparkSession,
    table: FileStoreTable,
    entries: Sequence[ManifestEntry],
    engine: MergeEngine,
) -> DataFrame:
    """Merge-on-read of a primary-key table's files as a Spark plan: the versions are
    shuffled by key and sorted, and each task merges its keys with ``engine`` (the table's
    :class:`~lakeskip.catalog.pk.merge_engine.MergeEngine`, the one Python merge). The path of
    reads that do not go through the Spark catalog (the catalog's scan merges the sorted
    files of each bucket without a shuffle). Files written under an older schema are read
    with their own column names and mapped by field id (:func:`_kv_frame`)."""
    from pyspark.sql import functions as F

    schema = table.schema
    layout = schema_key_layout(schema)
    row_type = schema.row_type
    df = _kv_frame(spark, table, entries)
    keys = [F.col(quote_identifier(k)) for k in (*schema.partition_keys, *layout.key_columns)]
    merge = _KeyMerge(
        engine,
        (*schema.partition_keys, *layout.key_columns),
        tuple(row_type.names),
    )
    sorted_df = df.repartition(*keys).sortWithinPartitions(*keys)
    return map_in_arrow(sorted_df, merge, spark_struct(row_type))


def _kv_fields(schema: TableSchema) -> list[Field]:
    """The columns of a key-value file of ``schema``: keys, sequence number, kind, values."""
    layout = schema_key_layout(schema)
    row_type = schema.row_type
    return [
        *(
            Field(-1, kc, row_type.field(k).type)
            for k, kc in zip(layout.trimmed, layout.key_columns, strict=True)
        ),
        Field(-1, SEQUENCE_NUMBER, BIGINT),
        Field(-1, VALUE_KIND, TINYINT),
        *row_type.fields,
    ]


def _kv_frame(
    spark: SparkSession, table: FileStoreTable, entries: Sequence[ManifestEntry]
) -> DataFrame:
    """The key-value rows of these files under the table's schema: each schema version's
    files read with that version's names and types, their columns mapped by field id (keys
    renamed, values as :func:`~lakeskip.spark.read.dv.files_frame_by_id` maps them)."""
    from pyspark.sql import functions as F

    schema = table.schema
    groups: dict[int, list[ManifestEntry]] = {}
    for e in entries:
        groups.setdefault(e.file.schema_id, []).append(e)
    if not groups:
        groups[schema.id] = []
    frames: list[DataFrame] = []
    for sid, group in groups.items():
        stored = schema if sid == schema.id else table.schema_by_id(sid)
        paths = [spark_path(p) for p in table_file_paths(table, group)]
        df = spark.read.schema(RowType(tuple(_kv_fields(stored))).spark_ddl()).parquet(*paths)
        if sid == schema.id:
            frames.append(df)
            continue
        by_id = {f.id: f for f in stored.row_type}
        old_keys = kv_key_columns(stored, schema)
        columns = [
            *(
                F.col(quote_identifier(old)).alias(new)
                for old, new in zip(old_keys, schema_key_layout(schema).key_columns, strict=True)
            ),
            F.col(SEQUENCE_NUMBER),
            F.col(VALUE_KIND),
            *(by_id_column(by_id.get(f.id), f, None).alias(f.name) for f in schema.row_type),
        ]
        frames.append(df.select(*columns))
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


@dataclass(frozen=True, slots=True)
class _KeyMerge:
    """A task's merge of key-sorted versions, batch by batch: the versions of the last key of
    a batch wait for the next batch (a key's versions may span two)."""

    engine: MergeEngine
    keys: tuple[str, ...]
    names: tuple[str, ...]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        carry: pa.Table | None = None
        for batch in batches:
            t = pa.Table.from_batches([batch])
            if carry is not None:
                t = pa.concat_tables([carry, t])
            if t.num_rows == 0:
                continue
            tail = _last_key_rows(t, self.keys)
            carry = t.slice(t.num_rows - tail)
            yield from self._merge(t.slice(0, t.num_rows - tail))
        if carry is not None:
            yield from self._merge(carry)

    def _merge(self, versions: pa.Table) -> Iterator[pa.RecordBatch]:
        if versions.num_rows == 0:
            return
        rows = self.engine.merge_versions(versions, self.keys, SEQUENCE_NUMBER, VALUE_KIND)
        yield from rows.select(list(self.names)).to_batches()


def _last_key_rows(t: pa.Table, keys: Sequence[str]) -> int:
    """How many rows at the end of ``t`` (sorted by ``keys``) hold its last row's key."""
    n = t.num_rows
    same = np.ones(n, dtype=bool)
    for k in keys:
        col = t.column(k)
        eq = pc.equal(col, col[n - 1])
        same &= np.asarray(pc.fill_null(eq, False).to_numpy(zero_copy_only=False), dtype=bool)
    differ = np.nonzero(~same)[0]
    return int(n - (int(differ[-1]) + 1 if len(differ) else 0))


def _new_view_name(ident: str) -> str:
    with _view_lock:
        n = next(_view_counter)
    safe = "".join(c if c.isalnum() else "_" for c in ident)
    return f"__lakeskip_{safe}_{n}_{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    """A query rewritten onto pruned views, with one plan per lakeskip table reference."""

    sql: str
    views: tuple[tuple[str, DataFrame], ...]
    plans: tuple[ScanPlan, ...]

    @property
    def reports(self) -> list[PruningReport]:
        return [p.report for p in self.plans]


def plan_query(
    spark: SparkSession,
    catalog: Catalog,
    query: Query,
    default_db: str,
    time_zone: str,
    planner_for: Callable[[FileStoreTable], ScanPlanner] = ScanPlanner,
) -> PlannedQuery:
    """Plan every lakeskip table reference of ``query`` (no Spark job runs here)."""
    tables: dict[str, FileStoreTable] = {}

    def lookup(ident: TableIdent) -> RowType | None:
        name = ident.qualified(default_db)
        if name in tables:
            return tables[name].schema.row_type
        try:
            table = catalog.get_table(name)
        except (TableNotFoundError, LakeskipError):
            return None
        tables[name] = table
        return table.schema.row_type

    scans: list[TableScan] = analyze_query(
        query.tree, tables=lookup, default_db=default_db, time_zone=time_zone
    )
    if not scans:
        return PlannedQuery(sql=query.sql, views=(), plans=())
    mapping: dict[int, str] = {}
    views: list[tuple[str, DataFrame]] = []
    plans: list[ScanPlan] = []
    for scan in scans:
        name = scan.ident.qualified(default_db)
        table = tables[name]
        snapshot = _time_travel_snapshot(spark, table, scan.as_of)
        if snapshot is not None:
            table = table_at(table, snapshot)
        predicate = scan.predicate
        if snapshot is not None and not _columns_exist(predicate, table.schema.row_type):
            predicate = AlwaysTrue()  # a column added later: Spark reports it, we prune nothing
        plan = planner_for(table).plan(
            predicate,
            time_zone=time_zone,
            snapshot_id=snapshot.id if snapshot is not None else None,
        )
        view = _new_view_name(name)
        plan_snapshot = table.snapshot(plan.report.snapshot_id) if plan.report.snapshot_id else None
        views.append((view, table_view(spark, table, plan.files, plan_snapshot)))
        mapping[id(scan.node)] = view
        plans.append(plan)
    return PlannedQuery(
        sql=rewrite_tables(query.tree, mapping), views=tuple(views), plans=tuple(plans)
    )


SPARK_CONF_PREFIX = "spark.paimon."


def _time_travel_snapshot(
    spark: SparkSession, table: FileStoreTable, as_of: AsOf | None
) -> Snapshot | None:
    """The snapshot a reference reads (:func:`~lakeskip.catalog.ops.time_travel.read_snapshot`
    chooses: its AS OF clause, the session's settings, the table's options); ``None``:
    the latest."""
    clause: TimeTravel | None = None
    if as_of is not None and as_of.timestamp_sql is not None:
        row = spark.sql(
            f"SELECT unix_micros(CAST(({as_of.timestamp_sql}) AS TIMESTAMP)) AS us"
        ).first()
        if row is None or row[0] is None:
            raise InvalidArgumentError(
                f"TIMESTAMP AS OF {as_of.timestamp_sql}: not a timestamp (it is NULL)"
            )
        clause = TimeTravel.of_clause(timestamp_millis=int(row[0]) // 1000)
    elif as_of is not None:
        clause = TimeTravel.of_clause(version=as_of.version)
    return read_snapshot(table, clause, scan_settings(lambda key: spark.conf.get(key, "")))


def scan_settings(setting: Callable[[str], object]) -> dict[str, str]:
    """The session's ``spark.paimon.scan.*`` settings (``setting``: a key's value, from the
    SparkSession or as the JVM sent them with a callback) as the ``scan.*`` options
    :func:`~lakeskip.catalog.ops.time_travel.read_snapshot` takes; unset ones are empty."""
    return {k: str(setting(SPARK_CONF_PREFIX + k) or "") for k in SCAN_OPTIONS}


def _columns_exist(predicate: BooleanExpression, row_type: RowType) -> bool:
    try:
        bind(row_type, predicate)
    except ColumnNotFoundError:
        return False
    return True


def run_planned(spark: SparkSession, planned: PlannedQuery) -> DataFrame:
    """Register the views, let Spark analyse the rewritten query, drop the views."""
    for name, df in planned.views:
        df.createOrReplaceTempView(name)
    try:
        return spark.sql(planned.sql)
    finally:
        for name, _ in planned.views:
            spark.catalog.dropTempView(name)
