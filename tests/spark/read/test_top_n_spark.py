"""LIMIT and ORDER BY ... LIMIT pushed into the catalog scan (issue 39), also over a filter
(jvm/read/rules/LakeTopN.java): only the files that can hold the first rows are read
(lakeskip.planner.top_n). The oracle is plain Spark over the
same rows in a DataFrame of its own (no lakeskip in its plan): the sort-key values of the
answer equal, in order (tied rows may differ; each row returned must be a row of the table).
EXPLAIN and the scan's metrics show the files skipped by ``top-n(c)`` / ``limit``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as f
from tests.examples import spark_examples
from tests.spark.read.scan_metrics import lakeskip_metrics, plan_nodes

import lakeskip

T = "lakeskip.tn.ev"


@pytest.fixture(scope="module")
def tn(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    wh = tmp_path_factory.mktemp("tn") / "wh"
    lakeskip.connect(str(wh), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.tn")
    spark.sql(f"CREATE TABLE {T} (id BIGINT, ts TIMESTAMP, v INT)")
    for i in range(8):  # one file per INSERT, clustered by ts
        spark.sql(
            f"INSERT INTO {T} SELECT id, timestamp_micros(1700000000000000 + id * 1000000), "
            f"CASE WHEN id % 7 = 0 THEN NULL ELSE CAST(id % 13 AS INT) END "
            f"FROM range({i * 100}, {(i + 1) * 100}, 1, 1)"
        )
    yield str(wh)


def _scan_metrics(df: Any) -> dict[str, int]:
    found: dict[str, int] = {}
    for node in plan_nodes(df):
        found.update(lakeskip_metrics(node))
    return found


def _plan(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def _oracle(spark: SparkSession) -> Any:
    rows = [
        (
            i,
            dt.datetime(2023, 11, 14, 22, 13, 20) + dt.timedelta(seconds=i),
            None if i % 7 == 0 else i % 13,
        )
        for i in range(800)
    ]
    return spark.createDataFrame(rows, "id BIGINT, ts TIMESTAMP, v INT")


def test_order_by_limit_reads_only_the_first_files(spark: SparkSession, tn: str) -> None:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        plain = _oracle(spark)
        plain.createOrReplaceTempView("tn_plain")
        for order, kept in (
            ("ts DESC", 1),
            ("ts", 1),
            ("ts DESC NULLS FIRST", 1),
            ("id DESC, ts", 1),
            ("ts DESC LIMIT 150 --", 2),
        ):
            k = 5
            sql = f"SELECT * FROM {{}} ORDER BY {order} LIMIT {k}"
            df = spark.sql(sql.format(T))
            got = [tuple(r) for r in df.collect()]
            want = [tuple(r) for r in spark.sql(sql.format("tn_plain")).collect()]
            assert got == want, sql
            m = _scan_metrics(df)
            assert (m["lakeskipFilesTotal"], m["lakeskipFilesKept"]) == (8, kept), (sql, m)
            assert m["lakeskipSkippedLimit"] == 8 - kept
            col = order.split()[0]
            assert f"skipped by top-n({col}) {8 - kept}" in _plan(df), _plan(df)
        # the DataFrame API, and a plain LIMIT (any rows: as many as asked, each a table row)
        df = spark.table(T).orderBy(f.col("ts").desc()).limit(3)
        assert [r.id for r in df.collect()] == [799, 798, 797]
        assert _scan_metrics(df)["lakeskipFilesKept"] == 1
        df = spark.table(T).limit(120)
        got = df.collect()
        assert len(got) == 120 and len({r.id for r in got}) == 120
        assert _scan_metrics(df)["lakeskipFilesKept"] == 2
        assert "skipped by limit 6" in _plan(df)
        # v has NULLs in every file: ascending NULLS FIRST needs the files with NULLs
        sql = "SELECT v FROM {} ORDER BY v NULLS FIRST LIMIT 20"
        assert [r.v for r in spark.sql(sql.format(T)).collect()] == [
            r.v for r in spark.sql(sql.format("tn_plain")).collect()
        ]
        # a scan without the limit after one with it: all the rows (the scan is not reused)
        assert spark.sql(f"SELECT count(id) FROM {T} WHERE id >= 0").collect()[0][0] == 800
        assert spark.table(T).where("id >= 0").count() == 800
        # a filter on the rows that no file's stats prove for all its rows: nothing counts
        # towards the limit, every file is read (the limit counts rows after the filter)
        df = spark.sql(f"SELECT * FROM {T} WHERE v = 3 ORDER BY ts DESC LIMIT 2")
        want = spark.sql("SELECT * FROM tn_plain WHERE v = 3 ORDER BY ts DESC LIMIT 2")
        assert [tuple(r) for r in df.collect()] == [tuple(r) for r in want.collect()]
        assert "top-n" not in _plan(df)
    finally:
        spark.conf.unset("spark.sql.session.timeZone")


def test_order_by_limit_over_a_filter(spark: SparkSession, tn: str) -> None:
    """A filter the stats prove on whole files (ids and ts grow with the files): those files'
    rows count towards the limit, the others are read only where their stats could rank a row
    among the first; a filter no file is proven on keeps every file. EXPLAIN PRUNING shows the
    tier and why."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        _oracle(spark).createOrReplaceTempView("tn_plain")
        for where, order, kept in (
            ("id >= 150", "ts DESC", 1),  # the last file holds only ids >= 150
            ("id < 650", "ts DESC", 2),  # the last file may not match: the one before counts
            ("id < 650 AND id > 20", "id DESC", 2),
            ("id BETWEEN 130 AND 480", "ts", 2),  # the 2nd file matches only in part
            ("ts >= TIMESTAMP '2023-11-14 22:20:00'", "ts DESC", 1),
            ("v = 3 OR id > 100", "ts DESC", 1),
            ("id % 2 = 0", "ts DESC", 8),  # not translated: nothing counts, all read
        ):
            sql = f"SELECT * FROM {{}} WHERE {where} ORDER BY {order} LIMIT 5"
            df = spark.sql(sql.format(T))
            got = [tuple(r) for r in df.collect()]
            want = [tuple(r) for r in spark.sql(sql.format("tn_plain")).collect()]
            assert got == want, sql
            m = _scan_metrics(df)
            assert m["lakeskipFilesKept"] == kept, (sql, m)
        rows = spark.sql(
            f"EXPLAIN PRUNING SELECT * FROM {T} WHERE id >= 150 ORDER BY ts DESC LIMIT 5"
        ).collect()
        metrics = {r[1]: r[2] for r in rows}
        assert metrics["files kept"] == "1", rows
        assert metrics["files skipped by stats"] == "1", rows  # ids 0-99
        assert metrics["files skipped by top-n(ts)"] == "6", rows
        assert metrics["limit pushed"].startswith("ORDER BY ts DESC NULLS LAST LIMIT 5"), rows
        assert "6 of 7 files counted" in metrics["limit pushed"], rows
        # the DataFrame API, a projection between the sort and the filter
        df = (
            spark.table(T).where("id >= 600").select("id", "ts").orderBy(f.col("ts").desc())
        ).limit(3)
        assert [r.id for r in df.collect()] == [799, 798, 797]
        assert _scan_metrics(df)["lakeskipFilesKept"] == 1
    finally:
        spark.conf.unset("spark.sql.session.timeZone")


