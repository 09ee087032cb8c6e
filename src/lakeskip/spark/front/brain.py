"""The Python brain a JVM starts for itself: ``python -m lakeskip.spark.front.brain``.

``spark-sql``, the Thrift JDBC server, a Spark Connect server or a Java/Scala application
has no Python driver to answer the lakeskip catalog's callbacks. The first callback there
starts Spark's own py4j server and this module (``Brain.java``), with the gateway's port and
secret in ``PYSPARK_GATEWAY_PORT`` / ``PYSPARK_GATEWAY_SECRET``. It connects back, wraps the
JVM's running SparkContext and SparkSession as PySpark objects (as notebook servers do),
registers the same :class:`~lakeskip.spark.bridge.catalog_service.CatalogService` a PySpark driver
registers in-process, and then only serves callbacks: writes, DML and procedures run as
PySpark jobs on the JVM's own SparkContext, in the calling session.

Two rules from the measured probe (``front-ends.md``): register *before* any Spark work
(the JVM thread that started the brain may hold Spark's catalog lock while it waits), and
exit with the JVM: this process watches its stdin (a pipe from the JVM: EOF when the JVM is
gone, even after ``kill -9``) and its parent pid.
"""

from __future__ import annotations

import os
import sys
import threading
import time

__all__ = ["main"]

_PARENT_POLL_SECONDS = 1.0


def _exit_with_parent(parent: int) -> None:
    """End this process when the JVM that started it is gone."""

    def on_eof() -> None:
        try:
            while sys.stdin.buffer.read(65536):
                pass
        except (OSError, ValueError):
            pass
        os._exit(0)

    def on_parent() -> None:
        first = os.getppid()
        while True:
            time.sleep(_PARENT_POLL_SECONDS)
            if os.getppid() != first:
                os._exit(0)
            if parent > 0:
                try:
                    os.kill(parent, 0)
                except ProcessLookupError:
                    os._exit(0)
                except PermissionError:
                    pass

    threading.Thread(target=on_eof, name="lakeskip-brain-stdin", daemon=True).start()
    threading.Thread(target=on_parent, name="lakeskip-brain-parent", daemon=True).start()


def main() -> int:
    token = os.environ.pop("LAKESKIP_BRAIN_TOKEN", "")
    if not token or "PYSPARK_GATEWAY_PORT" not in os.environ:
        print(
            "lakeskip.spark.front.brain is started by the lakeskip catalog inside a Spark JVM; "
            "it is not a command to run by hand",
            file=sys.stderr,
        )
        return 2
    _exit_with_parent(int(os.environ.get("LAKESKIP_BRAIN_PARENT", "0") or 0))
    try:
        _serve(token)
    except BaseException as e:  # the JVM names this log; its last line says why
        import traceback

        traceback.print_exc()
        first = (str(e).strip().splitlines() or [""])[0]
        print(f"lakeskip brain failed: {type(e).__name__}: {first}", flush=True)
        os._exit(1)  # daemon threads hold stdin: no interpreter shutdown
    return 0


def _serve(token: str) -> None:
    started = time.perf_counter()

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import ensure_callback_server_started, launch_gateway
    from pyspark.sql import SparkSession

    from lakeskip.spark.bridge.catalog_service import CatalogService
    from lakeskip.spark.front.statements import run_catalog_dml
    from lakeskip.spark.jvm.protocol import PROTOCOL

    gateway = launch_gateway()  # type: ignore[no-untyped-call]
    jvm = gateway.jvm
    brain = jvm.lakeskip.jvm.bridge.Brain
    jsc = jvm.org.apache.spark.api.java.JavaSparkContext.fromSparkContext(brain.sparkContext())
    sc = SparkContext(conf=SparkConf(_jvm=jvm, _jconf=jsc.getConf()), gateway=gateway, jsc=jsc)
    spark = SparkSession(sc, brain.session())
    service = CatalogService(spark)
    service.dml_runner = run_catalog_dml
    # the callback server must listen before Java holds a handler to call
    ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    protocol = int(brain.register(service, token))
    print(
        f"lakeskip brain pid {os.getpid()} registered in "
        f"{time.perf_counter() - started:.2f} s (protocol {protocol}, Python {PROTOCOL})",
        flush=True,
    )
    if protocol != PROTOCOL:
        print("lakeskip: catalog jar and Python disagree on the protocol", flush=True)
    threading.Event().wait()  # serve callbacks until the JVM goes away


if __name__ == "__main__":
    sys.exit(main())
