"""Never a wrong answer through the catalog: random predicates, catalog scan vs plain Spark.

One table with bloom, bitmap and bsi indexes over several files (nulls, a NULL partition),
and hypothesis-generated WHERE clauses mixing what lakeskip translates (comparisons, IN with
NULL, <=>, IS NULL, LIKE prefix, partition columns, NOT, OR) with what it cannot
(``upper(s)``, arithmetic). ``spark.sql`` on the catalog must return exactly the rows plain
Spark returns over every file of the table.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from tests.examples import spark_examples

import lakeskip

INTS = st.integers(-2, 25)


@st.composite
def leaf(draw: st.DrawFn) -> str:
    kind = draw(
        st.sampled_from(["cmp", "in", "nullsafe", "null", "like", "part", "upper", "arith"])
    )
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        col = draw(st.sampled_from(["a", "b"]))
        return f"{col} {op} {draw(INTS)}"
    if kind == "in":
        values = draw(st.lists(st.one_of(INTS.map(str), st.just("NULL")), min_size=1, max_size=4))
        return f"a IN ({', '.join(values)})"
    if kind == "nullsafe":
        return f"b <=> {draw(st.one_of(INTS.map(str), st.just('NULL')))}"
    if kind == "null":
        return f"{draw(st.sampled_from(['a', 'b', 's', 'p']))} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == "like":
        return f"s LIKE '{draw(st.sampled_from(['s1', 's', 'x', 's2']))}%'"
    if kind == "part":
        return f"p {draw(st.sampled_from(['=', '<>', '<']))} '{draw(st.sampled_from(['x', 'y', 'z']))}'"
    if kind == "upper":
        return f"upper(s) = '{draw(st.sampled_from(['S1', 'S12', 'X']))}'"
    return f"a + 1 = {draw(INTS)}"


PREDICATES = st.recursive(
    leaf(),
    lambda kids: st.one_of(
        st.tuples(kids, st.sampled_from(["AND", "OR"]), kids).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        kids.map(lambda k: f"NOT ({k})"),
    ),
    max_leaves=5,
)


@pytest.fixture(scope="module")
def oracle_table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:
    wh = tmp_path_factory.mktemp("oracle") / "wh"
    s = lakeskip.connect(str(wh), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.o")
    spark.sql(
        "CREATE TABLE lakeskip.o.t (a INT, b BIGINT, s STRING, p STRING) PARTITIONED BY (p) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns'='s', 'file-index.bitmap.columns'='a', "
        "'file-index.bsi.columns'='b')"
    )
    for f in range(5):  # one file per INSERT, overlapping and disjoint value ranges
        spark.sql(
            f"""INSERT INTO lakeskip.o.t SELECT
                  CASE WHEN id % 7 = 0 THEN NULL ELSE CAST(id % ({f} * 4 + 3) + {f} AS INT) END,
                  CASE WHEN id % 5 = 0 THEN NULL ELSE id + {f * 6} END,
                  CASE WHEN id % 6 = 0 THEN NULL ELSE concat('s', CAST(id + {f} AS STRING)) END,
                  {"NULL" if f == 4 else repr("xyz"[f % 3])}
                FROM range(0, 12, 1, 1)"""
        )
    files = [f"file://{p}" for p in s.table("o.t").files()]
    part = F.regexp_extract(F.input_file_name(), r"/p=([^/]*)/bucket-", 1)
    plain = (
        spark.read.schema("a INT, b BIGINT, s STRING")
        .parquet(*files)
        .withColumn("p", F.when(part == "__DEFAULT_PARTITION__", None).otherwise(part))
    )
    plain.createOrReplaceTempView("oracle_plain")
    return s


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=10, fuzz=100),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(where=PREDICATES)
def test_catalog_scan_returns_exactly_plain_sparks_rows(
    spark: SparkSession, oracle_table: Any, where: str
) -> None:
    got = sorted(
        map(tuple, spark.sql(f"SELECT a, b, s, p FROM lakeskip.o.t WHERE {where}").collect()),
        key=repr,
    )
    want = sorted(
        map(tuple, spark.sql(f"SELECT a, b, s, p FROM oracle_plain WHERE {where}").collect()),
        key=repr,
    )
    assert got == want, f"WHERE {where}: catalog gave {len(got)} rows, plain Spark {len(want)}"
