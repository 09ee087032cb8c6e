"""Exactly once across crashes: two streaming queries (a JSON file source, one file per
micro-batch, 24 batches each) into an append table and into a primary-key table with
deletion vectors run in a driver process that is killed with ``kill -9`` (its whole process
group: Python, the JVM, the Python workers) twice mid-stream and restarted from its
checkpoints, then drained. Every input row is in the append table exactly once, the
primary-key table holds the latest version of every key, and each micro-batch committed one
snapshot, once.

A micro-batch usually reads one input file, but not always: Spark's file source logs the
files of its next offset before the offset log names the batch, so a kill between the two
writes makes the first batch after the restart read two files. The batches to expect are the
ones in each query's checkpoint commit log, not one per input file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lakeskip.catalog import Catalog
from lakeskip.catalog.format.snapshot import BATCH_COMMIT_IDENTIFIER

pytestmark = pytest.mark.slow  # three Spark drivers: minutes (make fuzz)

DRIVER = Path(__file__).resolve().parents[2] / "stream_driver.py"
BATCHES = 24
#: kill the driver once the append table has this many batches committed, then again at the
#: second number; each restart resumes from the checkpoint
KILL_AT = (5, 12)
#: bound on a phase's wall time (a hung driver fails the test instead of hanging it)
PHASE_SECONDS = 400.0


def _inputs(root: Path) -> tuple[list[dict[str, Any]], dict[int, tuple[Any, ...]]]:
    """24 JSON files per table, modification times a second apart (the source reads oldest
    first); the rows of the append table and the latest version of every key."""
    appended: list[dict[str, Any]] = []
    latest: dict[int, tuple[Any, ...]] = {}
    for name in ("ev", "pk"):
        (root / name).mkdir(parents=True)
    for b in range(BATCHES):
        ev = [{"id": b * 100 + i, "cat": f"c{(b * 7 + i) % 13}", "v": i / 4} for i in range(20)]
        # consecutive files update disjoint keys (even batches 0-19, odd 20-39): a batch that
        # read two input files (see above) holds one version of each key, as any batch does
        # (the order of two files' rows within a batch is Spark's, not defined)
        pk = [{"id": (b % 2) * 20 + (b * 3 + i) % 20, "v": f"b{b}-{i}", "n": b} for i in range(12)]
        appended += ev
        for r in pk:
            latest[r["id"]] = (r["id"], r["v"], r["n"])
        for name, rows in (("ev", ev), ("pk", pk)):
            tmp = root / name / f".f{b:03d}.tmp"
            tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
            os.utime(tmp, (1_700_000_000 + b, 1_700_000_000 + b))
            os.replace(tmp, root / name / f"f{b:03d}.json")
    return appended, latest


def _batches(warehouse: Path, table: str) -> list[int]:
    """The commit identifiers of the table's streaming snapshots (Spark-free)."""
    try:
        t = Catalog(str(warehouse)).get_table(f"db.{table}")
        return [
            s.commit_identifier
            for s in t.list_snapshots()
            if s.commit_identifier != BATCH_COMMIT_IDENTIFIER
        ]
    except Exception:  # a snapshot being published as we list: ask again
        return []


def _checkpoint_batches(checkpoint: Path) -> list[int]:
    """The micro-batch ids a query's checkpoint commit log holds (Spark's own record of the
    batches that finished)."""
    return sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())


