"""Helpers for the front-end tests: the conf, child processes, their output, brain pids."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
#: generous: a JVM start takes 16-30 s idle and several times that on a loaded machine
START_TIMEOUT = 600.0


def frontend_env() -> dict[str, str]:
    """This checkout's lakeskip for the brain and for Spark's Python workers."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYSPARK_PYTHON"] = sys.executable
    # PySpark's Connect client (test_connect) leaves these in the test process's environment
    for key in (
        "PYSPARK_GATEWAY_PORT",
        "PYSPARK_GATEWAY_SECRET",
        "SPARK_REMOTE",
        "SPARK_CONNECT_MODE_ENABLED",
        "SPARK_LOCAL_REMOTE",
    ):
        env.pop(key, None)
    return env


def frontend_conf_for(
    warehouse: Path, tmp: Path, *, as_session_catalog: bool = False
) -> dict[str, str]:
    """lakeskip's front-end conf (what ``lakeskip spark-conf`` prints) plus small-machine
    settings; nothing lakeskip-specific beyond the printed flags."""
    from lakeskip.spark.front.frontends import frontend_conf

    conf = frontend_conf(str(warehouse), as_session_catalog=as_session_catalog)
    conf.update(
        {
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.memory": "1g",
            "spark.sql.warehouse.dir": str(tmp / "spark-warehouse"),
            "spark.local.dir": str(tmp / "local"),
            "spark.python.worker.reuse": "true",
            "spark.driver.extraJavaOptions": conf["spark.driver.extraJavaOptions"]
            + " -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
            + f" -Dderby.system.home={tmp}",
        }
    )
    return conf


def brain_pids(jvm_pid: int) -> list[int]:
    """Live lakeskip brain processes started by the JVM ``jvm_pid`` (found by the parent pid
    in their environment, so an orphan counts too)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if b"lakeskip.spark.front.brain" not in cmdline:
                continue
            if (entry / "stat").read_text().split()[2] == "Z":
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"LAKESKIP_BRAIN_PARENT={jvm_pid}".encode() in environ:
            out.append(int(entry.name))
    return out


def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def kill_tree(proc: subprocess.Popen[str]) -> None:
    """Kill ``proc`` and any brain it started (teardown: nothing is left running)."""
    pids = brain_pids(proc.pid)
    if proc.poll() is None:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class Lines:
    """A child's output, line by line, read on a thread."""

    def __init__(self, stream) -> None:  # type: ignore[no-untyped-def]
        self.q: queue.Queue[str] = queue.Queue()
        self.all: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:  # type: ignore[no-untyped-def]
        for line in stream:
            self.q.put(line.rstrip("\n"))

    def drain(self) -> list[str]:
        out = []
        while True:
            try:
                out.append(self.q.get_nowait())
            except queue.Empty:
                break
        self.all += out
        return out

    def wait_line(self, predicate, timeout: float) -> list[str]:  # type: ignore[no-untyped-def]
        """Lines up to and including the first that satisfies ``predicate``."""
        got: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out; output so far:\n" + "\n".join(got))
            try:
                line = self.q.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            got.append(line)
            self.all.append(line)
            if predicate(line):
                return got


def spawn(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
