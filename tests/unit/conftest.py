"""What every unit test keeps to: no server. ``make test-unit`` runs ``tests/unit`` minus the
``processes`` and ``slow`` tests; each of those others starts no Spark JVM (``spark-submit``,
the session fixture), no front-end server (``spark-sql``, Thrift, Connect) and no socket
server (moto's S3 is one): those belong in ``tests/spark``, ``tests/frontends`` or a test
marked ``processes``. The guard fails such a test where it starts one, naming it."""

from __future__ import annotations

import os
import socketserver
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

#: programs that start a JVM or a server (pyspark's gateway is ``spark-submit``)
SERVER_PROGRAMS = frozenset(
    {
        "spark-submit",
        "spark-sql",
        "spark-class",
        "spark-shell",
        "pyspark",
        "beeline",
        "start-thriftserver.sh",
        "start-connect-server.sh",
        "java",
        "moto_server",
    }
)
#: markers of the tests ``make test-unit`` leaves out
_NOT_UNIT = ("processes", "slow")


def server_program(args: Any) -> str | None:
    """The server program a ``subprocess`` command line starts, else None."""
    argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
    if not argv:
        return None
    head = os.path.basename(os.fsdecode(argv[0]))
    return head if head in SERVER_PROGRAMS else None


@pytest.fixture
def spark() -> Any:
    """The Spark session is for ``tests/spark`` (``tests/conftest.py``)."""
    pytest.fail("a unit test asked for the Spark session: move it to tests/spark")


@pytest.fixture(autouse=True)
def _no_server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if any(request.node.get_closest_marker(m) for m in _NOT_UNIT):
        yield
        return
    test = request.node.nodeid
    popen = subprocess.Popen.__init__

    def guarded_popen(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        program = server_program(args)
        if program is not None:
            pytest.fail(f"{test} starts {program}: mark it processes or move it to tests/spark")
        popen(self, args, *rest, **kw)

    def no_listening(self: socketserver.TCPServer) -> None:
        pytest.fail(f"{test} starts a server ({type(self).__name__}): mark it processes")

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded_popen)
    monkeypatch.setattr(socketserver.TCPServer, "server_activate", no_listening)
    yield
