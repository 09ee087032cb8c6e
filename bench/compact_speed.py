"""Sort compaction (``CALL sys.compact``) against Spark sorting and writing the same rows itself.

    .venv/bin/python bench/compact_speed.py                        # 4M rows / 40 files, 3 rounds
    .venv/bin/python bench/compact_speed.py --rows 2000000 --files 20 --rounds 5
    .venv/bin/python bench/compact_speed.py --profile              # + where zorder's time goes

An append table (the columns, bloom filter, bitmaps and range-bitmap of ``write_speed.py``) is
written once from ``generate_events``: ``--files`` files of rows in random order on the sort
columns. Its ``target-file-size`` is set to the data's bytes / ``--files``, so a compaction
writes about as many files as it reads. Then, interleaved round by round (the order flips
every round), each side sorts the same rows (those of the first snapshot) on ``--by``
(``country,price``):

- ``zorder``: ``CALL sys.compact(order_strategy => 'zorder', order_by => ...)`` (rank keys,
  the default ``sort.curve-keys``; three rounds of Python tasks exchanging Arrow spill files,
  :mod:`lakeskip.procedures.sort_rewrite`), files with stats and the five indexes;
- ``spark_zorder``: Spark doing a z-order itself, as Delta's ``OPTIMIZE ZORDER BY`` does, in
  plain Spark SQL (Spark has no z-order function): one job samples the sort columns
  (``df.sample``, about 16K rows, to the driver), each column gets up to 255 boundaries
  (quantiles of the sample, ties merged); then ``spark.read.parquet`` of the input files, a
  column ``z`` = the columns' ranks (number of boundaries <= value, a binary search written
  as nested ``IF``s, compiled by codegen; null: 0), spread over 8 bits each and their bits
  interleaved (``shiftleft`` / ``&``), ``repartitionByRange(n, z)``, ``sortWithinPartitions(z)``,
  ``drop(z)``, ``write.parquet``;
- ``order``: ``CALL sys.compact(order_strategy => 'order', order_by => ...)`` (Spark's
  range shuffle on the columns, lakeskip's write tasks);
- ``spark_order``: ``spark.read.parquet(files).repartitionByRange(n, *by)
  .sortWithinPartitions(*by).write.parquet``;
- ``read`` (not a default side): ``spark.read.parquet(files)`` into Spark's ``noop`` sink, the
  part every Spark side pays.

Both Spark sides write zstd at level 1 (lakeskip's codec and level: pyarrow's default, as
Paimon's ``file.compression.zstd-level``) with ``n`` = the number of files lakeskip's
compaction of the same strategy wrote in the warm-up round (same file count). Before every
lakeskip round ``CALL sys.rollback`` (metadata only) brings back the first snapshot's files,
so every round compacts the same unsorted files. CPU seconds are the whole process tree's
(``write_speed._TreeCpu``: this driver, the local-mode JVM, the PySpark daemon and workers),
split into JVM / Python workers / driver.

``--profile``: after the rounds, the zorder compaction's Python half is run once in this
process (:func:`~lakeskip.procedures.sort_rewrite.rewrite_sorted_in_tasks` with an in-process
executor, under cProfile) over the same files, and its CPU is split by step: reading the
Parquet files, keys, sorts, Arrow takes, the spill files, Parquet encoding, stats, indexes.
Writes ``bench/results/compact-speed-<ts>.json``. On a loaded machine read the CPU seconds.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import pstats
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from write_speed import COLUMNS, _TreeCpu  # type: ignore[import-not-found]

import lakeskip
from lakeskip.spark.front.demo import generate_events
from lakeskip.spark.read.query import table_file_paths
from lakeskip.spark.write.writer import last_write_timings

TABLE = "bench.cs"
#: bits of each column's coordinate in Spark's own z-value (255 boundaries at most)
SPARK_RANK_BITS = 8
#: rows of the sample Spark's z-order side draws (64 per rank, as lakeskip's sampler)
SPARK_SAMPLE_ROWS = 64 * 2**SPARK_RANK_BITS

T = TypeVar("T")
R = TypeVar("R")


def _rank(column: str, bounds: Sequence[Any]) -> Column:
    """The number of ``bounds`` (ascending, distinct) <= the value, as nested IFs (a binary
    search Spark compiles); a null value's comparisons are false: rank 0."""
    col = F.col(f"`{column}`")

    def node(lo: int, hi: int) -> Column:
        if lo == hi:
            return F.lit(lo)
        mid = (lo + hi + 1) // 2  # ranks >= mid iff value >= bounds[mid - 1]
        return F.when(col >= F.lit(bounds[mid - 1]), node(mid, hi)).otherwise(node(lo, mid - 1))

    return node(0, len(bounds))


