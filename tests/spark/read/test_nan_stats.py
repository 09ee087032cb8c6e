"""NaN comparisons through plain ``spark.sql`` on the catalog, with Spark's Parquet pushdown on
(issue 26).

pyarrow's Parquet statistics leave NaN out of min/max (``min 2.0, max inf``); Spark orders NaN
above +Infinity, so its pushed filters (``c = NaN``, ``c >= NaN``, ``c > Infinity``) skipped the
row groups holding the NaN rows. Files lakeskip writes now carry no statistics for a float
column holding NaN; files written before (simulated here: the same writer with the NaN check
off, i.e. pyarrow's statistics) are kept safe by the scan, which keeps comparisons on such
columns out of Spark's pushed Parquet filters.

Every table kind (append, deletion vectors, primary key merged on read, primary key with
deletion vectors) is read through the Spark catalog and through ``Session.sql``'s views; a
differential test compares random predicates over FLOAT and DOUBLE (NaN, +-0.0, +-Infinity,
NULL) with the same rows written by Spark's own Parquet writer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from tests.examples import spark_examples

import lakeskip
from lakeskip.catalog.format import parquet_options
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import write_all
from lakeskip.catalog.write.rolling_writer import write_kv_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.spark.front.session import Session
from lakeskip.types import RowType, parse_sql_type

NAN, INF = float("nan"), float("inf")
QUERIES = ("c = double('NaN')", "c >= double('NaN')", "c > double('Infinity')")
KINDS = {
    "app": "",
    "dv": "'deletion-vectors' = 'true'",
    "pk": "'primary-key' = 'id', 'bucket' = '1'",
    "pkdv": "'primary-key' = 'id', 'bucket' = '1', 'deletion-vectors' = 'true'",
}


def _issue_rows() -> list[tuple[int, float]]:
    """The issue's 1000 rows: 100 NaN, 100 +Infinity, the rest ``id * 1.0``."""
    return [(i, NAN if i % 10 == 0 else INF if i % 10 == 1 else float(i)) for i in range(1000)]


def write_old_file(
    table: FileStoreTable, data: pa.Table, monkeypatch: pytest.MonkeyPatch, level: int = 0
) -> None:
    """Commit ``data`` as one file written the way lakeskip wrote before issue 26: pyarrow's
    statistics (NaN left out of min/max, column index included) on every column."""
    with monkeypatch.context() as m:
        m.setattr(parquet_options, "nan_leaf_paths", lambda _t: frozenset(), raising=False)
        spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
        data = data.cast(table.schema.row_type.to_arrow())
        if table.schema.is_primary_key_table:
            entry = write_kv_data_file(
                spec, data.sort_by("id"), (), table.new_data_file_name(), 0, 1, 0, level=level
            )
            table.commit([entry])
        else:
            table.commit(write_all(spec, [data]))


