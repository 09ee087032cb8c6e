"""A scan metric summed over a Spark query's executed plan, through py4j only: no lakeskip
import, so the bench's pyspark 4.1 venv (``paimon_zorder41.py``) uses it as the main bench
does (``paimon_planning.py``, ``paimon_connector.py``)."""

from __future__ import annotations

from typing import Any


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


def df_metric(df: Any, name: str) -> int | None:
    """:func:`plan_metric` over a DataFrame's executed plan (AQE's final plan if adaptive)."""
    plan = df._jdf.queryExecution().executedPlan()
    if "Adaptive" in plan.getClass().getSimpleName():
        plan = plan.executedPlan()
    return plan_metric(plan, name)
