"""Curve cuts (lakeskip.sort.cuts): files cut at curve-cell corners cover compact regions."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples

from lakeskip.sort.cuts import aligned_cuts, curve_keys, key_bytes, key_order, range_ids
from lakeskip.sort.ranked import column_bounds
from lakeskip.types import BIGINT


@settings(max_examples=unit_examples(150), deadline=None)
@given(
    st.lists(
        st.binary(min_size=2, max_size=2).map(lambda b: b[:1] + bytes(1) if b[1] < 64 else b),
        max_size=400,
    ),
    st.integers(min_value=1, max_value=12),
)
def test_ranges_partition_the_keys_in_order(raw: list[bytes], n_out: int) -> None:
    keys = np.sort(np.array(raw, dtype="S2")) if raw else np.empty(0, dtype="S2")
    cuts = aligned_cuts(keys, n_out)
    assert cuts == sorted(set(cuts)) and len(cuts) <= max(0, n_out - 1)
    ids = range_ids(keys, cuts)
    assert (np.diff(ids) >= 0).all(), "sorted keys get non-decreasing range ids"
    assert set(ids.tolist()) == set(range(len(cuts) + 1)) if len(keys) else ids.size == 0
    full = [keys[j : j + 1].tobytes() for j in range(len(keys))]  # numpy strips trailing NULs
    for k, i in zip(full, ids.tolist(), strict=True):  # the id is the number of cuts <= key
        assert i == sum(c <= k for c in cuts)
        if i > 0:
            assert cuts[i - 1] <= k
        if i < len(cuts):
            assert k < cuts[i]
    # equal keys always share a range
    for k in set(keys.tolist()):
        assert len(set(ids[keys == k].tolist())) == 1


def test_ranges_stay_near_even_sizes() -> None:
    rng = np.random.default_rng(3)
    keys = np.sort(rng.integers(0, 2**32, 20_000, dtype=np.uint64).astype(">u4").view("S4"))
    for n_out in (2, 4, 7, 16):
        ids = range_ids(keys, aligned_cuts(keys, n_out))
        sizes = np.bincount(ids, minlength=n_out)
        assert len(sizes) == n_out
        ideal = len(keys) / n_out
        assert sizes.min() >= ideal / 2 and sizes.max() <= ideal * 1.5, sizes


def _grid_keys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    arrays = [pa.array(a), pa.array(b)]
    bounds = column_bounds(arrays, [BIGINT, BIGINT])
    return key_bytes(curve_keys(arrays, [BIGINT, BIGINT], "zorder", 8, bounds))


def test_four_files_of_two_columns_are_the_quadrants() -> None:
    """Two columns whose joint distribution does not fill quadrants evenly (b is a
    permutation of a): cuts by row count would end inside cells and give files spanning all
    of b; cuts at cell corners give the four quadrants."""
    ids_ = np.arange(4000)
    a, b = (ids_ * 7919) % 1000, (ids_ * 104729) % 1000
    keys = _grid_keys(a, b)
    order = np.argsort(keys, kind="stable")
    ranges = range_ids(keys, aligned_cuts(keys[order], 4))
    for r in range(4):
        ra, rb = a[ranges == r], b[ranges == r]
        assert ra.max() - ra.min() < 520 and rb.max() - rb.min() < 520, (r, ra.min(), ra.max())
    # by row count (what a plain range shuffle does) the second column is not split
    chunks = np.array_split(order, 4)
    assert any(b[c].max() - b[c].min() > 900 for c in chunks)


@settings(max_examples=unit_examples(200), deadline=None)
@given(
    st.integers(min_value=1, max_value=20),
    st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=300),
    st.integers(min_value=0, max_value=10),
)
def test_key_order_is_the_stable_argsort_of_the_bytes(
    width: int, seeds: list[int], spread: int
) -> None:
    """Few distinct keys (ties: the input order must stay) or many, every width: the
    permutation is exactly numpy's stable sort of the bytes."""
    if not seeds:
        assert key_order(np.empty(0, dtype=f"S{width}")).tolist() == []
        return
    rng = np.random.default_rng(len(seeds) * 31 + width)
    distinct = [int(x).to_bytes(8, "big") * 3 for x in seeds[: max(1, 2**spread)]]
    raw = [distinct[int(i)][:width] for i in rng.integers(0, len(distinct), len(seeds))]
    keys = np.array(raw, dtype=f"S{width}")
    expected = np.argsort(keys, kind="stable")
    assert key_order(keys).tolist() == expected.tolist()
