"""CREATE / REPLACE TABLE ... AS SELECT are atomic (Spark's StagingTableCatalog on the lakeskip
catalog; a staged table in Session.sql): a failed write leaves no table, or the old one."""

from __future__ import annotations

import os

import pytest

from lakeskip.errors import QueryFailedError

FAIL = "SELECT id, CASE WHEN id = 3 THEN raise_error('boom') ELSE 'x' END AS s FROM range(5)"


def _leftover_tables(base: str, table: str) -> list[str]:
    """Directories under ``base`` other than ``table`` that are (or were) tables. A task of the
    failed write that was still running when Spark failed the job may write its data file
    into the staged directory after the abort removed it (task kills are asynchronous): such
    a directory holds data files but no schema, so it is garbage (like the orphan files of a
    failed INSERT), never a table."""
    return sorted(
        d
        for d in os.listdir(base)
        if d != table and os.path.exists(os.path.join(base, d, "schema"))
    )


def _rows(df) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_plain_spark_ctas_and_rtas_are_atomic(session) -> None:  # type: ignore[no-untyped-def]
    spark = session.spark
    with pytest.raises(Exception, match="boom"):
        spark.sql(f"CREATE TABLE lakeskip.default.c AS {FAIL}")
    assert not session.catalog.table_exists("default.c"), "a failed CTAS leaves no table"
    assert [r[1] for r in spark.sql("SHOW TABLES IN lakeskip.default").collect()] == []
    spark.sql("CREATE TABLE lakeskip.default.c AS SELECT id, 'a' AS s FROM range(3)")
    assert _rows(spark.table("lakeskip.default.c")) == [(0, "a"), (1, "a"), (2, "a")]
    with pytest.raises(Exception, match="boom"):
        spark.sql(f"CREATE OR REPLACE TABLE lakeskip.default.c AS {FAIL}")
    with pytest.raises(Exception, match="boom"):
        spark.sql(f"REPLACE TABLE lakeskip.default.c AS {FAIL}")
    assert _rows(spark.table("lakeskip.default.c")) == [(0, "a"), (1, "a"), (2, "a")], "kept"
    spark.sql("CREATE OR REPLACE TABLE lakeskip.default.c AS SELECT 'q' AS k, 7L AS n")
    assert _rows(spark.table("lakeskip.default.c")) == [("q", 7)]
    spark.sql("REPLACE TABLE lakeskip.default.c PARTITIONED BY (p) AS SELECT 1 AS v, 2 AS p")
    assert _rows(spark.table("lakeskip.default.c")) == [(1, 2)]
    assert session.catalog.get_table("default.c").schema.partition_keys == ("p",)
    with pytest.raises(Exception, match="already exists"):
        spark.sql("CREATE TABLE lakeskip.default.c AS SELECT 1 AS v")
    assert session.catalog.list_tables("default") == ["c"], "no staging table left behind"
    base = os.path.dirname(session.catalog.get_table("default.c").path)
    assert "c" in os.listdir(base)
    assert _leftover_tables(base, "c") == [], "no staged or replaced table left"


def test_session_ctas_failure_leaves_nothing(session) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryFailedError, match="boom"):
        session.sql(f"CREATE TABLE d AS {FAIL}")
    assert not session.catalog.table_exists("default.d")
    session.sql("CREATE TABLE d AS SELECT id FROM range(2)")
    assert _rows(session.sql("SELECT * FROM d")) == [(0,), (1,)]
    base = os.path.dirname(session.catalog.get_table("default.d").path)
    assert "d" in os.listdir(base)
    assert _leftover_tables(base, "d") == [], "no staged table left"
