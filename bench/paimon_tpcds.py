"""TPC-DS star queries, lakeskip against Paimon's Spark connector (issue 40; run from
``paimon_connector.py --tpcds-sf SF``).

Data: ``tpcds.py``'s generator and cache (``--tpcds-cache``, default ``$LAKESKIP_TPCDS_CACHE``
or ``.tpcds-cache/``). Two databases in the bench's warehouse (``--warehouse`` keeps them for
the next run), loaded once:

* ``lakeskip``: lakeskip's tables as ``tpcds.py`` loads them (``_load_lakeskip``: written by
  ``session.write``, fact tables clustered by their date key with ``sys.compact``
  ``order_strategy => 'order'``); lakeskip's runtime filters prune them by file (stats and
  indexes of the join keys);
* ``paimon`` (database ``tpcds_paimon``): Paimon tables written by Paimon's connector, fact tables ``PARTITIONED BY`` their
  date key (rows repartitioned by it first: one file per date, as plain Spark's partitioned
  side of ``tpcds.py``), dimensions unpartitioned: Paimon's runtime filtering
  (``SupportsRuntimeFiltering``) is on partition keys.

Each query runs on both, first run apart, then ``runs`` interleaved runs (medians); answers
must be equal (``tpcds.canonical``); fact files kept per table from each scan's metrics
(``tpcds.scan_figures``: lakeskip's ``lakeskip files kept``, Paimon's ``number of resulted
table files``).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import sqlglot
import tpcds  # type: ignore[import-not-found]
from sqlglot import exp

STAR_QUERIES = (3, 7, 42, 52, 55, 98)
#: Paimon's database in the same warehouse as lakeskip's ``tpcds`` (Paimon's catalog would
#: read lakeskip's tables in ``tpcds`` as its own)
PAIMON_DB = "tpcds_paimon"


def _load_paimon(spark: Any, data: Path, tables: list[str]) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS paimon.{PAIMON_DB}")
    shown = spark.sql(f"SHOW TABLES IN paimon.{PAIMON_DB}").collect()
    existing = {r[1] if len(r) > 1 else r[0] for r in shown}
    for t in tables:
        if t in existing:
            continue
        df = spark.read.parquet(str(data / f"{t}.parquet"))
        cols = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in df.schema.fields)
        key = tpcds.FACTS.get(t)
        t0 = time.perf_counter()
        part = f" PARTITIONED BY ({key})" if key else ""
        name = f"paimon.{PAIMON_DB}.{t}"
        spark.sql(f"CREATE TABLE {name} ({cols}){part}")
        (df.repartition(key) if key else df).writeTo(name).append()
        print(f"{name}: {time.perf_counter() - t0:.1f} s (load {os.getloadavg()[0]:.1f})")


def load(s: Any, warehouse: Path, sf: float, cache: Path, queries: list[int]) -> dict[int, str]:
    """The tables ``queries`` read, on both sides (once per warehouse); the queries' Spark SQL
    texts."""
    data = tpcds.generate(sf, cache)
    texts = json.loads((data / "queries.json").read_text())
    sqls = {n: tpcds.transpile(texts[str(n)]) for n in queries}
    read: set[str] = set()
    for sql in sqls.values():
        read |= {t.name for t in sqlglot.parse_one(sql, read="spark").find_all(exp.Table)}
    tables = [t for t in tpcds.TABLES if t in read]
    file_size = f"{max(256, int(4096 * sf))}kb"
    tpcds._load_lakeskip(s, data, file_size, tables, warehouse)
    _load_paimon(s.spark, data, tables)
    return sqls


def compare(s: Any, sqls: dict[int, str], runs: int) -> list[dict[str, Any]]:
    spark = s.spark
    names = {
        "lakeskip": {t: f"lakeskip.tpcds.{t}" for t in tpcds.TABLES},
        "paimon": {t: f"paimon.{PAIMON_DB}.{t}" for t in tpcds.TABLES},
    }
    out = []
    for n, sql in sqls.items():
        res: dict[str, Any] = {"query": n}
        texts = {e: tpcds.with_tables(sql, names[e]) for e in names}
        answers = {}
        times: dict[str, list[float]] = {e: [] for e in names}
        order = list(names) if n % 2 else list(names)[::-1]
        for engine in order:
            seconds, rows = tpcds.run(spark, texts[engine])
            answers[engine] = tpcds.canonical(rows)
            files = tpcds.scan_figures(spark)
            res[engine] = {"first_s": seconds, "rows": len(rows), "files": files}
        for i in range(runs):
            for engine in order if i % 2 else order[::-1]:
                times[engine].append(tpcds.run(spark, texts[engine])[0])
        for engine in names:
            res[engine]["median_s"] = statistics.median(times[engine] or [res[engine]["first_s"]])
        res["equal"] = answers["lakeskip"] == answers["paimon"]
        out.append(res)
        line = " ".join(
            f"{e} {res[e]['median_s']:.2f} s, fact files "
            + ",".join(f"{t} {f['kept']}/{f['total'] or '?'}" for t, f in res[e]["files"].items())
            for e in names
        )
        print(f"q{n}: {line}; equal {res['equal']} (load {os.getloadavg()[0]:.1f})", flush=True)
    return out
