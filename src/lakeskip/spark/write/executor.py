"""The Spark implementation of :class:`lakeskip.procedures.base.Executor`.

Procedures stay Spark-free; whatever grows with the data runs here as Spark tasks:
``map`` runs one task per item (``sc.parallelize(items, len(items))``), and
``rewrite_sorted`` reads files into a DataFrame, computes the z-order / Hilbert key in Arrow
batches (``lakeskip.sort``), range-partitions on it (Spark samples the boundaries, as Paimon's
range shuffle does), sorts within partitions and writes through the normal write tasks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from pyroaring import BitMap
from pyspark.sql import SparkSession

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.options import target_file_size
from lakeskip.catalog.table import FileStoreTable
from lakeskip.procedures.base import SortSpec
from lakeskip.spark.read.dv import DeletionVectors, live_rows_frame
from lakeskip.spark.write.clustered import sort_dataframe
from lakeskip.spark.write.writer import collect_entries

__all__ = ["SparkExecutor"]

T = TypeVar("T")
R = TypeVar("R")


class SparkExecutor:
    """Runs procedure work as Spark tasks of a SparkSession."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    @property
    def parallelism(self) -> int:
        return max(1, int(self.spark.sparkContext.defaultParallelism))

    def map(self, fn: Callable[[T], R], items: Sequence[T], description: str) -> list[R]:
        if not items:
            return []
        sc = self.spark.sparkContext
        sc.setJobDescription(description)
        try:
            return sc.parallelize(list(items), len(items)).map(fn).collect()
        finally:
            sc.setJobDescription(None)  # type: ignore[arg-type]

    def rewrite_sorted(
        self,
        table: FileStoreTable,
        files: Sequence[ManifestEntry],
        sort: SortSpec,
        deleted: Mapping[str, bytes] | None = None,
    ) -> list[ManifestEntry]:
        if not files:
            return []
        spark = self.spark
        schema = table.schema
        row_type = schema.row_type
        vectors = {n: BitMap.deserialize(b) for n, b in (deleted or {}).items()}
        df = live_rows_frame(spark, table, files, DeletionVectors(vectors, {}))
        total = sum(e.file.file_size for e in files)
        n_out = max(1, math.ceil(total / target_file_size(schema.options)))
        ordered = sort_dataframe(
            df,
            row_type,
            schema.partition_keys,
            sort.strategy,
            sort.columns,
            sort.var_length_contribution,
            n_out,
            sort.curve_keys,
        )
        spark.sparkContext.setJobDescription(f"compact {table.identifier} ({sort.strategy})")
        try:
            return list(collect_entries(table, ordered, level=1).added)
        finally:
            spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
