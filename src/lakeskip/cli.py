"""The ``lakeskip`` command: an interactive SQL shell in the spirit of ``spark-sql``, and the demo.

Usage::

    lakeskip sql                          # interactive shell
    lakeskip sql -e "SHOW TABLES; SELECT 1"
    lakeskip sql -f script.sql --warehouse ./warehouse --conf spark.driver.memory=4g
    lakeskip demo                         # sample table, indexed queries, timings
    lakeskip spark-conf --warehouse W     # the --conf flags that put lakeskip into any Spark
    lakeskip spark-sql --warehouse W -- -f script.sql     # Spark's own spark-sql, configured
    lakeskip thriftserver --warehouse W --port 10000       # Spark's Thrift JDBC server
    lakeskip connect-server --warehouse W --port 15002     # a Spark Connect server

Exit status: 0 when every statement succeeded, 1 when one failed (``-e``/``-f`` stop at the
first failure), 2 for bad command-line usage.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TextIO

from lakeskip import __version__
from lakeskip.errors import LakeskipError, SqlParseError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakeskip.planner.report import PruningReport
    from lakeskip.spark.front.session import Session

__all__ = ["format_table", "main", "split_complete"]

HISTORY_FILE = os.path.expanduser("~/.lakeskip_history")


# -- statement splitting -------------------------------------------------------------------


def split_complete(buffer: str) -> tuple[list[str], str]:
    """Split off the complete ``;``-terminated statements of ``buffer``.

    Quotes (``'``, ``"``, backticks) and comments (``--``, ``/* */``) are respected.
    Returns the complete statements (without the ``;``) and the unfinished rest.

    >>> split_complete("select ';'; select 2")
    (["select ';'"], ' select 2')
    >>> split_complete("select 1 -- no; end\\n;")
    (['select 1 -- no; end\\n'], '')
    """
    done: list[str] = []
    start = 0
    i, n = 0, len(buffer)
    quote: str | None = None
    while i < n:
        c = buffer[i]
        if quote:
            if c == "\\" and quote != "`":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in ("'", '"', "`"):
            quote = c
        elif c == "-" and buffer.startswith("--", i):
            j = buffer.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c == "/" and buffer.startswith("/*", i):
            j = buffer.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        elif c == ";":
            done.append(buffer[start:i])
            start = i + 1
        i += 1
    return [d for d in done if d.strip()], buffer[start:]


# -- output ----------------------------------------------------------------------------------


def _cell(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, (bytes, bytearray)):
        return "0x" + bytes(v).hex()
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_cell(k)}: {_cell(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_cell(x) for x in v) + "]"
    return str(v)


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as an aligned ASCII table.

    >>> print(format_table(["id", "name"], [(1, "a"), (22, None)]))
    +----+------+
    | id | name |
    +----+------+
    | 1  | a    |
    | 22 | NULL |
    +----+------+
    """
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [len(c) for c in columns]
    for r in cells:
        for j, v in enumerate(r):
            widths[j] = max(widths[j], max((len(x) for x in v.splitlines()), default=0))
    sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [
        sep,
        "| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |",
        sep,
    ]
    out.extend(
        "| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |" for r in cells
    )
    out.append(sep)
    return "\n".join(out)


class _Progress:
    """Shows running Spark stages on stderr while a statement runs (interactive only)."""

    def __init__(self, session: Session, stream: TextIO) -> None:
        self.session = session
        self.stream = stream
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.shown = False

    def __enter__(self) -> _Progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=2)
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _run(self) -> None:
        tracker = self.session.spark.sparkContext.statusTracker()
        while not self.stop.wait(0.5):
            try:
                parts = []
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is not None:
                        parts.append(
                            f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks"
                            + (f" ({info.numActiveTasks} running)" if info.numActiveTasks else "")
                        )
                if parts:
                    self.stream.write("\r\033[K[" + "; ".join(parts) + "]")
                    self.stream.flush()
                    self.shown = True
            except Exception:  # the progress line must never break a statement
                return


# -- running statements --------------------------------------------------------------------


