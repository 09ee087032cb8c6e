"""The only place pyspark is imported: session, write and read paths, Spark tasks."""

from __future__ import annotations

from lakeskip.spark.session import Session, TableHandle, connect

__all__ = ["Session", "TableHandle", "connect"]
