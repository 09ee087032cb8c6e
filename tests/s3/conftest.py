"""``make test-s3``: plain ``spark.sql`` on a warehouse in an S3 bucket (moto's server on
127.0.0.1), Spark reaching it through Hadoop's S3A (``hadoop-aws`` and the AWS SDK bundle from
Maven Central, fetched once with ``mvn`` into the local Maven repository, see
``tests/maven.py``) and lakeskip through pyarrow/obstore, both from the one
``spark.hadoop.fs.s3a.*`` configuration (:mod:`lakeskip.catalog.s3_conf`).

This directory has its own ``spark`` fixture (a session with the S3A jars), so it runs as its
own pytest process: ``make test`` leaves it out (marker ``s3``). ``test_s3_commits.py`` (writer
processes racing to commit through pyarrow/obstore, no Spark) is here too: ``make test-s3``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.maven import maven_jar
from tests.moto_server import moto_s3

BUCKET = "lakeskip-spark"
#: pyspark's Hadoop -> (the AWS SDK v2 bundle, analytics-accelerator) its hadoop-aws was built
#: with (hadoop-project's pom: aws-java-sdk-v2.version, amazon-s3-analyticsaccelerator-s3.version)
HADOOP_AWS_DEPS = {"3.5.0": ("2.35.4", "1.3.1")}


def hadoop_version() -> str:
    import pyspark

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    if not jars:
        pytest.skip("pyspark has no hadoop-client-api jar")
    return jars[-1].name.removeprefix("hadoop-client-api-").removesuffix(".jar")


def s3a_jars() -> list[Path]:
    """hadoop-aws matching pyspark's Hadoop, and the AWS SDK it needs."""
    version = hadoop_version()
    if version not in HADOOP_AWS_DEPS:
        pytest.fail(f"no AWS SDK version known for pyspark's Hadoop {version}: add it")
    sdk, accelerator = HADOOP_AWS_DEPS[version]
    return [
        maven_jar(f"org.apache.hadoop:hadoop-aws:{version}"),
        maven_jar(f"software.amazon.awssdk:bundle:{sdk}"),
        maven_jar(f"software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3:{accelerator}"),
    ]


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 with one bucket."""
    with moto_s3(BUCKET) as url:
        yield url


def s3a_conf(endpoint: str) -> dict[str, str]:
    """The one S3 configuration: Spark's S3A settings (lakeskip derives pyarrow's from them)."""
    return {
        "spark.jars": ",".join(str(j) for j in s3a_jars()),
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        "spark.hadoop.fs.s3a.access.key": "test",
        "spark.hadoop.fs.s3a.secret.key": "test",
        "spark.hadoop.fs.s3a.path.style.access": "true",
    }


def spark_conf(endpoint: str, tmp: Path) -> dict[str, str]:
    return {
        **s3a_conf(endpoint),
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.driver.memory": "1g",
        "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        "spark.sql.warehouse.dir": str(tmp / "spark-warehouse"),
        "spark.local.dir": str(tmp / "local"),
        "spark.python.worker.reuse": "true",
    }


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory, s3_endpoint: str) -> Iterator[object]:
    from lakeskip.spark.front.builder import build_spark_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    s = build_spark_session(
        master="local[2]", conf=spark_conf(s3_endpoint, tmp_path_factory.mktemp("spark"))
    )
    yield s
    s.stop()
