"""The shared index building blocks against plain-Python oracles: the vectorised Roaring
builder against CRoaring fed row by row, bit slices against per-row bits, the grouping sort
against ``np.unique``, record packing against ``b"".join``, Java float order against
``Float.compare`` spelled out."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyroaring import BitMap

from lakeskip.index.primitives.binary import fixed_field, length_prefixed, pack_records, take_field
from lakeskip.index.primitives.bitslice import compare, serialize_slices
from lakeskip.index.primitives.floats import compare_key, float_to_bits
from lakeskip.index.primitives.grouping import unique_codes
from lakeskip.index.primitives.roaring import bitmap_of, serialize_bitmap, serialize_mask

#: row masks shaped to hit every container kind: sparse (array), dense (bitmap), runs, and
#: containers left empty between full ones
_segments = st.lists(
    st.tuples(
        st.sampled_from(["empty", "full", "sparse", "dense", "runs"]),
        st.integers(1, 70_000),
    ),
    min_size=1,
    max_size=5,
)


def _mask(segments: list[tuple[str, int]], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    parts = []
    for kind, n in segments:
        if kind == "empty":
            parts.append(np.zeros(n, dtype=np.bool_))
        elif kind == "full":
            parts.append(np.ones(n, dtype=np.bool_))
        elif kind == "sparse":
            parts.append(rng.random(n) < 0.01)
        elif kind == "dense":
            parts.append(rng.random(n) < 0.7)
        else:
            parts.append((np.arange(n) // int(rng.integers(1, 300))) % 2 == 0)
    return np.concatenate(parts)


@given(_segments, st.integers(0, 2**32 - 1))
def test_serialize_mask_equals_croaring_row_by_row(
    segments: list[tuple[str, int]], seed: int
) -> None:
    mask = _mask(segments, seed)
    rows = np.flatnonzero(mask)
    expected = serialize_bitmap(BitMap(rows.tolist()))
    assert serialize_mask(mask) == expected, "numpy-assembled bitmap bytes differ from CRoaring's"
    assert bitmap_of(rows) == BitMap(rows.tolist()), "bitmap_of lost or added rows"


@given(
    st.lists(st.one_of(st.none(), st.integers(0, 2**40)), max_size=300),
    st.integers(0, 2**41),
)
def test_bit_slices_and_compare_against_per_row_values(
    values: list[int | None], literal: int
) -> None:
    rows = [0 if v is None else v for v in values]
    count = max(max(rows, default=0).bit_length(), 1)
    slices = tuple(
        BitMap.deserialize(b) for b in serialize_slices(np.array(rows, dtype=np.int64), count)
    )
    for b, s in enumerate(slices):
        assert list(s) == [r for r, v in enumerate(rows) if v >> b & 1], f"slice {b} wrong"
    ebm = BitMap(r for r, v in enumerate(values) if v is not None)
    c = compare(ebm, slices, literal)
    present = [(r, v) for r, v in enumerate(values) if v is not None]
    assert list(c.lt) == [r for r, v in present if v < literal], "lt rows wrong"
    assert list(c.eq) == [r for r, v in present if v == literal], "eq rows wrong"
    assert list(c.gt) == [r for r, v in present if v > literal], "gt rows wrong"


@given(st.lists(st.one_of(st.integers(-5, 5), st.integers(-(2**63), 2**63 - 1)), max_size=200))
def test_unique_codes_matches_np_unique(values: list[int]) -> None:
    _check_unique_codes(values)


def _check_unique_codes(values: list[int]) -> None:
    v = np.array(values, dtype=np.int64)
    g = unique_codes(v)
    keys, first, codes = np.unique(v, return_index=True, return_inverse=True)
    assert g.keys.tolist() == keys.tolist(), "distinct keys differ"
    assert g.first.tolist() == first.tolist(), "first occurrences differ"
    assert g.codes.tolist() == codes.ravel().tolist(), "codes differ"
    for i in range(len(keys)):
        members = g.order[g.bounds[i] : g.bounds[i + 1]].tolist()
        assert members == np.flatnonzero(v == keys[i]).tolist(), f"group {i} rows differ"


@given(
    st.sampled_from([0, -(2**63), 2**63 - 70_000, 12_345]),
    st.lists(st.integers(0, 300), max_size=200),
    st.lists(st.integers(0, 65_535), max_size=200),
)
def test_unique_codes_small_spans(base: int, bytes_: list[int], shorts: list[int]) -> None:
    """Spans below 2**8 and 2**16 take the uint8 / uint16 radix path, at any base."""
    for offsets in (bytes_, shorts):
        _check_unique_codes([base + o for o in offsets])


@given(st.lists(st.tuples(st.binary(max_size=12), st.integers(-(2**31), 2**31 - 1)), max_size=50))
def test_pack_records_matches_join(records: list[tuple[bytes, int]]) -> None:
    import pyarrow as pa

    keys = length_prefixed(pa.array([k for k, _ in records], pa.binary()))
    ints = fixed_field(np.array([i for _, i in records], dtype=np.int64), ">i4")
    data, starts = pack_records([keys, ints])
    expected = [struct.pack(">i", len(k)) + k + struct.pack(">i", i) for k, i in records]
    assert data == b"".join(expected), "packed records differ"
    assert starts.tolist() == np.cumsum([0] + [len(e) for e in expected]).tolist()
    back = np.arange(len(records))[::-1]
    data, _ = pack_records([take_field(ints, back)])
    assert data == b"".join(struct.pack(">i", i) for _, i in records[::-1]), "take_field"


def _java_compare(a: float, b: float) -> int:
    """``Double.compare`` as its Javadoc spells it out."""
    if math.isnan(a) or math.isnan(b):
        return (math.isnan(a) > math.isnan(b)) - (math.isnan(a) < math.isnan(b))
    if a != b:
        return -1 if a < b else 1
    sa, sb = math.copysign(1, a) < 0, math.copysign(1, b) < 0
    return (sb > sa) - (sb < sa)  # -0.0 < 0.0


@pytest.mark.parametrize("width", [32, 64])
@given(a=st.floats(width=32), b=st.floats(width=32))
def test_compare_key_is_java_float_compare(width: int, a: float, b: float) -> None:
    ka, kb = (compare_key(float_to_bits(x, width), width) for x in (a, b))
    assert (ka > kb) - (ka < kb) == _java_compare(a, b), f"order of {a!r}, {b!r} differs"


@pytest.mark.parametrize("card", [1, 2047, 2048, 4095, 4096, 4097, 8191, 65535, 65536])
def test_serialize_mask_at_container_kind_boundaries(card: int) -> None:
    """Array containers hold up to 4096 rows, bitmap containers more; run-optimisation
    then picks the smallest. The numpy assembly must make the same choice at each edge."""
    rng = np.random.default_rng(card)
    mask = np.zeros(3 * 65536 + 17, dtype=np.bool_)
    mask[65536 + rng.choice(65536, card, replace=False)] = True
    mask[-1] = True
    expected = serialize_bitmap(BitMap(np.flatnonzero(mask).tolist()))
    assert serialize_mask(mask) == expected, f"{card} rows in one container: bytes differ"


def test_answers_reads_which_leaves_an_index_type_decides() -> None:
    """The planner opens a column's indexes only for leaves one of them can answer:
    what each reader class overrides of ``FileIndexReader`` (IN through ``=``)."""
    from lakeskip.index.base import answers
    from lakeskip.index.registry import get_indexer

    def ops(name: str) -> set[str]:
        reader = get_indexer(name).reader_type
        spelled = ["=", "<>", "<", "<=", ">", ">=", "IN", "NOT IN", "IS NULL", "IS NOT NULL"]
        return {op for op in [*spelled, "STARTS WITH", "NOT STARTS WITH"] if answers(reader, op)}

    assert ops("bloom-filter") == {"=", "IN"}
    assert ops("bitmap") == {"=", "<>", "IN", "NOT IN", "IS NULL", "IS NOT NULL"}
    ranges = {"=", "<>", "<", "<=", ">", ">=", "IN", "NOT IN", "IS NULL", "IS NOT NULL"}
    assert ops("bsi") == ranges
    assert ops("range-bitmap") == ranges | {"STARTS WITH"}
