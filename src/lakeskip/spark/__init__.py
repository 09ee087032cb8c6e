"""The only place pyspark is imported: session, write and read paths, Spark tasks."""

from __future__ import annotations

from lakeskip.spark.front.catalog_setup import attach_catalog, catalog_conf, input_files
from lakeskip.spark.front.native_query import pruning_reports
from lakeskip.spark.front.session import Session, TableHandle, connect

# ``dml``: the attribute user code called ``delete_where`` / ``update_where`` on before the move
from lakeskip.spark.modify import dispatch as dml
from lakeskip.spark.modify.dispatch import delete_where, merge_into, update_where

__all__ = [
    "Session",
    "TableHandle",
    "attach_catalog",
    "catalog_conf",
    "connect",
    "delete_where",
    "dml",
    "input_files",
    "merge_into",
    "pruning_reports",
    "update_where",
]
