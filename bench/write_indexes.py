"""Write time with file indexes vs without, at several sizes, median of interleaved rounds.

    .venv/bin/python bench/write_indexes.py                       # 2M/32 and 12.8M/128
    .venv/bin/python bench/write_indexes.py --sizes 2000000:32 --rounds 5

The rows of ``bench/run.py`` (``lakeskip.spark.front.demo.generate_events``) are written into two
tables that differ only in their indexes -- bloom filter on user_id (items = rows per file,
fpp 0.01), bitmap on country, status, attrs[device], BSI on price -- ``--rounds`` times each,
alternating (with, without, without, with, ...) so that a load change on a shared machine hits
both. Prints each size's median times, their ratio and the write stages summed over the
tasks (median round); writes ``bench/results/write-indexes-<timestamp>.json``.

Beside the wall-clock ratio (the figure a user sees) it reports the CPU-seconds ratio: each
write's CPU is the local-mode JVM's (``/proc/<pid>/stat``: row generation, Arrow transfer,
Spark itself), the Python workers' (``WriteTimings.cpu``, summed over the tasks) and the
driver's. On a loaded machine the wall times swing with the other processes' load (2-4x
between rounds of the same write have been seen) while the CPU seconds hardly move; on an
idle machine the write is CPU-bound on both cores, so the CPU ratio is what the wall ratio
tends to there. The index build's own CPU seconds are printed as a share of the write's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import lakeskip
from lakeskip.spark.front.demo import generate_events
from lakeskip.spark.write.writer import last_write_timings

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _jvm_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far; 0.0 where /proc is missing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


COLUMNS = (
    "id BIGINT, user_id STRING, country STRING, status STRING, price BIGINT, ts TIMESTAMP, "
    "attrs MAP<STRING, STRING>"
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["2000000:32", "12800000:128"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-write")
    args = ap.parse_args()
    session = lakeskip.connect(args.warehouse, conf={"spark.driver.memory": "4g"})
    session.sql("CREATE DATABASE IF NOT EXISTS bench")
    # local mode: the driver's JVM runs the tasks' JVM side too
    jvm_pid = int(session.spark._jvm.java.lang.ProcessHandle.current().pid())
    result: dict[str, Any] = {"sizes": [], "load_before": os.getloadavg()}
    for size in args.sizes:
        rows, files = (int(x) for x in size.split(":"))
        items = max(1000, rows // files)
        for t in ("bench.w_index", "bench.w_plain"):
            session.sql(f"DROP TABLE IF EXISTS {t}")
        session.sql(
            f"""CREATE TABLE bench.w_index ({COLUMNS}) WITH (
            'file-index.bloom-filter.columns' = 'user_id',
            'file-index.bloom-filter.user_id.items' = '{items}',
            'file-index.bloom-filter.user_id.fpp' = '0.01',
            'file-index.bitmap.columns' = 'country,status,attrs[device]',
            'file-index.bsi.columns' = 'price',
            'target-file-size' = '1 gb')"""
        )
        session.sql(f"CREATE TABLE bench.w_plain ({COLUMNS}) WITH ('target-file-size' = '1 gb')")
        df = generate_events(session, rows, files)
        load_before = os.getloadavg()
        session.write(df, "bench.w_plain")  # warm-up: JIT, Python workers
        runs: dict[str, list[tuple[float, dict[str, Any]]]] = {"index": [], "plain": []}
        cpu: dict[str, list[float]] = {"index": [], "plain": []}
        for r in range(args.rounds):
            order = ("index", "plain") if r % 2 == 0 else ("plain", "index")
            for side in order:
                jvm0, driver0 = _jvm_cpu(jvm_pid), time.process_time()
                t0 = time.perf_counter()
                session.write(df, f"bench.w_{side}", mode="overwrite")
                seconds = time.perf_counter() - t0
                timings = last_write_timings()
                workers = timings.cpu if timings else 0.0
                cpu[side].append(_jvm_cpu(jvm_pid) - jvm0 + time.process_time() - driver0 + workers)
                runs[side].append((seconds, timings.as_dict() if timings else {}))
        load = os.getloadavg()
        med = {s: statistics.median(t for t, _ in v) for s, v in runs.items()}
        med_cpu = {s: statistics.median(v) for s, v in cpu.items()}
        index_cpu = statistics.median(st.get("index_cpu", 0.0) for _, st in runs["index"])
        stages = {
            s: sorted(v, key=lambda x: x[0])[len(v) // 2][1] for s, v in runs.items()
        }  # the median round's stages
        entry = {
            "rows": rows,
            "files": files,
            "seconds": {s: [t for t, _ in v] for s, v in runs.items()},
            "median": med,
            "ratio": med["index"] / med["plain"],
            "cpu_seconds": cpu,
            "cpu_median": med_cpu,
            "cpu_ratio": med_cpu["index"] / med_cpu["plain"],
            "index_cpu_median": index_cpu,
            "stages_median_round": stages,
            "load_before": load_before,
            "load_after": load,
        }
        result["sizes"].append(entry)
        print(
            f"\n{rows:,} rows / {files} files: with indexes {med['index']:.1f} s, without "
            f"{med['plain']:.1f} s -> {entry['ratio']:.2f}x (median of {args.rounds}; "
            f"runs {entry['seconds']}; load {load_before} -> {load}, loaded)"
        )
        print(
            f"  CPU seconds (JVM + Python workers + driver): with indexes {med_cpu['index']:.1f}, "
            f"without {med_cpu['plain']:.1f} -> {entry['cpu_ratio']:.2f}x; the index build "
            f"{index_cpu:.1f} s ({index_cpu / med_cpu['index']:.1%} of the write's CPU)"
        )
        for s, st in stages.items():
            shown = {k: round(v, 1) if isinstance(v, float) else v for k, v in st.items()}
            print(f"  stages ({s}): {shown}")
    out = Path(__file__).parent / "results" / f"write-indexes-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")
    session.spark.stop()


if __name__ == "__main__":
    main()
