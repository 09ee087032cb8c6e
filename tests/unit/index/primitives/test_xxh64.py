"""The vectorised XXH64 equals the ``xxhash`` package value for value (random lengths and
bytes, groups big enough to take the vectorised path, slices, large offsets)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeskip import types as T
from lakeskip.index.primitives.hashing import hash_array
from lakeskip.index.primitives.xxh64 import MAX_VECTOR_LENGTH, MIN_GROUP, xxh64_binary


def _oracle(values: list[bytes]) -> list[int]:
    return [xxhash.xxh64_intdigest(v) for v in values]


def _random_values(seed: int, groups: list[tuple[int, int]]) -> list[bytes]:
    rng = np.random.default_rng(seed)
    values = [
        rng.integers(0, 256, length, dtype=np.uint8).tobytes()
        for length, count in groups
        for _ in range(count)
    ]
    rng.shuffle(values)  # type: ignore[arg-type]
    return values


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.lists(
        st.tuples(st.integers(0, MAX_VECTOR_LENGTH + 20), st.integers(0, 2 * MIN_GROUP)),
        max_size=6,
    ),
    st.booleans(),
)
def test_equals_xxhash(seed: int, groups: list[tuple[int, int]], large: bool) -> None:
    values = _random_values(seed, groups)
    arr = pa.array(values, pa.large_binary() if large else pa.binary())
    assert xxh64_binary(arr).tolist() == _oracle(values)


@pytest.mark.parametrize("length", [0, 1, 3, 4, 5, 7, 8, 12, 15, 16, 31, 32, 33, 40, 63])
def test_every_tail_shape_vectorised(length: int) -> None:
    """One group per length, large enough to be vectorised: 8-, 4- and 1-byte tails, stripes."""
    values = _random_values(length, [(length, MIN_GROUP)])
    assert xxh64_binary(pa.array(values, pa.binary())).tolist() == _oracle(values)


def test_sliced_array_and_value_at_buffer_end() -> None:
    values = _random_values(7, [(7, 3 * MIN_GROUP), (20, MIN_GROUP), (90, 5)])
    arr = pa.array(values, pa.binary())
    sliced = arr.slice(13, len(values) - 13)  # offset != 0, last value ends the data buffer
    assert xxh64_binary(sliced).tolist() == _oracle(values[13:])


def test_nulls_are_refused() -> None:
    with pytest.raises(ValueError, match="without nulls"):
        xxh64_binary(pa.array([b"a", None]))


def test_hash_array_strings_take_the_vectorised_path() -> None:
    values = [f"u{i}" for i in range(5 * MIN_GROUP)] + [None, "é" * 40]
    got = hash_array(pa.array(values, pa.large_string()), T.STRING)
    want = np.array(
        [xxhash.xxh64_intdigest(v.encode()) for v in values if v is not None], dtype=np.uint64
    ).view(np.int64)
    assert got.tolist() == want.tolist()
