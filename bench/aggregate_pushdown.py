"""``count(*)`` / ``min`` / ``max`` through the Spark catalog, answered from the manifests
(issue 30) against the same query with the push-down off (every data file read).

    PYTHONPATH=$PWD/src:$PWD /work/main/.venv/bin/python bench/aggregate_pushdown.py --files 128

Builds one append table of ``--files`` files (one Spark task per file, ``--rows`` rows in
all), then times each query ``--repeat`` times both ways in one session, side by side, and
checks the answers are equal. Prints the load average beside the figures (a shared, loaded
machine: read them as ratios) and writes ``bench/results/aggregate-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from results_file import load_average, write_results  # type: ignore[import-not-found]

import lakeskip

CONF = "spark.lakeskip.aggregate-pushdown.enabled"
QUERIES = (
    "SELECT count(*) FROM lakeskip.b.t",
    "SELECT min(id), max(id), count(v) FROM lakeskip.b.t",
    "SELECT count(*) FROM lakeskip.b.t WHERE p = 3",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=128)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    load_start = load_average()
    wh = tempfile.mkdtemp(prefix="lakeskip-agg-")
    s = lakeskip.connect(
        wh,
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
    )
    spark = s.spark
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.b")
    spark.sql("CREATE TABLE lakeskip.b.t (id BIGINT, v DOUBLE, p INT) PARTITIONED BY (p)")
    t0 = time.perf_counter()
    spark.sql(
        f"INSERT INTO lakeskip.b.t SELECT id, id / 7.0, CAST(floor(id * 8 / {args.rows}) AS INT) "
        f"FROM range(0, {args.rows}, 1, {args.files})"
    )
    built = time.perf_counter() - t0
    files = len(s.table("b.t").files())
    results = []
    for sql in QUERIES:
        row: dict[str, object] = {"sql": sql}
        answers = {}
        for pushed in (True, False, True, False):  # interleaved: both see the same load
            spark.conf.set(CONF, str(pushed).lower())
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                answers[pushed] = [tuple(r) for r in spark.sql(sql).collect()]
                times.append(time.perf_counter() - t)
            key = "pushed_s" if pushed else "read_s"
            row.setdefault(key, [])
            row[key] += times  # type: ignore[operator]
        spark.conf.unset(CONF)
        assert answers[True] == answers[False], f"{sql}: {answers}"
        row["answer"] = answers[True]
        row["pushed_median_s"] = statistics.median(row["pushed_s"])  # type: ignore[arg-type]
        row["read_median_s"] = statistics.median(row["read_s"])  # type: ignore[arg-type]
        results.append(row)
    load_end = load_average()
    spark.stop()
    print(f"table: {files} files, {args.rows} rows (built in {built:.1f} s)")
    for r in results:
        ratio = r["read_median_s"] / r["pushed_median_s"]  # type: ignore[operator]
        print(
            f"{r['sql']}: from manifests {r['pushed_median_s']:.3f} s, reading files "
            f"{r['read_median_s']:.3f} s (median of {2 * args.repeat}; {ratio:.1f}x)"
        )
    write_results(
        "aggregate",
        {"bench": "aggregate_pushdown", "files": files, "rows": args.rows, "queries": results},
        load_start,
        load_end,
    )


if __name__ == "__main__":
    main()
