"""Point lookups on data clustered by the looked-up key: lakeskip vs Parquet bloom filters.

    make bench-clustered                          # 10M rows, 128 files
    .venv/bin/python bench/clustered_lookup.py --rows 2000000 --files 32

On randomly ordered data a user_id is in several files, and no file skipper can beat plain
Spark over Parquet row-group bloom filters by more than (Parquet-bloom time) / (time over only
the files holding the key): ``bench/run.py`` measures that ceiling. Here both sides get the
layout a user would choose for key lookups: lakeskip's table is compacted with
``CALL sys.compact(order_strategy => 'order', order_by => 'user_id')``, and the plain copy is
written by Spark range-partitioned and sorted on user_id with parquet-mr bloom filters on it.
Parquet-bloom Spark still opens every file (footer, bloom filter or min/max stats per row
group); lakeskip's planner keeps only the files whose user_id range and bloom filter may hold
the key. Times are interleaved medians in one Spark session, answers checked equal; writes
``bench/results/clustered-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from run import _lookup_ceiling, _timed, _write_parquet_bloom  # type: ignore[import-not-found]

import lakeskip
from lakeskip.spark.front.demo import generate_events

TABLE = "bench.clustered"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=128)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-clustered")
    args = ap.parse_args()
    session = lakeskip.connect(
        args.warehouse,
        conf={"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": str(args.files)},
    )
    session.sql("CREATE DATABASE IF NOT EXISTS bench")
    session.sql(f"DROP TABLE IF EXISTS {TABLE}")
    items = max(1000, args.rows // args.files)
    session.sql(
        f"""CREATE TABLE {TABLE} (id BIGINT, user_id STRING, country STRING, status STRING,
        price BIGINT, ts TIMESTAMP, attrs MAP<STRING, STRING>) WITH (
        'file-index.bloom-filter.columns' = 'user_id',
        'file-index.bloom-filter.user_id.items' = '{items}',
        'file-index.bloom-filter.user_id.fpp' = '0.01',
        'target-file-size' = '1 gb')"""
    )
    df = generate_events(session, args.rows, args.files)
    session.write(df, TABLE)
    table = session.catalog.get_table(TABLE)
    n_bytes = sum(e.file.file_size for e in table.scan_files())
    session.sql(
        f"ALTER TABLE {TABLE} SET ('target-file-size' = '{max(1, n_bytes // args.files)} b')"
    )
    _, t_sort = _timed(
        lambda: session.sql(
            f"CALL sys.compact(table => '{TABLE}', order_strategy => 'order', order_by => 'user_id')"
        ).collect()
    )
    files = len(session.catalog.get_table(TABLE).scan_files())
    bloom_path = f"{args.warehouse.rstrip('/')}/parquet-bloom-sorted"
    sorted_df = df.repartitionByRange(args.files, "user_id").sortWithinPartitions("user_id")
    t_bloom = _write_parquet_bloom(sorted_df, bloom_path, items)
    print(
        f"{args.rows:,} rows; lakeskip sorted on user_id by sys.compact in {t_sort:.1f} s "
        f"({files} files); Parquet-bloom copy range-partitioned and sorted on user_id "
        f"written in {t_bloom:.1f} s"
    )
    rows = _lookup_ceiling(session, bloom_path, args.runs, TABLE)
    for r in rows:
        print(
            f"  {r['query']}: catalog {r['catalog_s']:.3f} s vs Parquet-bloom "
            f"{r['parquet_bloom_s']:.3f} s = {r['catalog_vs_parquet_bloom']:.2f}x faster (count); "
            f"rows: {r['rows_catalog_s']:.3f} s vs {r['rows_parquet_bloom_s']:.3f} s = "
            f"{r['rows_catalog_vs_parquet_bloom']:.2f}x faster"
        )
    out = Path(__file__).parent / "results" / f"clustered-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"args": vars(args), "files": files, "lookups": rows}, indent=2))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
