"""One sample from per-task samples (lakeskip.sort.sampling): a part's weight is its rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples

from lakeskip.sort.cuts import aligned_cuts, curve_keys, key_bytes
from lakeskip.sort.ranked import column_bounds
from lakeskip.sort.sampling import (
    PartSample,
    curve_layout,
    decode_sample,
    encode_sample,
    merge_samples,
    sample_share,
)
from lakeskip.types import BIGINT, STRING

SCHEMA = pa.schema([("x", pa.int64()), ("s", pa.string())])


def _part(rows: int, values: range) -> PartSample:
    x = pa.array(list(values), pa.int64())
    return PartSample(
        rows, encode_sample(pa.table({"x": x, "s": pa.array([str(v) for v in values])}))
    )


@settings(max_examples=unit_examples(60), deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 300)), min_size=1, max_size=6),
    st.integers(1, 400),
)
def test_every_part_keeps_its_share_of_the_sample(parts: list[tuple[int, int]], rows: int) -> None:
    """Part i (``held`` rows, a sample of ``sent`` of them) keeps min(sent, its share): the
    sample's rows from each part are in proportion to the rows the part held."""
    samples = [
        _part(held, range(i * 1000, i * 1000 + sent)) for i, (held, sent) in enumerate(parts)
    ]
    merged = merge_samples(samples, SCHEMA, rows=rows)
    assert merged.schema == SCHEMA
    total = sum(h for h, _ in parts)
    x = np.array(merged["x"].to_pylist(), dtype=np.int64)
    for i, (held, sent) in enumerate(parts):
        mine = x[(x >= i * 1000) & (x < i * 1000 + 1000)]
        want = min(sent, -(-rows * held // max(1, total))) if held else 0
        assert len(mine) == want, (i, held, sent)
        assert len(set(mine.tolist())) == len(mine) and (np.diff(mine) > 0).all()
    again = merge_samples(samples, SCHEMA, rows=rows)
    assert again.equals(merged), "deterministic for a seed"


def test_a_large_part_outweighs_a_large_sample() -> None:
    """A partition of 10 rows that sent all 10 must not weigh as much as one of 90,000 that
    sent 10 too (the reservoir sizes are equal, the partitions are not)."""
    merged = merge_samples([_part(90_000, range(10)), _part(10, range(100, 110))], SCHEMA, rows=10)
    got = sorted(merged["x"].to_pylist())
    assert got[:10] == list(range(10)) and len(got) == 11 and 100 <= got[10] < 110


def test_casts_to_the_schema_and_skips_empty_parts() -> None:
    narrow = pa.table({"s": pa.array(["a"]), "x": pa.array([7], pa.int32())})
    parts = [PartSample(3, encode_sample(narrow)), PartSample(0, b""), PartSample(5, b"")]
    merged = merge_samples(parts, SCHEMA)
    assert merged.schema == SCHEMA and merged.to_pylist() == [{"x": 7, "s": "a"}]
    assert merge_samples([], SCHEMA).schema == SCHEMA
    assert decode_sample(encode_sample(narrow)).equals(narrow)


def test_sample_share() -> None:
    assert [sample_share(r, 10, 100) for r in (0, 1, 3, 10)] == [0, 10, 30, 100]
    assert sample_share(1, 3, 100) == 34, "rounded up"


def test_curve_layout_is_the_bounds_and_cuts_of_the_sample() -> None:
    rng = np.random.default_rng(3)
    sample = pa.table(
        {
            "x": pa.array(rng.integers(0, 10**6, 2000)),
            "s": pa.array([f"v{i % 37}" for i in range(2000)]),
        }
    )
    types = [BIGINT, STRING]
    for option in ("rank", "paimon"):
        layout = curve_layout(sample, types, "hilbert", 4, option, n_out=5)
        bounds = column_bounds(list(sample.columns), types, prefix=4) if option == "rank" else None
        assert layout.bounds == bounds
        keys = curve_keys(list(sample.columns), types, "hilbert", 4, bounds)
        assert layout.cuts == aligned_cuts(np.sort(key_bytes(keys)), 5)
        assert layout.cuts and len(layout.cuts) == 4
    assert curve_layout(sample, types, "zorder", 8).cuts is None, "no ranges asked for"
    assert curve_layout(SCHEMA.empty_table(), types, "zorder", 8, n_out=3).cuts == []
