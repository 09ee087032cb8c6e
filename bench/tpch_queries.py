"""TPC-H's 22 queries through lakeskip's catalog against plain Spark over the very same files.

Where no file can be skipped, lakeskip should cost nothing (issue 39's second Done-when item:
each query >= 0.95x plain Spark, warm medians, in PySpark and through ``spark-sql``; planning
<= 50 ms per scan of <= 100 files). This prints, per query, the median wall time through
``lakeskip.tpch.*`` (catalog, planner, indexes) and through plain Spark over the same data files
(no catalog), their ratio (plain / lakeskip: >= 0.95 is the goal) and, in PySpark, every
lakeskip scan's files kept and planning milliseconds (scans over 50 ms flagged), summed up at
the end over every query's first run: the planner's ms per scan (median, maximum, the scans
over 50 ms) and the whole ``plan_scan`` callback's ms per call in Python.

    make bench-tpch                                                  # SF 1, both frontends
    .venv/bin/python bench/tpch_queries.py --sf 0.3 --runs 3         # PySpark only
    .venv/bin/python bench/tpch_queries.py --sf 1 --frontend spark-sql

**Data**: ``tpchgen-cli parquet -s <sf>`` (the ``tpchgen-cli`` package, on the venv's PATH)
into ``--source`` (default ``.tpch-cache/sf<sf>``), generated once. All 8 tables are loaded as
lakeskip tables (CTAS, ``REPARTITION(n)``: ``lineitem`` ``--files`` files, ``orders`` and
``partsupp`` a third as many, the rest one) with the indexes a user would try (``INDEXES``:
bloom filters on the keys looked up, bitmaps on low-cardinality columns the queries test,
range-bitmaps on the dates and quantities they range over). The warehouse is kept and reused
while its tables match ``--source`` / ``--files`` (``--reload`` forces a fresh load), so the
two frontends run over the same files.

**Queries**: written from the TPC-H specification's definitions with the default
substitution parameters (Q11's fraction 0.0001; Q15's view as a CTE), plus ``air``
(``l_shipmode = 'AIR' AND l_quantity < 2``, where an index would keep every file).

**PySpark** (``--frontend pyspark``, default): one session; plain Spark reads
``spark.read.parquet(<the table's data files>)`` temp views. Per query: ``--warmups`` (default
2) untimed runs on each side, the first of which checks the answers are equal (rows as sorted
multisets, numbers to 9 significant digits) and records the lakeskip scans' pruning reports,
then rounds interleaved (lakeskip, plain, plain, lakeskip, ...): ``--runs`` rounds, more (up
to 4x) while a side's runs add up to less than ``--min-seconds`` (as through ``spark-sql``).
Beside the medians: each side's quartiles, the median and quartiles of the paired ratios and
each side's median CPU seconds a run (this process tree from ``/proc``: the Python driver,
where lakeskip's callbacks run, and the JVM with its local executors), and the JVM's CPU a
run by kind of thread (Spark's task threads, the JIT compilers, the collectors, the rest:
the query's own thread with its planning, and Spark's scheduler; ``/proc``, per side the
median). ``--gc`` runs a full Python and JVM collection before every timed run (Python's first:
a DataFrame caught in a reference cycle keeps its JVM Dataset, with the executed plan's
broadcast relations and runtime-filter keys, bound in py4j's gateway until Python collects it). Beside it,
the JVM's bytes allocated a run (median) and GC pauses (all runs) per side (``JvmHeap``):
both sides share the JVM, so a side's allocation is its own, its GC pauses are not only its
own. ``--page-size`` sets ``spark.buffer.pageSize`` in every JVM the bench starts (both sides;
Spark's default at a 3g driver on 2 cores is 64m, one such page per broadcast hash relation).
``--plain-v2`` makes plain Spark read its views through its own V2 ``ParquetScan`` (over an
``InMemoryFileIndex``; ``spark.sql.sources.useV1SourceList`` without ``parquet``) instead of V1
``FileScan parquet``: lakeskip's scan is that V2 ``ParquetScan`` over its ``LakeFileIndex``,
so a gap that stays against plain V2 is lakeskip's, one that goes is Spark's V2 path's.
``--aa`` (with ``--sessions two``) makes both sides plain Spark, each in its own session, timed
the same way: an A/A run, whose ratios are what the method reads as a difference where there is
none (the noise floor of a per-query gate). ``--pairs N`` (with ``--sessions two``, or
through ``spark-sql``) runs the whole comparison N times, each with two fresh worker JVMs (or
CLIs): a query's ratio is then the geometric mean of its N pairs' ratios (JIT compilation
differs from JVM to JVM; one pair's medians differ by up to ~10 % between identical sides).

**spark-sql** (``--frontend spark-sql``): two of the pyspark wheel's ``bin/spark-sql``
alive side by side, fed statement by statement on stdin (``spark_sql_cli.py``): one with
``lakeskip spark-conf``'s flags over ``lakeskip.tpch.*`` (its catalog starts the Python
brain), one plain, over temp views ``USING parquet`` of the same data files (created in both
CLIs, so both JVMs have run the same statements before the first query: the views' schema
inference is 8 Spark jobs, which warmed plain's JVM only); the bench's own PySpark JVM is
ended first, so only the two CLIs run. Then both CLIs run every query
``--session-warmups`` times (default 1), untimed, so the session's first queries are measured
warm too (without it a fresh JVM still compiles 800-1,900 methods a run of its first query in
its 6th run, on both sides: that query's medians fall run by run). Per query ``--warmups`` untimed runs a
side (default 2; the first checks the answers: the printed rows, compared as sorted lines), then
rounds interleaved as in PySpark (lakeskip, plain, plain, lakeskip, ...), so both sides see the same
machine: ``--runs`` rounds, more (up to 4x) while a side's runs add up to less than
``--min-seconds`` (default 8: at ``--runs 5`` a 0.3 s query gets 20 rounds). The time of a
run is the CLI's own "Time taken". Beside the medians it prints each side's quartiles, the median and quartiles of the
paired ratios (plain / lakeskip of one round) and each side's median CPU seconds a run (its
JVM and, for lakeskip, the brain: ``/proc``, less sensitive to the load than wall times);
every run starts with both CLIs quiet and its CPU counts until they are quiet again (the JIT
and GC it leaves behind). Per query it also prints lakeskip's CPU split JVM / brain, each JVM's
CPU by kind of thread (tasks, JIT, GC, the rest), its collections a run (young and concurrent
cycles' pauses, full collections, pause ms, old generation growth: HotSpot's own counters, as
``jstat`` reads them), and the callbacks lakeskip's CLI made in the
first run, the other warm-ups and the timed runs (``-Dlakeskip.callback.trace``).
Both CLIs start with their whole heap (``-Xms`` = ``spark.driver.memory``, 3g) and a fixed
initiating heap occupancy (``-XX:-G1UseAdaptiveIHOP``; ``--no-fixed-heap`` leaves both to G1):
a JVM G1 left on a small heap, or whose adaptive IHOP has swung low, runs concurrent mark
cycles every q3 run, another hardly collects, and which CLI got which changed from bench run
to bench run (``DRIVER_MEMORY``, ``FIXED_HEAP``). ``--profile`` adds Spark's event log of both
processes (``spark_sql_events.py``): per query and side the execution's wall time, the time before it (parsing to physical planning), jobs,
tasks, task CPU and the final plans' operators where they differ.

**PySpark, two sessions** (``--sessions two``): each side in a PySpark session of its own (a
Python driver process and its JVM, started by this script as ``--worker <side>``: lakeskip's
through ``lakeskip.connect``, plain's through the same builder and settings without the
catalog), alive side by side and taking turns run by run as the two ``spark-sql`` CLIs do:
every query's first runs (answers checked, cold plans recorded; each started with both
processes quiet, so a first plan's figures are not the other JVM's compiler still busy with
the query before: q6's 58 ms first plan was ~7 ms of planning thread CPU) before any timed
run, then
per query ``--warmups`` - 1 untimed runs a side and the rounds, each run started with both
processes quiet and its CPU counted until they are quiet again (:func:`_settle`). In one
shared session (``--sessions one``, the default) a run pays the collections and JIT work that
fall into it, whichever side's garbage or code they are (``JvmHeap``); two sessions give each
side only its own, as a user's session has either lakeskip or not.

``--profile`` (PySpark) records the lakeskip callbacks of the first (answer-checking) run
(calls and ms in Python: ``plan_scan`` is the whole planning callback, of which the pruning
report's planning ms is the planner's part), and adds one more run per side after the timed
ones with where its time went: Spark's phases (analysis, optimization, planning; *execution*
the rest), the lakeskip callbacks the warm query made (a warm repetition should make only
``load_table``: its scans are reused from the JVM's scan cache), Spark jobs, and the
operators of the executed plan on each side (joins, exchanges, aggregates), printed where
the two sides' plans differ.

Writes ``bench/results/tpch-queries-<frontend>-<timestamp>.json`` with the load average
(a shared machine: figures are "loaded" unless it was quiet).
"""

from __future__ import annotations

import argparse
import contextlib
import gc as pygc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import query_profile  # type: ignore[import-not-found]
import spark_sql_events  # type: ignore[import-not-found]
from spark_sql_cli import (  # type: ignore[import-not-found]
    CallbackTrace,
    SparkSql,
    ThreadCpu,
    gc_counters,
    gc_delta,
    heap_committed_mib,
    process_cpu_seconds,
    thread_cpu_seconds,
    tree_cpu_seconds,
)

import lakeskip
from lakeskip.catalog.catalog import Catalog
from lakeskip.spark import pruning_reports
from lakeskip.spark.front.catalog_setup import service_for
from lakeskip.spark.front.frontends import frontend_command, frontend_conf

TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")

