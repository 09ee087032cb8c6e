"""Deterministic crash injection: run an operation in a forked child that kills itself at the
k-th file-system step, for every k, and hand each crashed warehouse to a checker.

A *step* is one mutating :class:`~lakeskip.catalog.file_io.FileIO` call (``write_bytes``,
``try_create``, ``open_output``, ``delete``, ``delete_dir``, ``rename``) plus the moment
*after* each raw file write (``_write``: the temp file of an atomic write exists, the rename
or link that publishes it has not happened). The child ``os._exit``s right before step k, so
k = 1..N reaches every state between two steps, and the first k the operation survives
ends the sweep. All table I/O goes through FileIO (a non-negotiable), so these are all the
states a ``kill -9`` can leave.

Forking (no interpreter start, no re-import) keeps a sweep fast; the child inherits the
parent's imports and caches and never returns into pytest.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakeskip.catalog.file_io import FileIO

__all__ = ["CrashSweep", "sweep"]

CRASHED = 86
_BEFORE = ("write_bytes", "try_create", "open_output", "delete", "delete_dir", "rename")


def _install(k: int) -> list[int]:
    """Patch FileIO in this (child) process to exit at step k; returns the step counter."""
    count = [0]

    def step() -> None:
        count[0] += 1
        if count[0] == k:
            os._exit(CRASHED)

    def before(orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: FileIO, *args: Any, **kwargs: Any) -> Any:
            step()
            return orig(self, *args, **kwargs)

        return wrapper

    def after(orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: FileIO, *args: Any, **kwargs: Any) -> Any:
            out = orig(self, *args, **kwargs)
            step()
            return out

        return wrapper

    for name in _BEFORE:
        setattr(FileIO, name, before(getattr(FileIO, name)))
    FileIO._write = after(FileIO._write)  # type: ignore[method-assign]
    return count


def _child(k: int, root: str, op: Callable[[str], Any], conn: Any) -> None:
    try:
        count = _install(k)
        op(root)
        conn.send(("done", count[0]))
        conn.close()
        os._exit(0)
    except BaseException as e:  # reported to the parent, which fails the test
        conn.send(("error", f"{type(e).__name__}: {e}"))
        conn.close()
        os._exit(1)


@dataclass(frozen=True)
class CrashSweep:
    """``steps``: how many steps the operation takes when not crashed."""

    steps: int


def sweep(
    template: str,
    op: Callable[[str], Any],
    check: Callable[[str, int], None],
    *,
    max_steps: int = 500,
) -> CrashSweep:
    """For k = 1, 2, ...: copy the warehouse ``template`` (modification times kept), run
    ``op(copy)`` in a child that dies before step k, and call ``check(copy, k)``; stop at the
    first k the operation completes (then ``check`` is not called: the caller knows the
    uncrashed result).

    Raises:
        AssertionError: the operation failed in a child (not a crash), or never completed.
    """
    ctx = multiprocessing.get_context("fork")
    for k in range(1, max_steps + 1):
        work = tempfile.mkdtemp(prefix=f"crash-{k}-")
        try:
            root = os.path.join(work, "wh")
            shutil.copytree(template, root, copy_function=shutil.copy2)
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(k, root, op, child))
            proc.start()
            child.close()
            proc.join(120)
            assert proc.exitcode is not None, f"step {k}: the child hung"
            if proc.exitcode == 0:
                _, steps = parent.recv()
                return CrashSweep(steps)
            if proc.exitcode != CRASHED:
                message = parent.recv()[1] if parent.poll() else f"exit code {proc.exitcode}"
                raise AssertionError(f"step {k}: the operation failed: {message}")
            check(root, k)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    raise AssertionError(f"the operation did not complete within {max_steps} steps")
