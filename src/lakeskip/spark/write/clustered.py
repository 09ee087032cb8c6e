"""Sorted writes in Spark: write-time clustering (``clustering.columns``) and the Spark
executor's sort compaction.

``order`` range-partitions on the columns (Spark samples the boundaries). ``zorder`` and
``hilbert`` go through curve keys::

    sample     one Spark job: every partition returns its row count, a bounded reservoir of
               the sort columns and the Parquet size of a few whole rows (tasks, not the
               driver, read the data)
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

from lakeskip.catalog.format.parquet_options import ParquetWriteOptions
from lakeskip.sort.cuts import curve_keys, key_bytes, range_ids
from lakeskip.sort.ranked import RANK_KEYS, SAMPLE_ROWS, ColumnBounds
from lakeskip.sort.sampling import PartSample, curve_layout, encode_sample, merge_samples
from lakeskip.types import DataType, RowType

__all__ = ["CurveSample", "sample_curve", "sort_dataframe"]

SORT_KEY = "__lakeskip_sort_key"
RANGE_ID = "__lakeskip_range_id"
#: Whole rows per Spark partition encoded as Parquet to estimate the bytes of a row.
SIZE_SAMPLE_ROWS = 2048

_SAMPLE_RESULT = "rows bigint, sample binary, size_rows bigint, size_bytes bigint"


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


def _sample_task(columns: list[str], wanted: int, parquet: ParquetWriteOptions | None):  # type: ignore[no-untyped-def]
    """Per Spark partition: its row count, a uniform sample of up to ``wanted`` rows of
    ``columns`` (an Arrow IPC stream; reservoir sampling by random priority, bounded memory
    whatever the partition's size) and the Parquet bytes of its first rows (``parquet``
    given)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rng = np.random.default_rng()
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


def sample_curve(
    df: DataFrame,
    row_type: RowType,
    columns: Sequence[str],
    partitions: int,
    parquet: ParquetWriteOptions | None = None,
) -> CurveSample:
    """Sample ``columns`` of ``df`` (in ``partitions`` Spark partitions) in Spark tasks:
    each partition returns a bounded reservoir and its row count; the driver weights the
    reservoirs by their partitions' sizes (:func:`lakeskip.sort.sampling.merge_samples`).
    With ``parquet``, each partition also encodes its first :data:`SIZE_SAMPLE_ROWS` whole
    rows to estimate the bytes the data takes as files."""
    wanted = max(1, SAMPLE_ROWS // max(1, partitions))
    rows = df.mapInArrow(_sample_task(list(columns), wanted, parquet), _SAMPLE_RESULT).collect()
    total = sum(int(r["rows"]) for r in rows)
    size_rows = sum(int(r["size_rows"]) for r in rows)
    size_bytes = sum(int(r["size_bytes"]) for r in rows)
    estimate = math.ceil(total * size_bytes / size_rows) if size_rows else 0
    parts = [PartSample(int(r["rows"]), bytes(r["sample"])) for r in rows]
    # Spark's INT/DATE/... Arrow types are what row_type.to_arrow() gives, by name
    arrow = pa.schema([row_type.to_arrow().field(c) for c in columns])
    return CurveSample(merge_samples(parts, arrow), total, estimate)


def sort_dataframe(
    df: DataFrame,
    row_type: RowType,
    partition_keys: Sequence[str],
    strategy: str,
    columns: Sequence[str],
    var_length_contribution: int,
    n_out: int,
    curve_keys_option: str = RANK_KEYS,
    *,
    parquet: ParquetWriteOptions | None = None,
    target_file_size: int | None = None,
    partitions: int | None = None,
) -> DataFrame:
    """``df`` in ``n_out`` (or more) tasks, each a range of the sort order, sorted within.

    ``order`` range-partitions on the columns (Spark samples the boundaries, as Paimon's
    range shuffle does). ``zorder``/``hilbert`` sort by curve keys computed in Arrow batches:
    rank keys (``curve_keys_option = rank``: every column by its rank in a sample drawn in
    Spark tasks) or Paimon's raw-byte keys (``paimon``), cut into ranges at curve-cell
    corners (:func:`lakeskip.sort.cuts.aligned_cuts`). With ``target_file_size`` (and
    ``parquet``, the table's file options), the number of ranges grows to the data's
    estimated size over the target. ``partitions``: ``df``'s number of partitions where the
    caller has it (else it is asked of ``df``, which plans it)."""
    parts = [F.col(f"`{k}`") for k in partition_keys]
    if strategy == "order":
        keys = [F.col(f"`{c}`") for c in columns]
        return df.repartitionByRange(n_out, *parts, *keys).sortWithinPartitions(*parts, *keys)
    types = [row_type.field(c).type for c in columns]
    if partitions is None:
        partitions = df.rdd.getNumPartitions()
    sample = sample_curve(df, row_type, columns, partitions, parquet if target_file_size else None)
    if target_file_size:
        n_out = max(n_out, math.ceil(sample.bytes_estimate / target_file_size))
    var_len = var_length_contribution
    layout = curve_layout(
        sample.data, types, strategy, var_len, curve_keys_option, None if partition_keys else n_out
    )
    bounds, cuts = layout.bounds, layout.cuts
    ddl = row_type.spark_ddl() + f", `{SORT_KEY}` BINARY"
    if cuts is not None:
        ddl += f", `{RANGE_ID}` INT"
    keyed = df.mapInArrow(_key_task(list(columns), strategy, types, var_len, bounds, cuts), ddl)
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
