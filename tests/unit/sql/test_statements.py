from __future__ import annotations

import datetime
import decimal

import pytest

from lakeskip import types as T
from lakeskip.catalog.schema_evolution import Move, UpdateColumnPosition
from lakeskip.errors import SqlParseError, TypeMismatchError, UnsupportedStatementError
from lakeskip.sql.statement_types import (
    AlterTableColumns,
    AlterTableSetOptions,
    AlterTableUnsetOptions,
    Call,
    CreateDatabase,
    CreateTable,
    DescribeTable,
    DropDatabase,
    DropTable,
    Explain,
    Insert,
    Passthrough,
    Query,
    ShowCreateTable,
    ShowDatabases,
    ShowTables,
    TableIdent,
    UseDatabase,
)
from lakeskip.sql.statements import parse_statement, parse_statements


def test_create_table_paimon_with_form() -> None:
    s = parse_statement(
        "CREATE TABLE IF NOT EXISTS db.t (id BIGINT NOT NULL COMMENT 'key', s STRING, "
        "m MAP<STRING, INT>, d DECIMAL(10,2), dt STRING) PARTITIONED BY (dt) COMMENT 'tc' "
        "WITH ('file-index.bloom-filter.columns'='s', 'file-index.bloom-filter.s.items'=100)"
    )
    assert isinstance(s, CreateTable)
    assert s.ident == TableIdent("db", "t")
    assert [c.name for c in s.columns] == ["id", "s", "m", "d", "dt"]
    assert s.columns[0].nullable is False and s.columns[0].comment == "key"
    assert s.columns[2].type == T.map_of(T.STRING, T.INT)
    assert s.columns[3].type == T.decimal_type(10, 2)
    assert s.partition_keys == ("dt",)
    assert s.if_not_exists and s.comment == "tc"
    assert dict(s.options) == {
        "file-index.bloom-filter.columns": "s",
        "file-index.bloom-filter.s.items": "100",
    }


def test_create_table_spark_tblproperties_form_matches_with_form() -> None:
    a = parse_statement("CREATE TABLE t (id BIGINT) WITH ('k'='v')")
    b = parse_statement("CREATE TABLE t (id BIGINT) USING paimon TBLPROPERTIES ('k'='v')")
    assert a == b


def test_create_table_other_format_passes_through() -> None:
    s = parse_statement("CREATE TABLE t (id BIGINT) USING parquet")
    assert isinstance(s, Passthrough)


def test_ctas_and_partition_column_defs() -> None:
    s = parse_statement("CREATE TABLE t WITH ('a'='b') AS SELECT 1 AS x")
    assert isinstance(s, CreateTable) and s.as_select == "SELECT 1 AS x" and s.columns == ()
    s2 = parse_statement("CREATE TABLE t (id BIGINT) PARTITIONED BY (dt STRING)")
    assert isinstance(s2, CreateTable)
    assert [c.name for c in s2.columns] == ["id", "dt"] and s2.partition_keys == ("dt",)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "ALTER TABLE t SET TBLPROPERTIES ('a'='b')",
            AlterTableSetOptions(TableIdent(None, "t"), {"a": "b"}),
        ),
        ("ALTER TABLE db.t SET ('a'='b')", AlterTableSetOptions(TableIdent("db", "t"), {"a": "b"})),
        (
            "ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('a', 'b')",
            AlterTableUnsetOptions(TableIdent(None, "t"), ("a", "b"), True),
        ),
        ("ALTER TABLE t RESET ('a')", AlterTableUnsetOptions(TableIdent(None, "t"), ("a",), False)),
        ("DROP TABLE IF EXISTS t", DropTable(TableIdent(None, "t"), True)),
        ("SHOW TABLES", ShowTables(None)),
        ("SHOW TABLES IN db", ShowTables("db")),
        ("DESCRIBE EXTENDED t", DescribeTable(TableIdent(None, "t"), True)),
        ("DESC db.t", DescribeTable(TableIdent("db", "t"), False)),
        ("SHOW CREATE TABLE db.t", ShowCreateTable(TableIdent("db", "t"))),
        ("CREATE DATABASE IF NOT EXISTS d", CreateDatabase("d", True)),
        ("CREATE SCHEMA d", CreateDatabase("d", False)),
        ("DROP DATABASE IF EXISTS d CASCADE", DropDatabase("d", True, True)),
        ("SHOW DATABASES", ShowDatabases()),
        ("USE d", UseDatabase("d")),
        (
            "CALL sys.compact(table => 'db.t', order_by => 'a,b')",
            Call("sys.compact", (), {"table": "db.t", "order_by": "a,b"}),
        ),
        ("CALL sys.rewrite_file_index('db.t')", Call("sys.rewrite_file_index", ("db.t",), {})),
        ("SET spark.sql.shuffle.partitions=4", Passthrough("SET spark.sql.shuffle.partitions=4")),
    ],
)
def test_statement_forms(sql: str, expected: object) -> None:
    assert parse_statement(sql) == expected


