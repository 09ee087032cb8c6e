"""lakeskip: Apache Paimon-style file indexes and data skipping for Spark.

``import lakeskip`` stays light: the Spark-facing names (:func:`connect`, :class:`Session`)
are imported on first use, so the formats, catalog and planner work without pyspark.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = ["Session", "__version__", "connect"]


def __getattr__(name: str) -> Any:
    if name in ("connect", "Session"):
        # imported by name so that the Spark-free layers never depend on lakeskip.spark
        return getattr(importlib.import_module("lakeskip.spark.front.session"), name)
    raise AttributeError(f"module 'lakeskip' has no attribute {name!r}")
