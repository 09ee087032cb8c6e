"""The one ``;`` splitter of the SQL layer and the shell (:mod:`lakeskip.sql.splitter`): random
statements joined by ``;`` and random whitespace and comments come back as they were, at
their offsets; a syntax error after them is positioned in the whole text, by the parser and
by the shell alike."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples

from lakeskip.cli import Shell
from lakeskip.errors import SqlParseError
from lakeskip.sql.splitter import Piece, position, split_complete, split_statements
from lakeskip.sql.statements import parse_statements

_TRICKY = ";'\"`-/*\n \\x"


def _quoted(q: str) -> st.SearchStrategy[str]:
    """A string or a backquoted name holding ``;``, comment marks and (in strings) escapes."""
    plain = st.sampled_from([c for c in _TRICKY if c not in (q, "\\")])
    parts = st.one_of(plain, st.sampled_from(["\\" + c for c in _TRICKY])) if q != "`" else plain
    return st.lists(parts, max_size=6).map(lambda xs: q + "".join(xs) + q)


_BLOCK = st.lists(st.sampled_from(list(";'\"`-\n x*")), max_size=6).map(
    lambda xs: "/*" + "".join(xs).replace("*", "* ") + " */"
)
_LINE = st.lists(st.sampled_from(list(";'\"`-/* x")), max_size=6).map(
    lambda xs: "--" + "".join(xs) + "\n"
)
_SPACE = st.sampled_from([" ", "\n", "\t", "  \n "])
#: what may stand between statements: whitespace and comments (with ``;`` in them)
_SEPARATOR = st.lists(st.one_of(_SPACE, _BLOCK, _LINE), max_size=4).map("".join)
_WORD = st.sampled_from(["SELECT", "x", "1", "a.b", "+", "(", ")", ",", "=", "--x\n", "/*;*/"])
_ATOM = st.one_of(_WORD, _quoted("'"), _quoted('"'), _quoted("`"), _BLOCK, _LINE)
_STATEMENT = st.builds(
    lambda head, atoms: " ".join([head, *atoms]),
    st.sampled_from(["SELECT", "x", "CREATE", "1"]),
    st.lists(_ATOM, max_size=6),
)


@st.composite
def _script(draw: st.DrawFn) -> tuple[str, list[Piece], bool, str]:
    """Statements joined by ``;`` (the last one's optional), with blank pieces between them:
    the text, the pieces it holds, whether the last one is terminated, and the whitespace and
    comments after it."""
    statements = draw(st.lists(_STATEMENT, min_size=1, max_size=5))
    text, pieces = "", []
    for s in statements:
        if draw(st.booleans()):  # a piece of nothing but comments: not a statement
            text += draw(_SEPARATOR) + ";"
        piece = draw(_SEPARATOR) + s
        pieces.append(Piece(piece, len(text)))
        text += piece + ";"
    terminated = draw(st.booleans())
    if not terminated:
        text = text[:-1]
    return text, pieces, terminated, draw(_SEPARATOR)


@settings(max_examples=unit_examples(300), deadline=None)
@given(_script())
def test_split_gives_the_statements_back(script: tuple[str, list[Piece], bool, str]) -> None:
    body, pieces, terminated, trailer = script
    text = body + trailer
    expected = list(pieces)
    if not terminated:  # what follows the last statement is part of it
        expected[-1] = Piece(pieces[-1].text + trailer, pieces[-1].offset)
    assert split_statements(text) == expected, text
    for p in expected:
        assert text[p.offset : p.offset + len(p.text)] == p.text


@settings(max_examples=unit_examples(300), deadline=None)
@given(_script(), st.sampled_from(["", " ", "\n", "SELECT 'x;", "SELECT /* ; ", "x -- ;"]))
def test_shell_keeps_the_unfinished_rest(
    script: tuple[str, list[Piece], bool, str], unfinished: str
) -> None:
    body, pieces, terminated, trailer = script
    buffer = body + ("" if terminated else ";") + trailer + unfinished
    done, rest = split_complete(buffer)
    assert done == pieces, buffer
    assert rest == trailer + unfinished, buffer


def test_blank_and_comment_only_pieces_are_not_statements() -> None:
    assert split_statements(" ;\n-- only a comment;\n; /* ; */ ;") == []
    done, rest = split_complete("SELECT 1; /* c */ ; -- d\n")
    assert done == [Piece("SELECT 1", 0)] and rest == " -- d\n"


# -- error positions: the parser and the shell ------------------------------------------------

_VALUE = st.one_of(
    st.integers(0, 999).map(str),
    st.sampled_from(["'a;b'", "'it\\'s; --'", "`c;d`", "'/* ; */'", '"x;"']),
)
_VALID = st.builds(
    lambda values, gaps: "SELECT " + ", ".join(v + g for v, g in zip(values, gaps, strict=False)),
    st.lists(_VALUE, min_size=1, max_size=4),
    st.lists(st.one_of(st.just(""), _BLOCK, _LINE), min_size=4, max_size=4),
)


@st.composite
def _typo_after_statements(draw: st.DrawFn) -> tuple[str, tuple[int, int]]:
    """Valid queries, then a one-line typo: the text and the typo's (line, column)."""
    text = "".join(draw(_SEPARATOR) + s + ";" for s in draw(st.lists(_VALID, max_size=3)))
    text += draw(_SEPARATOR)
    at = position(text, len(text))
    return text + "SELEC 1;" + draw(_SEPARATOR), at


@settings(max_examples=unit_examples(60), deadline=None)
@given(_typo_after_statements())
def test_parse_errors_are_positioned_in_the_whole_text(case: tuple[str, tuple[int, int]]) -> None:
    text, (line, col) = case
    with pytest.raises(SqlParseError) as info:
        parse_statements(text)
    assert (info.value.line, info.value.col) == (line, col), text


class _ParseOnly:
    """A session that only parses: the shell without Spark."""

    current_database = "default"
    last_reports: tuple[object, ...] = ()

    def sql(self, text: str) -> object:
        parse_statements(text)
        return _Result()


class _Result:
    columns = ("result",)

    def limit(self, n: int) -> _Result:
        return self

    def collect(self) -> list[tuple[str]]:
        return [("parsed",)]


@settings(max_examples=unit_examples(60), deadline=None)
@given(_typo_after_statements())
def test_shell_script_errors_are_positioned_in_the_whole_text(
    case: tuple[str, tuple[int, int]],
) -> None:
    text, (line, col) = case
    out, err = io.StringIO(), io.StringIO()
    assert Shell(_ParseOnly(), out, err).run_script(text) == 1  # type: ignore[arg-type]
    errors = [ln for ln in err.getvalue().splitlines() if ln.startswith("Error:")]
    assert errors == [f"Error: Syntax error at or near 'SELEC' (line {line}, col {col})"], text


class _NeedsAStatement(_ParseOnly):
    """As ``Session.sql``: text without a statement is an error."""

    def sql(self, text: str) -> object:
        if not parse_statements(text):
            raise SqlParseError("no SQL statement to run")
        return _Result()


def test_a_script_may_end_in_a_comment() -> None:
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(_NeedsAStatement(), out, err)  # type: ignore[arg-type]
    assert shell.run_script("SELECT 1;\n/* ; */;\n-- the end\n") == 0, err.getvalue()
    assert out.getvalue().count("parsed") == 1, out.getvalue()
