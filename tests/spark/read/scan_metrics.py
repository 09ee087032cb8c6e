"""The lakeskip figures of one table's scan in a query's executed plan (after runtime
filters: the final adaptive plan, its query stages and reused exchanges walked)."""

from __future__ import annotations

from typing import Any


def plan_nodes(df: Any) -> list[Any]:
    """Every node of ``df``'s executed plan (the final adaptive plan, its query stages and
    reused exchanges walked)."""
    root = df._jdf.queryExecution().executedPlan()
    todo = [root.executedPlan() if "Adaptive" in root.nodeName() else root]
    found = []
    while todo:
        node = todo.pop()
        name = node.nodeName()
        if "QueryStage" in name:
            todo.append(node.plan())
            continue
        if "ReusedExchange" in name:
            todo.append(node.child())
            continue
        kids = node.children().iterator()
        while kids.hasNext():
            todo.append(kids.next())
        found.append(node)
    return found


def batch_scans(df: Any, table: str) -> list[Any]:
    """The lakeskip scan nodes of ``table`` in ``df``'s executed plan: ``BatchScan <table>``,
    and ``LakeV1Scan <table>`` over a scan planned as Spark's V1 file scan."""
    names = (f"BatchScan {table}", f"LakeV1Scan {table}")
    return [n for n in plan_nodes(df) if n.nodeName() in names]


def lakeskip_metrics(node: Any) -> dict[str, int]:
    """The ``lakeskip*`` SQL metrics of one plan node (empty for any node but a scan's)."""
    got = {}
    metrics = node.metrics().iterator()
    while metrics.hasNext():
        kv = metrics.next()
        if kv._1().startswith("lakeskip"):
            got[kv._1()] = int(kv._2().value())
    return got


def scan_metrics(df: Any, table: str) -> dict[str, int] | None:
    """The ``lakeskip*`` SQL metrics of ``BatchScan <table>`` in ``df``'s executed plan
    (``lakeskipFilesKept``, ``lakeskipFilesTotal``, ``lakeskipSkippedRuntime``, ...); None
    when the plan has no such scan (Spark may drop a join whose broadcast side is empty).
    Fails on more than one such scan."""
    found = [lakeskip_metrics(node) for node in batch_scans(df, table)]
    assert len(found) <= 1, found
    return found[0] if found else None
