"""ROW (STRUCT) columns in real Spark (issue 28 item 4): every writer, reads, time travel,
compaction, a primary-key table with a ROW value column, and predicates on nested fields that
never give a wrong answer (an oracle over the same rows written by Spark itself)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from tests.examples import spark_examples

import lakeskip
from lakeskip.errors import LakeskipError

ST = "STRUCT<x: INT, y: STRING, z: STRUCT<a: BIGINT, b: ARRAY<INT>>>"


def _rows(df: Any) -> list[str]:
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True) for r in df.collect())


def _row(i: int) -> str:
    """SQL for row i: st NULL, or with a NULL x / NULL z now and then."""
    if i % 7 == 3:
        return f"({i}, NULL)"
    x = "CAST(NULL AS INT)" if i % 5 == 4 else str(i % 4)
    z = "NULL" if i % 6 == 5 else f"named_struct('a', {i * 10}, 'b', array({i}, {i + 1}))"
    return f"({i}, named_struct('x', {x}, 'y', 'y{i}', 'z', {z}))"


def _expected(ids: list[int]) -> list[str]:
    out = []
    for i in ids:
        if i % 7 == 3:
            st_: Any = None
        else:
            z = None if i % 6 == 5 else {"a": i * 10, "b": [i, i + 1]}
            st_ = {"x": None if i % 5 == 4 else i % 4, "y": f"y{i}", "z": z}
        out.append(json.dumps({"id": i, "st": st_}, sort_keys=True))
    return sorted(out)


@pytest.fixture
def lk(spark: SparkSession, tmp_path: Path) -> Any:
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    assert s.catalog_name == "lakeskip"
    return s


def test_row_table_through_every_writer_time_travel_and_compaction(
    spark: SparkSession, lk: Any, tmp_path: Path
) -> None:
    # Paimon's spelling through Session.sql; Spark's through plain spark.sql (below)
    lk.sql("CREATE TABLE t (id INT, st ROW<x INT, y STRING, z ROW<a BIGINT, b ARRAY<INT>>>)")
    schema = json.loads((tmp_path / "wh" / "default.db" / "t" / "schema" / "schema-0").read_text())
    assert [f["id"] for f in schema["fields"]] == [0, 1] and schema["highestFieldId"] == 6
    lk.sql(f"INSERT INTO t VALUES {', '.join(_row(i) for i in range(0, 4))}")  # Session.sql
    first = lk.catalog.get_table("default.t").latest_snapshot().id
    spark.sql(f"INSERT INTO lakeskip.default.t VALUES {', '.join(_row(i) for i in range(4, 8))}")

    def df(ids: range) -> Any:
        return spark.sql(f"SELECT * FROM VALUES {', '.join(_row(i) for i in ids)} AS v(id, st)")

    df(range(8, 10)).writeTo("lakeskip.default.t").append()
    df(range(10, 12)).write.insertInto("lakeskip.default.t")
    df(range(12, 14)).write.mode("append").saveAsTable("lakeskip.default.t")
    # Session.write matches struct fields by name, at every depth, as Spark's by-name writes
    shuffled = spark.sql(
        "SELECT 14 AS id, named_struct('z', named_struct('b', array(14, 15), 'a', 140L), "
        "'y', 'y14', 'x', CAST(NULL AS INT)) AS st"
    )
    lk.write(shuffled, "default.t")
    ids = list(range(15))
    assert _rows(lk.sql("SELECT * FROM t")) == _expected(ids)
    assert _rows(spark.sql("SELECT * FROM lakeskip.default.t")) == _expected(ids)
    # nested field access and predicates
    got = lk.sql("SELECT id FROM t WHERE st.z.a >= 100 AND st.x = 0").collect()
    # st present (i % 7 != 3), z present (i % 6 != 5), x not NULL (i % 5 != 4) and 0
    want = [i for i in ids if i % 7 != 3 and i % 6 != 5 and i >= 10 and i % 5 != 4 and i % 4 == 0]
    assert sorted(r.id for r in got) == want == [12]
    # time travel reads the first snapshot's rows
    assert _rows(lk.sql(f"SELECT * FROM t VERSION AS OF {first}")) == _expected(list(range(4)))
    assert _rows(spark.sql(f"SELECT * FROM lakeskip.default.t VERSION AS OF {first}")) == (
        _expected(list(range(4)))
    )
    # CTAS through both front ends
    lk.sql("CREATE TABLE c1 AS SELECT * FROM t")
    spark.sql("CREATE TABLE lakeskip.default.c2 AS SELECT * FROM lakeskip.default.t")
    for c in ("c1", "c2"):
        assert _rows(lk.sql(f"SELECT * FROM {c}")) == _expected(ids), c
    c1 = lk.catalog.get_table("default.c1").schema.row_type.field("st").type
    c2 = lk.catalog.get_table("default.c2").schema.row_type.field("st").type
    assert c1 == c2 == lk.catalog.get_table("default.t").schema.row_type.field("st").type
    # compaction keeps every row
    before = len(lk.table("default.t").files())
    lk.sql("CALL sys.compact(table => 't')")
    assert len(lk.table("default.t").files()) < before
    assert _rows(lk.sql("SELECT * FROM t")) == _expected(ids)
    # DESCRIBE agrees with Spark's own
    ours = {r.col_name: r.data_type for r in lk.sql("DESCRIBE t").collect()}
    theirs = {r.col_name: r.data_type for r in spark.sql("DESCRIBE lakeskip.default.t").collect()}
    assert ours["st"] == theirs["st"] == "struct<x:int,y:string,z:struct<a:bigint,b:array<int>>>"
    # DELETE on a nested field removes exactly the matching rows
    lk.sql("DELETE FROM t WHERE st.x = 1")
    left = [i for i in ids if not (i % 7 != 3 and i % 5 != 4 and i % 4 == 1)]
    assert _rows(lk.sql("SELECT * FROM t")) == _expected(left)
    # ADD COLUMNS of a ROW: old files read it as NULL
    lk.sql("ALTER TABLE t ADD COLUMNS (s2 STRUCT<q: INT>)")
    assert {r.s2 for r in lk.sql("SELECT s2 FROM t").collect()} == {None}


def test_nested_not_null_is_checked_and_the_table_is_untouched(
    spark: SparkSession, lk: Any
) -> None:
    spark.sql(
        "CREATE TABLE lakeskip.default.n (id INT, st STRUCT<x: INT NOT NULL COMMENT 'the x', "
        "z: STRUCT<a: INT NOT NULL>>) USING lakeskip"
    )
    st_type = lk.catalog.get_table("default.n").schema.row_type.field("st").type
    assert st_type.spark_ddl() == (
        "STRUCT<`x`: INT NOT NULL COMMENT 'the x', `z`: STRUCT<`a`: INT NOT NULL>>"
    )
    lk.sql("INSERT INTO n VALUES (1, named_struct('x', 1, 'z', NULL)), (2, NULL)")
    for bad, field in (
        ("named_struct('x', CAST(NULL AS INT), 'z', NULL)", "st.x"),
        ("named_struct('x', 3, 'z', named_struct('a', CAST(NULL AS INT)))", "st.z.a"),
    ):
        with pytest.raises(LakeskipError, match=f"NULL in NOT NULL column {field}"):
            lk.sql(f"INSERT INTO n SELECT 3, {bad}")
    assert lk.catalog.get_table("default.n").latest_snapshot().id == 1
    assert sorted(r.id for r in lk.sql("SELECT id FROM n").collect()) == [1, 2]


def test_primary_key_table_with_a_row_value_column(spark: SparkSession, lk: Any) -> None:
    spark.sql(
        "CREATE TABLE lakeskip.default.p (id INT, st STRUCT<x: INT, y: STRING>, "
        "PRIMARY KEY (id)) TBLPROPERTIES ('bucket'='2')"
    )
    lk.sql("INSERT INTO p VALUES (1, named_struct('x', 1, 'y', 'a')), (2, NULL), (3, NULL)")
    spark.sql(
        "INSERT INTO lakeskip.default.p VALUES (1, named_struct('x', 9, 'y', 'z')), "
        "(3, named_struct('x', 3, 'y', 'c'))"
    )
    want = [(1, (9, "z")), (2, None), (3, (3, "c"))]

    def read(df: Any) -> list[Any]:
        return sorted((r.id, None if r.st is None else tuple(r.st)) for r in df.collect())

    assert read(lk.sql("SELECT * FROM p")) == want
    assert read(spark.sql("SELECT * FROM lakeskip.default.p")) == want
    assert read(spark.sql("SELECT * FROM lakeskip.default.p WHERE st.x = 9")) == want[:1]
    lk.sql("CALL sys.compact(table => 'p')")
    assert read(lk.sql("SELECT * FROM p")) == want
    with pytest.raises(LakeskipError, match="primary key column st"):
        lk.sql("CREATE TABLE bad (id INT, st STRUCT<x: INT>, PRIMARY KEY (st) NOT ENFORCED)")


# -- never a wrong answer on nested fields -------------------------------------------------

_values = st.one_of(st.none(), st.integers(-3, 3))
_structs = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"x": _values, "y": st.sampled_from([None, "a", "b", "c"]), "z": st.one_of(
            st.none(), st.fixed_dictionaries({"a": _values}))}
    ),
)  # fmt: skip
_conditions = st.sampled_from(
    [
        "st.x = {v}",
        "st.x > {v}",
        "st.x IS NULL",
        "st IS NULL",
        "st IS NOT NULL",
        "st.z.a = {v}",
        "st.z IS NULL",
        "st.y = 'b'",
        "id = {v} OR st.x = {v}",
        "NOT (st.x <=> {v})",
        "st.x IN ({v}, 1)",
        "x = {v}",  # a top-level column named like the nested field
        "x = {v} AND st.x = {v}",
    ]
)


@pytest.mark.fuzz
@settings(max_examples=spark_examples(test=3, fuzz=20), deadline=None)
@given(
    files=st.lists(
        st.lists(st.tuples(_values, _structs), min_size=1, max_size=6), min_size=1, max_size=3
    ),
    conditions=st.lists(st.tuples(_conditions, st.integers(-3, 3)), min_size=3, max_size=3),
)
def test_nested_predicates_never_give_a_wrong_answer(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, files: Any, conditions: Any
) -> None:
    base = tmp_path_factory.mktemp("oracle")
    lk = lakeskip.connect(str(base / "wh"), spark=spark)
    ddl = "id INT, x INT, st STRUCT<x: INT, y: STRING, z: STRUCT<a: INT>>"
    lk.sql(f"CREATE TABLE o ({ddl}) WITH ('file-index.bloom-filter.columns'='x')")
    n = 0
    frames = []
    for rows in files:
        data = []
        for x, s in rows:
            data.append((n, x, s))
            n += 1
        df = spark.createDataFrame(data, ddl)
        lk.write(df, "default.o")
        frames.append(df)
    # the same rows written by Spark itself, read with Spark's own pushdown
    plain_path = str(base / "plain")
    union = frames[0]
    for f in frames[1:]:
        union = union.unionAll(f)
    union.write.parquet(plain_path)
    spark.read.parquet(plain_path).createOrReplaceTempView("oracle_plain")
    # Session.sql plans through the catalog; without it (no javac) through temporary views
    fallback = lakeskip.Session(lk.catalog, spark)
    assert fallback.catalog_name is None
    for cond, v in conditions:
        where = cond.format(v=v)
        ours = sorted(r.id for r in lk.sql(f"SELECT id FROM o WHERE {where}").collect())
        views = sorted(r.id for r in fallback.sql(f"SELECT id FROM o WHERE {where}").collect())
        via_catalog = spark.sql(f"SELECT id FROM {lk.catalog_name}.default.o WHERE {where}")
        theirs = sorted(
            r.id for r in spark.sql(f"SELECT id FROM oracle_plain WHERE {where}").collect()
        )
        assert ours == theirs, where
        assert views == theirs, f"temp-view path: {where}"
        assert sorted(r.id for r in via_catalog.collect()) == theirs, where
