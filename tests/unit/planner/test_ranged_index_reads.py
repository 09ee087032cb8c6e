"""``.index`` files are read by range: the header and the sections the predicate uses.

Bytes are counted where they are read (``FileIO.read_range``), not taken from the planner's
own report; the report's ``index_bytes_read`` must agree. A corrupt header or a section cut
short keeps the file and warns.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest

from lakeskip import types as T
from lakeskip.catalog.cache import MetadataCache
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import LakeskipWarning
from lakeskip.expressions import EqualTo
from lakeskip.index.format import FileIndexContainer
from lakeskip.planner.scan import ScanPlanner

FILES = 6
ROWS = 4000


def _table(tmp: Path) -> Any:
    """``id`` has a bloom filter, ``v`` a bitmap and a range-bitmap, ``k`` a range-bitmap;
    every file holds ids 0..ROWS-1 shuffled by file (stats cannot prune ``id``)."""
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    rt = T.RowType.of(("id", T.BIGINT), ("v", T.INT), ("k", T.BIGINT))
    options = {
        "file-index.bloom-filter.columns": "id",
        "file-index.bloom-filter.id.items": str(ROWS),
        "file-index.bitmap.columns": "v",
        "file-index.range-bitmap.columns": "v,k",
        "file-index.in-manifest-threshold": "1 b",
    }
    table = cat.create_table("db.t", rt, options=options)
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    entries = []
    for f in range(FILES):
        # file f holds the even ids of 0..2*ROWS, plus the odd id 2*f+1 (a bloom finds it)
        ids = [*range(0, 2 * ROWS - 2, 2), 2 * f + 1]
        t = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "v": pa.array([i % 97 for i in ids], pa.int32()),
                "k": pa.array([i * 7919 % 100003 for i in ids], pa.int64()),
            }
        )
        entries.append(write_data_file(spec, t, (), f"data-{f}.parquet"))
    table.commit(entries)
    return cat.get_table("db.t")


def _bloom_bytes(table: Any, e: Any) -> int:
    path = f"{table.data_file_dir(e)}/{e.file.index_file_name}"
    c = FileIndexContainer.decode(table.file_io.read_bytes(path))
    assert set(c.columns()) == {"id", "v", "k"}, "the container holds every index"
    return sum(x.length for x in c.entries if x.column == "id")


def test_a_bloom_lookup_reads_the_bloom_sections_only(tmp_path: Path) -> None:
    table = _table(tmp_path)
    bloom = sum(_bloom_bytes(table, e) for e in table.scan_files())
    total = sum(
        len(table.file_io.read_bytes(f"{table.data_file_dir(e)}/{e.file.index_file_name}"))
        for e in table.scan_files()
    )
    read: list[int] = []
    original = FileIO.read_range

    def counting(self: FileIO, path: str, offset: int, length: int) -> bytes:
        data = original(self, path, offset, length)
        read.append(len(data))
        return data

    with mock.patch.object(FileIO, "read_range", counting):
        plan = ScanPlanner(table, cache=MetadataCache(2**28)).plan(EqualTo("id", 7))
    assert [d.entry.file.file_name for d in plan.decisions if d.keep] == ["data-3.parquet"], (
        "id 7 = 2*3+1 is only in file 3: the blooms skip the other five"
    )
    assert plan.report.index_files_read == FILES
    assert sum(read) <= 1.2 * bloom, (
        f"read {sum(read)} index bytes for {bloom} bytes of bloom sections "
        f"(whole containers: {total})"
    )
    assert plan.report.index_bytes_read == sum(read)
    assert len(read) <= 2 * FILES, "a read for the header, one for the adjacent sections"


def test_later_queries_fetch_only_the_sections_they_lack(tmp_path: Path) -> None:
    table = _table(tmp_path)
    planner = ScanPlanner(table, cache=MetadataCache(2**28))
    reads: list[tuple[str, int, int]] = []
    original = FileIO.read_range

    def counting(self: FileIO, path: str, offset: int, length: int) -> bytes:
        reads.append((path, offset, length))
        return original(self, path, offset, length)

    with mock.patch.object(FileIO, "read_range", counting):
        planner.plan(EqualTo("id", 9))
        first = len(reads)
        planner.plan(EqualTo("id", 11))  # same sections: nothing read
        assert len(reads) == first, "the bloom sections are cached"
        planner.plan(EqualTo("v", 1000))  # outside no file's stats? v < 97: stats skip
        planner.plan(EqualTo("k", 5))  # k's sections: one more read per file evaluated
        assert 0 < len(reads) - first <= FILES
        assert {off for _, off, _ in reads[first:]}.isdisjoint({0}), "no header read again"


@pytest.mark.parametrize("damage", ["header", "section"])
def test_a_corrupt_index_keeps_the_file_and_warns(tmp_path: Path, damage: str) -> None:
    table = _table(tmp_path)
    e = table.scan_files()[0]
    path = f"{table.data_file_dir(e)}/{e.file.index_file_name}"
    data = table.file_io.read_bytes(path)
    c = FileIndexContainer.decode(data)
    if damage == "header":
        bad = b"garbage" + data[7:]
    else:  # cut inside the bloom section
        (bloom,) = [x for x in c.entries if x.column == "id"]
        bad = data[: bloom.start + bloom.length // 2]
    table.file_io.write_bytes(path, bad)
    with pytest.warns(LakeskipWarning, match="unusable"):
        plan = ScanPlanner(table, cache=MetadataCache(2**28)).plan(EqualTo("id", 7))
    kept = {d.entry.file.file_name for d in plan.decisions if d.keep}
    assert kept == {e.file.file_name, "data-3.parquet"}, "the damaged file is kept"


@pytest.mark.parametrize("local", [True, False])
def test_local_index_files_are_read_on_the_planning_thread(tmp_path: Path, local: bool) -> None:
    """Local ranges come from the page cache: read in turn on the planning thread (threads
    only added their start and hand-offs); a remote file system's in parallel threads.
    Either way the same files are kept."""
    table = _table(tmp_path)
    threads: list[int] = []
    original = FileIO.read_range

    def recording(self: FileIO, path: str, offset: int, length: int) -> bytes:
        threads.append(threading.get_ident())
        if not local:  # a remote read takes a round trip: long enough that reads overlap
            time.sleep(0.02)
        return original(self, path, offset, length)

    with (
        mock.patch.object(FileIO, "read_range", recording),
        mock.patch.object(FileIO, "is_local", local),
    ):
        plan = ScanPlanner(table, cache=MetadataCache(2**28)).plan(EqualTo("id", 7))
    assert [d.entry.file.file_name for d in plan.decisions if d.keep] == ["data-3.parquet"]
    assert plan.report.index_files_read == FILES and len(threads) >= FILES
    here = threading.get_ident()
    if local:
        assert set(threads) == {here}
    else:
        assert here not in threads and len(set(threads)) > 1
