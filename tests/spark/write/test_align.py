"""INSERT's projection (``align_by_position``): built as SQL text in a fixed number of py4j
round trips, with the same casts, NOT NULL checks and names as Spark's own INSERT."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from py4j import clientserver
from py4j.protocol import MEMORY_COMMAND_NAME, MEMORY_DEL_SUBCOMMAND_NAME

from lakeskip.errors import LakeskipError
from lakeskip.spark.write.align import align_by_name, align_by_position
from lakeskip.types import BIGINT, INT, STRING, DataType, Field, RowType


@contextmanager
def _round_trips() -> Iterator[list[int]]:
    """Counts the py4j commands the calling code sends (``[n]`` after the block), without
    the deletions of earlier Java references py4j sends whenever Python frees them."""
    real = clientserver.ClientServerConnection.send_command
    n = [0]

    def send(self: Any, command: str) -> Any:
        if not command.startswith(MEMORY_COMMAND_NAME + MEMORY_DEL_SUBCOMMAND_NAME):
            n[0] += 1
        return real(self, command)

    clientserver.ClientServerConnection.send_command = send  # type: ignore[method-assign]
    try:
        yield n
    finally:
        clientserver.ClientServerConnection.send_command = real  # type: ignore[method-assign]


def _assert_fixed_round_trips(spark: Any, align: Any, name: str, t: DataType) -> None:
    """``align`` of a 40-column DataFrame (``c0``, ``c1``, ...) to a table whose columns are
    ``name`` + i costs the py4j round trips of a 4-column one, and its rows are the source's."""
    counts = {}
    for width in (4, 40):
        df = spark.range(3).selectExpr(*(f"id + {i} AS c{i}" for i in range(width)))
        row_type = RowType(tuple(Field(i, f"{name}{i}", t) for i in range(width)))
        df.columns  # noqa: B018 (the schema's round trips are not the projection's)
        with _round_trips() as n:
            aligned = align(df, row_type, "write")
        counts[width] = n[0]
        assert aligned.columns == [f"{name}{i}" for i in range(width)]
        assert [tuple(r) for r in aligned.orderBy(f"{name}0").collect()] == [
            tuple(i + k for i in range(width)) for k in range(3)
        ]
    assert counts[40] <= counts[4] <= 12, counts


def test_round_trips_do_not_grow_with_the_column_count(session: Any) -> None:
    """A 40-column INSERT's projection costs the py4j round trips of a 4-column one (before:
    ~35 a column, each ``Column`` call recording its call site in the JVM)."""
    _assert_fixed_round_trips(session.spark, align_by_position, "c", INT.with_nullable(False))


def test_quoted_names_casts_and_not_null_checks_as_spark_inserts(session: Any) -> None:
    """Names holding a quote or a backslash; a NOT NULL column and a NOT NULL
    field of a ROW column so named: written values read back as Spark's own cast of the
    inserted rows (the oracle: ``CAST`` on a plain query, no lakeskip), NULLs refused with
    the column's name in the message, the table untouched."""
    spark = session.spark
    spark.sql(
        r"CREATE TABLE lakeskip.default.q (`a\b` BIGINT NOT NULL, `it's` STRING, "
        r"`s` STRUCT<`x'y`: INT NOT NULL, z: STRING>) USING lakeskip"
    )
    names = [f.name for f in session.catalog.get_table("default.q").schema.row_type.fields]
    assert names == ["a\\b", "it's", "s"]
    rows = "VALUES (1, 2.5D, named_struct('x\\'y', 7, 'z', 'p')), (2, NULL, NULL)"
    spark.sql(f"INSERT INTO lakeskip.default.q {rows}")
    want = spark.sql(
        "SELECT CAST(col1 AS BIGINT), CAST(col2 AS STRING), "
        f"CAST(col3 AS STRUCT<`x'y`: INT, z: STRING>) FROM ({rows})"
    ).collect()
    got = spark.sql("SELECT * FROM lakeskip.default.q").collect()
    assert sorted(map(tuple, got), key=repr) == sorted(map(tuple, want), key=repr)
    assert sorted(map(tuple, got), key=repr)[0] == (1, "2.5", (7, "p"))
    with pytest.raises(Exception, match="NULL in NOT NULL column") as info:
        spark.sql("INSERT INTO lakeskip.default.q VALUES (NULL, 'v', NULL)")
    assert "NULL in NOT NULL column a\\b" in str(info.value)
    # Session.sql's INSERT: also the nested field (Spark's own INSERT checks it first there)
    for bad, name in (
        ("(NULL, 'v', NULL)", "a\\b"),
        ("(3, 'v', named_struct('x\\'y', CAST(NULL AS INT), 'z', 'q'))", "s.x'y"),
    ):
        with pytest.raises(LakeskipError, match="NULL in NOT NULL column") as err:
            session.sql(f"INSERT INTO q VALUES {bad}")
        assert f"NULL in NOT NULL column {name}" in str(err.value)
    assert session.catalog.get_table("default.q").latest_snapshot().id == 1


