"""The lakeskip figures of one table's scan in a query's executed plan (after runtime
filters: the final adaptive plan, its query stages and reused exchanges walked)."""

from __future__ import annotations

from typing import Any


def batch_scans(df: Any, table: str) -> list[Any]:
    """The ``BatchScan <table>`` nodes of ``df``'s executed plan (the final adaptive plan, its
    query stages and reused exchanges walked)."""
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
        if name == f"BatchScan {table}":
            found.append(node)
    return found


def scan_metrics(df: Any, table: str) -> dict[str, int] | None:
    """The ``lakeskip*`` SQL metrics of ``BatchScan <table>`` in ``df``'s executed plan
    (``lakeskipFilesKept``, ``lakeskipFilesTotal``, ``lakeskipSkippedRuntime``, ...); None
    when the plan has no such scan (Spark may drop a join whose broadcast side is empty).
    Fails on more than one such scan."""
    found = []
    for node in batch_scans(df, table):
        got = {}
        metrics = node.metrics().iterator()
        while metrics.hasNext():
            kv = metrics.next()
            if kv._1().startswith("lakeskip"):
                got[kv._1()] = int(kv._2().value())
        found.append(got)
    assert len(found) <= 1, found
    return found[0] if found else None
