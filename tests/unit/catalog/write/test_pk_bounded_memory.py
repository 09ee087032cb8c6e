"""Deletion-vector and first-row primary-key writes in bounded memory (issue 32): a bucket of
many times ``write-buffer-size`` is written, looked up, merged with universal compaction's
picked runs and streamed to Parquet while the process's Arrow memory pool and Python heap
(tracemalloc: numpy and Python objects) stay within a multiple of the buffer.

The write runs in a fresh subprocess so the Arrow pool's peak (``max_memory``, which cannot
be reset) is that of the writes alone. Four probes of 200,000 to 800,000 rows take minutes of
CPU, so the module is ``slow``: ``make fuzz`` (and so ``.ci/run``) runs it, ``make test`` does
not; the same streamed write at small sizes is in ``test_pk_dv_write.py`` and
``test_sort_buffer.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from tests.pk_tables import write_pk_dv

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.table import FileStoreTable
from lakeskip.types import BIGINT, STRING, RowType

pytestmark = pytest.mark.slow

ROW = RowType.of(("k", BIGINT), ("v", STRING))
BUFFER = 1 << 20  # write-buffer-size of the probe's table
BATCH = 8192  # rows per input batch (Spark sends 10,000)


def _batches(keys: range, tag: str) -> Iterator[pa.Table]:
    for start in range(0, len(keys), BATCH):
        ks = keys[start : start + BATCH]
        yield pa.table(
            {"k": pa.array(ks, pa.int64()), "v": pa.array([f"{tag}-{k:012d}" for k in ks])},
            schema=ROW.to_arrow(),
        )


def _write(table: FileStoreTable, batches: Iterator[pa.Table]) -> dict[str, int]:
    writer = write_pk_dv(table.refresh(), batches)
    return {"files": len(writer.written)}


def _statements(rows: int) -> list[tuple[range, str]]:
    """The probe's writes: the top level; levels 4, 3, 2 (a few keys each, one of them new,
    so a first-row table writes them too); level 1 (half the keys and some new ones); then
    a quarter of the keys and a quarter new ones, which merge with universal compaction's
    pick (level 1 at least)."""
    return [
        (range(rows), "a"),
        *[(range(i, rows + rows // 7, rows // 7), f"s{i}") for i in range(3)],
        (range(0, rows + rows // 8, 2), "b"),
        (range(rows // 2, rows + rows // 4), "c"),
    ]


def probe(warehouse: str, engine: str, rows: int) -> dict[str, Any]:
    """Write a bucket of ``rows`` keys, then upserts that take it through every level and
    the merge with universal compaction's pick; the peaks of the Arrow pool and of
    tracemalloc, and the live rows by the manifest (row counts minus DVs)."""
    pool = pa.default_memory_pool()
    tracemalloc.start()
    base_arrow = pool.max_memory()
    cat = Catalog(warehouse)
    options = {
        "primary-key": "k",
        "bucket": "1",
        "write-buffer-size": str(BUFFER),
        "target-file-size": str(BUFFER // 2),
        # a row group's Arrow rows are held until written: at most this many bytes
        "parquet.block.size": str(BUFFER // 2),
    }
    # both are read raw (no merge), so written through the same lookup
    if engine == "first-row":
        options["merge-engine"] = "first-row"
    else:
        options["deletion-vectors.enabled"] = "true"
    table = cat.create_table("default.t", ROW, options=options)
    started = time.perf_counter()
    for keys, tag in _statements(rows):
        _write(table, _batches(keys, tag))
    seconds = time.perf_counter() - started
    _, py_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    table = table.refresh()
    refs = table.deletion_files()
    live = 0
    levels = []
    for e in table.scan_files():
        ref = refs.get(e.file.file_name)
        dead = len(table.read_deletion_vector(ref, e.file.row_count)) if ref is not None else 0
        live += e.file.row_count - dead
        levels.append(e.file.level)
    return {
        "arrow_peak": pool.max_memory() - base_arrow,
        "python_peak": py_peak,
        "live": live,
        "levels": sorted(set(levels)),
        "files": len(levels),
        "seconds": round(seconds, 1),
        "pool": pool.backend_name,
    }


def _run_probe(tmp_path: Path, engine: str, rows: int) -> dict[str, Any]:
    code = (
        "import json, sys; from tests.unit.catalog.write.test_pk_bounded_memory import probe; "
        f"print(json.dumps(probe({str(tmp_path / 'wh')!r}, {engine!r}, {rows})))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1200
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
def test_dv_bucket_of_many_buffers_stays_within_a_few_buffers(tmp_path: Path, engine: str) -> None:
    rows = 400_000  # ~13 MB of Arrow rows per full write: 13 times the buffer
    got = _run_probe(tmp_path, engine, rows)
    print(engine, got)  # the figures, for the report (pytest -s)
    assert got["live"] == len({k for keys, _ in _statements(rows) for k in keys})  # once each
    assert 1 in got["levels"] or 0 not in got["levels"]
    # the buffer, the spool (half a buffer), one read batch per merged file, the row group
    # being written (parquet.block.size: half the buffer) and Parquet's page buffers; the
    # bucket's rows (13 buffers) are never held (before the streamed write: 33 MB)
    assert got["arrow_peak"] < 6 * BUFFER, got
    assert got["python_peak"] < 3 * BUFFER, got


def test_the_peak_does_not_grow_with_the_bucket(tmp_path: Path) -> None:
    """Four times the rows (four times the files per level) and the same peak: a sorted
    run's files are opened one after the other, not all at once."""
    small = _run_probe(tmp_path / "small", "deduplicate", 200_000)
    big = _run_probe(tmp_path / "big", "deduplicate", 800_000)
    print(small, big)
    assert big["files"] > small["files"]
    assert big["arrow_peak"] < small["arrow_peak"] + BUFFER, (small, big)
