"""Spark's Thrift JDBC server started with only conf, two JDBC sessions at once (one
``bin/beeline`` holding two connections): both read and write, and each session's time zone
is its own -- in TIMESTAMP predicates, in the files kept and in EXPLAIN PRUNING."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from tests.frontends.procs import (
    START_TIMEOUT,
    brain_pids,
    frontend_conf_for,
    frontend_env,
    kill_tree,
    spawn,
    wait_for,
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def thrift(frontend_dir: Path):  # type: ignore[no-untyped-def]
    from lakeskip.spark.front.frontends import frontend_command

    tmp = frontend_dir / "thrift"
    tmp.mkdir()
    port = _free_port()
    cmd = frontend_command("thriftserver", frontend_conf_for(tmp / "wh", tmp), port=port)
    proc = spawn(cmd, tmp, frontend_env())
    try:
        wait_for(
            lambda: _listening(port) or proc.poll() is not None, START_TIMEOUT, "the Thrift server"
        )
        assert proc.poll() is None, "the Thrift server exited"
        yield proc, port, tmp
    finally:
        kill_tree(proc)


def _beeline(port: int, tmp: Path, script: str, *, force: bool = False) -> tuple[str, str]:
    from lakeskip.spark.front.frontends import spark_bin

    path = tmp / "beeline.sql"
    path.write_text(script.replace("URL", f"jdbc:hive2://127.0.0.1:{port}/default"))
    proc = spawn(
        [
            spark_bin("beeline"),
            "--silent=true",
            "--showHeader=false",
            "--outputformat=tsv2",
            *(["--force=true"] if force else []),
            "-f",
            str(path),
        ],
        tmp,
        frontend_env(),
    )
    try:
        out, err = proc.communicate(timeout=START_TIMEOUT)
    finally:
        kill_tree(proc)
    assert force or proc.returncode == 0, (out[-3000:], err[-3000:])
    return out, err


SCRIPT = """
!connect URL anonymous anonymous
CREATE TABLE lakeskip.default.tz (id BIGINT, ts TIMESTAMP) WITH ('file-index.bloom-filter.columns' = 'id');
INSERT INTO lakeskip.default.tz VALUES (1, TIMESTAMP '2024-01-01 00:00:00');
INSERT INTO lakeskip.default.tz VALUES (2, TIMESTAMP '2024-01-01 03:00:00');
INSERT INTO lakeskip.default.tz VALUES (3, TIMESTAMP '2024-01-01 06:00:00');
!connect URL anonymous anonymous
SET spark.sql.session.timeZone=America/New_York;
INSERT INTO lakeskip.default.tz VALUES (4, TIMESTAMP '2024-01-01 04:00:00');
SELECT 'B', count(*) FROM lakeskip.default.tz WHERE ts < TIMESTAMP '2024-01-01 02:00:00';
EXPLAIN PRUNING SELECT * FROM lakeskip.default.tz WHERE ts < TIMESTAMP '2024-01-01 02:00:00';
!go 0
SELECT 'A', count(*) FROM lakeskip.default.tz WHERE ts < TIMESTAMP '2024-01-01 02:00:00';
EXPLAIN PRUNING SELECT * FROM lakeskip.default.tz WHERE ts < TIMESTAMP '2024-01-01 02:00:00';
SELECT 'A4', CAST(ts AS STRING) FROM lakeskip.default.tz WHERE id = 4;
!go 1
SELECT 'B1', CAST(ts AS STRING) FROM lakeskip.default.tz WHERE id = 1;
"""


def test_two_jdbc_sessions_read_write_and_keep_their_time_zones(thrift) -> None:  # type: ignore[no-untyped-def]
    proc, port, tmp = thrift
    out, _ = _beeline(port, tmp, SCRIPT)
    rows = [line.split("\t") for line in out.splitlines() if line.strip()]
    # session B (New York): 02:00 there is 07:00 UTC -> rows 1, 2, 3 (row 4 is 09:00 UTC)
    assert ["B", "3"] in rows, out
    # session A (UTC, the server's zone): only row 1
    assert ["A", "1"] in rows, out
    kept = [r for r in rows if len(r) == 3 and r[1] == "files kept"]
    assert [k[2] for k in kept] == ["3", "1"], out
    # a row written in B's zone reads back in A's, and the other way round
    assert ["A4", "2024-01-01 09:00:00"] in rows, out
    assert ["B1", "2023-12-31 19:00:00"] in rows, out
    assert len(brain_pids(proc.pid)) == 1, "one brain serves every session of the JVM"


ERRORS = """
!connect URL anonymous anonymous
CALL lakeskip.sys.compact(table => 'default.nope');
CREATE TABLE lakeskip.default.bad (id BIGINT) WITH ('no-such-option' = '1');
SELECT 'after', 1;
"""


def test_lakeskip_errors_are_one_line_in_beeline(thrift) -> None:  # type: ignore[no-untyped-def]
    """Beeline shows the message, SQLSTATE and code on one line, no Java stack trace
    (the server's asynchronous path put a stringified stack trace into the message)."""
    _, port, tmp = thrift
    out, err = _beeline(port, tmp, ERRORS, force=True)
    errors = [line for line in err.splitlines() if line.startswith("Error:")]
    assert len(errors) == 2, err[-3000:]
    assert "table not found: default.nope" in errors[0], errors
    assert "no-such-option" in errors[1], errors
    # the whole error on its line: message, then beeline's (state=...,code=...)
    assert all(re.search(r"\(state=42000,code=\d+\)$", e) for e in errors), errors
    assert "\tat " not in err and "Caused by" not in err, err[-3000:]
    assert ["after", "1"] in [line.split("\t") for line in out.splitlines()], out
