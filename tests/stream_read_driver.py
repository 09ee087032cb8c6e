"""A Spark driver for the kill -9 test of streaming reads
(``tests/spark/stream/test_stream_read_kill.py``): one streaming query per table pair, each
``spark.readStream.table("lakeskip.db.<src>")`` into ``lakeskip.db.<out>``, checkpointed under
``<checkpoints>/<src>``, while another application commits to the sources.

    python tests/stream_read_driver.py <warehouse> <checkpoints> run|drain <src>:<out>...

``run``: a processing-time trigger, until the process is killed. ``drain``: ``availableNow``,
then exit 0 once every query has delivered the sources' latest snapshots.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    warehouse, checkpoints, mode, *pairs = sys.argv[1:]
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import lakeskip
    from lakeskip.spark.front.builder import build_spark_session

    spark = build_spark_session(
        master="local[2]",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.driver.memory": "1g",
            "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
            "spark.python.worker.reuse": "true",
        },
    )
    lakeskip.connect(warehouse, spark=spark)
    queries = []
    for pair in pairs:
        src, out = pair.split(":")
        writer = spark.readStream.table(f"lakeskip.db.{src}").writeStream.option(
            "checkpointLocation", f"{checkpoints}/{src}"
        )
        if mode == "drain":
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime="100 milliseconds")
        queries.append(writer.toTable(f"lakeskip.db.{out}"))
    if mode == "drain":
        for q in queries:
            q.awaitTermination()
        print("drained", flush=True)
        spark.stop()
    else:
        spark.streams.awaitAnyTermination()
        sys.exit(1)  # a query failed: the test reads its exit code


if __name__ == "__main__":
    main()
