"""Are lakeskip's data files as fast for Spark to read as Spark's own? TPC-H q1 and q6 over the
same ``lineitem`` rows written by Spark and by lakeskip, with equal file counts.

    tpchgen-cli parquet -s 1 --tables=lineitem --output-dir=/tmp/tpch   # pip install tpchgen-cli
    .venv/bin/python bench/tpch_files.py --source /tmp/tpch/lineitem.parquet --files 4

Spark writes the rows into ``--files`` Parquet files (its defaults: snappy, parquet-mr); lakeskip
writes each of those files' rows, in the same order, into one data file of a table -- once
with its defaults (zstd, Paimon's default codec) and once with ``file.compression = snappy``.
The files are then read by plain ``spark.read.parquet`` -- the files alone, no catalog, no
pruning -- and q1 and q6 are timed interleaved (median of ``--runs``, q6 three times as
many), answers checked equal. Beside each median wall time it gives the median CPU seconds the
JVM spent on the query (local mode: driver and executors in one process), which move far
less with the machine's load than the wall times. It also prints where the files differ: physical types,
encodings, codec, row groups, dictionaries, statistics. Writes
``bench/results/tpch-files-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

import lakeskip

Q1 = """SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
  sum(l_extendedprice) AS sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
  avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc,
  count(*) AS count_order
