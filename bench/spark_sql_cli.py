"""One ``bin/spark-sql`` process kept alive and fed statement by statement on its stdin, so
that two of them (lakeskip's and plain Spark's) can take turns run by run: both see the same
machine, where two ``spark-sql -f`` scripts run one after the other see whatever the machine did
meanwhile. Used by ``tpch_queries.py --frontend spark-sql``.

What the CLI does with a piped stdin (Spark 4.3, jline): it prints its prompt and echoes each
statement it reads on stdout (long lines broken by carriage returns), then the rows, tab
separated, one per line; on stderr it prints ``Time taken: <s> seconds[, Fetched n row(s)]``
after each statement that succeeds (parse, analysis, planning, execution and printing the rows)
and the error text, no time, after one that fails. :meth:`SparkSql.run` sends the statement and
a marker statement (``SELECT '<marker> <n>'``), reads stdout up to the marker's row (the
statement's rows: lines that are not prompt lines), then stderr up to the marker's time.
"""

from __future__ import annotations

import os
import pwd
import queue
import re
import struct
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

PROMPT = b"spark-sql ("
MARK = "spark-sql-cli-mark"
#: after the marker's row, how long stderr may stay silent before a missing time means
#: the statement failed
QUIET_SECONDS = 5.0
_TIME = re.compile(r"Time taken: ([0-9.]+) seconds")


class SparkSqlError(RuntimeError):
    """A statement failed, or the CLI died or stopped answering."""


class SparkSql:
    """A running ``spark-sql`` process (``cmd``) that runs one statement at a time."""

    def __init__(
        self, cmd: Sequence[str], cwd: Path, env: dict[str, str], name: str = "spark-sql"
    ) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._out: queue.Queue[bytes | None] = queue.Queue()
        self._err: queue.Queue[bytes | None] = queue.Queue()
        self.stderr_tail: list[str] = []
        for stream, q in ((self.proc.stdout, self._out), (self.proc.stderr, self._err)):
            threading.Thread(target=_pump, args=(stream, q), daemon=True).start()
        self._n = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _line(self, q: queue.Queue[bytes | None], deadline: float) -> bytes:
        try:
            line = q.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise SparkSqlError(f"{self.name}: no answer in time; stderr: {self._tail()}") from None
        if line is None:
            raise SparkSqlError(f"{self.name} exited; stderr: {self._tail()}")
        return line

    def _tail(self) -> str:
        return "\n".join(self.stderr_tail[-40:])

    def run(self, sql: str, timeout: float = 3600.0) -> tuple[list[str], float]:
        """Run one statement: its printed rows and the CLI's "Time taken" (seconds)."""
        self._n += 1
        mark = f"{MARK} {self._n}"
        one_line = " ".join(line.strip() for line in sql.strip().rstrip(";").splitlines())
        if "--" in one_line:  # a line comment would swallow the rest of the line
            raise ValueError("statements with -- comments are not supported")
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{one_line};\nSELECT '{mark}';\n".encode())
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        rows: list[str] = []
        while True:
            line = self._line(self._out, deadline).rstrip(b"\n")
            if line.startswith(PROMPT):
                continue
            text = line.decode("utf-8", "replace")
            if text == mark:
                break
            rows.append(text)
        # the statement's time, then the marker's, printed after its row: both are written
        # by the time the row is read, give or take the pipes. A failed statement prints its
        # error and no time, so one time and then nothing for a while is a failure
        taken: list[float] = []
        other: list[str] = []
        while len(taken) < 2:
            wait = deadline if not taken else min(deadline, time.monotonic() + QUIET_SECONDS)
            try:
                raw = self._line(self._err, wait)
            except SparkSqlError:
                if taken and time.monotonic() < deadline:
                    break
                raise
            text = raw.decode("utf-8", "replace").rstrip("\n")
            self.stderr_tail = [*self.stderr_tail[-200:], text]
            m = _TIME.search(text)
            if m:
                taken.append(float(m.group(1)))
            elif text.strip():
                other.append(text)
        if len(taken) < 2:
            raise SparkSqlError(f"{self.name}: {one_line[:200]} failed: " + "\n".join(other))
        return rows, taken[0]

    def close(self) -> None:
        """End the CLI (end of input), killing it after 60 s."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> SparkSql:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pump(stream: IO[bytes], q: queue.Queue[bytes | None]) -> None:
    for line in iter(stream.readline, b""):
        q.put(line)
    q.put(None)


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` and its live descendants have used so far
    (the JVM and, on lakeskip's side, its Python brain; 0.0 without /proc)."""
    return sum(process_cpu_seconds(pid).values())


