"""The process-wide metadata cache: one LRU order, one bound in bytes across sections."""

from __future__ import annotations

import pytest

from lakeskip.catalog.cache import MetadataCache, shared_cache
from lakeskip.errors import InvalidArgumentError


def test_bound_is_in_bytes_across_sections() -> None:
    cache = MetadataCache(max_bytes=100)
    a, b = cache.section("a"), cache.section("b")
    for i in range(5):
        a.put(i, f"a{i}", 10)
    b.put("big", "B", 60)
    assert cache.size_bytes <= 100, f"over budget: {cache.size_bytes} bytes"
    assert b.get("big") == "B", "the newest entry stays"
    assert a.get(0) is None and a.get(4) == "a4", "the least recently used of any section go"


def test_get_refreshes_recency() -> None:
    cache = MetadataCache(max_bytes=30)
    s = cache.section("s")
    s.put("x", 1, 10)
    s.put("y", 2, 10)
    s.put("z", 3, 10)
    assert s.get("x") == 1
    s.put("w", 4, 10)
    assert s.get("x") == 1, "x was used after y, so y is evicted first"
    assert s.get("y") is None, "y was the least recently used"


def test_sections_do_not_collide() -> None:
    cache = MetadataCache(max_bytes=100)
    cache.section("a").put("k", "from a", 1)
    cache.section("b").put("k", "from b", 1)
    assert cache.section("a").get("k") == "from a", "same key, other section"


def test_oversized_entry_is_not_kept_and_resize_evicts() -> None:
    cache = MetadataCache(max_bytes=50)
    s = cache.section("s")
    s.put("huge", "h", 51)
    assert s.get("huge") is None and cache.size_bytes == 0, "larger than the whole budget"
    s.put("p", "p", 20)
    s.put("q", "q", 20)
    s.put("p", "p2", 25)  # replacing re-counts the size
    assert cache.size_bytes == 45, f"replaced entry counted once: {cache.size_bytes}"
    cache.resize(30)
    assert cache.size_bytes <= 30 and s.get("p") == "p2", "resize evicts the oldest"
    with pytest.raises(InvalidArgumentError, match="bytes"):
        cache.resize(-1)


def test_one_shared_instance() -> None:
    assert shared_cache() is shared_cache(), "one owner per process"