INDEXES: dict[str, dict[str, str]] = {
    "lineitem": {
        "file-index.bloom-filter.columns": "l_orderkey",
        "file-index.bitmap.columns": "l_shipmode,l_returnflag",
        "file-index.range-bitmap.columns": "l_shipdate,l_quantity,l_discount",
    },
    "orders": {
        "file-index.bloom-filter.columns": "o_orderkey,o_custkey",
        "file-index.bitmap.columns": "o_orderstatus,o_orderpriority",
        "file-index.range-bitmap.columns": "o_orderdate",
    },
    "customer": {
        "file-index.bloom-filter.columns": "c_custkey",
        "file-index.bitmap.columns": "c_mktsegment",
    },
    "part": {
        "file-index.bloom-filter.columns": "p_partkey",
        "file-index.bitmap.columns": "p_brand,p_container",
        "file-index.range-bitmap.columns": "p_size",
    },
    "partsupp": {"file-index.bloom-filter.columns": "ps_partkey,ps_suppkey"},
    "supplier": {"file-index.bloom-filter.columns": "s_suppkey"},
    "nation": {},
    "region": {},
}

# Written from the TPC-H specification's query definitions (default substitution values);
# {lineitem}, {orders}, ... name the tables of one side.
QUERIES = {
    "q1": """SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice),
  sum(l_extendedprice * (1 - l_discount)), sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)),
  avg(l_quantity), avg(l_extendedprice), avg(l_discount), count(*)
FROM {lineitem} WHERE l_shipdate <= date '1998-12-01' - interval '90' day
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus""",
    "q2": """SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
FROM {part}, {supplier}, {partsupp}, {nation}, {region}
WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND p_size = 15
  AND p_type LIKE '%BRASS' AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey
  AND r_name = 'EUROPE'
  AND ps_supplycost = (SELECT min(ps_supplycost) FROM {partsupp}, {supplier}, {nation}, {region}
    WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND s_nationkey = n_nationkey
      AND n_regionkey = r_regionkey AND r_name = 'EUROPE')
ORDER BY s_acctbal DESC, n_name, s_name, p_partkey LIMIT 100""",
    "q3": """SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate,
  o_shippriority
FROM {customer}, {orders}, {lineitem}
WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey
  AND o_orderdate < date '1995-03-15' AND l_shipdate > date '1995-03-15'
GROUP BY l_orderkey, o_orderdate, o_shippriority
ORDER BY revenue DESC, o_orderdate LIMIT 10""",
    "q4": """SELECT o_orderpriority, count(*) AS order_count FROM {orders}
WHERE o_orderdate >= date '1993-07-01' AND o_orderdate < date '1993-07-01' + interval '3' month
  AND EXISTS (SELECT * FROM {lineitem}
    WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate)
GROUP BY o_orderpriority ORDER BY o_orderpriority""",
    "q5": """SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM {customer}, {orders}, {lineitem}, {supplier}, {nation}, {region}
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey
  AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey
  AND r_name = 'ASIA' AND o_orderdate >= date '1994-01-01'
  AND o_orderdate < date '1994-01-01' + interval '1' year
GROUP BY n_name ORDER BY revenue DESC""",
    "q6": """SELECT sum(l_extendedprice * l_discount) FROM {lineitem}
WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01'
  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24""",
    "q7": """SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue FROM (
  SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation,
    extract(year FROM l_shipdate) AS l_year, l_extendedprice * (1 - l_discount) AS volume
  FROM {supplier}, {lineitem}, {orders}, {customer}, {nation} n1, {nation} n2
  WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey
    AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey
    AND ((n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY')
      OR (n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE'))
    AND l_shipdate BETWEEN date '1995-01-01' AND date '1996-12-31') AS shipping
GROUP BY supp_nation, cust_nation, l_year ORDER BY supp_nation, cust_nation, l_year""",
    "q8": """SELECT o_year,
  sum(CASE WHEN nation = 'BRAZIL' THEN volume ELSE 0 END) / sum(volume) AS mkt_share FROM (
  SELECT extract(year FROM o_orderdate) AS o_year,
    l_extendedprice * (1 - l_discount) AS volume, n2.n_name AS nation
  FROM {part}, {supplier}, {lineitem}, {orders}, {customer}, {nation} n1, {nation} n2, {region}
  WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey
    AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey
    AND n1.n_regionkey = r_regionkey AND r_name = 'AMERICA' AND s_nationkey = n2.n_nationkey
    AND o_orderdate BETWEEN date '1995-01-01' AND date '1996-12-31'
    AND p_type = 'ECONOMY ANODIZED STEEL') AS all_nations
GROUP BY o_year ORDER BY o_year""",
    "q9": """SELECT nation, o_year, sum(amount) AS sum_profit FROM (
  SELECT n_name AS nation, extract(year FROM o_orderdate) AS o_year,
    l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount
  FROM {part}, {supplier}, {lineitem}, {partsupp}, {orders}, {nation}
  WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey
    AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey
    AND p_name LIKE '%green%') AS profit
GROUP BY nation, o_year ORDER BY nation, o_year DESC""",
    "q10": """SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue,
  c_acctbal, n_name, c_address, c_phone, c_comment
FROM {customer}, {orders}, {lineitem}, {nation}
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate >= date '1993-10-01'
  AND o_orderdate < date '1993-10-01' + interval '3' month AND l_returnflag = 'R'
  AND c_nationkey = n_nationkey
GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
ORDER BY revenue DESC LIMIT 20""",
    "q11": """SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS value
FROM {partsupp}, {supplier}, {nation}
WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY'
GROUP BY ps_partkey HAVING sum(ps_supplycost * ps_availqty) > (
  SELECT sum(ps_supplycost * ps_availqty) * 0.0001 FROM {partsupp}, {supplier}, {nation}
  WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY')
ORDER BY value DESC""",
    "q12": """SELECT l_shipmode,
  sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END),
  sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END)
FROM {orders}, {lineitem}
WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP')
  AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate
  AND l_receiptdate >= date '1994-01-01' AND l_receiptdate < date '1995-01-01'
GROUP BY l_shipmode ORDER BY l_shipmode""",
    "q13": """SELECT c_count, count(*) AS custdist FROM (
  SELECT c_custkey, count(o_orderkey) AS c_count
  FROM {customer} LEFT OUTER JOIN {orders}
    ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%'
  GROUP BY c_custkey) AS c_orders
GROUP BY c_count ORDER BY custdist DESC, c_count DESC""",
    "q14": """SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%'
  THEN l_extendedprice * (1 - l_discount) ELSE 0 END) / sum(l_extendedprice * (1 - l_discount))
FROM {lineitem}, {part}
WHERE l_partkey = p_partkey AND l_shipdate >= date '1995-09-01'
  AND l_shipdate < date '1995-10-01'""",
    "q15": """WITH revenue0 AS (
  SELECT l_suppkey AS supplier_no, sum(l_extendedprice * (1 - l_discount)) AS total_revenue
  FROM {lineitem}
  WHERE l_shipdate >= date '1996-01-01' AND l_shipdate < date '1996-01-01' + interval '3' month
  GROUP BY l_suppkey)
SELECT s_suppkey, s_name, s_address, s_phone, total_revenue FROM {supplier}, revenue0
WHERE s_suppkey = supplier_no AND total_revenue = (SELECT max(total_revenue) FROM revenue0)
ORDER BY s_suppkey""",
    "q16": """SELECT p_brand, p_type, p_size, count(DISTINCT ps_suppkey) AS supplier_cnt
FROM {partsupp}, {part}
WHERE p_partkey = ps_partkey AND p_brand <> 'Brand#45' AND p_type NOT LIKE 'MEDIUM POLISHED%'
  AND p_size IN (49, 14, 23, 45, 19, 3, 36, 9)
  AND ps_suppkey NOT IN (SELECT s_suppkey FROM {supplier}
    WHERE s_comment LIKE '%Customer%Complaints%')
GROUP BY p_brand, p_type, p_size ORDER BY supplier_cnt DESC, p_brand, p_type, p_size""",
    "q17": """SELECT sum(l_extendedprice) / 7.0 AS avg_yearly FROM {lineitem}, {part}
WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND p_container = 'MED BOX'
  AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM {lineitem} WHERE l_partkey = p_partkey)""",
    "q18": """SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
FROM {customer}, {orders}, {lineitem}
WHERE o_orderkey IN (SELECT l_orderkey FROM {lineitem}
    GROUP BY l_orderkey HAVING sum(l_quantity) > 300)
  AND c_custkey = o_custkey AND o_orderkey = l_orderkey
GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
ORDER BY o_totalprice DESC, o_orderdate LIMIT 100""",
    "q19": """SELECT sum(l_extendedprice * (1 - l_discount)) FROM {lineitem}, {part}
WHERE (p_partkey = l_partkey AND p_brand = 'Brand#12'
    AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
    AND l_quantity >= 1 AND l_quantity <= 11 AND p_size BETWEEN 1 AND 5
    AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')
  OR (p_partkey = l_partkey AND p_brand = 'Brand#23'
    AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
    AND l_quantity >= 10 AND l_quantity <= 20 AND p_size BETWEEN 1 AND 10
    AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')
  OR (p_partkey = l_partkey AND p_brand = 'Brand#34'
    AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
    AND l_quantity >= 20 AND l_quantity <= 30 AND p_size BETWEEN 1 AND 15
    AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')""",
    "q20": """SELECT s_name, s_address FROM {supplier}, {nation}
WHERE s_suppkey IN (SELECT ps_suppkey FROM {partsupp}
    WHERE ps_partkey IN (SELECT p_partkey FROM {part} WHERE p_name LIKE 'forest%')
      AND ps_availqty > (SELECT 0.5 * sum(l_quantity) FROM {lineitem}
        WHERE l_partkey = ps_partkey AND l_suppkey = ps_suppkey
          AND l_shipdate >= date '1994-01-01'
          AND l_shipdate < date '1994-01-01' + interval '1' year))
  AND s_nationkey = n_nationkey AND n_name = 'CANADA'
ORDER BY s_name""",
    "q21": """SELECT s_name, count(*) AS numwait FROM {supplier}, {lineitem} l1, {orders}, {nation}
WHERE s_suppkey = l1.l_suppkey AND o_orderkey = l1.l_orderkey AND o_orderstatus = 'F'
  AND l1.l_receiptdate > l1.l_commitdate
  AND EXISTS (SELECT * FROM {lineitem} l2
    WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey)
  AND NOT EXISTS (SELECT * FROM {lineitem} l3
    WHERE l3.l_orderkey = l1.l_orderkey AND l3.l_suppkey <> l1.l_suppkey
      AND l3.l_receiptdate > l3.l_commitdate)
  AND s_nationkey = n_nationkey AND n_name = 'SAUDI ARABIA'
GROUP BY s_name ORDER BY numwait DESC, s_name LIMIT 100""",
    "q22": """SELECT cntrycode, count(*) AS numcust, sum(c_acctbal) AS totacctbal FROM (
  SELECT substring(c_phone, 1, 2) AS cntrycode, c_acctbal FROM {customer}
  WHERE substring(c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17')
    AND c_acctbal > (SELECT avg(c_acctbal) FROM {customer} WHERE c_acctbal > 0.00
      AND substring(c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17'))
    AND NOT EXISTS (SELECT * FROM {orders} WHERE o_custkey = c_custkey)) AS custsale
GROUP BY cntrycode ORDER BY cntrycode""",
    "air": """SELECT count(*), sum(l_extendedprice) FROM {lineitem}
WHERE l_shipmode = 'AIR' AND l_quantity < 2""",
}

