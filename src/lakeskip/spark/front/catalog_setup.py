"""Putting the lakeskip catalog into a SparkSession: at build time (conf) or at run time.

Three ways in:

* ``lakeskip.connect()`` builds a session with :func:`catalog_conf` applied;
* ``lakeskip.connect(warehouse, spark=existing)`` calls :func:`attach_catalog`: ``ADD JAR``
  plus ``spark.conf.set("spark.sql.catalog.<name>", ...)`` on the live session;
* ``spark-submit --conf`` with the keys of :func:`catalog_conf`, then
  ``lakeskip.connect(spark=spark)`` in the driver to start the Python handler.

Either way the Python handler (:class:`~lakeskip.spark.bridge.catalog_service.CatalogService`) is
registered on py4j's callback server, which PySpark already runs in the driver.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from lakeskip.errors import LakeskipError, LakeskipWarning
from lakeskip.spark.bridge.catalog_service import CatalogService
from lakeskip.spark.jvm.build import JavaBuildError, build_jar
from lakeskip.spark.jvm.protocol import PROTOCOL

__all__ = [
    "CATALOG_CLASS",
    "DEFAULT_CATALOG",
    "SESSION_CATALOG_CLASS",
    "attach_catalog",
    "catalog_conf",
    "catalog_jar",
    "input_files",
    "is_connect_session",
    "service_for",
]

DEFAULT_CATALOG = "lakeskip"
CATALOG_CLASS = "lakeskip.jvm.LakeCatalog"
EXTENSIONS_CLASS = "lakeskip.jvm.LakeExtensions"
SESSION_CATALOG_CLASS = "lakeskip.jvm.LakeSessionCatalog"

_services: dict[int, CatalogService] = {}
_lock = threading.Lock()
_announced = False


def catalog_jar() -> Path | None:
    """The built jar, or ``None`` (announced once) when no ``javac`` is available."""
    global _announced
    try:
        return build_jar()
    except JavaBuildError as e:
        if not _announced:
            _announced = True
            warnings.warn(
                f"{e}; lakeskip falls back to temporary views (only Session.sql prunes)",
                LakeskipWarning,
                stacklevel=3,
            )
        return None


def _warehouse_uri(warehouse: str) -> str:
    return warehouse if "://" in warehouse else os.path.abspath(warehouse)


def catalog_conf(
    warehouse: str,
    name: str = DEFAULT_CATALOG,
    *,
    as_session_catalog: bool = False,
    jar: Path | None = None,
) -> dict[str, str]:
    """Spark configuration that installs the catalog (for a builder or ``spark-submit``).

    Args:
        warehouse: the lakeskip warehouse.
        name: the catalog name (``lakeskip.db.t``).
        as_session_catalog: also install it as ``spark_catalog`` so unqualified names resolve
            to lakeskip tables beside ordinary Spark tables.
        jar: the catalog jar (built on demand by default).
    """
    jar = jar or build_jar()
    wh = _warehouse_uri(warehouse)
    conf = {
        "spark.jars": str(jar),
        # Paimon's CREATE TABLE ... WITH (...) and CALL sys.x(...) in plain spark.sql
        "spark.sql.extensions": EXTENSIONS_CLASS,
        f"spark.sql.catalog.{name}": CATALOG_CLASS,
        f"spark.sql.catalog.{name}.warehouse": wh,
    }
    if as_session_catalog:
        conf["spark.sql.catalog.spark_catalog"] = SESSION_CATALOG_CLASS
        conf["spark.sql.catalog.spark_catalog.warehouse"] = wh
    return conf


def is_connect_session(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect client session (no JVM behind it)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _jar_loaded(spark: SparkSession) -> bool:
    jvm = spark._jvm
    assert jvm is not None
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("lakeskip.jvm.bridge.Bridge", True, loader)
    except Exception:
        return False
    return True


def service_for(spark: SparkSession, register: bool = False) -> CatalogService:
    """The session's handler; registered with the JVM when new or when ``register`` (the
    jar must be loaded and visible to this thread's class loader)."""
    from pyspark.java_gateway import ensure_callback_server_started

    key = id(spark.sparkContext._jsc)
    with _lock:
        service = _services.get(key)
        if service is not None and not register:
            return service
        if service is None:
            service = CatalogService(spark)
            _services[key] = service
        gateway = spark.sparkContext._gateway
        assert gateway is not None
        ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
        jvm = spark._jvm
        assert jvm is not None
        protocol = jvm.lakeskip.jvm.bridge.Bridge.register(service)
        if int(protocol) != PROTOCOL:
            raise LakeskipError(
                f"lakeskip catalog jar speaks protocol {protocol}, Python {PROTOCOL}: rebuild it"
            )
    return service


