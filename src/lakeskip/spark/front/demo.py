"""``lakeskip demo``: a sample table with every index type, and what pruning buys.

It generates an events table in Spark tasks (high-cardinality ``user_id``, skewed
``country``, low-cardinality ``status``, uniform ``price``, ``ts``, a map ``attrs``), creates
it with bloom / bitmap / bsi / range-bitmap indexes (and a map-key index), runs a handful of
selective queries through lakeskip and through plain ``spark.read.parquet`` over the same files, and prints files
kept vs total and both wall times. Then it z-orders the table on (country, price) with
``CALL sys.compact`` and runs the range queries again.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO

from pyspark.sql import functions as F

from lakeskip.index.options import parse_file_index_options
from lakeskip.spark.read.query import table_file_paths, view_over_files

if TYPE_CHECKING:
    from lakeskip.spark.front.session import Session

__all__ = ["generate_events", "run_demo"]

TABLE = "demo.events"
COUNTRIES = ["US", "DE", "FR", "GB", "IN", "BR", "JP", "CN", "CA", "AU"] + [
    f"C{i:02d}" for i in range(40)
]


def generate_events(session: Session, rows: int, files: int):  # type: ignore[no-untyped-def]
    """The demo's rows as a Spark DataFrame (generated in tasks, random order)."""
    users = max(1, rows // 6)
    n_c = len(COUNTRIES)
    countries = F.array(*[F.lit(c) for c in COUNTRIES])
    # skew: index = floor(n_c * u^3) puts most rows on the first few countries
    skewed = F.floor(F.pow(F.rand(7), F.lit(3.0)) * n_c).cast("int")
    return (
        session.spark.range(rows, numPartitions=files)
        .withColumn(
            "user_id", F.concat(F.lit("u"), (F.abs(F.xxhash64("id")) % users).cast("string"))
        )
        .withColumn("country", F.element_at(countries, skewed + 1))
        .withColumn(
            "status",
            F.element_at(
                F.array(*[F.lit(s) for s in ["NEW", "PAID", "SHIPPED", "DONE", "REFUND"]]),
                (F.floor(F.rand(3) * 5) + 1).cast("int"),
            ),
        )
        .withColumn("price", (F.rand(11) * 100_000).cast("bigint"))
        .withColumn(
            "ts",
            F.timestamp_seconds(F.lit(1_704_067_200) + (F.rand(5) * 365 * 86400).cast("bigint")),
        )
        .withColumn(
            "attrs",
            F.create_map(
                F.lit("device"),
                F.element_at(
                    F.array(F.lit("ios"), F.lit("android"), F.lit("web"), F.lit("tv")),
                    (F.floor(F.pow(F.rand(13), F.lit(4.0)) * 4) + 1).cast("int"),
                ),
                F.lit("campaign"),
                F.concat(F.lit("c"), (F.col("id") % 997).cast("string")),
            ),
        )
    )


QUERIES = [
    ("point lookup on user_id (bloom)", "user_id = 'u4242'"),
    ("IN-list of user_ids (bloom)", "user_id IN ('u1', 'u77', 'u31337')"),
    ("rare country (bitmap)", "country = 'C39'"),
    ("status = REFUND AND country = C38 (bitmap)", "status = 'REFUND' AND country = 'C38'"),
    ("price range 0.1% (bsi)", "price BETWEEN 50000 AND 50100"),
    ("country = US AND 1% price (bitmap+bsi)", "country = 'US' AND price BETWEEN 1000 AND 2000"),
    ("map key attrs['device'] = 'tv' (bitmap)", "attrs['device'] = 'tv'"),
    (
        "one minute of ts (range-bitmap)",
        "ts BETWEEN TIMESTAMP '2024-03-01 12:00:00' AND TIMESTAMP '2024-03-01 12:01:00'",
    ),
]


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t


def _run_queries(session: Session, out: TextIO, title: str) -> None:
    table = session.catalog.get_table(TABLE)
    paths = table_file_paths(table, table.scan_files())
    plain = view_over_files(session.spark, table.schema.row_type, paths)
    out.write(f"\n{title}\n")
    out.write(
        "  lakeskip: the query through lakeskip (files skipped by stats and indexes)\n"
        "  plain:    the same filter over every file with spark.read.parquet (no skipping)\n"
    )
    header = (
        f"{'query':<44} {'rows':>7} {'files kept':>11} {'lakeskip':>9} {'plain':>8} {'speedup':>8}"
    )
    out.write(header + "\n" + "-" * len(header) + "\n")
    for name, where in QUERIES:
        sql = f"SELECT count(*) FROM {TABLE} WHERE {where}"
        # one warm-up of each path, then measure
        session.sql(sql).collect()
        plain.where(where).count()
        n, t_ls = _timed(partial(lambda s: session.sql(s).collect()[0][0], sql))
        report = session.last_reports[0]
        n_plain, t_plain = _timed(partial(plain.where(where).count))
        if n != n_plain:  # never a wrong answer: say so loudly if it ever happens
            out.write(f"MISMATCH for {name}: lakeskip {n} rows, plain {n_plain} rows\n")
        kept = f"{report.kept_files}/{report.total_files}"
        out.write(
            f"{name:<44} {n:>7} {kept:>11} {t_ls:>8.2f}s {t_plain:>7.2f}s {t_plain / t_ls:>7.1f}x\n"
        )


def run_demo(session: Session, rows: int, files: int, out: TextIO) -> int:
    """Build the demo table in ``session``'s warehouse and print the comparison."""
    out.write(
        f"lakeskip demo: {rows:,} rows in ~{files} files, warehouse {session.catalog.warehouse}\n"
    )
    session.sql("CREATE DATABASE IF NOT EXISTS demo")
    session.sql(f"DROP TABLE IF EXISTS {TABLE}")
    items = max(1000, rows // files)
    session.sql(
        f"""CREATE TABLE {TABLE} (
            id BIGINT, user_id STRING, country STRING, status STRING, price BIGINT,
            ts TIMESTAMP, attrs MAP<STRING, STRING>)
        WITH (
            'file-index.bloom-filter.columns' = 'user_id',
            'file-index.bloom-filter.user_id.items' = '{items}',
            'file-index.bloom-filter.user_id.fpp' = '0.01',
            'file-index.bitmap.columns' = 'country,status,attrs[device]',
            'file-index.bsi.columns' = 'price',
            'file-index.range-bitmap.columns' = 'ts',
            'target-file-size' = '1 gb'
        )"""
    )
    df = generate_events(session, rows, files)
    _, t_write = _timed(lambda: session.write(df, TABLE))
    table = session.catalog.get_table(TABLE)
    entries = table.scan_files()
    n_bytes = sum(e.file.file_size for e in entries)
    out.write(f"wrote {len(entries)} files ({n_bytes / 2**20:.1f} MiB) in {t_write:.1f} s\n")
    specs = parse_file_index_options(table.schema.options, table.schema.row_type).specs
    built = ", ".join(f"{spec.index_type}({spec.name})" for spec in specs)
    out.write(f"file indexes in every file: {built}; min/max stats on every column\n")
    _run_queries(session, out, "Random order (as written):")
    # compaction writes files of target-file-size: keep about as many files as before
    session.sql(
        f"ALTER TABLE {TABLE} SET ('target-file-size' = '{max(1, n_bytes // len(entries))} b')"
    )
    out.write(
        "\nCALL sys.compact(table => 'demo.events', order_strategy => 'zorder', "
        "order_by => 'country,price') ...\n"
    )
    _, t_compact = _timed(
        lambda: session.sql(
            "CALL sys.compact(table => 'demo.events', order_strategy => 'zorder', "
            "order_by => 'country,price')"
        ).collect()
    )
    out.write(f"compacted in {t_compact:.1f} s\n")
    _run_queries(session, out, "After z-order on (country, price):")
    command = _lakeskip_command()
    out.write(
        f"\nTry it yourself: {command} sql --warehouse {session.catalog.warehouse}\n"
        f'  e.g. {command} sql --warehouse {session.catalog.warehouse} -e "EXPLAIN PRUNING '
        f"SELECT * FROM {TABLE} WHERE user_id = 'u4242'\"\n"
    )
    return 0


def _lakeskip_command() -> str:
    """How to start the shell from the current directory (``.venv/bin/lakeskip`` after
    ``make demo``; plain ``lakeskip`` when that is what the PATH finds)."""
    script = os.path.join(os.path.dirname(sys.executable), "lakeskip")
    on_path = shutil.which("lakeskip")
    if on_path and os.path.realpath(on_path) == os.path.realpath(script):
        return "lakeskip"
    if os.path.exists(script):
        rel = os.path.relpath(script)
        return rel if not rel.startswith("..") else script
    return "lakeskip"


INDEXES = (
    "bloom-filter(user_id), bitmap(country, status, attrs[device]), bsi(price), range-bitmap(ts)"
)