#: the planning budget of one scan of <= 100 files (issue 39)
PLANNING_MS = 50.0
GOAL = 0.95
#: each ``spark-sql`` CLI's heap (``spark.driver.memory``), and with ``--fixed-heap`` (the
#: default) its initial heap too. Without ``-Xms`` G1 grows a JVM's heap from its own pause
#: history, and a JVM left on a small heap (0.7-1.3 GB committed) runs one to three
#: concurrent mark cycles a TPC-H q3 run, started by Spark's 32-64 MB arrays ("G1
#: Humongous Allocation"): 5-12 pauses, 0.2-0.6 s of GC threads a run, where a JVM on a grown
#: heap collects once or twice for 0.02-0.06 s. Which of the two CLIs was on the small heap
#: changed from one bench run to the next (q3's GC a run lakeskip / plain: 0.39 / 0.02,
#: 0.02 / 0.38, 0.20 / 0.36), q3 0.74x and 1.47x in those runs; both with -Xms3g:
#: 1-2 young pauses and 0.02-0.06 s a run on each side (bench/README.md, 2026-12-01)
DRIVER_MEMORY = "3g"
#: ``--fixed-heap``'s Java options, both CLIs: the whole heap from the start, and G1's
#: initiating heap occupancy fixed (45 %, the default's starting point): adaptive IHOP counts
#: Spark's humongous arrays as old-generation allocation, and once its prediction turns on
#: (after a few marking cycles, at a time that differs from JVM to JVM) its threshold swung
#: between 0 and 86 % of the heap, 0 starting a concurrent cycle at every young pause
#: (-Xlog:gc+ihop=debug, q3 / q15 through both CLIs, 2026-12-01)
FIXED_HEAP = f"-Xms{DRIVER_MEMORY} -XX:-G1UseAdaptiveIHOP"


def _tpchgen() -> str:
    near = Path(sys.executable).with_name("tpchgen-cli")
    found = str(near) if near.is_file() else shutil.which("tpchgen-cli")
    if not found:
        raise SystemExit("tpchgen-cli not found (pip install tpchgen-cli)")
    return found


