"""What two ``spark-sql`` sessions pay run by run while the session's first query warms them up.

Issue 39's ``spark-sql`` gate measures each query's warm runs; the session's first query is
measured in two JVMs that are still compiling. This starts the two CLIs as
``tpch_queries.py --frontend spark-sql`` does (lakeskip's over ``lakeskip.tpch.*``, plain's
over temp views ``USING parquet`` of the same data files, created in both), runs ``--queries``
``--rounds`` times a side interleaved (lakeskip, plain, plain, lakeskip, ...; each run from
quiet to quiet) and prints per run and side: the CLI's time, the JVM's CPU by kind of thread
(tasks, JIT, GC, the rest), young collections and their pause seconds, methods compiled,
classes loaded (``jstat``) and the methods newly in the code cache after the run by package
(``jcmd Compiler.codelist`` diff: what the run made the JIT compile), then per side the sums
over all runs but the first (the answer-checking run, which starts lakeskip's brain).

    .venv/bin/python bench/spark_sql_warmup.py --warehouse <SF 1 warehouse of tpch_queries.py>

Needs the JDK's ``jstat`` and ``jcmd``; the warehouse's tables as ``tpch_queries.py`` loads them.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from spark_sql_cli import (  # type: ignore[import-not-found]
    CallbackTrace,
    SparkSql,
    ThreadCpu,
    thread_cpu_seconds,
)
from tpch_queries import (  # type: ignore[import-not-found]
    QUERIES,
    TABLES,
    _settle,
    cli_confs,
    table_globs,
)

from lakeskip.catalog.catalog import Catalog
from lakeskip.spark.front.frontends import frontend_command

#: a compiled method's bucket by the start of its name (first match)
PACKAGES = (
    ("lakeskip.", "lakeskip"),
    ("org.apache.spark.sql.execution.datasources.v2.", "spark-v2"),
    ("org.apache.spark.sql.execution.datasources.", "spark-files"),
    ("org.apache.spark.sql.catalyst.", "catalyst"),
    ("org.apache.spark.", "spark"),
    ("org.apache.parquet.", "parquet"),
    ("com.fasterxml.", "jackson"),
    ("scala.", "scala"),
    ("java.", "java"),
)
COUNTERS = ("YGC", "YGCT", "Compiled", "Loaded")


def jstat(pid: int) -> dict[str, float]:
    """GC counts and seconds, methods compiled and classes loaded so far (``jstat``)."""
    out: dict[str, float] = {}
    for opt in ("-gcutil", "-compiler", "-class"):
        lines = subprocess.run(
            ["jstat", opt, str(pid)], capture_output=True, text=True, timeout=60
        ).stdout.splitlines()
        for k, v in zip(lines[0].split(), lines[1].split(), strict=False):
            if k in COUNTERS and k not in out:
                out[k] = float(v)
    return out


def compiled(pid: int) -> set[str]:
    """The methods in the JVM's code cache, with their compilation level."""
    text = subprocess.run(
        ["jcmd", str(pid), "Compiler.codelist"], capture_output=True, text=True, timeout=60
    ).stdout
    return {
        f"{p[1]} {p[3]}"
        for p in (line.split() for line in text.splitlines())
        if len(p) >= 4 and p[0].isdigit()
    }


def package(method: str) -> str:
    name = method.split(" ", 1)[1]
    return next((label for prefix, label in PACKAGES if name.startswith(prefix)), "other")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--queries", default="q2", help="run one after the other, first to last")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--java", default="", help="more JVM options for both CLIs (e.g. -Xms3g)")
    args = ap.parse_args()
    warehouse = Path(args.warehouse)
    lake_conf, plain_conf = cli_confs(warehouse, java=args.java)
    names = {
        "lakeskip": {t: f"lakeskip.tpch.{t}" for t in TABLES},
        "plain": {t: f"plain_{t}" for t in TABLES},
    }
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    with tempfile.TemporaryDirectory() as tmp:
        trace = CallbackTrace(Path(tmp) / "callbacks.tsv")
        lake_conf["spark.driver.extraJavaOptions"] += f" -Dlakeskip.callback.trace={trace.path}"
        clis: dict[str, SparkSql] = {}
        for side, conf in (("lakeskip", lake_conf), ("plain", plain_conf)):
            (Path(tmp) / side).mkdir()
            clis[side] = SparkSql(
                frontend_command("spark-sql", conf), Path(tmp) / side, env, f"spark-sql {side}"
            )
        try:
            pids = [c.pid for c in clis.values()]
            for t, g in table_globs(Catalog(str(warehouse))).items():
                for cli in clis.values():
                    cli.run(f"CREATE TEMPORARY VIEW plain_{t} USING parquet OPTIONS (path '{g}')")
            _settle(pids)
            cache = {s: compiled(c.pid) for s, c in clis.items()}
            total: dict[str, collections.Counter[str]] = {s: collections.Counter() for s in clis}
            for q in args.queries.split(","):
                sql = {s: QUERIES[q].format(**n) for s, n in names.items()}
                for i in range(args.rounds):
                    for side in list(clis) if i % 2 == 0 else list(reversed(clis)):
                        pid = clis[side].pid
                        _settle(pids)
                        s0, k0 = jstat(pid), ThreadCpu(pid)
                        secs = clis[side].run(sql[side])[1]
                        _settle(pids)
                        k1, s1 = ThreadCpu(pid), jstat(pid)
                        d = thread_cpu_seconds(k0, k1)
                        n = {k: s1[k] - s0[k] for k in COUNTERS}
                        now = compiled(pid)
                        new = collections.Counter(package(m) for m in now - cache[side])
                        cache[side] = now
                        calls = trace.since_last() if side == "lakeskip" else {}
                        print(
                            f"{q} run {i} {side:8s} {secs:6.2f} s; CPU {d['all']:.2f} s: tasks "
                            f"{d['tasks']:.2f} jit {d['jit']:.2f} gc {d['gc']:.2f} other "
                            f"{d['other']:.2f}; young GCs {n['YGC']:.0f} ({n['YGCT']:.3f} s), "
                            f"compiled {n['Compiled']:.0f}, classes {n['Loaded']:.0f}; newly "
                            "compiled: "
                            + ", ".join(f"{k} {v}" for k, v in new.most_common(6))
                            + (f"; callbacks {calls}" if calls else ""),
                            flush=True,
                        )
                        if i > 0:
                            total[side].update({"s": secs, **d, **n, **new})
            for side, c in total.items():
                print(
                    f"{side}, all runs but each query's first: "
                    + ", ".join(f"{k} {v:.2f}" for k, v in sorted(c.items())),
                    flush=True,
                )
        finally:
            for cli in clis.values():
                cli.close()


if __name__ == "__main__":
    main()
