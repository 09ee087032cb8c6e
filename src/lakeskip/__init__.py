"""lakeskip: Apache Paimon-style file indexes and data skipping for Spark."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
