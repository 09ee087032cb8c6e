"""The shell without Spark (issue 28): a banner at once while Spark starts in the background,
and syntax errors positioned in the text the user typed or the script they ran."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import pytest

import lakeskip.spark.front.session
from lakeskip import __version__
from lakeskip.cli import main
from lakeskip.sql.statements import parse_statements


class _Result:
    columns = ("result",)

    def limit(self, n: int) -> _Result:
        return self

    def collect(self) -> list[tuple[str]]:
        return [("parsed",)]


class _ParseOnly:
    """A session that only parses: no Spark."""

    current_database = "default"
    last_reports: tuple[object, ...] = ()

    def sql(self, text: str) -> object:
        parse_statements(text)
        return _Result()


def test_banner_comes_before_spark_and_the_prompt_does_not_wait(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release = threading.Event()
    calls: list[str] = []

    def slow_connect(warehouse: str, **kwargs: object) -> object:
        calls.append(warehouse)
        release.wait(60)  # Spark "starting" until the test is done
        return _ParseOnly()

    monkeypatch.setattr(lakeskip.spark.front.session, "connect", slow_connect)
    monkeypatch.setattr("sys.stdin", io.StringIO("exit\n"))
    try:
        code = main(["sql", "--warehouse", str(tmp_path / "wh")])
        assert not release.is_set() and code == 0, "returned while Spark was still starting"
    finally:
        release.set()
    err = capsys.readouterr().err
    assert err.startswith(f"lakeskip {__version__}, warehouse {tmp_path / 'wh'} "), err
    assert calls == [str(tmp_path / "wh")]


def test_interactive_errors_count_lines_from_the_statement(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(lakeskip.spark.front.session, "connect", lambda *a, **k: _ParseOnly())
    monkeypatch.setattr("sys.stdin", io.StringIO("SELEC 1;\nSELEC 2;\nSELECT *\n  FROM;\n"))
    assert main(["sql", "--warehouse", str(tmp_path / "wh")]) == 1
    errors = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("Error:")]
    assert errors[0] == "Error: Syntax error at or near 'SELEC' (line 1, col 1)"
    assert errors[1] == errors[0], "a one-line typo after another statement is on line 1"
    assert "(line 2, col " in errors[2], errors[2]


def test_script_errors_are_positioned_in_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(lakeskip.spark.front.session, "connect", lambda *a, **k: _ParseOnly())
    script = tmp_path / "s.sql"
    script.write_text("SELECT 1;\nSELECT\n 2;\n-- a comment\n\n  SELEC 3;\n", encoding="utf-8")
    assert main(["sql", "--warehouse", str(tmp_path), "-f", str(script)]) == 1
    err = capsys.readouterr().err
    assert "Error: Syntax error at or near 'SELEC' (line 6, col 3)" in err, err
    assert not err.startswith("lakeskip "), "no banner for scripts"


def test_spark_that_cannot_start_is_one_line_at_the_first_statement(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("Java gateway process exited\nstack...")

    monkeypatch.setattr(lakeskip.spark.front.session, "connect", broken)
    monkeypatch.setattr("sys.stdin", io.StringIO("SELECT 1;\n"))
    assert main(["sql", "--warehouse", os.fspath(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Error: cannot start Spark: Java gateway process exited\n" in err, err
