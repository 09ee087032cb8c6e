"""The deletion-vector case table (``tests/fixtures/deletion_vectors``) read by both Spark
implementations of the rule, so they cannot drift: the Python anti-join on Spark's
``_metadata.row_index`` (``spark.dv_read.live_rows_frame``: DML, sort compaction, the
temp-view reads) and Java's scan on Parquet row indexes (``jvm/read/pk/LakeDvScan``: every read
through the Spark catalog). Java's copy stays for speed: it filters inside the DSv2 scan's
readers, where the Python one needs a join. Each case is one append table; its files are
written with the case's row groups and given the case's DVs."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap
from pyspark.sql import SparkSession
from tests.fixtures.deletion_vectors.cases import CASES, ROW_TYPE, DvCase

import lakeskip
from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate
from lakeskip.catalog.format.parquet_options import ParquetWriteOptions
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.spark.read.dv import live_rows_frame, read_vectors


def _create(session: Any, case: DvCase) -> None:
    catalog = session.catalog
    table = catalog.create_table(
        f"dv.{case.name}", ROW_TYPE, options={"deletion-vectors.enabled": "true"}
    )
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    entries, vectors = [], {}
    for f in case.files:
        data = f.arrow(ROW_TYPE).cast(table.schema.row_type.to_arrow())
        per_group = f.row_group_rows or max(1, data.num_rows)
        # ParquetWriteOptions turns a byte size into rows per group from the Arrow size
        block = math.ceil(per_group * data.nbytes / max(1, data.num_rows))
        entry = write_data_file(
            spec,
            data,
            (),
            table.new_data_file_name(),
            parquet_options=ParquetWriteOptions(block_size=block),
        )
        groups = pq.ParquetFile(table.data_file_path(entry)).metadata
        sizes = [groups.row_group(i).num_rows for i in range(groups.num_row_groups)]
        full, rest = divmod(data.num_rows, per_group)
        assert sizes == [per_group] * full + ([rest] if rest else []), (case.name, sizes)
        entries.append(entry)
        if f.deleted:
            vectors[entry.file.file_name] = BitMap(f.deleted)
    table.commit(entries)
    if vectors:
        table.commit(
            [],
            kind=CommitKind.OVERWRITE,
            overwrite_partitions=[],
            deletion_vectors=DeletionVectorUpdate(vectors, dict.fromkeys(vectors)),
        )
    assert len(table.deletion_files()) == len(vectors)


@pytest.fixture(scope="module")
def dv_session(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    s = lakeskip.connect(str(tmp_path_factory.mktemp("dvcases") / "wh"), spark=spark)
    s.catalog.create_database("dv")
    for case in CASES:
        _create(s, case)
    yield s


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: r[0])


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_python_anti_join(dv_session: Any, case: DvCase) -> None:
    table = dv_session.catalog.get_table(f"dv.{case.name}")
    entries = table.scan_files()
    frame = live_rows_frame(
        dv_session.spark, table, entries, read_vectors(table, entries, table.latest_snapshot())
    )
    if case.where is not None:
        frame = frame.where(case.where)
    assert _rows(frame.select("id", "v")) == list(case.expected), case.why


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_java_scan(dv_session: Any, case: DvCase) -> None:
    where = f" WHERE {case.where}" if case.where is not None else ""
    df = dv_session.spark.sql(f"SELECT id, v FROM lakeskip.dv.{case.name}{where}")
    assert _rows(df) == list(case.expected), case.why
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert ("DeletionVectors:" in plan) == any(f.deleted for f in case.files), plan
