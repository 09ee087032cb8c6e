"""Index types by Paimon's name, loaded lazily so each format lives in its own module.

>>> get_indexer("bloom-filter").name
'bloom-filter'
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util

from lakeskip.errors import UnknownIndexTypeError
from lakeskip.index.base import FileIndexer

__all__ = [
    "BITMAP",
    "BLOOM_FILTER",
    "BSI",
    "INDEX_TYPES",
    "RANGE_BITMAP",
    "get_indexer",
    "load_all",
]

BLOOM_FILTER = "bloom-filter"
BITMAP = "bitmap"
BSI = "bsi"
RANGE_BITMAP = "range-bitmap"

_FACTORIES = {
    BLOOM_FILTER: "lakeskip.index.bloom_filter:BloomFilterIndexer",
    BITMAP: "lakeskip.index.bitmap:BitmapIndexer",
    BSI: "lakeskip.index.bsi:BsiIndexer",
    RANGE_BITMAP: "lakeskip.index.range_bitmap:RangeBitmapIndexer",
}

_cache: dict[str, FileIndexer] = {}


def _available() -> tuple[str, ...]:
    out = []
    for name, target in _FACTORIES.items():
        module = target.split(":")[0]
        if importlib.util.find_spec(module) is not None:
            out.append(name)
    return tuple(out)


#: The index types this build of lakeskip can read and write.
INDEX_TYPES: tuple[str, ...] = _available()


def get_indexer(name: str) -> FileIndexer:
    """The indexer registered under Paimon's type name.

    Raises:
        UnknownIndexTypeError: no such index type.
    """
    got = _cache.get(name)
    if got is not None:
        return got
    target = _FACTORIES.get(name) if name in INDEX_TYPES else None
    if target is None:
        known = ", ".join(INDEX_TYPES)
        close = difflib.get_close_matches(name, list(INDEX_TYPES), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UnknownIndexTypeError(f"unknown file index type {name!r} ({hint}known: {known})")
    module, cls = target.split(":")
    indexer = getattr(importlib.import_module(module), cls)()
    assert isinstance(indexer, FileIndexer)
    _cache[name] = indexer
    return indexer


def load_all() -> None:
    """Import every index type now: a long-lived process serving queries (the catalog's
    callbacks) calls this when it starts, so that no query's planning pays an import (the
    range-bitmap and bitmap modules: 10-20 ms in the first plan that meets a table with
    those indexes)."""
    for name in INDEX_TYPES:
        get_indexer(name)