def test_insert_forms() -> None:
    s = parse_statement("INSERT INTO t VALUES (1, 'a'), (2, NULL)")
    assert isinstance(s, Insert) and not s.overwrite and s.partition is None
    assert s.query_sql.startswith("SELECT * FROM VALUES")
    s = parse_statement(
        "INSERT OVERWRITE TABLE db.t PARTITION (dt = DATE '2024-01-02') SELECT a FROM u"
    )
    assert isinstance(s, Insert) and s.overwrite and s.ident == TableIdent("db", "t")
    assert s.partition == {"dt": datetime.date(2024, 1, 2)}
    s = parse_statement("INSERT INTO t (a, b) SELECT 1, 2.5")
    assert isinstance(s, Insert) and s.columns == ("a", "b")


def test_explain_and_queries() -> None:
    s = parse_statement("EXPLAIN PRUNING SELECT * FROM t WHERE a = 1")
    assert isinstance(s, Explain) and s.pruning and isinstance(s.query, Query)
    assert isinstance(parse_statement("WITH a AS (SELECT 1) SELECT * FROM a"), Query)
    assert isinstance(parse_statement("SELECT 1 UNION ALL SELECT 2"), Query)


def test_call_literal_arguments() -> None:
    s = parse_statement("CALL sys.x(a => 1, b => 2.5, c => true, d => NULL, e => -3)")
    assert isinstance(s, Call)
    assert dict(s.kwargs) == {"a": 1, "b": decimal.Decimal("2.5"), "c": True, "d": None, "e": -3}


@pytest.mark.parametrize(
    ("sql", "line", "col", "token"),
    [
        ("SELECT * FROM t WHERE", 1, 17, "WHERE"),
        ("select 1;\nselect * from\n  t where (", 3, 11, "("),
        ("SELEC * FROM t", 1, 1, "SELEC"),
        ("select 1;\n\n  SELEC * FROM t", 3, 3, "SELEC"),
        ("INSERT INTO t SELEC 1", 1, 15, "SELEC"),
    ],
)
def test_parse_errors_carry_position(sql: str, line: int, col: int, token: str) -> None:
    with pytest.raises(SqlParseError) as info:
        parse_statements(sql)
    assert (info.value.line, info.value.col) == (line, col), str(info.value)
    assert str(info.value).startswith(f"Syntax error at or near {token!r}"), str(info.value)
    assert "\n" not in str(info.value), "errors are one line"


def test_other_bad_input() -> None:
    with pytest.raises(SqlParseError, match="malformed CALL"):
        parse_statement("CALL sys.x(a => )")
    with pytest.raises(SqlParseError, match="positional argument after named"):
        parse_statement("CALL sys.x(a => 1, 2)")
    with pytest.raises(UnsupportedStatementError, match="PRIMARY KEY is only allowed in CREATE"):
        parse_statement("ALTER TABLE t ADD COLUMNS (id BIGINT PRIMARY KEY)")
    with pytest.raises(UnsupportedStatementError, match="only PRIMARY KEY constraints"):
        parse_statement("CREATE TABLE t (id BIGINT, CONSTRAINT c CHECK (id > 0))")
    with pytest.raises((TypeMismatchError, SqlParseError)):
        parse_statement("CREATE TABLE t (a STRNG, b INT)")


