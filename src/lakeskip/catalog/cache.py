"""The process-wide metadata cache: one owner, one bound in bytes.

Everything lakeskip keeps between queries lives here: decoded manifests (per table and
manifest file), ``.index`` file bytes, opened index containers and decoded per-file stats.
All of it is keyed by immutable files (a rewrite writes a new name or new bytes), so an
entry never goes stale; it only costs memory. One least-recently-used order over every
section, and one budget in (approximate) bytes: a burst of index reads evicts old
manifests and the other way round, instead of four caches each bounded by its own count.

Sizes are estimates given by whoever inserts (``len`` of bytes, a per-object overhead plus
the byte fields of decoded records): the bound is meant to keep a long-lived Spark driver
from growing without limit, not to be an exact accounting.

>>> cache = MetadataCache(max_bytes=100)
>>> blobs = cache.section("blobs")
>>> blobs.put("a", b"x" * 60, 60)
>>> blobs.put("b", b"y" * 60, 60)  # over budget: "a", the least recently used, goes
>>> blobs.get("a") is None, blobs.get("b") == b"y" * 60, cache.size_bytes
(True, True, 60)
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar, cast

from lakeskip.errors import InvalidArgumentError

__all__ = ["DEFAULT_MAX_BYTES", "CacheSection", "MetadataCache", "paused_gc", "shared_cache"]

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
"""Budget of the process-wide cache; ``LAKESKIP_METADATA_CACHE_BYTES`` overrides it."""

V = TypeVar("V")


class MetadataCache:
    """A thread-safe LRU of immutable metadata, bounded by the sum of its entries' sizes.

    Args:
        max_bytes: the budget; an entry larger than it is not kept at all.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise InvalidArgumentError(f"cache size must be >= 0 bytes, got {max_bytes}")
        self._max_bytes = max_bytes
        self._data: OrderedDict[tuple[str, Hashable], tuple[object, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def size_bytes(self) -> int:
        """Estimated bytes held now (never above :attr:`max_bytes`)."""
        return self._size

    def __len__(self) -> int:
        return len(self._data)

    def section(self, name: str) -> CacheSection[V]:
        """A typed view of the entries under ``name``, sharing this cache's budget."""
        return CacheSection(self, name)

    def resize(self, max_bytes: int) -> None:
        """Change the budget, evicting the least recently used entries to fit."""
        if max_bytes < 0:
            raise InvalidArgumentError(f"cache size must be >= 0 bytes, got {max_bytes}")
        with self._lock:
            self._max_bytes = max_bytes
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._size = 0

    def _get(self, key: tuple[str, Hashable]) -> object | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
            return hit[0]

    def _put(self, key: tuple[str, Hashable], value: object, nbytes: int) -> None:
        if nbytes > self._max_bytes:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._size -= old[1]
            self._data[key] = (value, nbytes)
            self._size += nbytes
            self._evict()

    def _evict(self) -> None:
        while self._size > self._max_bytes and self._data:
            _, (_, n) = self._data.popitem(last=False)
            self._size -= n


class CacheSection(Generic[V]):
    """The entries of one kind in a :class:`MetadataCache` (e.g. decoded manifests)."""

    __slots__ = ("_cache", "_name")

    def __init__(self, cache: MetadataCache, name: str) -> None:
        self._cache = cache
        self._name = name

    def get(self, key: Hashable) -> V | None:
        # only put() of this section stores under this name, so the value is a V
        return cast("V | None", self._cache._get((self._name, key)))

    def put(self, key: Hashable, value: V, nbytes: int) -> None:
        """Keep ``value`` (estimated at ``nbytes``), evicting others to stay in budget."""
        self._cache._put((self._name, key), value, nbytes)


def _default_budget() -> int:
    text = os.environ.get("LAKESKIP_METADATA_CACHE_BYTES")
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        return int(text)
    except ValueError as e:
        raise InvalidArgumentError(
            f"LAKESKIP_METADATA_CACHE_BYTES must be a number of bytes, got {text!r}"
        ) from e


_SHARED: MetadataCache | None = None
_SHARED_LOCK = threading.Lock()


def shared_cache() -> MetadataCache:
    """The process-wide cache (created on first use)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = MetadataCache(_default_budget())
        return _SHARED


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Python's cyclic garbage collector paused while decoding metadata in bulk.

    Decoding 100,000 manifest entries allocates a million acyclic objects (entries, their
    tuples and bytes), and the allocations alone trigger collections that walk every one
    of them again and again: half of a fresh process's manifest decoding. Nothing decoded
    here forms a cycle, so collecting once afterwards loses nothing. Process-wide, as the
    collector is: a thread that finds it paused leaves it to whoever paused it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
