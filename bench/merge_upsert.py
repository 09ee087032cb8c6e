"""MERGE INTO upserts: the target pruned by the source's ON keys vs reading every file.

    make bench-merge                               # 2M rows, 32 files, 3 runs per side
    .venv/bin/python bench/merge_upsert.py --rows 500000 --files 16 --runs 2

The events table of ``bench/run.py`` (bloom filter on user_id), written with ``--files``
files; ids come from ``spark.range``, so each file holds a contiguous id range, as
append-ordered ids do. Two sources of 100 rows, each upserted with
``MERGE INTO ... ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *``:

* **recent**: ids from the last 100 - 20 rows plus 20 new ids (the usual upsert of late data);
* **spread**: 80 ids drawn over the whole table plus 20 new ids. Its first (warm-up) MERGE
  keeps nearly every file and rewrites them through the write path into a few large files
  (``target-file-size``), so the timed runs then see that compacted layout, not the original
  one (measured 2 of 6 files kept); it shows the overhead of the key job more than pruning.

Each source is merged ``--runs`` times with pruning on and off
(``spark.lakeskip.merge.prune-max-keys`` = 0), alternating, in one Spark session: files the
MERGE read (kept / total), files rewritten and wall time (median). After the runs the table is
checked against a recomputation (row count, the upserted rows' values). Writes
``bench/results/merge-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

import lakeskip
from lakeskip.spark.front.demo import generate_events
from lakeskip.spark.modify.merge_prune import MAX_KEYS_CONF

TABLE = "bench.merge_events"
MERGE = (
    f"MERGE INTO {TABLE} t USING src s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)


def _source(session: Any, ids: list[int], price: int) -> None:
    """100 upserted rows: the ids given, every column new (price marks them)."""
    spark = session.spark
    df = spark.createDataFrame([(i,) for i in ids], "id BIGINT").select(
        "id",
        F.concat(F.lit("n"), F.col("id").cast("string")).alias("user_id"),
        F.lit("C0").alias("country"),
        F.lit("NEW").alias("status"),
        F.lit(price).cast("bigint").alias("price"),
        F.timestamp_seconds(F.lit(1_735_689_600)).alias("ts"),
        F.create_map(F.lit("device"), F.lit("web")).alias("attrs"),
    )
    df.createOrReplaceTempView("src")


def _merge(session: Any, prune: bool) -> dict[str, Any]:
    spark = session.spark
    spark.conf.set(MAX_KEYS_CONF, "10000" if prune else "0")
    started = time.perf_counter()
    out = session.sql(MERGE).collect()[0]
    seconds = time.perf_counter() - started
    (report,) = session.last_reports
    return {
        "prune": prune,
        "seconds": seconds,
        "files_total": report.total_files,
        "files_kept": report.kept_files,
        "files_rewritten": out["files_rewritten"],
        "rows_updated": out["rows_updated"],
        "rows_inserted": out["rows_inserted"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3, help="MERGEs per source and side")
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-merge")
    args = ap.parse_args()
    session = lakeskip.connect(
        args.warehouse,
        conf={"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": str(args.files)},
    )
    session.sql("CREATE DATABASE IF NOT EXISTS bench")
    session.sql(f"DROP TABLE IF EXISTS {TABLE}")
    items = max(1000, args.rows // args.files)
    session.sql(
        f"""CREATE TABLE {TABLE} (id BIGINT, user_id STRING, country STRING, status STRING,
        price BIGINT, ts TIMESTAMP, attrs MAP<STRING, STRING>) WITH (
        'file-index.bloom-filter.columns' = 'user_id',
        'file-index.bloom-filter.user_id.items' = '{items}',
        'file-index.bloom-filter.user_id.fpp' = '0.01',
        'target-file-size' = '1 gb')"""
    )
    session.write(generate_events(session, args.rows, args.files), TABLE)
    files = len(session.catalog.get_table(TABLE).scan_files())
    print(f"{args.rows:,} rows in {files} files; {os.cpu_count()} cores")
    rng = random.Random(args.seed)
    n = args.rows
    sources = {
        "recent": [*range(n - 80, n), *range(n, n + 20)],
        "spread": [*rng.sample(range(n - 100), 80), *range(n + 20, n + 40)],
    }
    out: dict[str, Any] = {"args": vars(args), "cores": os.cpu_count(), "files": files}
    new_ids: set[int] = set()
    for s_i, (label, ids) in enumerate(sources.items()):
        price = -1 - s_i
        _source(session, ids, price)
        runs = [_merge(session, prune=True)]  # warm-up (the inserts land here)
        for _ in range(args.runs):
            runs.append(_merge(session, prune=False))
            runs.append(_merge(session, prune=True))
        new_ids |= {i for i in ids if i >= n}
        timed = runs[1:]
        on = [r for r in timed if r["prune"]]
        off = [r for r in timed if not r["prune"]]
        got = session.sql(f"SELECT count(*), count_if(price = {price}) FROM {TABLE}").collect()[0]
        if tuple(got) != (n + len(new_ids), len(ids)):
            raise AssertionError(f"WRONG TABLE after {label}: {tuple(got)}")
        summary = {
            "files_total": on[-1]["files_total"],
            "files_kept_pruned": on[-1]["files_kept"],
            "files_kept_unpruned": off[-1]["files_kept"],
            "files_rewritten": on[-1]["files_rewritten"],
            "median_s_pruned": statistics.median(r["seconds"] for r in on),
            "median_s_unpruned": statistics.median(r["seconds"] for r in off),
        }
        summary["speedup"] = summary["median_s_unpruned"] / summary["median_s_pruned"]
        out[label] = {"summary": summary, "runs": runs}
        print(
            f"{label:>7}: files read {summary['files_kept_pruned']}/{summary['files_total']} "
            f"pruned vs {summary['files_kept_unpruned']}/{summary['files_total']}, "
            f"{summary['files_rewritten']} rewritten; median {summary['median_s_pruned']:.2f} s "
            f"pruned vs {summary['median_s_unpruned']:.2f} s unpruned "
            f"({summary['speedup']:.2f}x); table checked"
        )
    session.spark.conf.unset(MAX_KEYS_CONF)
    path = Path(__file__).parent / "results" / f"merge-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(f"results: bench/results/{path.name}")


if __name__ == "__main__":
    main()
