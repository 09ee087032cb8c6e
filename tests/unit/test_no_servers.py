"""The unit tests' guard (``tests/unit/conftest.py``) stops a unit test that starts a server."""

from __future__ import annotations

import socketserver
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "argv",
    [
        ["/opt/spark/bin/spark-submit", "--version"],
        ["spark-sql", "-e", "SELECT 1"],
        ["java", "-version"],
    ],
)
def test_a_server_program_fails_the_test(argv: list[str]) -> None:
    with pytest.raises(pytest.fail.Exception, match="starts"):
        subprocess.run(argv, check=False)


def test_a_socket_server_fails_the_test() -> None:
    with pytest.raises(pytest.fail.Exception, match="starts a server"):
        socketserver.TCPServer(("127.0.0.1", 0), socketserver.BaseRequestHandler)


def test_the_spark_session_fails_the_test(request: pytest.FixtureRequest) -> None:
    with pytest.raises(pytest.fail.Exception, match="tests/spark"):
        request.getfixturevalue("spark")


def test_other_programs_run() -> None:
    done = subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, check=True)
    assert done.stdout.strip() == b"1"
