"""What every unit test keeps to: no server. ``make test-unit`` runs ``tests/unit`` minus the
``processes`` and ``slow`` tests; each of those others starts no Spark JVM (``spark-submit``,
the session fixture), no front-end server (``spark-sql``, Thrift, Connect) and no socket
server (moto's S3 is one): those belong in ``tests/spark``, ``tests/frontends`` or a test
marked ``processes``. The guard fails such a test where it starts one, naming it."""

from __future__ import annotations

import os
import socketserver
import subprocess
from collections.abc import Callable, Iterator
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


@pytest.fixture
def lose_answers(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], list[str]]:
    """``lose_answers(fragment)``: from then on, a create-only write of a path containing
    ``fragment`` happens, but answers "already exists" -- an object store client retried
    the PUT after the first attempt's answer was lost. Returns the list of paths created
    so (the lost answers)."""
    from lakeskip.catalog.file_io import FileIO

    real = FileIO.try_create
    lost: list[str] = []

    def install(fragment: str) -> list[str]:
        def answer_lost(io: FileIO, path: str, data: bytes) -> bool:
            created = real(io, path, data)
            if fragment not in path:
                return created
            if created:
                lost.append(path)
            return False

        monkeypatch.setattr(FileIO, "try_create", answer_lost)
        return lost

    return install
