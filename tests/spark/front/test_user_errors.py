"""What a user meets: unsupported statements, constraint violations, worker failures."""

from __future__ import annotations

import os
import sys

import pytest

from lakeskip.errors import (
    InvalidArgumentError,
    QueryFailedError,
    TableAlreadyExistsError,
    UnsupportedStatementError,
)
from lakeskip.spark.bridge.error_text import spark_error_message
from lakeskip.spark.front.builder import worker_python_problem


def _rows(df) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    return sorted(tuple(r) for r in df.collect())


@pytest.mark.parametrize(
    ("sql", "what"),
    [
        ("DELETE FROM t USING t AS o WHERE t.id = o.id", "DELETE ... USING"),
        ("UPDATE t SET s = 'x' FROM t AS o WHERE t.id = o.id", "UPDATE ... FROM"),
        ("ALTER TABLE t ALTER COLUMN s SET DEFAULT 'x'", "ALTER TABLE ALTER COLUMN"),
    ],
)
def test_dml_on_append_tables_is_a_clear_error(session, sql: str, what: str) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE t (id BIGINT, s STRING)")
    with pytest.raises(UnsupportedStatementError, match=f"^{what} is not supported for append"):
        session.sql(sql)


def test_truncate_rename_add_columns(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE t (id BIGINT, s STRING)")
    session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    session.sql("TRUNCATE TABLE t")
    assert _rows(session.sql("SELECT * FROM t")) == []
    assert _rows(session.sql("SELECT * FROM t VERSION AS OF 1")) == [(1, "a"), (2, "b")]
    session.sql("INSERT INTO t VALUES (3, 'c')")
    session.sql("ALTER TABLE t RENAME TO u")
    assert _rows(session.sql("SELECT * FROM u")) == [(3, "c")]
    assert not session.catalog.table_exists("default.t")
    session.sql("CREATE TABLE t (id BIGINT)")
    with pytest.raises(TableAlreadyExistsError):
        session.sql("ALTER TABLE u RENAME TO t")
    session.sql("ALTER TABLE u ADD COLUMNS (n INT COMMENT 'new', m DOUBLE)")
    schema = session.table("u").table.schema
    assert [(f.id, f.name) for f in schema.row_type] == [(0, "id"), (1, "s"), (2, "n"), (3, "m")]
    assert schema.highest_field_id == 3
    session.sql("INSERT INTO u VALUES (4, 'd', 7, 0.5)")
    assert _rows(session.sql("SELECT * FROM u WHERE n = 7")) == [(4, "d", 7, 0.5)]
    assert _rows(session.sql("SELECT id FROM u WHERE n IS NULL")) == [(3,)], "old file: NULL"
    with pytest.raises(InvalidArgumentError, match="already has a column n"):
        session.sql("ALTER TABLE u ADD COLUMN n INT")
    with pytest.raises(InvalidArgumentError, match="NOT NULL"):
        session.sql("ALTER TABLE u ADD COLUMN z INT NOT NULL")


def test_not_null_violation_is_one_line(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE nn (id BIGINT NOT NULL, s STRING)")
    for sql in ("INSERT INTO nn VALUES (NULL, 'a')", "INSERT INTO nn SELECT NULL, 'b'"):
        with pytest.raises(QueryFailedError) as info:
            session.sql(sql)
        message = str(info.value)
        assert "NULL in NOT NULL column id" in message and "\n" not in message, message
    assert _rows(session.sql("SELECT * FROM nn")) == []


def test_worker_failure_names_its_root_cause(spark) -> None:  # type: ignore[no-untyped-def]
    def boom(batches):  # type: ignore[no-untyped-def]
        import lakeskip_no_such_module  # type: ignore[import-not-found]  # noqa: F401

        yield from batches

    with pytest.raises(Exception) as info:
        spark.range(1).mapInArrow(boom, "id long").collect()
    message = spark_error_message(info.value)
    assert message == (
        "Python worker failed: ModuleNotFoundError: No module named 'lakeskip_no_such_module'"
    ), message


def test_worker_python_without_lakeskip_is_detected(spark) -> None:  # type: ignore[no-untyped-def]
    sc = spark.sparkContext
    assert worker_python_problem(spark) is None, "the test session's workers run this python"
    base = os.path.join(sys.base_prefix, "bin", "python3")
    if sys.prefix == sys.base_prefix or not os.path.exists(base):
        pytest.fail("tests run in a virtualenv (make test); cannot find its base interpreter")
    saved = sc.pythonExec
    sc.pythonExec = base
    try:
        problem = worker_python_problem(spark)
    finally:
        sc.pythonExec = saved
    assert problem is not None and "cannot import lakeskip" in problem, problem
    assert f"PYSPARK_PYTHON={sys.executable}" in problem


def test_connect_points_local_workers_at_an_interpreter_with_lakeskip(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A script run with a venv's python, the venv not activated: workers would start the
    base ``python3`` (no lakeskip) and every write would fail; connect switches them to this
    interpreter and says so in one line, and a write then works."""
    import lakeskip
    from lakeskip.errors import LakeskipWarning

    sc = spark.sparkContext
    base = os.path.join(sys.base_prefix, "bin", "python3")
    if sys.prefix == sys.base_prefix or not os.path.exists(base):
        pytest.fail("tests run in a virtualenv (make test); cannot find its base interpreter")
    saved = sc.pythonExec
    sc.pythonExec = base
    try:
        with pytest.warns(LakeskipWarning) as caught:
            s = lakeskip.connect(str(tmp_path / "wh"), spark=spark, catalog_name="lk_workers")
        assert sc.pythonExec == sys.executable
        (message,) = [str(w.message) for w in caught if "Python workers" in str(w.message)]
        assert "cannot import lakeskip" in message and sys.executable in message, message
        assert "\n" not in message
        s.sql("CREATE TABLE w (id BIGINT)")
        s.sql("INSERT INTO w VALUES (1), (2)")
        assert sorted(r[0] for r in s.sql("SELECT id FROM w").collect()) == [1, 2]
    finally:
        sc.pythonExec = saved


def test_bsi_range_skip_names_its_index(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE b (id BIGINT, price BIGINT) WITH ('file-index.bsi.columns'='price')")
    # one file, stats 1..1000: only the bit-sliced index can skip 500..600
    session.sql("INSERT INTO b SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 1), (2, 1000)")
    rows = session.sql("EXPLAIN PRUNING SELECT * FROM b WHERE price BETWEEN 500 AND 600").collect()
    metrics = {r["metric"]: r["value"] for r in rows}
    assert metrics.get("files skipped by bsi(price)") == "1", metrics
    assert not any("None" in k for k in metrics), metrics


def test_shell_polish_statements(session) -> None:  # type: ignore[no-untyped-def]
    assert ("default",) in _rows(session.sql("SHOW DATABASES")), "default always exists"
    assert session.sql("CREATE DATABASE IF NOT EXISTS d1").collect()[0][0] == "database d1 created"
    again = session.sql("CREATE DATABASE IF NOT EXISTS d1").collect()[0][0]
    assert again == "database d1 already exists", again
    session.sql("CREATE TABLE d1.nn (id BIGINT NOT NULL, s STRING)")
    described = {r[0]: r[1] for r in session.sql("DESCRIBE EXTENDED d1.nn").collect()}
    assert (described["id"], described["s"]) == ("bigint not null", "string"), described
    help_rows = session.sql("HELP").collect()
    assert any("VERSION|TIMESTAMP AS OF" in r[0] for r in help_rows), help_rows
