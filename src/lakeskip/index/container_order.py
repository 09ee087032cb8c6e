"""The column order of Paimon's file-index containers (``DataFileIndexWriter``).

Paimon writes a data file's container from ``Map<String, Map<String, byte[]>>`` maps that
are ``java.util.HashMap``\\ s at every level, so the header (and body) order is the final
map's iteration order. Readers do not care; byte identity does. The order is decided by
four nested maps, each filled while iterating the previous one::

    table options        HashMap<String, String>      put              (schema order + "path")
      -> FileIndexOptions HashMap<Column, HashMap<type, Options>>   computeIfAbsent
      -> maintainers      Paimon >= 1.2: HashMap<type, HashMap<column, maintainer>>
                          Paimon <  1.2: HashMap<column, maintainer>  (one per column)
      -> serialised       HashMap<name, HashMap<type, byte[]>>       computeIfAbsent / put

A HashMap iterates by bin (``spread(hashCode) & (capacity - 1)``); within a bin ``put``
appends and ``computeIfAbsent`` prepends, so the insertion order (from the previous map)
only breaks ties between keys of the same bin. ``Column.hashCode`` is
``Arrays.hashCode({name, nestedName, isNested})``; names hash as ``String.hashCode`` over
UTF-16 code units. A map column ``m`` with keys ``k1, k2`` serialises ``m[k1]``, ``m[k2]``
from one maintainer whose keys sit in a ``HashMap<String, writer>``.

Not reproduced: Java's tree bins for ``Column`` keys (not ``Comparable``, so Java breaks ties
by identity hash); they need 8 index columns in one bin of a table of 64 or more.

Paimon before 1.2 keys maintainers by column only, so a column listed under two index types
gets just the first; lakeskip writes every configured index and orders the extra types of
such a column after the first, as Paimon >= 1.2 would order them within the column.

>>> specs = [("a", None, "bloom-filter"), ("b", None, "bloom-filter"), ("c", None, "bitmap")]
>>> keys = ["file-index.bloom-filter.columns", "file-index.bitmap.columns"]
>>> container_order(specs, {keys[0]: "a,b", keys[1]: "c"})
[('a', ('bloom-filter',)), ('b', ('bloom-filter',)), ('c', ('bitmap',))]
>>> java_string_hash("hello"), java_string_hash("")
(99162322, 0)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from lakeskip.index.primitives.java import (
    DEFAULT_CAPACITY,
    LOAD_FACTOR,
    TREEIFY_THRESHOLD,
    _final_capacity,
    hashmap_order,
)

__all__ = ["LAYOUT_LEGACY", "LAYOUT_TYPE_FIRST", "container_order", "java_string_hash"]

LAYOUT_TYPE_FIRST = "type-first"  # Paimon >= 1.2: maintainers keyed by index type, then column
LAYOUT_LEGACY = "legacy"  # Paimon 0.9 .. 1.1: one maintainer per column
PATH_OPTION = "path"  # added to the table options by Paimon's AbstractFileStoreTable
_PREFIX = "file-index."
_COLUMNS_SUFFIX = ".columns"

K = TypeVar("K", bound=Hashable)
_M32 = 0xFFFFFFFF


@functools.lru_cache(maxsize=4096)
def java_string_hash(text: str) -> int:
    """``String.hashCode()``: ``h = 31 * h + c`` over UTF-16 code units, as a Java int."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _object_hash(value: str | bool | None) -> int:
    if value is None:
        return 0
    if isinstance(value, bool):
        return 1231 if value else 1237
    return java_string_hash(value)


