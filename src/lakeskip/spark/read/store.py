"""The catalog of a warehouse as the session's Spark reaches it: for ``s3://`` / ``s3a://``
warehouses, pyarrow's S3 filesystem is configured from the session's ``spark.hadoop.fs.s3a.*``
settings (:func:`lakeskip.catalog.s3_conf.s3_filesystem`), so lakeskip's own I/O and Spark's
S3A reads of the data files use one endpoint and one set of credentials."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakeskip.catalog import Catalog
from lakeskip.catalog.s3_conf import S3_SCHEMES, s3_filesystem

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["spark_catalog"]


def spark_catalog(spark: SparkSession, warehouse: str) -> Catalog:
    """``Catalog(warehouse)``, with an S3 filesystem from the Spark conf's ``fs.s3a.*`` when
    the warehouse is in S3 and the conf sets any (else pyarrow's defaults: ``AWS_*``...)."""
    scheme = warehouse.partition("://")[0] if "://" in warehouse else ""
    if scheme not in S3_SCHEMES:
        return Catalog(warehouse)
    conf = dict(spark.sparkContext.getConf().getAll())
    return Catalog(warehouse, filesystem=s3_filesystem(conf))
