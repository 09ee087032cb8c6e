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
Before any timed plan, each engine plans a one-file table once (``lakeskip.b.plan_warm``,
untimed): the classes both load on their first query, so that the first run of each query is
cold in its metadata only (nothing of ``b.plan`` cached yet), reported apart; then ``repeat``
interleaved runs, medians (warm: lakeskip's ``ScanCache`` and ``TableCache``, Paimon's
catalog caches). Beside the wall time, each plan's CPU seconds: the JVM's (``/proc``, every
thread: Paimon's manifest readers, the JIT and GC included) and this Python process's
(lakeskip's callbacks), which a loaded machine distorts less than the wall time; and the
seconds lakeskip's Python callbacks took (``callback_stats``).
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import time
from typing import Any

import pyarrow as pa
from plan_metrics import plan_metric  # type: ignore[import-not-found]

from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec, bucket_dir
from lakeskip.spark.front.catalog_setup import service_for

ROWS_PER_FILE = 20


def make_table(s: Any, files: int, partitions: int) -> dict[str, Any]:
    """``lakeskip.b.plan`` with ``files`` files over ``partitions`` partitions (and the
    one-file ``lakeskip.b.plan_warm`` that :func:`compare` warms both engines up on)."""
    _make(s, "b.plan_warm", 1, 1)
    return _make(s, "b.plan", files, partitions)


def _make(s: Any, name: str, files: int, partitions: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    s.spark.sql(f"CREATE TABLE lakeskip.{name} (id BIGINT, v BIGINT, p INT) PARTITIONED BY (p)")
    table = s.catalog.get_table(name)
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


class _Cpu:
    """CPU seconds used so far by the JVM (``/proc/<pid>/stat``: every thread) and by this
    Python process; the JVM's is None where ``/proc`` does not show it."""

    def __init__(self, spark: Any) -> None:
        proc = getattr(spark.sparkContext._gateway, "proc", None)
        self._stat = f"/proc/{proc.pid}/stat" if proc is not None else ""
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def jvm(self) -> float | None:
        try:
            with open(self._stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / self._tick  # utime + stime

    @staticmethod
    def python() -> float:
        return time.process_time()


def _plan(spark: Any, sql: str, metric: str, cpu: _Cpu) -> dict[str, Any]:
    """One plan: wall seconds, CPU seconds (JVM, Python), files kept, splits."""
    jvm0, py0 = cpu.jvm(), cpu.python()
    t = time.perf_counter()
    plan = spark.sql(sql)._jdf.queryExecution().executedPlan()
    partitions = int(plan.execute().getNumPartitions())
    seconds = time.perf_counter() - t
    jvm1, py1 = cpu.jvm(), cpu.python()
    return {
        "s": seconds,
        "jvm_cpu_s": jvm1 - jvm0 if jvm0 is not None and jvm1 is not None else None,
        "py_cpu_s": py1 - py0,
        "kept": plan_metric(plan, metric),
        "splits": partitions,
    }


def compare(s: Any, repeat: int, made: dict[str, Any]) -> list[dict[str, Any]]:
    """Planning of a one-partition query, a full-table query and a query on a data column
    keeping one partition's files by their stats, on both engines (``made``: what
    :func:`make_table` made)."""
    spark = s.spark
    service = service_for(spark)
    cpu = _Cpu(spark)
    metrics = {"lakeskip": "lakeskipFilesKept", "paimon": "resultedTableFiles"}
    per = max(1, made["files"] // made["partitions"])
    lo = (7 % made["partitions"]) * per * ROWS_PER_FILE  # as _make numbers partition 7's ids
    queries = {
        "one partition": "SELECT id, v FROM {t} WHERE p = 7",
        "whole table": "SELECT id, v FROM {t}",
        # partition 7's files by their stats (each of its files holds the ids lo to
        # lo + ROWS_PER_FILE - 1), after the two above: the manifests read, no stats decoded
        "data column": f"SELECT id, v FROM {{t}} WHERE id >= {lo} AND id < {lo + ROWS_PER_FILE}",
    }
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    out = []
    try:
        for engine in metrics:  # classes loaded, catalogs started: untimed
            _plan(spark, f"SELECT id, v FROM {engine}.b.plan_warm", metrics[engine], cpu)
        for name, sql in queries.items():
            row: dict[str, Any] = {"query": name, "sql": sql}
            runs: dict[str, list[dict[str, Any]]] = {e: [] for e in metrics}
            for i in range(repeat + 1):
                for engine in metrics if i % 2 == 0 else list(metrics)[::-1]:
                    before = service.callback_stats()
                    r = _plan(spark, sql.format(t=f"{engine}.b.plan"), metrics[engine], cpu)
                    if engine == "lakeskip":
                        r["callback_s"] = sum(
                            service.callback_stats().since(before).seconds.values()
                        )
                    if i == 0:
                        row[f"{engine}_first_s"] = r["s"]
                        row[f"{engine}_first"] = r
                        row[f"{engine}_kept"] = r["kept"]
                        row[f"{engine}_splits"] = r["splits"]
                    else:
                        runs[engine].append(r)
            for engine in metrics:
                row[f"{engine}_s"] = [r["s"] for r in runs[engine]]
                row[f"{engine}_median_s"] = statistics.median(row[f"{engine}_s"])
                row[f"{engine}_runs"] = runs[engine]
            out.append(row)
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    return out
