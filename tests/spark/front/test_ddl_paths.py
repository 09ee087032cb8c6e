"""One DDL meaning on every path (issue 28): the CREATE TABLE corpus
(``tests/fixtures/sql/create_table.sql``) through Session.sql (qualified or not), ``lakeskip
sql``, and plain ``spark.sql`` in sessions built by ``lakeskip.connect()`` (the lakeskip
catalog, qualified or after ``USE``; with ``as_session_catalog=True`` also spark_catalog,
qualified or not) must write the same schema files, or fail with the same one-line error and
leave no table. The primary-key upsert of the issue must upsert in every session kind."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.spark.front.ddl_corpus import UPSERT, load_corpus, run_path, upsert_rows

import lakeskip
from lakeskip.cli import main

RUNNER = Path(__file__).with_name("ddl_corpus.py")
UPSERTED = [[1, "a2"], [2, "b"]]


class CliError(Exception):
    pass


def _start(mode: str, warehouse: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(RUNNER), mode, str(warehouse)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def own_jvms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], dict[str, Any]]]:
    """The sessions that need their own JVM (``ddl_corpus.py plain|session_catalog``), started
    at once so they run while a test works in this process; the callable waits for their
    results. One JVM per session kind for the whole module (a JVM start is the dear part)."""
    base = tmp_path_factory.mktemp("own_jvms")
    built = {mode: _start(mode, base / mode) for mode in ("plain", "session_catalog")}
    results: dict[str, Any] = {}

    def finish() -> dict[str, Any]:
        if not results:
            results.update({mode: _finish(proc) for mode, proc in built.items()})
        return results

    try:
        yield finish
    finally:
        for proc in built.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def test_create_table_corpus_agrees_on_every_path(spark, own_jvms, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    cases = load_corpus()
    assert len(cases) >= 15 and any(c.error for c in cases)
    # the own-JVM sessions (own_jvms) work meanwhile
    paths: dict[str, dict[str, Any]] = {}
    wh = str(tmp_path / "in_process")
    session = lakeskip.connect(wh, spark=spark)
    session.sql("CREATE DATABASE s1; CREATE DATABASE s2")
    paths["Session.sql"] = run_path(
        session.sql, lambda c: f"s1.{c}", lambda c: ("s1", c), wh, cases
    )
    paths["Session.sql catalog-qualified"] = run_path(
        session.sql, lambda c: f"lakeskip.s2.{c}", lambda c: ("s2", c), wh, cases
    )
    rows = upsert_rows(session.sql, lambda q: session.sql(q).collect(), "s1.k")
    assert rows == UPSERTED, "Session.sql"
    # a session lakeskip did not build (no parser extension): Spark's own syntax
    spark.sql(
        "CREATE TABLE lakeskip.s2.k (id INT, v STRING, PRIMARY KEY (id)) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns'='v')"
    )
    for sql in UPSERT[1:]:
        spark.sql(sql.replace("{t}", "lakeskip.s2.k"))
    got = sorted(list(r) for r in spark.sql("SELECT * FROM lakeskip.s2.k").collect())
    assert got == UPSERTED, "connect(spark=existing), plain spark.sql"

    cli_wh = str(tmp_path / "cli")

    def cli(sql: str) -> None:
        code = main(["sql", "--warehouse", cli_wh, "-e", sql])
        _, err = capsys.readouterr()
        if code != 0:
            errors = [ln for ln in err.splitlines() if ln.startswith("Error:")]
            raise CliError(errors[0] if len(errors) == 1 else err)

    cli("CREATE DATABASE c")
    paths["lakeskip sql"] = run_path(cli, lambda c: f"c.{c}", lambda c: ("c", c), cli_wh, cases)
    results = own_jvms()
    upserts: dict[str, Any] = {}
    for mode, result in results.items():
        paths.update({f"{mode}: {k}": v for k, v in result["paths"].items()})
        upserts.update({f"{mode}: {k}": v for k, v in result["upsert"].items()})

    assert len(paths) == 9, sorted(paths)
    assert len(upserts) == 6, sorted(upserts)
    reference = paths["Session.sql"]
    assert reference["c00"]["schema"]["primaryKeys"] == ["id"], reference["c00"]
    assert all(("schema" in reference[c.name]) == (c.error is None) for c in cases), reference
    wrong: list[str] = []
    for case in cases:
        for path, outcomes in paths.items():
            got = outcomes[case.name]
            where = f"{path}, {case.name}: {case.sql}"
            if case.error is None:
                if got.get("schema") != reference[case.name].get("schema"):
                    wrong.append(f"{where}: {got} != {reference[case.name]}")
            elif "error" not in got:
                wrong.append(f"{where}: succeeded")
            elif not re.search(case.error, got["error"]) or got["left_table"]:
                wrong.append(f"{where}: {got}")
    assert not wrong, "\n".join(wrong)
    for path, rows in upserts.items():
        assert rows == UPSERTED, path


def test_connect_builds_a_session_with_catalog_extension_and_spark_catalog(own_jvms) -> None:  # type: ignore[no-untyped-def]
    """The first way in, in its own JVM (ddl_corpus.py session_catalog, before its corpus):
    lakeskip.connect() with the catalog in the conf, installed as spark_catalog, and the
    parser extension for Paimon's WITH / CALL sys.x."""
    assert own_jvms()["session_catalog"]["new_session"] == {
        "rows": [[2, "b"]],
        "catalog": "lakeskip",
        "options": {"file-index.bloom-filter.columns": "k"},
    }


def test_merge_schema_writes_and_create_like_with_the_extension(own_jvms) -> None:  # type: ignore[no-untyped-def]
    """In the session ``lakeskip.connect(as_session_catalog=True)`` builds (ddl_corpus.py
    ``_with_the_extension``): ``writeTo(t).option("mergeSchema" | "write.merge-schema",
    "true").append()`` adds the DataFrame's new column (old rows read NULL in it); without
    the option the write is refused in one line and changes nothing; ``CREATE TABLE tl LIKE
    t`` on spark_catalog copies the lakeskip table's columns and options, no rows."""
    got = own_jvms()["session_catalog"]["evolution"]
    for name, rows in (
        ("t", [[1, "a", None], [2, "b", None], [9, "z", 90]]),
        ("lakeskip.default.m", [[1, "a", None], [9, "z", 90]]),
    ):
        assert "TOO_MANY_DATA_COLUMNS" in got[f"{name} refused"], got
        assert got[f"{name} columns before"] == ["id", "k"], got
        assert got[f"{name} columns"] == ["id", "k", "n"], got
        assert got[f"{name} rows"] == sorted(rows, key=repr), got
    assert got["like"] == {
        "columns": ["id", "k", "n"],
        "options": {"file-index.bloom-filter.columns": "k"},
        "rows": [],
    }, got


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("DESCRIBE HISTORY t", "DESCRIBE HISTORY is not supported"),
        ("DESCRIBE t PARTITION (p = 1)", r"DESCRIBE \.\.\. PARTITION is not supported"),
    ],
)
def test_unknown_describe_forms_are_errors(session, sql: str, message: str) -> None:  # type: ignore[no-untyped-def]
    from lakeskip.errors import UnsupportedStatementError

    session.sql("CREATE TABLE t (id INT, p INT)")
    with pytest.raises(UnsupportedStatementError, match=f"^{message}$"):
        session.sql(sql)
