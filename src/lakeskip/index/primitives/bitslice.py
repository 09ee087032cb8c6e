"""Bit-sliced index (O'Neil and Quass) over non-negative integers, shared by ``bsi`` (values)
and ``range-bitmap`` (dictionary codes): slice ``b`` holds the rows whose value has bit ``b``
set, ``ebm`` the rows that have a value at all.

Building is vectorised: :func:`serialize_slices` turns one numpy column into every slice's
run-optimised Roaring bytes (see :func:`~lakeskip.index.primitives.roaring.serialize_mask`).
Comparing walks the slices from the top bit down, keeping ``eq`` (rows equal so far) and
moving rows out to ``lt``/``gt`` where the literal's bit and the row's bit differ.

>>> from pyroaring import BitMap
>>> values = [5, 3, 0, 6]                      # rows 0..3
>>> slices = tuple(BitMap(r for r, v in enumerate(values) if v >> b & 1) for b in range(3))
>>> c = compare(BitMap(range(4)), slices, 5)
>>> list(c.lt), list(c.eq), list(c.gt)
([1, 2], [0], [3])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import BitMap

from lakeskip.index.primitives.roaring import serialize_mask

__all__ = ["SliceComparison", "below", "compare", "serialize_slices"]


def serialize_slices(values: Any, count: int) -> list[bytes]:
    """Roaring bytes of slices ``0 .. count-1`` of a per-row uint64/int64 column (row ``r``
    has value ``values[r]``; rows without a value must hold 0)."""
    # one contiguous byte plane per byte of the value: each slice's mask is then a pass over
    # n bytes instead of n words
    v = np.ascontiguousarray(values, dtype=np.int64).astype("<i8", copy=False)
    planes = np.ascontiguousarray(v.view(np.uint8).reshape(len(v), 8)[:, : (count + 7) // 8].T)
    return [
        serialize_mask(((planes[b >> 3] >> np.uint8(b & 7)) & np.uint8(1)).view(np.bool_))
        for b in range(count)
    ]


@dataclass(frozen=True, slots=True)
class SliceComparison:
    """Rows (of ``ebm``) whose value is below, equal to, above the literal."""

    lt: BitMap
    eq: BitMap
    gt: BitMap


def compare(
    ebm: BitMap, slices: tuple[BitMap, ...], value: int, *, above: bool = True
) -> SliceComparison:
    """Split ``ebm`` by comparing each row's value with ``value`` (``0 <= value``); bits of
    ``value`` above the top slice count as set. ``above=False`` leaves ``gt`` empty (saves
    one operation per slice when only ``lt``/``eq`` are wanted)."""
    lt, gt, eq = BitMap(), BitMap(), BitMap(ebm)
    if value >> len(slices):  # above every representable value
        return SliceComparison(BitMap(ebm), BitMap(), BitMap())
    for i in range(len(slices) - 1, -1, -1):
        s = slices[i]
        if (value >> i) & 1:
            lt |= eq - s
            eq &= s
        else:
            if above:
                gt |= eq & s
            eq -= s
    return SliceComparison(lt, eq, gt)


def below(ebm: BitMap, slices: tuple[BitMap, ...], value: int) -> BitMap:
    """``compare(ebm, slices, value, above=False).lt``: the rows whose value is below
    ``value``, walking the slices only down to ``value``'s lowest set bit (below it a row
    can only leave ``eq``, never join ``lt``).

    >>> values = [5, 3, 0, 6]
    >>> slices = tuple(BitMap(r for r, v in enumerate(values) if v >> b & 1) for b in range(3))
    >>> list(below(BitMap(range(4)), slices, 4)), list(below(BitMap(range(4)), slices, 0))
    ([1, 2], [])
    """
    if value <= 0:
        return BitMap()
    if value >> len(slices):  # above every representable value
        return BitMap(ebm)
    lt, eq = BitMap(), ebm
    lowest = (value & -value).bit_length() - 1
    for i in range(len(slices) - 1, lowest - 1, -1):
        s = slices[i]
        if (value >> i) & 1:
            lt |= eq - s
            if i == lowest:
                break
            eq = eq & s
        else:
            eq = eq - s
    return lt