def generate(sf: float, source: Path) -> None:
    """The 8 tables as ``<source>/<table>.parquet``, generated once."""
    if all((source / f"{t}.parquet").exists() for t in TABLES):
        return
    source.mkdir(parents=True, exist_ok=True)
    cmd = [_tpchgen(), "parquet", "-s", str(sf), f"--output-dir={source}"]
    print("generating:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def table_files(n: int) -> dict[str, int]:
    """Data files per table for ``n`` lineitem files."""
    third = max(1, n // 3)
    return {
        t: n if t == "lineitem" else third if t in ("orders", "partsupp") else 1 for t in TABLES
    }


def load(session: Any, source: Path, files: int, warehouse: Path, reload: bool) -> None:
    """The 8 lakeskip tables (kept while ``<warehouse>/loaded.json`` matches)."""
    marker = warehouse / "loaded.json"
    want = {"source": str(source.resolve()), "files": files}
    if not reload and marker.exists() and json.loads(marker.read_text()) == want:
        return
    spark = session.spark
    spark.sql("DROP NAMESPACE IF EXISTS lakeskip.tpch CASCADE")
    spark.sql("CREATE NAMESPACE lakeskip.tpch")
    for name, n in table_files(files).items():
        props = {"target-file-size": "2 gb", **INDEXES[name]}
        text = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
        t0 = time.perf_counter()
        spark.sql(
            f"CREATE TABLE lakeskip.tpch.{name} TBLPROPERTIES ({text}) AS SELECT "
            f"/*+ REPARTITION({n}) */ * FROM parquet.`{source / name}.parquet`"
        )
        print(f"loaded {name}: {n} files, {time.perf_counter() - t0:.1f} s", flush=True)
    marker.write_text(json.dumps(want))


def _norm(v: Any) -> Any:
    if isinstance(v, float | Decimal):
        return float(f"{float(v):.9g}")
    return v


def canonical(rows: list[Any]) -> list[tuple[Any, ...]]:
    """Rows as a sorted multiset, numbers to 9 significant digits."""
    return sorted((tuple(_norm(v) for v in r) for r in rows), key=repr)


#: ``spark.sql.sources.useV1SourceList`` without ``parquet`` (Spark's default, less parquet)
V2_PARQUET = "avro,csv,json,kafka,orc,text"


def _sides(session: Any, plain_v2: bool = False) -> dict[str, dict[str, str]]:
    """Both sides' table names: lakeskip's catalog tables and plain Spark's temp views over the
    same data files, read through V1 (``FileScan parquet``), or with ``plain_v2`` through Spark's
    own V2 ``ParquetScan`` over an ``InMemoryFileIndex`` (the view keeps the relation it was
    read as: the setting is restored right after)."""
    spark = session.spark
    before = spark.conf.get("spark.sql.sources.useV1SourceList")
    if plain_v2:
        spark.conf.set("spark.sql.sources.useV1SourceList", V2_PARQUET)
    try:
        for t in TABLES:
            spark.read.parquet(*session.table(f"tpch.{t}").files()).createOrReplaceTempView(
                f"plain_{t}"
            )
    finally:
        spark.conf.set("spark.sql.sources.useV1SourceList", before)
    return {
        "lakeskip": {t: f"lakeskip.tpch.{t}" for t in TABLES},
        "plain": {t: f"plain_{t}" for t in TABLES},
    }


#: operators whose counts tell two physical plans of one query apart
_OPERATORS = (
    "BroadcastHashJoin",
    "SortMergeJoin",
    "ShuffledHashJoin",
    "BroadcastNestedLoopJoin",
    "CartesianProduct",
    "BroadcastExchange",
    "ShuffleExchange",
    "Exchange",
    "HashAggregate",
    "ObjectHashAggregate",
    "SortAggregate",
    "Sort",
    "Window",
    "SubqueryBroadcast",
    "Subquery",
    "ReusedExchange",
    "ColumnarToRow",
)


def operators(plan: str) -> dict[str, int]:
    """How many of each :data:`_OPERATORS` a physical plan's text holds (an adaptive plan's
    final plan only)."""
    found: dict[str, int] = {}
    for line in plan.split("== Initial Plan ==")[0].splitlines():
        m = re.match(r"[\s:+\-*()0-9]*([A-Za-z]+)", line)
        if m and m.group(1) in _OPERATORS:
            found[m.group(1)] = found.get(m.group(1), 0) + 1
    return dict(sorted(found.items()))


def profiled(spark: Any, service: Any, sql: str) -> dict[str, Any]:
    """One run of ``sql`` with where its time went (:func:`query_profile.profiled`) and its
    executed plan's operators."""
    secs, _, qe, prof = query_profile.profiled(spark, service, sql)
    plan = str(qe.executedPlan().toString())
    return {"seconds": round(secs, 3), **prof, "operators": operators(plan), "plan": plan}


def _print_profile(q: str, prof: dict[str, dict[str, Any]]) -> None:
    for side, p in prof.items():
        ph = p["phases_ms"]
        calls = ", ".join(f"{op} {n}/{ms:.0f}ms" for op, (n, ms) in p["callbacks"].items())
        print(
            f"      {side:>8}: {p['seconds']:.2f} s, analysis {ph.get('analysis', 0):.0f} + "
            f"optimization {ph.get('optimization', 0):.0f} + planning "
            f"{ph.get('planning', 0):.0f} ms, {p['jobs']} jobs"
            + (f", callbacks {calls}" if calls else ""),
            flush=True,
        )
    if {"lakeskip", "plain"} <= prof.keys():
        # the rules that took longest more under lakeskip than plain (one run each: noisy)
        ls, pl = prof["lakeskip"].get("rules_ms", {}), prof["plain"].get("rules_ms", {})
        more = sorted(ls, key=lambda r: pl.get(r, 0.0) - ls[r])[:5]
        if more:
            text = ", ".join(f"{r} {ls[r]:.0f}/{pl.get(r, 0.0):.0f}" for r in more)
            print(f"      rules lakeskip/plain ms, most extra: {text}", flush=True)
    ops = {side: p["operators"] for side, p in prof.items()}
    if len({json.dumps(o) for o in ops.values()}) > 1:
        print(f"      {q} plans differ: {ops}", flush=True)


def _append(into: dict[str, list[float]], values: dict[str, float]) -> None:
    """Each of ``values`` appended to its list in ``into`` (one run's figures by name)."""
    for k, v in values.items():
        into.setdefault(k, []).append(v)


def _scan_records(reports: list[Any]) -> list[dict[str, Any]]:
    """The lakeskip scans of a query's first run (its pruning reports) as the results keep
    them: table, files kept and in all, the planner's ms."""
    return [
        {
            "table": r.table,
            "kept": r.kept_files,
            "total": r.total_files,
            "planning_ms": round(r.planning_ms, 2),
            "planning_cpu_ms": round(r.planning_cpu_ms, 2),
        }
        for r in reports
    ]


def _callback_ms(delta: Any) -> dict[str, list[float]]:
    """The callbacks of a ``CallbackStats.since`` delta made: per operation, calls and ms."""
    return {
        op: [n, round(delta.seconds.get(op, 0.0) * 1000, 1)]
        for op, n in sorted(delta.calls.items())
        if n
    }


class JvmHeap:
    """The PySpark JVM's heap counters (``java.lang.management``, through py4j): bytes
    allocated by all its threads (``com.sun.management.ThreadMXBean``) and the pauses and
    milliseconds of its collectors (G1's young MXBean counts young, mixed, remark and cleanup
    pauses). Both sides of a PySpark run share this JVM: a side's run pays the collections
    that happen while it runs, whichever side's garbage they collect (measured: the broadcast
    hash relations of both sides' earlier runs, 64 MB a relation at Spark's default
    ``spark.buffer.pageSize`` for a 3g driver on 2 cores, kept until G1 marks them dead), so
    the bytes a side allocates a run are its own cost, its GC pauses are not only its own."""

    def __init__(self, spark: Any) -> None:
        mf = spark._jvm.java.lang.management.ManagementFactory
        self._threads = mf.getThreadMXBean()
        self._gcs = list(mf.getGarbageCollectorMXBeans())

    def counters(self) -> tuple[float, float, float]:
        """Bytes allocated, GC pauses and GC milliseconds so far."""
        return (
            float(self._threads.getTotalThreadAllocatedBytes()),
            float(sum(g.getCollectionCount() for g in self._gcs)),
            float(sum(g.getCollectionTime() for g in self._gcs)),
        )

    def since(self, before: tuple[float, float, float]) -> dict[str, float]:
        """MB allocated, GC pauses and their ms since ``before`` (:meth:`counters`)."""
        now = self.counters()
        return {
            "alloc_mb": (now[0] - before[0]) / 1e6,
            "gc_pauses": now[1] - before[1],
            "gc_ms": now[2] - before[2],
        }

    @staticmethod
    def text(counts: dict[str, dict[str, list[float]]]) -> str:
        """Per side the median MB allocated a run and the GC pauses and ms in all runs."""
        parts = []
        for side, c in counts.items():
            if c.get("alloc_mb"):
                parts.append(
                    f"{side} {statistics.median(c['alloc_mb']):.0f} MB allocated a run, "
                    f"GC {sum(c['gc_pauses']):.0f} pauses {sum(c['gc_ms']):.0f} ms in "
                    f"{len(c['alloc_mb'])} runs"
                )
        return "JVM: " + "; ".join(parts)


def run_pyspark(
    session: Any,
    queries: list[str],
    runs: int,
    profile: bool = False,
    min_seconds: float = 8.0,
    warmups: int = 2,
    gc: bool = False,
    settle: bool = False,
    plain_v2: bool = False,
    session_first: bool = False,
) -> dict[str, Any]:
    """Both sides in one PySpark session: per query ``warmups`` runs a side (the first checks
    the answers and records the scans), then rounds A B, B A, A B, ... (``--runs``, more, up to
    4x, while a side's runs add up to less than ``min_seconds``), each run's wall time and the
    CPU seconds the whole process tree used (this Python, where lakeskip's callbacks run, and
    the JVM, driver and local executors; ``/proc``); ``gc``: a full JVM and Python collection
    before every run, so that no run pays for the garbage of the one before it; ``settle``:
    every run starts once the process tree is quiet (:func:`_settle`) and its CPU counts until
    it is quiet again, as through ``spark-sql``: the JIT compiling a run leaves behind (in a
    young session hundreds of methods a run, on both sides) is its own, not the next run's;
    ``plain_v2``: plain Spark reads through its own V2 ``ParquetScan`` (:func:`_sides`);
    ``session_first``: every query's first runs (answers, cold plans) before any timed run."""
    spark = session.spark
    sides = _sides(session, plain_v2)
    # the callbacks' own figures (cheap): every first run's plan_scan calls and ms
    service = service_for(spark)
    jvm_gc = spark._jvm.java.lang.System.gc
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    heap = JvmHeap(spark)

    def timed(
        side_sql: str, kinds: dict[str, list[float]], counts: dict[str, list[float]]
    ) -> tuple[float, float]:
        """One run: its wall and process tree CPU seconds; the JVM's CPU by kind of thread
        appended to ``kinds``, its bytes allocated and GC pauses (:class:`JvmHeap`) to
        ``counts``."""
        if gc:
            # Python's first: a DataFrame caught in a reference cycle keeps its JVM Dataset
            # (executed plan, broadcasts, runtime-filter keys) bound in py4j's gateway until
            # Python collects it
            pygc.collect()
            jvm_gc()
        if settle:
            _settle([os.getpid()])
        h0 = heap.counters()
        k0 = ThreadCpu(jvm_pid)
        c0 = tree_cpu_seconds(os.getpid())
        t0 = time.perf_counter()
        spark.sql(side_sql).collect()
        secs = time.perf_counter() - t0
        if settle:
            _settle([os.getpid()])
        used = tree_cpu_seconds(os.getpid()) - c0
        k1 = ThreadCpu(jvm_pid)
        if k0 and k1:
            _append(kinds, thread_cpu_seconds(k0, k1))
        _append(counts, heap.since(h0))
        return secs, used

    sqls = {q: {side: QUERIES[q].format(**names) for side, names in sides.items()} for q in queries}

    def first_runs(n: int, q: str) -> tuple[Any, list[dict[str, Any]], dict[str, Any], list[str]]:
        """A query's first run a side: checks the answers, records the lakeskip scans (their
        planning: cold) and callbacks."""
        sql = sqls[q]
        answers = {}
        scans: list[dict[str, Any]] = []
        # the side that runs first pays what Spark caches for the next (generated code):
        # the first side alternates from query to query
        first = list(sides) if n % 2 == 0 else list(reversed(sides))
        first_callbacks: dict[str, list[float]] = {}
        for side in first:
            before = service.callback_stats()
            with pruning_reports(spark) as reports:
                answers[side] = canonical(spark.sql(sql[side]).collect())
            if side == "lakeskip":
                first_callbacks = _callback_ms(service.callback_stats().since(before))
                scans = _scan_records(reports)
        if answers["lakeskip"] != answers["plain"]:
            raise SystemExit(f"{q}: different answers")
        return answers, scans, first_callbacks, first

    # session_first: every query's first runs before any query's timed runs (a whole-session
    # warm-up whose plans are still each query's first, cold)
    firsts = {q: first_runs(n, q) for n, q in enumerate(queries)} if session_first else {}
    out: dict[str, Any] = {}
    for n, q in enumerate(queries):
        sql = sqls[q]
        answers, scans, first_callbacks, first = firsts.pop(q) if q in firsts else first_runs(n, q)
        # more warm-ups, interleaved the other way round
        for _ in range(warmups - 1):
            for side in reversed(first):
                spark.sql(sql[side]).collect()
        times: dict[str, list[float]] = {s: [] for s in sides}
        cpu: dict[str, list[float]] = {s: [] for s in sides}
        kinds: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
        counts: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
        i = 0
        while i < runs or (i < 4 * runs and min(sum(t) for t in times.values()) < min_seconds):
            for side in first if i % 2 == 0 else list(reversed(first)):
                secs, used = timed(sql[side], kinds[side], counts[side])
                times[side].append(secs)
                cpu[side].append(used)
            i += 1
        out[q] = _summary(q, times, scans, len(answers["plain"]))
        out[q]["spread"] = _spread(times, cpu)
        out[q]["cpu"] = cpu
        out[q]["jvm_threads_cpu"] = {
            s: {k: statistics.median(v) for k, v in ks.items()} for s, ks in kinds.items()
        }
        _print_spread(out[q]["spread"], i)
        _print_threads(out[q]["jvm_threads_cpu"])
        out[q]["jvm_heap"] = counts
        print(f"      {JvmHeap.text(counts)}", flush=True)
        out[q]["first_callbacks"] = first_callbacks
        if profile:
            prof = {side: profiled(spark, service, sql[side]) for side in first}
            calls = ", ".join(f"{op} {n}/{ms:.0f}ms" for op, (n, ms) in first_callbacks.items())
            print(f"      first lakeskip run's callbacks: {calls}", flush=True)
            _print_profile(q, prof)
            out[q]["profile"] = prof
    return out


#: the start of a ``--worker``'s reply lines (its other stdout lines, PySpark's and lakeskip's
#: own, are passed through)
_REPLY = "@@tpch-worker "


def worker(
    side: str, warehouse: Path, page_size: str | None, fixed_heap: bool, extra: dict[str, str]
) -> None:
    """``--worker <side>``: one side of ``--sessions two``, its own PySpark session (lakeskip's
    through ``lakeskip.connect``; plain's through the same builder and :func:`pyspark_conf`,
    without the catalog), serving JSON lines on stdin: ``views`` (plain's temp views over the
    given data files, made in both sessions alike), ``run`` (one query: its wall seconds and
    :class:`JvmHeap` counts; with ``first`` its canonical rows and, on lakeskip's side, its
    pruning reports and callbacks; with ``gc`` a full JVM and Python collection first),
    ``stop``. ``extra``: more Spark settings of this session (``--lakeskip-conf``)."""
    conf = {**pyspark_conf(page_size, fixed_heap), **extra}
    if side == "lakeskip":
        spark = lakeskip.connect(str(warehouse), master="local[2]", conf=conf).spark
        service = service_for(spark)
    else:
        from lakeskip.spark.front.builder import build_spark_session

        spark = build_spark_session(master="local[2]", conf=conf, app_name="plain")
        service = None
    heap = JvmHeap(spark)

    def reply(obj: dict[str, Any]) -> None:
        print(_REPLY + json.dumps(obj, default=str), flush=True)

    reply({"jvm_pid": int(spark._jvm.java.lang.ProcessHandle.current().pid())})
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["op"] == "stop":
            break
        if msg["op"] == "views":
            for t, files in msg["views"].items():
                spark.read.parquet(*files).createOrReplaceTempView(f"plain_{t}")
            reply({})
            continue
        if msg.get("gc"):
            pygc.collect()  # Python's first (see run_pyspark)
            spark._jvm.java.lang.System.gc()
        first = bool(msg.get("first"))
        before = service.callback_stats() if service is not None else None
        reports_cm = (
            pruning_reports(spark) if first and service is not None else contextlib.nullcontext([])
        )
        h0 = heap.counters()
        with reports_cm as reports:
            t0 = time.perf_counter()
            rows = spark.sql(msg["sql"]).collect()
            secs = time.perf_counter() - t0
        out: dict[str, Any] = {"secs": secs, "heap": heap.since(h0)}
        if first:
            out["rows"] = canonical(rows)
            out["scans"] = _scan_records(reports)
            if service is not None and before is not None:
                out["callbacks"] = _callback_ms(service.callback_stats().since(before))
        reply(out)
    spark.stop()


class _Worker:
    """A ``--worker`` process (:func:`worker`) and its JVM's pid."""

    def __init__(
        self,
        side: str,
        warehouse: Path,
        page_size: str | None,
        fixed_heap: bool,
        extra: dict[str, str] | None = None,
    ):
        self.side = side
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", side]
        cmd += ["--worker-conf", json.dumps(extra or {})]
        cmd += ["--warehouse", str(warehouse), "--fixed-heap" if fixed_heap else "--no-fixed-heap"]
        cmd += ["--page-size", page_size] if page_size else []
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.pid = self.proc.pid
        self.jvm_pid = int(self._reply()["jvm_pid"])

    def _reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(_REPLY):
                return dict(json.loads(line[len(_REPLY) :]))
            print(f"  [{self.side}] {line}", end="", flush=True)
        raise SystemExit(f"the {self.side} worker ended (exit code {self.proc.wait()})")

    def call(self, **msg: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        return self._reply()

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"op": "stop"}) + "\n")
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_pyspark_sessions(
    session: Any,
    warehouse: Path,
    queries: list[str],
    runs: int,
    min_seconds: float = 8.0,
    warmups: int = 2,
    gc: bool = False,
    fixed_heap: bool = True,
    page_size: str | None = None,
    lakeskip_conf: dict[str, str] | None = None,
    aa: bool = False,
    pairs: int = 1,
) -> dict[str, Any]:
    """``--sessions two``: :func:`_one_pair` ``pairs`` times (``--pairs``), each time with two
    fresh worker processes, so fresh JVMs; with more than one, a query's ratio is the geometric
    mean of its pairs' ratios (each pair's the ratio of its medians), its times all pairs'
    runs, its scans and first callbacks every pair's first runs. Why: two JVMs running the
    same code compile it differently, so one pair's medians differ by up to ~10 % with nothing
    to find (the A/A run in bench/README.md); pairs average that out as more runs cannot."""
    views = {t: list(session.table(f"tpch.{t}").files()) for t in TABLES}
    _stop_pyspark_jvm(session)
    return _run_pairs(
        pairs,
        "two fresh worker JVMs",
        queries,
        lambda: _one_pair(
            views,
            warehouse,
            queries,
            runs,
            min_seconds,
            warmups,
            gc,
            fixed_heap,
            page_size,
            lakeskip_conf,
            aa,
        ),
    )


