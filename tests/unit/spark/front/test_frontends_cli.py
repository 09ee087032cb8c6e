"""``lakeskip spark-conf`` and the front-end commands (no Spark started: ``--print``)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lakeskip.cli import main
from lakeskip.spark.front.frontends import CONNECT_CLASS, THRIFT_CLASS


def test_spark_conf_prints_conf_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spark-conf", "--warehouse", str(tmp_path / "wh"), "--session-catalog"]) == 0
    argv = shlex.split(capsys.readouterr().out)
    conf = dict(argv[i + 1].split("=", 1) for i in range(0, len(argv), 2))
    assert set(argv[::2]) == {"--conf"}
    assert conf["spark.sql.catalog.lakeskip"] == "lakeskip.jvm.LakeCatalog"
    assert conf["spark.sql.catalog.spark_catalog"] == "lakeskip.jvm.LakeSessionCatalog"
    assert conf["spark.sql.catalog.lakeskip.warehouse"] == str(tmp_path / "wh")
    assert conf["spark.sql.extensions"] == "lakeskip.jvm.LakeExtensions"
    assert Path(conf["spark.jars"]).is_file(), "the jar is built"
    assert conf["spark.sql.catalog.lakeskip.python"] == sys.executable
    assert conf["spark.pyspark.python"] == sys.executable


def test_spark_conf_properties_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spark-conf", "--warehouse", "/data/wh", "--format", "properties"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "spark.sql.catalog.lakeskip.warehouse /data/wh" in lines


@pytest.mark.parametrize(
    ("command", "expect"),
    [
        (["spark-sql", "--print", "--", "-e", "SELECT 1"], ["-e", "SELECT 1"]),
        (
            ["thriftserver", "--port", "10123", "--print"],
            ["--class", THRIFT_CLASS, "hive.server2.thrift.port=10123"],
        ),
        (
            ["connect-server", "--port", "15123", "--print"],
            ["--class", CONNECT_CLASS, "spark.connect.grpc.binding.port=15123"],
        ),
    ],
)
def test_frontend_commands(
    command: list[str], expect: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command[0], "--warehouse", "/data/wh", *command[1:]]) == 0
    argv = shlex.split(capsys.readouterr().out)
    assert Path(argv[0]).name in ("spark-sql", "spark-submit")
    for e in expect:
        assert e in argv, argv
    assert "spark.sql.catalog.lakeskip.warehouse=/data/wh" in argv
    if command[0] != "spark-sql":
        assert any(a.endswith("=127.0.0.1") for a in argv), "binds to loopback by default"


# a Python process importing pyspark (~5 s; 15 s at load 20): make test, not make test-unit
@pytest.mark.processes
def test_brain_module_refuses_to_run_by_hand() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lakeskip.spark.front.brain"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[4] / "src")},
    )
    assert proc.returncode == 2
    assert "started by the lakeskip catalog" in proc.stderr


# a Python process importing pyspark (~5 s; 15 s at load 20): make test, not make test-unit
@pytest.mark.processes
def test_brain_failure_is_its_log_last_line() -> None:
    """A brain that cannot start says why in its last output line (the JVM's error quotes
    it with the log's path) and exits at once; its stdin stays open, as the JVM's pipe."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lakeskip.spark.front.brain"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(Path(__file__).parents[4] / "src"),
            "LAKESKIP_BRAIN_TOKEN": "t",
            "PYSPARK_GATEWAY_PORT": "9",  # nothing listens there
            "PYSPARK_GATEWAY_SECRET": "s",
        },
    )
    try:
        code = proc.wait(timeout=120)
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.kill()
        assert proc.stdin is not None
        proc.stdin.close()
    assert code == 1, err
    assert out.strip().splitlines()[-1].startswith("lakeskip brain failed: "), out


# a Python process importing pyspark (~5 s; 15 s at load 20): make test, not make test-unit
@pytest.mark.processes
def test_brain_exits_when_its_stdin_closes() -> None:
    """EOF on stdin (the JVM is gone, even after kill -9) ends the brain: here it waits
    forever on a gateway that never answers, so only the EOF can end it."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        proc = subprocess.run(
            [sys.executable, "-m", "lakeskip.spark.front.brain"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            input="",
            env={
                "PATH": "/usr/bin:/bin",
                "PYTHONPATH": str(Path(__file__).parents[4] / "src"),
                "LAKESKIP_BRAIN_TOKEN": "t",
                "PYSPARK_GATEWAY_PORT": str(silent.getsockname()[1]),
                "PYSPARK_GATEWAY_SECRET": "s",
            },
        )
    assert proc.returncode == 0 and "lakeskip brain failed" not in proc.stdout, proc.stdout