@pytest.fixture(scope="module")
def nan_session(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    assert spark.conf.get("spark.sql.parquet.filterPushdown") == "true"
    s = lakeskip.connect(str(tmp_path_factory.mktemp("nan") / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.nan")
    yield s


def _count(spark: SparkSession, table: str, where: str) -> int:
    return int(
        spark.sql(f"SELECT count(*) FROM lakeskip.nan.{table} WHERE {where}").collect()[0][0]
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_issue_queries_return_every_nan_row_on_old_and_new_files(
    spark: SparkSession, nan_session: Any, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    props = f"TBLPROPERTIES ({KINDS[kind]})" if KINDS[kind] else ""
    rows = _issue_rows()
    new, old = f"{kind}_new", f"{kind}_old"
    for name in (new, old):
        spark.sql(f"CREATE TABLE lakeskip.nan.{name} (id BIGINT, c DOUBLE) {props}")
    spark.createDataFrame(rows, "id BIGINT, c DOUBLE").coalesce(1).createOrReplaceTempView(
        "nan_src"
    )
    spark.sql(f"INSERT INTO lakeskip.nan.{new} SELECT * FROM nan_src")
    table = nan_session.catalog.get_table(f"nan.{old}")
    data = pa.table({"id": [r[0] for r in rows], "c": [r[1] for r in rows]})
    write_old_file(table, data, monkeypatch, level=4 if kind == "pkdv" else 0)
    if kind in ("dv", "pkdv"):  # a deletion vector on every file: the DV read paths
        for name in (new, old):
            spark.sql(f"DELETE FROM lakeskip.nan.{name} WHERE id IN (2, 3)")
            assert (
                nan_session.catalog.get_table(f"nan.{name}").scan_files()[0].file.row_count == 1000
            )
    views = Session(nan_session.catalog, spark)  # no catalog service: Session.sql's views
    for name in (new, old):
        for q in QUERIES:
            assert _count(spark, name, q) == 100, f"{name}: {q} through the Spark catalog"
            got = nan_session.sql(f"SELECT count(*) AS n FROM nan.{name} WHERE {q}").collect()
            assert got[0][0] == 100, f"{name}: {q} through Session.sql"
            got = views.sql(f"SELECT count(*) AS n FROM nan.{name} WHERE {q}").collect()
            assert got[0][0] == 100, f"{name}: {q} through Session.sql's temporary views"
        finite = 798 if kind in ("dv", "pkdv") else 800
        assert _count(spark, name, "c < double('Infinity')") == finite, name


def test_delete_where_nan_removes_the_nan_rows_of_old_files(
    spark: SparkSession, nan_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DELETE's condition scan reads the files through Spark's Parquet source too."""
    rows = _issue_rows()
    data = pa.table({"id": [r[0] for r in rows], "c": [r[1] for r in rows]})
    for name, props in (("del_app", ""), ("del_dv", "TBLPROPERTIES ('deletion-vectors' = 'true')")):
        spark.sql(f"CREATE TABLE lakeskip.nan.{name} (id BIGINT, c DOUBLE) {props}")
        write_old_file(nan_session.catalog.get_table(f"nan.{name}"), data, monkeypatch)
        spark.sql(f"DELETE FROM lakeskip.nan.{name} WHERE c > double('Infinity')")
        assert _count(spark, name, "isnan(c)") == 0, name
        assert _count(spark, name, "true") == 900, name


def test_compaction_rewrites_old_files_with_safe_statistics(
    spark: SparkSession, nan_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _issue_rows()
    spark.sql("CREATE TABLE lakeskip.nan.compacted (id BIGINT, c DOUBLE)")
    table = nan_session.catalog.get_table("nan.compacted")
    for half in (rows[:500], rows[500:]):
        data = pa.table({"id": [r[0] for r in half], "c": [r[1] for r in half]})
        write_old_file(table, data, monkeypatch)

    def c_stats() -> list[bool]:
        t = nan_session.catalog.get_table("nan.compacted")
        out = []
        for e in t.scan_files():
            with t.file_io.open_input(t.data_file_path(e)) as f:
                meta = pq.ParquetFile(f).metadata
                out += [
                    meta.row_group(g).column(1).is_stats_set for g in range(meta.num_row_groups)
                ]
        return out

    assert c_stats() == [True, True], "the old writer's NaN-less statistics"
    spark.sql("CALL lakeskip.sys.compact(table => 'nan.compacted')").collect()
    assert c_stats() == [False], "the rewritten file has no statistics for c (it holds NaN)"
    for q in QUERIES:
        assert _count(spark, "compacted", q) == 100, q


# -- differential: random predicates against the same rows written by Spark's own writer ------

SPECIALS = [NAN, 0.0, -0.0, INF, -INF, None, 1.5, -2.5, 3.0, 1e300]


def _value(i: int, salt: int) -> float | None:
    return SPECIALS[(i * 7 + salt) % len(SPECIALS)] if (i + salt) % 3 else float(i % 5) - 2.0


def _diff_rows(lo: int, hi: int) -> list[tuple[int, float | None, float | None]]:
    # from 480 on, a file of signed zeros: dictionary pages holding -0.0 but no 0.0
    return [
        (i, _value(i, 1), _value(i, 4))
        if i < 480
        else (i, -0.0 if i % 3 else None, -0.0 if i % 4 else 7.0)
        for i in range(lo, hi)
    ]


LITERALS = {
    "d": [
        "double('NaN')",
        "double('Infinity')",
        "double('-Infinity')",
        "0.0D",
        "double('-0.0')",
        "1.5D",
        "-2.5D",
        "1e300D",
        "2.0D",
        "NULL",
    ],
    "f": [
        "float('NaN')",
        "float('Infinity')",
        "float('-Infinity')",
        "CAST(0.0 AS FLOAT)",
        "float('-0.0')",
        "CAST(1.5 AS FLOAT)",
        "CAST(-2.5 AS FLOAT)",
        "CAST(2.0 AS FLOAT)",
        "NULL",
    ],
}


@st.composite
def _leaf(draw: st.DrawFn) -> str:
    col = draw(st.sampled_from(["d", "f"]))
    lit = st.sampled_from(LITERALS[col])
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "in", "between", "null", "isnan"]))
    if kind == "cmp":
        return (
            f"{col} {draw(st.sampled_from(['=', '<>', '<', '<=', '>', '>=', '<=>']))} {draw(lit)}"
        )
    if kind == "in":
        values = draw(st.lists(lit, min_size=1, max_size=3))
        return f"{col} {draw(st.sampled_from(['IN', 'NOT IN']))} ({', '.join(values)})"
    if kind == "between":
        return f"{col} BETWEEN {draw(lit)} AND {draw(lit)}"
    if kind == "null":
        return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    return f"isnan({col})"


PREDICATES = st.recursive(
    _leaf(),
    lambda kids: st.one_of(
        st.tuples(kids, st.sampled_from(["AND", "OR"]), kids).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        kids.map(lambda k: f"NOT ({k})"),
    ),
    max_leaves=3,
)


@pytest.fixture(scope="module")
def diff_tables(
    spark: SparkSession, nan_session: Any, tmp_path_factory: pytest.TempPathFactory
) -> list[str]:
    """An append and a DV table with bloom-filter, bitmap and range-bitmap indexes on the
    float columns, each of three files written on the driver by the old writer (one of them
    the signed zeros) and two by Spark INSERT (one row group per 40 rows); the zeros alone;
    and the same live rows written by Spark."""
    mp = pytest.MonkeyPatch()
    schema = "id BIGINT, f FLOAT, d DOUBLE"
    opts = (
        "'parquet.block.size' = '1000', 'file-index.bloom-filter.columns' = 'd', "
        "'file-index.bitmap.columns' = 'f', 'file-index.range-bitmap.columns' = 'd'"
    )
    live: list[tuple[int, float | None, float | None]] = []
    for name, extra in (("diff_app", ""), ("diff_dv", ", 'deletion-vectors' = 'true'")):
        spark.sql(f"CREATE TABLE lakeskip.nan.{name} ({schema}) TBLPROPERTIES ({opts}{extra})")
        table = nan_session.catalog.get_table(f"nan.{name}")
        for part in range(5):
            rows = _diff_rows(part * 120, part * 120 + 120)
            if part % 2 or part == 4:  # 4: pyarrow keeps -0.0 as it is
                data = pa.table(
                    {
                        "id": [r[0] for r in rows],
                        "f": pa.array([r[1] for r in rows], pa.float32()),
                        "d": [r[2] for r in rows],
                    }
                )
                write_old_file(table, data, mp)
            else:
                spark.createDataFrame(rows, schema).coalesce(1).createOrReplaceTempView("nan_src")
                spark.sql(f"INSERT INTO lakeskip.nan.{name} SELECT * FROM nan_src")
    files = nan_session.catalog.get_table("nan.diff_app").scan_files()
    assert all(e.file.embedded_index or e.file.index_file_name for e in files), "indexes"
    spark.sql("DELETE FROM lakeskip.nan.diff_dv WHERE id % 17 = 3")
    # the signed zeros alone: no NaN in the scan that would keep the columns unpushed anyway
    spark.sql(f"CREATE TABLE lakeskip.nan.diff_zero ({schema}) TBLPROPERTIES ({opts})")
    zeros = _diff_rows(480, 600)
    write_old_file(
        nan_session.catalog.get_table("nan.diff_zero"),
        pa.table(
            {
                "id": [r[0] for r in zeros],
                "f": pa.array([r[1] for r in zeros], pa.float32()),
                "d": [r[2] for r in zeros],
            }
        ),
        mp,
    )
    live = _diff_rows(0, 600)
    path = str(tmp_path_factory.mktemp("spark_written") / "p")
    spark.createDataFrame(live, schema).repartition(5).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("diff_plain")
    mp.undo()
    return ["diff_app", "diff_dv"]


def _rows(spark: SparkSession, sql: str) -> list[tuple[Any, ...]]:
    def norm(v: Any) -> Any:
        return "NaN" if isinstance(v, float) and math.isnan(v) else v

    return sorted((tuple(map(norm, r)) for r in spark.sql(sql).collect()), key=repr)


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=10, fuzz=100),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(where=PREDICATES)
@example(where="d = 0.0D")  # the file of -0.0: parquet-mr's dictionary filter
@example(where="f IN (CAST(0.0 AS FLOAT), float('NaN'))")
@example(where="d >= double('NaN')")  # old files: min/max without NaN
@example(where="NOT (f <= float('Infinity'))")
def test_float_predicates_return_exactly_the_rows_of_sparks_own_files(
    spark: SparkSession, diff_tables: list[str], where: str
) -> None:
    """Spark's own files are read without pushdown: with it, parquet-mr's dictionary filter
    drops their -0.0 rows for ``c = 0.0`` (a Spark bug lakeskip must not share)."""
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        want = _rows(spark, f"SELECT id, f, d FROM diff_plain WHERE {where}")
    finally:
        spark.conf.set("spark.sql.parquet.filterPushdown", "true")
    got = _rows(spark, f"SELECT id, f, d FROM lakeskip.nan.diff_app WHERE {where}")
    assert got == want, f"WHERE {where}: catalog {len(got)} rows, Spark's own files {len(want)}"
    want_dv = [r for r in want if r[0] % 17 != 3]
    got_dv = _rows(spark, f"SELECT id, f, d FROM lakeskip.nan.diff_dv WHERE {where}")
    assert got_dv == want_dv, f"WHERE {where} (DV table): {len(got_dv)} rows, want {len(want_dv)}"
    want_zero = [r for r in want if r[0] >= 480]
    got_zero = _rows(spark, f"SELECT id, f, d FROM lakeskip.nan.diff_zero WHERE {where}")
    assert got_zero == want_zero, f"WHERE {where} (zeros): {len(got_zero)}, want {len(want_zero)}"


def test_spark_writer_oracle_is_the_python_rows(
    spark: SparkSession, diff_tables: list[str]
) -> None:
    """The oracle itself holds the rows (NaN, -0.0 and NULL survive Spark's writer)."""
    assert len(_rows(spark, "SELECT * FROM diff_plain WHERE isnan(d)")) == sum(
        1 for r in _diff_rows(0, 600) if r[2] is not None and math.isnan(r[2])
    )


def test_millisecond_timestamps_keep_the_row_spark_would_truncate_away(
    spark: SparkSession, nan_session: Any
) -> None:
    """A TIMESTAMP_LTZ(3) column is stored in milliseconds; Spark truncates the literal of
    ``ts < '...01.0005'`` to ``01.000`` and skipped the row group holding ``01.000``."""
    rt = RowType.of(("id", parse_sql_type("BIGINT")), ("ts", parse_sql_type("TIMESTAMP_LTZ(3)")))
    table = nan_session.catalog.create_table("nan.ms", rt)
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    ms = pa.array([1000 + 1000 * i for i in range(100)], pa.timestamp("ms", tz="UTC"))
    table.commit(write_all(spec, [pa.table({"id": list(range(100)), "ts": ms})]))
    tz = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    views = Session(nan_session.catalog, spark)  # Spark's V1 Parquet source pushes them
    try:
        for where, n in (
            ("ts < TIMESTAMP'1970-01-01 00:00:01.0005'", 1),
            ("NOT (ts >= TIMESTAMP'1970-01-01 00:00:01.0005')", 1),
            ("ts <= TIMESTAMP'1970-01-01 00:00:01.0005'", 1),
            ("ts > TIMESTAMP'1970-01-01 00:01:39.9995'", 1),
        ):
            assert _count(spark, "ms", where) == n, where
            got = views.sql(f"SELECT count(*) FROM nan.ms WHERE {where}").collect()[0][0]
            assert got == n, f"{where} through Session.sql's views"
    finally:
        spark.conf.set("spark.sql.session.timeZone", tz)
