"""Reading data files through their deletion vectors, as DataFrames (Spark tasks).

Every lakeskip read that goes through a DataFrame over data files (DELETE/UPDATE's condition
scan, sort compaction) uses :func:`live_rows_frame`: Spark's Parquet source with each row's
data file name and position (``_metadata.file_name``, ``_metadata.row_index``), minus the
positions the files' DVs hold (a broadcast anti-join on ``(file, position)``). The DVs are read
and checked on the driver (they are metadata: one bitmap per file); a corrupt one fails the
statement (:class:`~lakeskip.errors.CorruptDeletionVectorError`), it is never ignored.

The Spark catalog scan applies DVs in Java instead (``jvm/read/pk/LakeDvScan``), with the same
positions (Spark's Parquet row index).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyroaring import BitMap
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeskip.catalog.field_mapping import reads_by_name
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.format.stats import unpushable_columns
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import CorruptMetadataError
from lakeskip.types import Field, RowType, TypeRoot, quote_identifier

__all__ = [
    "FILE_COLUMN",
    "POS_COLUMN",
    "DeletionVectors",
    "by_id_column",
    "files_frame_by_id",
    "files_read_by_name",
    "live_rows_frame",
    "pushdown_safe_frame",
    "read_vectors",
    "spark_path",
    "table_file_paths",
    "view_over_files",
]

FILE_COLUMN = "__lakeskip_file"
POS_COLUMN = "__lakeskip_pos"


@dataclass(frozen=True, slots=True)
class DeletionVectors:
    """The DVs of some data files in one snapshot.

    Attributes:
        vectors: data file name -> deleted positions.
        base: data file name -> index file holding its DV (the commit's conflict check).
    """

    vectors: Mapping[str, BitMap]
    base: Mapping[str, str]

    def live_rows(self, entry: ManifestEntry) -> int:
        bm = self.vectors.get(entry.file.file_name)
        return entry.file.row_count - (len(bm) if bm is not None else 0)


def spark_path(path: str) -> str:
    """A path Spark's Hadoop filesystem understands (local paths become ``file://``)."""
    if "://" in path:
        return path
    return "file://" + path if path.startswith("/") else path


def table_file_paths(table: FileStoreTable, entries: Sequence[ManifestEntry]) -> list[str]:
    """Spark-readable URIs of the entries' data files."""
    return [spark_path(table.file_io.uri(table.data_file_path(e))) for e in entries]


def view_over_files(spark: SparkSession, row_type: RowType, paths: Sequence[str]) -> DataFrame:
    """A DataFrame over exactly these Parquet files with the table's schema."""
    reader = spark.read.schema(row_type.spark_ddl())
    return reader.parquet(*[spark_path(p) for p in paths])


def pushdown_safe_frame(
    df: DataFrame, table: FileStoreTable, entries: Sequence[ManifestEntry]
) -> DataFrame:
    """``df`` (the rows of ``entries``) with every column whose Parquet statistics,
    dictionaries or bloom filters Spark's pushed filters may misread in these files
    (:func:`~lakeskip.catalog.format.stats.unpushable_columns`: NaN and signed zeros in
    FLOAT/DOUBLE, millisecond TIMESTAMP_LTZ) hidden from Spark's Parquet filter pushdown
    behind an identity -- ``nanvl(c, c)`` (NaN, NULL and -0.0 kept as they are),
    ``timestamp_micros(unix_micros(c))`` -- that is no longer a bare column, so no filter
    on it reaches the files (issue 26). Spark still applies every filter to the rows."""
    unsafe = unpushable_columns(entries, table.schema, table.schema_by_id)
    if not unsafe:
        return df
    row_type = table.schema.row_type

    def hidden(name: str) -> Column:
        c = F.col(quote_identifier(name))
        if row_type.field(name).type.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            return F.nanvl(c, c).alias(name)
        return F.timestamp_micros(F.unix_micros(c)).alias(name)

    return df.select(
        *[hidden(c) if c in unsafe else F.col(quote_identifier(c)) for c in df.columns]
    )


def read_vectors(
    table: FileStoreTable, entries: Sequence[ManifestEntry], snapshot: Snapshot | None
) -> DeletionVectors:
    """Read and check the DVs of ``entries`` (raises CorruptDeletionVectorError)."""
    refs = table.deletion_files(snapshot) if snapshot is not None else {}
    vectors: dict[str, BitMap] = {}
    base: dict[str, str] = {}
    for e in entries:
        ref = refs.get(e.file.file_name)
        if ref is not None:
            vectors[e.file.file_name] = table.read_deletion_vector(ref, e.file.row_count)
            base[e.file.file_name] = ref.index_file
    return DeletionVectors(vectors, base)


def _deleted_frame(spark: SparkSession, vectors: Mapping[str, BitMap]) -> DataFrame:
    names: list[np.ndarray] = []
    positions: list[np.ndarray] = []
    for name, bm in vectors.items():
        pos = np.frombuffer(bm.to_array(), dtype=np.uint32).astype(np.int64)
        positions.append(pos)
        names.append(np.full(len(pos), name, dtype=object))
    table = pa.table(
        {
            FILE_COLUMN: pa.array(np.concatenate(names) if names else [], type=pa.string()),
            POS_COLUMN: pa.array(
                np.concatenate(positions) if positions else np.zeros(0, np.int64), pa.int64()
            ),
        }
    )
    return spark.createDataFrame(table)


def files_read_by_name(table: FileStoreTable) -> bool:
    """Whether a file of any schema version of ``table`` reads right by column name under its
    current schema (:func:`~lakeskip.catalog.field_mapping.reads_by_name`); from the
    schema files alone (cached per table), no manifest read."""
    current = table.schema
    for i in range(current.id):  # ids count up from 0; a table never altered has none
        try:
            older = table.schema_by_id(i)
        except CorruptMetadataError:
            continue  # a gap: no file can name a schema that does not exist
        if not reads_by_name(older.row_type, current.row_type):
            return False
    return True


def files_frame_by_id(
    spark: SparkSession,
    table: FileStoreTable,
    entries: Sequence[ManifestEntry],
    metadata: Mapping[str, str] | None = None,
) -> DataFrame:
    """Exactly these files' rows under the table's current schema, their columns matched by
    field id (Paimon's schema evolution): a file written under an older schema has its
    renamed columns under their new names, its widened columns cast, the columns added since
    as NULL and the dropped ones gone. Files whose schema reads right by name
    (:func:`~lakeskip.catalog.field_mapping.reads_by_name`) are read as one plain
    Parquet scan; each other schema version is read with its own names and projected.

    Args:
        metadata: output name -> a ``_metadata`` field of Spark's file source (``file_name``,
            ``row_index``), added after the table's columns.
    """
    row_type = table.schema.row_type
    extra = [F.col(f"_metadata.{src}").alias(name) for name, src in (metadata or {}).items()]
    groups: dict[int, list[ManifestEntry]] = {}
    for e in entries:
        groups.setdefault(e.file.schema_id, []).append(e)
    plain: list[ManifestEntry] = []
    evolved: list[tuple[RowType, list[ManifestEntry]]] = []
    for schema_id, group in groups.items():
        file_type = row_type if schema_id == table.schema.id else None
        if file_type is None:
            file_type = table.schema_by_id(schema_id).row_type
        if reads_by_name(file_type, row_type):
            plain.extend(group)
        else:
            evolved.append((file_type, group))
    frames: list[DataFrame] = []
    if plain or not evolved:
        df = view_over_files(spark, row_type, table_file_paths(table, plain))
        frames.append(df.select("*", *extra) if extra else df)
    for file_type, group in evolved:
        by_id = {f.id: f for f in file_type}
        stored = RowType(tuple(by_id[f.id] for f in row_type if f.id in by_id))
        df = view_over_files(spark, stored, table_file_paths(table, group))
        columns = [by_id_column(by_id.get(f.id), f, None).alias(f.name) for f in row_type]
        frames.append(df.select(*columns, *extra))
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def by_id_column(stored: Field | None, now: Field, parent: Column | None) -> Column:
    """The column ``now`` of the current schema from the file's field of its id (``stored``;
    None: the file predates the column, so NULL)."""
    target = now.type.with_nullable(True)
    if stored is None:
        return F.lit(None).cast(target.spark_ddl())
    col = F.col(quote_identifier(stored.name)) if parent is None else parent.getField(stored.name)
    if stored.type.root is TypeRoot.ROW and target.root is TypeRoot.ROW:
        inner = {f.id: f for f in stored.type.row_fields}
        fields = [by_id_column(inner.get(f.id), f, col).alias(f.name) for f in target.row_fields]
        return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    if stored.type.with_nullable(True) == target:
        return col
    return col.cast(target.spark_ddl())


def live_rows_frame(
    spark: SparkSession,
    table: FileStoreTable,
    entries: Sequence[ManifestEntry],
    dvs: DeletionVectors,
    *,
    with_position: bool = False,
) -> DataFrame:
    """The live rows of exactly these files with the table's schema; ``with_position`` adds
    each row's data file name (``FILE_COLUMN``) and position (``POS_COLUMN``)."""
    wanted = {e.file.file_name for e in entries}
    vectors = {n: bm for n, bm in dvs.vectors.items() if n in wanted and len(bm)}
    if not with_position and not vectors:
        return pushdown_safe_frame(files_frame_by_id(spark, table, entries), table, entries)
    df = files_frame_by_id(
        spark, table, entries, {FILE_COLUMN: "file_name", POS_COLUMN: "row_index"}
    )
    columns = table.schema.row_type.names
    if vectors:
        df = df.join(
            F.broadcast(_deleted_frame(spark, vectors)), [FILE_COLUMN, POS_COLUMN], "left_anti"
        )
    if not with_position:
        df = df.select(*[F.col(quote_identifier(c)) for c in columns])
    return pushdown_safe_frame(df, table, entries)
