"""The benchmark that keeps us honest: lakeskip vs plain Spark on the same files, side by side.

    make bench                                   # default: 10M rows, 128 files
    .venv/bin/python bench/run.py --rows 2000000 --files 32

Generates an events table in Spark tasks (random row order), writes it as a lakeskip table with
bloom(user_id), bitmap(country, status, attrs[device]), bsi(price), and once more without
indexes (write-time ratio, with per-stage write timings summed over tasks), and once as plain Spark
Parquet with row-group bloom filters on user_id (the no-lakeskip baseline). For each query shape it measures, in the same Spark session:
files total / kept by lakeskip / ideal (files that truly hold matches, computed from the data)
/ kept by min-max stats alone, bytes the JVM read (``/proc/<pid>/io``), planning time, and wall
time (median of 3 warm runs) for lakeskip and for ``spark.read.parquet`` over all the files;
and over the bloom-filtered Parquet files; then again after ``CALL sys.compact(... 'zorder',
'country,price')``, with delta-rs's ``optimize.z_order`` run on a Delta copy of the same rows
(``--no-delta`` skips it) for time and layout (files a country + price query keeps by min/max). Prints one table, writes
``bench/results/<timestamp>.json`` and, if matplotlib is installed, a PNG chart.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

import lakeskip
from lakeskip.spark.front.demo import generate_events
from lakeskip.spark.read.query import table_file_paths, view_over_files
from lakeskip.spark.write.writer import last_write_timings

TABLE = "bench.events"
QUERIES = [
    ("point user_id", "user_id = 'u4242'"),
    ("IN 10 user_ids", "user_id IN (" + ", ".join(f"'u{i * 7919}'" for i in range(10)) + ")"),
    ("country & 1% price", "country = 'C30' AND price BETWEEN 50000 AND 51000"),
    ("status IN", "status IN ('REFUND')"),
    (
        "1% ts range",
        "ts >= TIMESTAMP '2024-06-01 00:00:00' AND ts < TIMESTAMP '2024-06-04 15:36:00'",
    ),
    ("OR of 2 points", "user_id = 'u1' OR user_id = 'u77'"),
    ("map key", "attrs['device'] = 'tv'"),
]


def _jvm_read_bytes(spark: Any) -> int:
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    try:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def _timed(fn: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    v = fn()
    return v, time.perf_counter() - t


def _ideal_files(spark: Any, paths: list[str], row_type: Any, where: str) -> int:
    df = view_over_files(spark, row_type, paths).where(where).select(F.input_file_name().alias("f"))
    return df.distinct().count()


def _measure(session: Any, label: str, runs: int) -> list[dict[str, Any]]:
    spark = session.spark
    table = session.catalog.get_table(TABLE)
    entries = table.scan_files()
    paths = table_file_paths(table, entries)
    row_type = table.schema.row_type
    plain = view_over_files(spark, row_type, paths)
    out = []
    for name, where in QUERIES:
        sql = f"SELECT count(*) FROM {TABLE} WHERE {where}"
        session.sql(sql).collect()  # warm
        _count(plain, where)
        ls_times, pl_times = [], []
        b0 = _jvm_read_bytes(spark)
        for _ in range(runs):
            n, t = _timed(lambda s=sql: session.sql(s).collect()[0][0])
            ls_times.append(t)
        b1 = _jvm_read_bytes(spark)
        report = session.last_reports[0]
        for _ in range(runs):
            n_plain, t = _timed(lambda w=where: _count(plain, w))
            pl_times.append(t)
        b2 = _jvm_read_bytes(spark)
        stats_only = session.table(TABLE).table  # min-max only: plan without indexes
        from lakeskip.planner.scan import ScanPlanner

        minmax = ScanPlanner(stats_only).plan(_predicate(session, where), use_indexes=False).report
        ideal = _ideal_files(spark, paths, row_type, where)
        row = {
            "phase": label,
            "query": name,
            "where": where,
            "rows": n,
            "rows_plain": n_plain,
            "files_total": report.total_files,
            "files_kept": report.kept_files,
            "files_ideal": ideal,
            "files_minmax_only": minmax.kept_files,
            "planning_ms": report.planning_ms,
            "lakeskip_s": statistics.median(ls_times),
            "plain_s": statistics.median(pl_times),
            "bytes_read_lakeskip": (b1 - b0) // runs if b0 >= 0 else None,
            "bytes_read_plain": (b2 - b1) // runs if b1 >= 0 else None,
        }
        row["speedup"] = row["plain_s"] / row["lakeskip_s"]
        assert n == n_plain, f"WRONG ANSWER for {name}: {n} vs {n_plain}"
        out.append(row)
    return out


_PHASES = ("parsing", "analysis", "optimization", "planning")


def _phases_ms(df: Any) -> dict[str, float]:
    """Spark's own phase timings of a query (``QueryPlanningTracker``), in ms."""
    out: dict[str, float] = {}
    it = df._jdf.queryExecution().tracker().phases().iterator()
    while it.hasNext():
        kv = it.next()
        out[str(kv._1())] = float(kv._2().durationMs())
    return out


