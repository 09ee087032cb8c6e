"""Rows routed to the write task of their bucket, before the write: by Paimon's bucket
function on fixed-bucket tables (:func:`repartition_by_bucket`), through the bucket assigners
on dynamic-bucket tables (:func:`assign_dynamic_buckets`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, assert_never

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType

from lakeskip.catalog.format.bucket import bucket_ids
from lakeskip.catalog.format.deletion_vectors import IndexFileMeta
from lakeskip.catalog.pk.dynamic_bucket import (
    AssignSpec,
    BucketMode,
    DynamicBucketOptions,
    assign_table,
    partition_hashes,
    routing_values,
    row_assigners,
)
from lakeskip.catalog.pk.primary_key import schema_key_layout
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import BUCKET_COLUMN
from lakeskip.catalog.write.pk_dv_write import DELETE_FLAG
from lakeskip.spark.read.arrow_map import map_in_arrow, spark_struct
from lakeskip.types import DataType, quote_identifier

__all__ = ["ROUTE_COLUMN", "assign_dynamic_buckets", "repartition_by_bucket"]


def _bucket_task(columns: list[str], types: list[DataType], num_buckets: int):  # type: ignore[no-untyped-def]
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            arrays = [batch.column(batch.schema.get_field_index(c)) for c in columns]
            ids = pa.array(bucket_ids(arrays, types, num_buckets), pa.int32())
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, ids], names=[*batch.schema.names, BUCKET_COLUMN]
            )

    return run


def repartition_by_bucket(df: DataFrame, table: FileStoreTable, mixed: bool = False) -> DataFrame:
    """On a fixed-bucket table, shuffle rows by (partition, Paimon bucket) so each bucket of
    a partition is written by one task (fewer, larger files); other tables unchanged.
    ``mixed``: ``df`` ends with the MERGE delete flag (see :func:`write_entries`)."""
    schema = table.schema
    match table.kind.bucket:
        case BucketMode.FIXED:
            spec = schema.bucket_spec()
            assert spec is not None
        case BucketMode.UNAWARE | BucketMode.DYNAMIC:
            return df
        case other:
            assert_never(other)
    flag = [(DELETE_FLAG, BooleanType())] if mixed else []
    keyed = map_in_arrow(
        df,
        _bucket_task(list(spec.key), list(spec.types), spec.num_buckets),
        spark_struct(schema.row_type, *flag, (BUCKET_COLUMN, IntegerType())),
    )
    parts = [F.col(quote_identifier(k)) for k in schema.partition_keys]
    return keyed.repartition(*parts, F.col(BUCKET_COLUMN)).drop(BUCKET_COLUMN)


ROUTE_COLUMN = "__lakeskip_route"


def _route_task(spec: AssignSpec, routes: list[int]):  # type: ignore[no-untyped-def]
    """Each row's assigner, as a value Spark's hash partitioning sends to that assigner's task."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        table_routes = np.asarray(routes, dtype=np.int32)
        for batch in batches:
            ids = row_assigners(pa.Table.from_batches([batch]), spec)
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, pa.array(table_routes[ids], pa.int32())],
                names=[*batch.schema.names, ROUTE_COLUMN],
            )

    return run


def _assign_task(spec: AssignSpec, schema: Any, writers: list[int]):  # type: ignore[no-untyped-def]
    """The bucket assigners: each task keeps one index per (partition, assigner) it meets.
    Each row leaves with its bucket and the route to its bucket's write task
    (``(partition hash + bucket) mod len(writers)``: the buckets of a partition spread over
    the write tasks)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        from lakeskip.catalog.partitions import normalize_partition

        routes = np.asarray(writers, dtype=np.int32)
        state: dict[Any, Any] = {}
        for batch in batches:
            table = pa.Table.from_batches([batch])
            buckets = assign_table(table, spec, state, lambda p: normalize_partition(schema, p))
            slot = np.mod(partition_hashes(table, spec).astype(np.int64) + buckets, len(routes))
            yield pa.RecordBatch.from_arrays(
                [*batch.columns[:-1], pa.array(buckets, pa.int32()), pa.array(routes[slot])],
                names=[*batch.schema.names[:-1], BUCKET_COLUMN, ROUTE_COLUMN],
            )

    return run


def assign_dynamic_buckets(
    df: DataFrame,
    table: FileStoreTable,
    index: Mapping[tuple[tuple[Any, ...], int], IndexFileMeta],
    *,
    mixed: bool = False,
    fresh: bool = False,
) -> DataFrame:
    """Dynamic bucket mode (:mod:`lakeskip.catalog.pk.dynamic_bucket`): shuffle rows to ``P``
    assigner tasks by (partition hash, key hash), give each row its bucket there (from the
    HASH index ``index`` of the write's snapshot), then shuffle by (partition, bucket) so one
    task writes each bucket. The result ends with the bucket column the writer takes."""
    schema = table.schema
    options = DynamicBucketOptions.of(schema.options)
    default = df.sparkSession.sparkContext.defaultParallelism
    channels, assigners = options.assigners(default)
    by_partition: dict[tuple[Any, ...], list[tuple[int, IndexFileMeta]]] = {}
    for (partition, bucket), meta in sorted(index.items(), key=repr):
        by_partition.setdefault(partition, []).append((bucket, meta))
    layout = schema_key_layout(schema)
    spec = AssignSpec(
        file_io=table.file_io,
        table_path=table.path,
        partition_keys=tuple(schema.partition_keys),
        partition_types=tuple(schema.row_type.field(k).type for k in schema.partition_keys),
        key=layout.trimmed,
        key_types=layout.types,
        channels=channels,
        assigners=assigners,
        options=options,
        index={k: tuple(v) for k, v in by_partition.items()},
        fresh=fresh,
    )
    flag = [(DELETE_FLAG, BooleanType())] if mixed else []
    routed = map_in_arrow(
        df,
        _route_task(spec, routing_values(channels).tolist()),
        spark_struct(schema.row_type, *flag, (ROUTE_COLUMN, IntegerType())),
    ).repartition(channels, F.col(ROUTE_COLUMN))
    # an explicit task count, one wave: P write tasks (Spark's default parallelism unless
    # dynamic-bucket.assigner-parallelism says otherwise), bucket b of a partition in task
    # (partition hash + b) mod P. Adaptive execution would coalesce the buckets of a small
    # write into one task (a repartition by columns is coalescable, by number is not); a
    # count of spark.sql.shuffle.partitions (200) made a 3-row INSERT run 200 tasks (10-20 s)
    writers = channels
    assigned = map_in_arrow(
        routed,
        _assign_task(spec, schema, routing_values(writers).tolist()),
        spark_struct(
            schema.row_type, *flag, (BUCKET_COLUMN, IntegerType()), (ROUTE_COLUMN, IntegerType())
        ),
    )
    return assigned.repartition(writers, F.col(ROUTE_COLUMN)).drop(ROUTE_COLUMN)
