"""Paimon's own z-order compaction on a Spark 4.1 session: the child of ``paimon_connector.py``.

    /path/venv41/bin/python bench/paimon_zorder41.py --warehouse DIR --table b.w_paimon_0 \\
        --jars a.jar:b.jar --shuffle-partitions 16 --target-file-size 524288 --order-by a,b \\
        --ranges '[["a", 0, 9999], ...]'

Paimon 2.0.0's Spark connector is compiled against Spark 4.1; on lakeskip's pyspark (>= 4.3)
its session extensions do not load and its ``CompactProcedure`` fails (bench/README.md, "What
blocks a full yardstick"). So ``paimon_connector.py --paimon-spark41-python PY`` runs this
script with PY, a bench-only venv holding pyspark 4.1 (nothing of it is lakeskip's: this file
imports pyspark only). Its own Spark session loads the same jars with
``PaimonSparkSessionExtensions``, sets the table's ``target-file-size`` and the shuffle
partitions as the bench does for lakeskip's compaction, runs
``CALL paimon.sys.compact(..., order_strategy => 'zorder', order_by => ...)`` on the table the
bench wrote, on the same warehouse, and prints one JSON line: the compaction's wall time in
this session (Spark 4.1, its own process: not comparable with lakeskip's), the files after
(``$files``, their sizes) and, per range, Paimon's answer (``count(*), sum(id), sum(v)``) and
the files its scan kept (``resultedTableFiles``), for the parent to check lakeskip's reads
against.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from plan_metrics import df_metric  # type: ignore[import-not-found]
from pyspark.sql import SparkSession

EXTENSIONS = "org.apache.paimon.spark.extensions.PaimonSparkSessionExtensions"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--table", required=True, help="database.table in the paimon catalog")
    ap.add_argument("--jars", required=True, help="os.pathsep-separated, as the parent's")
    ap.add_argument("--shuffle-partitions", type=int, required=True)
    ap.add_argument(
        "--target-file-size", type=int, required=True,
        help="bytes; 0: the table's own (Paimon's default for append tables, 256 MB)",
    )  # fmt: skip
    ap.add_argument("--order-by", default="a,b")
    ap.add_argument("--ranges", default="[]", help="JSON [[column, lo, hi], ...]")
    args = ap.parse_args()
    jars = [j for j in args.jars.split(os.pathsep) if j]
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-paimon-zorder-spark41")
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions", EXTENSIONS)
        .config("spark.sql.catalog.paimon", "org.apache.paimon.spark.SparkCatalog")
        .config("spark.sql.catalog.paimon.warehouse", Path(args.warehouse).resolve().as_uri())
        .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
        # one file per range partition, as for lakeskip's compaction in the parent
        .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
        .config("spark.driver.memory", "3g")
        .config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    table = f"paimon.{args.table}"
    database, name = args.table.split(".")
    files = f"SELECT file_size_in_bytes FROM paimon.{database}.`{name}$files`"
    out: dict[str, Any] = {"spark": spark.version, "table": table}
    out["files_before"] = len(spark.sql(files).collect())
    if args.target_file_size:
        spark.sql(
            f"ALTER TABLE {table} SET TBLPROPERTIES "
            f"('target-file-size' = '{args.target_file_size} b')"
        )
    call = (
        f"CALL paimon.sys.compact(table => '{args.table}', order_strategy => 'zorder', "
        f"order_by => '{args.order_by}')"
    )
    t = time.perf_counter()
    result = spark.sql(call).collect()
    out["compact_s"] = time.perf_counter() - t
    out["call"] = call
    out["result"] = [list(r) for r in result]
    out["file_bytes_after"] = sorted(r[0] for r in spark.sql(files).collect())
    out["files_after"] = len(out["file_bytes_after"])
    out["total"] = list(spark.sql(f"SELECT count(*), sum(id), sum(v) FROM {table}").collect()[0])
    out["ranges"] = []
    for column, lo, hi in json.loads(args.ranges):
        df = spark.sql(
            f"SELECT count(*), sum(id), sum(v) FROM {table} WHERE {column} BETWEEN {lo} AND {hi}"
        )
        answer = list(df.collect()[0])  # collect: the plan whose metrics _kept reads
        out["ranges"].append(
            {
                "range": [column, lo, hi],
                "answer": answer,
                "kept": df_metric(df, "resultedTableFiles"),
            }
        )
    spark.stop()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