def _run_pairs(
    pairs: int, fresh: str, queries: list[str], one_pair: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """``one_pair()`` ``pairs`` times (each starts its own two JVMs, ``fresh`` says which), a
    line after each when there are several, the results combined (:func:`_combine_pairs`)."""
    done: list[dict[str, Any]] = []
    for n in range(pairs):
        if pairs > 1:
            print(f"pair {n + 1} of {pairs}: {fresh}", flush=True)
        done.append(one_pair())
        if pairs > 1:
            mean, low = _gate(done[-1])
            print(
                f"pair {n + 1}: geometric mean {mean:.2f}x; below {GOAL}x: {low or 'none'}; "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    return _combine_pairs(queries, done)


def _combine_pairs(queries: list[str], done: list[dict[str, Any]]) -> dict[str, Any]:
    """One result from ``--pairs`` pairs' results (PySpark's worker JVMs or spark-sql's CLIs):
    a query's ratio is the geometric mean of its pairs' ratios (each pair's the ratio of its
    medians), its times all pairs' runs, its scans and first callbacks every pair's first
    runs; each pair's own result under ``pairs``. One pair's result is returned as it is."""
    if len(done) == 1:
        return done[0]
    out: dict[str, Any] = {}
    for q in queries:
        each = [d[q] for d in done]
        ratios = [r["ratio"] for r in each]
        ratio = statistics.geometric_mean(ratios) if all(ratios) else None
        calls: dict[str, list[float]] = {}
        for r in each:
            _add_calls(calls, r.get("first_callbacks", {}))
        flag = " BELOW 0.95x" if ratio is not None and ratio < GOAL else ""
        print(
            f"{q:>4}: pairs {' '.join(f'{x:.2f}' for x in ratios)} -> {ratio:.2f}x{flag}",
            flush=True,
        )
        out[q] = {
            "ratio": ratio,
            "pair_ratios": ratios,
            "times": {s: [t for r in each for t in r["times"][s]] for s in ("lakeskip", "plain")},
            "rows": each[0]["rows"],
            "scans": [s for r in each for s in r["scans"]],
            "first_callbacks": calls,
            "pairs": each,
        }
    return out


def _gate(results: dict[str, Any]) -> tuple[float, list[str]]:
    """The geometric mean of the queries' ratios and the queries below :data:`GOAL`."""
    ratios = [r["ratio"] for r in results.values() if r["ratio"]]
    below = [q for q, r in results.items() if r["ratio"] is not None and r["ratio"] < GOAL]
    return statistics.geometric_mean(ratios), below


def _one_pair(
    views: dict[str, list[str]],
    warehouse: Path,
    queries: list[str],
    runs: int,
    min_seconds: float,
    warmups: int,
    gc: bool,
    fixed_heap: bool,
    page_size: str | None,
    lakeskip_conf: dict[str, str] | None,
    aa: bool,
) -> dict[str, Any]:
    """One pair of ``--sessions two``: each side in a PySpark session of its own (:class:`_Worker`),
    started after this process's session and JVM stopped; every query's first runs (answers
    checked, cold plans recorded) before any timed run; per query ``warmups`` - 1 untimed runs
    a side, then rounds A B, B A, ... (``--runs``, more, up to 4x, while a side's runs add up
    to less than ``min_seconds``), each run started with both processes quiet and its CPU
    (the worker's process tree: its Python and JVM) counted until they are quiet again.
    ``aa`` (``--aa``): the "lakeskip" side is a second plain session over the same views, the
    same way: the ratios of two identical sides, what this method reads as a difference when
    there is none."""
    sides = {
        "lakeskip": {t: f"plain_{t}" if aa else f"lakeskip.tpch.{t}" for t in TABLES},
        "plain": {t: f"plain_{t}" for t in TABLES},
    }
    sqls = {q: {side: QUERIES[q].format(**names) for side, names in sides.items()} for q in queries}
    out: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        workers: dict[str, _Worker] = {}
        for side in sides:
            extra = lakeskip_conf if side == "lakeskip" else None
            kind = "plain" if aa else side
            workers[side] = _Worker(kind, warehouse, page_size, fixed_heap, extra)
            stack.callback(workers[side].close)
        pids = [w.pid for w in workers.values()]
        for w in workers.values():  # the same statements in both sessions before any query
            w.call(op="views", views=views)
        firsts: dict[str, tuple[list[str], dict[str, Any]]] = {}
        for n, q in enumerate(queries):
            first = list(sides) if n % 2 == 0 else list(reversed(sides))
            got = {}
            for side in first:
                # started with both processes quiet, as every timed run: the first run's
                # planning (the figure the planning budget is checked on) then competes only
                # with its own JVM, not with the other side's compiler and collector still
                # busy with the query before
                _settle(pids)
                got[side] = workers[side].call(op="run", sql=sqls[q][side], first=True)
            if got["lakeskip"]["rows"] != got["plain"]["rows"]:
                raise SystemExit(f"{q}: different answers")
            firsts[q] = (first, got["lakeskip"])
        for q in queries:
            first, cold = firsts[q]
            for _ in range(warmups - 1):
                for side in reversed(first):
                    _settle(pids)
                    workers[side].call(op="run", sql=sqls[q][side])
            load0 = os.getloadavg()[0]
            times: dict[str, list[float]] = {s: [] for s in sides}
            cpu: dict[str, list[float]] = {s: [] for s in sides}
            kinds: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
            counts: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
            gcs: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
            i = 0
            while i < runs or (i < 4 * runs and min(sum(t) for t in times.values()) < min_seconds):
                for side in first if i % 2 == 0 else list(reversed(first)):
                    w = workers[side]
                    _settle(pids)
                    c0 = tree_cpu_seconds(w.pid)
                    k0 = ThreadCpu(w.jvm_pid)
                    g0 = gc_counters(w.jvm_pid)
                    ran = w.call(op="run", sql=sqls[q][side], gc=gc)
                    _settle(pids)
                    cpu[side].append(tree_cpu_seconds(w.pid) - c0)
                    k1 = ThreadCpu(w.jvm_pid)
                    if k0 and k1:
                        d = thread_cpu_seconds(k0, k1)
                        del d["all"]
                        _append(kinds[side], d)
                    _append(gcs[side], gc_delta(g0, gc_counters(w.jvm_pid)))
                    _append(counts[side], ran["heap"])
                    times[side].append(ran["secs"])
                i += 1
            out[q] = _summary(q, times, cold["scans"], len(cold["rows"]))
            out[q]["spread"] = _spread(times, cpu)
            out[q]["cpu"] = cpu
            out[q]["jvm_threads_cpu"] = {
                s: {k: statistics.median(v) for k, v in ks.items()} for s, ks in kinds.items()
            }
            out[q]["gc"] = {
                s: {k: statistics.median(v) for k, v in ks.items()} for s, ks in gcs.items()
            }
            out[q]["jvm_heap"] = counts
            out[q]["first_callbacks"] = cold.get("callbacks", {})
            out[q]["load"] = [load0, os.getloadavg()[0]]
            _print_spread(out[q]["spread"], i)
            print(
                f"      {_threads_text(out[q]['jvm_threads_cpu'])}; {_gc_text(out[q]['gc'])}",
                flush=True,
            )
            print(f"      {JvmHeap.text(counts)}", flush=True)
    return out


def _summary(
    q: str, times: dict[str, list[float]], scans: list[dict[str, Any]], rows: int
) -> dict[str, Any]:
    mine, plain = statistics.median(times["lakeskip"]), statistics.median(times["plain"])
    ratio = plain / mine if mine else None
    slow = [s for s in scans if s["planning_ms"] > PLANNING_MS and s["total"] <= 100]
    flag = " BELOW 0.95x" if ratio is not None and ratio < GOAL else ""
    flag += f" PLANNING>{PLANNING_MS:.0f}ms x{len(slow)}" if slow else ""
    scan_text = "; ".join(
        f"{s['table'].split('.')[-1]} {s['kept']}/{s['total']} {s['planning_ms']:.1f}ms"
        + (f" (CPU {s['planning_cpu_ms']:.1f})" if s["planning_ms"] > PLANNING_MS else "")
        for s in scans
    )
    print(
        f"{q:>4}: plain {plain:6.2f} s, lakeskip {mine:6.2f} s -> {ratio:.2f}x{flag}"
        + (f"  [{scan_text}]" if scans else ""),
        flush=True,
    )
    return {"times": times, "ratio": ratio, "rows": rows, "scans": scans}


def planning_summary(results: dict[str, Any]) -> dict[str, Any]:
    """Planning per lakeskip scan over every query's first run (PySpark; none through
    ``spark-sql``): the planner's ms per scan (the pruning report's) with their median and
    maximum, the scans of <= 100 files over :data:`PLANNING_MS`, and the whole ``plan_scan``
    callback in Python (request decoded, planned, reply encoded) per call, per query."""
    scans = [(q, s) for q, r in results.items() for s in r["scans"]]
    if not scans:
        return {}
    ms = [s["planning_ms"] for _, s in scans]
    cpu = [s.get("planning_cpu_ms", 0.0) for _, s in scans]
    top_q, top = max(scans, key=lambda qs: qs[1]["planning_ms"])
    over = [
        f"{q} {s['table'].split('.')[-1]} {s['planning_ms']:.1f}ms"
        for q, s in scans
        if s["planning_ms"] > PLANNING_MS and s["total"] <= 100
    ]
    per_call = {
        q: r["first_callbacks"]["plan_scan"][1] / r["first_callbacks"]["plan_scan"][0]
        for q, r in results.items()
        if r.get("first_callbacks", {}).get("plan_scan", [0])[0]
    }
    out: dict[str, Any] = {
        "scans": len(ms),
        "median_ms": round(statistics.median(ms), 2),
        "max_ms": round(max(ms), 2),
        "max_scan": f"{top_q} {top['table']} ({top['total']} files)",
        "max_scan_cpu_ms": round(top.get("planning_cpu_ms", 0.0), 2),
        "median_cpu_ms": round(statistics.median(cpu), 2),
        "max_cpu_ms": round(max(cpu), 2),
        "over": over,
        "plan_scan_ms_per_call": {q: round(v, 1) for q, v in per_call.items()},
    }
    worst = max(per_call.items(), key=lambda kv: kv[1]) if per_call else None
    out["text"] = (
        f"planning per scan (first runs, {len(ms)} scans): median {out['median_ms']:.1f} ms, "
        f"max {out['max_ms']:.1f} ms ({out['max_scan']}, of which CPU "
        f"{out['max_scan_cpu_ms']:.1f} ms); planning thread CPU per scan: median "
        f"{out['median_cpu_ms']:.1f} ms, max {out['max_cpu_ms']:.1f} ms; over {PLANNING_MS:.0f} ms: "
        f"{', '.join(over) or 'none'}"
        + (
            f"; whole plan_scan callback per call: median "
            f"{statistics.median(per_call.values()):.1f} ms, max {worst[1]:.1f} ms ({worst[0]})"
            if worst
            else ""
        )
    )
    return out


def table_globs(catalog: Catalog) -> dict[str, str]:
    """Per table, the glob of its data files (``<dir>/*.parquet``: checked to be exactly them)."""
    globs = {}
    for t in TABLES:
        table = catalog.get_table(f"tpch.{t}")
        files = [table.data_file_path(e) for e in table.scan_files()]
        dirs = {str(Path(f.removeprefix("file:")).parent) for f in files}
        if len(dirs) != 1:
            raise SystemExit(f"{t}: data files in {len(dirs)} directories")
        d = dirs.pop()
        if sorted(str(p) for p in Path(d).glob("*.parquet")) != sorted(
            f.removeprefix("file:") for f in files
        ):
            raise SystemExit(f"{t}: {d} holds Parquet files that are not the table's")
        globs[t] = f"{d}/*.parquet"
    return globs


def _quartiles(xs: list[float]) -> tuple[float, float]:
    if len(xs) < 2:
        return xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[2]


def _spread(times: dict[str, list[float]], cpu: dict[str, list[float]]) -> dict[str, Any]:
    """Quartiles of each side's times, of the paired ratios (plain / lakeskip of one round:
    the two runs next to each other) and the median CPU seconds per run of each side's
    process tree (its JVM, and lakeskip's brain)."""
    pairs = [p / m for p, m in zip(times["plain"], times["lakeskip"], strict=True) if m]
    return {
        "quartiles": {s: _quartiles(t) for s, t in times.items()},
        "pair_ratio": [statistics.median(pairs), *_quartiles(pairs)],
        "cpu_median": {s: statistics.median(c) for s, c in cpu.items()},
    }


def _print_spread(s: dict[str, Any], runs: int) -> None:
    q, pr, c = s["quartiles"], s["pair_ratio"], s["cpu_median"]
    cpu_ratio = c["plain"] / c["lakeskip"] if c["lakeskip"] else 0.0
    print(
        f"      {runs} runs a side; quartiles plain {q['plain'][0]:.2f}-{q['plain'][1]:.2f} s, "
        f"lakeskip {q['lakeskip'][0]:.2f}-{q['lakeskip'][1]:.2f} s; paired ratios "
        f"{pr[0]:.2f}x ({pr[1]:.2f}-{pr[2]:.2f}); CPU a run plain {c['plain']:.2f} s, "
        f"lakeskip {c['lakeskip']:.2f} s -> {cpu_ratio:.2f}x",
        flush=True,
    )


def _threads_text(medians: dict[str, dict[str, float]]) -> str:
    """Each side's median JVM CPU seconds a run by kind of thread (:func:`thread_cpu_seconds`):
    Spark's task threads, the JIT compilers, the collectors and the rest (the query's own
    thread: analysis, optimisation, planning, lakeskip's JVM side; Spark's scheduler)."""
    order = ("tasks", "jit", "gc", "other")
    return "JVM CPU a run by thread (tasks / jit / gc / other): " + "; ".join(
        f"{s} " + " / ".join(f"{ks.get(k, 0.0):.2f}" for k in order) for s, ks in medians.items()
    )


def _gc_text(medians: dict[str, dict[str, float]]) -> str:
    """Each side's median collections a run (:func:`gc_counters`): young / mixed pauses,
    pauses of concurrent cycles (remark, cleanup), full collections, their pause ms, the old
    generation's growth."""
    return (
        "GC a run (pauses young + concurrent + full, pause ms, old gen growth MiB): "
        + "; ".join(
            f"{s} {g.get('young', 0):.0f} + {g.get('concurrent', 0):.0f} + {g.get('full', 0):.0f}, "
            f"{1000 * (g.get('young_s', 0) + g.get('concurrent_s', 0) + g.get('full_s', 0)):.0f} ms, "
            f"{g.get('old_bytes', 0) / 2**20:+.0f}"
            for s, g in medians.items()
            if g
        )
    )


def _print_threads(medians: dict[str, dict[str, float]]) -> None:
    if any(medians.values()):
        print(f"      {_threads_text(medians)}", flush=True)


#: a CLI is quiet when all of them used less than this many CPU seconds over SETTLE_STEP
SETTLE_QUIET = 0.03
SETTLE_STEP = 0.2
#: the longest wait for quiet after a run
SETTLE_MOST = 5.0


def _settle(pids: list[int]) -> float:
    """Waits until the CLIs' processes (``pids``, with their children) are quiet -- the JIT
    compiling, GC and cleanup a run leaves behind, which would otherwise land on the next run,
    often the other side's -- or :data:`SETTLE_MOST` seconds; how long it waited."""
    t0 = time.monotonic()
    last = sum(tree_cpu_seconds(p) for p in pids)
    while time.monotonic() - t0 < SETTLE_MOST:
        time.sleep(SETTLE_STEP)
        now = sum(tree_cpu_seconds(p) for p in pids)
        if now - last < SETTLE_QUIET:
            break
        last = now
    return time.monotonic() - t0


def _stop_pyspark_jvm(session: Any) -> None:
    """Stops the PySpark session and ends its JVM: ``SparkSession.stop`` leaves the gateway's
    JVM running (heap, GC and JIT threads, idle but resident beside the two CLIs), and it
    exits only when its stdin, a pipe from this process, closes."""
    from pyspark import SparkContext

    session.spark.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _calls_text(calls: dict[str, list[float]]) -> str:
    return ", ".join(f"{op} {n:g}/{ms:.0f}ms" for op, (n, ms) in sorted(calls.items())) or "none"


def _add_calls(total: dict[str, list[float]], calls: dict[str, list[float]]) -> None:
    for op, (n, ms) in calls.items():
        entry = total.setdefault(op, [0, 0.0])
        entry[0] += n
        entry[1] += ms


def driver_conf(page_size: str | None = None) -> dict[str, str]:
    """The driver settings of every JVM the bench starts (PySpark's, both ``spark-sql``
    CLIs): 3g and, if given, ``spark.buffer.pageSize`` (``--page-size``)."""
    return {
        "spark.driver.memory": DRIVER_MEMORY,
        **({"spark.buffer.pageSize": page_size} if page_size else {}),
    }


def pyspark_conf(page_size: str | None = None, fixed_heap: bool = True) -> dict[str, str]:
    """The PySpark session's settings: :func:`driver_conf` and, with ``fixed_heap``, the
    JVM's whole heap from the start and a fixed initiating heap occupancy (:data:`FIXED_HEAP`,
    as both ``spark-sql`` CLIs get): both sides share this JVM, and G1's adaptive IHOP,
    which counts every broadcast's 64 MB page as old-generation allocation, otherwise
    starts concurrent cycles in whichever side's runs happen to follow."""
    conf = driver_conf(page_size)
    if fixed_heap:
        conf["spark.driver.extraJavaOptions"] = FIXED_HEAP
    return conf


def cli_confs(
    warehouse: Path,
    page_size: str | None = None,
    java: str = "",
    extra: dict[str, str] | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """The two ``spark-sql`` CLIs' settings, lakeskip's and plain's: local[2], no UI,
    :func:`driver_conf`, and the same Java options on both (lakeskip's quiet console plus
    ``java``); ``extra``: more settings of lakeskip's CLI only (``--lakeskip-conf``)."""
    base = {"spark.master": "local[2]", "spark.ui.enabled": "false", **driver_conf(page_size)}
    lake_conf = {**frontend_conf(str(warehouse)), **base, **(extra or {})}
    options = f"{lake_conf.get('spark.driver.extraJavaOptions', '')} {java}".strip()
    lake_conf["spark.driver.extraJavaOptions"] = options
    return lake_conf, {**base, "spark.driver.extraJavaOptions": options}


def run_spark_sql(
    session: Any,
    warehouse: Path,
    queries: list[str],
    runs: int,
    min_seconds: float = 8.0,
    profile: bool = False,
    warmups: int = 2,
    fixed_heap: bool = True,
    page_size: str | None = None,
    session_warmups: int = 1,
    lakeskip_conf: dict[str, str] | None = None,
    pairs: int = 1,
) -> dict[str, Any]:
    """Both sides through ``bin/spark-sql``: two CLI processes alive side by side (started
    after the PySpark session and its JVM stopped), taking turns run by run, each run started
    with both CLIs quiet (:func:`_settle`); per query ``warmups`` untimed runs a side (the
    first checks the answers). ``fixed_heap``: both JVMs run with :data:`FIXED_HEAP` (see
    :data:`DRIVER_MEMORY`). ``session_warmups``: before the first query, both CLIs run every
    query that many times, untimed, so the session's first queries are measured warm too (a
    fresh JVM still JIT-compiles 800-1,900 methods a run of its first query, on both sides, in
    its 6th run: its medians fall run by run). ``pairs`` (``--pairs``): all of it that many
    times, each time with two fresh CLIs, combined as PySpark's pairs (:func:`_combine_pairs`):
    one pair of CLIs has its own whole-JVM speed difference of a few %, on every query."""
    globs = table_globs(session.catalog)
    _stop_pyspark_jvm(session)
    java = FIXED_HEAP if fixed_heap else ""
    lake_conf, plain_conf = cli_confs(warehouse, page_size, java, lakeskip_conf)
    return _run_pairs(
        pairs,
        "two fresh spark-sql CLIs",
        queries,
        lambda: _one_cli_pair(
            globs,
            queries,
            runs,
            min_seconds,
            profile,
            warmups,
            session_warmups,
            lake_conf,
            plain_conf,
        ),
    )


def _one_cli_pair(
    globs: dict[str, str],
    queries: list[str],
    runs: int,
    min_seconds: float,
    profile: bool,
    warmups: int,
    session_warmups: int,
    lake_conf: dict[str, str],
    plain_conf: dict[str, str],
) -> dict[str, Any]:
    """One pair of ``spark-sql`` CLIs for :func:`run_spark_sql`, with these settings (lakeskip's
    CLI also gets this pair's callback trace path)."""
    sides = {
        "lakeskip": {t: f"lakeskip.tpch.{t}" for t in TABLES},
        "plain": {t: f"plain_{t}" for t in TABLES},
    }
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        clis: dict[str, SparkSql] = {}
        # the callbacks lakeskip's JVM makes, one line each (Bridge.TRACE_PROPERTY)
        trace = CallbackTrace(Path(tmp) / "callbacks.tsv")
        options = (
            f"{lake_conf['spark.driver.extraJavaOptions']} -Dlakeskip.callback.trace={trace.path}"
        )
        lake_conf = {**lake_conf, "spark.driver.extraJavaOptions": options}
        for side, conf in (("lakeskip", lake_conf), ("plain", plain_conf)):
            cwd = Path(tmp) / side
            (cwd / "events").mkdir(parents=True)
            if profile:
                conf = {**conf, **spark_sql_events.conf(cwd / "events")}
            clis[side] = stack.enter_context(
                SparkSql(frontend_command("spark-sql", conf), cwd, env, f"spark-sql {side}")
            )
        pids = [cli.pid for cli in clis.values()]
        # both CLIs run the same statements before the first query: each view reads a
        # footer (a Spark job), which warms a JVM up; only plain's queries use them
        for t, g in globs.items():
            for cli in clis.values():
                cli.run(f"CREATE TEMPORARY VIEW plain_{t} USING parquet OPTIONS (path '{g}')")
        trace.since_last()
        for r in range(session_warmups):
            for n, q in enumerate(queries):
                order = list(sides) if (n + r) % 2 == 0 else list(reversed(sides))
                for side in order:
                    clis[side].run(QUERIES[q].format(**sides[side]))
        if session_warmups:
            print(
                f"  session warm-up: every query {session_warmups}x a side, untimed; "
                f"lakeskip's callbacks {_calls_text(trace.since_last())}",
                flush=True,
            )
        for n, q in enumerate(queries):
            sql = {side: QUERIES[q].format(**names) for side, names in sides.items()}
            # the side that runs first alternates from query to query, then rounds go
            # A B, B A, A B, ... (as the PySpark frontend's)
            first = list(sides) if n % 2 == 0 else list(reversed(sides))
            load0 = os.getloadavg()[0]
            trace.since_last()
            answers = {side: sorted(clis[side].run(sql[side])[0]) for side in first}
            if answers["lakeskip"] != answers["plain"]:
                raise SystemExit(f"{q}: different answers through spark-sql")
            first_calls = trace.since_last()
            warm: dict[str, list[float]] = {s: [] for s in sides}
            for _ in range(warmups - 1):
                for side in first:
                    _settle(pids)
                    warm[side].append(clis[side].run(sql[side])[1])
            warm_calls = trace.since_last()
            times: dict[str, list[float]] = {s: [] for s in sides}
            cpu: dict[str, list[float]] = {s: [] for s in sides}
            # lakeskip's CPU a run split: its JVM, its brain (the JVM's child processes)
            split: dict[str, list[float]] = {"jvm": [], "brain": []}
            # the CPU the side not running used during the other's run (noise)
            idle: dict[str, list[float]] = {s: [] for s in sides}
            run_calls: dict[str, list[float]] = {}
            settled: list[float] = []
            # each side's JVM CPU a run by kind of thread (tasks, jit, gc, the rest)
            kinds: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
            # each side's collections a run (counts, pause seconds, old gen growth)
            gcs: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
            # a short query gets more rounds, until each side's runs add up to min_seconds
            # (at most 4 x runs)
            i = 0
            while i < runs or (i < 4 * runs and min(sum(t) for t in times.values()) < min_seconds):
                for side in first if i % 2 == 0 else list(reversed(first)):
                    settled.append(_settle(pids))
                    c0 = {s: process_cpu_seconds(clis[s].pid) for s in sides}
                    k0 = ThreadCpu(clis[side].pid)
                    g0 = gc_counters(clis[side].pid)
                    secs = clis[side].run(sql[side])[1]
                    c1 = {s: process_cpu_seconds(clis[s].pid) for s in sides}
                    # what the run left behind (JIT, GC) is its own side's: up to quiet
                    settled.append(_settle(pids))
                    c2 = process_cpu_seconds(clis[side].pid)
                    k1 = ThreadCpu(clis[side].pid)
                    _append(gcs[side], gc_delta(g0, gc_counters(clis[side].pid)))
                    if k0 and k1:
                        d = thread_cpu_seconds(k0, k1)
                        del d["all"]
                        _append(kinds[side], d)
                    jvm = clis[side].pid
                    mine = {p: c2.get(p, 0.0) - c0[side].get(p, 0.0) for p in c2}
                    cpu[side].append(sum(mine.values()))
                    if side == "lakeskip":
                        split["jvm"].append(mine.get(jvm, 0.0))
                        split["brain"].append(sum(v for p, v in mine.items() if p != jvm))
                        _add_calls(run_calls, trace.since_last())
                    other = next(s for s in sides if s != side)
                    idle[other].append(sum(c1[other].values()) - sum(c0[other].values()))
                    times[side].append(secs)
                i += 1
            out[q] = _summary(q, times, [], len(answers["plain"]))
            out[q]["spread"] = _spread(times, cpu)
            out[q]["cpu"] = cpu
            out[q]["lakeskip_cpu_split"] = {k: statistics.median(v) for k, v in split.items()}
            out[q]["idle_cpu"] = {s: statistics.median(v) for s, v in idle.items()}
            out[q]["jvm_threads_cpu"] = {
                s: {k: statistics.median(v) for k, v in ks.items()} for s, ks in kinds.items()
            }
            out[q]["gc"] = {
                s: {k: statistics.median(v) for k, v in ks.items()} for s, ks in gcs.items()
            }
            out[q]["warmups"] = warm
            out[q]["callbacks"] = {"first": first_calls, "warmups": warm_calls, "runs": run_calls}
            out[q]["settle_s"] = statistics.median(settled)
            out[q]["load"] = [load0, os.getloadavg()[0]]
            heap = {s: heap_committed_mib(clis[s].pid) for s in sides}
            out[q]["heap_committed_mib"] = heap
            _settle(pids)
            _print_spread(out[q]["spread"], i)
            sp = out[q]["lakeskip_cpu_split"]
            print(
                f"      lakeskip CPU a run: JVM {sp['jvm']:.2f} s, brain {sp['brain']:.2f} s; "
                f"idle side's CPU during the other's run: plain "
                f"{out[q]['idle_cpu']['plain']:.2f} s, lakeskip "
                f"{out[q]['idle_cpu']['lakeskip']:.2f} s; settle {out[q]['settle_s']:.2f} s; "
                f"callbacks: first run {_calls_text(first_calls)}; other warm-ups "
                f"{_calls_text(warm_calls)}; {i} timed runs {_calls_text(run_calls)}; "
                f"load {load0:.1f} -> {out[q]['load'][1]:.1f}",
                flush=True,
            )
            print(
                f"      {_threads_text(out[q]['jvm_threads_cpu'])}; {_gc_text(out[q]['gc'])}; "
                "heap committed after the runs: "
                + ", ".join(
                    f"{s} {'?' if mib is None else f'{mib:.0f} MiB'}" for s, mib in heap.items()
                ),
                flush=True,
            )
        for cli in clis.values():
            cli.close()
        if profile:
            spark_sql_events.report(
                {side: Path(tmp) / side / "events" for side in sides},
                {q: {s: QUERIES[q].format(**names) for s, names in sides.items()} for q in queries},
                out,
                operators,
                skip=warmups + session_warmups,
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--source", default=None, help="default .tpch-cache/sf<sf>")
    ap.add_argument("--files", type=int, default=12, help="lineitem data files")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warehouse", default=None, help="default /tmp/lakeskip-bench-tpch-sf<sf>")
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--frontend", choices=("pyspark", "spark-sql"), default="pyspark")
    ap.add_argument("--reload", action="store_true", help="load the tables again")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="PySpark: one more run per side with Spark's phases, callbacks, jobs and plans; "
        "spark-sql: Spark's event logs of every run (time before execution, jobs, task CPU, "
        "the final plans' operators)",
    )
    ap.add_argument(
        "--min-seconds",
        type=float,
        default=8.0,
        help="a query gets rounds beyond --runs (up to 4x) until each side's runs "
        "add up to this many seconds",
    )
    ap.add_argument(
        "--warmups",
        type=int,
        default=2,
        help="untimed runs a side per query before the timed ones (the first checks the answers)",
    )
    ap.add_argument(
        "--gc",
        action="store_true",
        help="PySpark: a full JVM (System.gc) and Python collection before every timed run",
    )
    ap.add_argument(
        "--settle",
        action="store_true",
        help="PySpark: every timed run starts with the process quiet and counts its CPU until "
        "quiet again (the JIT and GC it leaves behind), as through spark-sql",
    )
    ap.add_argument(
        "--fixed-heap",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=f"every JVM the bench starts (PySpark's, both spark-sql CLIs) starts with its "
        f"whole heap and a fixed initiating heap occupancy ({FIXED_HEAP}), so G1's heap sizing "
        "and adaptive IHOP, which differ from JVM to JVM and drift with each run's broadcasts, "
        "do not decide how often a run collects",
    )
    ap.add_argument(
        "--session-warmups",
        type=int,
        default=1,
        help="spark-sql: before the first query both CLIs run every query this many times, "
        "untimed (0: the session's first query is measured while both JVMs still compile)",
    )
    ap.add_argument(
        "--session-first",
        action="store_true",
        help="PySpark: every query's first (answer-checking, planning-recording) runs before "
        "any query's timed runs: a whole-session warm-up whose plans are still cold",
    )
    ap.add_argument(
        "--plain-v2",
        action="store_true",
        help="PySpark: plain Spark reads its views through its own V2 ParquetScan "
        "(useV1SourceList without parquet) instead of V1: tells Spark's V2 path from lakeskip's",
    )
    ap.add_argument(
        "--page-size",
        default=None,
        help="spark.buffer.pageSize of every JVM (both sides), e.g. 4m; default Spark's (64m "
        "for a 3g driver on 2 cores: each broadcast hash relation holds one 64 MB page on the "
        "driver until G1 marks it dead, which keeps G1 marking all the time)",
    )
    ap.add_argument(
        "--sessions",
        choices=("one", "two"),
        default="one",
        help="PySpark: both sides in one session (one JVM: a run pays the GC and JIT that fall "
        "into it, whichever side's) or each side in a PySpark session of its own, taking turns "
        "as the two spark-sql CLIs do",
    )
    ap.add_argument(
        "--lakeskip-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="spark-sql, or --sessions two: a Spark setting of lakeskip's session or CLI only "
        "(repeatable), e.g. spark.lakeskip.runtime-filter.enabled=false to tell what runtime filtering costs",
    )
    ap.add_argument(
        "--aa",
        action="store_true",
        help="--sessions two: both sides plain Spark (an A/A run): the ratios this method "
        "measures between two identical sides, its noise floor for the per-query gate",
    )
    ap.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="spark-sql or PySpark's --sessions two: this many pairs of fresh JVMs (worker "
        "sessions or CLIs), one after the other; a query's ratio is the geometric mean of its "
        "pairs' ratios",
    )
    ap.add_argument("--worker", choices=("lakeskip", "plain"), help=argparse.SUPPRESS)
    ap.add_argument("--worker-conf", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        extra = json.loads(args.worker_conf)
        worker(args.worker, Path(args.warehouse), args.page_size, args.fixed_heap, extra)
        return
    lakeskip_conf = dict(kv.split("=", 1) for kv in args.lakeskip_conf)
    if lakeskip_conf and args.frontend == "pyspark" and args.sessions != "two":
        raise SystemExit("--lakeskip-conf: spark-sql, or PySpark with --sessions two")
    if args.pairs < 1 or (args.pairs > 1 and args.frontend == "pyspark" and args.sessions != "two"):
        raise SystemExit(
            "--pairs: a count >= 1, above 1 with spark-sql or PySpark's --sessions two"
        )
    if args.aa and (args.sessions != "two" or args.frontend != "pyspark"):
        raise SystemExit("--aa: PySpark with --sessions two only")
    sf = f"{args.sf:g}"
    source = Path(args.source or Path(__file__).parent.parent / ".tpch-cache" / f"sf{sf}")
    warehouse = Path(args.warehouse or f"/tmp/lakeskip-bench-tpch-sf{sf}")
    queries = [q for q in args.queries.split(",") if q]
    unknown = [q for q in queries if q not in QUERIES]
    if unknown:
        raise SystemExit(f"unknown queries: {unknown}")
    if args.plain_v2 and args.frontend != "pyspark":
        raise SystemExit("--plain-v2: PySpark only")
    generate(args.sf, source)
    warehouse.mkdir(parents=True, exist_ok=True)
    session = lakeskip.connect(
        str(warehouse), master="local[2]", conf=pyspark_conf(args.page_size, args.fixed_heap)
    )
    load(session, source, args.files, warehouse, args.reload)
    load_avg = [os.getloadavg()]
    if args.frontend == "pyspark" and args.sessions == "two":
        if args.plain_v2 or args.profile or args.settle or args.session_first:
            raise SystemExit(
                "--sessions two: every run settles and every query's first runs come first; "
                "--plain-v2 and --profile are --sessions one's"
            )
        results = run_pyspark_sessions(
            session,
            warehouse,
            queries,
            args.runs,
            args.min_seconds,
            args.warmups,
            args.gc,
            args.fixed_heap,
            args.page_size,
            lakeskip_conf,
            args.aa,
            args.pairs,
        )
    elif args.frontend == "pyspark":
        results = run_pyspark(
            session,
            queries,
            args.runs,
            args.profile,
            args.min_seconds,
            args.warmups,
            args.gc,
            args.settle,
            args.plain_v2,
            args.session_first,
        )
        session.spark.stop()
    else:
        results = run_spark_sql(
            session,
            warehouse,
            queries,
            args.runs,
            args.min_seconds,
            args.profile,
            args.warmups,
            args.fixed_heap,
            args.page_size,
            args.session_warmups,
            lakeskip_conf,
            args.pairs,
        )
    load_avg.append(os.getloadavg())
    mean, below = _gate(results)
    planning = planning_summary(results)
    slow = sorted(
        {q for q, r in results.items() for s in r["scans"] if s["planning_ms"] > PLANNING_MS}
    )
    print(
        f"{args.frontend}{' A/A (both sides plain Spark)' if args.aa else ''}, SF {sf}, "
        f"median of {args.runs}"
        + (f", {args.pairs} JVM pairs (geometric mean of pair ratios)" if args.pairs > 1 else "")
        + ": geometric mean "
        f"{mean:.2f}x; below {GOAL}x: {below or 'none'}; "
        f"scans over {PLANNING_MS:.0f} ms planning: {slow or 'none'}; "
        f"load average {load_avg[0][0]:.1f} -> {load_avg[1][0]:.1f}"
    )
    if planning:
        print(planning["text"])
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    path = out / f"tpch-queries-{args.frontend}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(
        json.dumps(
            {
                "sf": args.sf,
                "source": str(source),
                "files": table_files(args.files),
                "indexes": INDEXES,
                "frontend": args.frontend,
                "runs": args.runs,
                "plain_v2": args.plain_v2,
                "page_size": args.page_size,
                # spark-sql only (PySpark's first runs give the planning figures: cold)
                "session_warmups": args.session_warmups if args.frontend == "spark-sql" else None,
                "fixed_heap": args.fixed_heap,
                "session_first": args.session_first if args.frontend == "pyspark" else None,
                "sessions": args.sessions if args.frontend == "pyspark" else None,
                "aa": args.aa,
                "pairs": args.pairs,
                "lakeskip_conf": lakeskip_conf,
                "gc": args.gc,
                "queries": results,
                "load": load_avg,
                "planning": planning,
            },
            indent=2,
            default=str,
        )
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
