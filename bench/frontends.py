"""Repeated point lookup through a JVM-started brain (``spark-sql``) vs the in-process brain.

    .venv/bin/python bench/frontends.py --rows 1000000 --files 32 --runs 15

Writes an events table with bloom(user_id) from a PySpark driver (``lakeskip.connect``), then
runs the same point lookup ``--runs`` times two ways, each after one warm-up run:

* in-process: the query run in this PySpark driver's JVM and its rows collected there
  (``spark._jsparkSession.sql(q).collect()``, like for like with the CLI, which also collects
  in the JVM), and for reference ``spark.sql(q).collect()`` (rows converted to Python too);
* JVM-started: Spark's own ``bin/spark-sql`` with only the ``lakeskip spark-conf`` flags, one
  process running the lookup ``runs + 1`` times (its catalog starts the Python brain); the
  time per statement is the CLI's own "Time taken".

Prints the medians, their ratio and the load average (the machine is shared: the figures are
"loaded"), and writes ``bench/results/frontends-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lakeskip
from lakeskip.spark.front.demo import generate_events
from lakeskip.spark.front.frontends import frontend_command, frontend_conf

TABLE = "bench.frontends"


def _in_process(spark: object, query: str, runs: int) -> tuple[list[float], list[float]]:
    """(JVM-side collect times, Python collect times), alternating, after one warm-up each."""
    jvm_side: list[float] = []
    python_side: list[float] = []
    for i in range(runs + 1):
        started = time.perf_counter()
        spark._jsparkSession.sql(query).collect()  # type: ignore[attr-defined]
        if i:  # the first run warms up
            jvm_side.append(time.perf_counter() - started)
        started = time.perf_counter()
        spark.sql(query).collect()  # type: ignore[attr-defined]
        if i:
            python_side.append(time.perf_counter() - started)
    return jvm_side, python_side


def _spark_sql(warehouse: str, query: str, runs: int, tmp: Path) -> list[float]:
    conf = frontend_conf(warehouse)
    conf.update(
        {
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "2g",
            "spark.sql.sources.parallelPartitionDiscovery.threshold": "4096",
        }
    )
    script = tmp / "lookup.sql"
    script.write_text((query + ";\n") * (runs + 1))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        frontend_command("spark-sql", conf, args=["-f", str(script)]),
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"spark-sql failed: {proc.stderr[-2000:]}")
    taken = [float(m) for m in re.findall(r"Time taken: ([0-9.]+) seconds", proc.stderr)]
    return taken[1:]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=32)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-frontends")
    args = ap.parse_args()
    session = lakeskip.connect(args.warehouse, master="local[2]")
    spark = session.spark
    if not session.catalog.table_exists(TABLE):
        session.sql("CREATE DATABASE IF NOT EXISTS bench")
        session.sql(
            f"CREATE TABLE {TABLE} (id BIGINT, user_id STRING, country STRING, status STRING, "
            "price BIGINT, ts TIMESTAMP, attrs MAP<STRING, STRING>) "
            "WITH ('file-index.bloom-filter.columns' = 'user_id', "
            f"'file-index.bloom-filter.user_id.items' = '{max(1000, args.rows // args.files)}', "
            "'target-file-size' = '1 gb')"
        )
        session.write(generate_events(session, args.rows, args.files), TABLE)
    query = f"SELECT * FROM lakeskip.{TABLE} WHERE user_id = 'u4242'"
    inproc, inproc_python = _in_process(spark, query, args.runs)
    spark.stop()  # one JVM at a time on the machine
    with tempfile.TemporaryDirectory() as tmp:
        jvm = _spark_sql(args.warehouse, query, args.runs, Path(tmp))
    load = os.getloadavg()
    result = {
        "rows": args.rows,
        "files": args.files,
        "runs": args.runs,
        "in_process_median_s": statistics.median(inproc),
        "in_process_python_collect_median_s": statistics.median(inproc_python),
        "jvm_started_median_s": statistics.median(jvm),
        "ratio": statistics.median(jvm) / statistics.median(inproc),
        "load_average": load,
        "in_process_s": inproc,
        "in_process_python_collect_s": inproc_python,
        "jvm_started_s": jvm,
    }
    print(
        f"point lookup, median of {args.runs} (loaded: load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}):\n"
        f"  in-process brain (PySpark driver): {result['in_process_median_s'] * 1000:8.1f} ms"
        f"  (rows to Python: {result['in_process_python_collect_median_s'] * 1000:.1f} ms)\n"
        f"  JVM-started brain (spark-sql)    : {result['jvm_started_median_s'] * 1000:8.1f} ms"
        f"  ({result['ratio']:.2f}x)"
    )
    out = Path(__file__).with_name("results") / f"frontends-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