def process_cpu_seconds(pid: int) -> dict[int, float]:
    """CPU seconds (user + system, all threads) used so far by process ``pid`` and by each
    live descendant, by pid (empty without /proc): a ``spark-sql``'s JVM is ``pid``, lakeskip's
    Python brain its child."""
    out: dict[int, float] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            out[p] = (int(fields[11]) + int(fields[12])) / _TICKS
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


#: a JVM thread's kind by the start of its name (``/proc/<pid>/task/<tid>/comm``, 15 chars)
THREAD_KINDS = (
    ("Executor task", "tasks"),
    ("C1 CompilerThre", "jit"),
    ("C2 CompilerThre", "jit"),
    ("GC Thread", "gc"),
    ("G1 ", "gc"),
    ("VM Thread", "gc"),
)


class ThreadCpu:
    """CPU seconds (user + system) process ``pid`` (a JVM) had used when taken, by thread
    (``threads``: thread id -> its kind and CPU) and in all (``all``: with threads that have
    exited); empty (``all`` 0, no threads) without /proc."""

    def __init__(self, pid: int) -> None:
        self.all = 0.0
        self.threads: dict[int, tuple[str, float]] = {}
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            self.all = (int(fields[11]) + int(fields[12])) / _TICKS
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            return
        for task in tasks:
            try:
                name = (task / "comm").read_text()
                kind = next((k for prefix, k in THREAD_KINDS if name.startswith(prefix)), None)
                if kind is None:
                    continue
                f = (task / "stat").read_text().rsplit(")", 1)[1].split()
                self.threads[int(task.name)] = (kind, (int(f[11]) + int(f[12])) / _TICKS)
            except (OSError, ValueError):
                continue

    def __bool__(self) -> bool:
        return self.all > 0.0


def thread_cpu_seconds(before: ThreadCpu, after: ThreadCpu) -> dict[str, float]:
    """CPU seconds a JVM used between two snapshots by kind of thread: ``tasks`` (Spark's
    executor task threads), ``jit`` (the compilers), ``gc`` (G1's threads and the VM thread,
    which also runs the serial collector), ``other`` (the rest, with the threads that exited
    meanwhile), ``all``.

    Per thread, by id: a thread started since ``before`` counts from 0, a thread that has
    exited since counts nothing (what it used after ``before`` lands in ``other``). Spark's
    task threads come from a cached pool whose threads exit after 60 s idle; summing the
    threads alive at each end instead subtracts an exited thread's whole life (one run's task
    CPU came out at -0.63 s that way)."""
    out = {"tasks": 0.0, "jit": 0.0, "gc": 0.0}
    for tid, (kind, cpu) in after.threads.items():
        old = before.threads.get(tid)
        out[kind] += cpu - (old[1] if old is not None and old[0] == kind else 0.0)
    out["all"] = after.all - before.all
    out["other"] = out["all"] - out["tasks"] - out["jit"] - out["gc"]
    return out