def _catalog_vs_plain(session: Any, runs: int) -> list[dict[str, Any]]:
    """Plain ``spark.sql`` on the lakeskip catalog vs plain Spark Parquet reads over all the
    files and over only the ideal files (those that truly hold matches), in the same session.

    Plain baselines: ``prepared`` is one ``spark.read.parquet(all files)`` DataFrame built
    once and queried each run (its file listing is paid once, before timing: the fastest
    plain Spark gets); ``per-query`` calls ``spark.read.parquet`` in every run, as a script
    that reads the files for each query does (it lists them each time). The catalog does no
    listing at all: the kept files come from the manifest. Per catalog query it also records
    Spark's phase timings (parsing / analysis / optimization / planning; execution is the
    rest of the wall time) and the Python callbacks (count and seconds per operation).
    Every side runs the same ``count(*)`` aggregate and collects its one row to Python.
    """
    if session.catalog_name is None:
        print("catalog not installed (no javac): skipping the spark.sql comparison")
        return []
    from lakeskip.spark.front.catalog_setup import service_for

    spark = session.spark
    service = service_for(spark)
    name = f"{session.catalog_name}.{TABLE}"
    table = session.catalog.get_table(TABLE)
    row_type = table.schema.row_type
    paths = table_file_paths(table, table.scan_files())
    plain = view_over_files(spark, row_type, paths)
    out = []
    for label, where in [("full scan (nothing to skip)", "price >= 0"), *QUERIES]:
        hits = plain.where(where).select(F.input_file_name().alias("f")).distinct().collect()
        ideal = view_over_files(spark, row_type, [r.f for r in hits])
        sql = f"SELECT count(*) FROM {name} WHERE {where}"
        n = spark.sql(sql).collect()[0][0]  # warm all of them
        n_all, n_ideal = _count(plain, where), _count(ideal, where)
        n_fresh = _count(view_over_files(spark, row_type, paths), where)
        assert n == n_all == n_ideal == n_fresh, (
            f"WRONG ANSWER for {label}: {n} / {n_all} / {n_ideal} / {n_fresh}"
        )
        times: dict[str, list[float]] = {"catalog": [], "all": [], "fresh": [], "ideal": []}
        phases: dict[str, list[float]] = {k: [] for k in (*_PHASES, "execution")}
        plain_phases: dict[str, list[float]] = {k: [] for k in (*_PHASES, "execution")}
        before = service.callback_stats()

        def timed_phases(run: Any, into: dict[str, list[float]]) -> float:
            df, seconds = _timed(run)
            ph = _phases_ms(df)
            for k in _PHASES:
                into[k].append(ph.get(k, 0.0))
            into["execution"].append(seconds * 1000 - sum(ph.get(k, 0.0) for k in _PHASES))
            return seconds

        for i in range(runs):
            catalog_run = lambda s=sql: _collected(spark.sql(s))  # noqa: E731
            plain_run = lambda w=where: _collected(_count_frame(plain, w))  # noqa: E731
            # alternate which side goes first, so that neither always follows the other
            if i % 2 == 0:
                times["catalog"].append(timed_phases(catalog_run, phases))
                times["all"].append(timed_phases(plain_run, plain_phases))
            else:
                times["all"].append(timed_phases(plain_run, plain_phases))
                times["catalog"].append(timed_phases(catalog_run, phases))
            times["fresh"].append(
                _timed(lambda w=where: _count(view_over_files(spark, row_type, paths), w))[1]
            )
            times["ideal"].append(_timed(lambda w=where, d=ideal: _count(d, w))[1])
        callbacks = service.callback_stats().since(before)
        t = {k: statistics.median(v) for k, v in times.items()}
        out.append(
            {
                "query": label,
                "files_ideal": len(hits),
                "catalog_s": t["catalog"],
                "plain_all_s": t["all"],
                "plain_all_per_query_read_s": t["fresh"],
                "plain_ideal_s": t["ideal"],
                "speed_vs_all": t["all"] / t["catalog"],
                "speed_vs_all_per_query_read": t["fresh"] / t["catalog"],
                "time_vs_ideal": t["catalog"] / t["ideal"],
                "catalog_phases_ms": {k: statistics.median(v) for k, v in phases.items()},
                "plain_all_phases_ms": {k: statistics.median(v) for k, v in plain_phases.items()},
                "callbacks_per_query": {k: v / runs for k, v in callbacks.calls.items() if v},
                "callback_ms_per_query": {
                    k: 1000 * v / runs for k, v in callbacks.seconds.items() if callbacks.calls[k]
                },
            }
        )
    print(f"\nspark.sql on the catalog ({name}) vs spark.read.parquet, median of {runs}:")
    print(
        f"{'query':30} {'catalog s':>10} {'all (prepared)':>15} {'all (per query)':>16} "
        f"{'ideal s':>9} {'vs prepared':>12} {'vs per query':>13} {'vs ideal':>9}"
    )
    for r in out:
        print(
            f"{r['query']:30} {r['catalog_s']:10.3f} {r['plain_all_s']:15.3f} "
            f"{r['plain_all_per_query_read_s']:16.3f} {r['plain_ideal_s']:9.3f} "
            f"{r['speed_vs_all']:11.2f}x {r['speed_vs_all_per_query_read']:12.2f}x "
            f"{r['time_vs_ideal']:8.2f}x"
        )
    print(
        "query phases (ms, median): catalog, then the prepared plain DataFrame (its Parquet "
        "reader's Hadoop-conf broadcast falls in execution); Python callbacks per catalog query:"
    )
    for r in out:
        ph = " ".join(f"{k} {v:.0f}" for k, v in r["catalog_phases_ms"].items())
        pp = " ".join(f"{k} {v:.0f}" for k, v in r["plain_all_phases_ms"].items())
        cb = " ".join(
            f"{k} {r['callbacks_per_query'][k]:g}x {v:.1f}ms"
            for k, v in r["callback_ms_per_query"].items()
        )
        print(f"  {r['query']:30} catalog {ph} | {cb}")
        print(f"  {'':30} plain   {pp}")
    return out


