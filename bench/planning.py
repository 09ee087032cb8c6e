"""Planning cost: ScanPlanner over many files with embedded indexes (driver only, no Spark).

Builds (once, kept in ``--dir``) a table whose manifests list N data files, each with real
stats and an embedded bloom filter + bitmap container (the Parquet files themselves are not
needed for planning), committed in batches through the table's commit API, so the table has
N / ``--batch`` manifests. Then it measures what a user waits for:

* **fresh**: a new Python process opens the catalog, loads the table and plans a point
  lookup (nothing in memory); the interpreter's imports are timed apart. Three ways: the
  manifests decoded from their Avro files with the local disk cache off; the same while
  the cache stores them (the first process after a commit); and reading them back from
  the local disk cache of decoded manifests (lakeskip.catalog.manifest_disk_cache, here
  in a temporary directory);
* **warm**: the same session plans point lookups of new literals (every one a plan-cache
  miss: the manifests and decoded stats are cached, the predicate is new), a range and a
  miss;
* **pyiceberg** (this Python if it has pyiceberg, e.g. ``pip install 'lakeskip[bench]'``,
  else ``--pyiceberg-python``): the same files as an Iceberg table (same column bounds;
  Iceberg's manifests hold no bloom filters) and ``plan_files()`` of the same point lookup
  in a fresh process (bench/planning_pyiceberg.py);
* the bloom filters' measured false-positive rate against the configured one.

Times are wall clock and CPU seconds of the planning process: on a shared machine the CPU
time is the steadier figure; quote the load average printed beside them.

    .venv/bin/python bench/planning.py --files 100000 --pyiceberg-python /path/to/python
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
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
from lakeskip.catalog.format.data_file import make_data_file_meta
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry
from lakeskip.catalog.format.stats import collect_stats
from lakeskip.index.bloom_filter import bloom_size
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
    c1 = time.process_time()
    table = Catalog(path).get_table("b.t")
    plan = ScanPlanner(table).plan(EqualTo("user_id", user))
    t2 = time.perf_counter()
    return {
        "imports_s": t1 - t0,
        "plan_s": t2 - t1,
        "plan_cpu_s": time.process_time() - c1,
        "kept": plan.report.kept_files,
    }


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
        "miss (bloom)": lambda k: E.EqualTo("user_id", f"u{total + int(k)}"),
    }
    for name, make in queries.items():
        times = []
        cpu = []
        for _ in range(repeats):
            pred = make(rng.integers(0, total))  # a new literal: no plan-cache hit
            t, c = time.perf_counter(), time.process_time()
            plan = planner.plan(pred)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        r = plan.report
        med = statistics.median(times)
        by_index = ", ".join(f"{k} {v}" for k, v in sorted(r.skipped_by_column.items()))
        print(
            f"warm {name:<22} median {med * 1000:7.1f} ms (CPU {statistics.median(cpu) * 1000:6.1f})  "
            f"kept {r.kept_files:>6}/{r.total_files}  stats skipped {r.skipped_by_stats:>6}  "
            f"index skipped: {by_index or '-'}"
        )


def bloom_fpp(path: str, files: int, rows: int, probes: int, items: int, fpp: float) -> None:
    """Share of the files the stats keep that the bloom tier passes, for values no file
    holds (inside the files' string bounds, so the stats cannot answer)."""
    from lakeskip.planner.scan import ScanPlanner

    table = Catalog(path).get_table("b.t")
    planner = ScanPlanner(table)
    passed = candidates = 0
    for k in range(probes):
        plan = planner.plan(E.EqualTo("user_id", f"u{files * rows + k}"))
        passed += plan.report.kept_files
        candidates += plan.report.total_files - plan.report.skipped_by_stats
    num_bits, k_hashes = bloom_size(items, fpp)
    expected = (1 - math.exp(-k_hashes * rows / num_bits)) ** k_hashes
    print(
        f"bloom (items {items}, fpp {fpp}: {num_bits} bits, k {k_hashes}) with {rows} values "
        f"a file: measured false-positive rate {passed / max(candidates, 1):.4f} "
        f"({passed / max(candidates, 1) / fpp:.2f}x the configured {fpp}) over "
        f"{candidates:,} probes (theory for {rows} values: {expected:.4f})"
    )


def pyiceberg_plan(
    python: str, path: str, files: int, rows: int, batch: int, user: str
) -> list[dict[str, float]]:
    """Plan the same point lookup with pyiceberg (bench/planning_pyiceberg.py) in its own
    environment, on an Iceberg table of the same files' bounds."""
    script = Path(__file__).with_name("planning_pyiceberg.py")
    cmd = [python, str(script), "--dir", path, "--files", str(files)]
    cmd += ["--rows-per-file", str(rows), "--batch", str(batch), "--user", user]
    runs = []
    for run in range(3):
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"pyiceberg failed: {out.stderr.strip()[-400:]}")
            return runs
        r = json.loads(out.stdout)
        built = f", table built in {r['build_s']:.1f} s" if r.get("build_s") else ""
        print(
            f"pyiceberg fresh process #{run + 1}: imports {r['imports_s']:.2f} s, open + load + "
            f"plan_files point lookup {r['plan_s']:.2f} s (CPU {r['plan_cpu_s']:.2f} s), "
            f"kept {r['kept']}{built}"
        )
        runs.append(r)
    return runs


