"""CI smoke test of a plain ``pip install .`` (no extras): create, INSERT, SELECT with pruning.

Run with the fresh environment's interpreter from outside the source tree, so the installed
package (not ``src/``) is imported and a runtime dependency missing from ``pyproject.toml``
fails here.
"""

from __future__ import annotations

import sys
import tempfile

import lakeskip
import lakeskip.spark


def main() -> int:
    warehouse = tempfile.mkdtemp(prefix="lakeskip-smoke-")
    session = lakeskip.connect(warehouse, master="local[1]")
    session.sql(
        "CREATE TABLE t (id BIGINT, user_id STRING) "
        "WITH ('file-index.bloom-filter.columns' = 'user_id')"
    )
    for f in range(3):
        values = ", ".join(f"({f * 10 + i}, 'u{f}_{i}')" for i in range(10))
        session.sql(f"INSERT INTO t VALUES {values}")
    rows = session.sql("SELECT id FROM t WHERE user_id = 'u1_3'").collect()
    report = session.last_reports[0]
    print(f"smoke: rows {[r[0] for r in rows]}; {report.summary()}")
    if [r[0] for r in rows] != [13]:
        print("smoke: wrong rows", file=sys.stderr)
        return 1
    if report.kept_files != 1 or report.total_files != 3:
        print("smoke: expected 1 of 3 files kept", file=sys.stderr)
        return 1
    session.spark.stop()
    return _own_session(tempfile.mkdtemp(prefix="lakeskip-smoke-own-"))


def _own_session(warehouse: str) -> int:
    """As a user would: their own SparkSession, then plain spark.sql / DataFrame API / writeTo
    on the lakeskip catalog (checks the installed package ships and builds the Java catalog)."""
    import os

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.master("local[1]").appName("smoke-own").getOrCreate()
    lakeskip.connect(warehouse, spark=spark)
    spark.sql(
        "CREATE TABLE lakeskip.default.e (id BIGINT, k STRING) TBLPROPERTIES "
        "('file-index.bloom-filter.columns' = 'k')"
    )
    for f in range(3):
        spark.range(f * 10, f * 10 + 10).selectExpr("id", "concat('k', id) AS k").writeTo(
            "lakeskip.default.e"
        ).append()
    with lakeskip.spark.pruning_reports(spark) as reports:
        got = [r[0] for r in spark.table("lakeskip.default.e").filter("k = 'k13'").collect()]
    print(f"smoke (own session): rows {got}; {reports[0].summary() if reports else 'no report'}")
    if got != [13] or not reports or reports[0].kept_files != 1:
        print("smoke: own session: wrong rows or no pruning", file=sys.stderr)
        return 1
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
