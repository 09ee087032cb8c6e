"""MERGE INTO parsing (lakeskip.sql.merge) and parse_dml for catalog-resolved targets."""

from __future__ import annotations

import pytest

from lakeskip.errors import SqlParseError, UnsupportedStatementError
from lakeskip.sql.merge import Merge, MergeAction, MergeActionKind
from lakeskip.sql.statement_types import Delete, TableIdent, Update
from lakeskip.sql.statements import parse_dml, parse_statement


def test_merge_clauses_in_order() -> None:
    s = parse_statement(
        "MERGE INTO db.t AS x USING (SELECT * FROM s WHERE a > 1) AS s ON x.id = s.id "
        "WHEN MATCHED AND s.v > 2 THEN UPDATE SET v = s.v + 1, x.w = 'q' "
        "WHEN MATCHED THEN DELETE "
        "WHEN NOT MATCHED AND s.v IS NULL THEN INSERT (id, v) VALUES (s.id, 0) "
        "WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = -1"
    )
    assert isinstance(s, Merge)
    assert (s.ident, s.alias, s.source_alias) == (TableIdent("db", "t"), "x", "s")
    assert s.source_sql == "SELECT * FROM s WHERE a > 1" and s.on == "x.id = s.id"
    assert s.matched == (
        MergeAction(MergeActionKind.UPDATE, "s.v > 2", (("v", "s.v + 1"), ("w", "'q'"))),
        MergeAction(MergeActionKind.DELETE),
    )
    assert s.not_matched == (
        MergeAction(MergeActionKind.INSERT, "s.v IS NULL", (("id", "s.id"), ("v", "0"))),
        MergeAction(MergeActionKind.INSERT),
    )
    assert s.not_matched_by_source == (MergeAction(MergeActionKind.UPDATE, None, (("v", "-1"),)),)


def test_merge_source_table_and_errors() -> None:
    s = parse_statement("MERGE INTO t USING db.src ON t.id = src.id WHEN MATCHED THEN UPDATE SET *")
    assert (
        isinstance(s, Merge) and s.source_alias == "src" and s.source_sql == "SELECT * FROM db.src"
    )
    assert s.alias is None and s.matched == (MergeAction(MergeActionKind.UPDATE),)
    with pytest.raises(SqlParseError, match="only the last WHEN MATCHED"):
        parse_statement(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE "
            "WHEN MATCHED AND s.v = 1 THEN DELETE"
        )
    with pytest.raises(SqlParseError, match="needs an alias"):
        parse_statement("MERGE INTO t USING (SELECT 1 AS id) ON t.id = 1 WHEN MATCHED THEN DELETE")
    with pytest.raises(SqlParseError, match="2 column"):
        parse_statement(
            "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (a, b) VALUES (1)"
        )
    with pytest.raises(UnsupportedStatementError, match="time travel"):
        parse_statement(
            "MERGE INTO t VERSION AS OF 1 USING s ON t.id = s.id WHEN MATCHED THEN DELETE"
        )


def test_parse_dml_accepts_a_catalog_qualified_target() -> None:
    d = parse_dml("DELETE FROM lakeskip.db.t WHERE a = 1;")
    assert isinstance(d, Delete) and d.ident == TableIdent("db", "t") and d.condition == "a = 1"
    u = parse_dml("UPDATE lakeskip.db.t AS x SET a = 2")
    assert isinstance(u, Update) and u.alias == "x"
    m = parse_dml(
        "MERGE INTO lakeskip.db.t USING lakeskip.db.s ON t.id = s.id WHEN MATCHED THEN DELETE"
    )
    assert isinstance(m, Merge) and m.source_sql == "SELECT * FROM lakeskip.db.s"
    with pytest.raises(SqlParseError, match="not a DELETE"):
        parse_dml("SELECT 1")
    with pytest.raises(UnsupportedStatementError):
        parse_statement("DELETE FROM lakeskip.db.t")  # Session.sql names no catalog
