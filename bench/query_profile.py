"""Where one Spark SQL query's time went, shared by ``tpcds.py`` and ``tpch_queries.py``:
Spark's phases (``QueryPlanningTracker``, ms; *execution* is the rest of the wall time), the
lakeskip callbacks it made (calls and ms in Python, per operation), the Spark jobs it ran and
the analyzer / optimizer / planner rules that took a millisecond or more (the tracker's
per-rule time, ms).
Imported by the benchmarks run as scripts (``python bench/x.py`` puts ``bench/`` first on the
path)."""

from __future__ import annotations

import time
from typing import Any


def profiled(spark: Any, service: Any, sql: str) -> tuple[float, list[Any], Any, dict[str, Any]]:
    """Run ``sql`` once: its wall seconds, its rows, its ``QueryExecution`` and its profile
    (``phases_ms``, ``callbacks``: op -> [calls, ms], ``jobs``, ``rules_ms``: rule -> ms,
    rules of 1 ms or more, by their class's short name)."""
    store = spark._jsparkSession.sharedState().statusStore()
    before_execs = store.executionsList().size()
    before = service.callback_stats()
    t0 = time.perf_counter()
    df = spark.sql(sql)
    rows = df.collect()
    secs = time.perf_counter() - t0
    phases: dict[str, float] = {}
    qe = df._jdf.queryExecution()
    it = qe.tracker().phases().iterator()
    while it.hasNext():
        kv = it.next()
        phases[str(kv._1())] = round(float(kv._2().durationMs()), 1)
    phases["execution"] = round(secs * 1000 - sum(phases.values()), 1)
    rules: dict[str, float] = {}
    it = qe.tracker().rules().iterator()
    while it.hasNext():
        kv = it.next()
        ms = kv._2().totalTimeNs() / 1e6
        if ms >= 1.0:
            name = str(kv._1()).rsplit(".", 1)[-1]
            rules[name] = round(rules.get(name, 0.0) + ms, 1)
    delta = service.callback_stats().since(before)
    callbacks = {
        op: [n, round(delta.seconds.get(op, 0.0) * 1000, 1)]
        for op, n in sorted(delta.calls.items())
        if n
    }
    spark._jsc.sc().listenerBus().waitUntilEmpty()
    execs = store.executionsList()
    jobs = sum(execs.apply(i).jobs().size() for i in range(before_execs, execs.size()))
    rules = dict(sorted(rules.items(), key=lambda kv: -kv[1]))
    profile = {"phases_ms": phases, "callbacks": callbacks, "jobs": jobs, "rules_ms": rules}
    return secs, rows, qe, profile
