"""A Spark driver for the kill -9 tests of streaming writes (``tests/spark/write/test_streaming_kill.py``):
one streaming query per table, each a JSON file source read one file per micro-batch into
``lakeskip.db.<table>``, checkpointed under ``<checkpoints>/<table>``.

    python tests/stream_driver.py <warehouse> <inputs> <checkpoints> run|drain <table>...

``run``: a processing-time trigger, until the process is killed. ``drain``: ``availableNow``,
then exit 0 once every query has read all its files.
"""

from __future__ import annotations

import os
import sys

SCHEMAS = {
    "ev": "id BIGINT, cat STRING, v DOUBLE",
    "pk": "id BIGINT, v STRING, n INT",
}


def main() -> None:
    warehouse, inputs, checkpoints, mode, *tables = sys.argv[1:]
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
    for name in tables:
        source = (
            spark.readStream.schema(SCHEMAS[name])
            .option("maxFilesPerTrigger", 1)
            .json(f"{inputs}/{name}")
        )
        writer = source.writeStream.option("checkpointLocation", f"{checkpoints}/{name}")
        if mode == "drain":
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime="100 milliseconds")
        queries.append(writer.toTable(f"lakeskip.db.{name}"))
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
