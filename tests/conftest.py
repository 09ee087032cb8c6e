"""Shared test configuration: hypothesis profiles and the one Spark session (used by
``tests/spark`` and ``tests/interop``; created only when a test asks for it)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=int(os.environ.get("LAKESKIP_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("LAKESKIP_FUZZ_EXAMPLES", "2000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile(os.environ.get("LAKESKIP_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session", autouse=True)
def _manifest_disk_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Decoded manifests go to a directory of this run, not the user's ~/.cache."""
    before = os.environ.get("LAKESKIP_MANIFEST_CACHE_DIR")
    os.environ["LAKESKIP_MANIFEST_CACHE_DIR"] = str(tmp_path_factory.mktemp("manifest-cache"))
    yield
    if before is None:
        os.environ.pop("LAKESKIP_MANIFEST_CACHE_DIR", None)
    else:
        os.environ["LAKESKIP_MANIFEST_CACHE_DIR"] = before


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from lakeskip.spark.front.builder import build_spark_session  # only when a test needs Spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark_tmp = tmp_path_factory.mktemp("spark")
    s = build_spark_session(
        master="local[2]",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "1g",
            "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
            "spark.sql.warehouse.dir": str(spark_tmp / "spark-warehouse"),
            "spark.local.dir": str(spark_tmp / "local"),
            "spark.python.worker.reuse": "true",
        },
    )
    yield s
    s.stop()


@pytest.fixture
def session(spark: object, tmp_path: Path):  # type: ignore[no-untyped-def]
    import lakeskip

    return lakeskip.connect(str(tmp_path / "warehouse"), spark=spark)  # type: ignore[arg-type]
