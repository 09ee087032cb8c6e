"""Upserts into a primary-key table created with no ``bucket`` option (dynamic bucket mode,
``bucket = -1``): how many buckets, how many Spark tasks, how many of them at once.

    .venv/bin/python bench/dynamic_bucket.py --rows 4000000 --master 'local[8]'
    .venv/bin/python bench/dynamic_bucket.py --rows 1000000 --baseline   # also 'bucket' = '1'
    .venv/bin/python bench/dynamic_bucket.py --rows 2000000 --upserts 6 \
        --options "'write-buffer-size' = '16 mb'"    # spilled writes, universal compaction

``CREATE TABLE bench.pk (id BIGINT, v STRING, n BIGINT, PRIMARY KEY (id) NOT ENFORCED)``, then
an INSERT of ``--rows`` rows and an upsert of 1% of the keys (half existing, half new). A
thread polls Spark's status tracker every 20 ms during each statement and records, per stage,
its task count and the most tasks seen running at once. Per statement: wall time, buckets,
files and bytes added (its own and its compaction's output, also as a share of the table),
files its compaction removed, the levels, the largest write buffer a task held and the bytes
spilled, the stages. ``--upserts N``: N - 1 more upserts of 1% of existing keys. ``--baseline`` runs the same on a ``'bucket' = '1'`` table
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
from lakeskip.spark.write.writer import last_write_timings


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
    removed = before - {e.file.file_name for e in live}
    timings = last_write_timings()
    table_bytes = sum(e.file.file_size for e in live)
    bytes_added = sum(e.file.file_size for e in added)
    return {
        "sql": sql,
        "seconds": round(seconds, 2),
        "buckets": len({e.bucket for e in live}),
        "buckets_written": len({e.bucket for e in added}),
        "files_added": len(added),
        # files the statement left in the table (its own and its compaction's output)
        "bytes_added": bytes_added,
        "bytes_added_share_of_table": round(bytes_added / max(1, table_bytes), 4),
        "files_removed_by_compaction": len(removed),
        "levels": sorted({e.file.level for e in live}),
        # the largest write buffer one write task held, and bytes spilled to local disk
        "peak_task_buffer_bytes": timings.peak_buffer if timings is not None else None,
        "spilled_bytes": timings.spilled if timings is not None else None,
        "table_bytes": table_bytes,
        "stages": [poller.stages[k] for k in sorted(poller.stages)],
        "max_concurrent_tasks": max((s["max_running"] for s in poller.stages.values()), default=0),
        "uptime": _uptime(),
    }


def run(session: Any, rows: int, options: str, upserts: int = 1) -> list[dict[str, Any]]:
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
    # more 1 % upserts of existing keys, spread over the table
    out.extend(
        _statement(
            session,
            table,
            f"INSERT INTO {table} SELECT id * 7919 % {rows}, 'u', {r} "
            f"FROM range({r * upsert}, {(r + 1) * upsert})",
        )
        for r in range(1, upserts)
    )
    got = session.sql(f"SELECT count(*) FROM {table}")
    (count,) = got.collect()[0]
    assert count == lo + upsert, count
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--master", default="local[8]")
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-dynamic-bucket")
    ap.add_argument("--baseline", action="store_true", help="also a 'bucket' = '1' table")
    ap.add_argument("--upserts", type=int, default=1, help="1%% upserts after the INSERT")
    ap.add_argument(
        "--options", default="", help="more table options, e.g. \"'write-buffer-size' = '16 mb'\""
    )
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
        "options": args.options,
        "dynamic": run(session, args.rows, args.options, args.upserts),
    }
    if args.baseline:
        extra = f", {args.options}" if args.options else ""
        result["fixed_1"] = run(session, args.rows, "'bucket' = '1'" + extra, args.upserts)
    result["uptime_after"] = _uptime()
    print(json.dumps(result, indent=1))
    out = (
        Path(__file__).parent / "results" / f"dynamic-bucket-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
