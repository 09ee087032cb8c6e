"""Files a 1% range keeps after z-order / Hilbert: Paimon's raw-byte keys, lakeskip's rank keys,
and delta-rs ``z_order`` on the same rows.

    .venv/bin/python bench/zorder_layout.py                      # 2M rows, 16 and 64 files
    .venv/bin/python bench/zorder_layout.py --rows 6000000 --files 39

Two tables of the same shape: ``wide-narrow`` (a key up to 6,000,000 and a day number over
2,500 days, the ranges of TPC-H ``l_orderkey`` / ``l_shipdate``) and ``equal`` (two keys up to
1,000,000). Each is written by lakeskip (Spark), then compacted with ``CALL sys.compact``
(z-order with ``sort.curve-keys = paimon``, z-order and Hilbert with the default ``rank``) into
``--files`` files, written by lakeskip with ``clustering.columns = 'a,b'`` and 1/``--files`` of
the data as target file size (write-time clustering), and written by delta-rs and ``optimize.z_order`` with the same
target file size. For 200 random 1%-wide ranges of each column it counts the files whose min/max (the
stats the planners prune with) meet the range; an even grid of N files keeps about sqrt(N).
Writes ``bench/results/zorder-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lakeskip

SHAPES = {"wide-narrow": (6_000_000, 2_500), "equal": (1_000_000, 1_000_000)}


def _data(rows: int, tops: tuple[int, int], seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "a": pa.array(rng.integers(0, tops[0], rows, dtype=np.int64)),
            "b": pa.array(rng.integers(0, tops[1], rows, dtype=np.int32)),
            "payload": pa.array(rng.random(rows)),
        }
    )


def _kept(boxes: dict[str, tuple[np.ndarray, np.ndarray]], tops: tuple[int, int]) -> list[float]:  # type: ignore[type-arg]
    rng = np.random.default_rng(1)
    out = []
    for column, top in zip(("a", "b"), tops, strict=True):
        mins, maxs = boxes[column]
        starts = rng.uniform(0, top * 0.99, 200)
        width = top / 100
        out.append(float(np.mean([((mins <= s + width) & (maxs >= s)).sum() for s in starts])))
    return out


def _parquet_boxes(paths: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:  # type: ignore[type-arg]
    lows: dict[str, list[Any]] = {"a": [], "b": []}
    highs: dict[str, list[Any]] = {"a": [], "b": []}
    for p in paths:
        t = pq.read_table(p, columns=["a", "b"])
        for c in ("a", "b"):
            v = t[c].to_numpy()
            lows[c].append(v.min())
            highs[c].append(v.max())
    return {c: (np.array(lows[c]), np.array(highs[c])) for c in ("a", "b")}


def _lakeskip(
    session: Any, name: str, data: pa.Table, files: int, tops: tuple[int, int]
) -> dict[str, Any]:
    session.sql(f"DROP TABLE IF EXISTS {name}")
    session.sql(f"CREATE TABLE {name} (id BIGINT, a BIGINT, b INT, payload DOUBLE)")
    src = f"/tmp/lakeskip-bench-zorder-{os.getpid()}.parquet"
    pq.write_table(data, src)
    session.write(session.spark.read.parquet(src).repartition(8), name)
    os.remove(src)
    out: dict[str, Any] = {}
    paths = session.table(name).files()
    out["as written"] = {"files": len(paths), "kept": _kept(_parquet_boxes(paths), tops)}
    # write-time clustering (clustering.columns, rank keys): the INSERT itself is cut into
    # about bytes / target-file-size files at curve-cell corners, whatever its input partitions
    size = sum(e.file.file_size for e in session.table(name).table.scan_files())
    clustered = f"{name}_clustered"
    session.sql(f"DROP TABLE IF EXISTS {clustered}")
    session.sql(
        f"CREATE TABLE {clustered} (id BIGINT, a BIGINT, b INT, payload DOUBLE) WITH "
        f"('clustering.columns' = 'a,b', 'target-file-size' = '{-(-size // files)}')"
    )
    pq.write_table(data, src)
    t0 = time.perf_counter()
    session.write(session.spark.read.parquet(src).repartition(8), clustered)
    seconds = time.perf_counter() - t0
    os.remove(src)
    paths = session.table(clustered).files()
    out["written with clustering.columns"] = {
        "files": len(paths),
        "kept": _kept(_parquet_boxes(paths), tops),
        "write_seconds": round(seconds, 2),
    }
    session.sql(f"DROP TABLE {clustered}")
    for label, curve, strategy in (
        ("zorder, paimon keys (before)", "paimon", "zorder"),
        ("zorder, rank keys (after)", "rank", "zorder"),
        ("hilbert, rank keys (after)", "rank", "hilbert"),
    ):
        # the target from the files as they are now, so that each layout has --files files
        size = sum(e.file.file_size for e in session.table(name).table.scan_files())
        session.sql(
            f"ALTER TABLE {name} SET TBLPROPERTIES ('sort.curve-keys' = '{curve}', "
            f"'target-file-size' = '{-(-size // files)}')"
        )
        t0 = time.perf_counter()
        session.sql(
            f"CALL sys.compact(table => '{name}', order_strategy => '{strategy}', order_by => 'a,b')"
        )
        seconds = time.perf_counter() - t0
        paths = session.table(name).files()
        out[label] = {
            "files": len(paths),
            "kept": _kept(_parquet_boxes(paths), tops),
            "compact_seconds": round(seconds, 2),
        }
    return out


def _delta(data: pa.Table, files: int, tops: tuple[int, int], root: Path) -> dict[str, Any]:
    try:
        from deltalake import DeltaTable, write_deltalake
    except ImportError:
        return {"skipped": "deltalake not installed (pip install -e '.[bench]')"}
    shutil.rmtree(root, ignore_errors=True)
    write_deltalake(str(root), data)
    dt = DeltaTable(str(root))
    size = sum(int(s) for s in dt.get_add_actions(flatten=True).column("size_bytes").to_pylist())
    t0 = time.perf_counter()
    dt.optimize.z_order(["a", "b"], target_size=max(1, size // files))
    seconds = time.perf_counter() - t0
    dt = DeltaTable(str(root))
    paths = [u.removeprefix("file://") for u in dt.file_uris()]
    return {
        "delta-rs z_order": {
            "files": len(paths),
            "kept": _kept(_parquet_boxes(paths), tops),
            "compact_seconds": round(seconds, 2),
        }
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-zorder")
    args = ap.parse_args()
    session = lakeskip.connect(args.warehouse, conf={"spark.driver.memory": "4g"})
    session.sql("CREATE DATABASE IF NOT EXISTS bench")
    result: dict[str, Any] = {"rows": args.rows, "load_before": os.getloadavg(), "runs": []}
    for shape, tops in SHAPES.items():
        data = _data(args.rows, tops)
        for files in args.files:
            layouts = _lakeskip(session, "bench.zorder", data, files, tops)
            layouts.update(_delta(data, files, tops, Path(args.warehouse) / "delta"))
            run = {"shape": shape, "ranges": tops, "target_files": files, "layouts": layouts}
            result["runs"].append(run)
            print(f"\n{shape} (a < {tops[0]:,}, b < {tops[1]:,}), target {files} files")
            print(f"  {'layout':32} {'files':>5} {'1% of a':>8} {'1% of b':>8}   (grid: sqrt N)")
            for label, r in layouts.items():
                if "kept" not in r:
                    print(f"  {label:32} {r}")
                    continue
                grid = math.sqrt(r["files"])
                a, b = r["kept"]
                print(
                    f"  {label:32} {r['files']:5d} {a:8.2f} {b:8.2f}   "
                    f"({grid:.1f}; {a / grid:.2f}x, {b / grid:.2f}x)"
                    + (f"  compact {r['compact_seconds']} s" if "compact_seconds" in r else "")
                    + (f"  write {r['write_seconds']} s" if "write_seconds" in r else "")
                )
    result["load_after"] = os.getloadavg()
    print(f"\nload average before {result['load_before']}, after {result['load_after']} (loaded)")
    out = Path(__file__).parent / "results" / f"zorder-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")
    session.spark.stop()


if __name__ == "__main__":
    main()
