"""Write time with file indexes vs without, at several sizes, median of interleaved rounds.

    .venv/bin/python bench/write_indexes.py                       # 2M/32 and 12.8M/128
    .venv/bin/python bench/write_indexes.py --sizes 2000000:32 --rounds 5

The rows of ``bench/run.py`` (``lakeskip.spark.front.demo.generate_events``) are written into two
tables that differ only in their indexes -- bloom filter on user_id (items = rows per file,
fpp 0.01), bitmap on country, status, attrs[device], BSI on price -- ``--rounds`` times each,
alternating (with, without, without, with, ...) so that a load change on a shared machine hits
both. Prints each size's median times, their ratio and the write stages summed over the
tasks (median round); writes ``bench/results/write-indexes-<timestamp>.json``.
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
        session.write(df, "bench.w_plain")  # warm-up: JIT, Python workers
        runs: dict[str, list[tuple[float, dict[str, Any]]]] = {"index": [], "plain": []}
        for r in range(args.rounds):
            order = ("index", "plain") if r % 2 == 0 else ("plain", "index")
            for side in order:
                t0 = time.perf_counter()
                session.write(df, f"bench.w_{side}", mode="overwrite")
                seconds = time.perf_counter() - t0
                timings = last_write_timings()
                runs[side].append((seconds, timings.as_dict() if timings else {}))
        load = os.getloadavg()
        med = {s: statistics.median(t for t, _ in v) for s, v in runs.items()}
        stages = {
            s: sorted(v, key=lambda x: x[0])[len(v) // 2][1] for s, v in runs.items()
        }  # the median round's stages
        entry = {
            "rows": rows,
            "files": files,
            "seconds": {s: [t for t, _ in v] for s, v in runs.items()},
            "median": med,
            "ratio": med["index"] / med["plain"],
            "stages_median_round": stages,
            "load_after": load,
        }
        result["sizes"].append(entry)
        print(
            f"\n{rows:,} rows / {files} files: with indexes {med['index']:.1f} s, without "
            f"{med['plain']:.1f} s -> {entry['ratio']:.2f}x (median of {args.rounds}; "
            f"runs {entry['seconds']}; load {load})"
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
