"""Splitting SQL text on ``;``: the one splitter of :func:`~lakeskip.sql.statements.parse_statements`
and the shell (:mod:`lakeskip.cli`).

A ``;`` ends a statement unless it is inside a quoted string (``'...'``, ``"..."``, where a
backslash escapes the next character), a backquoted name (```...```, no escapes), a ``--``
comment (to the end of the line) or a ``/* ... */`` comment. A piece that holds nothing but
whitespace and comments is not a statement. Each piece keeps its offset in the text, so
that a syntax error is positioned in the text the user wrote.

Example:
    >>> [(p.text, p.offset) for p in split_statements("select ';' ; -- c;\\nselect 2;")]
    [("select ';' ", 0), (' -- c;\\nselect 2', 12)]
    >>> done, rest = split_complete("select 1 -- no; end\\n; /* ; */ ; select")
    >>> [p.text for p in done], rest
    (['select 1 -- no; end\\n'], ' select')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "LEADING_COMMENTS",
    "Piece",
    "is_blank",
    "position",
    "split_complete",
    "split_statements",
    "strip_comments",
]


@dataclass(frozen=True, slots=True)
class Piece:
    """One statement's text (without its ``;``) and where it starts in the split text."""

    text: str
    offset: int


def _scan(text: str) -> tuple[list[Piece], int]:
    """The ``;``-terminated pieces of ``text`` and the offset of the unterminated rest."""
    done: list[Piece] = []
    start, i, n = 0, 0, len(text)
    quote: str | None = None
    while i < n:
        c = text[i]
        if quote:
            if c == "\\" and quote != "`":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in ("'", '"', "`"):
            quote = c
        elif c == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        elif c == ";":
            done.append(Piece(text[start:i], start))
            start = i + 1
        i += 1
    return done, start


def split_statements(text: str) -> list[Piece]:
    """Every statement of ``text``, the last one with or without its ``;``."""
    done, rest = _scan(text)
    done.append(Piece(text[rest:], rest))
    return [p for p in done if not is_blank(p.text)]


def split_complete(buffer: str) -> tuple[list[Piece], str]:
    """The complete (``;``-terminated) statements of ``buffer``, and the unfinished rest as
    it is (the shell keeps reading lines onto it)."""
    done, rest = _scan(buffer)
    return [p for p in done if not is_blank(p.text)], buffer[rest:]


def strip_comments(text: str) -> str:
    """``text`` with each comment replaced by a space (quotes are not looked at: for
    statements' first words and blank checks only)."""
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.S)


def is_blank(text: str) -> bool:
    """Nothing but whitespace and comments."""
    return not strip_comments(text).strip()


#: whitespace and comments before a statement's first word
LEADING_COMMENTS = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)+", re.S)


def position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based (line, column) of ``offset`` in ``text``.

    >>> position("a\\nbc", 3)
    (2, 2)
    """
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col