def _lookup_ceiling(
    session: Any, bloom_path: str, runs: int, table_name: str = TABLE
) -> list[dict[str, Any]]:
    """For the user_id lookups (only a bloom filter can skip): the catalog, plain Spark over
    the Parquet-bloom files, and plain Spark over only the ideal files (the floor any file
    skipper on Spark can reach), timed interleaved; ``ceiling`` = Parquet-bloom / ideal is the
    best speed-up vs Parquet-bloom that skipping files alone can give on this layout."""
    import pyarrow.parquet as pq

    spark = session.spark
    table = session.catalog.get_table(table_name)
    row_type = table.schema.row_type
    plain = view_over_files(spark, row_type, table_file_paths(table, table.scan_files()))
    bloom = spark.read.parquet(bloom_path)
    bloom_files = sorted(str(p) for p in Path(bloom_path).glob("*.parquet"))
    row_groups = sum(pq.ParquetFile(p).metadata.num_row_groups for p in bloom_files)
    name = f"{session.catalog_name}.{table_name}" if session.catalog_name else table_name
    run_catalog = session.catalog_name is not None
    out = []
    for label, where in QUERIES:
        if "user_id" not in where:
            continue
        hits = plain.where(where).select(F.input_file_name().alias("f")).distinct().collect()
        ideal = view_over_files(spark, row_type, [r.f for r in hits])
        sql = f"SELECT count(*) FROM {name} WHERE {where}"
        select = f"SELECT * FROM {name} WHERE {where}"
        # Two shapes of the same lookup: count(*) (a two-stage job with a shuffle) and the
        # matching rows themselves (one stage; what a key lookup returns).
        fns = {
            "parquet_bloom": lambda w=where: _count(bloom, w),
            "ideal": lambda w=where, d=ideal: _count(d, w),
            "rows_parquet_bloom": lambda w=where: _ids(bloom.where(w)),
            "rows_ideal": lambda w=where, d=ideal: _ids(d.where(w)),
        }
        if run_catalog:
            fns["catalog"] = lambda s=sql: spark.sql(s).collect()[0][0]
            fns["rows_catalog"] = lambda s=select: _ids(spark.sql(s))
        answers = {k: fn() for k, fn in fns.items()}  # warm
        counts = {k: v for k, v in answers.items() if not k.startswith("rows_")}
        ids = {k: v for k, v in answers.items() if k.startswith("rows_")}
        assert len(set(counts.values())) == 1, f"WRONG ANSWER for {label}: {counts}"
        assert len(set(ids.values())) == 1, f"WRONG ROWS for {label}"
        assert len(next(iter(ids.values()))) == next(iter(counts.values()))
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(runs):
            for k, fn in fns.items():
                times[k].append(_timed(fn)[1])
        t = {k: statistics.median(v) for k, v in times.items()}
        row = {
            "query": label,
            "files_ideal": len(hits),
            "files_total": len(bloom_files),
            "parquet_bloom_row_groups": row_groups,
            **{f"{k}_s": v for k, v in t.items()},
            "ceiling": t["parquet_bloom"] / t["ideal"],
            "rows_ceiling": t["rows_parquet_bloom"] / t["rows_ideal"],
        }
        if run_catalog:
            row["catalog_vs_parquet_bloom"] = t["parquet_bloom"] / t["catalog"]
            row["rows_catalog_vs_parquet_bloom"] = t["rows_parquet_bloom"] / t["rows_catalog"]
        out.append(row)
    print(f"\nuser_id lookups: catalog vs Parquet-bloom vs only the ideal files, median of {runs}:")
    print(
        f"{'query':16} {'ideal/files':>11} {'pq-bloom s':>10} {'ideal s':>8} {'catalog s':>9} {'ceiling':>8}"
    )
    for r in out:
        print(
            f"{r['query']:16} {r['files_ideal']:>5}/{r['files_total']:<5} "
            f"{r['parquet_bloom_s']:10.3f} {r['ideal_s']:8.3f} "
            f"{r.get('catalog_s', float('nan')):9.3f} {r['ceiling']:7.2f}x"
        )
    print(f"the same lookups returning the matching rows (SELECT *), median of {runs}:")
    for r in out:
        print(
            f"{r['query']:16} {r['files_ideal']:>5}/{r['files_total']:<5} "
            f"{r['rows_parquet_bloom_s']:10.3f} {r['rows_ideal_s']:8.3f} "
            f"{r.get('rows_catalog_s', float('nan')):9.3f} {r['rows_ceiling']:7.2f}x"
        )
    print(f"(Parquet-bloom Spark opens all {len(bloom_files)} files, {row_groups} row groups)")
    return out


