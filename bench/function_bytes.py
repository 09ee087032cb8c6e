"""Bytes read through functions of a clustered column, ORDER BY ... LIMIT and ``count(*)``
(issue 39's first Done-when item): a lakeskip table against plain ``spark.read.parquet`` over
the same data files, by Spark's own task input metrics.

    make bench-functions            # or: .venv/bin/python bench/function_bytes.py --rows 2000000

Builds one append table of ``--rows`` rows clustered by ``ts`` (``repartitionByRange(--files,
ts)``, sorted within each file; ``s`` rises with ``ts``), then runs each query once on the
catalog table and once on a temp view of ``spark.read.parquet(<the table's data files>)``, each
in its own job group. The bytes are the sum of ``inputBytes`` over every stage attempt of the
group's jobs, read from the same session's status REST API (``/api/v1/.../stages``, filled by
Spark's own listener); answers are compared (sorted rows). ``count(*)`` records how many Spark
jobs each side ran. Bytes do not depend on load; the wall seconds printed beside them do (the
load average is recorded). Writes ``bench/results/function-bytes-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import urllib.request
from collections.abc import Callable
from functools import partial
from typing import Any

from pyspark.sql import SparkSession
from results_file import load_average, write_results  # type: ignore[import-not-found]

import lakeskip

START = 1672531200  # 2023-01-01 00:00:00 UTC
SPAN_S = 2 * 365 * 86400  # two years of rows

QUERIES = (
    (
        "year(ts) = .. AND month(ts) = ..",
        "SELECT * FROM {t} WHERE year(ts) = 2023 AND month(ts) = 6",
    ),
    (
        "CAST(ts AS DATE) = DATE '..'",
        "SELECT * FROM {t} WHERE CAST(ts AS DATE) = DATE '2024-02-29'",
    ),
    (
        "date_trunc('DAY', ts) = ..",
        "SELECT * FROM {t} WHERE date_trunc('DAY', ts) = TIMESTAMP '2024-02-29 00:00:00'",
    ),
    ("substring(s, 1, 6) = '..'", "SELECT * FROM {t} WHERE substring(s, 1, 6) = 'u00123'"),
    ("ORDER BY ts DESC LIMIT 5", "SELECT * FROM {t} ORDER BY ts DESC LIMIT 5"),
    ("SELECT count(*)", "SELECT count(*) FROM {t}"),
)


def _get(base: str, path: str) -> Any:
    with urllib.request.urlopen(f"{base}{path}", timeout=30) as r:
        return json.loads(r.read())


def _rows(spark: SparkSession, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def _measured(spark: SparkSession, group: str, run: Callable[[], Any]) -> dict[str, Any]:
    """Run ``run`` in job group ``group``; its answer, wall seconds, job count and input bytes."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    t = time.perf_counter()
    answer = run()
    wall = time.perf_counter() - t
    sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    jobs = sorted(sc.statusTracker().getJobIdsForGroup(group))
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
    total = 0
    for job in jobs:
        deadline = time.monotonic() + 60
        while True:  # the status store is filled by the listener bus, asynchronously
            data = _get(base, f"/jobs/{job}")
            stages = [a for sid in data["stageIds"] for a in _get(base, f"/stages/{sid}")]
            if data["status"] != "RUNNING" and all(
                a["status"] not in ("ACTIVE", "PENDING") for a in stages
            ):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job} of {group} not finished in the status store")
            time.sleep(0.2)
        total += sum(int(a["inputBytes"]) for a in stages if a["status"] == "COMPLETE")
    return {"answer": answer, "wall_s": wall, "jobs": len(jobs), "input_bytes": total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument(
        "--vectored-io",
        action="store_true",
        help="leave parquet-mr's vectored reads on (input metrics then count little but footers)",
    )
    args = ap.parse_args()
    load_start = load_average()
    wh = tempfile.mkdtemp(prefix="lakeskip-fnbytes-")
    s = lakeskip.connect(
        wh,
        master="local[2]",
        conf={
            "spark.ui.enabled": "true",
            "spark.ui.port": "0",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.session.timeZone": "UTC",
            # parquet-mr's vectored reads fetch column chunks on other threads, which Spark's
            # per-thread input metrics do not see (only the footers would be counted)
            "spark.hadoop.parquet.hadoop.vectored.io.enabled": str(args.vectored_io).lower(),
        },
    )
    spark = s.spark
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.b")
    spark.sql("CREATE TABLE lakeskip.b.t (id BIGINT, ts TIMESTAMP, s STRING, v DOUBLE)")
    step = SPAN_S / args.rows
    rows = spark.sql(
        f"""SELECT id, timestamp_seconds({START} + CAST(id * {step} AS BIGINT)) AS ts,
                   concat('u', lpad(CAST(id AS STRING), 7, '0')) AS s, rand(7) AS v
            FROM range({args.rows})"""
    )
    t0 = time.perf_counter()
    rows.repartitionByRange(args.files, "ts").sortWithinPartitions("ts").writeTo(
        "lakeskip.b.t"
    ).append()
    built = time.perf_counter() - t0
    files = s.table("b.t").files()
    data_bytes = sum(os.path.getsize(f.removeprefix("file:")) for f in files)
    spark.read.parquet(*files).createOrReplaceTempView("plain")
    results = []
    for i, (form, sql) in enumerate(QUERIES):
        row: dict[str, Any] = {"form": form, "sql": sql.format(t="<t>")}
        for side, name in (("lakeskip", "lakeskip.b.t"), ("spark", "plain")):
            m = _measured(spark, f"fn-{i}-{side}", partial(_rows, spark, sql.format(t=name)))
            row[side] = {k: v for k, v in m.items() if k != "answer"}
            row[f"{side}_answer"] = m["answer"]
        assert row["lakeskip_answer"] == row["spark_answer"], form
        row["answer_rows"] = len(row.pop("spark_answer"))
        answer = row.pop("lakeskip_answer")
        row["answer_head"] = answer[:1] if form == "SELECT count(*)" else []
        sb = row["spark"]["input_bytes"]
        row["bytes_ratio"] = row["lakeskip"]["input_bytes"] / sb if sb else None
        results.append(row)
    load_end = load_average()
    spark.stop()
    print(
        f"table: {len(files)} files, {args.rows} rows clustered by ts (built in {built:.1f} s), "
        f"{data_bytes} bytes of data files; vectored IO {args.vectored_io}"
    )
    for r in results:
        lk, sp = r["lakeskip"], r["spark"]
        ratio = f"{r['bytes_ratio']:.1%}" if r["bytes_ratio"] is not None else "n/a"
        print(
            f"{r['form']}: lakeskip {lk['input_bytes']} B in {lk['jobs']} jobs ({lk['wall_s']:.2f} s), "
            f"Spark {sp['input_bytes']} B in {sp['jobs']} jobs ({sp['wall_s']:.2f} s): {ratio}; "
            f"{r['answer_rows']} rows, equal"
        )
    write_results(
        "function-bytes",
        {
            "bench": "function_bytes",
            "files": len(files),
            "rows": args.rows,
            "data_file_bytes": data_bytes,
            "vectored_io": args.vectored_io,
            "queries": results,
        },
        load_start,
        load_end,
    )


if __name__ == "__main__":
    main()
