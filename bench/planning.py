"""Planning cost: ScanPlanner over many files with embedded indexes (driver only, no Spark).

Builds a table whose manifests list N data files (each with real stats and an embedded bloom
filter + bitmap container; the Parquet files themselves are not needed for planning), then
plans a point lookup, a range and a miss, and prints planning time in total and per file, and
how many files each tier decided -- stats are evaluated before any index is decoded.

    .venv/bin/python bench/planning.py --files 10000
"""

from __future__ import annotations

import argparse
import tempfile
import time

import pyarrow as pa

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.data_file import make_data_file_meta
from lakeskip.catalog.manifest import FileKind, ManifestEntry
from lakeskip.catalog.stats import collect_stats
from lakeskip.index.file_index import build_file_index
from lakeskip.index.options import parse_file_index_options
from lakeskip.planner.scan import ScanPlanner


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--rows-per-file", type=int, default=20)
    args = ap.parse_args()
    rt = T.RowType.of(("id", T.BIGINT), ("user_id", T.STRING), ("status", T.STRING))
    options = {
        "file-index.bloom-filter.columns": "user_id",
        "file-index.bloom-filter.user_id.items": str(args.rows_per_file),
        "file-index.bitmap.columns": "status",
    }
    with tempfile.TemporaryDirectory() as tmp:
        cat = Catalog(tmp)
        cat.create_database("b")
        table = cat.create_table("b.t", rt, options=options)
        opts = parse_file_index_options(options, rt)
        t0 = time.perf_counter()
        entries = []
        n = args.rows_per_file
        for f in range(args.files):
            ids = list(range(f * n, (f + 1) * n))
            data = pa.table(
                {
                    "id": ids,
                    "user_id": [f"u{(i * 7919) % (args.files * n)}" for i in ids],
                    "status": ["A" if f % 50 == 0 else "B"] * n,
                }
            )
            stats, cols = collect_stats(data, rt, "full")
            built = build_file_index(data, rt, opts)
            meta = make_data_file_meta(
                file_name=f"data-bench-{f}.parquet",
                file_size=1000,
                row_count=n,
                stats=stats,
                stats_cols=cols,
                schema_id=0,
                embedded_index=built.embedded,
                extra_files=[],
            )
            entries.append(ManifestEntry(FileKind.ADD, (), 0, -1, meta))
        table.commit(entries)
        print(f"built {args.files:,} file entries in {time.perf_counter() - t0:.1f} s")
        planner = ScanPlanner(table)
        queries = {
            "point lookup (bloom)": E.EqualTo("user_id", "u7919"),
            "status = 'A' (bitmap)": E.EqualTo("status", "A"),
            "id range (stats)": E.And(E.GreaterThanOrEqual("id", 1000), E.LessThan("id", 1100)),
            "miss (bloom)": E.EqualTo("user_id", "nobody"),
        }
        planner.plan(E.EqualTo("id", 0))  # warm the manifest cache, as a session would
        for name, pred in queries.items():
            times = []
            for _ in range(3):
                t = time.perf_counter()
                plan = planner.plan(pred)
                times.append(time.perf_counter() - t)
            r = plan.report
            best = min(times)
            by_index = ", ".join(f"{k} {v}" for k, v in sorted(r.skipped_by_column.items()))
            print(
                f"{name:<24} {best * 1000:8.1f} ms  {best / args.files * 1e6:6.1f} us/file  "
                f"kept {r.kept_files:>5}/{r.total_files}  stats skipped {r.skipped_by_stats:>5}  "
                f"index skipped: {by_index or '-'}"
            )


if __name__ == "__main__":
    main()
