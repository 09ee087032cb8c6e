"""lakeskip against Apache Paimon's own Spark connector, side by side in one Spark session (issue 40).

    LAKESKIP_PAIMON_SPARK_JARS=/path/paimon-spark-4.1.jar:/path/paimon-core.jar \\
        .venv/bin/python bench/paimon_connector.py --rows 1000000 --files 16

Paimon's connector is not fetched here: Central serves no Paimon Spark connector for Spark 4
(see bench/README.md, "lakeskip vs Paimon's Spark connector"), so the jars are named by ``LAKESKIP_PAIMON_SPARK_JARS`` (``os.pathsep``-separated): the connector and, if it is
a thin jar, Paimon's core bundle.

One session holds both catalogs on one warehouse: ``lakeskip`` (lakeskip's catalog) and
``paimon`` (``org.apache.paimon.spark.SparkCatalog``). Both write a table of the same rows with
the same DDL (bloom filter on ``k``, bitmap on ``status``, range-bitmap on ``price``, embedded
in the manifests so both engines prune at planning), timed interleaved. Then each query runs on
both tables through both catalogs, interleaved, ``--repeat`` times each (medians), and the
answers must be equal: a bloom point lookup, a bitmap equality, a range-bitmap range, a scan
that skips nothing, and ``count/min/max``. Files kept: lakeskip's pruning report, Paimon's scan
metric ``resultedTableFiles``. Last, each engine z-order compacts its own table on ``(a, b)``
(once: it rewrites the table) and the files after and files kept for 1% ranges are compared:
Paimon's through ``CALL paimon.sys.compact`` with ``--paimon-extensions``, else (its extensions
do not load on Spark 4.3) through its ``CompactProcedure`` called directly (py4j), which fails on
Spark 4.3; ``--paimon-spark41-python PY`` (a bench-only venv with pyspark 4.1) runs Paimon's
``CALL paimon.sys.compact`` in a child process on Spark 4.1 (``paimon_zorder41.py``) on the
same table and warehouse, and this session counts the files after and kept for both tables and
checks that lakeskip reads Paimon's z-ordered table with Paimon's answers (the child's time is
not comparable); ``--zorder-only`` writes one table per engine and runs only this step.
``--planning-files N``: planning at N files (``paimon_planning.py``); ``--tpcds-sf SF``: the
TPC-DS star queries on lakeskip's date-clustered tables and Paimon's date-partitioned ones
(``paimon_tpcds.py``); ``--skip-basic`` runs only those. The first write of each engine prints
where its time went (Spark stages, lakeskip's Python stages: ``tpcds._step``).
``--keep`` keeps the warehouse; ``--warehouse DIR`` uses (and keeps) DIR, its TPC-DS tables
loaded once. Prints the load average
(a shared machine: read the ratios) and writes ``bench/results/paimon-<timestamp>.json``.
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import paimon_planning  # type: ignore[import-not-found]
import paimon_tpcds  # type: ignore[import-not-found]
import tpcds  # type: ignore[import-not-found]
from plan_metrics import df_metric  # type: ignore[import-not-found]

import lakeskip
from lakeskip.spark.front.builder import build_spark_session
from lakeskip.spark.front.catalog_setup import catalog_conf
from lakeskip.spark.jvm.build import build_jar

PAIMON_CATALOG = "org.apache.paimon.spark.SparkCatalog"
PAIMON_EXTENSIONS = "org.apache.paimon.spark.extensions.PaimonSparkSessionExtensions"
ENGINES = ("lakeskip", "paimon")
COLUMNS = "id BIGINT, k BIGINT, status INT, price INT, a BIGINT, b INT, v DOUBLE"


def _jars() -> list[str]:
    named = os.environ.get("LAKESKIP_PAIMON_SPARK_JARS", "")
    jars = [j for j in named.split(os.pathsep) if j]
    if not jars or not all(Path(j).is_file() for j in jars):
        sys.exit(
            "set LAKESKIP_PAIMON_SPARK_JARS to Paimon's Spark connector jar(s) for this pyspark "
            f"(got {named!r}); see bench/README.md for why Central has none"
        )
    return jars


def _session(wh: Path, jars: list[str], files: int, extensions: bool) -> Any:
    conf = catalog_conf(str(wh), "lakeskip", jar=build_jar())
    conf["spark.jars"] = ",".join([conf["spark.jars"], *jars])
    if extensions:  # Paimon's parser outermost: it parses CALL paimon.sys.*, hands on the rest
        conf["spark.sql.extensions"] = f"{conf['spark.sql.extensions']},{PAIMON_EXTENSIONS}"
    else:  # Paimon 2.0.0's extensions do not load on Spark 4.3 (bench/README.md)
        conf["spark.paimon.requiredSparkConfsCheck.enabled"] = "false"
    conf["spark.sql.catalog.paimon"] = PAIMON_CATALOG
    conf["spark.sql.catalog.paimon.warehouse"] = wh.as_uri()
    conf |= {
        "spark.sql.shuffle.partitions": str(files),
        "spark.driver.memory": "3g",
        "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
    }
    spark = build_spark_session(master="local[2]", conf=conf, app_name="bench-paimon")
    return lakeskip.connect(str(wh), spark=spark)


def _options(rows: int, files: int) -> str:
    options = {
        "file-index.bloom-filter.columns": "k",
        "file-index.bloom-filter.k.items": str(rows // files),
        "file-index.bitmap.columns": "status",
        "file-index.range-bitmap.columns": "price",
        # embedded: Paimon evaluates embedded indexes while planning (AppendOnlyFileStoreScan),
        # larger ones only when a task opens the file; lakeskip plans with both
        "file-index.in-manifest-threshold": "1 mb",
    }
    return ", ".join(f"'{k}' = '{v}'" for k, v in options.items())


def _select(rows: int, files: int) -> str:
    f = f"CAST(floor(id * {files} / {rows}) AS INT)"
    return (
        f"SELECT id, xxhash64(id) AS k, CAST(pmod({f}, 8) + 8 * (id % 2) AS INT) AS status, "
        f"CAST(pmod({f}, 8) * 1000 + (id % 2) * 50000 + id % 997 AS INT) AS price, "
        "pmod(xxhash64(id, 1), 1000000) AS a, CAST(pmod(xxhash64(id, 2), 2500) AS INT) AS b, "
        f"CAST(id AS DOUBLE) / 7 AS v FROM range(0, {rows}, 1, {files})"
    )


def _kept(s: Any, engine: str, sql: str) -> int | None:
    if engine == "lakeskip":
        s.sql(sql).collect()
        reports = s.last_reports
        return sum(r.kept_files for r in reports) if reports else None
    df = s.spark.sql(sql)
    df.collect()
    return df_metric(df, "resultedTableFiles")


def _timed(spark: Any, sql: str) -> tuple[float, list[tuple[Any, ...]]]:
    t = time.perf_counter()
    rows = [tuple(r) for r in spark.sql(sql).collect()]
    return time.perf_counter() - t, sorted(rows, key=repr)


def _write(s: Any, rows: int, files: int, repeat: int) -> dict[str, Any]:
    """Each engine's first write of the session (``first_s``: lakeskip's starts its Python
    workers, Paimon's loads its writer's classes; the tables ``w_<engine>_first``), then
    ``repeat`` interleaved writes, medians (the queries read ``w_<engine>_0``)."""
    spark = s.spark
    times: dict[str, list[float]] = {e: [] for e in ENGINES}
    first: dict[str, float] = {}
    profiles: dict[str, str] = {}
    for i in range(-1, repeat):
        for engine in ENGINES if i % 2 == 0 else ENGINES[::-1]:
            name = f"{engine}.b.w_{engine}_{i if i >= 0 else 'first'}"
            spark.sql(f"CREATE TABLE {name} ({COLUMNS}) TBLPROPERTIES ({_options(rows, files)})")
            insert = f"INSERT INTO {name} {_select(rows, files)}"
            t = time.perf_counter()
            if i == 0:  # where the time goes (Spark stages, lakeskip's Python stages)
                profiles[engine] = tpcds._step(spark, "write", lambda q=insert: spark.sql(q))
            else:
                spark.sql(insert)
            if i < 0:
                first[engine] = time.perf_counter() - t
            else:
                times[engine].append(time.perf_counter() - t)
    out: dict[str, Any] = {}
    for engine in ENGINES:
        table = s.table(f"b.w_{engine}_0")
        out[engine] = {
            "first_s": first[engine],
            "seconds": times[engine],
            "median_s": statistics.median(times[engine]),
            "files": len(table.files()),
            "profile": profiles.get(engine, ""),
        }
    return out


def _write_once(s: Any, rows: int, files: int) -> None:
    """``w_lakeskip_0`` and ``w_paimon_0`` once each, untimed (``--zorder-only``)."""
    for engine in ENGINES:
        name = f"{engine}.b.w_{engine}_0"
        s.spark.sql(f"CREATE TABLE {name} ({COLUMNS}) TBLPROPERTIES ({_options(rows, files)})")
        s.spark.sql(f"INSERT INTO {name} {_select(rows, files)}")


def _queries(spark: Any, rows: int) -> dict[str, str]:
    probe = rows // 3 + 17
    k = spark.sql(f"SELECT xxhash64(CAST({probe} AS BIGINT))").first()[0]
    return {
        "bloom point lookup": f"SELECT id, status FROM {{t}} WHERE k = {k}",
        "bitmap equality": "SELECT count(*), sum(price) FROM {t} WHERE status = 3",
        "range-bitmap range": "SELECT count(*), sum(a) FROM {t} WHERE price BETWEEN 3100 AND 3200",
        "nothing to skip": "SELECT count(*), sum(price) FROM {t} WHERE a >= 0",
        "count/min/max": "SELECT count(*), min(id), max(id) FROM {t}",
    }


def _compare(s: Any, table: str, sql: str, repeat: int) -> dict[str, Any]:
    spark = s.spark
    times: dict[str, list[float]] = {e: [] for e in ENGINES}
    answers: dict[str, list[tuple[Any, ...]]] = {}
    for i in range(repeat):
        for engine in ENGINES if i % 2 == 0 else ENGINES[::-1]:
            seconds, answers[engine] = _timed(spark, sql.format(t=f"{engine}.b.{table}"))
            times[engine].append(seconds)
    if answers["lakeskip"] != answers["paimon"]:
        raise SystemExit(f"{table}: {sql}: the engines disagree: {answers}")
    row: dict[str, Any] = {"table": table, "sql": sql, "answer": answers["lakeskip"]}
    for engine in ENGINES:
        row[f"{engine}_median_s"] = statistics.median(times[engine])
        row[f"{engine}_s"] = times[engine]
        row[f"{engine}_kept"] = _kept(s, engine, sql.format(t=f"{engine}.b.{table}"))
    return row


def _paimon_compact(spark: Any, table: str, order_strategy: str, order_by: str) -> None:
    """Paimon's own ``sys.compact`` without its session extensions (which do not load on Spark
    4.3, so no ``CALL paimon.sys.*``): the connector's ``CompactProcedure``, built on the
    ``paimon`` catalog as its procedure catalog builds it, called through py4j with the
    arguments ``CALL`` would pass (table, partitions, compact_strategy, order_strategy,
    order_by, where, options, partition_idle_time)."""
    jvm = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalogManager().catalog("paimon")
    procedure = (
        jvm.org.apache.paimon.spark.procedure.CompactProcedure.builder()
        .withTableCatalog(catalog)
        .build()
    )
    utf8 = jvm.org.apache.spark.unsafe.types.UTF8String.fromString
    values = [table, None, None, order_strategy, order_by, None, None, None]
    args = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, len(values))
    for i, v in enumerate(values):
        args[i] = None if v is None else utf8(v)
    (result,) = procedure.call(
        jvm.org.apache.spark.sql.catalyst.expressions.GenericInternalRow(args)
    )
    if not result.getBoolean(0):
        raise SystemExit(f"Paimon's compact procedure on {table} returned false")


ZORDER_RANGES = [("a", lo, lo + 9_999) for lo in (0, 123_456, 500_000, 777_777, 990_000)] + [
    ("b", lo, lo + 24) for lo in (0, 600, 1_250, 2_000, 2_475)
]


def _paimon_compact_spark41(
    python: str, wh: Path, jars: list[str], files: int, target_bytes: int
) -> dict[str, Any]:
    """Paimon's ``CALL paimon.sys.compact(... 'zorder' ...)`` in a child process: its own Spark
    4.1 session (``python`` is a bench-only venv with pyspark 4.1, ``paimon_zorder41.py``),
    the same jars, warehouse, shuffle partitions and target file size; its answers and files
    kept come back as JSON. The parent's Spark variables stay out of the child's environment
    (it starts its own Spark from its own pyspark)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PYSPARK_") and k not in ("SPARK_HOME", "SPARK_CONF_DIR", "PYTHONPATH")
    }
    command = [
        python, str(Path(__file__).parent / "paimon_zorder41.py"),
        "--warehouse", str(wh), "--table", "b.w_paimon_0", "--jars", os.pathsep.join(jars),
        "--shuffle-partitions", str(files), "--target-file-size", str(target_bytes),
        "--order-by", "a,b", "--ranges", json.dumps(ZORDER_RANGES),
    ]  # fmt: skip
    t = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    process_s = time.perf_counter() - t
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-20:]
        raise SystemExit(
            f"Paimon's z-order on Spark 4.1 failed (exit {done.returncode}):\n" + "\n".join(tail)
        )
    child: dict[str, Any] = json.loads(lines[-1].removeprefix("RESULT "))
    child["process_s"] = process_s
    return child


