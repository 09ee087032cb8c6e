"""Where a ``spark-sql`` run's time went, from Spark's event log (``tpch_queries.py
--frontend spark-sql --profile``): a JVM-only front end has no Python driver to ask, but its
event log has every SQL execution (its statement text, start and end, its final adaptive plan)
and every job and task (executor run and CPU time).

Per query and side, over the timed runs (the k-th execution whose statement is the query's text,
the warm-ups left out), medians of: the execution's wall time (start to end), the time before
it (the CLI's "Time taken" minus that: parsing, analysis, optimization, physical planning, and
printing the rows), its jobs, tasks, tasks' executor CPU seconds, records and bytes read; per
stage of the last run its tasks, CPU and records read; and the operators of the last run's
final plan, printed where the two sides' differ (the plans are kept in the results file).
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

_SQL = "org.apache.spark.sql.execution.ui."


def conf(events: Path) -> dict[str, str]:
    """The Spark conf that writes the event log into ``events`` (plans in ``simple`` mode:
    the operator tree with its subqueries, as ``tpch_queries.operators`` reads it)."""
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": events.as_uri(),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
        "spark.sql.ui.explainMode": "simple",
    }


def executions(events: Path) -> list[dict[str, Any]]:
    """Every root SQL execution of the log in ``events`` (one application), in order."""
    logs = sorted(p for p in events.iterdir() if p.is_file())
    if len(logs) != 1:
        raise SystemExit(f"{events}: {len(logs)} event logs, want 1")
    execs: dict[int, dict[str, Any]] = {}
    root: dict[int, int] = {}
    stage_exec: dict[int, int] = {}
    for line in logs[0].open(encoding="utf-8"):
        e = json.loads(line)
        kind = e["Event"]
        if kind == _SQL + "SparkListenerSQLExecutionStart":
            eid = e["executionId"]
            r = e.get("rootExecutionId", eid)
            root[eid] = r if r in execs else eid
            if root[eid] == eid:
                execs[eid] = {
                    "sql": e.get("description", ""),
                    "start": e["time"],
                    "plan": e.get("physicalPlanDescription", ""),
                    "jobs": 0,
                    "tasks": 0,
                    "cpu_s": 0.0,
                    "records_read": 0,
                    "bytes_read": 0,
                    "stages": {},
                }
        elif kind == _SQL + "SparkListenerSQLAdaptiveExecutionUpdate":
            x = execs.get(root.get(e["executionId"], -1))
            if x is not None and root.get(e["executionId"]) == e["executionId"]:
                x["plan"] = e.get("physicalPlanDescription", x["plan"])
        elif kind == _SQL + "SparkListenerSQLExecutionEnd":
            x = execs.get(e["executionId"])
            if x is not None:
                x["end"] = e["time"]
        elif kind == "SparkListenerJobStart":
            eid = int(e.get("Properties", {}).get("spark.sql.execution.id", -1))
            x = execs.get(root.get(eid, -1))
            if x is not None:
                x["jobs"] += 1
                for s in e.get("Stage IDs", []):
                    stage_exec[s] = root[eid]
        elif kind == "SparkListenerTaskEnd":
            x = execs.get(stage_exec.get(e.get("Stage ID", -1), -1))
            if x is not None:
                metrics = e.get("Task Metrics", {})
                cpu = metrics.get("Executor CPU Time", 0) / 1e9
                x["tasks"] += 1
                x["cpu_s"] += cpu
                x["records_read"] += metrics.get("Input Metrics", {}).get("Records Read", 0)
                x["bytes_read"] += metrics.get("Input Metrics", {}).get("Bytes Read", 0)
                stage = x["stages"].setdefault(e["Stage ID"], [0, 0.0, 0])
                stage[0] += 1
                stage[1] += cpu
                stage[2] += metrics.get("Input Metrics", {}).get("Records Read", 0)
    return [execs[k] for k in sorted(execs)]


def _one_line(sql: str) -> str:
    return " ".join(line.strip() for line in sql.strip().rstrip(";").splitlines())


def report(
    events: dict[str, Path],
    sql: dict[str, dict[str, str]],
    results: dict[str, Any],
    operators: Callable[[str], dict[str, int]],
    skip: int = 1,
) -> None:
    """Adds ``profile`` to each query of ``results`` and prints it: ``sql[q][side]`` is the
    statement text of query ``q`` on ``side``, ``events[side]`` that side's event log folder,
    ``operators`` counts a plan's operators; the first ``skip`` executions of each statement
    are the warm-ups."""

    by_text: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for side, folder in events.items():
        grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for x in executions(folder):
            grouped[x["sql"]].append(x)
        by_text[side] = grouped
    for q, texts in sql.items():
        prof: dict[str, Any] = {}
        for side, text in texts.items():
            runs = by_text[side].get(_one_line(text), [])[skip:]  # the warm-ups left out
            taken = results[q]["times"][side]
            if len(runs) != len(taken) or not runs:
                print(f"      {q} {side}: {len(runs)} executions for {len(taken)} runs")
                continue
            walls = [(x.get("end", x["start"]) - x["start"]) / 1000 for x in runs]
            prof[side] = {
                "execution_s": statistics.median(walls),
                "before_s": statistics.median(t - w for t, w in zip(taken, walls, strict=True)),
                "jobs": statistics.median(x["jobs"] for x in runs),
                "tasks": statistics.median(x["tasks"] for x in runs),
                "task_cpu_s": statistics.median(x["cpu_s"] for x in runs),
                "records_read": statistics.median(x["records_read"] for x in runs),
                "bytes_read": statistics.median(x["bytes_read"] for x in runs),
                # per stage of the last run, in order: tasks, task CPU seconds, records read
                "stages": [v for _, v in sorted(runs[-1]["stages"].items())],
                "operators": operators(runs[-1]["plan"]),
                "plan": runs[-1]["plan"],
            }
        results[q]["profile"] = prof
        for side, p in prof.items():
            print(
                f"      {q} {side:>8}: execution {p['execution_s']:.2f} s, before it "
                f"{p['before_s']:.2f} s, {p['jobs']:g} jobs, {p['tasks']:g} tasks, task CPU "
                f"{p['task_cpu_s']:.2f} s, {p['records_read']:,.0f} records / "
                f"{p['bytes_read'] / 2**20:,.1f} MiB read; last run's stages (tasks, CPU s, "
                f"records): " + ", ".join(f"{n}/{c:.2f}/{r}" for n, c, r in p["stages"]),
                flush=True,
            )
        ops = {side: p["operators"] for side, p in prof.items()}
        if len({json.dumps(o) for o in ops.values()}) > 1:
            print(f"      {q} plans differ: {ops}", flush=True)
