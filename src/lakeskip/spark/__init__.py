"""The only place pyspark is imported: session, write and read paths, Spark tasks."""

from __future__ import annotations

from lakeskip.spark.catalog_setup import attach_catalog, catalog_conf, input_files
from lakeskip.spark.native_query import pruning_reports
from lakeskip.spark.session import Session, TableHandle, connect

__all__ = [
    "Session",
    "TableHandle",
    "attach_catalog",
    "catalog_conf",
    "connect",
    "input_files",
    "pruning_reports",
]