def _equal_answers(ours: tuple[Any, ...], theirs: list[Any]) -> bool:
    """``count(*), sum(id), sum(v)``: the integers exactly, the double sum to 1e-9 (the engines
    add in different orders)."""
    count, ids, v = ours
    return (count, ids) == (theirs[0], theirs[1]) and (
        v == theirs[2] or (v is not None and theirs[2] is not None and math.isclose(v, theirs[2]))
    )


def _check_spark41_answers(s: Any, child: dict[str, Any]) -> dict[str, Any]:
    """lakeskip (this pyspark) and Paimon's catalog in this session read Paimon's z-ordered
    table: their ``count(*), sum(id), sum(v)`` on the whole table and on each range must equal
    what Paimon's connector answered on Spark 4.1 (the child); lakeskip's files kept too."""
    spark = s.spark
    checks = [(None, child["total"], None)] + [
        ((r["range"][0], r["range"][1], r["range"][2]), r["answer"], r["kept"])
        for r in child["ranges"]
    ]
    lakeskip_kept: list[int | None] = []
    for where, theirs, _ in checks:
        sql = "SELECT count(*), sum(id), sum(v) FROM {t}"
        if where:
            sql += f" WHERE {where[0]} BETWEEN {where[1]} AND {where[2]}"
        for engine in ENGINES:
            (ours,) = _timed(spark, sql.format(t=f"{engine}.b.w_paimon_0"))[1]
            if not _equal_answers(ours, theirs):
                raise SystemExit(
                    f"Paimon's z-ordered table: {sql}: {engine} on Spark {spark.version} "
                    f"answers {ours}, Paimon's connector on Spark 4.1 {theirs}"
                )
        if where:
            lakeskip_kept.append(_kept(s, "lakeskip", sql.format(t="lakeskip.b.w_paimon_0")))
    return {
        "answers_equal": len(checks),
        "rows": child["total"][0],
        "lakeskip_kept_per_1pct_range": lakeskip_kept,
        "kept_per_1pct_range_spark41": [r["kept"] for r in child["ranges"]],
    }


