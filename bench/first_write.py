"""Where the first write of a ``spark-sql`` session spends its seconds (issue 42, item 4).

    .venv/bin/python bench/first_write.py                 # 3 fresh spark-sql processes
    .venv/bin/python bench/first_write.py --runs 1 --importtime

Each run starts Spark's own ``bin/spark-sql`` with only the ``lakeskip spark-conf`` flags on a
fresh warehouse and runs one script::

    CREATE DATABASE lakeskip.d; CREATE TABLE lakeskip.d.t (id BIGINT, s STRING) (bloom on s);
    INSERT INTO lakeskip.d.t VALUES (1, 'a');   -- the first write: Python workers start here
    INSERT INTO lakeskip.d.t VALUES (2, 'b');   -- the same write, everything warm
    SELECT count(*) FROM lakeskip.d.t

and reads the CLI's own "Time taken" of every statement, the JVM's start (process start to the
first statement's end less its "Time taken") and the brain's "registered in" line from its
log (the first statement starts the brain). The first INSERT less the second is what a first
write costs beyond the work itself. ``--importtime`` runs the processes under
``PYTHONPROFILEIMPORTTIME`` and prints the slowest imports of the brain and of the Python
workers (their lines go to the CLI's stderr). The machine is shared: the load average is
quoted. Writes ``bench/results/first-write-<ts>.json``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lakeskip.spark.front.frontends import frontend_command, frontend_conf

SCRIPT = """CREATE DATABASE IF NOT EXISTS lakeskip.d;
CREATE TABLE lakeskip.d.t (id BIGINT, s STRING)
  TBLPROPERTIES ('file-index.bloom-filter.columns' = 's');
INSERT INTO lakeskip.d.t VALUES (1, 'a');
INSERT INTO lakeskip.d.t VALUES (2, 'b');
SELECT count(*) FROM lakeskip.d.t;
"""
STATEMENTS = ("create database", "create table", "first insert", "second insert", "select")
_IMPORT = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")


def _slowest_imports(text: str, top: int = 8) -> list[tuple[str, float]]:
    """The top-level imports (no indentation) with the largest cumulative seconds."""
    out = [  # the modules imported at top level (no indentation)
        (m.group(4), int(m.group(2)) / 1e6) for m in _IMPORT.finditer(text) if len(m.group(3)) <= 1
    ]
    return sorted(out, key=lambda x: -x[1])[:top]


def _jobs(events: Path) -> list[dict[str, Any]]:
    """Every Spark job of the run from its event log: description, wall seconds, and its
    tasks' summed run, CPU and deserialisation seconds."""
    jobs: dict[int, dict[str, Any]] = {}
    stage_job: dict[int, int] = {}
    for path in sorted(p for p in events.rglob("*") if p.is_file()):
        for line in path.read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            e = json.loads(line)
            kind = e.get("Event", "")
            if kind.endswith("JobStart"):
                props = e.get("Properties") or {}
                jobs[e["Job ID"]] = {
                    "what": props.get("spark.job.description") or props.get("callSite.short"),
                    "start": e["Submission Time"],
                    "run_s": 0.0,
                    "cpu_s": 0.0,
                    "deserialize_s": 0.0,
                }
                for sid in e.get("Stage IDs", []):
                    stage_job[sid] = e["Job ID"]
            elif kind.endswith("JobEnd") and e["Job ID"] in jobs:
                job = jobs[e["Job ID"]]
                job["wall_s"] = (e["Completion Time"] - job["start"]) / 1000
            elif kind.endswith("TaskEnd") and e.get("Stage ID") in stage_job:
                m = e.get("Task Metrics") or {}
                job = jobs[stage_job[e["Stage ID"]]]
                job["run_s"] += m.get("Executor Run Time", 0) / 1000
                job["cpu_s"] += m.get("Executor CPU Time", 0) / 1e9
                job["deserialize_s"] += m.get("Executor Deserialize Time", 0) / 1000
    return [jobs[k] for k in sorted(jobs)]


