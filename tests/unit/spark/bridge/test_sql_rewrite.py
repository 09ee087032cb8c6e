"""The parser extension's rewrite (no Spark): every clause lakeskip parsed is printed back, the
statement lands in the catalog it names (or the current one), and a CREATE TABLE lakeskip
cannot keep whole raises its typed error instead of Spark's syntax error."""

from __future__ import annotations

import pytest

from lakeskip.errors import InvalidArgumentError, UnsupportedStatementError
from lakeskip.spark.bridge.sql_rewrite import rewrite_for_spark

LAKE = ["lakeskip"]
BOTH = ["lakeskip", "spark_catalog"]


def test_primary_key_becomes_the_primary_key_option() -> None:
    sql = "CREATE TABLE k (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket'='5')"
    assert rewrite_for_spark(sql, LAKE) == (
        "CREATE TABLE lakeskip.default.k (`id` INT, `v` STRING) "
        "TBLPROPERTIES ('bucket' = '5', 'primary-key' = 'id')"
    )
    inline = "CREATE TABLE d.k (a INT PRIMARY KEY, b INT NOT NULL COMMENT 'x') WITH ('x'='y')"
    assert rewrite_for_spark(inline, LAKE) == (
        "CREATE TABLE lakeskip.d.k (`a` INT, `b` INT NOT NULL COMMENT 'x') "
        "TBLPROPERTIES ('x' = 'y', 'primary-key' = 'a')"
    )


def test_key_given_twice_must_agree() -> None:
    same = "CREATE TABLE k (a INT, b INT, PRIMARY KEY (a, b)) WITH ('primary-key'='a, b')"
    assert "'primary-key' = 'a,b'" in (rewrite_for_spark(same, LAKE) or "")
    other = "CREATE TABLE k (a INT, b INT, PRIMARY KEY (a)) WITH ('primary-key'='b')"
    with pytest.raises(InvalidArgumentError, match="primary key given twice"):
        rewrite_for_spark(other, LAKE)


@pytest.mark.parametrize(
    ("name", "catalogs", "current", "target", "using"),
    [
        ("k", LAKE, "spark_catalog", "lakeskip.default.k", False),  # Spark's spark_catalog
        ("k", BOTH, "spark_catalog", "k", True),  # as_session_catalog: Spark resolves it
        ("k", LAKE, "lakeskip", "k", False),  # USE lakeskip.db
        ("d.k", BOTH, "lakeskip", "d.k", False),
        ("lakeskip.d.k", BOTH, "spark_catalog", "lakeskip.d.k", False),
        ("spark_catalog.d.k", BOTH, "lakeskip", "spark_catalog.d.k", True),
    ],
)
def test_the_table_lands_in_the_catalog_named_or_current(
    name: str, catalogs: list[str], current: str, target: str, using: bool
) -> None:
    out = rewrite_for_spark(f"CREATE TABLE {name} (a INT) WITH ('x'='y')", catalogs, current)
    assert out is not None and out.startswith(f"CREATE TABLE {target} (`a` INT) ")
    assert ("USING lakeskip" in out) == using


def test_unsupported_clauses_are_typed_errors_not_spark_syntax_errors() -> None:
    with pytest.raises(UnsupportedStatementError, match="DEFAULT 4 is not supported"):
        rewrite_for_spark("CREATE TABLE k (a INT DEFAULT 4) WITH ('x'='y')", LAKE)
    with pytest.raises(InvalidArgumentError, match="other is not a lakeskip catalog"):
        rewrite_for_spark("CREATE TABLE other.d.k (a INT) WITH ('x'='y')", LAKE)
    # a syntax error stays Spark's; so does a statement that is not CREATE TABLE
    assert rewrite_for_spark("CREATE TABLE k (a INT WITH ('x'='y')", LAKE) is None
    assert rewrite_for_spark("INSERT INTO a.b.c.d VALUES (1)", LAKE) is None


def test_call_goes_to_the_catalog_it_names_else_the_current_lakeskip_one() -> None:
    both = ["lakeskip", "lk2"]
    named = "CALL lk2.sys.compact(table => 'other.t2')"
    # Spark routes a catalog-qualified CALL itself: no rewrite may send it elsewhere
    assert rewrite_for_spark(named, both, "lakeskip") is None
    assert rewrite_for_spark(named, both, "spark_catalog") is None
    bare = "CALL sys.compact(table => 'other.t2')"
    assert rewrite_for_spark(bare, both, "lk2") == "CALL `lk2`.sys.compact(table => 'other.t2')"
    assert rewrite_for_spark(bare, both, "spark_catalog") == (
        "CALL `lakeskip`.sys.compact(table => 'other.t2')"
    )
    assert rewrite_for_spark(bare, ["lk2"], None) == "CALL `lk2`.sys.compact(table => 'other.t2')"
