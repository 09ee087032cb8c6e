"""Java emulation needed for byte identity with Paimon: ``hashCode`` of the boxed keys
Paimon's bitmap index puts in a ``java.util.HashMap``, and that map's iteration order.

Paimon's ``BitmapFileIndex`` writer fills ``HashMap<Object, RoaringBitmap32>`` with
``computeIfAbsent`` in row order and lays its bitmaps out (and, in V1, its header entries) in
the map's iteration order. Reproducing the bytes therefore needs:

* ``hashCode`` per key type: ``Byte``/``Short``/``Integer`` the value; ``Long`` ``(int)(v ^
  v >>> 32)``; ``Float`` ``floatToIntBits``; ``Double`` the ``Long`` fold of
  ``doubleToLongBits``; ``Boolean`` 1231/1237; ``BinaryString`` Paimon's MurmurHash3 variant
  (seed 42, little-endian 4-byte words, then one mix round per trailing *signed* byte).
* ``HashMap`` (Java 8+): spread ``h ^ (h >>> 16)``, bin ``h & (cap - 1)``, capacity 16 on
  first use. ``computeIfAbsent`` resizes *before* looking up when ``size > 0.75 * cap`` (so a
  pending resize also happens on a later call for an existing key), inserts a new node at the
  *head* of its bin, and treeifies a bin reaching 8 nodes (or resizes instead while
  ``cap < 64``). Resizes split bins preserving order. Tree bins keep a linked order of their
  own: red-black insertion puts a node right after its tree parent, and the root is moved to
  the front.

Without treeified bins the order is simply: by final bin, then newest first; the vectorised
fast path uses that and the exact node-by-node emulation runs only when some bin grows to 8,
and then only for the keys of that bin's lineage -- but through every resize the whole map
goes through, including those after its last emulated key (a split re-treeifies a tree bin
and can reorder it). Both emulations are checked against real Java
(``tests/golden/java/hashmap_order.json``).

>>> hashmap_order([-1, 0, 1, 2, -2], [-1, 0, 1, 2, -2])
[1, 0, 4, 2, 3]
>>> [[-1, 0, 1, 2, -2][i] for i in hashmap_order([-1, 0, 1, 2, -2], [-1, 0, 1, 2, -2])]
[0, -1, -2, 1, 2]
>>> hash_binary_strings([b"a", b""]).tolist() == [binary_string_hash(b"a"), binary_string_hash(b"")]
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "binary_string_hash",
    "boolean_hash",
    "hash_binary_strings",
    "hashmap_iteration",
    "hashmap_order",
    "long_hash_code",
]

DEFAULT_CAPACITY = 16
LOAD_FACTOR = 0.75
TREEIFY_THRESHOLD = 8
UNTREEIFY_THRESHOLD = 6
MIN_TREEIFY_CAPACITY = 64
MURMUR_SEED = 42
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_M32 = 0xFFFFFFFF


def _i32(x: int) -> int:
    x &= _M32
    return x - (1 << 32) if x & 0x80000000 else x


def long_hash_code(values: Any) -> Any:
    """``Long.hashCode`` of int64 values (numpy), as int32."""
    v = np.asarray(values, dtype=np.int64).view(np.uint64)
    return (v ^ (v >> np.uint64(32))).astype(np.uint32).view(np.int32)


def boolean_hash(value: bool) -> int:
    """``Boolean.hashCode``."""
    return 1231 if value else 1237


def _u32(a: Any) -> Any:
    return a.astype(np.uint32)


def _rotl(x: Any, r: int) -> Any:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k1(k: Any) -> Any:
    k = k * np.uint32(_C1)
    k = _rotl(k, 15)
    return k * np.uint32(_C2)


def _mix_h1(h: Any, k: Any) -> Any:
    h = h ^ k
    h = _rotl(h, 13)
    return h * np.uint32(5) + np.uint32(0xE6546B64)


def hash_binary_strings(values: Sequence[bytes]) -> Any:
    """``BinaryString.hashCode`` (int32 numpy array) of UTF-8 byte strings, vectorised:
    one numpy pass per 4-byte word position, not per string."""
    n = len(values)
    lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=n)
    offsets = np.zeros(n, dtype=np.int64)
    if n:
        offsets[1:] = np.cumsum(lengths)[:-1]
    data = np.frombuffer(b"".join(values) + b"\0\0\0\0", dtype=np.uint8)
    h = np.full(n, MURMUR_SEED, dtype=np.uint32)
    aligned = lengths - lengths % 4
    with np.errstate(over="ignore"):
        for j in range(0, int(aligned.max()) if n else 0, 4):
            act = np.flatnonzero(aligned > j)
            at = offsets[act] + j
            word = (
                _u32(data[at])
                | (_u32(data[at + 1]) << np.uint32(8))
                | (_u32(data[at + 2]) << np.uint32(16))
                | (_u32(data[at + 3]) << np.uint32(24))
            )
            h[act] = _mix_h1(h[act], _mix_k1(word))
        for j in range(3):
            act = np.flatnonzero(lengths - aligned > j)
            byte = data[offsets[act] + aligned[act] + j].view(np.int8).astype(np.int32)
            h[act] = _mix_h1(h[act], _mix_k1(byte.view(np.uint32)))
        h = h ^ lengths.astype(np.uint32)
        h = h ^ (h >> np.uint32(16))
        h = h * np.uint32(0x85EBCA6B)
        h = h ^ (h >> np.uint32(13))
        h = h * np.uint32(0xC2B2AE35)
        h = h ^ (h >> np.uint32(16))
    return h.view(np.int32)


def binary_string_hash(value: bytes) -> int:
    """``BinaryString.hashCode`` of one UTF-8 byte string (scalar reference version)."""

    def mix_k1(k: int) -> int:
        k = (k * _C1) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        return (k * _C2) & _M32

    def mix_h1(h: int, k: int) -> int:
        h ^= k
        h = ((h << 13) | (h >> 19)) & _M32
        return (h * 5 + 0xE6546B64) & _M32

    h = MURMUR_SEED
    aligned = len(value) - len(value) % 4
    for i in range(0, aligned, 4):
        h = mix_h1(h, mix_k1(int.from_bytes(value[i : i + 4], "little")))
    for b in value[aligned:]:
        h = mix_h1(h, mix_k1((b - 256 if b > 127 else b) & _M32))
    h ^= len(value)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return _i32(h)


def _spread(hashes: Any) -> Any:
    h = np.asarray(hashes, dtype=np.int64).astype(np.uint32)
    return (h ^ (h >> np.uint32(16))).view(np.int32).astype(np.int64)


def _final_capacity(size: int, pending_access: bool) -> int:
    cap = DEFAULT_CAPACITY
    # a resize runs before insert number s + 1 when s > threshold (and, if the map is used
    # again after the last insert, once more then)
    last = size if pending_access else size - 1
    while last > int(cap * LOAD_FACTOR):
        cap *= 2
    return cap


def hashmap_order(
    hashes: Sequence[int] | Any, keys: Sequence[Any], pending_access: bool = False
) -> list[int]:
    """:func:`hashmap_iteration` as a list."""
    return [int(i) for i in hashmap_iteration(hashes, keys, pending_access)]


def hashmap_iteration(
    hashes: Sequence[int] | Any, keys: Sequence[Any] | Any, pending_access: bool = False
) -> Any:
    """Iteration order of a ``java.util.HashMap`` filled by ``computeIfAbsent``.

    Args:
        hashes: ``hashCode()`` of each distinct key, in insertion (first-occurrence) order.
        keys: the keys, in the same order, as Python values whose ``<`` is Java's
            ``compareTo`` (only consulted for equal hashes inside a treeified bin).
        pending_access: ``computeIfAbsent`` was called again after the last insertion
            (which performs a resize left pending by that insertion).

    Returns:
        Indices into the insertion order (int64 numpy), in the order the map iterates.
    """
    n = len(keys)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    spread = _spread(hashes)
    final = _final_capacity(n, pending_access)
    # Bins that never hold 8 keys are plain lists: newest first, and resizes split them in
    # order. Only the keys sharing a bin that once held 8 ("tainted") need the node-by-node
    # emulation; the rest is one lexsort. Capacity periods: the keys inserted by the end of
    # each capacity, counted per bin.
    tainted = np.zeros(n, dtype=np.bool_)
    cap = DEFAULT_CAPACITY
    while True:
        end = min(n, int(cap * LOAD_FACTOR) + 1 if cap < final else n)
        full = np.bincount(spread[:end] & (cap - 1), minlength=cap) >= TREEIFY_THRESHOLD
        if full.any():
            if cap < MIN_TREEIFY_CAPACITY:  # treeifyBin resizes early: emulate everything
                return np.array(_HashMap(keys, spread.tolist()).fill(pending_access))
            tainted |= full[spread & (cap - 1)]
        if cap >= final:
            break
        cap *= 2
    within = -np.arange(n)  # newest first
    if tainted.any():
        idx = np.flatnonzero(tainted)
        sub = _HashMap([keys[i] for i in idx.tolist()], spread[idx].tolist(), idx.tolist())
        order = np.array(sub.fill(pending_access, n), dtype=np.int64)
        within[idx[order]] = np.arange(len(order))
    return np.lexsort((within, spread & (final - 1)))


class _Node:
    __slots__ = ("hash", "idx", "key", "left", "next", "parent", "prev", "red", "right")

    def __init__(self, h: int, idx: int, key: Any) -> None:
        self.hash = h
        self.idx = idx
        self.key = key
        self.next: _Node | None = None
        self.prev: _Node | None = None
        self.parent: _Node | None = None
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.red = False


class _HashMap:
    """Node-by-node emulation of ``java.util.HashMap`` (insert-only), tree bins included."""

    def __init__(
        self, keys: Sequence[Any], spread: list[int], inserted: list[int] | None = None
    ) -> None:
        """``inserted``: the global insertion number of each key when only some of a map's
        keys are emulated (resizes follow the whole map's size); default: all of them."""
        self.keys = keys
        self.spread = spread
        self.inserted = list(range(len(keys))) if inserted is None else inserted
        # bins by index (only non-empty ones: resizing costs the keys, not the capacity)
        self.tab: dict[int, _Node] = {}
        self.tree: set[int] = set()
        self.cap = 0
        self.threshold = 0

    def fill(self, pending_access: bool, total: int | None = None) -> list[int]:
        """Insert every key; returns their indices in iteration order."""
        for i, h in enumerate(self.spread):
            self._compute_if_absent(_Node(h, i, self.keys[i]), self.inserted[i])
        # The resizes triggered by calls after the last emulated key: for a partial emulation,
        # by the map's later inserts (a resize splits, and may re-treeify, the emulated tree
        # bins, which can reorder them); then by the pending call, if any.
        total = len(self.keys) if total is None else total
        last_size = total if pending_access else total - 1
        while last_size > self.threshold:
            self._resize()
        out: list[int] = []
        for j in sorted(self.tab):
            e: _Node | None = self.tab[j]
            while e is not None:
                out.append(e.idx)
                e = e.next
        return out

    def _compute_if_absent(self, x: _Node, size: int) -> None:
        # one resize per call in Java; a loop here catches up on calls for keys not emulated
        while size > self.threshold or not self.cap:
            self._resize()
        i = x.hash & (self.cap - 1)
        if i in self.tree:
            self._put_tree_val(i, x)
        else:
            count = 0
            e = self.tab.get(i)
            while e is not None:
                count += 1
                e = e.next
            x.next = self.tab.get(i)
            self.tab[i] = x
            if count >= TREEIFY_THRESHOLD - 1:
                self._treeify_bin(i)

    def _resize(self) -> None:
        old, old_tree = self.tab, self.tree
        old_cap = self.cap
        new_cap = old_cap * 2 if old_cap else DEFAULT_CAPACITY
        self.threshold = int(new_cap * LOAD_FACTOR)
        tab: dict[int, _Node] = {}
        tree: set[int] = set()
        self.tab, self.tree, self.cap = tab, tree, new_cap
        for j, head in old.items():
            if head.next is None:
                tab[head.hash & (new_cap - 1)] = head
                continue
            was_tree = j in old_tree
            lo: list[_Node] = []
            hi: list[_Node] = []
            e: _Node | None = head
            while e is not None:
                (hi if e.hash & old_cap else lo).append(e)
                e = e.next
            for part, at, other in ((lo, j, hi), (hi, j + old_cap, lo)):
                if not part:
                    continue
                for a, b in zip(part, [*part[1:], None], strict=True):
                    a.next = b
                    if b is not None:
                        b.prev = a
                part[0].prev = None
                tab[at] = part[0]
                if was_tree and len(part) > UNTREEIFY_THRESHOLD:
                    tree.add(at)
                    if other:
                        self._treeify(at)

    def _treeify_bin(self, i: int) -> None:
        if self.cap < MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        e: _Node | None = self.tab[i]
        prev = None
        while e is not None:
            e.prev = prev
            prev = e
            e = e.next
        self.tree.add(i)
        self._treeify(i)

    def _dir(self, x: _Node, p: _Node) -> int:
        if p.hash > x.hash:
            return -1
        if p.hash < x.hash:
            return 1
        return -1 if x.key < p.key else (1 if p.key < x.key else -1)

    def _treeify(self, i: int) -> None:
        root: _Node | None = None
        x: _Node | None = self.tab[i]
        while x is not None:
            nxt = x.next
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
            else:
                p = root
                while True:
                    d = self._dir(x, p)
                    child = p.left if d <= 0 else p.right
                    if child is None:
                        x.parent = p
                        if d <= 0:
                            p.left = x
                        else:
                            p.right = x
                        root = _balance_insertion(root, x)
                        break
                    p = child
            x = nxt
        assert root is not None
        self._move_root_to_front(i, root)

    def _put_tree_val(self, i: int, x: _Node) -> None:
        root = self.tab[i]
        assert root is not None
        p = root
        while True:
            d = self._dir(x, p)
            child = p.left if d <= 0 else p.right
            if child is None:
                xpn = p.next
                x.next = xpn
                p.next = x
                x.parent = x.prev = p
                if d <= 0:
                    p.left = x
                else:
                    p.right = x
                if xpn is not None:
                    xpn.prev = x
                self._move_root_to_front(i, _balance_insertion(root, x))
                return
            p = child

    def _move_root_to_front(self, i: int, root: _Node) -> None:
        first = self.tab[i]
        if root is first:
            return
        self.tab[i] = root
        rp, rn = root.prev, root.next
        if rn is not None:
            rn.prev = rp
        if rp is not None:
            rp.next = rn
        if first is not None:
            first.prev = root
        root.next = first
        root.prev = None


def _rotate_left(root: _Node, p: _Node) -> _Node:
    r = p.right
    if r is None:
        return root
    rl = p.right = r.left
    if rl is not None:
        rl.parent = p
    pp = r.parent = p.parent
    if pp is None:
        root = r
        r.red = False
    elif pp.left is p:
        pp.left = r
    else:
        pp.right = r
    r.left = p
    p.parent = r
    return root


def _rotate_right(root: _Node, p: _Node) -> _Node:
    q = p.left
    if q is None:
        return root
    lr = p.left = q.right
    if lr is not None:
        lr.parent = p
    pp = q.parent = p.parent
    if pp is None:
        root = q
        q.red = False
    elif pp.right is p:
        pp.right = q
    else:
        pp.left = q
    q.right = p
    p.parent = q
    return root


def _balance_insertion(root: _Node, x: _Node) -> _Node:
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        if xp is xpp.left:
            uncle = xpp.right
            if uncle is not None and uncle.red:
                uncle.red = xp.red = False
                xpp.red = True
                x = xpp
                continue
            if x is xp.right:
                x = xp
                root = _rotate_left(root, x)
                xp = x.parent
                xpp = xp.parent if xp is not None else None
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate_right(root, xpp)
        else:
            uncle = xpp.left
            if uncle is not None and uncle.red:
                uncle.red = xp.red = False
                xpp.red = True
                x = xpp
                continue
            if x is xp.left:
                x = xp
                root = _rotate_right(root, x)
                xp = x.parent
                xpp = xp.parent if xp is not None else None
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate_left(root, xpp)
