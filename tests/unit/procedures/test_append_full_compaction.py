"""``full-compaction.delta-commits`` on fixed-bucket append tables: the full compaction of a
written bucket as Paimon's ``BucketedAppendCompactManager.FullCompactTask`` (no DVs) does it:
leading big files stay, the rest merge when they are >= 3 files, mostly small."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.option_checks import validate_options
from lakeskip.catalog.write.data_writer import DataWriter
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import InvalidOptionError
from lakeskip.procedures.compaction import compact_append_buckets, plan_append_full, rewrite_bin
from lakeskip.types import INT, STRING, RowType

ROW = RowType.of(("k", INT), ("v", STRING))
FC = "full-compaction.delta-commits"


def _table(tmp_path: Path) -> Any:
    cat = Catalog(str(tmp_path / "wh"))
    return cat.create_table("default.t", ROW, options={"bucket": "1", "bucket-key": "k", FC: "1"})


def _write(table: Any, rows: range, prefix: str) -> None:
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    data = pa.Table.from_pylist([{"k": i, "v": f"v{i}"} for i in rows], schema=ROW.to_arrow())
    table.commit(DataWriter(spec, file_prefix=prefix).write_batches([data]))


def _rows(table: Any) -> list[tuple[int, str]]:
    files = [pq.read_table(table.data_file_path(e)) for e in table.scan_files()]
    t = pa.concat_tables(files)
    return sorted(zip(t["k"].to_pylist(), t["v"].to_pylist(), strict=True))


def test_option_on_append_tables() -> None:
    """Accepted with fixed buckets (as Paimon), refused on an unaware-bucket append table
    with Paimon's reason."""
    validate_options({FC: "1", "bucket": "2", "bucket-key": "k"}, None)
    with pytest.raises(InvalidOptionError, match="needs fixed buckets on an append table"):
        validate_options({FC: "1"}, None)
    with pytest.raises(InvalidOptionError, match="needs fixed buckets on an append table"):
        validate_options({FC: "1", "bucket": "-1"}, None)


def _sized(entries: list[ManifestEntry], sizes: list[int]) -> list[ManifestEntry]:
    """``entries`` with these file sizes, written in this order (creation time)."""
    return [
        dataclasses.replace(
            e, file=dataclasses.replace(e.file, file_size=size, creation_time=1000 + i)
        )
        for i, (e, size) in enumerate(zip(entries, sizes, strict=True))
    ]


@pytest.mark.parametrize(
    ("sizes", "merged"),
    [
        ([90, 10, 10, 10], [1, 2, 3]),  # the leading big file stays
        ([10, 90, 10], [0, 1, 2]),  # a big file after a small one is rewritten too
        ([10, 90, 90], []),  # small ones do not outnumber big ones
        ([90, 10, 10], []),  # fewer than 3 files after the leading big one
        ([10, 10], []),
    ],
)
def test_plan_append_full(tmp_path: Path, sizes: list[int], merged: list[int]) -> None:
    table = _table(tmp_path)
    for i in range(len(sizes)):
        _write(table, range(i * 10, i * 10 + 10), f"w{i}")
    entries = sorted(table.refresh().scan_files(), key=lambda e: e.file.file_name)
    entries = _sized(entries, sizes)
    # target 100 bytes: a file below 70 (Paimon's compaction.small-file-ratio 0.7) is small
    bins = plan_append_full(list(reversed(entries)), 100)
    assert [[entries.index(e) for e in b] for b in bins] == ([merged] if merged else [])


def test_compact_append_buckets(tmp_path: Path) -> None:
    """Three small files of a bucket become one in a COMPACT snapshot with the same rows;
    compacting again commits nothing."""
    table = _table(tmp_path)
    for i in range(3):
        _write(table, range(i * 10, i * 10 + 10), f"w{i}")
    table = table.refresh()
    before = _rows(table)
    old, new, snapshot_id = compact_append_buckets(
        table, table.scan_files(), lambda tasks: [rewrite_bin(t) for t in tasks]
    )
    assert (len(old), len(new)) == (3, 1) and snapshot_id is not None
    table = table.refresh()
    assert table.snapshot(snapshot_id).commit_kind == CommitKind.COMPACT
    assert [e.file.file_name for e in table.scan_files()] == [new[0].file.file_name]
    assert _rows(table) == before
    assert compact_append_buckets(table, table.scan_files(), lambda tasks: []) == ([], [], None)