def attach_catalog(
    spark: SparkSession,
    warehouse: str,
    name: str = DEFAULT_CATALOG,
) -> CatalogService | None:
    """Install the catalog ``name`` on a running session; ``None`` when there is no ``javac``.

    Loads the jar with ``ADD JAR`` when the session was not started with it, points
    ``spark.sql.catalog.<name>`` at it and registers the Python handler.
    """
    if not _jar_loaded(spark):
        jar = catalog_jar()
        if jar is None:
            return None
        spark.sql(f"ADD JAR '{jar}'")
    service = service_for(spark, register=True)
    wh = _warehouse_uri(warehouse)
    service.bind_catalog(name, wh)
    key = f"spark.sql.catalog.{name}"
    current = spark.conf.get(key, None)
    if current not in (CATALOG_CLASS, SESSION_CATALOG_CLASS):
        spark.conf.set(key, CATALOG_CLASS)
    spark.conf.set(f"{key}.warehouse", wh)
    # sessions created afterwards (a Thrift server's per-connection sessions, newSession())
    # copy their catalog keys from the SparkContext's conf, not from this session's
    jconf = spark._jsc.sc().conf()
    jconf.set(key, spark.conf.get(key))
    jconf.set(f"{key}.warehouse", wh)
    # Instantiate the catalog now, on this thread: after a run-time ADD JAR only this thread's
    # class loader sees the jar, and Spark caches the instance for every later thread.
    spark._jsparkSession.sessionState().catalogManager().catalog(name)
    # DELETE / UPDATE / MERGE INTO from plain spark.sql: the extension injects the planner
    # strategy; a session attached at run time gets it through experimental.extraStrategies
    # (and the rule that prunes a streaming read's files by its filters through
    # experimental.extraOptimizations; the filtered top-N rule, the date_trunc range rule and
    # the uncast join keys of runtime filters as pre-CBO rules)
    jvm = spark._jvm
    assert jvm is not None
    if EXTENSIONS_CLASS not in str(spark.conf.get("spark.sql.extensions", "") or ""):
        jvm.lakeskip.jvm.write.LakeDmlStrategy.install(spark._jsparkSession)
        jvm.lakeskip.jvm.read.stream.LakeStreamFilters.install(spark._jsparkSession)
        jvm.lakeskip.jvm.read.rules.PreCboRules.install(spark._jsparkSession)
    # and the parser (Paimon's WITH, CALL sys.x, EXPLAIN PRUNING) over its own (a no-op
    # where the extension installed it)
    if not jvm.lakeskip.jvm.sql.LakeParser.install(spark._jsparkSession):
        warnings.warn(
            "this session's SQL parser could not be extended: plain spark.sql needs "
            f"TBLPROPERTIES instead of WITH (...) and CALL {name}.sys.x instead of CALL sys.x, "
            f"and has no EXPLAIN PRUNING (CALL {name}.sys.explain_pruning(query => '...')); "
            f"or start the session with spark.sql.extensions={EXTENSIONS_CLASS}",
            LakeskipWarning,
            stacklevel=3,
        )
    return service


def input_files(df: DataFrame) -> list[str]:
    """The data files a DataFrame reads, lakeskip catalog scans included.

    ``DataFrame.inputFiles()`` only knows Spark's own file tables; a lakeskip scan is Spark's
    ParquetScan (inside ``LakeScan``, and inside ``LakeDvScan`` when files have deletion
    vectors) over a ``LakeFileIndex`` holding exactly the files the planner kept.
    """
    out = set(df.inputFiles())
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves().iterator()
    while leaves.hasNext():
        leaf = leaves.next()
        if leaf.getClass().getSimpleName() != "DataSourceV2ScanRelation":
            continue
        scan = leaf.scan()
        if scan.getClass().getName() == "lakeskip.jvm.read.LakeScan":
            # the append-table scan (Spark's ParquetScan, with or without deletion vectors)
            index = scan.fileIndex()
        elif scan.getClass().getSimpleName() == "ParquetScan":
            index = scan.fileIndex()
        else:
            continue
        if index is not None and index.getClass().getName() == "lakeskip.jvm.read.LakeFileIndex":
            out.update(str(f) for f in index.inputFiles())
    return sorted(out)
