"""End-to-end: SQL through a real local Spark, real Parquet files, pruning checked by the
files Spark reads (``lakeskip.spark.input_files``: ``DataFrame.inputFiles()`` plus lakeskip
catalog scans) and results checked against plain Spark over all files."""

from __future__ import annotations

import os

import pytest

from lakeskip.errors import (
    ColumnNotFoundError,
    InvalidOptionError,
    QueryFailedError,
    SqlParseError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnknownIndexTypeError,
    UnknownProcedureError,
)
from lakeskip.spark import input_files

EVENTS = """CREATE TABLE db.events (id BIGINT, user_id STRING, status STRING, price BIGINT,
    ts TIMESTAMP, attrs MAP<STRING, STRING>) WITH (
    'file-index.bloom-filter.columns' = 'user_id',
    'file-index.bloom-filter.user_id.items' = '200',
    'file-index.bitmap.columns' = 'status,attrs[device]',
    'file-index.bsi.columns' = 'price')"""


def _fill_events(session, n_files: int = 4, rows: int = 50) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE DATABASE IF NOT EXISTS db")
    session.sql(EVENTS)
    for f in range(n_files):
        values = ", ".join(
            f"({f * rows + i}, 'u{f}_{i}', '{'A' if f == 0 else 'B'}', {f * 1000 + i}, "
            f"TIMESTAMP '2024-01-0{f + 1} 00:00:00', map('device', '{'tv' if f == 3 else 'web'}'))"
            for i in range(rows)
        )
        # one file per INSERT: a single task writes it
        session.sql(f"INSERT INTO db.events SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")


def _names(paths: list[str]) -> set[str]:
    return {os.path.basename(p) for p in paths}


def test_create_insert_select_prunes_by_each_index(session) -> None:  # type: ignore[no-untyped-def]
    _fill_events(session)
    all_files = _names(session.table("db.events").files())
    assert len(all_files) == 4, "one INSERT per file"
    cases = {
        "user_id = 'u2_7'": 1,  # bloom (+ stats can't: strings overlap? u0..u3 prefixes)
        "status = 'A'": 1,  # bitmap / stats
        "price BETWEEN 2000 AND 2010": 1,  # stats / bsi
        "attrs['device'] = 'tv'": 1,  # map-key bitmap
        "ts >= TIMESTAMP '2024-01-04 00:00:00'": 1,  # stats
        "user_id = 'nobody'": 0,
        "status = 'A' OR price > 3000": 2,
    }
    for where, expected_files in cases.items():
        df = session.sql(f"SELECT * FROM db.events WHERE {where}")
        got = _names(input_files(df))
        assert len(got) == expected_files, (
            f"{where}: read {len(got)} files, expected {expected_files}"
        )
        assert got <= all_files
        plain = session.spark.read.parquet(*session.table("db.events").files()).where(where)
        assert sorted(map(tuple, df.collect())) == sorted(map(tuple, plain.collect())), where


def test_explain_pruning_reports_index_types(session) -> None:  # type: ignore[no-untyped-def]
    _fill_events(session)
    rows = session.sql("EXPLAIN PRUNING SELECT * FROM db.events WHERE user_id = 'u2_7'").collect()
    metrics = {r["metric"]: r["value"] for r in rows}
    assert metrics["files total"] == "4"
    assert metrics["files kept"] == "1"
    report = session.last_reports[0]
    assert report.kept_files == 1 and report.total_files == 4


def test_join_of_two_indexed_tables_and_cte(session) -> None:  # type: ignore[no-untyped-def]
    _fill_events(session)
    session.sql(
        "CREATE TABLE db.users (user_id STRING, tier STRING) "
        "WITH ('file-index.bloom-filter.columns'='user_id')"
    )
    session.sql("INSERT INTO db.users VALUES ('u1_3', 'gold'), ('u2_7', 'silver')")
    session.sql("INSERT INTO db.users VALUES ('u3_1', 'gold')")
    df = session.sql(
        "WITH e AS (SELECT * FROM db.events WHERE price < 1010) "
        "SELECT e.id, u.tier FROM e JOIN db.users u ON e.user_id = u.user_id "
        "WHERE u.tier = 'gold' ORDER BY e.id"
    )
    assert [tuple(r) for r in df.collect()] == [(53, "gold")]
    reports = {r.table: r for r in session.last_reports}
    assert reports["db.events"].kept_files == 2, reports["db.events"].summary()


def test_ctas_overwrite_and_partitions(session) -> None:  # type: ignore[no-untyped-def]
    _fill_events(session)
    session.sql(
        "CREATE TABLE db.daily PARTITIONED BY (status) WITH ('file-index.bloom-filter.columns'="
        "'user_id') AS SELECT user_id, price, status FROM db.events WHERE price < 5 OR price >= 3000"
    )
    assert session.sql("SELECT count(*) FROM db.daily").collect()[0][0] == 5 + 50
    df = session.sql("SELECT * FROM db.daily WHERE status = 'A'")
    assert df.count() == 5
    assert session.last_reports[0].skipped_by_partition >= 1
    session.sql("INSERT OVERWRITE db.daily PARTITION (status = 'A') SELECT 'x', 1")
    assert sorted(
        tuple(r) for r in session.sql("SELECT * FROM db.daily WHERE status = 'A'").collect()
    ) == [("x", 1, "A")]
    assert session.sql("SELECT count(*) FROM db.daily").collect()[0][0] == 51
    session.sql(
        "INSERT OVERWRITE db.daily SELECT user_id, price, status FROM db.events WHERE id < 3"
    )
    assert session.sql("SELECT count(*) FROM db.daily").collect()[0][0] == 3 + 50, (
        "dynamic overwrite replaces partition A only"
    )


