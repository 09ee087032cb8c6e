"""Metadata answers and pushed limits at many files (issue 39 items 3 and 5): ``count(*)``,
``min``/``max``, ``count(*) GROUP BY`` the partition column, ``LIMIT 5`` and ``ORDER BY id
DESC LIMIT 5`` through PySpark on one table of ``--files`` files.

    .venv/bin/python bench/metadata_answers.py --files 100000 --warehouse /work/scratch/me/wh

The table is :mod:`paimon_planning`'s (``lakeskip.b.plan``: ``id BIGINT, v BIGINT, p INT``
partitioned by ``p``, ``--partitions`` partitions of byte-copied small files, one APPEND
snapshot; made by a first run into a new ``--warehouse``, measured by the next runs). Each query's classes are loaded on the one-file
``lakeskip.b.plan_warm`` first (untimed); then, in that order in one session, each query's
first run (the first query's is the one that reads the snapshot's manifests) and the median
of ``--repeat`` warm runs, each whole (``collect``): wall seconds, the CPU seconds of the JVM
(every thread) and of this Python process (lakeskip's callbacks run here), and the seconds
lakeskip's callbacks took. Prints the load average beside each query.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from paimon_planning import _Cpu, make_table  # type: ignore[import-not-found]

import lakeskip
from lakeskip.spark.front.catalog_setup import service_for

QUERIES = {
    "count(*)": "SELECT count(*) FROM {t}",
    "min/max": "SELECT min(id), max(id) FROM {t}",
    "count by p": "SELECT p, count(*) FROM {t} GROUP BY p",
    "LIMIT 5": "SELECT * FROM {t} LIMIT 5",
    "ORDER BY id DESC LIMIT 5": "SELECT * FROM {t} ORDER BY id DESC LIMIT 5",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warehouse", required=True, help="made on first use, then reused")
    args = ap.parse_args()
    fresh = not Path(args.warehouse).exists()
    s = lakeskip.connect(
        args.warehouse,
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
    )
    spark = s.spark
    if fresh:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.b")
        print("made", make_table(s, args.files, args.partitions), flush=True)
        print("run again to measure (a new process: nothing of the table cached)")
        spark.stop()
        return
    cpu = _Cpu(spark)
    service = service_for(spark)
    for sql in QUERIES.values():
        spark.sql(sql.format(t="lakeskip.b.plan_warm")).collect()

    def run(sql: str) -> tuple[int, list[float]]:
        before = service.callback_stats()
        jvm0, py0, t0 = cpu.jvm(), cpu.python(), time.perf_counter()
        rows = spark.sql(sql).collect()
        wall = time.perf_counter() - t0
        jvm1, py1 = cpu.jvm(), cpu.python()
        callbacks = sum(service.callback_stats().since(before).seconds.values())
        jvm = jvm1 - jvm0 if jvm0 is not None and jvm1 is not None else float("nan")
        return len(rows), [wall, jvm, py1 - py0, callbacks]

    try:
        for name, sql in QUERIES.items():
            sql = sql.format(t="lakeskip.b.plan")
            load = os.getloadavg()[0]
            n, first = run(sql)
            warm = [run(sql)[1] for _ in range(args.repeat)]
            med: Any = [statistics.median(w[i] for w in warm) for i in range(4)]
            ms = lambda xs: " / ".join(f"{x * 1000:.0f}" for x in xs)  # noqa: E731
            print(
                f"{name:26s} {n:3d} rows  first {ms(first)}  warm {ms(med)}  "
                f"(ms: wall / JVM CPU / Python CPU / callbacks)  load {load:.2f}",
                flush=True,
            )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