def _collected(df: Any) -> Any:
    df.collect()
    return df


def _ids(df: Any) -> tuple[int, ...]:
    """Collect every column of the matching rows (as a lookup returns them) and answer with
    their sorted ids, so the sides can be checked equal."""
    return tuple(sorted(r["id"] for r in df.collect()))


def _count_frame(df: Any, where: str) -> Any:
    """``SELECT count(*) ... WHERE`` on a DataFrame (the catalog query's plan shape)."""
    return df.where(where).agg(F.count(F.lit(1)))


def _count(df: Any, where: str) -> int:
    """``SELECT count(*) ... WHERE`` on a DataFrame, collected to Python as the catalog's
    ``spark.sql(...).collect()`` is: the same plan shape and the same way back (``count()``
    returns through py4j instead, which would time the result path, not the scan)."""
    return int(_count_frame(df, where).collect()[0][0])


def _predicate(session: Any, where: str) -> Any:
    """The lakeskip predicate for a WHERE clause (as the session derives it)."""
    import sqlglot

    from lakeskip.sql.query import analyze_query
    from lakeskip.sql.statement_types import TableIdent

    tree = sqlglot.parse_one(f"SELECT * FROM {TABLE} WHERE {where}", read="spark")
    rt = session.catalog.get_table(TABLE).schema.row_type
    scans = analyze_query(tree, tables=lambda i: rt if i == TableIdent("bench", "events") else None)
    return scans[0].predicate


# -- write time with and without indexes ----------------------------------------------------


