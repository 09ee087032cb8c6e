"""Spark's exceptions as one line for a user (no JVM or py4j stack)."""

from __future__ import annotations

import re

__all__ = ["spark_error_message"]

_PY_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (.+)$")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\s*$")


def spark_error_message(e: BaseException) -> str:
    """Spark's message in one line, without the JVM stack trace.

    A failure inside a Python worker (whose first line only says that one happened) is
    reported by its root cause: the last ``SomeError: message`` line of the worker's
    traceback (e.g. ``ModuleNotFoundError: No module named 'lakeskip'``).
    """
    text = str(e).strip()
    lines = text.splitlines()
    first = _SQLSTATE.sub("", lines[0]).strip() if lines else type(e).__name__
    if "Traceback (most recent call last)" in text:
        tail = text[text.rindex("Traceback (most recent call last)") :].splitlines()
        causes = [m for ln in tail if (m := _PY_ERROR_LINE.match(ln.strip()))]
        if causes:
            cause = _SQLSTATE.sub("", causes[-1].group(0))
            first = f"Python worker failed: {cause}"
    first = first.replace("[USER_RAISED_EXCEPTION] ", "")
    return first[:500]