def _driver(warehouse: Path, root: Path, mode: str, log: Path) -> subprocess.Popen[bytes]:
    out = log.open("ab")
    return subprocess.Popen(
        [
            sys.executable,
            str(DRIVER),
            str(warehouse),
            str(root / "in"),
            str(root / "ck"),
            mode,
            "ev",
            "pk",
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: kill -9 reaches the JVM too
    )


def _kill_when(proc: subprocess.Popen[bytes], warehouse: Path, batches: int, log: Path) -> None:
    deadline = time.monotonic() + PHASE_SECONDS
    try:
        while len(_batches(warehouse, "ev")) < batches:
            assert proc.poll() is None, f"the driver exited early: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"no progress: {log.read_text()[-2000:]}"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def stream_killed_twice(
    spark: Any, tmp_path: Path
) -> tuple[list[dict[str, Any]], dict[int, tuple[Any, ...]], int]:
    """The scenario, into the catalog at ``tmp_path / "warehouse"`` (which ``spark``'s
    ``lakeskip`` catalog must be): tables ``db.ev`` and ``db.pk`` streamed into by a driver
    killed twice, then drained; each micro-batch of the checkpoints committed once. Returns
    the append table's input rows, the latest version of every key, and the input files a
    batch read beside another (also used by ``tests/interop/test_streaming_interop.py``)."""
    warehouse = tmp_path / "warehouse"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql(
        "CREATE TABLE lakeskip.db.ev (id BIGINT, cat STRING, v DOUBLE) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns' = 'cat')"
    )
    spark.sql(
        "CREATE TABLE lakeskip.db.pk (id BIGINT, v STRING, n INT) TBLPROPERTIES "
        "('primary-key' = 'id', 'bucket' = '2', 'deletion-vectors.enabled' = 'true')"
    )
    appended, latest = _inputs(tmp_path / "in")
    log = tmp_path / "driver.log"
    for kill_at in KILL_AT:
        _kill_when(_driver(warehouse, tmp_path, "run", log), warehouse, kill_at, log)
    drain = _driver(warehouse, tmp_path, "drain", log)
    try:
        assert drain.wait(timeout=PHASE_SECONDS) == 0, log.read_text()[-3000:]
    finally:
        if drain.poll() is None:
            os.killpg(drain.pid, signal.SIGKILL)
            drain.wait()
    merged = 0  # input files read by a batch beside another (see the module's docstring)
    for name in ("ev", "pk"):
        ids = _batches(warehouse, name)
        finished = _checkpoint_batches(tmp_path / "ck" / name)
        assert sorted(ids) == finished == list(range(len(finished))), (
            f"{name}: one snapshot per micro-batch of the checkpoint, none twice: "
            f"snapshots {ids}, checkpoint {finished}"
        )
        assert BATCHES - 2 <= len(finished) <= BATCHES, f"{name}: {len(finished)} batches"
        if name == "ev":
            merged = BATCHES - len(finished)
    return appended, latest, merged


def test_kill_9_twice_mid_stream_every_row_once(session: Any, spark: Any, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"  # the session fixture's catalog
    appended, latest, merged = stream_killed_twice(spark, tmp_path)
    spark.sql("REFRESH TABLE lakeskip.db.ev")
    got = sorted(r[0] for r in spark.sql("SELECT id FROM lakeskip.db.ev").collect())
    want = sorted(r["id"] for r in appended)
    assert got == want, f"every input row once: {len(got)} rows for {len(want)}"
    pk = sorted(tuple(r) for r in spark.sql("SELECT id, v, n FROM lakeskip.db.pk").collect())
    assert pk == sorted(latest.values()), "the latest version of every key, once"
    # compaction kept up with the stream: compaction.min.file-num (5) - 1 + one batch's file,
    # plus one batch's file where a kill fell between a batch's commit and its compaction
    # (the next batch's compaction catches up), plus a file per input file a batch read
    # beside its own
    ev = Catalog(str(warehouse)).get_table("db.ev")
    live = [len(ev.scan_files(s)) for s in ev.list_snapshots()]
    assert max(live) <= 5 + 1 + merged and live[-1] <= 5, f"live files of the append table: {live}"
    pk_table = Catalog(str(warehouse)).get_table("db.pk")
    pk_live = [len(pk_table.scan_files(s)) for s in pk_table.list_snapshots()]
    print(f"live files per snapshot: ev {live}, pk {pk_live}")
