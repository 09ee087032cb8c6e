"""One S3 configuration for Spark and lakeskip: pyarrow's ``S3FileSystem`` from Hadoop's
``fs.s3a.*`` settings.

Spark reads and writes a warehouse in a bucket through Hadoop's S3A connector (``s3a://``,
``hadoop-aws`` on the classpath); lakeskip's metadata and data writes go through pyarrow (and
obstore for the conditional snapshot put). A user configures S3A once, as Spark expects
(``spark.hadoop.fs.s3a.endpoint``, ``...access.key``, ...), and lakeskip derives pyarrow's
filesystem from the same settings, so both reach the same objects with the same endpoint and
credentials. Without any ``fs.s3a.*`` setting pyarrow's own defaults apply (the ``AWS_*``
environment variables, ``~/.aws``, instance roles), which S3A's default credential chain
also reads.

Example:
    >>> fs = s3_filesystem({"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
    ...                     "spark.hadoop.fs.s3a.access.key": "k",
    ...                     "spark.hadoop.fs.s3a.secret.key": "s",
    ...                     "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
    ...                     "spark.hadoop.fs.s3a.path.style.access": "true"})
    >>> conf = fs.__reduce__()[1][0]
    >>> conf["endpoint_override"], conf["scheme"], conf["region"], conf["force_virtual_addressing"]
    ('127.0.0.1:9000', 'http', 'us-east-1', False)
    >>> s3_filesystem({"spark.sql.shuffle.partitions": "2"}) is None
    True
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow.fs as pafs

from lakeskip.errors import InvalidOptionError

__all__ = ["S3_SCHEMES", "s3_filesystem"]

#: warehouse URI schemes that are S3 (``s3a`` is Hadoop's; pyarrow knows ``s3``)
S3_SCHEMES = ("s3", "s3a")
_PREFIX = "fs.s3a."
_KNOWN = {
    "access.key",
    "secret.key",
    "session.token",
    "endpoint",
    "endpoint.region",
    "region",
    "path.style.access",
    "connection.ssl.enabled",
    "aws.credentials.provider",
}


def _s3a(conf: Mapping[str, str]) -> dict[str, str]:
    """The ``fs.s3a.*`` settings (with or without Spark's ``spark.hadoop.`` prefix), by the
    part after ``fs.s3a.``; a ``spark.hadoop.`` one wins over a bare one."""
    out: dict[str, str] = {}
    for prefix in (_PREFIX, "spark.hadoop." + _PREFIX):
        for k, v in conf.items():
            if k.startswith(prefix) and k[len(prefix) :] in _KNOWN:
                out[k[len(prefix) :]] = str(v).strip()
    return out


def _flag(s3a: Mapping[str, str], key: str, default: bool) -> bool:
    value = s3a.get(key)
    if value is None or value == "":
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InvalidOptionError(f"fs.s3a.{key} must be true or false, got {value!r}")


def s3_filesystem(conf: Mapping[str, str]) -> pafs.S3FileSystem | None:
    """pyarrow's S3 filesystem configured as Hadoop S3A is by ``conf`` (a Spark conf or a
    Hadoop configuration as a mapping), or ``None`` when ``conf`` sets nothing of S3A's.

    Read: ``fs.s3a.endpoint`` (with or without ``http(s)://``; without, the scheme follows
    ``fs.s3a.connection.ssl.enabled``), ``fs.s3a.endpoint.region`` (or ``fs.s3a.region``),
    ``fs.s3a.access.key``, ``fs.s3a.secret.key``, ``fs.s3a.session.token``,
    ``fs.s3a.path.style.access`` and an ``Anonymous...`` ``fs.s3a.aws.credentials.provider``.
    Per-bucket settings (``fs.s3a.bucket.<b>.*``) are not read.
    """
    s3a = _s3a(conf)
    if not s3a:
        return None
    kwargs: dict[str, object] = {}
    if "anonymous" in s3a.get("aws.credentials.provider", "").lower():
        kwargs["anonymous"] = True  # S3A then signs nothing, whatever keys are set
    elif s3a.get("access.key"):
        kwargs["access_key"] = s3a["access.key"]
        kwargs["secret_key"] = s3a.get("secret.key", "")
        if s3a.get("session.token"):
            kwargs["session_token"] = s3a["session.token"]
    region = s3a.get("endpoint.region") or s3a.get("region")
    if region:
        kwargs["region"] = region
    endpoint = s3a.get("endpoint", "")
    if endpoint:
        scheme = "https" if _flag(s3a, "connection.ssl.enabled", True) else "http"
        if "://" in endpoint:
            scheme, endpoint = endpoint.split("://", 1)
        kwargs["endpoint_override"] = endpoint.rstrip("/")
        kwargs["scheme"] = scheme
        # S3A addresses buckets as virtual hosts unless path.style.access; pyarrow does so
        # with an endpoint override only when forced
        kwargs["force_virtual_addressing"] = not _flag(s3a, "path.style.access", False)
    return pafs.S3FileSystem(**kwargs)
