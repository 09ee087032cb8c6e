"""Spark's own ``bin/spark-sql`` with nothing but ``--conf`` flags: the catalog starts its
Python brain, Paimon's SQL works in plain Spark SQL, errors are one line, the brain is
restarted when killed and never outlives the JVM."""

from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.frontends.procs import (
    START_TIMEOUT,
    Lines,
    brain_pids,
    frontend_conf_for,
    frontend_env,
    kill_tree,
    spawn,
    wait_for,
)

SCRIPT = """
CREATE TABLE lakeskip.default.ev (id BIGINT, user_id STRING)
  WITH ('file-index.bloom-filter.columns' = 'user_id');
INSERT INTO lakeskip.default.ev VALUES (1, 'u1');
INSERT INTO lakeskip.default.ev VALUES (2, 'u2');
INSERT INTO lakeskip.default.ev VALUES (3, 'u3');
SELECT 'lookup', id, user_id FROM lakeskip.default.ev WHERE user_id = 'u3';
EXPLAIN PRUNING SELECT * FROM lakeskip.default.ev WHERE user_id = 'u3';
DELETE FROM lakeskip.default.ev WHERE id = 1;
CALL sys.rewrite_file_index(table => 'default.ev');
SELECT 'v1', count(*) FROM lakeskip.default.ev VERSION AS OF 1;
SELECT 'now', count(*), min(id) FROM lakeskip.default.ev;
"""


def _spark_sql(tmp: Path, args: list[str], *, as_session_catalog: bool = False) -> list[str]:
    from lakeskip.spark.front.frontends import frontend_command

    conf = frontend_conf_for(tmp / "wh", tmp, as_session_catalog=as_session_catalog)
    return frontend_command("spark-sql", conf, args=args)


@dataclass(frozen=True, slots=True)
class ScriptRun:
    pid: int
    returncode: int
    out: str
    err: str
    rows: list[list[str]]
    #: the callbacks of the run, one line each (``Bridge.TRACE_PROPERTY``)
    trace: Path


@pytest.fixture(scope="module")
def script_run(frontend_dir: Path) -> ScriptRun:
    """One ``spark-sql -f`` of SCRIPT, TWO_CATALOGS, then REPEATED for the three tests below
    (one JVM and brain start, not three): the catalogs ``lakeskip`` and ``lk2``, both from
    ``lakeskip spark-conf`` (the second with ``--catalog-name lk2``), nothing else but the
    callback trace's system property."""
    from lakeskip.spark.front.frontends import frontend_command, frontend_conf

    tmp = frontend_dir / "script"
    tmp.mkdir()
    trace = tmp / "callbacks.tsv"
    conf = frontend_conf_for(tmp / "wh1", tmp)
    conf["spark.driver.extraJavaOptions"] += f" -Dlakeskip.callback.trace={trace}"
    second = frontend_conf(str(tmp / "wh2"), "lk2")
    conf.update({k: v for k, v in second.items() if k.startswith("spark.sql.catalog.lk2")})
    assert conf["spark.sql.catalog.lk2.warehouse"] != conf["spark.sql.catalog.lakeskip.warehouse"]
    script = tmp / "script.sql"
    script.write_text(SCRIPT + TWO_CATALOGS + REPEATED)
    proc = spawn(frontend_command("spark-sql", conf, args=["-f", str(script)]), tmp, frontend_env())
    try:
        out, err = proc.communicate(timeout=START_TIMEOUT)
    finally:
        kill_tree(proc)
    rows = [line.split("\t") for line in out.splitlines()]
    return ScriptRun(proc.pid, proc.returncode, out, err, rows, trace)


def test_script_with_conf_only(script_run: ScriptRun) -> None:
    run = script_run
    assert run.returncode == 0, run.err[-3000:]
    assert ["lookup", "3", "u3"] in run.rows, run.out
    explain = {(r[1], r[2]) for r in run.rows if len(r) == 3 and r[0] == "default.ev"}
    assert ("files total", "3") in explain and ("files kept", "1") in explain, run.out
    assert ("files skipped by stats", "2") in explain, run.out
    assert ["v1", "1"] in run.rows, run.out
    assert ["now", "2", "2"] in run.rows, run.out
    assert "\tat " not in run.err, run.err[-3000:]
    # the JVM has exited: its brains too
    wait_for(lambda: not brain_pids(run.pid), 15, "the brain to exit with the JVM")