def test_split_respects_quotes_and_comments() -> None:
    out = parse_statements("SELECT ';' AS x; -- a; comment\nSELECT 2 /* ; */; ;")
    assert [type(s).__name__ for s in out] == ["Query", "Query"]


def test_leading_comments_keep_error_positions() -> None:
    with pytest.raises(SqlParseError) as info:
        parse_statements("SELECT 1;\n-- note\n/* c */ SELECT * FROM t WHERE")
    assert (info.value.line, info.value.col) == (3, 25), str(info.value)


def test_call_doubled_quote_escape() -> None:
    s = parse_statement(
        "CALL sys.rewrite_file_index(`table` => 'default.sales', `where` => 'region = ''eu''')"
    )
    assert isinstance(s, Call)
    assert s.kwargs["where"] == "region = 'eu'", s.kwargs
    s = parse_statement("CALL sys.x(a => '', b => 'it''s', c => 'a\\'b')")
    assert isinstance(s, Call)
    assert dict(s.kwargs) == {"a": "", "b": "it's", "c": "a'b"}


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("CREATE TABLE t (id BIGINT) CLUSTERED BY (id) INTO 4 BUCKETS", "CLUSTERED BY"),
        ("CREATE TABLE t (id BIGINT) ROW FORMAT DELIMITED", "ROW FORMAT"),
        ("CREATE EXTERNAL TABLE t (id BIGINT)", "EXTERNAL"),
        ("CREATE TABLE t LIKE u", "LIKE u"),
        ("CREATE OR REPLACE TABLE t (id BIGINT)", "CREATE OR REPLACE"),
        ("CREATE TABLE t (id BIGINT DEFAULT 5)", "DEFAULT 5"),
        ("CREATE TABLE t (id BIGINT GENERATED ALWAYS AS (1))", "GENERATED"),
        ("CREATE TABLE t (ts TIMESTAMP) PARTITIONED BY (days(ts))", "PARTITIONED BY"),
        ("INSERT INTO t REPLACE WHERE a = 1 SELECT 1", "REPLACE WHERE"),
        ("CREATE DATABASE d LOCATION '/elsewhere'", "LOCATION"),
    ],
)
def test_clauses_lakeskip_would_ignore_are_rejected(sql: str, message: str) -> None:
    with pytest.raises(UnsupportedStatementError, match=message):
        parse_statement(sql)


def test_clauses_that_are_kept() -> None:
    s = parse_statement(
        "CREATE TABLE t (id BIGINT) USING paimon OPTIONS ('target-file-size'='1 mb')"
    )
    assert isinstance(s, CreateTable) and dict(s.options) == {"target-file-size": "1 mb"}
    s = parse_statement("CREATE OR REPLACE TABLE t (id BIGINT) USING parquet")
    assert isinstance(s, Passthrough), "not a lakeskip table: Spark's statement"
    s = parse_statement("INSERT INTO t BY NAME SELECT 1 AS a")
    assert isinstance(s, Insert) and s.by_name
    s = parse_statement("WITH x AS (SELECT 1 AS a) INSERT INTO t SELECT a FROM x")
    assert isinstance(s, Insert) and s.query_sql.startswith("WITH x AS"), s.query_sql


