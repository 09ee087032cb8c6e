"""Statement routing by tables (issue 29): every statement type has a parser entry (a ``HELP``
example the parser turns into it), a handler in ``HANDLERS`` and a ``HELP`` row. A new
statement type missing any of the three fails here. No Spark: only the tables are read."""

from __future__ import annotations

import sys

import lakeskip.sql.merge  # noqa: F401  (Merge is a statement type too)
from lakeskip.spark.front.statements import HANDLERS
from lakeskip.sql.help import HELP
from lakeskip.sql.statement_types import Statement
from lakeskip.sql.statements import parse_statement


def _statement_types() -> set[type[Statement]]:
    """Every subclass of Statement, as its module names it (``@dataclass(slots=True)``
    replaces the class it decorates: the first one is a subclass too, until collected)."""
    found: set[type[Statement]] = set()
    todo = list(Statement.__subclasses__())
    while todo:
        t = todo.pop()
        if getattr(sys.modules[t.__module__], t.__qualname__, None) is t:
            found.add(t)
        todo += t.__subclasses__()
    return found


def _examples() -> dict[type[Statement], list[str]]:
    """The statement type each HELP example parses to."""
    out: dict[type[Statement], list[str]] = {}
    for row in HELP:
        for sql in row.examples:
            out.setdefault(type(parse_statement(sql)), []).append(sql)
    return out


def test_every_statement_type_parses_from_a_help_example() -> None:
    types = _statement_types()
    assert len(types) >= 24, sorted(t.__name__ for t in types)
    missing = sorted(t.__name__ for t in types - set(_examples()))
    assert not missing, f"no HELP row has an example that parses to {missing}"


def test_every_statement_type_has_a_handler() -> None:
    missing = sorted(t.__name__ for t in _statement_types() - set(HANDLERS))
    assert not missing, f"no handler in lakeskip.spark.front.statements.HANDLERS for {missing}"
    stale = sorted(t.__name__ for t in set(HANDLERS) - _statement_types())
    assert not stale, stale


def test_help_rows_are_distinct_and_described() -> None:
    syntaxes = [r.syntax for r in HELP]
    assert len(set(syntaxes)) == len(syntaxes), syntaxes
    assert all(r.syntax.strip() and r.description.strip() for r in HELP)
    assert HELP[-1].syntax == "anything else", "the catch-all row comes last"