def _pyiceberg_python(given: str | None) -> str | None:
    if given:
        return given
    try:
        import pyiceberg  # noqa: F401
    except ImportError:
        return None
    return sys.executable


def _fresh_runs(path: str, user: str, cache: str) -> dict[str, list[dict[str, float]]]:
    """Fresh processes: disk cache off, cold (storing), then reading it back."""
    out: dict[str, list[dict[str, float]]] = {}
    modes = [
        ("no disk cache (Avro decoded)", "off"),
        ("disk cache cold (Avro decoded + stored)", cache),
        ("disk cache (decoded manifests read back)", cache),
        ("disk cache (decoded manifests read back)", cache),
    ]
    for label, where in modes:
        env = {**os.environ, "LAKESKIP_MANIFEST_CACHE_DIR": where}
        done = subprocess.run(
            [sys.executable, __file__, "--dir", path, "--fresh-child", user],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        r = json.loads(done.stdout)
        print(
            f"fresh process, {label}: imports {r['imports_s']:.2f} s, open + load + plan "
            f"point lookup {r['plan_s']:.2f} s (CPU {r['plan_cpu_s']:.2f} s), kept {r['kept']}"
        )
        out.setdefault(label, []).append(r)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--rows-per-file", type=int, default=20)
    ap.add_argument("--batch", type=int, default=1000, help="files per commit (per manifest)")
    ap.add_argument("--items", type=int, default=20, help="bloom filter items")
    ap.add_argument("--fpp", type=float, default=0.1, help="bloom filter fpp")
    ap.add_argument("--dir", help="keep the table here (built once, reused)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--pyiceberg-python",
        help="a Python with pyiceberg[sql-sqlite,pyarrow] installed (default: skip pyiceberg)",
    )
    ap.add_argument("--fresh-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fresh_child:
        print(json.dumps(fresh(args.dir, args.fresh_child)))
        return
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cache:
        # this run's decoded manifests go to a temporary directory, not ~/.cache
        os.environ["LAKESKIP_MANIFEST_CACHE_DIR"] = cache
        path = args.dir or tmp
        if not Path(path, "b.db", "t").exists():
            t0 = time.perf_counter()
            build(path, args.files, args.rows_per_file, args.batch, args.items, args.fpp)
            took = time.perf_counter() - t0
            print(f"built {args.files:,} files in {args.files // args.batch} commits: {took:.1f} s")
        print(f"load average: {os.getloadavg()}")
        user = _user(7919 * 3, args.files * args.rows_per_file)
        shutil.rmtree(cache, ignore_errors=True)
        ours = _fresh_runs(path, user, cache)
        warm(path, args.files, args.rows_per_file, args.repeats)
        bloom_fpp(path, args.files, args.rows_per_file, 20, args.items, args.fpp)
        python = _pyiceberg_python(args.pyiceberg_python)
        theirs: list[dict[str, float]] = []
        print(f"load average: {os.getloadavg()}")
        if python is None:
            print("pyiceberg: not installed here (pip install 'lakeskip[bench]', or pass")
            print("  --pyiceberg-python with a Python that has pyiceberg[sql-sqlite,pyarrow])")
        else:
            theirs = pyiceberg_plan(
                python, f"{path}-iceberg", args.files, args.rows_per_file, args.batch, user
            )
        print(f"load average: {os.getloadavg()}")
        print("side by side, fresh process, point lookup (median wall / CPU seconds):")
        rows = [(f"lakeskip, {label}", runs) for label, runs in ours.items()]
        rows.append(("pyiceberg plan_files()", theirs))
        for label, runs in rows:
            if runs:
                wall = statistics.median(r["plan_s"] for r in runs)
                cpu = statistics.median(r["plan_cpu_s"] for r in runs)
                kept = runs[-1]["kept"]
                print(f"  {label:<58} {wall:6.2f} s  CPU {cpu:5.2f} s  kept {kept}")


if __name__ == "__main__":
    main()
