"""Sorted writes in Spark: write-time clustering (``clustering.columns``) and the Spark
executor's sort compaction.

``order`` range-partitions on the columns (Spark samples the boundaries). ``zorder`` and
``hilbert`` go through curve keys::

    sample     one Spark job: every partition returns its row count, a bounded reservoir of
               the sort columns and the Parquet size of a few whole rows (tasks, not the
               driver, read the data); its result rows count the input's partitions, so
               nothing else plans the input (``df.rdd`` would run its shuffle stages once
               more under adaptive execution)
    driver     the reservoirs weighted by their partitions' row counts into one sample, the
               rank boundaries of every column (``sort.curve-keys = rank``, the default;
               lakeskip.sort.ranked), the keys of the sample, and n - 1 cuts of the key space
               at curve-cell corners near the quantiles (lakeskip.sort.cuts), where
               n = max(requested, estimated bytes / target-file-size): all in
               lakeskip.sort.sampling, which the Executor's compaction shares
    tasks      key every row and give it its range id; ``repartitionById`` sends range j to
               task j, which sorts it by key and writes it: each file covers whole curve cells,
               a compact region of every column

A table with partition keys range-partitions on ``(partition keys, key)`` instead, cut by
Spark's sampling: cells of different partitions would otherwise share tasks.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

from lakeskip.catalog.format.parquet_options import ParquetWriteOptions
from lakeskip.sort.cuts import curve_keys, key_bytes, range_ids
from lakeskip.sort.ranked import RANK_KEYS, SAMPLE_ROWS, ColumnBounds
from lakeskip.sort.sampling import PartSample, curve_layout, encode_sample, merge_samples
from lakeskip.spark.read.arrow_map import map_in_arrow, spark_struct
from lakeskip.types import DataType, RowType, quote_identifier

__all__ = ["CurveSample", "reservoir_rows", "sample_curve", "sort_dataframe"]

SORT_KEY = "__lakeskip_sort_key"
RANGE_ID = "__lakeskip_range_id"
#: Whole rows per Spark partition encoded as Parquet to estimate the bytes of a row.
SIZE_SAMPLE_ROWS = 2048

_SAMPLE_RESULT = StructType(
    [
        StructField("rows", LongType()),
        StructField("sample", BinaryType()),
        StructField("size_rows", LongType()),
        StructField("size_bytes", LongType()),
    ]
)


def _key_task(  # type: ignore[no-untyped-def]
    columns: list[str],
    strategy: str,
    types: list[DataType],
    var_len: int,
    bounds: tuple[ColumnBounds, ...] | None,
    cuts: list[bytes] | None,
):
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            arrays = [batch.column(batch.schema.get_field_index(c)) for c in columns]
            key = curve_keys(arrays, types, strategy, var_len, bounds)
            extra, names = [key], [SORT_KEY]
            if cuts is not None:
                extra.append(pa.array(range_ids(key_bytes(key), cuts), type=pa.int32()))
                names.append(RANGE_ID)
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, *extra], names=[*batch.schema.names, *names]
            )

    return run


def _parquet_bytes(rows: pa.Table, parquet: ParquetWriteOptions) -> int:
    """Bytes ``rows`` add to a Parquet file (the size of an empty file subtracted)."""

    def size(t: pa.Table) -> int:
        sink = pa.BufferOutputStream()
        pq.write_table(t, sink, **parquet.writer_kwargs(t))
        return int(sink.getvalue().size)

    return max(0, size(rows) - size(rows.slice(0, 0)))


def reservoir_rows(partition: int, sample_rows: int = SAMPLE_ROWS) -> int:
    """Rows the Spark partition of index ``partition`` samples: ``sample_rows / (index + 1)``,
    rounded up.

    The number of partitions P is not known when the tasks run (asking for it plans the
    input: under adaptive execution, a job). Partition i of P holds 1/P <= 1/(i + 1) of a
    balanced input, so it samples at least its share of ``sample_rows``
    (:func:`~lakeskip.sort.sampling.sample_share`) and the merged sample is as full as one
    drawn knowing P; a skewed partition is short only where it holds more than 1/(i + 1)
    of the rows. The driver collects at most ``sample_rows * H(P)`` rows,
    H(P) = 1 + 1/2 + ... + 1/P < 1 + ln P: about twice ``sample_rows`` at P = 4, 8x at P = 1800,
    where a fixed reservoir per partition would grow with P.

    >>> [reservoir_rows(i, 100) for i in range(4)], reservoir_rows(10**6, 100)
    ([100, 50, 34, 25], 1)
    """
    return max(1, -(-sample_rows // (partition + 1)))


def _sample_task(columns: list[str], parquet: ParquetWriteOptions | None):  # type: ignore[no-untyped-def]
    """Per Spark partition: its row count, a uniform sample of up to
    :func:`reservoir_rows` rows of ``columns`` (an Arrow IPC stream; reservoir sampling by
    random priority, bounded memory whatever the partition's size) and the Parquet bytes of
    its first rows (``parquet`` given)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        wanted = reservoir_rows(partition)
        # seeded by the partition: the same input is cut the same way every time it is written
        rng = np.random.default_rng(partition)
        kept: pa.Table | None = None
        priority = np.empty(0)
        rows = 0
        head: list[pa.RecordBatch] = []
        head_rows = 0
        for batch in batches:
            rows += batch.num_rows
            if parquet is not None and head_rows < SIZE_SAMPLE_ROWS:
                head.append(batch.slice(0, SIZE_SAMPLE_ROWS - head_rows))
                head_rows += head[-1].num_rows
            part = pa.Table.from_batches([batch]).select(columns)
            both = part if kept is None else pa.concat_tables([kept, part])
            priority = np.concatenate([priority, rng.random(batch.num_rows)])
            if both.num_rows > wanted:
                keep = np.sort(np.argpartition(priority, wanted)[:wanted])
                both, priority = both.take(pa.array(keep)), priority[keep]
            kept = both
        size = _parquet_bytes(pa.Table.from_batches(head), parquet) if head and parquet else 0
        yield pa.RecordBatch.from_pydict(
            {
                "rows": [rows],
                "sample": [encode_sample(kept) if kept is not None else b""],
                "size_rows": [head_rows],
                "size_bytes": [size],
            },
            schema=pa.schema(
                [
                    ("rows", pa.int64()),
                    ("sample", pa.binary()),
                    ("size_rows", pa.int64()),
                    ("size_bytes", pa.int64()),
                ]
            ),
        )

    return run


@dataclass(frozen=True, slots=True)
class CurveSample:
    """A uniform sample of the sort columns of a DataFrame, its row count and an estimate of
    its size as Parquet."""

    data: pa.Table
    rows: int
    bytes_estimate: int
    #: Spark partitions the DataFrame was read in (one sampling task each)
    partitions: int


def sample_curve(
    df: DataFrame,
    row_type: RowType,
    columns: Sequence[str],
    parquet: ParquetWriteOptions | None = None,
) -> CurveSample:
    """Sample ``columns`` of ``df`` in Spark tasks, one job: each partition returns a
    bounded reservoir (:func:`reservoir_rows`) and its row count; the driver weights the
    reservoirs by their partitions' sizes (:func:`lakeskip.sort.sampling.merge_samples`)
    and counts the partitions. With ``parquet``, each partition also encodes its first
    :data:`SIZE_SAMPLE_ROWS` whole rows to estimate the bytes the data takes as files."""
    rows = map_in_arrow(df, _sample_task(list(columns), parquet), _SAMPLE_RESULT).collect()
    total = sum(int(r["rows"]) for r in rows)
    size_rows = sum(int(r["size_rows"]) for r in rows)
    size_bytes = sum(int(r["size_bytes"]) for r in rows)
    estimate = math.ceil(total * size_bytes / size_rows) if size_rows else 0
    parts = [PartSample(int(r["rows"]), bytes(r["sample"])) for r in rows]
    # Spark's INT/DATE/... Arrow types are what row_type.to_arrow() gives, by name
    arrow = pa.schema([row_type.to_arrow().field(c) for c in columns])
    return CurveSample(merge_samples(parts, arrow), total, estimate, len(rows))


def sort_dataframe(
    df: DataFrame,
    row_type: RowType,
    partition_keys: Sequence[str],
    strategy: str,
    columns: Sequence[str],
    var_length_contribution: int,
    n_out: int | None,
    curve_keys_option: str = RANK_KEYS,
    *,
    parquet: ParquetWriteOptions | None = None,
    target_file_size: int | None = None,
) -> DataFrame:
    """``df`` in ``n_out`` (or more) tasks, each a range of the sort order, sorted within;
    ``n_out = None``: as many as ``df`` has partitions.

    ``order`` range-partitions on the columns (Spark samples the boundaries, as Paimon's
    range shuffle does). ``zorder``/``hilbert`` sort by curve keys computed in Arrow batches:
    rank keys (``curve_keys_option = rank``: every column by its rank in a sample drawn in
    Spark tasks) or Paimon's raw-byte keys (``paimon``), cut into ranges at curve-cell
    corners (:func:`lakeskip.sort.cuts.aligned_cuts`). With ``target_file_size`` (and
    ``parquet``, the table's file options), the number of ranges grows to the data's
    estimated size over the target. The curves count ``df``'s partitions in their sampling
    job; ``order`` with ``n_out = None`` asks ``df`` (``df.rdd``: under adaptive execution
    that runs ``df``'s shuffle stages once more)."""
    parts = [F.col(quote_identifier(k)) for k in partition_keys]
    if strategy == "order":
        keys = [F.col(quote_identifier(c)) for c in columns]
        n = n_out if n_out is not None else max(1, df.rdd.getNumPartitions())
        return df.repartitionByRange(n, *parts, *keys).sortWithinPartitions(*parts, *keys)
    types = [row_type.field(c).type for c in columns]
    sample = sample_curve(df, row_type, columns, parquet if target_file_size else None)
    if n_out is None:
        n_out = max(1, sample.partitions)
    if target_file_size:
        n_out = max(n_out, math.ceil(sample.bytes_estimate / target_file_size))
    var_len = var_length_contribution
    layout = curve_layout(
        sample.data, types, strategy, var_len, curve_keys_option, None if partition_keys else n_out
    )
    bounds, cuts = layout.bounds, layout.cuts
    extra: list[tuple[str, T.DataType]] = [(SORT_KEY, BinaryType())]
    if cuts is not None:
        extra.append((RANGE_ID, IntegerType()))
    task = _key_task(list(columns), strategy, types, var_len, bounds, cuts)
    keyed = map_in_arrow(df, task, spark_struct(row_type, *extra))
    key = F.col(SORT_KEY)
    if cuts is None:
        return (
            keyed.repartitionByRange(n_out, *parts, key)
            .sortWithinPartitions(*parts, key)
            .drop(SORT_KEY)
        )
    return (
        keyed.repartitionById(len(cuts) + 1, F.col(RANGE_ID))
        .sortWithinPartitions(key)
        .drop(SORT_KEY, RANGE_ID)
    )
