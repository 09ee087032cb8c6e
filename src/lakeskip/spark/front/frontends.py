"""Spark's own front ends with lakeskip configured by conf alone.

``spark-sql``, the Thrift JDBC/ODBC server and the Spark Connect server are JVM programs with
no Python driver: the catalog starts its Python brain itself (``Brain.java``,
:mod:`lakeskip.spark.front.brain`). All they need is the conf of :func:`frontend_conf` -- the
catalog keys of :func:`~lakeskip.spark.front.catalog_setup.catalog_conf`, the Python that has
lakeskip (for the brain and for Spark's Python workers) and a quiet console -- which
``lakeskip spark-conf`` prints as ``--conf`` flags, and :func:`frontend_command` turns into
the command line of each front end (``lakeskip spark-sql | thriftserver | connect-server``).

>>> cmd = frontend_command("thriftserver", {"k": "v"}, port=10001)  # doctest: +SKIP
>>> cmd[-4:]                                                        # doctest: +SKIP
['--hiveconf', 'hive.server2.thrift.port=10001', '--hiveconf', 'hive.server2.thrift.bind.host=127.0.0.1']
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from lakeskip.errors import InvalidArgumentError
from lakeskip.spark.front.catalog_setup import DEFAULT_CATALOG, catalog_conf

__all__ = ["FRONTENDS", "conf_flags", "frontend_command", "frontend_conf", "spark_bin"]

THRIFT_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: the front ends ``frontend_command`` starts
FRONTENDS = ("spark-sql", "thriftserver", "connect-server")


def frontend_conf(
    warehouse: str,
    name: str = DEFAULT_CATALOG,
    *,
    as_session_catalog: bool = False,
    python: str | None = None,
    quiet: bool = True,
) -> dict[str, str]:
    """The Spark conf that makes a JVM-only Spark program serve lakeskip tables.

    Args:
        warehouse: the lakeskip warehouse.
        name: the catalog name.
        as_session_catalog: also install the catalog as ``spark_catalog``.
        python: the Python with lakeskip installed, for the catalog's brain and Spark's
            Python workers (default: this interpreter).
        quiet: Spark's console shows errors only (lakeskip's ``log4j2.properties``).
    """
    python = python or sys.executable
    conf = catalog_conf(warehouse, name, as_session_catalog=as_session_catalog)
    conf[f"spark.sql.catalog.{name}.python"] = python
    if as_session_catalog:
        conf["spark.sql.catalog.spark_catalog.python"] = python
    conf["spark.pyspark.python"] = python
    # the Thrift server runs statements synchronously: its asynchronous path reports a failed
    # statement's message as the stringified Java stack trace of the exception (Hive's
    # GetOperationStatus), 25-95 lines in beeline; synchronously a JDBC client gets the message
    # and SQLSTATE alone, on one line. Only the Thrift server reads this key
    conf["spark.sql.hive.thriftServer.async"] = "false"
    if quiet:
        log4j = Path(__file__).with_name("log4j2.properties").as_uri()
        conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={log4j}"
    return conf


def conf_flags(conf: Mapping[str, str]) -> list[str]:
    """``--conf k=v`` arguments for ``spark-submit`` and the tools built on it."""
    out: list[str] = []
    for k, v in conf.items():
        out += ["--conf", f"{k}={v}"]
    return out


def spark_bin(tool: str) -> str:
    """A script of the installed pyspark's ``bin/`` (``spark-sql``, ``spark-submit``, ...);
    ``$SPARK_HOME/bin`` when pyspark ships none."""
    import pyspark

    for home in (
        Path(pyspark.__file__).parent,
        Path(os.environ.get("SPARK_HOME") or "/nonexistent"),
    ):
        candidate = home / "bin" / tool
        if candidate.is_file():
            return str(candidate)
    raise InvalidArgumentError(f"Spark's {tool} not found next to pyspark or in $SPARK_HOME/bin")


def frontend_command(
    frontend: str,
    conf: Mapping[str, str],
    *,
    port: int | None = None,
    host: str = "127.0.0.1",
    args: Sequence[str] = (),
) -> list[str]:
    """The command line that starts ``frontend`` (one of :data:`FRONTENDS`) with ``conf``.

    ``spark-sql`` passes ``args`` on (``-e``, ``-f``, ...); the Thrift server listens on
    ``host:port`` (default 10000), the Connect server on ``host:port`` (default 15002).
    """
    if frontend == "spark-sql":
        return [spark_bin("spark-sql"), *conf_flags(conf), *args]
    if frontend == "thriftserver":
        return [
            spark_bin("spark-submit"),
            "--class",
            THRIFT_CLASS,
            *conf_flags(conf),
            *args,
            "spark-internal",
            "--hiveconf",
            f"hive.server2.thrift.port={port or 10000}",
            "--hiveconf",
            f"hive.server2.thrift.bind.host={host}",
        ]
    if frontend == "connect-server":
        return [
            spark_bin("spark-submit"),
            "--class",
            CONNECT_CLASS,
            "--conf",
            f"spark.connect.grpc.binding.address={host}",
            "--conf",
            f"spark.connect.grpc.binding.port={port or 15002}",
            *conf_flags(conf),
            *args,
        ]
    raise InvalidArgumentError(f"unknown front end {frontend!r}: one of {', '.join(FRONTENDS)}")


def shell_line(argv: Sequence[str]) -> str:
    """``argv`` as one copy-pasteable shell line."""
    return " ".join(shlex.quote(a) for a in argv)
