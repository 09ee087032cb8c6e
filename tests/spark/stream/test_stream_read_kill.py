"""Exactly once for streaming reads across crashes, with a concurrent writer: a driver process
runs ``spark.readStream.table`` of an append table and of a primary-key table with deletion
vectors into two lakeskip tables while this process (the other application) keeps committing
to the sources; the driver is killed with ``kill -9`` (its whole process group) twice
mid-stream and restarted from its checkpoints, then drained once the writer stopped. The
append copy holds every committed row exactly once; the primary-key copy holds the latest
version of every key (Paimon's changelog-producer none: each micro-batch after the first
delivers one write's upserted versions, applied in order), and no micro-batch committed to
its copy twice. Oracle: the rows this process wrote."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lakeskip.catalog import Catalog
from lakeskip.catalog.format.snapshot import BATCH_COMMIT_IDENTIFIER

pytestmark = pytest.mark.slow  # three Spark drivers beside a writing one: minutes (make fuzz)

DRIVER = Path(__file__).resolve().parents[2] / "stream_read_driver.py"
PAIRS = ("src_ev:out_ev", "src_pk:out_pk")
#: kill the reading driver once the append copy has this many micro-batches committed
KILL_AT = (3, 7)
#: the writer commits at least this many times to each source
MIN_WRITES = 12
PHASE_SECONDS = 400.0


def _batches(warehouse: Path, table: str) -> list[int]:
    """The commit identifiers of a copy's streaming snapshots (Spark-free)."""
    try:
        t = Catalog(str(warehouse)).get_table(f"db.{table}")
        return [
            s.commit_identifier
            for s in t.list_snapshots()
            if s.commit_identifier != BATCH_COMMIT_IDENTIFIER
        ]
    except Exception:  # a snapshot being published as we list: ask again
        return []


def _driver(warehouse: Path, root: Path, mode: str, log: Path) -> subprocess.Popen[bytes]:
    out = log.open("ab")
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(warehouse), str(root / "ck"), mode, *PAIRS],
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: kill -9 reaches the JVM too
    )


class _Writer(threading.Thread):
    """The other application: commits to both sources until told to stop (at least
    ``MIN_WRITES`` times), recording what it committed."""

    def __init__(self, spark: Any) -> None:
        super().__init__(daemon=True)
        self.spark = spark
        self.stop = threading.Event()
        self.appended: list[int] = []
        self.latest: dict[int, tuple[int, str, int]] = {}
        self.writes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            w = 0
            while not self.stop.is_set() or w < MIN_WRITES:
                ev = [(w * 100 + i, f"c{i % 5}", float(w)) for i in range(10)]
                self.spark.createDataFrame(ev, "id BIGINT, cat STRING, v DOUBLE").writeTo(
                    "lakeskip.db.src_ev"
                ).append()
                self.appended += [r[0] for r in ev]
                # distinct keys within a write; keys written again by later writes
                pk = [((w * 7 + i) % 30, f"w{w}-{i}", w) for i in range(6)]
                self.spark.createDataFrame(pk, "id BIGINT, v STRING, n INT").writeTo(
                    "lakeskip.db.src_pk"
                ).append()
                self.latest.update({r[0]: r for r in pk})
                w += 1
                self.writes = w
                time.sleep(0.3)
        except BaseException as e:  # re-raised by the test
            self.error = e


def _wait_for(
    proc: subprocess.Popen[bytes], warehouse: Path, batches: int, log: Path, writer: _Writer
) -> None:
    deadline = time.monotonic() + PHASE_SECONDS
    while len(_batches(warehouse, "out_ev")) < batches:
        assert proc.poll() is None, f"the driver exited early: {log.read_text()[-2000:]}"
        assert writer.error is None, f"the writer failed: {writer.error!r}"
        assert time.monotonic() < deadline, f"no progress: {log.read_text()[-2000:]}"
        time.sleep(0.2)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_stream_read_killed_twice_with_a_concurrent_writer_delivers_every_row_once(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    warehouse = tmp_path / "warehouse"  # the session fixture's catalog
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    for name in ("src_ev", "out_ev"):
        spark.sql(f"CREATE TABLE lakeskip.db.{name} (id BIGINT, cat STRING, v DOUBLE)")
    for name in ("src_pk", "out_pk"):
        spark.sql(
            f"CREATE TABLE lakeskip.db.{name} (id BIGINT, v STRING, n INT) TBLPROPERTIES "
            "('primary-key' = 'id', 'bucket' = '2', 'deletion-vectors.enabled' = 'true')"
        )
    writer = _Writer(spark)
    writer.start()
    log = tmp_path / "driver.log"
    kills = []  # (copy batches, writer's writes) when each kill fell
    try:
        for kill_at in KILL_AT:
            proc = _driver(warehouse, tmp_path, "run", log)
            try:
                _wait_for(proc, warehouse, kill_at, log, writer)
            finally:
                _kill(proc)
            kills.append((len(_batches(warehouse, "out_ev")), writer.writes))
        # commits the reader, down now, will find when it restarts
        deadline = time.monotonic() + PHASE_SECONDS
        while writer.writes < kills[-1][1] + 2 and writer.error is None:
            assert time.monotonic() < deadline, "the writer made no progress"
            time.sleep(0.2)
    finally:
        writer.stop.set()
        writer.join(timeout=PHASE_SECONDS)
    assert writer.error is None, f"the writer failed: {writer.error!r}"
    assert not writer.is_alive()
    # the writer kept committing while the reader was down and up again
    assert kills[0][1] < kills[1][1] < writer.writes, (kills, writer.writes)
    drain = _driver(warehouse, tmp_path, "drain", log)
    try:
        assert drain.wait(timeout=PHASE_SECONDS) == 0, log.read_text()[-3000:]
    finally:
        if drain.poll() is None:
            _kill(drain)
    for src, out in (p.split(":") for p in PAIRS):
        ids = _batches(warehouse, out)
        ck = tmp_path / "ck" / src / "commits"
        finished = sorted(int(p.name) for p in ck.iterdir() if p.name.isdigit())
        # a micro-batch whose snapshots added no rows (the sources' COMPACT snapshots)
        # commits nothing: at most one snapshot per micro-batch of the checkpoint
        assert finished == list(range(len(finished))), finished
        assert len(set(ids)) == len(ids) and set(ids) <= set(finished), (
            f"{out}: at most one snapshot per micro-batch of the checkpoint, none twice: "
            f"snapshots {ids}, checkpoint {finished}"
        )
    spark.sql("REFRESH TABLE lakeskip.db.out_ev")
    got = sorted(r[0] for r in spark.sql("SELECT id FROM lakeskip.db.out_ev").collect())
    assert got == sorted(writer.appended), (
        f"every committed row once: {len(got)} rows for {len(writer.appended)}"
    )
    spark.sql("REFRESH TABLE lakeskip.db.out_pk")
    pk = sorted(tuple(r) for r in spark.sql("SELECT id, v, n FROM lakeskip.db.out_pk").collect())
    assert pk == sorted(writer.latest.values()), "the latest version of every key, once"
    print(f"kills at (copy batches, writes): {kills}; writes {writer.writes}")
