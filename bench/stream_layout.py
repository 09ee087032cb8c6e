"""A table written by a streaming query stays skippable: live files and point-lookup files.

    .venv/bin/python bench/stream_layout.py --rows 200000 --batches 24

Issue 44's second Done-when item. A Structured Streaming query reads ``--batches`` Parquet
files one per micro-batch (``maxFilesPerTrigger`` 1: one small commit each) into an
unaware-bucket append table clustered on ``k`` (``clustering.columns``) with a bloom filter
index on ``u``. With ``--mode incremental`` (the default) the streamed table has
``clustering.incremental = true``: after each micro-batch a background thread of the driver
clusters the new files with the clustered files they overlap
(``stream_compaction.cluster_incrementally``) while the next batches go on, and such a table's
files carry a bloom filter on ``k`` too (``catalog.options.implied_index_options``; both
bloom filters sized 50,000 items at fpp 0.01, not Paimon's default 1,000,000); ``--mode
size`` is the size-based compaction of Paimon's streaming writers instead
(``compact_after_stream_batch``).

The comparison, "the same rows written in one batch": a second table created with the same
options (clustering on ``k``, the bloom filter on ``u``, ``target-file-size``) except
``clustering.incremental``, so its one write (``writeTo(...).append()`` of all the input
files) is clustered as it is written -- the layout one batch gets -- and a point lookup on
it keeps the fewest files a lookup of a present key can (1.0 mean here).

Checked at every snapshot the stream committed (APPEND and COMPACT: each is a state a reader
saw while the stream ran), after the run, and any violation makes the script exit non-zero:

* live files <= the bound: with incremental clustering, the clustered run
  (ceil(bytes at level > 0 / (0.7 x ``target-file-size``)) + 1, one partition) plus the
  unclustered files a partition may hold: ``num-sorted-run.stop-trigger`` - 1 (at that many
  a micro-batch waits for the clustering, ``stream_compaction._stall``) plus the files of the
  latest batch; with ``--mode size``: bytes / (0.7 x target) + ``compaction.min.file-num``;
* for ``--lookups-per-snapshot`` rows drawn from the rows committed up to that snapshot
  (read from the APPEND snapshots' files), the mean files the planner keeps for ``k = ?`` and
  for ``u = ?`` on the streamed table at that snapshot, over the mean the one-write table
  keeps for the same keys, <= 1.3 (a one write of only the rows committed so far keeps at
  least one file per present key, as the full one does).

After the stream: ``--lookups`` such lookups on the latest snapshots of both tables, the first
10 of each counted by Spark on both tables (equal, >= 1 row: the oracle). Writes
``bench/results/stream-layout-<timestamp>.json``; quote the load average it records.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import random
import shutil
import statistics
import time
from pathlib import Path

import pyarrow.parquet as pq

import lakeskip
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.options import (
    COMPACTION_MIN_FILE_NUM,
    option_int,
    sorted_run_stop_trigger,
    target_file_size,
)
from lakeskip.expressions import EqualTo
from lakeskip.planner.scan import ScanPlanner
from lakeskip.planner.stream import added_files
from lakeskip.procedures.compaction import SMALL_FILE_RATIO
from lakeskip.spark.write.stream_compaction import wait_for_stream_clustering

LIMIT = 1.3  # issue 44: a point lookup keeps at most 1.3x the files of one write
OPTIONS = (
    "'clustering.columns' = 'k', 'file-index.bloom-filter.columns' = 'u', "
    "'file-index.bloom-filter.u.items' = '50000', 'file-index.bloom-filter.u.fpp' = '0.01', "
    "'target-file-size' = '{target}'"
)
# the bloom filter a clustering.incremental table implies on k, sized as the one on u (by
# default Paimon's 1,000,000 items: 600 KB a file)
IMPLIED = "'file-index.bloom-filter.k.items' = '50000', 'file-index.bloom-filter.k.fpp' = '0.01'"


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
        extra = f", 'clustering.incremental' = 'true', {IMPLIED}" if name == "streamed" else ""
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
    options = streamed.schema.options
    target = target_file_size(options)
    least = option_int(options, COMPACTION_MIN_FILE_NUM)
    cap = sorted_run_stop_trigger(options)
    rng = random.Random(44)
    present: list[tuple[int, str]] = []  # (k, u) of the rows committed so far
    snapshots = []
    violations: list[str] = []
    planner_b = ScanPlanner(batch)
    one_write: dict[tuple[str, object], int] = {}  # files the one-write table keeps

    def kept_once(column: str, value: object) -> int:
        if (column, value) not in one_write:
            plan = planner_b.plan(EqualTo(column, value))
            one_write[(column, value)] = len(plan.files)
        return one_write[(column, value)]

    last_batch_files = 0
    for s in streamed.list_snapshots():
        files = streamed.scan_files(s)
        added = added_files(streamed, s)  # an APPEND snapshot's batch (others: none)
        if s.commit_kind is CommitKind.APPEND:
            last_batch_files = len(added)
            for e in added:
                data = streamed.file_io.read_bytes(streamed.data_file_path(e))
                t = pq.read_table(io.BytesIO(data), columns=["k", "u"])
                present.extend(zip(t["k"].to_pylist(), t["u"].to_pylist(), strict=True))
        size = sum(e.file.file_size for e in files)
        level0 = sum(1 for e in files if e.file.level == 0)
        if args.mode == "size":
            bound = int(size // (SMALL_FILE_RATIO * target)) + least
        else:
            clustered = sum(e.file.file_size for e in files if e.file.level > 0)
            bound = math.ceil(clustered / (SMALL_FILE_RATIO * target)) + 1
            bound += cap - 1 + last_batch_files
        if len(files) > bound:
            violations.append(f"snapshot {s.id}: {len(files)} live files > bound {bound}")
        row = {
            "id": s.id,
            "kind": s.commit_kind.value,
            "live_files": len(files),
            "level0_files": level0,
            "bound": bound,
        }
        if present:
            planner = ScanPlanner(streamed)
            picks = rng.sample(present, min(args.lookups_per_snapshot, len(present)))
            for j, column in enumerate(("k", "u")):
                got = [len(planner.plan(EqualTo(column, p[j]), snapshot=s).files) for p in picks]
                once = [kept_once(column, p[j]) for p in picks]
                ratio = statistics.mean(got) / statistics.mean(once)
                row[f"{column}_files_mean"] = statistics.mean(got)
                row[f"{column}_files_max"] = max(got)
                row[f"{column}_one_write_mean"] = statistics.mean(once)
                row[f"{column}_ratio"] = ratio
                if ratio > LIMIT:
                    violations.append(
                        f"snapshot {s.id}: lookup on {column} keeps {ratio:.2f}x the files"
                        f" of one write (> {LIMIT})"
                    )
        snapshots.append(row)
    result: dict[str, object] = {}
    finals = rng.sample(present, min(args.lookups, len(present)))
    for j, column in enumerate(("k", "u")):
        kept = {"streamed": [], "batch": []}  # type: dict[str, list[int]]
        for r in finals:
            kept["streamed"].append(len(ScanPlanner(streamed).plan(EqualTo(column, r[j])).files))
            kept["batch"].append(kept_once(column, r[j]))
        # the oracle: both tables answer each of the first lookups with the same rows
        for r in finals[:10]:
            a, b = (
                spark.sql(
                    f"SELECT count(*) FROM lakeskip.bench.{n} WHERE {column} = ?",
                    args=[r[j]],
                ).collect()[0][0]
                for n in ("streamed", "batch")
            )
            assert a == b and a >= 1, f"{column} = {r[j]}: {a} rows streamed, {b} batch"
        mean_s = statistics.mean(kept["streamed"])
        mean_b = statistics.mean(kept["batch"])
        result[column] = {
            "mean_files_streamed": mean_s,
            "mean_files_batch": mean_b,
            "ratio": mean_s / mean_b if mean_b else None,
            "max_files_streamed": max(kept["streamed"]),
            "max_files_batch": max(kept["batch"]),
        }
        if mean_s / mean_b > LIMIT:
            violations.append(f"after the stream: lookup on {column} {mean_s / mean_b:.2f}x")
    during = {c: [r[f"{c}_ratio"] for r in snapshots if f"{c}_ratio" in r] for c in ("k", "u")}
    out = {
        "args": vars(args),
        "stream_s": stream_s,
        "stream_and_clustering_s": clustered_s,
        "batch_s": batch_s,
        "snapshots": snapshots,
        "peak_live_files": max(r["live_files"] for r in snapshots),
        "peak_level0_files": max(r["level0_files"] for r in snapshots),
        "bound_held": not any("bound" in v for v in violations),
        "final_live_files_streamed": len(streamed.scan_files()),
        "live_files_batch": len(batch.scan_files()),
        "lookups_after": result,
        "k_ratio_mean_over_snapshots": statistics.mean(during["k"]),
        "k_ratio_max_over_snapshots": max(during["k"]),
        "u_ratio_max_over_snapshots": max(during["u"]),
        "k_files_max_over_snapshots": max(r.get("k_files_max", 0) for r in snapshots),
        "violations": violations,
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
    }
    shown = {k: v for k, v in out.items() if k != "snapshots"}
    print(json.dumps(shown, indent=2))
    path = (
        Path(__file__).parent / "results" / f"stream-layout-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    path.write_text(json.dumps(out, indent=2))
    print(f"results: {path}")
    spark.stop()
    if violations:
        raise SystemExit(f"{len(violations)} violations: " + "; ".join(violations[:5]))


if __name__ == "__main__":
    main()
