"""TPC-H queries through lakeskip's catalog against plain Spark over the very same files.

Where no file can be skipped, lakeskip should cost nothing: this prints, per query, the
median wall time through ``lakeskip.tpch.*`` (catalog, planner, indexes) and through
``spark.read.parquet`` of the same data files (no catalog), their ratio (plain / lakeskip:
>= 0.95 is the goal), the files kept and the planning time of each lakeskip scan.

    tpchgen-cli parquet -s 0.3 --output-dir=/tmp/tpch      # pip install tpchgen-cli
    .venv/bin/python bench/tpch_queries.py --source /tmp/tpch --files 12 --runs 5

``lineitem`` gets the indexes a user would try on it (bloom on ``l_orderkey``, bitmap on
``l_shipmode`` / ``l_returnflag``, range-bitmap on ``l_shipdate`` / ``l_quantity`` /
``l_discount``) in ``.index`` files. Queries run interleaved (lakeskip, plain, plain,
lakeskip, ...) after a warm-up that checks the answers are equal. Writes
``bench/results/tpch-queries-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import lakeskip
from lakeskip.spark import pruning_reports

INDEXES = {
    "file-index.bloom-filter.columns": "l_orderkey",
    "file-index.bitmap.columns": "l_shipmode,l_returnflag",
    "file-index.range-bitmap.columns": "l_shipdate,l_quantity,l_discount",
    "file-index.in-manifest-threshold": "1 b",
}

# Written from the TPC-H specification's query definitions (default substitution values);
# {lineitem}, {part}, {orders} name the tables of one side.
QUERIES = {
    "q1": """SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice),
  sum(l_extendedprice * (1 - l_discount)), sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)),
  avg(l_quantity), avg(l_extendedprice), avg(l_discount), count(*)
FROM {lineitem} WHERE l_shipdate <= date '1998-12-01' - interval '90' day
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus""",
    "q6": """SELECT sum(l_extendedprice * l_discount) FROM {lineitem}
WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01'
  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24""",
    "air": """SELECT count(*), sum(l_extendedprice) FROM {lineitem}
WHERE l_shipmode = 'AIR' AND l_quantity < 2""",
    "q12": """SELECT l_shipmode,
  sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END),
  sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END)
FROM {orders}, {lineitem}
WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP')
  AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate
  AND l_receiptdate >= date '1994-01-01' AND l_receiptdate < date '1995-01-01'
GROUP BY l_shipmode ORDER BY l_shipmode""",
    "q14": """SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%'
  THEN l_extendedprice * (1 - l_discount) ELSE 0 END) / sum(l_extendedprice * (1 - l_discount))
FROM {lineitem}, {part}
WHERE l_partkey = p_partkey AND l_shipdate >= date '1995-09-01'
  AND l_shipdate < date '1995-10-01'""",
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
}
TABLES = ("lineitem", "orders", "part")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default="/tmp/tpch")
    ap.add_argument("--files", type=int, default=12, help="lineitem data files")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-tpch-queries")
    ap.add_argument("--queries", default=",".join(QUERIES))
    args = ap.parse_args()
    shutil.rmtree(args.warehouse, ignore_errors=True)
    session = lakeskip.connect(args.warehouse, conf={"spark.driver.memory": "3g"})
    spark = session.spark
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.tpch")
    for name in TABLES:
        props = (
            ", ".join(f"'{k}' = '{v}'" for k, v in INDEXES.items()) if name == "lineitem" else ""
        )
        n = args.files if name == "lineitem" else 1
        src = f"{args.source}/{name}.parquet"
        spark.sql(
            f"CREATE TABLE lakeskip.tpch.{name} TBLPROPERTIES ('target-file-size' = '2 gb'"
            f"{', ' + props if props else ''}) AS SELECT /*+ REPARTITION({n}) */ * "
            f"FROM parquet.`{src}`"
        )
        files = session.table(f"tpch.{name}").files()
        spark.read.parquet(*files).createOrReplaceTempView(f"plain_{name}")
        print(f"{name}: {len(files)} files")
    sides = {
        "lakeskip": {t: f"lakeskip.tpch.{t}" for t in TABLES},
        "plain": {t: f"plain_{t}" for t in TABLES},
    }
    load = [os.getloadavg()]
    result: dict[str, Any] = {"source": args.source, "files": args.files, "queries": {}}
    for q in args.queries.split(","):
        sql = QUERIES[q]
        answers = {}
        planning: list[float] = []
        kept = ""
        for side, names in sides.items():
            with pruning_reports(spark) as reports:
                answers[side] = spark.sql(sql.format(**names)).collect()
            if side == "lakeskip":
                planning = [r.planning_ms for r in reports]
                kept = ", ".join(f"{r.table} {r.kept_files}/{r.total_files}" for r in reports)
        assert repr(answers["lakeskip"]) == repr(answers["plain"]), f"{q}: different answers"
        times: dict[str, list[float]] = {s: [] for s in sides}
        for i in range(args.runs):
            for side in list(sides) if i % 2 == 0 else list(reversed(sides)):
                t0 = time.perf_counter()
                spark.sql(sql.format(**sides[side])).collect()
                times[side].append(time.perf_counter() - t0)
        mine, plain = statistics.median(times["lakeskip"]), statistics.median(times["plain"])
        result["queries"][q] = {"times": times, "planning_ms": planning, "kept": kept}
        print(
            f"{q}: plain {plain:.2f} s, lakeskip {mine:.2f} s -> {plain / mine:.2f}x "
            f"(median of {args.runs}); first planning ms {[round(p, 1) for p in planning]}; "
            f"kept {kept}"
        )
    load.append(os.getloadavg())
    result["load"] = load
    print(f"load average {load[0]} -> {load[1]}")
    out = Path(__file__).parent / "results" / f"tpch-queries-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2, default=str))
    print(f"wrote {out}")
    spark.stop()


if __name__ == "__main__":
    main()