FROM {t} WHERE l_shipdate <= date '1998-12-01' - interval '90' day
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus"""
Q6 = """SELECT sum(l_extendedprice * l_discount) AS revenue FROM {t}
WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01'
  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24"""
SCHEMA = """l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, l_linenumber INT,
  l_quantity DECIMAL(15, 2), l_extendedprice DECIMAL(15, 2), l_discount DECIMAL(15, 2),
  l_tax DECIMAL(15, 2), l_returnflag STRING, l_linestatus STRING, l_shipdate DATE,
  l_commitdate DATE, l_receiptdate DATE, l_shipinstruct STRING, l_shipmode STRING,
  l_comment STRING"""


def _describe(paths: list[str]) -> dict[str, Any]:
    """What a reader meets in these files, summed per column."""
    out: dict[str, Any] = {"files": len(paths), "bytes": sum(os.path.getsize(p) for p in paths)}
    groups = 0
    columns: dict[str, dict[str, Any]] = {}
    for p in paths:
        meta = pq.ParquetFile(p).metadata
        out["created_by"] = meta.created_by
        groups += meta.num_row_groups
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            for c in range(rg.num_columns):
                col = rg.column(c)
                d = columns.setdefault(
                    col.path_in_schema,
                    {"physical": col.physical_type, "codec": col.compression, "encodings": Counter(),
                     "dictionary_chunks": 0, "bytes": 0, "stats": 0, "chunks": 0},
                )  # fmt: skip
                d["encodings"].update(col.encodings)
                d["dictionary_chunks"] += int(col.has_dictionary_page)
                d["bytes"] += col.total_compressed_size
                d["stats"] += int(col.is_stats_set)
                d["chunks"] += 1
    out["row_groups"] = groups
    out["columns"] = {
        k: {**v, "encodings": sorted(v["encodings"])} for k, v in sorted(columns.items())
    }
    return out


def _print_differences(spark: dict[str, Any], ours: dict[str, Any]) -> None:
    print(f"  {'':22} {'spark':>40} | lakeskip")
    for key in ("files", "bytes", "row_groups", "created_by"):
        print(f"  {key:22} {spark[key]!s:>40} | {ours[key]}")
    for name, a in spark["columns"].items():
        b = ours["columns"].get(name, {})
        diff = {
            k: (a[k], b.get(k))
            for k in ("physical", "codec", "encodings", "dictionary_chunks", "stats")
            if a[k] != b.get(k)
        }
        size = f"{a['bytes'] / 2**20:.1f} vs {b.get('bytes', 0) / 2**20:.1f} MiB"
        print(f"  {name:22} {size:>22} {diff if diff else ''}")


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far (0.0 without /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _timed(spark: Any, sql: str, pid: int = 0) -> tuple[float, list[Any], float]:
    """Wall seconds, rows and the JVM's CPU seconds of one query (local mode: the JVM is the
    driver and the executors)."""
    c0 = _cpu(pid) if pid else 0.0
    t0 = time.perf_counter()
    rows = spark.sql(sql).collect()
    return time.perf_counter() - t0, rows, (_cpu(pid) - c0 if pid else 0.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default="/tmp/tpch/lineitem.parquet")
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-tpch-files")
    args = ap.parse_args()
    shutil.rmtree(args.warehouse, ignore_errors=True)
    session = lakeskip.connect(
        args.warehouse,
        conf={"spark.driver.memory": "6g"},
    )
    spark = session.spark
    spark_dir = f"{args.warehouse}/spark-lineitem"
    t0 = time.perf_counter()
    spark.read.parquet(args.source).repartition(args.files).write.parquet(spark_dir)
    spark_write = time.perf_counter() - t0
    spark_files = sorted(str(p) for p in Path(spark_dir).glob("*.parquet"))
    # lakeskip writes each Spark file's rows, in the same order, as one data file: one
    # DataFrame per file (a file is one split: a row group is never cut), unioned
    session.sql("CREATE DATABASE IF NOT EXISTS bench")
    per_file = [spark.read.parquet(p) for p in spark_files]
    source = per_file[0]
    for df in per_file[1:]:
        source = source.unionByName(df)
    sides = {"spark": spark_files}
    write_seconds = {"spark": spark_write}
    for side, codec in (("lakeskip", None), ("lakeskip-snappy", "snappy")):
        name = f"bench.{side.replace('-', '_')}"
        extra = f", 'file.compression' = '{codec}'" if codec else ""
        session.sql(f"CREATE TABLE {name} ({SCHEMA}) WITH ('target-file-size' = '2 gb'{extra})")
        t0 = time.perf_counter()
        session.write(source, name)
        write_seconds[side] = time.perf_counter() - t0
        sides[side] = session.table(name).files()
    for side, paths in sides.items():
        spark.read.parquet(*paths).createOrReplaceTempView(side.replace("-", "_"))
    described = {side: _describe(paths) for side, paths in sides.items()}
    print("\nfiles: " + ", ".join(f"{k} {len(v)}" for k, v in sides.items()))
    _print_differences(described["spark"], described["lakeskip"])
    times: dict[str, dict[str, list[float]]] = {q: {s: [] for s in sides} for q in ("q1", "q6")}
    cpu: dict[str, dict[str, list[float]]] = {q: {s: [] for s in sides} for q in ("q1", "q6")}
    pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    load = [os.getloadavg()]
    # q6 takes seconds, q1 tens of seconds: q6 gets three times the rounds
    for q, sql, rounds in (("q1", Q1, args.runs), ("q6", Q6, 3 * args.runs)):
        answers = {}
        for side in sides:  # warm-up, and the answers
            answers[side] = _timed(spark, sql.format(t=side.replace("-", "_")))[1]
        assert len({repr(a) for a in answers.values()}) == 1, f"{q}: different answers"
        for i in range(rounds):
            order = list(sides) if i % 2 == 0 else list(reversed(sides))
            for side in order:
                wall, _, used = _timed(spark, sql.format(t=side.replace("-", "_")), pid)
                times[q][side].append(wall)
                cpu[q][side].append(used)
    load.append(os.getloadavg())
    result: dict[str, Any] = {
        "source": args.source,
        "files": args.files,
        "write_seconds": write_seconds,
        "described": described,
        "times": times,
        "jvm_cpu_seconds": cpu,
        "load": load,
    }
    print("\nwrite seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in write_seconds.items()))
    for q, by_side in times.items():
        base = statistics.median(by_side["spark"])
        for side in sides:
            if side == "spark":
                continue
            mine = statistics.median(by_side[side])
            result[f"{q}_speed_{side}"] = base / mine
            base_cpu = statistics.median(cpu[q]["spark"])
            mine_cpu = statistics.median(cpu[q][side])
            result[f"{q}_cpu_speed_{side}"] = base_cpu / mine_cpu if mine_cpu else None
            print(
                f"{q}: Spark's files {base:.2f} s, {side}'s files {mine:.2f} s -> "
                f"{base / mine:.2f}x (median of {len(by_side[side])}); JVM CPU "
                f"{base_cpu:.2f} vs {mine_cpu:.2f} s -> {base_cpu / max(mine_cpu, 1e-9):.2f}x"
            )
    print(f"load average {load[0]} -> {load[1]} (loaded)")
    out = Path(__file__).parent / "results" / f"tpch-files-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2, default=str))
    print(f"wrote {out}")
    spark.stop()


if __name__ == "__main__":
    main()
