"""One shared local SparkSession for every Spark test (JVM start is the expensive part)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lakeskip.spark.builder import build_spark_session


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
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
