"""Primary-key writes in bounded memory through Spark: a tiny ``write-buffer-size`` spills
sorted runs in the write tasks, and the table holds what the unbounded write and a plain
Spark "latest row per key" give."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from lakeskip.spark.write.writer import last_write_timings


def test_tiny_write_buffer_spills_and_matches_spark(session: Any) -> None:
    spark = session.spark
    name = session.catalog_name
    statements = [  # (first key, last key, step, tag): keys unique within a statement
        (0, 6000, 1, "a"),
        (3000, 9000, 2, "b"),
        (0, 9000, 7, "c"),
    ]
    for table, props in (
        ("tiny", ", 'write-buffer-size' = '16 kb', 'local-sort.max-num-file-handles' = '2'"),
        ("big", ""),
    ):
        spark.sql(
            f"CREATE TABLE {name}.default.{table} (id INT, v STRING, n BIGINT, "
            f"PRIMARY KEY (id) NOT ENFORCED) TBLPROPERTIES ('bucket' = '2'{props})"
        )
        for lo, hi, step, tag in statements:
            session.sql(
                f"INSERT INTO {table} SELECT CAST(id AS INT), "
                f"concat('{tag}', CAST(id AS STRING)), id * 3 "
                f"FROM range({lo}, {hi}, {step})"
            )
            timings = last_write_timings()
            assert timings is not None
            if table == "tiny":
                assert timings.spilled > 0  # the tasks wrote sorted runs to local disk
            else:
                assert timings.spilled == 0
    parts = [
        spark.range(lo, hi, step).select(
            F.col("id").cast("int").alias("id"),
            F.concat(F.lit(tag), F.col("id").cast("string")).alias("v"),
            (F.col("id") * 3).alias("n"),
            F.lit(i).alias("stmt"),
        )
        for i, (lo, hi, step, tag) in enumerate(statements)
    ]
    union = parts[0].unionByName(parts[1]).unionByName(parts[2])
    newest = Window.partitionBy("id").orderBy(F.col("stmt").desc())
    oracle = union.withColumn("r", F.row_number().over(newest)).where("r = 1").drop("r", "stmt")
    want = sorted(tuple(r) for r in oracle.collect())
    tiny = sorted(tuple(r) for r in spark.table(f"{name}.default.tiny").collect())
    big = sorted(tuple(r) for r in spark.table(f"{name}.default.big").collect())
    assert tiny == want
    assert big == want