def test_delete_and_update_forms() -> None:
    from lakeskip.sql.statement_types import Delete, OtherTableStatement, Update

    s = parse_statement("DELETE FROM db.t AS x WHERE x.a = 1 AND b IN (SELECT b FROM u)")
    assert s == Delete(
        TableIdent("db", "t"),
        "x",
        "x.a = 1 AND b IN (SELECT b FROM u)",
        "DELETE FROM db.t AS x WHERE x.a = 1 AND b IN (SELECT b FROM u)",
    )
    s = parse_statement("DELETE FROM t")
    assert isinstance(s, Delete) and s.condition is None and s.alias is None
    s = parse_statement("UPDATE t x SET a = a + 1, x.b = 'q' WHERE a > 2 OR b IS NULL")
    assert isinstance(s, Update) and s.alias == "x"
    assert s.assignments == (("a", "a + 1"), ("b", "'q'"))
    assert s.condition == "a > 2 OR b IS NULL"
    s = parse_statement("UPDATE t SET a = 1")
    assert isinstance(s, Update) and s.condition is None
    for sql, what in (
        ("DELETE FROM t USING u WHERE t.a = u.a", "DELETE ... USING"),
        ("UPDATE t SET a = 1 FROM u WHERE t.a = u.a", "UPDATE ... FROM"),
    ):
        other = parse_statement(sql)
        assert isinstance(other, OtherTableStatement) and other.what == what, sql
    with pytest.raises(UnsupportedStatementError, match="SET column = expr"):
        parse_statement("UPDATE t SET (a, b) = (1, 2)")
    with pytest.raises(SqlParseError, match="names column"):
        parse_statement("UPDATE t AS x SET y.a = 1")
    for sql in (
        "DELETE FROM t VERSION AS OF 1 WHERE a = 1",
        "UPDATE t TIMESTAMP AS OF '2024-01-01' SET a = 1",
        "DELETE FROM t TABLESAMPLE (10 PERCENT) WHERE a = 1",
    ):
        with pytest.raises(UnsupportedStatementError, match="on the target table"):
            parse_statement(sql)


def test_condition_predicate_scopes_like_a_query() -> None:
    from lakeskip.expressions import AlwaysTrue, EqualTo, Reference
    from lakeskip.sql.query import condition_predicate

    rt = T.RowType.of(("id", T.BIGINT), ("k", T.STRING))
    assert condition_predicate(None, rt, "t") == AlwaysTrue()
    assert condition_predicate("x.id = 3", rt, "x") == EqualTo(Reference("id"), 3)
    # a column of a subquery's own table is not the target's
    sub = "EXISTS (SELECT 1 FROM u WHERE u.k = 'a' AND id = 2)"
    assert condition_predicate(sub, rt, "t") == AlwaysTrue()
    # NOT of something untranslatable stays "might match"
    assert condition_predicate("NOT (upper(k) = 'A' AND id = 1)", rt, "t") == AlwaysTrue()
    with pytest.raises(SqlParseError, match="cannot parse the condition"):
        condition_predicate("id = ", rt, "t")


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("DESCRIBE HISTORY t", "DESCRIBE HISTORY is not supported"),
        ("DESC HISTORY db.t", "DESCRIBE HISTORY is not supported"),
        ("DESCRIBE t PARTITION (p = 1)", r"DESCRIBE \.\.\. PARTITION is not supported"),
    ],
)
def test_describe_forms_lakeskip_does_not_know_are_errors(sql: str, message: str) -> None:
    """Never read as a plain DESCRIBE of the table (issue 28: DESCRIBE HISTORY returned the
    column list)."""
    with pytest.raises(UnsupportedStatementError, match=f"^{message}$"):
        parse_statement(sql)


def test_describe_function_and_database_go_to_spark() -> None:
    for sql in ("DESCRIBE FUNCTION upper", "DESCRIBE DATABASE d"):
        assert parse_statement(sql) == Passthrough(sql)
    assert parse_statement("DESC TABLE EXTENDED d.t") == DescribeTable(TableIdent("d", "t"), True)


def test_create_table_keeps_its_catalog_qualifier() -> None:
    s = parse_statement("CREATE TABLE lakeskip.d.t (a INT, PRIMARY KEY (a)) WITH ('x'='y')")
    assert isinstance(s, CreateTable)
    assert (s.catalog, s.ident, s.primary_keys) == ("lakeskip", TableIdent("d", "t"), ("a",))


# -- quoted names: one reader of multi-part identifiers ---------------------------------


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("t", ("t",)),
        ("db.t", ("db", "t")),
        (" db . `t` ", ("db", "t")),
        ("`a.b`", ("a.b",)),  # a quoted dot belongs to the name
        ("`a``b`", ("a`b",)),  # a doubled backquote is one backquote
        ("`a``.``b`.c", ("a`.`b", "c")),
        ("````", ("`",)),
        ("`a b`.`` ", ("a b", "")),  # `` is the empty name, as in Spark
    ],
)
def test_split_identifier_reads_quotes_as_spark(text: str, parts: tuple[str, ...]) -> None:
    assert T.split_identifier(text) == parts
    # the inverse of quote_identifier joined by dots
    assert T.split_identifier(".".join(T.quote_identifier(p) for p in parts)) == parts