def _one_run(tmp: Path, importtime: bool) -> dict[str, Any]:
    warehouse = tmp / "warehouse"
    conf = frontend_conf(str(warehouse))
    conf.update(
        {
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "1g",
            "spark.eventLog.enabled": "true",
            "spark.eventLog.compress": "false",
            "spark.eventLog.dir": (tmp / "events").as_uri(),
        }
    )
    (tmp / "events").mkdir()
    script = tmp / "first.sql"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    if importtime:
        env["PYTHONPROFILEIMPORTTIME"] = "1"
    before = set(glob.glob(f"{tempfile.gettempdir()}/lakeskip-brain-*.log"))
    started = time.perf_counter()
    proc = subprocess.run(
        frontend_command("spark-sql", conf, args=["-f", str(script)]),
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    total = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"spark-sql failed: {proc.stderr[-3000:]}")
    taken = [float(m) for m in re.findall(r"Time taken: ([0-9.]+) seconds", proc.stderr)]
    logs = sorted(set(glob.glob(f"{tempfile.gettempdir()}/lakeskip-brain-*.log")) - before)
    brain_text = "".join(Path(p).read_text() for p in logs)
    registered = re.findall(r"registered in ([0-9.]+) s", brain_text)
    for p in logs:
        Path(p).unlink(missing_ok=True)
    out: dict[str, Any] = {
        "process_s": total,
        "statements_s": dict(zip(STATEMENTS, taken, strict=False)),
        "outside_statements_s": total - sum(taken),
        "brain_registered_s": float(registered[0]) if registered else None,
    }
    out["jobs"] = _jobs(tmp / "events")
    if importtime:
        out["brain_imports"] = _slowest_imports(brain_text)
        out["cli_stderr_imports"] = _slowest_imports(proc.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--importtime", action="store_true")
    args = ap.parse_args()
    runs = []
    load_before = os.getloadavg()
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(_one_run(Path(tmp), args.importtime))
    load_after = os.getloadavg()
    med = {
        s: statistics.median(r["statements_s"].get(s, float("nan")) for r in runs)
        for s in STATEMENTS
    }
    brains = [r["brain_registered_s"] for r in runs if r["brain_registered_s"] is not None]
    result = {
        "runs": runs,
        "median_statements_s": med,
        "median_brain_registered_s": statistics.median(brains) if brains else None,
        "median_outside_statements_s": statistics.median(r["outside_statements_s"] for r in runs),
        "load_before": load_before,
        "load_after": load_after,
    }
    print(
        f"spark-sql, {args.runs} fresh processes, medians (load {load_before[0]:.1f} -> "
        f"{load_after[0]:.1f}):"
    )
    for s in STATEMENTS:
        print(f"  {s:<16}{med[s]:>8.2f} s")
    print(
        f"  brain registered in {result['median_brain_registered_s']} s (inside the first "
        f"statement); outside the statements (JVM start, exit): "
        f"{result['median_outside_statements_s']:.2f} s"
    )
    print(f"  first write beyond the second: {med['first insert'] - med['second insert']:.2f} s")
    print("  Spark jobs of the first run (wall s; tasks' run / JVM CPU / deserialise s):")
    for j in runs[0]["jobs"]:
        print(
            f"    {str(j['what'])[:60]:<62}{j.get('wall_s', float('nan')):>7.2f}"
            f"{j['run_s']:>7.2f}{j['cpu_s']:>7.2f}{j['deserialize_s']:>7.2f}"
        )
    if args.importtime:
        for r in runs[:1]:
            print(
                "  brain's slowest imports: "
                + ", ".join(f"{m} {t:.2f}" for m, t in r["brain_imports"])
            )
            print(
                "  CLI stderr's (workers') slowest imports: "
                + ", ".join(f"{m} {t:.2f}" for m, t in r["cli_stderr_imports"])
            )
    out = Path(__file__).with_name("results") / f"first-write-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
