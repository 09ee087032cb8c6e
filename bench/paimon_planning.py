"""Planning at many files, lakeskip against Paimon's Spark connector (issue 40; run from
``paimon_connector.py --planning-files N``).

One table, ``lakeskip.b.plan`` (``id BIGINT, v BIGINT, p INT``, partitioned by ``p``), of
``N`` small files in ``--planning-partitions`` partitions, as many small appends make a table:
each partition's first file is written by lakeskip's writer (Parquet, stats), the partition's
other files are byte copies of it under their own names (same rows, same stats: planning
reads the metadata, not the rows), all committed as one APPEND snapshot. Paimon's connector
reads the same table through the ``paimon`` catalog (same warehouse).

Planning is timed as Spark does it before a job: ``spark.sql`` through the executed plan's
RDD and its partitions (``executedPlan().execute().getNumPartitions()``, which lists the
scan's input partitions: lakeskip's ``plan_scan`` callback and Spark's file splits; Paimon's
manifest reads and splits), no job run, adaptive execution off (no exchange here anyway).
Files kept: the scan's driver metric (``lakeskipFilesKept``; Paimon's ``resultedTableFiles``).
The first run of each query is reported apart (cold: nothing cached yet); then ``repeat``
interleaved runs, medians (warm: lakeskip's ``ScanCache`` and ``TableCache``, Paimon's
catalog caches).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any

import pyarrow as pa

from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec, bucket_dir

ROWS_PER_FILE = 20


def make_table(s: Any, files: int, partitions: int) -> dict[str, Any]:
    """``lakeskip.b.plan`` with ``files`` files over ``partitions`` partitions."""
    t0 = time.perf_counter()
    s.spark.sql("CREATE TABLE lakeskip.b.plan (id BIGINT, v BIGINT, p INT) PARTITIONED BY (p)")
    table = s.catalog.get_table("b.plan")
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    per = max(1, files // partitions)
    entries = []
    for p in range(partitions):
        lo = p * per * ROWS_PER_FILE
        data = pa.table(
            {
                "id": pa.array(range(lo, lo + ROWS_PER_FILE), pa.int64()),
                "v": pa.array([(i * 7919) % 1000 for i in range(ROWS_PER_FILE)], pa.int64()),
                "p": pa.array([p] * ROWS_PER_FILE, pa.int32()),
            }
        )
        first = write_data_file(spec, data, (p,), f"data-plan-{p}-0.parquet")
        directory = bucket_dir(spec, (p,))
        body = table.file_io.read_bytes(f"{directory}/{first.file.file_name}")
        entries.append(first)
        for i in range(1, per):
            name = f"data-plan-{p}-{i}.parquet"
            table.file_io.write_bytes(f"{directory}/{name}", body)
            entries.append(
                dataclasses.replace(first, file=dataclasses.replace(first.file, file_name=name))
            )
    written = time.perf_counter() - t0
    table.commit(entries)
    return {
        "files": len(entries),
        "partitions": partitions,
        "rows": len(entries) * ROWS_PER_FILE,
        "write_s": written,
        "commit_s": time.perf_counter() - t0 - written,
    }


def plan_metric(plan: Any, name: str) -> int | None:
    """The sum of a metric over a JVM plan's nodes (through AQE's query stages), or None when
    no node has it."""
    total, found = 0, False
    stack = [plan]
    while stack:
        node = stack.pop()
        metrics = node.metrics()
        if metrics.contains(name):
            total += int(metrics.apply(name).value())
            found = True
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
        if node.getClass().getSimpleName().endswith("QueryStageExec"):  # AQE hides its plan
            stack.append(node.plan())
    return total if found else None


def _plan(spark: Any, sql: str, metric: str) -> tuple[float, int | None, int]:
    t = time.perf_counter()
    plan = spark.sql(sql)._jdf.queryExecution().executedPlan()
    partitions = int(plan.execute().getNumPartitions())
    seconds = time.perf_counter() - t
    return seconds, plan_metric(plan, metric), partitions


def compare(s: Any, repeat: int) -> list[dict[str, Any]]:
    """Planning of a one-partition query and a full-table query on both engines."""
    spark = s.spark
    metrics = {"lakeskip": "lakeskipFilesKept", "paimon": "resultedTableFiles"}
    queries = {
        "one partition": "SELECT id, v FROM {t} WHERE p = 7",
        "whole table": "SELECT id, v FROM {t}",
    }
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    out = []
    try:
        for name, sql in queries.items():
            row: dict[str, Any] = {"query": name, "sql": sql}
            times: dict[str, list[float]] = {e: [] for e in metrics}
            for i in range(repeat + 1):
                for engine in metrics if i % 2 == 0 else list(metrics)[::-1]:
                    seconds, kept, parts = _plan(
                        spark, sql.format(t=f"{engine}.b.plan"), metrics[engine]
                    )
                    if i == 0:
                        row[f"{engine}_first_s"] = seconds
                        row[f"{engine}_kept"] = kept
                        row[f"{engine}_splits"] = parts
                    else:
                        times[engine].append(seconds)
            for engine in metrics:
                row[f"{engine}_s"] = times[engine]
                row[f"{engine}_median_s"] = statistics.median(times[engine])
            out.append(row)
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    return out