def test_order_by_limit_over_a_partition_filter(spark: SparkSession, tn: str) -> None:
    """A filter on partition columns only leaves no filter after the scan, so Spark pushes the
    top-N itself; every file of a kept partition matches in every row."""
    name = "lakeskip.tn.pt"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p STRING) PARTITIONED BY (p)")
    for i in range(4):
        spark.sql(
            f"INSERT INTO {name} SELECT id, IF(id % 2 = 0, 'x', 'y') "
            f"FROM range({i * 10}, {(i + 1) * 10}, 1, 1)"
        )
    rows = [(i, "x" if i % 2 == 0 else "y") for i in range(40)]
    spark.createDataFrame(rows, "id BIGINT, p STRING").createOrReplaceTempView("tn_pt")
    sql = "SELECT * FROM {} WHERE p = 'x' ORDER BY id DESC LIMIT 3"
    df = spark.sql(sql.format(name))
    assert [tuple(r) for r in df.collect()] == [
        tuple(r) for r in spark.sql(sql.format("tn_pt")).collect()
    ]
    m = _scan_metrics(df)
    # two files per INSERT (one per partition); x's four files: the last one holds 5 rows
    assert (m["lakeskipFilesTotal"], m["lakeskipFilesKept"]) == (8, 1), m
    spark.sql(f"DROP TABLE {name}")


def test_primary_key_tables_are_not_narrowed(spark: SparkSession, tn: str) -> None:
    spark.sql(
        "CREATE TABLE lakeskip.tn.pk (k INT NOT NULL, v INT) TBLPROPERTIES "
        "('primary-key' = 'k', 'bucket' = '1')"
    )
    spark.sql("INSERT INTO lakeskip.tn.pk VALUES (1, 100), (2, 200)")
    spark.sql("INSERT INTO lakeskip.tn.pk VALUES (1, 1), (3, 3)")  # k = 1 now 1
    df = spark.sql("SELECT * FROM lakeskip.tn.pk ORDER BY v DESC LIMIT 1")
    assert [tuple(r) for r in df.collect()] == [(2, 200)]
    assert "top-n" not in _plan(df)
    spark.sql("DROP TABLE lakeskip.tn.pk")


