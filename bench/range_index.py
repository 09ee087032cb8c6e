"""range-bitmap against bsi and bitmap on the same files: index size, build time, files kept.

    make bench-range                                  # default: 10M rows, 128 files
    .venv/bin/python bench/range_index.py --rows 2000000 --files 32

Writes the demo's events table once (random row order) without indexes, then, on those same
data files, builds one set of indexes after another with ``CALL sys.rewrite_file_index``
(Spark tasks):

* ``bsi+bitmap``: bsi(price), bitmap(country, status) -- the pre-1.3 Paimon choice;
* ``range-bitmap``: range-bitmap(price, country, status).

For each it prints the index bytes per column, the rewrite time, and for each query the files
kept, the files that truly hold matches (ideal), planning time and wall time against plain
``spark.read.parquet`` over all the files (median of 3 warm runs, same session). Both index
families give exact row sets, so they must keep the same files; the script checks that.
Writes ``bench/results/range-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

import lakeskip
from lakeskip.index.format import FileIndexContainer
from lakeskip.spark.front.demo import generate_events
from lakeskip.spark.read.query import table_file_paths, view_over_files

TABLE = "bench.ranges"
QUERIES = [
    ("price = point", "price = 42424"),
    ("price 0.001% range", "price BETWEEN 42424 AND 42425"),
    ("price 0.01% range", "price BETWEEN 42420 AND 42429"),
    ("price 1% range", "price BETWEEN 42000 AND 42999"),
    ("price > max-5", "price > 99994"),
    ("country = C30", "country = 'C30'"),
    ("status IN", "status IN ('REFUND', 'NEW')"),
    ("country & price pt", "country = 'C30' AND price BETWEEN 42420 AND 42429"),
]
VARIANTS = {
    "bsi+bitmap": {
        "file-index.bsi.columns": "price",
        "file-index.bitmap.columns": "country,status",
    },
    "range-bitmap": {"file-index.range-bitmap.columns": "price,country,status"},
}
ALL_KEYS = sorted({k for v in VARIANTS.values() for k in v})


def _timed(fn: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    v = fn()
    return v, time.perf_counter() - t


def _index_bytes(session: Any) -> dict[str, int]:
    """Index payload bytes per 'type(column)' over all files of the table."""
    table = session.catalog.get_table(TABLE)
    out: dict[str, int] = defaultdict(int)
    for e in table.scan_files():
        data = e.file.embedded_index
        if data is None and e.file.index_file_name:
            data = table.file_io.read_bytes(f"{table.data_file_dir(e)}/{e.file.index_file_name}")
        if not data:
            continue
        c = FileIndexContainer.decode(data)
        for col in c.columns():
            for t in c.index_types(col):
                payload = c.payload(col, t)
                out[f"{t}({col})"] += len(payload) if payload is not None else 0
    return dict(out)


def _measure(session: Any, variant: str, runs: int) -> list[dict[str, Any]]:
    spark = session.spark
    table = session.catalog.get_table(TABLE)
    paths = table_file_paths(table, table.scan_files())
    row_type = table.schema.row_type
    plain = view_over_files(spark, row_type, paths)
    out = []
    for name, where in QUERIES:
        sql = f"SELECT count(*) FROM {TABLE} WHERE {where}"
        session.sql(sql).collect()  # warm
        plain.where(where).count()
        ls = [_timed(lambda s=sql: session.sql(s).collect()[0][0]) for _ in range(runs)]
        report = session.last_reports[0]
        pl = [_timed(lambda w=where: plain.where(w).count()) for _ in range(runs)]
        n, n_plain = ls[0][0], pl[0][0]
        assert n == n_plain, f"WRONG ANSWER for {name}: {n} vs {n_plain}"
        ideal = plain.where(where).select(F.input_file_name().alias("f")).distinct().count()
        row = {
            "variant": variant,
            "query": name,
            "where": where,
            "rows": n,
            "files_total": report.total_files,
            "files_kept": report.kept_files,
            "files_ideal": ideal,
            "planning_ms": report.planning_ms,
            "lakeskip_s": statistics.median(t for _, t in ls),
            "plain_s": statistics.median(t for _, t in pl),
        }
        row["speedup"] = row["plain_s"] / row["lakeskip_s"]
        out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-range")
    args = ap.parse_args()
    session = lakeskip.connect(
        args.warehouse,
        conf={"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": str(args.files)},
    )
    session.sql("CREATE DATABASE IF NOT EXISTS bench")
    session.sql(f"DROP TABLE IF EXISTS {TABLE}")
    session.sql(
        f"CREATE TABLE {TABLE} (id BIGINT, user_id STRING, country STRING, status STRING, "
        "price BIGINT, ts TIMESTAMP, attrs MAP<STRING, STRING>) "
        "WITH ('target-file-size' = '1 gb', 'file-index.in-manifest-threshold' = '1 b')"
    )
    session.write(generate_events(session, args.rows, args.files), TABLE)
    table = session.catalog.get_table(TABLE)
    entries = table.scan_files()
    data_bytes = sum(e.file.file_size for e in entries)
    print(
        f"{args.rows:,} rows in {len(entries)} files, {data_bytes / 2**20:.1f} MiB data, "
        f"{os.cpu_count()} cores"
    )
    rows: list[dict[str, Any]] = []
    builds: dict[str, Any] = {}
    for variant, options in VARIANTS.items():
        current = session.catalog.get_table(TABLE).schema.options
        drop = [k for k in ALL_KEYS if k not in options and k in current]
        if drop:
            session.sql(f"ALTER TABLE {TABLE} UNSET (" + ", ".join(f"'{k}'" for k in drop) + ")")
        session.sql(
            f"ALTER TABLE {TABLE} SET ("
            + ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
            + ")"
        )
        _, t_build = _timed(
            lambda: session.sql(f"CALL sys.rewrite_file_index(table => '{TABLE}')").collect()
        )
        sizes = _index_bytes(session)
        builds[variant] = {"rewrite_s": t_build, "index_bytes": sizes}
        total = sum(sizes.values())
        print(
            f"\n{variant}: rewrite_file_index {t_build:.1f} s; indexes {total / 2**20:.2f} MiB "
            f"({total / data_bytes:.1%} of data): "
            + ", ".join(f"{k} {v / 2**20:.2f} MiB" for k, v in sorted(sizes.items()))
        )
        rows += _measure(session, variant, args.runs)
    head = (
        f"{'variant':<13} {'query':<20} {'kept':>5} {'ideal':>5} {'total':>5} "
        f"{'plan ms':>8} {'lakeskip':>9} {'plain':>8} {'speedup':>8}"
    )
    print("\n" + head + "\n" + "-" * len(head))
    for r in rows:
        print(
            f"{r['variant']:<13} {r['query']:<20} {r['files_kept']:>5} {r['files_ideal']:>5} "
            f"{r['files_total']:>5} {r['planning_ms']:>8.1f} {r['lakeskip_s']:>8.2f}s "
            f"{r['plain_s']:>7.2f}s {r['speedup']:>7.2f}x"
        )
    by_query: dict[str, set[int]] = defaultdict(set)
    for r in rows:
        by_query[r["query"]].add(r["files_kept"])
    assert all(len(v) == 1 for v in by_query.values()), "exact indexes kept different files"
    out_dir = Path(__file__).parent / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    summary = {
        "rows": args.rows,
        "files": len(entries),
        "cores": os.cpu_count(),
        "data_bytes": data_bytes,
        "builds": builds,
        "queries": rows,
    }
    path = out_dir / f"range-{stamp}.json"
    path.write_text(json.dumps(summary, indent=2, default=str))
    print(f"results: bench/results/{path.name}")


if __name__ == "__main__":
    main()
