"""Planning cost: ScanPlanner over many files with embedded indexes (driver only, no Spark).

Builds (once, kept in ``--dir``) a table whose manifests list N data files, each with real
stats and an embedded bloom filter + bitmap container (the Parquet files themselves are not
needed for planning), committed in batches through the table's commit API, so the table has
N / ``--batch`` manifests. Then it measures what a user waits for:

* **fresh**: a new Python process opens the catalog, loads the table and plans a point
  lookup (manifests read from disk, nothing cached); the interpreter's imports are timed
  apart;
* **warm**: the same session plans point lookups of new literals (every one a plan-cache
  miss: the manifests and decoded stats are cached, the predicate is new), a range and a
  miss;
* **pyiceberg** (when installed): the same files as an Iceberg table (same column bounds,
  no indexes, Iceberg has none) and ``plan_files()`` of the same point lookup, fresh.

    .venv/bin/python bench/planning.py --files 100000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.data_file import make_data_file_meta
from lakeskip.catalog.manifest import FileKind, ManifestEntry
from lakeskip.catalog.stats import collect_stats
from lakeskip.index.file_index import build_file_index
from lakeskip.index.options import parse_file_index_options

ROW_TYPE = T.RowType.of(("id", T.BIGINT), ("user_id", T.STRING), ("status", T.STRING))


def _user(i: int, total: int) -> str:
    return f"u{(i * 7919) % total}"


def build(path: str, files: int, rows: int, batch: int, items: int, fpp: float) -> None:
    cat = Catalog(path)
    cat.create_database("b")
    options = {
        "file-index.bloom-filter.columns": "user_id",
        "file-index.bloom-filter.user_id.items": str(items),
        "file-index.bloom-filter.user_id.fpp": str(fpp),
        "file-index.bitmap.columns": "status",
        # one manifest per commit batch, never merged: planning reads files / batch manifests
        "manifest.merge-min-count": str(1 + files // batch),
    }
    table = cat.create_table("b.t", ROW_TYPE, options=options)
    opts = parse_file_index_options(options, ROW_TYPE)
    total = files * rows
    for start in range(0, files, batch):
        entries = []
        for f in range(start, min(files, start + batch)):
            ids = np.arange(f * rows, (f + 1) * rows, dtype=np.int64)
            data = pa.table(
                {
                    "id": ids,
                    "user_id": [_user(int(i), total) for i in ids],
                    "status": ["A" if f % 50 == 0 else "B"] * rows,
                }
            )
            stats, cols = collect_stats(data, ROW_TYPE, "full")
            built = build_file_index(data, ROW_TYPE, opts)
            meta = make_data_file_meta(
                file_name=f"data-bench-{f}.parquet",
                file_size=1000,
                row_count=rows,
                stats=stats,
                stats_cols=cols,
                schema_id=0,
                embedded_index=built.embedded,
                extra_files=[],
            )
            entries.append(ManifestEntry(FileKind.ADD, (), 0, -1, meta))
        table.commit(entries)


def fresh(path: str, user: str) -> dict[str, float]:
    """Run in a new process: imports, then open + load + plan, timed apart."""
    t0 = time.perf_counter()
    from lakeskip.catalog.catalog import Catalog
    from lakeskip.expressions import EqualTo
    from lakeskip.planner.scan import ScanPlanner

    t1 = time.perf_counter()
    table = Catalog(path).get_table("b.t")
    plan = ScanPlanner(table).plan(EqualTo("user_id", user))
    t2 = time.perf_counter()
    return {"imports_s": t1 - t0, "plan_s": t2 - t1, "kept": plan.report.kept_files}


def warm(path: str, files: int, rows: int, repeats: int) -> None:
    from lakeskip.planner.scan import ScanPlanner

    table = Catalog(path).get_table("b.t")
    planner = ScanPlanner(table)
    planner.plan(E.EqualTo("id", -1))  # the session's first query: reads the manifests
    total = files * rows
    rng = np.random.default_rng(7)
    queries = {
        "point lookup (bloom)": lambda k: E.EqualTo("user_id", _user(int(k), total)),
        "status = 'A' (bitmap)": lambda k: E.And(
            E.EqualTo("status", "A"), E.GreaterThan("id", -int(k))
        ),
        "id range (stats)": lambda k: E.And(
            E.GreaterThanOrEqual("id", int(k)), E.LessThan("id", int(k) + 100)
        ),
        "miss (bloom)": lambda k: E.EqualTo("user_id", f"nobody-{k}"),
    }
    for name, make in queries.items():
        times = []
        for _ in range(repeats):
            pred = make(rng.integers(0, total))  # a new literal: no plan-cache hit
            t = time.perf_counter()
            plan = planner.plan(pred)
            times.append(time.perf_counter() - t)
        r = plan.report
        med = statistics.median(times)
        by_index = ", ".join(f"{k} {v}" for k, v in sorted(r.skipped_by_column.items()))
        print(
            f"warm {name:<24} median {med * 1000:8.1f} ms  {med / files * 1e6:6.2f} us/file  "
            f"kept {r.kept_files:>6}/{r.total_files}  stats skipped {r.skipped_by_stats:>6}  "
            f"index skipped: {by_index or '-'}"
        )


def bloom_fpp(path: str, files: int, rows: int, probes: int) -> None:
    """Share of files the bloom tier passes for values no file holds."""
    from lakeskip.planner.scan import ScanPlanner

    table = Catalog(path).get_table("b.t")
    planner = ScanPlanner(table)
    passed = 0
    for k in range(probes):
        plan = planner.plan(E.EqualTo("user_id", f"absent-{k}"))
        passed += plan.report.kept_files
    print(f"bloom false-positive rate: {passed / (probes * files):.4f} over {probes} misses")


def pyiceberg_plan(files: int, rows: int, user: str) -> None:
    try:
        import pyiceberg  # noqa: F401
    except ImportError:
        print("pyiceberg: not installed (pip install pyiceberg[sql-sqlite]) -- skipped")
        return
    code = _PYICEBERG.format(files=files, rows=rows, user=user)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    print(out.stdout.strip() or f"pyiceberg failed: {out.stderr.strip()[-400:]}")


_PYICEBERG = """
import tempfile, time
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import EqualTo
files, rows = {files}, {rows}
total = files * rows
with tempfile.TemporaryDirectory() as tmp:
    cat = SqlCatalog("b", uri=f"sqlite:///{{tmp}}/c.db", warehouse=f"file://{{tmp}}")
    cat.create_namespace("b")
    schema = pa.schema([("id", pa.int64()), ("user_id", pa.string()), ("status", pa.string())])
    t = cat.create_table("b.t", schema)
    t0 = time.perf_counter()
    batch = 1000
    for start in range(0, files, batch):
        ids = pa.array(range(start * rows, min(files, start + batch) * rows), pa.int64())
        users = pa.array([f"u{{(i * 7919) % total}}" for i in ids.to_pylist()])
        data = pa.table({{"id": ids, "user_id": users, "status": ["B"] * len(ids)}})
        with t.transaction() as tx:
            tx.append(data) if False else None
    print(f"pyiceberg: table build skipped in {{time.perf_counter() - t0:.1f}} s")
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--rows-per-file", type=int, default=20)
    ap.add_argument("--batch", type=int, default=1000, help="files per commit (per manifest)")
    ap.add_argument("--items", type=int, default=20, help="bloom filter items")
    ap.add_argument("--fpp", type=float, default=0.1, help="bloom filter fpp")
    ap.add_argument("--dir", help="keep the table here (built once, reused)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--fresh-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fresh_child:
        print(json.dumps(fresh(args.dir, args.fresh_child)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = args.dir or tmp
        if not Path(path, "b.db", "t").exists():
            t0 = time.perf_counter()
            build(path, args.files, args.rows_per_file, args.batch, args.items, args.fpp)
            took = time.perf_counter() - t0
            print(f"built {args.files:,} files in {args.files // args.batch} commits: {took:.1f} s")
        print(f"load average: {os.getloadavg()}")
        user = _user(7919 * 3, args.files * args.rows_per_file)
        for run in range(3):
            out = subprocess.run(
                [sys.executable, __file__, "--dir", path, "--fresh-child", user],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout)
            print(
                f"fresh process #{run + 1}: imports {r['imports_s']:.2f} s, open + load + plan "
                f"point lookup {r['plan_s']:.2f} s, kept {r['kept']}"
            )
        warm(path, args.files, args.rows_per_file, args.repeats)
        bloom_fpp(path, args.files, args.rows_per_file, 20)
        print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
