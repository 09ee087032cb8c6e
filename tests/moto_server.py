"""moto's S3 server on 127.0.0.1 with one bucket, for the tests that speak the S3 API
(``tests/s3/``: ``test_spark_s3.py`` through Spark's S3A, ``test_s3_commits.py`` through
pyarrow/obstore)."""

from __future__ import annotations

import functools
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_PUT_LOCK = threading.Lock()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _atomic_puts() -> None:
    """S3 lets exactly one of two concurrent ``PUT If-None-Match: *`` of a key win; moto checks
    the header and then stores the object with nothing between them, and its server answers
    each request on a thread, so two writers racing for one snapshot id could both get 200
    (the CI of stop 50 lost snapshot 100 of 100 that way). One lock around moto's PUT handler
    gives the server S3's guarantee; our check-then-write without conditional writes (two
    requests: HEAD, then PUT) still races, as test_s3_commits expects."""
    from moto.s3.responses import S3Response

    original = S3Response.put_object
    if getattr(original, "lakeskip_atomic", False):
        return

    @functools.wraps(original)
    def put_object(self: Any) -> Any:
        with _PUT_LOCK:
            return original(self)

    put_object.lakeskip_atomic = True  # type: ignore[attr-defined]
    S3Response.put_object = put_object  # type: ignore[method-assign]


@contextmanager
def moto_s3(bucket: str) -> Iterator[str]:
    """The server's endpoint URL (credentials ``test`` / ``test``, region ``us-east-1``),
    ``bucket`` created; stopped on exit."""
    import boto3
    from moto.server import ThreadedMotoServer

    _atomic_puts()
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