TWO_CATALOGS = """
CREATE DATABASE IF NOT EXISTS lakeskip.other;
CREATE DATABASE IF NOT EXISTS lk2.other;
CREATE TABLE lakeskip.other.t2 (id BIGINT);
CREATE TABLE lk2.other.t2 (id BIGINT);
INSERT INTO lakeskip.other.t2 VALUES (1);
INSERT INTO lakeskip.other.t2 VALUES (2);
INSERT INTO lk2.other.t2 VALUES (10);
INSERT INTO lk2.other.t2 VALUES (20);
INSERT INTO lk2.other.t2 VALUES (30);
CALL lk2.sys.compact(table => 'other.t2');
SELECT 'lk2', count(*) FROM lk2.other.`t2$files`;
SELECT 'lakeskip', count(*) FROM lakeskip.other.`t2$files`;
SELECT 'lk2rows', count(*), sum(id) FROM lk2.other.t2;
"""


def test_two_catalogs_from_conf_alone_run_their_own_procedures(script_run: ScriptRun) -> None:
    """Issue 41's repro as a user runs it: ``lakeskip`` and ``lk2`` both from ``lakeskip
    spark-conf`` (the second with ``--catalog-name lk2``), nothing else; ``CALL
    lk2.sys.compact`` compacts lk2's table (it used to look in the first catalog's warehouse:
    ``table not found``) and leaves the first catalog's table of the same name alone."""
    run = script_run
    assert run.returncode == 0, run.err[-3000:]
    assert ["lk2", "1"] in run.rows, (run.out, run.err[-3000:])
    assert ["lakeskip", "2"] in run.rows, run.out
    assert ["lk2rows", "3", "60"] in run.rows, run.out


REPEATED_SETUP = """
CREATE TABLE lakeskip.default.li (k BIGINT, q INT, mode STRING)
  WITH ('file-index.bitmap.columns' = 'mode', 'file-index.bloom-filter.columns' = 'k');
INSERT INTO lakeskip.default.li VALUES (1, 3, 'AIR'), (2, 9, 'MAIL');
INSERT INTO lakeskip.default.li VALUES (3, 5, 'AIR'), (4, 1, 'SHIP');
CREATE TABLE lakeskip.default.pt (k BIGINT, brand STRING);
INSERT INTO lakeskip.default.pt VALUES (1, 'b12'), (2, 'b23'), (3, 'b12'), (4, 'b34');
"""

#: TPC-H q19's shape: a join whose key is in every branch of an OR of ANDs
REPEATED_QUERY = """SELECT 'q19', count(*), sum(q) FROM lakeskip.default.li, lakeskip.default.pt
WHERE (pt.k = li.k AND brand = 'b12' AND q <= 5 AND mode IN ('AIR', 'MAIL'))
   OR (pt.k = li.k AND brand = 'b23' AND q >= 8)"""

#: a statement between the runs whose one callback marks where a run's callbacks begin
DELIMITER = "SHOW TABLES IN lakeskip.default"


def _repeated() -> str:
    """REPEATED_SETUP, three runs of the query, an INSERT, two more runs (DELIMITER before each
    statement and at the end)."""
    runs = "".join(f"{DELIMITER};\n{REPEATED_QUERY};\n" for _ in range(3))
    # (3, 4, 'MAIL') meets the first branch (pt 3 is b12): 4 rows, sum 21
    insert = f"{DELIMITER};\nINSERT INTO lakeskip.default.li VALUES (3, 4, 'MAIL');\n"
    after = "".join(f"{DELIMITER};\n{REPEATED_QUERY};\n" for _ in range(2))
    return REPEATED_SETUP + runs + insert + after + f"{DELIMITER};\n"


#: the last part of :func:`script_run`'s script: SCRIPT and TWO_CATALOGS list no tables, so
#: the callbacks before its first DELIMITER are left out below
REPEATED = _repeated()


def test_a_repeated_query_asks_the_brain_nothing(script_run: ScriptRun) -> None:
    """The callbacks a query makes through ``spark-sql``, counted on the JVM side of the
    transport (``Bridge.TRACE_PROPERTY``): its first run loads the two tables and plans their
    scans; a repetition on the same snapshots asks the brain nothing (the JVM's table and scan
    caches answer), so a warm query pays no round trip to Python. A row inserted between two
    runs is seen by the next one (a new snapshot of ``li``: loaded and planned again), whose
    own repetition again asks nothing."""
    run = script_run
    assert run.returncode == 0, run.err[-3000:]
    out, rows = run.out, run.rows
    assert rows.count(["q19", "3", "17"]) == 3, out
    assert rows.count(["q19", "4", "21"]) == 2, f"the new snapshot is seen: {out}"
    trace = run.trace
    per_run: list[dict[str, int]] = []
    for line in trace.read_text().splitlines():
        op = line.split("\t")[0]
        if op == "list_tables":
            per_run.append({})
        elif per_run:
            per_run[-1][op] = per_run[-1].get(op, 0) + 1
    # the three runs, the INSERT, the two runs after it, the last delimiter
    assert len(per_run) == 7 and per_run[-1] == {}, per_run
    assert per_run[0].get("plan_scan") == 2, f"the first run plans both scans: {per_run}"
    assert per_run[1:3] == [{}, {}], f"a repeated query on the same snapshots: {per_run}"
    # li's new snapshot is loaded (after the INSERT's commit or by the next query) and the
    # next query plans its scan again
    loads = per_run[3].get("load_table", 0) + per_run[4].get("load_table", 0)
    assert loads >= 1, f"li's new snapshot is loaded: {per_run}"
    assert per_run[4].get("plan_scan", 0) >= 1, f"li's scan is planned again: {per_run}"
    assert per_run[5] == {}, f"a repeated query on the new snapshot: {per_run}"


