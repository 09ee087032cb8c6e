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

#: the slowest test files of ``make test`` (and of ``make test-e2e``, ``make test-s3``): seconds
#: each took alone in a pytest process of its own (Spark session start included), measured
#: 2026-11-29 on a loaded machine, so only their order counts. ``make test`` hands out whole
#: files in collection order (``--dist loadfile --no-loadscope-reorder``), this order: xdist's
#: own (most tests first) left the few-test Spark files, the slowest, to the end, where one
#: process could run on alone. The CI log's ``--durations`` show what to change here.
FILE_SECONDS: dict[str, float] = {
    "tests/spark/read/test_top_n_spark.py": 650,
    "tests/spark/write/test_commit_retry.py": 638,
    "tests/s3/test_s3_commits.py": 562,
    "tests/spark/write/test_clustering.py": 538,
    "tests/spark/read/test_aggregate_pushdown.py": 277,
    "tests/spark/read/test_time_travel.py": 259,
    "tests/spark/read/test_nan_stats.py": 259,
    "tests/spark/procedures/test_procedures.py": 233,
    "tests/spark/stream/test_stream_read.py": 215,
    "tests/spark/write/test_streaming.py": 209,
    "tests/unit/catalog/test_crash.py": 190,
    "tests/spark/read/test_buckets.py": 190,
    "tests/spark/read/test_row_types.py": 183,
    "tests/spark/read/test_range_bitmap_e2e.py": 170,
    "tests/spark/joins/test_runtime_filter_spark.py": 169,
    "tests/spark/pk/test_sequence_and_aggregation.py": 155,
    "tests/spark/procedures/test_procedure_results.py": 143,
    "tests/spark/pk/test_primary_key_dv.py": 134,
    "tests/spark/read/test_pruning_in_spark.py": 133,
    "tests/spark/read/test_function_pruning.py": 123,
    "tests/spark/pk/test_primary_key.py": 122,
    "tests/spark/read/test_parquet_bloom.py": 113,
    "tests/spark/read/test_dv_cases.py": 110,
    "tests/spark/dml/test_merge.py": 95,
    "tests/spark/dml/test_merge_prune.py": 87,
    "tests/unit/catalog/write/test_pk_dv_model.py": 77,
    "tests/spark/front/test_cli.py": 62,
    "tests/unit/catalog/ops/test_maintenance.py": 59,
    "tests/unit/index/bitmap/test_bitmap.py": 57,
    "tests/unit/index/test_index_oracle.py": 48,
    "tests/unit/expressions/test_arrow_eval.py": 40,
    "tests/unit/catalog/test_concurrency.py": 35,
    "tests/unit/catalog/format/test_bucket.py": 34,
    "tests/unit/catalog/test_schema_evolution.py": 31,
}
#: a file not in FILE_SECONDS: a Spark or front-end file (one not measured then: newer) this
#: many, a unit file none (the unit files keep their collection order, after the Spark files)
SPARK_FILE_SECONDS = 60.0
_SPARK_DIRS = ("tests/spark/", "tests/frontends/", "tests/interop/", "tests/s3/")


def file_seconds(path: str) -> float:
    """The expected seconds of the test file ``path`` (relative to the repository)."""
    if path in FILE_SECONDS:
        return FILE_SECONDS[path]
    return SPARK_FILE_SECONDS if path.startswith(_SPARK_DIRS) else 0.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest test files first (a file's tests stay together and in order), so that the
    two ``make test`` processes finish together: the many short unit files fill the end."""
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = sorted(by_file, key=lambda path: -file_seconds(path))  # stable: ties keep their order
    items[:] = [item for path in order for item in by_file[path]]


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