def _arrays_hash(values: Sequence[str | bool | None]) -> int:
    h = 1
    for v in values:
        h = (31 * h + _object_hash(v)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _put_order(hashes: Sequence[int]) -> list[int]:
    """Iteration order of a HashMap filled by ``put`` (new nodes go to the bin's tail)."""
    n = len(hashes)
    if n == 0:
        return []
    cap = DEFAULT_CAPACITY
    while n > int(cap * LOAD_FACTOR):  # put resizes after the insert that passes the threshold
        cap *= 2
    h = np.asarray(hashes, dtype=np.int64).astype(np.uint32)
    bins = (h ^ (h >> np.uint32(16))) & np.uint32(cap - 1)
    return [int(i) for i in np.lexsort((np.arange(n), bins))]


V = TypeVar("V")


class _JavaMap(Generic[K, V]):
    """Records the calls a Java HashMap sees, then iterates in Java's order."""

    def __init__(self, hash_of: Callable[[K], int], compute_if_absent: bool) -> None:
        self._hash_of = hash_of
        self._cia = compute_if_absent
        self._keys: list[K] = []
        self._values: dict[K, V] = {}
        self._pending = False  # computeIfAbsent called since the last insertion

    def get_or_insert(self, key: K, make: Callable[[], V]) -> V:
        if key in self._values:
            self._pending = True
            return self._values[key]
        self._keys.append(key)
        self._pending = False
        value = self._values[key] = make()
        return value

    def ordered_keys(self) -> list[K]:
        return [k for k, _ in self.items()]

    def items(self) -> list[tuple[K, V]]:
        hashes = [self._hash_of(k) for k in self._keys]
        n = len(hashes)
        if n < TREEIFY_THRESHOLD:  # no bin can treeify: order by bin, then by insertion
            cap = _final_capacity(n, self._pending if self._cia else True)
            step = -1 if self._cia else 1  # computeIfAbsent prepends, put appends
            bins = [((h & _M32) ^ ((h & _M32) >> 16)) & (cap - 1) for h in hashes]
            order = sorted(range(n), key=lambda i: (bins[i], step * i))
        elif self._cia:
            order = hashmap_order(hashes, [str(k) for k in self._keys], self._pending)
        else:
            order = _put_order(hashes)
        return [(self._keys[i], self._values[self._keys[i]]) for i in order]


def _column_key_hash(key: tuple[str, str | None]) -> int:
    name, nested = key
    return _arrays_hash([name, nested, nested is not None])


def _split(raw: str) -> tuple[str, str | None]:
    raw = raw.strip()
    if raw.endswith("]") and "[" in raw:
        at = raw.index("[")
        return raw[:at], raw[at + 1 : -1]
    return raw, None


def container_order(
    specs: Sequence[tuple[str, str | None, str]],
    table_options: Mapping[str, Any],
    layout: str = LAYOUT_TYPE_FIRST,
) -> list[tuple[str, tuple[str, ...]]]:
    """The (container column, index types) order Paimon's ``DataFileIndexWriter`` writes.

    Args:
        specs: the indexes that are written, as (column, map key or None, index type);
            column names as in the schema.
        table_options: every table option, in the schema's order (the root map's capacity
            and tie order depend on all of them, not only ``file-index.*``).
        layout: :data:`LAYOUT_TYPE_FIRST` (Paimon >= 1.2) or :data:`LAYOUT_LEGACY`.

    Returns:
        Each container column name (``col`` / ``col[key]``) with its index types, in order.
        Specs that the options do not list (matched case-insensitively, as lakeskip resolves
        column names) follow in their given order.
    """
    wanted = {(c.lower(), k, t) for c, k, t in specs}
    canonical = {(c.lower(), k): c for c, k, _ in specs}
    root = [*table_options, *([] if PATH_OPTION in table_options else [PATH_OPTION])]
    # FileIndexOptions: Column -> index types, filled while iterating the root map
    columns: _JavaMap[tuple[str, str | None], _JavaMap[str, None]] = _JavaMap(
        _column_key_hash, compute_if_absent=True
    )
    for i in _put_order([java_string_hash(k) for k in root]):
        key = root[i]
        if not (key.startswith(_PREFIX) and key.endswith(_COLUMNS_SUFFIX)):
            continue
        index_type = key[len(_PREFIX) : -len(_COLUMNS_SUFFIX)]
        for part in str(table_options[key]).split(","):
            if not part.strip():
                continue
            name, nested = _split(part)
            if (name.lower(), nested, index_type) not in wanted:
                continue
            name = canonical[(name.lower(), nested)]
            types = columns.get_or_insert(
                (name, nested), lambda: _JavaMap(java_string_hash, compute_if_absent=True)
            )
            types.get_or_insert(index_type, lambda: None)

    # maintainers: (index type or None, top-level column) -> nested keys (None: plain column)
    Maintainer = tuple[list[str], _JavaMap[str, None] | None]

    def maker(nested: str | None) -> Callable[[], Maintainer]:
        def make() -> Maintainer:
            keys = _JavaMap[str, None](java_string_hash, compute_if_absent=False)
            return [], keys if nested is not None else None

        return make

    maintainers: list[tuple[list[str], str, _JavaMap[str, None] | None]] = []
    if layout == LAYOUT_TYPE_FIRST:
        by_type: _JavaMap[str, _JavaMap[str, Maintainer]]
        by_type = _JavaMap(java_string_hash, compute_if_absent=True)
        for (name, nested), types in columns.items():
            for index_type in types.ordered_keys():
                cols = by_type.get_or_insert(
                    index_type, lambda: _JavaMap(java_string_hash, compute_if_absent=False)
                )
                _, keys = cols.get_or_insert(name, maker(nested))
                if keys is not None and nested is not None:
                    keys.get_or_insert(nested, lambda: None)
        for index_type, cols in by_type.items():
            for name, (_, keys) in cols.items():
                maintainers.append(([index_type], name, keys))
    else:
        by_column: _JavaMap[str, Maintainer]
        by_column = _JavaMap(java_string_hash, compute_if_absent=False)
        for (name, nested), types in columns.items():
            type_list, keys = by_column.get_or_insert(name, maker(nested))
            for index_type in types.ordered_keys():
                if index_type not in type_list:
                    type_list.append(index_type)
            if keys is not None and nested is not None:
                keys.get_or_insert(nested, lambda: None)
        for name, (type_list, keys) in by_column.items():
            maintainers.append((type_list, name, keys))

    # serializeMaintainers: name -> index types
    out: _JavaMap[str, _JavaMap[str, None]] = _JavaMap(java_string_hash, compute_if_absent=True)
    for type_list, name, keys in maintainers:
        if keys is None:
            names = [name]
        else:  # MapFileIndexMaintainer.serializedBytes: a HashMap<"m[k]", bytes> filled by put
            names = [f"{name}[{k}]" for k in keys.ordered_keys()]
            names = [names[i] for i in _put_order([java_string_hash(n) for n in names])]
        for index_type in type_list:
            for n in names:
                inner = out.get_or_insert(
                    n, lambda: _JavaMap(java_string_hash, compute_if_absent=False)
                )
                inner.get_or_insert(index_type, lambda: None)
    result = [(name, tuple(types.ordered_keys())) for name, types in out.items()]
    # anything the options did not reach (defensive: callers pass parsed options)
    placed = {(n, t) for n, ts in result for t in ts}
    for c, k, t in specs:
        n = c if k is None else f"{c}[{k}]"
        if (n, t) not in placed:
            result.append((n, (t,)))
            placed.add((n, t))
    return result