def _zorder(
    s: Any,
    files: int,
    repeat: int,
    extensions: bool,
    spark41: tuple[str, Path, list[str], bool] | None = None,
) -> dict[str, Any]:
    """Each engine z-order compacts its own table on ``(a, b)``; files after and files kept per
    1 % range. ``spark41`` (python, warehouse, jars, own target): Paimon's compaction runs on
    Spark 4.1 in a child process (``_paimon_compact_spark41``), its time not comparable; with
    lakeskip's target file size unless ``own target`` (the table's own, Paimon's default)."""
    spark = s.spark
    out: dict[str, Any] = {}
    data_bytes = sum(os.path.getsize(f) for f in s.table("b.w_lakeskip_0").files())
    target_bytes = max(1, data_bytes // files)
    spark.sql(
        f"ALTER TABLE lakeskip.b.w_lakeskip_0 SET TBLPROPERTIES "
        f"('target-file-size' = '{target_bytes} b')"
    )
    # Paimon writes one file per range partition of spark.sql.shuffle.partitions (= files);
    # lakeskip's compaction runs through its Python API (Spark tasks all the same): Paimon's
    # parser, outermost, claims every CALL ... sys.compact for Paimon's procedures
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    t = time.perf_counter()
    s.table("b.w_lakeskip_0").compact(order_strategy="zorder", order_by="a,b")
    out["lakeskip"] = {"compact_s": time.perf_counter() - t}
    t = time.perf_counter()
    child: dict[str, Any] | None = None
    if spark41:
        python, wh, jars, own_target = spark41
        target = 0 if own_target else target_bytes
        child = _paimon_compact_spark41(python, wh, jars, files, target)
        spark.sql("REFRESH TABLE paimon.b.w_paimon_0")  # Paimon's catalog caches the table
        out["paimon"] = {
            "compact_s": child["compact_s"],
            "via": f"{child['call']} on Spark {child['spark']}, own process",
            "time_note": "Spark 4.1, own process: time not comparable",
            "target_file_size": target or "the table's own",
            "spark41": child,
        }
    elif extensions:
        spark.sql(
            "CALL paimon.sys.compact(table => 'b.w_paimon_0', order_strategy => 'zorder', "
            "order_by => 'a,b')"
        ).collect()
        out["paimon"] = {"compact_s": time.perf_counter() - t, "via": "CALL paimon.sys.compact"}
    else:
        try:
            _paimon_compact(spark, "b.w_paimon_0", "zorder", "a,b")
            out["paimon"] = {"compact_s": time.perf_counter() - t, "via": "CompactProcedure.call"}
        except Exception as e:  # Paimon's connector built for Spark 4.1 on this Spark
            reason = str(e).strip().splitlines()
            out["blocked"] = {"paimon": next((x for x in reason if "Error" in x), reason[0])}
    spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
    for engine in (e for e in ENGINES if e in out):
        table = f"w_{engine}_0"
        after = s.table(f"b.{table}").files()
        out[engine]["files_after"] = len(after)
        out[engine]["file_bytes_after"] = sorted(os.path.getsize(f) for f in after)
        kept, times = [], []
        for column, lo, hi in ZORDER_RANGES:
            sql = f"SELECT count(*), sum(v) FROM {{t}} WHERE {column} BETWEEN {lo} AND {hi}"
            kept.append(_kept(s, engine, sql.format(t=f"{engine}.b.{table}")))
            times.append(
                statistics.median(
                    _timed(spark, sql.format(t=f"{engine}.b.{table}"))[0] for _ in range(repeat)
                )
            )
        out[engine]["kept_per_1pct_range"] = kept
        out[engine]["mean_kept"] = statistics.mean(k or 0 for k in kept)
        out[engine]["mean_kept_fraction"] = out[engine]["mean_kept"] / out[engine]["files_after"]
        out[engine]["median_range_query_s"] = statistics.median(times)
    if child is not None:
        if out["paimon"]["files_after"] != child["files_after"]:
            raise SystemExit(
                f"Paimon's z-ordered table: {out['paimon']['files_after']} files here, "
                f"{child['files_after']} in Paimon's $files on Spark 4.1"
            )
        out["paimon"]["read_here"] = _check_spark41_answers(s, child)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--write-repeat", type=int, default=3,
        help="timed writes per engine, after each engine's first (reported apart)",
    )  # fmt: skip
    ap.add_argument("--keep", action="store_true", help="keep the warehouse")
    ap.add_argument(
        "--warehouse", default=None,
        help="this warehouse (kept; its TPC-DS tables are reused), not a temporary one",
    )  # fmt: skip
    ap.add_argument(
        "--skip-basic", action="store_true",
        help="no write / query / z-order comparison (only --planning-files, --tpcds-sf)",
    )  # fmt: skip
    ap.add_argument(
        "--planning-files", type=int, default=0,
        help="planning at this many files (bench/paimon_planning.py); 0: not run",
    )  # fmt: skip
    ap.add_argument("--planning-partitions", type=int, default=100)
    ap.add_argument(
        "--tpcds-sf", type=float, default=0.0,
        help="TPC-DS star queries at this scale factor (bench/paimon_tpcds.py); 0: not run",
    )  # fmt: skip
    ap.add_argument("--tpcds-queries", default=",".join(map(str, paimon_tpcds.STAR_QUERIES)))
    ap.add_argument("--tpcds-runs", type=int, default=3)
    ap.add_argument(
        "--tpcds-cache",
        default=os.environ.get("LAKESKIP_TPCDS_CACHE", str(tpcds.ROOT / ".tpcds-cache")),
    )
    ap.add_argument(
        "--paimon-extensions",
        action="store_true",
        help="load PaimonSparkSessionExtensions (CALL paimon.sys.compact: the z-order step)",
    )
    ap.add_argument(
        "--paimon-spark41-python",
        default=os.environ.get("LAKESKIP_PAIMON_SPARK41_PYTHON"),
        help="a bench-only venv's python with pyspark 4.1: Paimon's z-order compaction runs "
        "there, in its own process (paimon_zorder41.py; env LAKESKIP_PAIMON_SPARK41_PYTHON)",
    )
    ap.add_argument(
        "--paimon-spark41-own-target", action="store_true",
        help="with --paimon-spark41-python: Paimon's table keeps its own target-file-size (256 MB "
        "for append tables: a file per range partition), not lakeskip's data size / --files",
    )  # fmt: skip
    ap.add_argument(
        "--zorder-only", action="store_true",
        help="write one table per engine and run only the z-order comparison",
    )  # fmt: skip
    args = ap.parse_args()
    jars = _jars()
    load_start = os.getloadavg()
    if args.warehouse:
        wh = Path(args.warehouse).resolve()
        shutil.rmtree(wh / "b.db", ignore_errors=True)  # this run's tables; TPC-DS's stay
        wh.mkdir(parents=True, exist_ok=True)
    else:
        wh = Path(tempfile.mkdtemp(prefix="lakeskip-paimon-"))
    s = _session(wh, jars, args.files, args.paimon_extensions)
    spark = s.spark
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.b")
    writes: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    zorder: dict[str, Any] = {}
    spark41 = None
    if args.paimon_spark41_python:
        spark41 = (args.paimon_spark41_python, wh, jars, args.paimon_spark41_own_target)
    if args.zorder_only:
        _write_once(s, args.rows, args.files)
        zorder = _zorder(s, args.files, args.repeat, args.paimon_extensions, spark41)
    elif not args.skip_basic:
        writes = _write(s, args.rows, args.files, args.write_repeat)
        for name, sql in _queries(spark, args.rows).items():
            for table in ("w_lakeskip_0", "w_paimon_0"):
                row = _compare(s, table, sql, args.repeat)
                row["query"] = name
                results.append(row)
        zorder = _zorder(s, args.files, args.repeat, args.paimon_extensions, spark41)
    planning: dict[str, Any] = {}
    if args.planning_files:
        planning["table"] = paimon_planning.make_table(
            s, args.planning_files, args.planning_partitions
        )
        print(f"planning table: {planning['table']}", flush=True)
        planning["queries"] = paimon_planning.compare(s, args.repeat, planning["table"])
    star: list[dict[str, Any]] = []
    if args.tpcds_sf:
        queries = [int(q) for q in args.tpcds_queries.split(",") if q]
        sqls = paimon_tpcds.load(s, wh, args.tpcds_sf, Path(args.tpcds_cache), queries)
        star = paimon_tpcds.compare(s, sqls, args.tpcds_runs)
    load_end = os.getloadavg()
    version = spark.version
    spark.stop()
    print(f"Spark {version}; {args.rows} rows in {args.files} tasks; warehouse {wh}")
    for engine, w in writes.items():
        print(
            f"write with indexes, {engine}: first {w['first_s']:.2f} s, then median "
            f"{w['median_s']:.2f} s of {len(w['seconds'])}, {w['files']} files"
        )
        print(f"  profiled write: {w['profile']}")
    print(f"{'query':<20} {'table by':<9} {'lakeskip s':>10} {'paimon s':>9} {'kept l/p':>9}")
    for r in results:
        by = r["table"].split("_")[1]
        print(
            f"{r['query']:<20} {by:<9} {r['lakeskip_median_s']:>10.3f} "
            f"{r['paimon_median_s']:>9.3f} {r['lakeskip_kept']!s:>4}/{r['paimon_kept']!s:<4}"
        )
    for engine, reason in zorder.get("blocked", {}).items():
        print(f"z-order {engine}: not run: {reason}")
    for engine, z in zorder.items():
        if engine == "blocked":
            continue
        note = (
            f" ({z['time_note']}; target file size {z['target_file_size']})"
            if "time_note" in z
            else ""
        )
        print(
            f"z-order {engine}: {z['compact_s']:.1f} s{note}, {z['files_after']} files after, "
            f"{z['mean_kept']:.1f} kept per 1% range ({z['mean_kept_fraction']:.0%} of them; "
            f"{z['median_range_query_s']:.3f} s), kept {z['kept_per_1pct_range']}"
        )
        if "read_here" in z:
            r = z["read_here"]
            print(
                f"  read on Spark {version}: lakeskip and Paimon's catalog answer as Paimon's "
                f"connector on Spark 4.1 ({r['answers_equal']} queries, {r['rows']} rows); "
                f"lakeskip kept {r['lakeskip_kept_per_1pct_range']}, Paimon on 4.1 "
                f"{r['kept_per_1pct_range_spark41']}"
            )
    if planning:
        print(f"planning at {planning['table']['files']} files "
              f"({planning['table']['partitions']} partitions): first / median s, files kept")  # fmt: skip
        for r in planning["queries"]:
            print(
                f"  {r['query']:<14} lakeskip {r['lakeskip_first_s']:.3f} / "
                f"{r['lakeskip_median_s']:.3f} s, {r['lakeskip_kept']} kept; paimon "
                f"{r['paimon_first_s']:.3f} / {r['paimon_median_s']:.3f} s, "
                f"{r['paimon_kept']} kept"
            )
            for engine in ENGINES:
                f = r[f"{engine}_first"]
                jvm = f"{f['jvm_cpu_s']:.2f}" if f["jvm_cpu_s"] is not None else "?"
                print(
                    f"    first {engine}: cpu s JVM {jvm}, Python {f['py_cpu_s']:.2f}"
                    + (f", callbacks {f['callback_s']:.2f} s" if "callback_s" in f else "")
                )
    if star:
        equal = sum(r["equal"] for r in star)
        print(f"TPC-DS SF {args.tpcds_sf:g} star queries: {equal} of {len(star)} answers equal")
        for r in star:
            kept = {e: sum(f["kept"] for f in r[e]["files"].values()) for e in ENGINES}
            print(
                f"  q{r['query']}: lakeskip {r['lakeskip']['median_s']:.2f} s "
                f"({kept['lakeskip']} fact files), paimon {r['paimon']['median_s']:.2f} s "
                f"({kept['paimon']} fact files)"
            )
    print(f"loaded: load average at start {load_start}, at end {load_end}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    path = out / f"paimon-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}.json"
    record = {
        "bench": "paimon_connector",
        "spark": version,
        "paimon_jars": [Path(j).name for j in jars],
        "rows": args.rows,
        "files": args.files,
        "writes": writes,
        "queries": results,
        "zorder": zorder,
        "planning": planning,
        "tpcds_sf": args.tpcds_sf,
        "tpcds_star": star,
        "load_average_start": load_start,
        "load_average_end": load_end,
        "loaded": True,
    }
    path.write_text(json.dumps(record, indent=2, default=str) + "\n")
    print(f"wrote {path}")
    if not args.keep and not args.warehouse:
        shutil.rmtree(wh, ignore_errors=True)


if __name__ == "__main__":
    main()
