"""Table-reference clauses in queries: time travel is recognised, nothing else is dropped."""

from __future__ import annotations

import pytest

from lakeskip import types as T
from lakeskip.errors import UnsupportedStatementError
from lakeskip.sql.query import AsOf, analyze_query, rewrite_tables
from lakeskip.sql.statement_types import Query
from lakeskip.sql.statements import parse_statement

RT = T.RowType.of(("id", T.BIGINT), ("k", T.STRING))


def _plan(sql: str) -> tuple[list[object], str]:
    stmt = parse_statement(sql)
    assert isinstance(stmt, Query)
    scans = analyze_query(stmt.tree, tables=lambda i: RT if i.name == "t" else None)
    return scans, rewrite_tables(stmt.tree, {id(s.node): "v" for s in scans})


@pytest.mark.parametrize(
    ("sql", "as_of"),
    [
        ("SELECT * FROM t VERSION AS OF 1", AsOf(version=1)),
        ("SELECT * FROM t VERSION AS OF 'tag-a'", AsOf(version="tag-a")),
        ("SELECT * FROM t FOR VERSION AS OF 2 AS x", AsOf(version=2)),
        ("SELECT * FROM t FOR SYSTEM_VERSION AS OF 3", AsOf(version=3)),
        ("select * from t system_version as of 4 x", AsOf(version=4)),
        ("SELECT * FROM t TIMESTAMP AS OF '2024-01-01'", AsOf(timestamp_sql="'2024-01-01'")),
        ("SELECT * FROM t FOR SYSTEM_TIME AS OF 5", AsOf(timestamp_sql="5")),
        ("SELECT * FROM t SYSTEM_TIME AS OF 6", AsOf(timestamp_sql="6")),
        ("SELECT * FROM t", None),
    ],
)
def test_time_travel_clause_is_recognised(sql: str, as_of: AsOf | None) -> None:
    scans, rewritten = _plan(sql)
    assert [s.as_of for s in scans] == [as_of]  # type: ignore[attr-defined]
    assert " OF " not in rewritten.upper(), f"the view holds the snapshot: {rewritten}"


def test_system_words_inside_strings_are_left_alone() -> None:
    scans, rewritten = _plan("SELECT * FROM t WHERE k = 'SYSTEM_TIME AS OF 1'")
    assert scans[0].as_of is None  # type: ignore[attr-defined]
    assert "'SYSTEM_TIME AS OF 1'" in rewritten


def test_version_must_be_an_id_or_a_tag() -> None:
    with pytest.raises(UnsupportedStatementError, match="snapshot id or a tag"):
        _plan("SELECT * FROM t VERSION AS OF 1.5")


@pytest.mark.parametrize(
    ("sql", "kept"),
    [
        ("SELECT * FROM t TABLESAMPLE (10 PERCENT) a WHERE a.id = 1", "TABLESAMPLE (10 PERCENT)"),
        ("SELECT * FROM t PIVOT (sum(id) FOR k IN ('a', 'b'))", "PIVOT("),
        ("SELECT * FROM t VERSION AS OF 1 TABLESAMPLE (5 ROWS)", "TABLESAMPLE (5 ROWS)"),
    ],
)
def test_other_clauses_are_kept_and_do_not_prune(sql: str, kept: str) -> None:
    scans, rewritten = _plan(sql)
    assert kept in rewritten, f"{kept} dropped from {rewritten}"
    assert repr(scans[0].predicate) == "AlwaysTrue()", (  # type: ignore[attr-defined]
        "a sample/pivot sees the rows before WHERE: no pruning"
    )


def test_system_tables_are_rejected() -> None:
    """Without the Spark catalog a system table cannot be read: the error says why (and how
    to write an unquoted name so that it reaches the catalog)."""
    with pytest.raises(UnsupportedStatementError, match=r"quote a system table name"):
        _plan("SELECT * FROM t$snapshots")
    with pytest.raises(UnsupportedStatementError, match=r"system table t\$files is read"):
        _plan("SELECT * FROM `t$files`")


def test_plain_alias_and_where_still_prune() -> None:
    scans, rewritten = _plan("SELECT * FROM t VERSION AS OF 1 AS a WHERE a.id = 1")
    assert repr(scans[0].predicate) == "EqualTo(Reference('id'), 1)"  # type: ignore[attr-defined]
    assert rewritten == "SELECT * FROM v AS a WHERE a.id = 1"