def test_ddl_describe_show_alter(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE DATABASE db")
    session.sql("USE db")
    session.sql(
        "CREATE TABLE t (id BIGINT, s STRING) TBLPROPERTIES ('file-index.bitmap.columns'='s')"
    )
    assert [r[1] for r in session.sql("SHOW TABLES").collect()] == ["t"]
    assert "db" in [r[0] for r in session.sql("SHOW DATABASES").collect()]
    desc = {r[0]: r[1] for r in session.sql("DESCRIBE EXTENDED t").collect()}
    assert desc["id"] == "bigint" and desc["Index"] == "bitmap(s)"
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('file-index.bloom-filter.columns'='s')")
    session.sql("ALTER TABLE t UNSET TBLPROPERTIES ('file-index.bitmap.columns')")
    create = session.sql("SHOW CREATE TABLE t").collect()[0][0]
    assert "'file-index.bloom-filter.columns' = 's'" in create and "bitmap" not in create
    session.sql("DROP TABLE t")
    assert session.sql("SHOW TABLES").collect() == []


def test_errors_are_typed_and_leave_tables_untouched(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE t (id BIGINT, s STRING)")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    before = session.table("t").files()
    with pytest.raises(SqlParseError) as info:
        session.sql("SELECT * FROM t WHERE")
    assert info.value.line == 1 and info.value.col is not None
    with pytest.raises(TableNotFoundError):
        session.sql("INSERT INTO nope VALUES (1)")
    with pytest.raises(TableAlreadyExistsError):
        session.sql("CREATE TABLE t (x INT)")
    with pytest.raises(UnknownIndexTypeError):
        session.sql("ALTER TABLE t SET ('file-index.blom.columns'='s')")
    with pytest.raises(ColumnNotFoundError):
        session.sql("ALTER TABLE t SET ('file-index.bloom-filter.columns'='nope')")
    with pytest.raises(InvalidOptionError):
        session.sql("ALTER TABLE t SET ('no-such-option'='1')")
    with pytest.raises(UnknownProcedureError):
        session.sql("CALL sys.nope('t')")
    with pytest.raises(QueryFailedError):
        session.sql("SELECT nope FROM t")
    with pytest.raises(QueryFailedError):
        session.sql("INSERT INTO t SELECT 'not a number', 'x'")
    assert session.table("t").files() == before
    assert session.sql("SELECT * FROM t").collect()[0][0] == 1


def test_python_write_api(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE t (id BIGINT, s STRING) WITH ('file-index.bloom-filter.columns'='s')")
    df = session.spark.createDataFrame([("a", 1), ("b", 2)], "s STRING, id BIGINT")
    session.write(df, "t")
    session.write(df, "t")
    assert session.sql("SELECT count(*) FROM t").collect()[0][0] == 4
    session.write(df.limit(1), "t", mode="overwrite")
    assert session.sql("SELECT count(*) FROM t").collect()[0][0] == 1
    with pytest.raises(ColumnNotFoundError):
        session.write(df.withColumnRenamed("s", "x"), "t")


def test_concurrent_queries_do_not_interfere(session) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    _fill_events(session)
    wheres = ["price < 10", "price >= 3000", "status = 'A'", "user_id = 'u2_7'"] * 2
    expected = {
        w: sorted(
            tuple(r)
            for r in session.spark.read.parquet(*session.table("db.events").files())
            .where(w)
            .collect()
        )
        for w in set(wheres)
    }

    def run(w: str) -> tuple[str, list[tuple[object, ...]]]:
        return w, sorted(
            tuple(r) for r in session.sql(f"SELECT * FROM db.events WHERE {w}").collect()
        )

    with ThreadPoolExecutor(4) as pool:
        for w, rows in pool.map(run, wheres):
            assert rows == expected[w], w


def test_ordinary_spark_tables_pass_through_and_mix(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE sp_plain (id BIGINT, tag STRING) USING parquet")
    session.sql("INSERT INTO sp_plain VALUES (1, 'x'), (2, 'y')")
    session.sql(
        "CREATE TABLE ls (id BIGINT, v STRING) WITH ('file-index.bloom-filter.columns'='v')"
    )
    session.sql("INSERT INTO ls VALUES (1, 'a'), (2, 'b')")
    rows = session.sql(
        "SELECT p.tag, l.v FROM sp_plain p JOIN ls l ON p.id = l.id WHERE l.v = 'b'"
    ).collect()
    assert [tuple(r) for r in rows] == [("y", "b")]
    assert [r.table for r in session.last_reports] == ["default.ls"]
    session.sql("DROP TABLE sp_plain")
