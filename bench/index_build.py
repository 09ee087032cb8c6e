"""Index build throughput: each index type over N values of each supported type.

Prints values/s per (index, type), the ratio to pyarrow writing the same column to Parquet
(measured in the same run), and the bloom filter's measured false-positive rate against the
configured fpp. Not a test: nothing here passes or fails.

    .venv/bin/python bench/index_build.py --rows 10000000
"""

from __future__ import annotations

import argparse
import io
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeskip import types as T
from lakeskip.index.registry import get_indexer


def _columns(n: int, rng: np.random.Generator) -> dict[str, tuple[T.DataType, pa.Array]]:
    ints = rng.integers(-(10**9), 10**9, n)
    return {
        "int": (T.INT, pa.array(ints.astype(np.int32))),
        "bigint": (T.BIGINT, pa.array(ints * 1000)),
        "double": (T.DOUBLE, pa.array(rng.random(n))),
        "date": (T.DATE, pa.array((ints % 20000).astype(np.int32)).cast(pa.date32())),
        "timestamp": (T.TIMESTAMP_LTZ, pa.array(ints * 1000).cast(pa.timestamp("us", tz="UTC"))),
        "string": (T.STRING, pa.array([f"u{v}" for v in ints % (n // 6 + 1)])),
        "low-card string": (
            T.STRING,
            pa.array(np.array(["NEW", "PAID", "DONE", "REFUND"])[ints % 4]),
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    args = ap.parse_args()
    rng = np.random.default_rng(42)
    cols = _columns(args.rows, rng)
    print(f"{'index':<13} {'column':<16} {'values/s':>12} {'parquet values/s':>17} {'ratio':>7}")
    for name, (dtype, arr) in cols.items():
        t = time.perf_counter()
        pq.write_table(pa.table({"c": arr}), io.BytesIO())
        parquet_rate = len(arr) / (time.perf_counter() - t)
        for index_type, opts in (
            ("bloom-filter", {"items": str(args.rows), "fpp": "0.01"}),
            ("bitmap", {}),
            ("bsi", {}),
            ("range-bitmap", {}),
        ):
            indexer = get_indexer(index_type)
            if not indexer.supports(dtype) or (index_type == "bitmap" and name == "string"):
                continue
            t = time.perf_counter()
            w = indexer.create_writer(dtype, opts)
            w.write(arr)
            data = w.serialize()
            rate = len(arr) / (time.perf_counter() - t)
            print(
                f"{index_type:<13} {name:<16} {rate:>12,.0f} {parquet_rate:>17,.0f} "
                f"{rate / parquet_rate:>7.2f}  ({len(data):,} bytes)"
            )
    # bloom measured FPP on absent values
    n = min(args.rows, 1_000_000)
    present = pa.array(rng.integers(0, 2**62, n))
    w = get_indexer("bloom-filter").create_writer(T.BIGINT, {"items": str(n), "fpp": "0.01"})
    w.write(present)
    r = get_indexer("bloom-filter").create_reader(T.BIGINT, {}, w.serialize())
    probes = rng.integers(2**62, 2**63 - 1, 20_000)
    fp = sum(r.visit_equal(int(v)).remain() for v in probes)
    print(f"bloom-filter measured fpp {fp / len(probes):.4f} (configured 0.01, {n:,} items)")


if __name__ == "__main__":
    main()
