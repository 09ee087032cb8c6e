"""Paimon-compatible file-index formats: bytes in, models out. Knows nothing of Spark or SQL."""

from __future__ import annotations

from lakeskip.index.base import FileIndexer, FileIndexReader, FileIndexWriter
from lakeskip.index.registry import INDEX_TYPES, get_indexer
from lakeskip.index.result import REMAIN, SKIP, BitmapResult, FileIndexResult

__all__ = [
    "INDEX_TYPES",
    "REMAIN",
    "SKIP",
    "BitmapResult",
    "FileIndexReader",
    "FileIndexResult",
    "FileIndexWriter",
    "FileIndexer",
    "get_indexer",
]
