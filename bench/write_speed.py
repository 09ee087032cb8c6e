"""A lakeskip write against Spark's own ``df.write.parquet`` of the same cached rows, stage by stage.

    .venv/bin/python bench/write_speed.py                          # 2M/20 and 4M/40, 3 rounds
    .venv/bin/python bench/write_speed.py --sizes 2000000:20 --rounds 5

The rows of ``bench/run.py`` (``generate_events``, ``files`` Spark partitions) are cached in
memory once per size. Then, interleaved round by round (the order flips every round, so a load
change on a shared machine hits every side):

- ``spark``: ``df.write.parquet`` with ``compression = zstd`` (lakeskip's default codec), one
  file per partition; parquet-mr's zstd level is 3 (``parquet.compression.codec.zstd.level``),
  pyarrow's and Paimon's (``file.compression.zstd-level``) 1, so ``spark_l1`` writes at level 1;
- ``lakeskip``: ``Session.write`` (the INSERT path: ``write_dataframe`` -> ``mapInArrow`` write
  tasks -> one commit) into an append table with a bloom filter on user_id, bitmaps on country,
  status and attrs[device] and a range-bitmap on price, ``target-file-size`` 1 GB (one file per
  partition, as Spark);
- ``transfer``: the same rows through ``mapInArrow`` into Python workers that only count them:
  what the JVM -> Arrow -> Python hand-over costs before lakeskip's writer does anything;
- ``noop``: Spark's ``noop`` sink: reading the cached rows and nothing else, the part every
  side pays (``spark`` - ``noop`` is parquet-mr's encoding and upload, ``transfer`` - ``noop``
  the Arrow hand-over).

Each side's CPU seconds are those of the whole process tree (this driver, the local-mode JVM
that runs the tasks, the PySpark daemon and its workers: ``/proc``, children reaped in between
included), split into JVM / Python workers / driver. The lakeskip side is also split by the
writer's own stages (:class:`~lakeskip.catalog.write.timings.WriteTimings`: CPU seconds of
the workers per stage). Prints median wall and CPU of every side, the ratios lakeskip / spark
side by side, and the median round's breakdown; writes ``bench/results/write-speed-<ts>.json``.
On a loaded machine read the CPU seconds: the wall seconds grow with other processes' load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

import lakeskip
from lakeskip.spark.front.demo import generate_events
from lakeskip.spark.write.writer import last_write_timings

_TICKS = os.sysconf("SC_CLK_TCK")

COLUMNS = (
    "id BIGINT, user_id STRING, country STRING, status STRING, price BIGINT, ts TIMESTAMP, "
    "attrs MAP<STRING, STRING>"
)


def _procs() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds: own user + system and that of reaped children)."""
    out: dict[int, tuple[int, float]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu = sum(int(fields[i]) for i in (11, 12, 13, 14)) / _TICKS
        out[int(d)] = (int(fields[1]), cpu)
    return out


class _TreeCpu:
    """CPU seconds of a process tree during a run, split into the JVM (``jvm`` alone), its
    descendants (the PySpark daemon and Python workers) and the driver (``root`` and the rest).

    Per process: its CPU at the end less its CPU at the start (0 for one started meanwhile).
    A process that ends during the run (Spark stops idle Python workers after a minute, and
    the daemon does not wait for them, so their time reaches no parent's ``cutime``) counts
    with its last sample: a thread samples the tree every ``interval`` seconds (its own CPU
    is not counted).
    """

    def __init__(self, root: int, jvm: int, interval: float = 0.5) -> None:
        self.root, self.jvm, self.interval = root, jvm, interval
        self.own = 0.0  # the sampling thread's own CPU seconds (not the write's)
        self._stop = threading.Event()
        self._start: dict[int, float] = {}
        self._last: dict[int, tuple[int, float]] = {}
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        for pid, v in _procs().items():
            self._last[pid] = v

    def __enter__(self) -> _TreeCpu:
        procs = _procs()
        self._start = {pid: cpu for pid, (_, cpu) in procs.items()}
        self._last = dict(procs)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        t0 = time.thread_time()
        while not self._stop.wait(self.interval):
            self._sample()
        self.own = time.thread_time() - t0

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self._sample()

    def result(self) -> dict[str, float]:
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in self._last.items():
            children.setdefault(ppid, []).append(pid)

        def delta(pid: int) -> float:
            return max(0.0, self._last[pid][1] - self._start.get(pid, 0.0))

        def under(pid: int) -> float:
            return delta(pid) + sum(under(c) for c in children.get(pid, []))

        workers = sum(under(c) for c in children.get(self.jvm, []))
        jvm_cpu = delta(self.jvm)
        driver = under(self.root) - jvm_cpu - workers - self.own
        return {"jvm": jvm_cpu, "workers": workers, "driver": driver}


def _count_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    n = 0
    for b in batches:
        n += b.num_rows
    yield pa.RecordBatch.from_pydict({"n": [n]})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["2000000:20", "4000000:40"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--sides",
        default="spark,lakeskip,transfer,noop",
        help="comma-separated; side@N: with N rows per Arrow batch (maxRecordsPerBatch)",
    )
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-write-speed")
    ap.add_argument("--conf", nargs="*", default=[], help="extra Spark conf key=value")
    args = ap.parse_args()
    conf = {"spark.driver.memory": "4g", **dict(c.split("=", 1) for c in args.conf)}
    shutil.rmtree(args.warehouse, ignore_errors=True)
    session = lakeskip.connect(args.warehouse, conf=conf)
    spark = session.spark
    session.sql("CREATE DATABASE IF NOT EXISTS bench")
    jvm = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    me = os.getpid()
    sides = args.sides.split(",")
    result: dict[str, Any] = {"conf": conf, "sizes": [], "load_before": os.getloadavg()}
    for size in args.sizes:
        rows, files = (int(x) for x in size.split(":"))
        items = max(1000, rows // files)
        session.sql("DROP TABLE IF EXISTS bench.ws")
        session.sql(
            f"""CREATE TABLE bench.ws ({COLUMNS}) WITH (
            'file-index.bloom-filter.columns' = 'user_id',
            'file-index.bloom-filter.user_id.items' = '{items}',
            'file-index.bloom-filter.user_id.fpp' = '0.01',
            'file-index.bitmap.columns' = 'country,status,attrs[device]',
            'file-index.range-bitmap.columns' = 'price',
            'target-file-size' = '1 gb')"""
        )
        df = generate_events(session, rows, files).cache()
        df.count()
        plain = f"{args.warehouse}/plain-{rows}"

        def spark_side() -> None:
            df.write.mode("overwrite").option("compression", "zstd").parquet(plain)  # noqa: B023

        def spark_level1_side() -> None:  # zstd level 1, as pyarrow's and Paimon's default
            df.write.mode("overwrite").option("compression", "zstd").option(  # noqa: B023
                "parquet.compression.codec.zstd.level", "1"
            ).parquet(plain + "-l1")  # noqa: B023

        def lakeskip_side() -> None:
            session.write(df, "bench.ws", mode="overwrite")  # noqa: B023

        def transfer_side() -> None:
            df.mapInArrow(_count_task, "n BIGINT").collect()  # noqa: B023

        def noop_side() -> None:
            df.write.format("noop").mode("overwrite").save()  # noqa: B023

        run: dict[str, Callable[[], None]] = {
            "spark": spark_side,
            "spark_l1": spark_level1_side,
            "lakeskip": lakeskip_side,
            "transfer": transfer_side,
            "noop": noop_side,
        }
        batch_conf = "spark.sql.execution.arrow.maxRecordsPerBatch"
        default_batch = spark.conf.get(batch_conf)

        def run_side(side: str) -> None:
            """``side`` or ``side@N``: with N rows per Arrow batch instead of Spark's setting."""
            name, _, batch = side.partition("@")
            spark.conf.set(batch_conf, batch or default_batch)  # noqa: B023
            try:
                run[name]()  # noqa: B023
            finally:
                spark.conf.set(batch_conf, default_batch)  # noqa: B023

        for s in sides:  # warm-up: JIT, Python workers, imports
            run_side(s)
        load_before = os.getloadavg()
        wall: dict[str, list[float]] = {s: [] for s in sides}
        cpu: dict[str, list[dict[str, float]]] = {s: [] for s in sides}
        stages: list[dict[str, Any]] = []
        for r in range(args.rounds):
            for s in sides if r % 2 == 0 else sides[::-1]:
                with _TreeCpu(me, jvm) as tree:
                    t0 = time.perf_counter()
                    run_side(s)
                    wall[s].append(time.perf_counter() - t0)
                cpu[s].append(tree.result())
                if s.startswith("lakeskip"):
                    timings = last_write_timings()
                    assert timings is not None
                    stages.append(
                        {
                            "side": s,
                            "wall": timings.as_dict(),
                            "cpu": timings.cpu_by_stage(),
                            "seconds": wall[s][-1],
                        }
                    )
        load_after = os.getloadavg()
        files_written = len(list(Path(plain).glob("*.parquet")))
        med = {s: statistics.median(v) for s, v in wall.items()}
        med_cpu = {s: statistics.median(sum(c.values()) for c in v) for s, v in cpu.items()}
        parts = {
            s: {k: statistics.median(c[k] for c in v) for k in ("jvm", "workers", "driver")}
            for s, v in cpu.items()
        }
        entry: dict[str, Any] = {
            "rows": rows,
            "files": files,
            "spark_files": files_written,
            "wall": wall,
            "cpu": cpu,
            "median_wall": med,
            "median_cpu": med_cpu,
            "median_cpu_parts": parts,
            "load_before": load_before,
            "load_after": load_after,
        }
        print(
            f"\n{rows:,} rows / {files} files ({args.rounds} interleaved rounds, medians; "
            f"load {load_before[0]:.1f} -> {load_after[0]:.1f}; spark wrote {files_written} files)"
        )
        print(f"  {'side':<18}{'wall s':>9}{'CPU s':>9}{'JVM':>8}{'workers':>9}{'driver':>8}")
        for s in sides:
            p = parts[s]
            print(
                f"  {s:<18}{med[s]:>9.2f}{med_cpu[s]:>9.2f}{p['jvm']:>8.2f}{p['workers']:>9.2f}"
                f"{p['driver']:>8.2f}"
            )
        if "spark" in sides:
            for s in sides:
                if s != "spark":
                    entry[f"{s}_ratio"] = {
                        "wall": med[s] / med["spark"],
                        "cpu": med_cpu[s] / med_cpu["spark"],
                    }
                    print(
                        f"  {s} / spark: wall {med[s] / med['spark']:.2f}x, "
                        f"CPU {med_cpu[s] / med_cpu['spark']:.2f}x"
                    )
        for side in sorted({st["side"] for st in stages}):
            mine = [st for st in stages if st["side"] == side]
            mid = sorted(mine, key=lambda x: x["seconds"])[len(mine) // 2]
            entry[f"{side}_stages_median_round"] = mid
            shown = ", ".join(f"{k} {v:.2f}" for k, v in mid["cpu"].items() if v > 0.005)
            print(f"  {side} workers' CPU by writer stage (median round): {shown}")
        result["sizes"].append(entry)
        df.unpersist()
    out = Path(__file__).parent / "results" / f"write-speed-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")
    spark.stop()


if __name__ == "__main__":
    main()
