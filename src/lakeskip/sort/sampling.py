"""One sample of the sort columns from samples drawn in tasks, and what the driver derives
from it: rank boundaries and the cuts of the curve into files.

Both curve sorts sample the same way, wherever their tasks run (Spark tasks for write-time
clustering, :mod:`lakeskip.spark.write.clustered`; :class:`~lakeskip.procedures.base.Executor`
tasks, local or in Spark, for z-order/Hilbert compaction, :mod:`lakeskip.procedures.sort_rewrite`)::

    task     a uniform sample of its own rows (bounded), as an Arrow IPC stream, and the
             number of rows it was drawn from                          -> PartSample
    driver   every part keeps its share of SAMPLE_ROWS by its row count (a part's weight
             is the rows it holds, not its sample's), concatenated     -> merge_samples
             rank boundaries of every column (``sort.curve-keys = rank``) and, asked for
             n ranges, the sample's curve keys cut at cell corners     -> curve_layout

A task that knows its share in advance (:func:`sample_share` of the rows it will read) draws
just that many rows and the driver keeps them all.

Example:
    >>> import pyarrow as pa
    >>> from lakeskip.types import BIGINT
    >>> schema = pa.schema([("x", pa.int64())])
    >>> parts = [PartSample(900, encode_sample(pa.table({"x": list(range(0, 900, 3))}))),
    ...          PartSample(100, encode_sample(pa.table({"x": list(range(900, 1000))})))]
    >>> sample = merge_samples(parts, schema, rows=40)
    >>> (sample.num_rows, sum(x >= 900 for x in sample["x"].to_pylist()))
    (40, 4)
    >>> layout = curve_layout(sample, [BIGINT], "zorder", 8, n_out=4)
    >>> (layout.bounds[0].count, len(layout.cuts))
    (40, 3)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakeskip.sort.cuts import aligned_cuts, curve_keys, key_bytes
from lakeskip.sort.ranked import RANK_KEYS, SAMPLE_ROWS, ColumnBounds, column_bounds
from lakeskip.types import DataType

__all__ = [
    "CurveLayout",
    "PartSample",
    "curve_layout",
    "decode_sample",
    "encode_sample",
    "merge_samples",
    "sample_share",
]


@dataclass(frozen=True, slots=True)
class PartSample:
    """What one task returns: a uniform sample of its rows of the sort columns (an Arrow IPC
    stream, :func:`encode_sample`; empty bytes for none) and how many rows it held."""

    rows: int
    data: bytes


def encode_sample(sample: pa.Table) -> bytes:
    """``sample`` as an Arrow IPC stream (what a task sends back)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, sample.schema) as writer:
        writer.write_table(sample)
    return bytes(sink.getvalue().to_pybytes())


def decode_sample(data: bytes) -> pa.Table:
    """The table of an :func:`encode_sample` stream."""
    return pa.ipc.open_stream(data).read_all()


def sample_share(rows: int, total: int, sample_rows: int = SAMPLE_ROWS) -> int:
    """Rows that a part of ``rows`` out of ``total`` gives to a sample of ``sample_rows``
    (rounded up: a part with rows gives at least one).

    >>> sample_share(1, 3, 10), sample_share(0, 3, 10), sample_share(3, 3, 10)
    (4, 0, 10)
    """
    return math.ceil(sample_rows * rows / max(1, total))


def merge_samples(
    parts: Sequence[PartSample], schema: pa.Schema, rows: int = SAMPLE_ROWS, seed: int = 0
) -> pa.Table:
    """One uniform sample of about ``rows`` rows (``schema``'s columns, cast to its types)
    from the parts' samples: each keeps :func:`sample_share` of its rows' count, a random
    subset (deterministic for ``seed``) where it sent more."""
    total = sum(p.rows for p in parts)
    rng = np.random.default_rng(seed)
    tables: list[pa.Table] = []
    for p in parts:
        if not p.data or not p.rows:
            continue
        sample = decode_sample(p.data)
        share = min(sample.num_rows, sample_share(p.rows, total, rows))
        if share < sample.num_rows:
            pick = np.sort(rng.choice(sample.num_rows, size=share, replace=False))
            sample = sample.take(pa.array(pick))
        tables.append(sample.select(schema.names).cast(schema))
    return pa.concat_tables(tables) if tables else schema.empty_table()


@dataclass(frozen=True, slots=True)
class CurveLayout:
    """What a curve sort takes from its sample."""

    #: every column's rank boundaries (``sort.curve-keys = rank``); None: Paimon's raw keys
    bounds: tuple[ColumnBounds, ...] | None
    #: ascending cuts of the key space into ranges (:func:`~lakeskip.sort.cuts.aligned_cuts`);
    #: None when no ranges were asked for
    cuts: list[bytes] | None


def curve_layout(
    sample: pa.Table,
    types: Sequence[DataType],
    strategy: str,
    var_length_contribution: int,
    curve_keys_option: str = RANK_KEYS,
    n_out: int | None = None,
) -> CurveLayout:
    """The rank boundaries of ``sample``'s columns (the sort columns, in order, of lakeskip
    ``types``) and, given ``n_out``, up to ``n_out - 1`` cuts of the curve at cell corners
    near the quantiles of the sample's keys."""
    arrays = list(sample.columns)
    bounds = (
        column_bounds(arrays, types, prefix=var_length_contribution)
        if curve_keys_option == RANK_KEYS
        else None
    )
    cuts: list[bytes] | None = None
    if n_out is not None:
        keys = curve_keys(arrays, types, strategy, var_length_contribution, bounds)
        cuts = aligned_cuts(np.sort(key_bytes(keys)), n_out) if len(keys) else []
    return CurveLayout(bounds, cuts)