def _write_pair(
    session: Any, df: Any, runs: int
) -> tuple[tuple[float, Any], tuple[float, Any], list[dict[str, float]]]:
    """Write the rows into both tables ``runs`` times each, alternating (with, without, with,
    ...) so that a load change on a shared machine hits both; keep each table's fastest write
    and its stage timings."""
    best: dict[str, tuple[float, Any]] = {}
    log = []
    for _ in range(max(1, runs)):
        for name in (TABLE, "bench.noindex"):
            _, seconds = _timed(lambda n=name: session.write(df, n, mode="overwrite"))
            log.append({"table": name, "seconds": seconds})
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, last_write_timings())
    return best[TABLE], best["bench.noindex"], log


# -- baseline: plain Spark over the same rows written with Parquet row-group bloom filters ------


def _write_parquet_bloom(df: Any, path: str, items: int) -> float:
    """Plain ``df.write.parquet`` with parquet-mr bloom filters on user_id (the best a user gets
    without lakeskip); returns the write time."""
    writer = (
        df.write.mode("overwrite")
        .option("parquet.bloom.filter.enabled#user_id", "true")
        .option("parquet.bloom.filter.expected.ndv#user_id", str(items))
        .option("parquet.bloom.filter.fpp#user_id", "0.01")
    )
    _, seconds = _timed(lambda: writer.parquet(path))
    return seconds


def _measure_parquet_bloom(spark: Any, path: str, runs: int) -> dict[str, tuple[float, int]]:
    """Median query time and row count of every query over the bloom-filtered Parquet files."""
    df = spark.read.parquet(path)
    out = {}
    for name, where in QUERIES:
        _count(df, where)  # warm
        times = []
        for _ in range(runs):
            n, t = _timed(lambda w=where: _count(df, w))
            times.append(t)
        out[name] = (statistics.median(times), n)
    return out


def _add_parquet_bloom(rows: list[dict[str, Any]], bloom: dict[str, tuple[float, int]]) -> None:
    for r in rows:
        seconds, n = bloom[r["query"]]
        assert n == r["rows"], f"WRONG ANSWER for {r['query']} on Parquet-bloom files: {n}"
        r["parquet_bloom_s"] = seconds
        r["speedup_vs_parquet_bloom"] = seconds / r["lakeskip_s"]


def _print_parquet_bloom(rows: list[dict[str, Any]]) -> None:
    print(f"{'query':<20} {'lakeskip':>9} {'plain':>8} {'parquet-bloom':>14} {'vs bloom':>9}")
    for r in rows:
        if "parquet_bloom_s" in r:
            print(
                f"{r['query']:<20} {r['lakeskip_s']:>8.2f}s {r['plain_s']:>7.2f}s "
                f"{r['parquet_bloom_s']:>13.2f}s {r['speedup_vs_parquet_bloom']:>8.2f}x"
            )


# -- delta-rs optimize.z_order on the same data, side by side ----------------------------------


def _delta_copy(table: Any, path: str, target: int) -> Any:
    """Write the lakeskip table's current rows into a new Delta table with delta-rs."""
    import shutil

    import pyarrow as pa
    import pyarrow.dataset as ds
    from deltalake import write_deltalake

    from lakeskip.spark.read.query import table_file_paths

    shutil.rmtree(path, ignore_errors=True)
    paths = [p.removeprefix("file://") for p in table_file_paths(table, table.scan_files())]
    data = ds.dataset(paths, format="parquet").to_table()
    i = data.schema.get_field_index("ts")  # delta-rs: timestamps with a zone (no NTZ feature)
    data = data.set_column(i, "ts", data["ts"].cast(pa.timestamp("us", tz="UTC")))
    write_deltalake(path, data, target_file_size=target)
    return data.num_rows


def _delta_kept(path: str, country: str, lo: int, hi: int) -> tuple[int, int]:
    """Files of the Delta table whose min/max stats admit ``country = c AND price BETWEEN``."""
    import pyarrow as pa
    from deltalake import DeltaTable

    actions = pa.table(DeltaTable(path).get_add_actions(flatten=True)).to_pylist()
    kept = 0
    for a in actions:
        c_min, c_max = a.get("min.country"), a.get("max.country")
        p_min, p_max = a.get("min.price"), a.get("max.price")
        if c_min is not None and c_max is not None and not c_min <= country <= c_max:
            continue
        if p_min is not None and p_max is not None and (p_max < lo or p_min > hi):
            continue
        kept += 1
    return kept, len(actions)


def _delta_zorder(path: str, columns: list[str], target: int) -> float:
    from deltalake import DeltaTable

    dt = DeltaTable(path)
    _, seconds = _timed(lambda: dt.optimize.z_order(columns, target_size=target))
    return seconds


