"""Building (or adopting) the SparkSession lakeskip runs on."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_CONF",
    "build_spark_session",
    "fix_worker_python",
    "quiet_spark_logging",
    "worker_python_problem",
]

#: Defaults for a local session: UTC session time (lakeskip interprets timestamp literals in the
#: session zone), Arrow on, no UI, loopback networking, and our Python for the workers.
DEFAULT_CONF: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    # lakeskip hands Spark explicit file lists (with sizes known from the manifest); above
    # this many paths Spark would run a distributed listing job for every query
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "4096",
}


_DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def quiet_spark_logging(spark: SparkSession) -> None:
    """Keep Spark's console quiet: errors reach the user as our one-line messages."""
    spark.sparkContext.setLogLevel("ERROR")
    # pyspark 4 logs every failed spark.sql() as a JSON blob on stderr
    logging.getLogger("SQLQueryContextLogger").disabled = True


def build_spark_session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "lakeskip",
) -> SparkSession:
    """Return the active SparkSession, or build a local one with lakeskip's defaults.

    Args:
        master: Spark master URL; ``local[*]`` when building a new session.
        conf: extra Spark configuration, applied over :data:`DEFAULT_CONF`.
        app_name: the application name.
    """
    active = SparkSession.getActiveSession()
    if active is not None and master is None and not conf:
        return active
    # Python workers must run this interpreter (the one that has lakeskip and pyarrow).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master or "local[*]")
    settings = {**DEFAULT_CONF, **(conf or {})}
    java_options = settings.get(_DRIVER_JAVA_OPTIONS, "")
    if "log4j2.configurationFile" not in java_options:  # no banner, no WARN lines at start
        log4j = Path(__file__).with_name("log4j2.properties").as_uri()
        settings[_DRIVER_JAVA_OPTIONS] = f"{java_options} -Dlog4j2.configurationFile={log4j}"
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    quiet_spark_logging(spark)
    return spark


_TASK_MODULE = "lakeskip.spark.write.writer"


def worker_python_problem(spark: SparkSession) -> str | None:
    """Why this session's Python workers cannot import lakeskip, or ``None`` if they can.

    Only local masters are checked (their workers run on this machine): the interpreter
    PySpark will start for workers is asked to import the module write tasks run from
    (lakeskip with its dependencies). On a cluster the
    executors' Python is out of reach; see the README ("Running on a cluster").
    """
    found = _worker_python_fault(spark)
    if found is None:
        return None
    return (
        f"{_cannot_import(*found)}; every write will fail. Set "
        f"PYSPARK_PYTHON={sys.executable} (or the Spark conf spark.pyspark.python) before the "
        "SparkSession is created"
    )


def fix_worker_python(spark: SparkSession) -> str | None:
    """On a local master whose Python workers cannot import lakeskip (the user's script
    runs a venv's interpreter without activating it, so workers start ``python3`` from the
    ``PATH``), point the session's workers at this interpreter, which can: every write would
    fail otherwise. Returns the one-line warning to give, or ``None`` when nothing was wrong.

    PySpark hands ``SparkContext.pythonExec`` to every Python function it ships (UDFs,
    ``mapInArrow``), so changing it takes effect for the functions built from now on.
    """
    found = _worker_python_fault(spark)
    if found is None:
        return None
    spark.sparkContext.pythonExec = sys.executable
    return (
        f"{_cannot_import(*found)}; lakeskip set this local session's Python workers to "
        f"{sys.executable} (set PYSPARK_PYTHON to it before the SparkSession is created to "
        "silence this)"
    )


def _worker_python_fault(spark: SparkSession) -> tuple[str, str] | None:
    """The interpreter a local session's workers run and why it cannot import lakeskip, or
    ``None`` (it can, or the master is not local)."""
    sc = spark.sparkContext
    if not str(sc.master).startswith("local"):
        return None
    worker = str(getattr(sc, "pythonExec", None) or os.environ.get("PYSPARK_PYTHON") or "python3")
    if os.path.realpath(shutil.which(worker) or worker) == os.path.realpath(sys.executable) and (
        os.path.dirname(shutil.which(worker) or worker) == os.path.dirname(sys.executable)
    ):
        return None
    try:
        probe = subprocess.run(
            # what write tasks import (lakeskip and its dependencies: pyarrow, numpy,
            # pyroaring, ...), not just the package: a worker that finds lakeskip's sources
            # but lacks a dependency fails every write just the same
            [worker, "-c", f"import {_TASK_MODULE}"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return worker, f"cannot run it ({e})"
    if probe.returncode == 0:
        return None
    lines = probe.stderr.decode(errors="replace").strip().splitlines()
    return worker, lines[-1] if lines else f"exit code {probe.returncode}"


def _cannot_import(worker: str, why: str) -> str:
    return f"Spark's Python workers run {worker!r}, which cannot import lakeskip ({why})"