@pytest.mark.parametrize(
    ("text", "col", "what"),
    [
        ("", 1, "empty name"),
        ("a.", 3, "empty name"),
        ("a..b", 3, "empty name"),
        ("`a", 1, "unclosed backquote"),
        ("x.`a``", 3, "unclosed backquote"),
        ("a`b", 2, "backquote inside a name"),
        ("`a`b", 4, "expected '.'"),
    ],
)
def test_split_identifier_errors_carry_position(text: str, col: int, what: str) -> None:
    with pytest.raises(SqlParseError, match=what) as e:
        T.split_identifier(text)
    assert (e.value.line, e.value.col) == (1, col)


def test_statements_unescape_quoted_names() -> None:
    """The regular-expression statements (no sqlglot node) read names as Spark does: the
    backquotes were stripped before (`a``b` became a``b, `s.x` the path s, x)."""
    assert parse_statement("SHOW TABLES IN `a``b`") == ShowTables("a`b")
    show = parse_statement("SHOW CREATE TABLE `d.x`.`t``1`")
    assert isinstance(show, ShowCreateTable)
    assert show.ident == TableIdent("d.x", "t`1")
    alter = parse_statement("ALTER TABLE `d`.`t 1` ALTER COLUMN `s.x`.`y``z` AFTER `a.b`")
    assert isinstance(alter, AlterTableColumns)
    assert alter.ident == TableIdent("d", "t 1")
    assert alter.changes == (UpdateColumnPosition(("s.x", "y`z"), Move.after("a.b")),)
    nested = parse_statement("ALTER TABLE t CHANGE COLUMN s . x FIRST")
    assert isinstance(nested, AlterTableColumns)
    assert nested.changes == (UpdateColumnPosition(("s", "x"), Move.first()),)
    unset = parse_statement("ALTER TABLE `t.1` UNSET TBLPROPERTIES ('k')")
    assert unset == AlterTableUnsetOptions(TableIdent(None, "t.1"), ("k",), False)
    with pytest.raises(UnsupportedStatementError, match="catalog-qualified"):
        parse_statement("SHOW CREATE TABLE c.`d`.t")


def test_catalog_identifiers_split_on_unquoted_dots_only() -> None:
    from lakeskip.catalog.catalog import parse_identifier
    from lakeskip.errors import InvalidArgumentError

    assert parse_identifier("`d`.`t 1`") == ("d", "t 1")
    assert parse_identifier(" d . t ") == ("d", "t")
    # one quoted name with a dot: no table may be named so (it was read as d, t)
    with pytest.raises(InvalidArgumentError, match=r"invalid table name: 'd\.t'"):
        parse_identifier("`d.t`")
    with pytest.raises(InvalidArgumentError, match="unclosed backquote"):
        parse_identifier("d.`t")


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ("'a,b', 'c'", ("a,b", "c")),
        (r"'x\'y', " + '"q\\"r, s"', ("x'y", 'q"r, s')),
        (r"'tab\tnl\n'", ("tab\tnl\n",)),
        ("'it' 's'", ("its",)),  # adjacent literals join, as in Spark
        ("a.b.c, `d,e`.f, comment", ("a.b.c", "d,e.f", "comment")),
        ("'k)' , 'l('", ("k)", "l(")),
    ],
)
def test_unset_keys_are_read_as_literals_and_names(keys: str, expected: tuple[str, ...]) -> None:
    """Quoted keys may hold commas, quotes and escapes; unquoted keys are dotted names."""
    stmt = parse_statement(f"ALTER TABLE t UNSET TBLPROPERTIES ({keys})")
    assert stmt == AlterTableUnsetOptions(TableIdent(None, "t"), expected, False)


@pytest.mark.parametrize("keys", ["", "'a',", "'a' b", "a..b", "'unterminated", "1 + 2"])
def test_unset_rejects_malformed_key_lists(keys: str) -> None:
    with pytest.raises(SqlParseError):
        parse_statement(f"ALTER TABLE t UNSET TBLPROPERTIES ({keys})")
