"""Concurrent committers on an S3 API (moto's server on 127.0.0.1): with conditional writes
(``PUT If-None-Match``, through obstore) every commit lands exactly once and snapshot ids are
contiguous; with them switched off a shorter run loses commits (so the test can fail).

``make test-s3`` runs it (marker ``s3``): four writer processes racing through moto, a minute
of CPU; it needs no Spark (its own moto server, not the Spark session's)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from tests.moto_server import moto_s3

from lakeskip.catalog import Catalog, FileKind, ManifestEntry, collect_stats, make_data_file_meta
from lakeskip.types import BIGINT, INT, RowType

pytestmark = pytest.mark.s3

WRITERS = 4
#: commits per writer with conditional writes: every one must land
COMMITS = 25
#: without them: enough races for some to be lost (each round, all writers publish at once)
COMMITS_LOST = 8
ROWS = 2
BUCKET = "lakeskip-wh"
ROW = RowType.of(("id", BIGINT), ("writer", INT))


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_s3(BUCKET) as url:
        yield url


def _catalog(endpoint: str, warehouse: str) -> Catalog:
    fs = pafs.S3FileSystem(
        access_key="test",
        secret_key="test",
        region="us-east-1",
        endpoint_override=endpoint,
        scheme="http",
    )
    return Catalog(f"s3://{BUCKET}/{warehouse}", filesystem=fs)


def _writer(
    endpoint: str, warehouse: str, writer: int, barrier: Any, conditional: bool, commits: int
) -> None:
    os.environ["LAKESKIP_CONDITIONAL_WRITES"] = "true" if conditional else "false"
    table = _catalog(endpoint, warehouse).get_table("db.t")
    for c in range(commits):
        base = (writer * commits + c) * ROWS
        data = pa.table(
            {"id": list(range(base, base + ROWS)), "writer": [writer] * ROWS},
            schema=ROW.to_arrow(),
        )
        name = table.new_data_file_name()
        path = f"{table.path}/{table.partition_path(())}/{name}"
        with table.file_io.open_output(path) as out:
            pq.write_table(data, out)
        stats, cols = collect_stats(data, ROW, "full")
        meta = make_data_file_meta(
            name, table.file_io.file_size(path), ROWS, stats, cols, table.schema.id, None, ()
        )
        barrier.wait(60)  # every writer publishes at once: the race for each snapshot id
        table.commit([ManifestEntry(FileKind.ADD, (), 0, -1, meta)])


def _run(
    endpoint: str, warehouse: str, conditional: bool, commits: int
) -> tuple[list[int], list[int]]:
    catalog = _catalog(endpoint, warehouse)
    catalog.create_database("db")
    catalog.create_table("db.t", ROW, options={"commit.min-retry-wait": "5 ms"})
    # spawn: obstore's runtime threads (used by create_table here) do not survive a fork
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    procs = [
        ctx.Process(target=_writer, args=(endpoint, warehouse, w, barrier, conditional, commits))
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0] * WRITERS, "every writer finished"
    table = catalog.get_table("db.t")
    ids = [s.id for s in table.list_snapshots()]
    rows: list[int] = []
    for e in table.scan_files():
        with table.file_io.open_input(table.data_file_path(e)) as f:
            rows += pq.read_table(f).column("id").to_pylist()
    return ids, sorted(rows)


def test_conditional_writes_keep_every_commit(endpoint: str) -> None:
    ids, rows = _run(endpoint, "on", conditional=True, commits=COMMITS)
    assert ids == list(range(1, WRITERS * COMMITS + 1)), "one snapshot per commit, contiguous"
    assert rows == list(range(WRITERS * COMMITS * ROWS)), "every commit's rows, exactly once"


def test_without_conditional_writes_commits_are_lost(endpoint: str) -> None:
    ids, rows = _run(endpoint, "off", conditional=False, commits=COMMITS_LOST)
    lost = WRITERS * COMMITS_LOST * ROWS - len(rows)
    assert lost > 0, "check-then-write lets two writers publish the same snapshot id"
    assert len(ids) < WRITERS * COMMITS_LOST