class Shell:
    """Runs statements and prints results, timings, pruning summaries and errors."""

    def __init__(
        self,
        session: Session | Future[Session],
        out: TextIO,
        err: TextIO,
        max_rows: int = 1000,
        verbose: bool = False,
        progress: bool = False,
    ) -> None:
        # a Future while Spark starts in the background: the first statement waits for it
        self._session = session
        self.out = out
        self.err = err
        self.max_rows = max_rows
        self.verbose = verbose
        self.progress = progress

    @property
    def session(self) -> Session:
        """The session (waits for Spark to start; raises why it could not)."""
        if isinstance(self._session, Future):
            self._session = self._session.result()
        return self._session

    @property
    def current_database(self) -> str:
        """For the prompt: never waits for Spark."""
        s = self._session
        if isinstance(s, Future):
            if not s.done() or s.exception() is not None:
                return "default"
            s = s.result()
        return s.current_database

    def run(self, statement: str, at: tuple[int, int] = (1, 1)) -> bool:
        """Run one statement; print its result. Returns False if it failed.

        ``at``: the (line, column) where ``statement`` starts in the script or input it
        came from; a syntax error's position is reported there.
        """
        try:
            _ = self.session  # Spark may still be starting
        except Exception as e:
            self.err.write(f"Error: cannot start Spark: {_first_line(e)}\n")
            return False
        started = time.perf_counter()
        try:
            # fetch under the progress line, print after it is cleared (never glued together)
            if self.progress:
                with _Progress(self.session, self.err):
                    df, rows, reports = self._fetch_interruptibly(statement)
            else:
                df, rows, reports = self._fetch_interruptibly(statement)
            shown = self._print(df, rows)
        except KeyboardInterrupt:
            self.err.write("Cancelled.\n")
            return False
        except Exception as e:
            self.err.write(f"Error: {self._message(_moved(e, at))}\n")
            if self.verbose:
                traceback.print_exception(e, file=self.err)
            return False
        elapsed = time.perf_counter() - started
        for r in reports:
            self.err.write(f"Pruning: {r.summary()}\n")
        self.err.write(f"Time taken: {elapsed:.2f} s{shown}\n")
        return True

    def _fetch(self, statement: str) -> tuple[DataFrame, list[Any], list[PruningReport]]:
        df = self.session.sql(statement)
        return df, df.limit(self.max_rows + 1).collect(), self.session.last_reports

    def _fetch_interruptibly(
        self, statement: str
    ) -> tuple[DataFrame, list[Any], list[PruningReport]]:
        """Run the statement in a worker thread so Ctrl-C lands here, between py4j calls,
        not inside one (which leaves py4j's connection mid-reply and prints its tracebacks).
        """
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = self._fetch(statement)
            except BaseException as e:
                box["error"] = e

        worker = threading.Thread(target=target, name="lakeskip-statement", daemon=True)
        worker.start()
        try:
            while worker.is_alive():
                worker.join(0.1)
        except KeyboardInterrupt:
            self._cancel(worker)
            raise
        if "error" in box:
            raise box["error"]
        result: tuple[DataFrame, list[Any], list[PruningReport]] = box["value"]
        return result

    def _cancel(self, worker: threading.Thread) -> None:
        """Cancel the running Spark jobs and wait for the statement to give up, with
        Spark's and py4j's logging off meanwhile (the cancellation is not an error)."""
        loggers = [logging.getLogger(n) for n in ("", "py4j", "py4j.clientserver")]
        saved = [lg.level for lg in loggers]
        for lg in loggers:
            lg.setLevel(logging.CRITICAL + 1)
        try:
            sc = self.session.spark.sparkContext
            sc.setLogLevel("OFF")
            sc.cancelAllJobs()
            worker.join(60)
            sc.setLogLevel("ERROR")
        except Exception:  # the JVM may be gone; the shell still returns to its prompt
            pass
        finally:
            for lg, level in zip(loggers, saved, strict=True):
                lg.setLevel(level)

    def _print(self, df: DataFrame, rows: list[Any]) -> str:
        truncated = len(rows) > self.max_rows
        rows = rows[: self.max_rows]
        if df.columns == ["result"] and len(rows) == 1:
            self.out.write(f"{rows[0][0]}\n")
            return ""
        if df.columns == ["plan"] and len(rows) == 1:
            self.out.write(f"{rows[0][0]}\n")
            return ""
        self.out.write(format_table(df.columns, [tuple(r) for r in rows]) + "\n")
        self.out.flush()
        n = len(rows)
        more = f" (first {n} rows shown; --max-rows)" if truncated else ""
        return f", fetched {n} row{'s' if n != 1 else ''}{more}"

    def _message(self, e: BaseException) -> str:
        if isinstance(e, LakeskipError):
            return str(e)
        first = str(e).strip().splitlines()
        return f"{type(e).__name__}: {first[0] if first else ''}"

    def run_script(self, text: str) -> int:
        statements, rest = split_complete(text)
        if rest.strip():
            statements.append(rest)
        pos = 0
        for s in statements:
            pos = text.index(s, pos)
            line = text.count("\n", 0, pos) + 1
            col = pos - (text.rfind("\n", 0, pos) + 1) + 1
            if not self.run(s, (line, col)):
                return 1
            pos += len(s)
        return 0

    def interactive(self, stdin: TextIO) -> int:
        try:
            import readline

            if os.path.exists(HISTORY_FILE):
                readline.read_history_file(HISTORY_FILE)
        except (ImportError, OSError):
            readline = None  # type: ignore[assignment]
        buffer = ""
        failed = False
        while True:
            prompt = (
                f"lakeskip ({self.current_database})> " if not buffer.strip() else "         ...> "
            )
            try:
                line = input(prompt) if stdin.isatty() else _read_line(stdin)
            except EOFError:
                break
            except KeyboardInterrupt:
                self.out.write("\n")
                buffer = ""
                continue
            if not buffer.strip() and line.strip().lower() in ("exit", "quit", "exit;", "quit;"):
                break
            buffer += line + "\n"
            statements, buffer = split_complete(buffer)
            if not buffer.strip():
                buffer = ""  # the newline after a ';' is not the next statement's line 1
            for s in statements:
                failed |= not self.run(s)
        if readline is not None:
            with contextlib.suppress(OSError):
                readline.write_history_file(HISTORY_FILE)
        return 1 if failed and not stdin.isatty() else 0


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def _moved(e: BaseException, at: tuple[int, int]) -> BaseException:
    """A syntax error of a statement that starts at ``at``, positioned in the whole text."""
    if not isinstance(e, SqlParseError) or e.line is None or e.col is None or at == (1, 1):
        return e
    line = e.line + at[0] - 1
    col = e.col + (at[1] - 1 if e.line == 1 else 0)
    return SqlParseError(e.message, line, col)


