"""The clustered write's sampling task (run without Spark: partition 0)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakeskip.sort.sampling import decode_sample
from lakeskip.spark.write.clustered import _sample_task, reservoir_rows


def _sample(batches: list[pa.RecordBatch]) -> pa.Table:
    (out,) = list(_sample_task(["a", "b"], None)(iter(batches)))
    row = out.to_pylist()[0]
    assert row["rows"] == sum(b.num_rows for b in batches)
    return decode_sample(row["sample"])


def test_the_same_input_gives_the_same_sample() -> None:
    # a reservoir of random priorities: seeded by the partition, so writing the same input
    # twice cuts it into the same ranges (the layout is reproducible)
    rng = np.random.default_rng(7)
    n = 3 * reservoir_rows(0)
    # a dozen batches: the reservoir is full after the fourth and is then cut per batch (with
    # 1000-row batches it made ~790 cuts of the whole reservoir: over 100 s at load 20-30)
    size = 1 << 16
    batches = [
        pa.RecordBatch.from_pydict({"a": rng.integers(0, 10**9, size), "b": rng.random(size)})
        for _ in range(n // size + 1)
    ]
    first, second = _sample(batches), _sample(batches)
    assert first.num_rows == reservoir_rows(0)
    assert first.equals(second)
