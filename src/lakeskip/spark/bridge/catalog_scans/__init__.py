"""The Spark catalog's read callbacks, by concern: a batch scan (:mod:`.batch`: the files to
read, their deletion vectors, the pruning report), a streaming read's offsets and
micro-batches (:mod:`.stream`), Spark's runtime filters on a planned scan
(:mod:`.runtime_filter`), a pushed aggregate answered from the manifests (:mod:`.aggregate`),
and the reports and metadata rows of reads (:mod:`.reports`: a reused scan's report filed
again, EXPLAIN PRUNING's rows, a metadata system table's rows); :mod:`.target` is what every
scan callback reads. ``HANDLERS`` in :mod:`~lakeskip.spark.bridge.catalog_service` names them.

Callbacks run on py4j's callback threads, not the thread that ran the query: pruning reports
are filed under the query's tag (:data:`~lakeskip.spark.jvm.protocol.TAG_PROPERTY`).
"""

from lakeskip.spark.bridge.catalog_scans.aggregate import aggregate_scan
from lakeskip.spark.bridge.catalog_scans.batch import plan_scan
from lakeskip.spark.bridge.catalog_scans.reports import explain_rows, file_report, system_rows
from lakeskip.spark.bridge.catalog_scans.runtime_filter import runtime_filter
from lakeskip.spark.bridge.catalog_scans.stream import stream_latest, stream_plan, stream_start

__all__ = [
    "aggregate_scan",
    "explain_rows",
    "file_report",
    "plan_scan",
    "runtime_filter",
    "stream_latest",
    "stream_plan",
    "stream_start",
    "system_rows",
]
