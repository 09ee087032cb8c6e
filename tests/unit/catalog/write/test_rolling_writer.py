"""Data files streamed to Parquet (:class:`~lakeskip.catalog.write.rolling_writer.RollingWriter`):
stats and file indexes built batch by batch equal those of the whole file, files roll at
``target-file-size``, a NaN that arrives after a file's Parquet statistics were set starts a
new file, and no row group outgrows the Parquet bloom filter sized by the first."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.stats import StatsCollector, collect_stats
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.rolling_writer import RollingWriter
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.index.file_index import build_file_index
from lakeskip.index.options import parse_file_index_options
from lakeskip.types import BIGINT, DOUBLE, STRING, RowType

from ..format.test_stats import RT, rows_strategy

ROW = RowType.of(("id", BIGINT), ("s", STRING), ("d", DOUBLE))


@settings(max_examples=unit_examples(60), deadline=None)
@given(
    rows=rows_strategy,
    cuts=st.lists(st.integers(0, 40), max_size=4),
    mode=st.sampled_from(["full", "truncate(3)", "counts", "none"]),
    nan=st.booleans(),
)
def test_stats_of_batches_equal_stats_of_the_whole(
    rows: list[dict[str, Any]], cuts: list[int], mode: str, nan: bool
) -> None:
    if nan:
        rows = [*rows, {**rows[0], "d": math.nan}]
    table = pa.Table.from_pylist(rows, schema=RT.to_arrow())
    collector = StatsCollector(RT, mode)
    edges = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    for lo, hi in itertools.pairwise(edges):
        collector.add(table.slice(lo, hi - lo))
    assert collector.result() == collect_stats(table, RT, mode)


def _table(tmp_path: Path, **options: str) -> FileStoreTable:
    return Catalog(str(tmp_path / "wh")).create_table("default.t", ROW, options=options)


def _stream(table: FileStoreTable, batches: list[pa.Table]) -> list[ManifestEntry]:
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    names = (f"data-r-{i}.parquet" for i in itertools.count())
    writer = RollingWriter(spec, (), 0, -1, lambda: next(names))
    for b in batches:
        writer.write(b)
    return writer.close()


def _rows(start: int, n: int, nan_at: int | None = None) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "s": [f"value-{i % 97:03d}-{i}" for i in range(start, start + n)],
            "d": [math.nan if i == nan_at else float(i % 13) for i in range(start, start + n)],
        },
        schema=ROW.to_arrow(),
    )


def test_files_roll_at_the_target_size_with_the_stats_and_index_of_their_rows(
    tmp_path: Path,
) -> None:
    table = _table(
        tmp_path,
        **{
            "target-file-size": "64 kb",
            "file-index.bloom-filter.columns": "id,s",
            "file-index.bitmap.columns": "d",
        },
    )
    batches = [_rows(i * 1000, 1000) for i in range(60)]
    entries = _stream(table, batches)
    assert len(entries) >= 3  # ~190 kB of Parquet
    ids: list[int] = []
    index_options = parse_file_index_options(table.schema.options, ROW)
    for e in entries:
        path = f"{table.path}/bucket-0/{e.file.file_name}"
        data = pq.read_table(path)
        assert e.file.row_count == data.num_rows
        assert e.file.file_size <= 2 * 64 * 1024  # the target and one row group's overshoot
        stats, _ = collect_stats(data, ROW)
        assert e.file.value_stats == stats
        assert e.file.embedded_index == build_file_index(data, ROW, index_options).embedded
        ids += data["id"].to_pylist()
    assert ids == list(range(60_000))


def test_a_nan_after_the_statistics_were_set_starts_a_new_file(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"target-file-size": "1 mb", "parquet.block.size": "20480"})
    entries = _stream(table, [_rows(i * 500, 500, nan_at=3300) for i in range(12)])
    assert len(entries) == 2  # rolled at the NaN, not at the size
    for e in entries:
        f = pq.ParquetFile(f"{table.path}/bucket-0/{e.file.file_name}")
        holds_nan = any(math.isnan(x) for x in f.read(columns=["d"])["d"].to_pylist())
        for g in range(f.metadata.num_row_groups):
            column = f.metadata.row_group(g).column(2)
            assert column.path_in_schema == "d"
            assert column.is_stats_set != holds_nan  # no NaN-less min/max where NaN is


def test_no_row_group_outgrows_the_first(tmp_path: Path) -> None:
    """The Parquet bloom filter is sized by the first row group's rows: later ones (rows of
    other widths) are cut at that count."""
    table = _table(
        tmp_path,
        **{
            "target-file-size": "8 mb",
            "parquet.block.size": "40960",
            "parquet.bloom.filter.enabled#id": "true",
        },
    )
    wide = _rows(0, 3000)
    narrow = pa.table(
        {"id": pa.array(range(3000, 40_000), pa.int64()), "s": [""] * 37_000, "d": [1.0] * 37_000},
        schema=ROW.to_arrow(),
    )
    (e,) = _stream(table, [wide, narrow])
    meta = pq.ParquetFile(f"{table.path}/bucket-0/{e.file.file_name}").metadata
    groups = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    assert len(groups) > 2 and max(groups) == groups[0], groups