@pytest.fixture(scope="module")
def shell(frontend_dir: Path):  # type: ignore[no-untyped-def]
    """One interactive spark-sql (statements on stdin) for the tests below, with lakeskip
    also as spark_catalog (`lakeskip spark-conf --session-catalog`)."""
    tmp = frontend_dir / "interactive"
    tmp.mkdir()
    proc = spawn(_spark_sql(tmp, [], as_session_catalog=True), tmp, frontend_env())
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    try:
        err.wait_line(lambda line: line.startswith("Spark master:"), START_TIMEOUT)
        yield proc, out, err
    finally:
        kill_tree(proc)


def _run(shell, statement: str) -> tuple[list[str], list[str]]:  # type: ignore[no-untyped-def]
    """Run one statement; (stdout lines, stderr lines). Waits for Spark's "Time taken" line,
    or for an error line and a moment for anything printed after it."""
    proc, out, err = shell
    out.drain()
    err.drain()
    assert proc.stdin is not None
    proc.stdin.write(statement.strip().rstrip(";") + ";\n")
    proc.stdin.flush()
    got = err.wait_line(lambda line: True, START_TIMEOUT)
    if not got[-1].startswith("Time taken"):
        time.sleep(3)  # a stack trace, if any, follows at once
        got += err.drain()
        return out.drain(), got
    # stdout and stderr are separate pipes: the rows may still be on their way when
    # "Time taken ... Fetched N row(s)" has arrived
    fetched = re.search(r"Fetched (\d+) row", got[-1])
    lines = out.drain()
    want = int(fetched.group(1)) if fetched else 0
    deadline = time.monotonic() + 60
    while sum(not line.startswith("spark-sql") for line in lines) < want:
        if time.monotonic() > deadline:
            break  # the caller's assertion shows what came
        try:
            lines += out.wait_line(lambda line: True, 1.0)
        except AssertionError:  # nothing within the second: look again
            lines += out.drain()
    return lines, got


def test_error_is_one_line_then_brain_killed_restarts(shell) -> None:  # type: ignore[no-untyped-def]
    proc, _, _ = shell
    out, err = _run(
        shell,
        "CREATE TABLE lakeskip.default.k (id BIGINT) WITH ('file-index.bloom-filter.columns' = 'id')",
    )
    assert err[-1].startswith("Time taken"), err
    # the session-catalog form: unqualified names, USING lakeskip
    for statement in (
        "CREATE TABLE sc (id BIGINT, s STRING) USING lakeskip "
        "TBLPROPERTIES ('file-index.bloom-filter.columns' = 's')",
        "INSERT INTO sc VALUES (1, 'a')",
        "INSERT INTO sc VALUES (2, 'b')",
    ):
        out, err = _run(shell, statement)
        assert err[-1].startswith("Time taken"), (statement, err)
    out, err = _run(shell, "SELECT 'sc', id FROM sc WHERE s = 'b'")
    assert "sc\t2" in out and "sc\t1" not in out, (out, err)
    out, err = _run(shell, "CALL sys.rewrite_file_index(table => 'default.nope')")
    assert err == ["table not found: default.nope"], err

    first = brain_pids(proc.pid)
    assert len(first) == 1, first
    # the brain wraps this JVM's SparkContext through its py4j server: it starts no JVM (nor
    # any process) of its own, and the JVM it serves is the CLI's
    assert _children(first[0]) == [], [_cmdline(p) for p in _children(first[0])]
    assert first[0] in _children(proc.pid), _children(proc.pid)
    os.kill(first[0], signal.SIGKILL)
    wait_for(lambda: not brain_pids(proc.pid), 15, "the killed brain to go")
    out, err = _run(shell, "INSERT INTO lakeskip.default.k VALUES (7)")
    assert err[-1].startswith("Time taken"), err
    out, err = _run(shell, "SELECT 'k', id FROM lakeskip.default.k")
    assert "k\t7" in out, (out, err)
    second = brain_pids(proc.pid)
    assert len(second) == 1 and second != first, (first, second)

    # kill -9 of the JVM: the brain notices (stdin EOF, parent gone) and exits
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    wait_for(lambda: not brain_pids(proc.pid), 15, "no brain left after kill -9 of the JVM")


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (all its threads')."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
