"""Upserts into a primary-key table created with no ``bucket`` option (dynamic bucket mode,
``bucket = -1``): how many buckets, how many Spark tasks, how many of them at once.

    .venv/bin/python bench/dynamic_bucket.py --rows 4000000 --master 'local[8]'
    .venv/bin/python bench/dynamic_bucket.py --rows 1000000 --baseline   # also 'bucket' = '1'

``CREATE TABLE bench.pk (id BIGINT, v STRING, n BIGINT, PRIMARY KEY (id) NOT ENFORCED)``, then
an INSERT of ``--rows`` rows and an upsert of 1% of the keys (half existing, half new). A
thread polls Spark's status tracker every 20 ms during each statement and records, per stage,
its task count and the most tasks seen running at once. Per statement: wall time, buckets,
files and bytes added, the stages. ``--baseline`` runs the same on a ``'bucket' = '1'`` table
(lakeskip's default before dynamic buckets). A 10,000-row run warms the session up first. The
machine's load (``uptime``) is printed with
the figures; on a shared machine they are loaded figures. Writes
``bench/results/dynamic-bucket-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import lakeskip


class StagePoller:
    """Most tasks running at once per stage, from ``SparkContext.statusTracker()``."""

    def __init__(self, sc: Any) -> None:
        self.tracker = sc.statusTracker()
        self.stages: dict[int, dict[str, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for sid in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(sid)
                if info is None:
                    continue
                s = self.stages.setdefault(sid, {"tasks": info.numTasks, "max_running": 0})
                s["max_running"] = max(s["max_running"], info.numActiveTasks)
            time.sleep(0.02)

    def __enter__(self) -> StagePoller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _statement(session: Any, table: str, sql: str) -> dict[str, Any]:
    t = session.catalog.get_table(table)
    before = {e.file.file_name for e in t.scan_files()} if t.latest_snapshot() else set()
    start = time.perf_counter()
    with StagePoller(session.spark.sparkContext) as poller:
        session.sql(sql)
    seconds = time.perf_counter() - start
    t = session.catalog.get_table(table)
    live = t.scan_files()
    added = [e for e in live if e.file.file_name not in before]
    return {
        "sql": sql,
        "seconds": round(seconds, 2),
        "buckets": len({e.bucket for e in live}),
        "buckets_written": len({e.bucket for e in added}),
        "files_added": len(added),
        "bytes_added": sum(e.file.file_size for e in added),
        "table_bytes": sum(e.file.file_size for e in live),
        "stages": [poller.stages[k] for k in sorted(poller.stages)],
        "max_concurrent_tasks": max((s["max_running"] for s in poller.stages.values()), default=0),
        "uptime": _uptime(),
    }


def run(session: Any, rows: int, options: str) -> list[dict[str, Any]]:
    table = "bench.pk"
    session.sql(f"DROP TABLE IF EXISTS {table}")
    with_ = f" WITH ({options})" if options else ""
    session.sql(
        f"CREATE TABLE {table} (id BIGINT, v STRING, n BIGINT, PRIMARY KEY (id) NOT ENFORCED)"
        + with_
    )
    out = [
        _statement(
            session,
            table,
            f"INSERT INTO {table} SELECT id, concat('v', CAST(id AS STRING)), id FROM range(0, {rows})",
        )
    ]
    upsert = max(1, rows // 100)
    lo = rows - upsert // 2  # half of the keys exist, half are new
    out.append(
        _statement(
            session,
            table,
            f"INSERT INTO {table} SELECT id, 'u', -id FROM range({lo}, {lo + upsert})",
        )
    )
    got = session.sql(f"SELECT count(*), sum(CASE WHEN v = 'u' THEN 1 ELSE 0 END) FROM {table}")
    count, updated = got.collect()[0]
    assert count == lo + upsert and updated == upsert, (count, updated)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--master", default="local[8]")
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-dynamic-bucket")
    ap.add_argument("--baseline", action="store_true", help="also a 'bucket' = '1' table")
    args = ap.parse_args()
    session = lakeskip.connect(
        args.warehouse, master=args.master, conf={"spark.driver.memory": "6g"}
    )
    session.sql("CREATE DATABASE IF NOT EXISTS bench")
    run(session, 10_000, "")  # warm-up (JVM, Python workers), not recorded
    sc = session.spark.sparkContext
    result: dict[str, Any] = {
        "rows": args.rows,
        "master": args.master,
        "default_parallelism": sc.defaultParallelism,
        "shuffle_partitions": session.spark.conf.get("spark.sql.shuffle.partitions"),
        "uptime_before": _uptime(),
        "dynamic": run(session, args.rows, ""),
    }
    if args.baseline:
        result["fixed_1"] = run(session, args.rows, "'bucket' = '1'")
    result["uptime_after"] = _uptime()
    print(json.dumps(result, indent=1))
    out = (
        Path(__file__).parent / "results" / f"dynamic-bucket-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