FILES = st.lists(
    st.lists(st.one_of(st.none(), st.integers(-30, 30)), min_size=1, max_size=8),
    min_size=1,
    max_size=5,
)


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=6, fuzz=40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    files=FILES,
    column=st.sampled_from(["v", "d"]),
    direction=st.sampled_from(["", " ASC", " DESC"]),
    nulls=st.sampled_from(["", " NULLS FIRST", " NULLS LAST"]),
    limit=st.integers(1, 12),
    deletes=st.lists(st.integers(0, 40), max_size=3),
    dv=st.booleans(),
    api=st.booleans(),
    where=st.sampled_from(
        [
            "",
            "",
            "v > 3",
            "v <= 0 OR v IS NULL",
            "d >= DATE '2024-03-05'",
            "id % 3 = 0",
            "v IS NOT NULL AND id > 4",
            "NOT (v = 2)",
            "v IN (1, 2, 3) OR d < DATE '2024-02-20'",
        ]
    ),
)
def test_random_tables_against_plain_spark(
    spark: SparkSession,
    tn: str,
    files: list[list[int | None]],
    column: str,
    direction: str,
    nulls: str,
    limit: int,
    deletes: list[int],
    dv: bool,
    api: bool,
    where: str,
) -> None:
    spark.sql("DROP TABLE IF EXISTS lakeskip.tn.r")
    opts = " TBLPROPERTIES ('deletion-vectors.enabled' = 'true')" if dv else ""
    spark.sql(f"CREATE TABLE lakeskip.tn.r (id BIGINT, v INT, d DATE){opts}")
    rows: list[tuple[int, int | None, dt.date | None]] = []
    for values in files:  # one INSERT of VALUES: one file
        batch = [
            (len(rows) + j, v, None if v is None else dt.date(2024, 2, 29) + dt.timedelta(v))
            for j, v in enumerate(values)
        ]
        rows += batch
        spark.createDataFrame(batch, "id BIGINT, v INT, d DATE").coalesce(
            1
        ).createOrReplaceTempView("tn_batch")
        spark.sql("INSERT INTO lakeskip.tn.r SELECT * FROM tn_batch")
    if deletes:
        spark.sql(f"DELETE FROM lakeskip.tn.r WHERE id IN ({', '.join(map(str, deletes))})")
        rows = [r for r in rows if r[0] not in deletes]
    plain = spark.createDataFrame(rows, "id BIGINT, v INT, d DATE")
    plain.createOrReplaceTempView("tn_rows")
    order = f"{column}{direction}{nulls}"
    if api:
        c = f.col(column)
        desc = direction == " DESC"
        first = nulls == " NULLS FIRST" or (nulls == "" and not desc)
        o = (
            (c.desc_nulls_first() if first else c.desc_nulls_last())
            if desc
            else (c.asc_nulls_first() if first else c.asc_nulls_last())
        )
        table = spark.table("lakeskip.tn.r")
        df = (table.where(where) if where else table).orderBy(o).limit(limit)
        want_df = (plain.where(where) if where else plain).orderBy(o).limit(limit)
    else:
        cond = f"WHERE {where}" if where else ""
        df = spark.sql(f"SELECT * FROM lakeskip.tn.r {cond} ORDER BY {order} LIMIT {limit}")
        want_df = spark.sql(f"SELECT * FROM tn_rows {cond} ORDER BY {order} LIMIT {limit}")
    got = [tuple(r) for r in df.collect()]
    want = [tuple(r) for r in want_df.collect()]
    key = 1 if column == "v" else 2
    assert [r[key] for r in got] == [r[key] for r in want], (order, limit, got, want)
    assert set(got) <= set(rows), "every row returned is a row of the table"
    if where:
        passing = {tuple(r) for r in plain.where(where).collect()}
        assert set(got) <= passing, "and passes the filter"
    m = _scan_metrics(df)
    assert m["lakeskipFilesKept"] <= m["lakeskipFilesTotal"]


def test_order_by_a_string_column_with_full_stats(spark: SparkSession, tn: str) -> None:
    """A VARCHAR key ranks the files written with stats mode ``full`` (untruncated min/max)."""
    name = "lakeskip.tn.st"
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, s STRING) TBLPROPERTIES ('metadata.stats-mode' = 'full')"
    )
    for i in range(4):
        spark.sql(
            f"INSERT INTO {name} SELECT id, concat('u', lpad(CAST(id AS STRING), 5, '0')) "
            f"FROM range({i * 50}, {(i + 1) * 50}, 1, 1)"
        )
    rows = [(i, f"u{i:05d}") for i in range(200)]
    spark.createDataFrame(rows, "id BIGINT, s STRING").createOrReplaceTempView("tn_st")
    for query, kept in (
        ("SELECT * FROM {} ORDER BY s DESC LIMIT 5", 1),
        ("SELECT * FROM {} ORDER BY s LIMIT 5", 1),
        ("SELECT * FROM {} WHERE id >= 60 ORDER BY s DESC LIMIT 3", 1),
        ("SELECT * FROM {} WHERE id >= 60 ORDER BY s LIMIT 3", 2),  # file 1 in part
    ):
        df = spark.sql(query.format(name))
        assert [tuple(r) for r in df.collect()] == [
            tuple(r) for r in spark.sql(query.format("tn_st")).collect()
        ], query
        m = _scan_metrics(df)
        assert (m["lakeskipFilesTotal"], m["lakeskipFilesKept"]) == (4, kept), (query, m)
    spark.sql(f"DROP TABLE {name}")