def _read_line(stdin: TextIO) -> str:
    line = stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


# -- entry point ---------------------------------------------------------------------------


def _conf_pairs(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for p in pairs:
        if "=" not in p:
            raise SystemExit(f"lakeskip: --conf takes key=value, got {p!r}")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lakeskip", description="lakeskip: data skipping for Spark"
    )
    parser.add_argument("--version", action="version", version=f"lakeskip {__version__}")
    sub = parser.add_subparsers(dest="command")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--warehouse", default=os.environ.get("LAKESKIP_WAREHOUSE", "./warehouse"))
        p.add_argument("--master", default=None, help="Spark master (default local[*])")
        p.add_argument("--conf", action="append", default=[], metavar="K=V", help="Spark config")
        p.add_argument("--verbose", action="store_true", help="show stack traces")

    sql = sub.add_parser("sql", help="SQL shell; -e/-f for scripts")
    common(sql)
    sql.add_argument("-e", dest="execute", help="statements to run, separated by ;")
    sql.add_argument("-f", dest="file", help="a SQL file to run")
    sql.add_argument("--database", default=None, help="initial current database")
    sql.add_argument("--max-rows", type=int, default=1000, help="rows to print per result")
    demo = sub.add_parser("demo", help="generate a sample table and show pruning")
    common(demo)
    demo.add_argument("--rows", type=int, default=2_000_000)
    demo.add_argument("--files", type=int, default=32)

    def spark_side(p: argparse.ArgumentParser) -> None:
        p.add_argument("--warehouse", default=os.environ.get("LAKESKIP_WAREHOUSE", "./warehouse"))
        p.add_argument("--catalog-name", default="lakeskip", help="the catalog's name")
        p.add_argument(
            "--session-catalog",
            action="store_true",
            help="also install lakeskip as spark_catalog (unqualified names)",
        )
        p.add_argument("--python", default=None, help="Python with lakeskip (default: this one)")
        p.add_argument("--conf", action="append", default=[], metavar="K=V", help="Spark config")

    conf = sub.add_parser("spark-conf", help="print the --conf flags that install lakeskip")
    spark_side(conf)
    conf.add_argument(
        "--format",
        choices=("flags", "properties"),
        default="flags",
        help="--conf flags (default) or spark-defaults.conf lines",
    )
    for name, what in (
        ("spark-sql", "run Spark's spark-sql with lakeskip (arguments after -- go to it)"),
        ("thriftserver", "run Spark's Thrift JDBC server with lakeskip (foreground)"),
        ("connect-server", "run a Spark Connect server with lakeskip (foreground)"),
    ):
        p = sub.add_parser(name, help=what)
        spark_side(p)
        if name != "spark-sql":
            p.add_argument("--host", default="127.0.0.1", help="address to listen on")
            p.add_argument("--port", type=int, default=None, help="port to listen on")
        p.add_argument(
            "--print", action="store_true", help="print the command instead of running it"
        )
        p.add_argument("args", nargs=argparse.REMAINDER, help="passed on to Spark")
    return parser


