"""Fixture-driven cases (sqlglot's style): ``tests/fixtures/sql/*.sql`` hold input/expected
pairs for SQL -> expression translation and for query analysis; one test per case.

A case is a block separated from the next by a blank line: ``--`` comment lines, the input
(up to the first line ending in ``;``), then the expected lines.
"""

from __future__ import annotations

import datetime  # noqa: F401  (reprs of expected values)
from decimal import Decimal  # noqa: F401
from pathlib import Path

import pytest
import sqlglot

from lakeskip import types as T
from lakeskip.sql.query import TableScan, analyze_query
from lakeskip.sql.statement_types import DIALECT, TableIdent

FIXTURES = Path(__file__).parents[2] / "fixtures" / "sql"

T_TYPE = T.RowType.of(
    ("a", T.INT),
    ("b", T.BIGINT),
    ("s", T.STRING),
    ("f", T.DOUBLE),
    ("d", T.DATE),
    ("flag", T.BOOLEAN),
    ("m", T.map_of(T.STRING, T.STRING)),
    ("dec", T.decimal_type(5, 2)),
)
QUERY_TABLES = {
    TableIdent("default", "t"): T.RowType.of(("id", T.BIGINT), ("k", T.STRING), ("v", T.INT)),
    TableIdent("default", "u"): T.RowType.of(("id", T.BIGINT), ("w", T.STRING)),
}
OTHER_SCHEMAS = {"default.other": {"id": "bigint", "z": "int"}}


def _cases(name: str) -> list[tuple[str, list[str]]]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    cases = []
    for block in text.split("\n\n"):
        lines = [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("--")]
        if not lines:
            continue
        end = next(i for i, ln in enumerate(lines) if ln.rstrip().endswith(";"))
        sql = " ".join(lines[: end + 1]).rstrip().rstrip(";")
        cases.append((sql, lines[end + 1 :]))
    return cases


def _params(name: str) -> list[object]:
    return [pytest.param(sql, want, id=sql[:60]) for sql, want in _cases(name)]


@pytest.mark.parametrize(("where", "expected"), _params("predicates.sql"))
def test_predicate_translation(where: str, expected: list[str]) -> None:
    tree = sqlglot.parse_one(f"SELECT * FROM t WHERE {where}", read=DIALECT)
    scans = analyze_query(tree, lambda i: T_TYPE if i.name == "t" else None)
    assert len(scans) == 1, f"one reference to t in {where!r}"
    got = repr(scans[0].predicate)
    assert [got] == expected, f"WHERE {where}\n  got:      {got}\n  expected: {expected}"


def _scan_line(scan: TableScan) -> str:
    alias = f" AS {scan.alias}" if scan.alias else ""
    return f"{scan.ident.qualified('default')}{alias}: {scan.predicate!r}"


@pytest.mark.parametrize(("query", "expected"), _params("queries.sql"))
def test_query_analysis(query: str, expected: list[str]) -> None:
    tree = sqlglot.parse_one(query, read=DIALECT)
    scans = analyze_query(
        tree,
        lambda i: QUERY_TABLES.get(TableIdent(i.database or "default", i.name)),
        schemas=OTHER_SCHEMAS,
    )
    got = [_scan_line(s) for s in scans]
    assert got == expected, "\n".join([query, "  got:", *got, "  expected:", *expected])


def test_fixture_files_parse() -> None:
    """Guards the harness itself: a malformed block must not silently vanish."""
    for name in ("predicates.sql", "queries.sql"):
        text = (FIXTURES / name).read_text(encoding="utf-8")
        inputs = [ln for ln in text.splitlines() if ln.rstrip().endswith(";")]
        assert len(_cases(name)) == len(inputs), f"{name}: every input line is one case"
        assert len(inputs) > 20, f"{name}: fixture file lost its cases"