def _print(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'phase':<8} {'query':<20} {'kept':>6} {'ideal':>6} {'minmax':>6} {'total':>6} "
        f"{'plan ms':>8} {'lakeskip':>9} {'plain':>8} {'speedup':>8} {'MB read ls/plain':>17}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        mb = (
            f"{r['bytes_read_lakeskip'] / 2**20:7.1f}/{r['bytes_read_plain'] / 2**20:7.1f}"
            if r["bytes_read_lakeskip"] is not None
            else "n/a"
        )
        print(
            f"{r['phase']:<8} {r['query']:<20} {r['files_kept']:>6} {r['files_ideal']:>6} "
            f"{r['files_minmax_only']:>6} {r['files_total']:>6} {r['planning_ms']:>8.1f} "
            f"{r['lakeskip_s']:>8.2f}s {r['plain_s']:>7.2f}s {r['speedup']:>7.2f}x {mb:>17}"
        )


def _chart(rows: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5))
    labels = [f"{r['phase']}: {r['query']}" for r in rows]
    y = range(len(rows))
    a1.barh(y, [r["files_kept"] / r["files_total"] for r in rows], label="lakeskip")
    a1.barh(y, [r["files_ideal"] / r["files_total"] for r in rows], alpha=0.5, label="ideal")
    a1.set_yticks(list(y), labels)
    a1.set_xlabel("share of files read")
    a1.legend()
    a2.barh(y, [r["speedup"] for r in rows])
    a2.axvline(1.0, color="k", lw=0.5)
    a2.set_yticks(list(y), [""] * len(rows))
    a2.set_xlabel("speedup vs plain spark.read.parquet (same files)")
    fig.tight_layout()
    fig.savefig(path)
    return True


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench")
    ap.add_argument(
        "--write-runs",
        type=int,
        default=2,
        help="timed writes per table, alternating with and without indexes (fastest kept)",
    )
    ap.add_argument(
        "--delta",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run delta-rs optimize.z_order side by side (needs deltalake: pip install .[bench])",
    )
    args = ap.parse_args()
    load_start = os.getloadavg()
    session = lakeskip.connect(
        args.warehouse,
        conf={"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": str(args.files)},
    )
    session.sql("CREATE DATABASE IF NOT EXISTS bench")
    for t in (TABLE, "bench.noindex"):
        session.sql(f"DROP TABLE IF EXISTS {t}")
    cols = "id BIGINT, user_id STRING, country STRING, status STRING, price BIGINT, ts TIMESTAMP, attrs MAP<STRING, STRING>"
    items = max(1000, args.rows // args.files)
    session.sql(
        f"""CREATE TABLE {TABLE} ({cols}) WITH (
        'file-index.bloom-filter.columns' = 'user_id',
        'file-index.bloom-filter.user_id.items' = '{items}',
        'file-index.bloom-filter.user_id.fpp' = '0.01',
        'file-index.bitmap.columns' = 'country,status,attrs[device]',
        'file-index.bsi.columns' = 'price',
        'target-file-size' = '1 gb')"""
    )
    session.sql(f"CREATE TABLE bench.noindex ({cols}) WITH ('target-file-size' = '1 gb')")
    df = generate_events(session, args.rows, args.files)
    session.write(df, "bench.noindex")  # warm-up: JIT, Python workers
    (t_index, timings_index), (t_noindex, timings_noindex), write_runs = _write_pair(
        session, df, args.write_runs
    )
    bloom_path = f"{args.warehouse.rstrip('/')}/parquet-bloom"
    t_bloom_write = _write_parquet_bloom(df, bloom_path, items)
    table = session.catalog.get_table(TABLE)
    entries = table.scan_files()
    data_bytes = sum(e.file.file_size for e in entries)
    index_bytes = sum(len(e.file.embedded_index or b"") for e in entries) + sum(
        table.file_io.file_size(f"{table.data_file_dir(e)}/{e.file.index_file_name}")
        for e in entries
        if e.file.index_file_name
    )
    print(
        f"{args.rows:,} rows, {len(entries)} files, {data_bytes / 2**20:.1f} MiB data, "
        f"{index_bytes / 2**20:.2f} MiB indexes ({index_bytes / data_bytes:.1%}); write "
        f"{t_index:.1f} s with indexes vs {t_noindex:.1f} s without ({t_index / t_noindex:.2f}x); "
        f"{os.cpu_count()} cores"
    )
    print(
        f"plain Spark df.write.parquet with Parquet bloom filters on user_id: {t_bloom_write:.1f} s"
    )
    for label, tm in (("with indexes", timings_index), ("without", timings_noindex)):
        print(f"write stages {label} (summed over tasks): {tm.summary() if tm else 'n/a'}")
    rows = _measure(session, "random", args.runs)
    _add_parquet_bloom(rows, _measure_parquet_bloom(session.spark, bloom_path, args.runs))
    n_bytes0 = sum(e.file.file_size for e in table.scan_files())
    delta_target = max(1, n_bytes0 // len(entries))
    delta_path = f"{args.warehouse.rstrip('/')}/delta-events"
    if args.delta:
        _delta_copy(table, delta_path, delta_target)
    catalog_rows = _catalog_vs_plain(session, args.runs)
    ceiling_rows = _lookup_ceiling(session, bloom_path, args.runs)
    n_bytes = sum(e.file.file_size for e in table.scan_files())
    session.sql(
        f"ALTER TABLE {TABLE} SET ('target-file-size' = '{max(1, n_bytes // len(entries))} b')"
    )
    _, t_compact = _timed(
        lambda: session.sql(
            f"CALL sys.compact(table => '{TABLE}', order_strategy => 'zorder', order_by => 'country,price')"
        ).collect()
    )
    print(f"z-order compaction on (country, price): {t_compact:.1f} s")
    rows += _measure(session, "zorder", args.runs)
    delta: dict[str, Any] | None = None
    if args.delta:
        delta = {"zorder_s": _delta_zorder(delta_path, ["country", "price"], delta_target)}
        delta["files_kept"], delta["files_total"] = _delta_kept(delta_path, "C30", 50000, 51000)
    _print(rows)
    print(
        "\nrandom order, lakeskip vs plain Spark over Parquet files with row-group bloom filters:"
    )
    _print_parquet_bloom(rows)
    cp = next(r for r in rows if r["phase"] == "zorder" and r["query"] == "country & 1% price")
    print(
        f"\nz-order on (country, price): lakeskip {t_compact:.1f} s, {cp['files_total']} files, "
        f"country & 1% price keeps {cp['files_minmax_only']} by min/max ({cp['files_kept']} with "
        f"indexes, ideal {cp['files_ideal']})"
    )
    if delta is not None:
        print(
            f"                            delta-rs {delta['zorder_s']:.1f} s, "
            f"{delta['files_total']} files, keeps {delta['files_kept']} by min/max; "
            f"lakeskip/delta-rs time {t_compact / delta['zorder_s']:.2f}x"
        )
    # bloom measured FPP: files kept beyond the ideal, over the files that hold no match, for
    # the pure user_id lookups (where only the bloom filter can skip)
    fp = [
        (r["files_kept"] - r["files_ideal"], r["files_total"] - r["files_ideal"])
        for r in rows
        if r["query"] in ("point user_id", "OR of 2 points", "IN 10 user_ids")
    ]
    fpp = sum(a for a, _ in fp) / max(1, sum(b for _, b in fp))
    print(f"bloom measured file-level FPP {fpp:.4f} (configured per-value fpp 0.01)")
    out_dir = Path(__file__).parent / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    summary = {
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
        "rows": args.rows,
        "files": len(entries),
        "cores": os.cpu_count(),
        "write_s_with_indexes": t_index,
        "write_s_without_indexes": t_noindex,
        "write_runs": write_runs,
        "data_bytes": data_bytes,
        "index_bytes": index_bytes,
        "compact_s": t_compact,
        "write_stages_with_indexes": timings_index.as_dict() if timings_index else None,
        "write_stages_without_indexes": timings_noindex.as_dict() if timings_noindex else None,
        "parquet_bloom_write_s": t_bloom_write,
        "delta_rs": delta,
        "bloom_measured_file_fpp": fpp,
        "queries": rows,
        "catalog_vs_plain": catalog_rows,
        "lookup_ceiling": ceiling_rows,
    }
    (out_dir / f"{stamp}.json").write_text(json.dumps(summary, indent=2, default=str))
    if _chart(rows, out_dir / f"{stamp}.png"):
        print(f"chart: bench/results/{stamp}.png")
    print(f"results: bench/results/{stamp}.json")


if __name__ == "__main__":
    main()
