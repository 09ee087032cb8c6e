"""moto's S3 server on 127.0.0.1 with one bucket, for the tests that speak the S3 API
(``tests/s3/`` through Spark's S3A, ``tests/unit/catalog/test_s3_commits.py`` through
pyarrow/obstore)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def moto_s3(bucket: str) -> Iterator[str]:
    """The server's endpoint URL (credentials ``test`` / ``test``, region ``us-east-1``),
    ``bucket`` created; stopped on exit."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    try:
        boto3.client(
            "s3",
            endpoint_url=url,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        ).create_bucket(Bucket=bucket)
        yield url
    finally:
        server.stop()