def heap_committed_mib(pid: int) -> float | None:
    """The Java heap JVM ``pid`` has committed, in MiB (``jcmd <pid> GC.heap_info``: G1 sizes
    it from the JVM's own history, so two JVMs with the same ``-Xmx`` can run the same query
    on heaps of very different sizes, and collect very differently often); None if unknown.

    The heap's line (``garbage-first heap   total 1665024K, used ...``) says ``total``; the
    first ``committed`` of the output is Metaspace's (what this printed until 2026-12-01:
    ~190 MiB on both sides whatever the heap)."""
    try:
        r = subprocess.run(
            ["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"heap\s+total (\d+)K", r.stdout)
    return int(m.group(1)) / 1024 if m else None


#: HotSpot's collector counters (``sun.gc.collector.<n>``, G1): the young and mixed pauses,
#: the full collections, the pauses of the concurrent cycles (remark, cleanup)
GC_COLLECTORS = {0: "young", 1: "full", 2: "concurrent"}


def gc_counters(pid: int) -> dict[str, float]:
    """JVM ``pid``'s collections so far, from its performance counters (the memory-mapped
    ``hsperfdata`` file ``jstat`` reads; no process started, nothing stopped): per kind of
    :data:`GC_COLLECTORS` the count (``<kind>``) and the pause seconds (``<kind>_s``), and the
    old generation's bytes in use (``old_bytes``, G1: old and humongous regions); empty if
    unknown (no file: ``-XX:-UsePerfData``, another user, not HotSpot)."""
    try:
        user = pwd.getpwuid(Path(f"/proc/{pid}").stat().st_uid).pw_name
        # HotSpot's temporary directory on Linux is /tmp, whatever TMPDIR says
        counters = _perf_longs(Path("/tmp") / f"hsperfdata_{user}" / str(pid))
    except (OSError, KeyError, ValueError, struct.error):
        return {}
    hz = counters.get("sun.os.hrt.frequency") or 1
    out: dict[str, float] = {}
    for n, kind in GC_COLLECTORS.items():
        if f"sun.gc.collector.{n}.invocations" in counters:
            out[kind] = counters[f"sun.gc.collector.{n}.invocations"]
            out[f"{kind}_s"] = counters[f"sun.gc.collector.{n}.time"] / hz
    if "sun.gc.generation.1.space.0.used" in counters:
        out["old_bytes"] = counters["sun.gc.generation.1.space.0.used"]
    return out


def _perf_longs(path: Path) -> dict[str, int]:
    """The scalar long counters of a HotSpot ``hsperfdata`` file (PerfDataFile: a header with
    the byte order and the entries' offset and count, then entries of name, type, value)."""
    data = path.read_bytes()
    if data[:4] != b"\xca\xfe\xc0\xc0":
        raise ValueError(f"{path}: not a HotSpot performance data file")
    order = "<" if data[4] == 1 else ">"
    offset, count = struct.unpack_from(order + "ii", data, 24)
    out: dict[str, int] = {}
    for _ in range(count):
        length, name_at, vector, kind, _flags, _units, _var, value_at = struct.unpack_from(
            order + "iiibbbbi", data, offset
        )
        if kind == ord("J") and vector == 0:
            start = offset + name_at
            name = data[start : data.index(b"\0", start)].decode("ascii", "replace")
            out[name] = struct.unpack_from(order + "q", data, offset + value_at)[0]
        offset += length
    return out


def gc_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What a JVM collected between two :func:`gc_counters` snapshots (counts, pause seconds,
    ``old_bytes`` the old generation's growth); empty if either is."""
    if not before or not after:
        return {}
    return {k: after[k] - before[k] for k in after if k in before}


class CallbackTrace:
    """The lakeskip callbacks a JVM made, from the file its ``-Dlakeskip.callback.trace=<path>``
    system property appends to (``Bridge.TRACE_PROPERTY``: one line per callback, op, round
    trip ms, bytes sent and received, thread); :meth:`since_last` reads what was appended
    since its previous call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    def since_last(self) -> dict[str, list[float]]:
        """Per op, [calls, round-trip ms] of the callbacks appended since the last call."""
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return {}
        end = data.rfind(b"\n") + 1  # a line being written is read next time
        self._offset += end
        out: dict[str, list[float]] = {}
        for line in data[:end].decode("utf-8", "replace").splitlines():
            parts = line.split("\t")
            if len(parts) < 2:
                continue
            entry = out.setdefault(parts[0], [0, 0.0])
            entry[0] += 1
            entry[1] += float(parts[1])
        return out


_TICKS = os.sysconf("SC_CLK_TCK")