def test_session_insert_and_extra_columns(session: Any) -> None:
    """``Session.sql``'s INSERT takes the same projection; columns ``extra`` names stay as
    they are, after the table's."""
    session.sql("CREATE TABLE e (k BIGINT NOT NULL, v STRING)")
    session.sql("INSERT INTO e VALUES (1, 'a'), (2, NULL)")
    assert sorted(tuple(r) for r in session.sql("SELECT * FROM e").collect()) == [
        (1, "a"),
        (2, None),
    ]
    with pytest.raises(LakeskipError, match="NULL in NOT NULL column k"):
        session.sql("INSERT INTO e VALUES (NULL, 'b')")
    df = session.spark.sql("SELECT 5 AS a, 6 AS b, true AS flag")
    row_type = RowType.of(("k", BIGINT), ("v", STRING))
    out = align_by_position(df, row_type, "write", extra=("flag",))
    assert out.columns == ["k", "v", "flag"]
    assert [tuple(r) for r in out.collect()] == [(5, "6", True)]


def test_by_name_write_matches_row_fields_by_name_not_a_same_named_column(
    session: Any,
) -> None:
    """A DataFrame write (``align_by_name``) of a ROW column whose fields come in another
    order and case, from a relation named like the ROW column that also has a column named
    like one of its fields: ``s.X`` is the field of column ``s``, never column ``x`` of
    relation ``s``. Expected rows written out by hand; a NULL in a NOT NULL field is refused;
    40 columns cost the round trips of 4."""
    session.sql("CREATE TABLE w (x INT, s STRUCT<y: INT, x: INT NOT NULL>)")
    df = session.spark.sql(
        "SELECT * FROM (SELECT named_struct('X', 1, 'y', 2) AS s, 10 AS x "
        "UNION ALL SELECT NULL, 11) s"
    )
    session.write(df, "w")
    got = sorted(
        (r.x, None if r.s is None else tuple(r.s)) for r in session.sql("SELECT * FROM w").collect()
    )
    assert got == [(10, (2, 1)), (11, None)]
    bad = session.spark.sql("SELECT named_struct('x', CAST(NULL AS INT), 'y', 3) AS s, 12 AS x")
    with pytest.raises(Exception, match=r"NULL in NOT NULL column s\.x"):
        session.write(bad, "w")
    _assert_fixed_round_trips(session.spark, align_by_name, "C", BIGINT)


def test_an_insert_costs_fixed_round_trips_and_one_job(session: Any) -> None:
    """A warm INSERT through ``spark.sql``: its write callback (align, the write tasks' UDF,
    the commit) costs the py4j round trips of a 4-column table at 40 columns (before:
    PySpark's ``mapInArrow`` took each column as ``df[name]`` and filled the UDF's argument
    ``Seq`` element by element, ~3 round trips a column), and runs one Spark job, as Spark's
    own Parquet write; odd names (a dot, a backquote) on the same path."""
    from lakeskip.spark.bridge.catalog_service import CatalogService
    from lakeskip.types import quote_identifier as q

    spark = session.spark
    real = CatalogService.call
    seen: dict[str, int] = {}

    def call(self: Any, op: str, payload: Any, arg: Any) -> Any:
        if op != "write":
            return real(self, op, payload, arg)
        with _round_trips() as n:
            try:
                return real(self, op, payload, arg)
            finally:
                seen["trips"] = n[0]

    tracker = spark.sparkContext.statusTracker()
    counts = {}
    CatalogService.call = call  # type: ignore[method-assign]
    try:
        for width in (4, 40):
            names = ["a.b", "c`d", *(f"c{i}" for i in range(2, width))]
            t = f"lakeskip.default.{q(f'w{width}')}"
            columns = ", ".join(f"{q(n)} BIGINT" for n in names)
            spark.sql(f"CREATE TABLE {t} ({columns})")
            select = ", ".join(f"id + {i} AS {q(n)}" for i, n in enumerate(names))
            spark.sql(f"INSERT INTO {t} SELECT {select} FROM range(3)")  # warm
            jobs = set(tracker.getJobIdsForGroup(None))
            spark.sql(f"INSERT INTO {t} SELECT {select} FROM range(3, 5)")
            assert len(set(tracker.getJobIdsForGroup(None)) - jobs) == 1, "one Spark job"
            counts[width] = seen["trips"]
            got = sorted(tuple(r) for r in spark.table(t).collect())
            assert got == [tuple(k + i for i in range(width)) for k in range(5)]
    finally:
        CatalogService.call = real  # type: ignore[method-assign]
    assert counts[40] <= counts[4] <= 30, counts


def test_spark_struct_is_what_spark_parses_the_ddl_to(session: Any) -> None:
    """``spark_struct`` (built in Python) against Spark's own DDL parser, every type root,
    odd names, nested NOT NULL and comments, plus extra columns."""
    from pyspark.sql.types import BooleanType, IntegerType, StructType

    from lakeskip.spark.read.arrow_map import spark_struct
    from lakeskip.types import parse_sql_type

    ddl = (
        "`a b` BOOLEAN, `x``y` TINYINT, s SMALLINT, i INT NOT NULL, l BIGINT, f FLOAT, d DOUBLE,"
        " dec DECIMAL(12,3), str STRING, v VARCHAR(5), c CHAR(3), bin BINARY, dt DATE,"
        " ts TIMESTAMP_NTZ, tsl TIMESTAMP, m MAP<STRING, ARRAY<INT>>,"
        " st STRUCT<`p.q`: INT NOT NULL COMMENT 'it''s', r: STRUCT<z: DATE>>"
    )
    parsed = parse_sql_type(f"STRUCT<{ddl}>")
    row_type = RowType(parsed.row_fields)
    extra = [("__flag", BooleanType()), ("__b", IntegerType())]
    ours = spark_struct(row_type, *extra)
    theirs = StructType.fromDDL(row_type.spark_ddl() + ", __flag BOOLEAN, __b INT")
    assert ours == theirs
    assert ours.json() == theirs.json()