def _spark_bounds(df: DataFrame, by: Sequence[str], rows: int) -> list[list[Any]]:
    """Per column, up to 2**SPARK_RANK_BITS - 1 boundaries: quantiles of a sample drawn by
    one Spark job (the sample goes to the driver), ties merged."""
    fraction = min(1.0, SPARK_SAMPLE_ROWS / max(1, rows))
    sample = df.select(*[F.col(f"`{c}`") for c in by]).sample(fraction, seed=7).collect()
    out = []
    wanted = 2**SPARK_RANK_BITS
    for i in range(len(by)):
        values = sorted(r[i] for r in sample if r[i] is not None)
        m = len(values)
        picks = sorted({values[(k * m) // wanted] for k in range(1, wanted)}) if m else []
        out.append(picks)
    return out


def spark_zorder(df: DataFrame, by: Sequence[str], rows: int, n: int) -> DataFrame:
    """``df`` range-partitioned into ``n`` tasks on a z-value computed in Spark SQL and sorted
    within them (see the module doc)."""
    bounds = _spark_bounds(df, by, rows)
    levels = 2**SPARK_RANK_BITS
    coords = [
        F.floor(_rank(c, b) * F.lit(levels) / F.lit(len(b) + 1)).cast("int")
        for c, b in zip(by, bounds, strict=True)
    ]
    named = df.select("*", *[x.alias(f"__r{i}") for i, x in enumerate(coords)])
    k = len(by)
    terms = [
        F.shiftleft(
            F.shiftright(F.col(f"__r{i}"), bit).bitwiseAND(F.lit(1)).cast("long"),
            bit * k + (k - 1 - i),
        )
        for bit in range(SPARK_RANK_BITS)
        for i in range(k)
    ]
    z = terms[0]
    for t in terms[1:]:
        z = z.bitwiseOR(t)
    keyed = named.withColumn("__z", z).drop(*[f"__r{i}" for i in range(k)])
    return keyed.repartitionByRange(n, F.col("__z")).sortWithinPartitions("__z").drop("__z")


class _LocalExecutor:
    """Runs procedure tasks in this process, one after another (for the profile)."""

    parallelism = 2

    def map(self, fn: Callable[[T], R], items: Sequence[T], description: str) -> list[R]:
        return [fn(x) for x in items]

    def rewrite_sorted(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _profile_zorder(session: Any, by: Sequence[str], entries: Sequence[Any]) -> dict[str, Any]:
    """CPU seconds of the zorder rewrite's Python half, in this process, by task and step."""
    from lakeskip.procedures.base import SortSpec
    from lakeskip.procedures.sort_rewrite import rewrite_sorted_in_tasks
    from lakeskip.sort.clustering import curve_keys_from_options

    table = session.catalog.get_table(TABLE)
    sort = SortSpec("zorder", tuple(by), 8, curve_keys_from_options(table.schema.options))
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    new = rewrite_sorted_in_tasks(table, entries, sort, _LocalExecutor())  # type: ignore[arg-type]
    prof.disable()
    table.remove_unpublished(new)
    stats = pstats.Stats(prof)
    # (file, line, function) -> (own CPU s, cumulative CPU s)
    funcs: dict[tuple[str, int, str], tuple[float, float]] = {
        k: (v[2], v[3])
        for k, v in stats.stats.items()  # type: ignore[attr-defined]
    }

    def cumulative(file_end: str, *names: str) -> float:
        return sum(
            ct for (f, _, fn), (_, ct) in funcs.items() if f.endswith(file_end) and fn in names
        )

    out: dict[str, Any] = {
        "total": max((ct for _, ct in funcs.values()), default=0.0),
        "sample task (read the sort columns, sample)": cumulative(
            "sort_rewrite.py", "sample_columns"
        ),
        "map task (read, key, sort, spill)": cumulative("sort_rewrite.py", "sort_to_spill"),
        "  read Parquet (sample + map tasks)": cumulative("sort_rewrite.py", "_read"),
        "  curve keys": cumulative("sort_rewrite.py", "_keys"),
        "reduce task (gather, sort, write files)": cumulative("sort_rewrite.py", "write_ranges"),
        "  gather (spill read, filter, sort, take)": cumulative("sort_rewrite.py", "_gather"),
        "  Parquet encode + file write": cumulative("rolling_writer.py", "_flush_group"),
        "  stats": cumulative("stats.py", "add", "result"),
        "  file indexes": cumulative("file_index.py", "add", "finish"),
    }
    top = sorted(funcs.items(), key=lambda kv: -kv[1][0])[:15]
    out["_top_own"] = [(f"{Path(k[0]).name}:{k[2]}", round(v[0], 3)) for k, v in top]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--by", default="country,price")
    ap.add_argument("--sides", default="zorder,spark_zorder,order,spark_order")
    ap.add_argument("--profile", action="store_true", help="profile zorder's Python half")
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-compact-speed")
    ap.add_argument("--conf", nargs="*", default=[], help="extra Spark conf key=value")
    args = ap.parse_args()
    conf = {"spark.driver.memory": "4g", **dict(c.split("=", 1) for c in args.conf)}
    shutil.rmtree(args.warehouse, ignore_errors=True)
    session = lakeskip.connect(args.warehouse, conf=conf)
    spark = session.spark
    jvm = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    me = os.getpid()
    by = [c.strip() for c in args.by.split(",")]
    sides = args.sides.split(",")
    rows, files = args.rows, args.files
    session.sql("CREATE DATABASE IF NOT EXISTS bench")
    session.sql(
        f"""CREATE TABLE {TABLE} ({COLUMNS}) WITH (
        'file-index.bloom-filter.columns' = 'user_id',
        'file-index.bloom-filter.user_id.items' = '{max(1000, rows // files)}',
        'file-index.bloom-filter.user_id.fpp' = '0.01',
        'file-index.bitmap.columns' = 'country,status,attrs[device]',
        'file-index.range-bitmap.columns' = 'price',
        'target-file-size' = '1 gb')"""
    )
    session.write(generate_events(session, rows, files), TABLE)
    table = session.catalog.get_table(TABLE)
    first = table.latest_snapshot()
    assert first is not None
    entries = table.scan_files(first)
    size = sum(e.file.file_size for e in entries)
    session.sql(
        f"ALTER TABLE {TABLE} SET ('target-file-size' = '{math.ceil(size / len(entries))} b')"
    )
    paths = table_file_paths(table, entries)
    order_by = ", ".join(by)
    out_counts: dict[str, int] = {}
    level1 = {"compression": "zstd", "parquet.compression.codec.zstd.level": "1"}

    def compact(strategy: str) -> None:
        session.sql(f"CALL sys.rollback(table => '{TABLE}', snapshot => {first.id})").collect()
        result = session.sql(
            f"CALL sys.compact(table => '{TABLE}', order_strategy => '{strategy}', "
            f"order_by => '{order_by}')"
        ).collect()
        out_counts[strategy] = int(result[0]["files_after"])

    def spark_write(df: DataFrame, out: str) -> None:
        df.write.mode("overwrite").options(**level1).parquet(out)

    def read_input() -> DataFrame:
        return spark.read.parquet(*paths)

    run: dict[str, Callable[[], None]] = {
        "zorder": lambda: compact("zorder"),
        "order": lambda: compact("order"),
        "spark_zorder": lambda: spark_write(
            spark_zorder(read_input(), by, rows, out_counts.get("zorder", files)),
            f"{args.warehouse}/spark-zorder",
        ),
        "spark_order": lambda: spark_write(
            read_input()
            .repartitionByRange(out_counts.get("order", files), *[F.col(c) for c in by])
            .sortWithinPartitions(*by),
            f"{args.warehouse}/spark-order",
        ),
        "read": lambda: read_input().write.format("noop").mode("overwrite").save(),
    }
    # warm-up, lakeskip first: the Spark sides take its file counts
    for s in sorted(sides, key=lambda s: s.startswith("spark")):
        run[s]()
    load_before = os.getloadavg()
    wall: dict[str, list[float]] = {s: [] for s in sides}
    cpu: dict[str, list[dict[str, float]]] = {s: [] for s in sides}
    order_stages: list[dict[str, float]] = []  # the order side's write tasks, per round
    for r in range(args.rounds):
        for s in sides if r % 2 == 0 else sides[::-1]:
            if s in ("zorder", "order"):  # untimed: back to the unsorted files
                session.sql(
                    f"CALL sys.rollback(table => '{TABLE}', snapshot => {first.id})"
                ).collect()
            with _TreeCpu(me, jvm) as tree:
                t0 = time.perf_counter()
                if s in ("zorder", "order"):
                    result = session.sql(
                        f"CALL sys.compact(table => '{TABLE}', order_strategy => '{s}', "
                        f"order_by => '{order_by}')"
                    ).collect()
                else:
                    run[s]()
                wall[s].append(time.perf_counter() - t0)
            cpu[s].append(tree.result())
            if s in ("zorder", "order"):
                out_counts[s] = int(result[0]["files_after"])
            timings = last_write_timings()
            if s == "order" and timings is not None:  # its write tasks, by writer stage
                order_stages.append(timings.cpu_by_stage())
    load_after = os.getloadavg()
    spark_files = {
        s: len(list(Path(f"{args.warehouse}/{s.replace('_', '-')}").glob("*.parquet")))
        for s in sides
        if s.startswith("spark_")
    }
    med = {s: statistics.median(v) for s, v in wall.items()}
    med_cpu = {s: statistics.median(sum(c.values()) for c in v) for s, v in cpu.items()}
    parts = {
        s: {k: statistics.median(c[k] for c in v) for k in ("jvm", "workers", "driver")}
        for s, v in cpu.items()
    }
    result_json: dict[str, Any] = {
        "rows": rows,
        "files": files,
        "bytes": size,
        "by": by,
        "conf": conf,
        "files_written": {**out_counts, **spark_files},
        "wall": wall,
        "cpu": cpu,
        "median_wall": med,
        "median_cpu": med_cpu,
        "median_cpu_parts": parts,
        "load_before": load_before,
        "load_after": load_after,
    }
    print(
        f"\n{rows:,} rows / {files} files, {size / 2**20:.1f} MiB, by {order_by} "
        f"({args.rounds} interleaved rounds, medians; load {load_before[0]:.1f} -> "
        f"{load_after[0]:.1f}); files written: "
        + ", ".join(f"{k} {v}" for k, v in result_json["files_written"].items())
    )
    print(f"  {'side':<14}{'wall s':>9}{'CPU s':>9}{'JVM':>8}{'workers':>9}{'driver':>8}")
    for s in sides:
        p = parts[s]
        print(
            f"  {s:<14}{med[s]:>9.2f}{med_cpu[s]:>9.2f}{p['jvm']:>8.2f}{p['workers']:>9.2f}"
            f"{p['driver']:>8.2f}"
        )
    for mine in ("zorder", "order"):
        theirs = f"spark_{mine}"
        if mine in sides and theirs in sides:
            ratio = {"wall": med[mine] / med[theirs], "cpu": med_cpu[mine] / med_cpu[theirs]}
            result_json[f"{mine}_ratio"] = ratio
            print(
                f"  compaction {mine} / Spark's own: wall {ratio['wall']:.2f}x, "
                f"CPU {ratio['cpu']:.2f}x"
            )
    if order_stages:
        mid = {k: statistics.median(st[k] for st in order_stages) for k in order_stages[0]}
        result_json["order_worker_stages_cpu"] = mid
        shown = ", ".join(f"{k} {v:.2f}" for k, v in mid.items() if v > 0.005)
        print(f"  order's write tasks, CPU s by writer stage (medians): {shown}")
    if args.profile:
        session.sql(f"CALL sys.rollback(table => '{TABLE}', snapshot => {first.id})").collect()
        prof = _profile_zorder(session, by, table.scan_files())
        result_json["zorder_profile"] = prof
        print("  zorder's Python half in one process (cProfile, CPU s):")
        for k, v in prof.items():
            if k != "_top_own":
                print(f"    {k:<48}{v:>8.2f}")
        print("    most own CPU: " + ", ".join(f"{n} {t}" for n, t in prof["_top_own"]))
    out = Path(__file__).parent / "results" / f"compact-speed-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result_json, indent=2))
    print(f"wrote {out}")
    spark.stop()


if __name__ == "__main__":
    main()