def _start_in_background(
    warehouse: str, master: str | None, conf: dict[str, str]
) -> Future[Session]:
    """``connect(...)`` on a daemon thread (JVM start, catalog build): the shell's prompt
    comes up at once."""
    future: Future[Session] = Future()

    def start() -> None:
        try:
            from lakeskip.spark.front.session import connect

            future.set_result(connect(warehouse, master=master, conf=conf))
        except BaseException as e:
            future.set_exception(e)

    threading.Thread(target=start, name="lakeskip-spark-start", daemon=True).start()
    return future


def _frontend(args: argparse.Namespace) -> int:
    """``spark-conf`` and the Spark front ends: no Spark in this process."""
    from lakeskip.spark.front.frontends import (
        conf_flags,
        frontend_command,
        frontend_conf,
        shell_line,
    )

    try:
        conf = frontend_conf(
            args.warehouse,
            args.catalog_name,
            as_session_catalog=args.session_catalog,
            python=args.python,
        )
    except LakeskipError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    conf.update(_conf_pairs(args.conf))
    if args.command == "spark-conf":
        if args.format == "properties":
            print("\n".join(f"{k} {v}" for k, v in conf.items()))
        else:
            print(shell_line(conf_flags(conf)))
        return 0
    rest = [a for a in args.args if a != "--"] if args.args[:1] == ["--"] else list(args.args)
    cmd = frontend_command(
        args.command,
        conf,
        port=getattr(args, "port", None),
        host=getattr(args, "host", "127.0.0.1"),
        args=rest,
    )
    if args.print:
        print(shell_line(cmd))
        return 0
    sys.stdout.flush()
    os.execv(cmd[0], cmd)
    return 0  # not reached


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 2
    if args.command in ("spark-conf", "spark-sql", "thriftserver", "connect-server"):
        return _frontend(args)
    conf = _conf_pairs(args.conf)
    interactive = args.command == "sql" and args.execute is None and args.file is None
    source: Session | Future[Session]
    if interactive:
        # say who we are at once; Spark starts meanwhile and the first statement waits
        print(
            f"lakeskip {__version__}, warehouse {os.path.abspath(args.warehouse)} "
            "(Spark is starting; end statements with ';', exit to leave)",
            file=sys.stderr,
            flush=True,
        )
        source = _start_in_background(args.warehouse, args.master, conf)
    else:
        try:
            from lakeskip.spark.front.session import connect

            source = connect(args.warehouse, master=args.master, conf=conf)
        except Exception as e:
            print(f"Error: cannot start Spark: {_first_line(e)}", file=sys.stderr)
            return 1
    if threading.current_thread() is threading.main_thread():
        # PySpark's SIGINT handler calls into the JVM from inside the signal handler, in the
        # middle of the main thread's own py4j call; the shell cancels jobs itself
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.command == "demo":
        from lakeskip.spark.front.demo import run_demo

        assert not isinstance(source, Future)
        return run_demo(source, rows=args.rows, files=args.files, out=sys.stdout)
    shell = Shell(
        source,
        sys.stdout,
        sys.stderr,
        max_rows=args.max_rows,
        verbose=args.verbose,
        progress=sys.stderr.isatty(),
    )
    if args.database and not shell.run(f"USE {args.database}"):
        return 1
    if args.execute is not None:
        return shell.run_script(args.execute)
    if args.file is not None:
        try:
            with open(args.file, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as e:
            print(f"Error: cannot read {args.file}: {e.strerror}", file=sys.stderr)
            return 1
        return shell.run_script(text)
    return shell.interactive(sys.stdin)


if __name__ == "__main__":
    sys.exit(main())
