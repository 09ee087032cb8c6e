"""A table written by a streaming query stays skippable: live files and point-lookup files.

    .venv/bin/python bench/stream_layout.py --rows 200000 --batches 24

Issue 44's second Done-when item. A Structured Streaming query reads ``--batches`` Parquet
files one per micro-batch (``maxFilesPerTrigger`` 1: one small commit each) into an
unaware-bucket append table clustered on ``k`` (``clustering.columns``) with a bloom filter
index on ``u``; the same rows are written in one batch into a second table with the same
options. With ``--mode incremental`` (the default) the streamed table has
``clustering.incremental = true``: after each micro-batch a background thread of the driver
clusters the new files with the clustered files they overlap
(``stream_compaction.cluster_incrementally``) while the next batches go on; ``--mode size``
is the size-based compaction of Paimon's streaming writers instead
(``compact_after_stream_batch``: a partition's small files once ``compaction.min.file-num`` of
them exist, rewritten sorted on the clustering columns: each round sorted on its own).

Reported, from the table's snapshots after the run: the live files after every snapshot (the
peak is the bound compaction keeps), and, over ``--lookups`` keys drawn from the rows, the
files the planner keeps for ``k = ?`` and for ``u = ?`` on each table (the ratio stream /
batch is the figure the issue bounds at 1.3), after the stream and its clustering finished;
and, for the first ``--lookups-per-snapshot`` of those keys, the files kept on ``k`` at every
snapshot of the streamed table (while it ran: an APPEND snapshot holds batches not yet
clustered, each one more file per lookup). Every lookup's rows are counted on both tables
by Spark and must be equal (the oracle: the same input rows). Writes
``bench/results/stream-layout-<timestamp>.json``; quote the load average it records.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import time
from pathlib import Path

import lakeskip
from lakeskip.catalog.options import COMPACTION_MIN_FILE_NUM, option_int, target_file_size
from lakeskip.expressions import EqualTo
from lakeskip.planner.scan import ScanPlanner
from lakeskip.procedures.compaction import SMALL_FILE_RATIO
from lakeskip.spark.write.stream_compaction import wait_for_stream_clustering

OPTIONS = (
    "'clustering.columns' = 'k', 'file-index.bloom-filter.columns' = 'u', "
    "'target-file-size' = '{target}'"
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--batches", type=int, default=24)
    ap.add_argument("--lookups", type=int, default=100)
    ap.add_argument("--lookups-per-snapshot", type=int, default=20)
    ap.add_argument("--mode", choices=("incremental", "size"), default="incremental")
    ap.add_argument("--target", default="1 mb", help="target-file-size of both tables")
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-stream")
    args = ap.parse_args()
    shutil.rmtree(args.warehouse, ignore_errors=True)
    load_start = os.getloadavg()
    session = lakeskip.connect(args.warehouse + "/wh", conf={"spark.sql.shuffle.partitions": "4"})
    spark = session.spark
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.bench")
    for name in ("streamed", "batch"):
        extra = ", 'clustering.incremental' = 'true'" if name == "streamed" else ""
        if args.mode == "size":
            extra = ""
        spark.sql(
            f"CREATE TABLE lakeskip.bench.{name} (k BIGINT, u STRING, v DOUBLE, pad STRING) "
            f"TBLPROPERTIES ({OPTIONS.format(target=args.target)}{extra})"
        )
    # the input: one Parquet file per micro-batch, keys spread over the whole range in each
    source = args.warehouse + "/input"
    per = args.rows // args.batches
    for b in range(args.batches):
        (
            spark.range(b * per, (b + 1) * per, numPartitions=1)
            .selectExpr(
                "xxhash64(id) % 1000000000 AS k",
                "concat('u', cast(xxhash64(id, 7) AS STRING)) AS u",
                "cast(id % 997 AS DOUBLE) AS v",
                "repeat('x', 20) AS pad",
            )
            .write.mode("append")
            .parquet(source)
        )
    schema = spark.read.parquet(source).schema
    started = time.perf_counter()
    q = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", 1)
        .parquet(source)
        .writeStream.option("checkpointLocation", args.warehouse + "/ck")
        .trigger(availableNow=True)
        .toTable("lakeskip.bench.streamed")
    )
    q.awaitTermination()
    stream_s = time.perf_counter() - started
    wait_for_stream_clustering()  # the last batches' clustering, still in the background
    clustered_s = time.perf_counter() - started
    started = time.perf_counter()
    spark.read.parquet(source).writeTo("lakeskip.bench.batch").append()
    batch_s = time.perf_counter() - started

    streamed = session.catalog.get_table("bench.streamed")
    batch = session.catalog.get_table("bench.batch")
    # the bound compaction keeps (one partition): files of at least 70 % of target-file-size
    # fit the table's bytes that many times; below it, fewer than compaction.min.file-num
    # small files wait after a compaction, and one batch's commit adds one more
    options = streamed.schema.options
    target = target_file_size(options)
    least = option_int(options, COMPACTION_MIN_FILE_NUM)
    live = []
    for s in streamed.list_snapshots():
        files = streamed.scan_files(s)
        size = sum(e.file.file_size for e in files)
        bound = int(size // (SMALL_FILE_RATIO * target)) + least
        live.append((s.id, s.commit_kind.value, len(files), bound))
    rows = spark.read.parquet(source).select("k", "u").collect()
    rng = random.Random(44)
    picks = rng.sample(rows, min(args.lookups, len(rows)))
    # while it ran: the files a k lookup keeps at each snapshot of the streamed table
    few = picks[: args.lookups_per_snapshot]
    batch_k = statistics.mean(len(ScanPlanner(batch).plan(EqualTo("k", r["k"])).files) for r in few)
    during = []
    for s in streamed.list_snapshots():
        planner = ScanPlanner(streamed)
        mean = statistics.mean(
            len(planner.plan(EqualTo("k", r["k"]), snapshot=s).files) for r in few
        )
        during.append((s.id, s.commit_kind.value, mean / batch_k))
    result: dict[str, object] = {}
    for column in ("k", "u"):
        kept = {"streamed": [], "batch": []}  # type: dict[str, list[int]]
        for r in picks:
            for name, table in (("streamed", streamed), ("batch", batch)):
                kept[name].append(len(ScanPlanner(table).plan(EqualTo(column, r[column])).files))
        # the oracle: both tables answer each of the first lookups with the same rows
        for r in picks[:10]:
            a, b = (
                spark.sql(
                    f"SELECT count(*) FROM lakeskip.bench.{n} WHERE {column} = ?",
                    args=[r[column]],
                ).collect()[0][0]
                for n in ("streamed", "batch")
            )
            assert a == b and a >= 1, f"{column} = {r[column]}: {a} rows streamed, {b} batch"
        mean_s = statistics.mean(kept["streamed"])
        mean_b = statistics.mean(kept["batch"])
        result[column] = {
            "mean_files_streamed": mean_s,
            "mean_files_batch": mean_b,
            "ratio": mean_s / mean_b if mean_b else None,
            "max_files_streamed": max(kept["streamed"]),
            "max_files_batch": max(kept["batch"]),
        }
    out = {
        "args": vars(args),
        "stream_s": stream_s,
        "stream_and_clustering_s": clustered_s,
        "batch_s": batch_s,
        "snapshots": live,
        "peak_live_files": max(n for _, _, n, _ in live),
        "bound_held": all(n <= bound for _, _, n, bound in live),
        "bound_at_end": live[-1][3],
        "final_live_files_streamed": len(streamed.scan_files()),
        "live_files_batch": len(batch.scan_files()),
        "lookups": result,
        "k_ratio_per_snapshot": during,
        "k_ratio_mean_over_snapshots": statistics.mean(r for _, _, r in during),
        "k_ratio_mean_after_compact": statistics.mean(
            [r for _, kind, r in during if kind == "COMPACT"] or [float("nan")]
        ),
        "k_ratio_max_over_snapshots": max(r for _, _, r in during),
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
    }
    shown = {k: v for k, v in out.items() if k not in ("snapshots", "k_ratio_per_snapshot")}
    print(json.dumps(shown, indent=2))
    path = (
        Path(__file__).parent / "results" / f"stream-layout-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    path.write_text(json.dumps(out, indent=2))
    print(f"results: {path}")
    spark.stop()


if __name__ == "__main__":
    main()
