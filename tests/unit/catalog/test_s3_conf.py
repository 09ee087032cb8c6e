"""pyarrow's S3 filesystem from Hadoop's ``fs.s3a.*`` settings (one S3 configuration for Spark
and lakeskip), and ``s3a://`` warehouses: pyarrow's S3, Spark's scheme kept for data-file URIs."""

from __future__ import annotations

from typing import Any

import pyarrow.fs as pafs
import pytest

from lakeskip.catalog import FileIO
from lakeskip.catalog.s3_conf import s3_filesystem
from lakeskip.errors import InvalidOptionError


def _args(conf: dict[str, str]) -> dict[str, Any]:
    fs = s3_filesystem(conf)
    assert isinstance(fs, pafs.S3FileSystem)
    args: dict[str, Any] = fs.__reduce__()[1][0]
    return args


def test_spark_conf_becomes_pyarrow_s3_options() -> None:
    args = _args(
        {
            "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000/",
            "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
            "spark.hadoop.fs.s3a.access.key": "AK",
            "spark.hadoop.fs.s3a.secret.key": "SK",
            "spark.hadoop.fs.s3a.session.token": "TOK",
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.sql.shuffle.partitions": "2",
        }
    )
    assert (args["endpoint_override"], args["scheme"], args["region"]) == (
        "127.0.0.1:9000",
        "http",
        "eu-west-1",
    )
    assert (args["access_key"], args["secret_key"], args["session_token"]) == ("AK", "SK", "TOK")
    assert args["force_virtual_addressing"] is False


def test_bare_hadoop_keys_ssl_flag_and_virtual_hosts() -> None:
    args = _args({"fs.s3a.endpoint": "minio:9000", "fs.s3a.connection.ssl.enabled": "false"})
    assert (args["endpoint_override"], args["scheme"]) == ("minio:9000", "http")
    assert args["force_virtual_addressing"] is True, "S3A's default is virtual-host style"
    args = _args({"fs.s3a.endpoint": "s3.eu-west-1.amazonaws.com", "fs.s3a.region": "eu-west-1"})
    assert (args["scheme"], args["region"]) == ("https", "eu-west-1")


def test_spark_prefixed_key_wins_and_anonymous_provider() -> None:
    conf = {"fs.s3a.access.key": "bare", "spark.hadoop.fs.s3a.access.key": "spark"}
    assert _args(conf)["access_key"] == "spark"
    provider = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    args = _args({**conf, "fs.s3a.aws.credentials.provider": provider})
    assert args["anonymous"] is True and not args["access_key"]


def test_no_s3a_settings_means_pyarrow_defaults() -> None:
    assert s3_filesystem({"spark.master": "local[2]", "fs.s3a.bucket.b.endpoint": "x"}) is None


def test_bad_flag_is_a_one_line_error() -> None:
    with pytest.raises(
        InvalidOptionError, match=r"fs\.s3a\.path\.style\.access must be true or false"
    ):
        s3_filesystem({"fs.s3a.endpoint": "h:1", "fs.s3a.path.style.access": "yes please"})


def test_s3a_warehouse_is_pyarrow_s3_with_spark_uris() -> None:
    fs = pafs.S3FileSystem(anonymous=True, region="us-east-1")
    io, root = FileIO.for_uri("s3a://bucket/wh/", fs)
    assert root == "bucket/wh" and io.uri(root + "/x.parquet") == "s3a://bucket/wh/x.parquet"
    # no filesystem given: pyarrow's S3 from the s3:// URI (a region: no network lookup)
    io, root = FileIO.for_uri("s3a://bucket/wh?region=us-east-1")
    assert type(io.filesystem).__name__ == "S3FileSystem" and root == "bucket/wh"
    assert io.uri(root) == "s3a://bucket/wh"
