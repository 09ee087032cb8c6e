"""Typed column vectors (``jvm/read/rules/LakeVectorTypes``): Spark's generated code reads a
lakeskip Parquet scan's columns through the vector classes its reader builds, as it reads plain
Spark's V1 scan's. A wrong class is a ``ClassCastException`` in the generated code, so every
shape is read for real and compared with an oracle that shares nothing with lakeskip's read
(the same rows made by Spark's ``range``), and the node and its classes are checked: typed
where the classes are known (data columns on-heap or off-heap, partition columns constant),
untyped (``BatchScanExec``, as before) where another reader makes the batches.

The shared test session attaches the catalog at run time, so its own columnar rules are fixed;
``spark.newSession()`` after the attach is built with the rule (``PreCboRules.install``)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from tests.spark.read.scan_metrics import batch_scans, scan_metrics

import lakeskip
from lakeskip.spark.front import catalog_setup

ON_HEAP = "org.apache.spark.sql.execution.vectorized.OnHeapColumnVector"
OFF_HEAP = "org.apache.spark.sql.execution.vectorized.OffHeapColumnVector"
CONSTANT = "org.apache.spark.sql.execution.vectorized.ConstantColumnVector"
TYPED = "LakeVectorTypes$TypedScan"

#: every column kind the vectorized Parquet reader reads, NULLs in each
COLUMNS = (
    "id BIGINT, d DECIMAL(15,2), big DECIMAL(38,10), small DECIMAL(5,1), s STRING, dt DATE, "
    "ts TIMESTAMP, f DOUBLE, r FLOAT, i INT, sh SMALLINT, b BOOLEAN, bin BINARY, "
    "st STRUCT<x: INT, y: STRING>, arr ARRAY<INT>, m MAP<STRING, INT>"
)
ROWS = (
    "id, IF(id % 7 = 0, NULL, CAST(id * 1.25 AS DECIMAL(15,2))), "
    "IF(id % 11 = 0, NULL, CAST(CAST(id AS DECIMAL(38,10)) / 3 AS DECIMAL(38,10))), CAST(id % 1000 / 10 AS DECIMAL(5,1)), "
    "IF(id % 5 = 0, NULL, concat('s', id % 97)), date_add(DATE'2020-01-01', CAST(id % 400 AS INT)), "
    "timestamp_seconds(1600000000 + id * 37), IF(id % 13 = 0, NULL, CAST(id / 7.0 AS DOUBLE)), "
    "CAST(id % 101 AS FLOAT), CAST(id % 1000 AS INT), CAST(id % 300 AS SMALLINT), id % 2 = 0, "
    "IF(id % 3 = 0, NULL, CAST(concat('b', id) AS BINARY)), "
    "IF(id % 9 = 0, NULL, named_struct('x', CAST(id % 17 AS INT), 'y', concat('y', id))), "
    "IF(id % 4 = 0, NULL, array(CAST(id AS INT), NULL)), map(concat('k', id % 3), CAST(id AS INT))"
)
QUERIES = (
    "SELECT * FROM {t}",
    "SELECT sum(d), sum(big), avg(small), count(s), min(dt), max(ts), round(sum(f), 3), sum(r), sum(i), "
    "sum(sh), count_if(b), count(bin) FROM {t}",
    "SELECT s, sum(d * (1 - small / 100)), count(*) FROM {t} WHERE dt >= DATE'2020-03-01' "
    "GROUP BY s",
    "SELECT st.x, sum(size(arr)), count(m) FROM {t} WHERE id % 3 = 1 GROUP BY st.x",
)


@pytest.fixture
def typed(spark: SparkSession, tmp_path: Path) -> Iterator[SparkSession]:
    """A session built after the catalog's attach: it has lakeskip's columnar rule."""
    lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    s = spark.newSession()
    rules = s._jsparkSession.sessionState().columnarRules().toString()  # type: ignore[attr-defined]
    assert "LakeVectorTypes" in rules, rules
    s.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.vt")
    yield s


def test_the_jar_carries_no_spark_class() -> None:
    """The stand-in Spark's ``BatchScanExec`` the subclass is compiled against is never
    packaged: the jar holds lakeskip's classes only (Spark's own class is the one loaded)."""
    with zipfile.ZipFile(catalog_setup.catalog_jar() or "") as jar:
        names = jar.namelist()
    assert "lakeskip/jvm/read/rules/LakeVectorTypes$TypedScan.class" in names
    assert not [n for n in names if n.endswith(".class") and not n.startswith("lakeskip/")]


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _scan_types(df: Any, table: str) -> list[tuple[str, list[str] | None]]:
    """Each ``BatchScan <table>`` node's class and vector classes (None: untyped)."""
    out = []
    for node in batch_scans(df, table):
        types = node.vectorTypes()
        listed = None
        if types.isDefined():
            seq = types.get()
            listed = [str(seq.apply(i)) for i in range(seq.size())]
        out.append((str(node.getClass().getName()).rsplit(".", 1)[-1], listed))
    return out


def _fill(s: SparkSession, table: str, chunks: int = 3, per: int = 3000) -> None:
    for c in range(chunks):
        s.sql(f"INSERT INTO {table} SELECT {ROWS} FROM range({c * per}, {(c + 1) * per}, 1, 1)")


def test_every_column_kind_reads_typed_as_plain_spark(typed: SparkSession) -> None:
    typed.sql(f"CREATE TABLE lakeskip.vt.all ({COLUMNS})")
    _fill(typed, "lakeskip.vt.all")
    names = [
        "id",
        "d",
        "big",
        "small",
        "s",
        "dt",
        "ts",
        "f",
        "r",
        "i",
        "sh",
        "b",
        "bin",
        "st",
        "arr",
        "m",
    ]
    oracle = typed.sql(f"SELECT {ROWS} FROM range(0, 9000, 1, 1)").toDF(*names)
    oracle.createOrReplaceTempView("oracle")
    for q in QUERIES:
        df = typed.sql(q.format(t="lakeskip.vt.all"))
        assert _rows(df) == _rows(typed.sql(q.format(t="oracle"))), q
    # a flat read: typed, one on-heap vector per column read
    df = typed.sql("SELECT sum(d), sum(big), count(s), max(ts) FROM lakeskip.vt.all")
    assert _rows(df) == _rows(typed.sql("SELECT sum(d), sum(big), count(s), max(ts) FROM oracle"))
    assert _scan_types(df, "lakeskip.vt.all") == [(TYPED, [ON_HEAP] * 4)]
    metrics = scan_metrics(df, "lakeskip.vt.all")
    assert metrics is not None and metrics["lakeskipFilesKept"] == 3, metrics
    assert "BatchScan lakeskip.vt.all" in df._jdf.queryExecution().executedPlan().toString()
    # nested columns too, where Spark reads them as batches
    df = typed.sql("SELECT * FROM lakeskip.vt.all WHERE id < 50")
    [(kind, types)] = _scan_types(df, "lakeskip.vt.all")
    assert (kind, types) in ((TYPED, [ON_HEAP] * 16), ("BatchScanExec", None))
    # without adaptive execution, and switched off
    typed.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        q = QUERIES[2]
        df = typed.sql(q.format(t="lakeskip.vt.all"))
        assert _rows(df) == _rows(typed.sql(q.format(t="oracle")))
        assert _scan_types(df, "lakeskip.vt.all") == [(TYPED, [ON_HEAP] * 4)]
    finally:
        typed.conf.unset("spark.sql.adaptive.enabled")
    typed.conf.set("spark.lakeskip.typed-vectors.enabled", "false")
    try:
        df = typed.sql(QUERIES[1].format(t="lakeskip.vt.all"))
        assert _rows(df) == _rows(typed.sql(QUERIES[1].format(t="oracle")))
        assert _scan_types(df, "lakeskip.vt.all") == [("BatchScanExec", None)]
    finally:
        typed.conf.unset("spark.lakeskip.typed-vectors.enabled")


def test_partition_columns_and_off_heap_vectors(typed: SparkSession) -> None:
    typed.sql(
        "CREATE TABLE lakeskip.vt.part (id BIGINT, d DECIMAL(15,2), p STRING, q INT) "
        "PARTITIONED BY (p, q)"
    )
    make = (
        "SELECT id, CAST(id * 0.5 AS DECIMAL(15,2)), element_at(array('a', 'b', NULL), "
        "CAST(id % 3 + 1 AS INT)), CAST(id % 2 AS INT) FROM range(0, 6000, 1, 1)"
    )
    typed.sql(f"INSERT INTO lakeskip.vt.part {make}")
    typed.sql(make).toDF("id", "d", "p", "q").createOrReplaceTempView("oracle_part")
    q = "SELECT p, q, sum(d), count(id) FROM {t} WHERE id % 5 <> 2 GROUP BY p, q"
    df = typed.sql(q.format(t="lakeskip.vt.part"))
    assert _rows(df) == _rows(typed.sql(q.format(t="oracle_part")))
    assert _scan_types(df, "lakeskip.vt.part") == [(TYPED, [ON_HEAP] * 2 + [CONSTANT] * 2)]
    # a partition filter and a partition column only
    q = "SELECT q, count(*) FROM {t} WHERE p = 'b' GROUP BY q"
    df = typed.sql(q.format(t="lakeskip.vt.part"))
    assert _rows(df) == _rows(typed.sql(q.format(t="oracle_part")))
    typed.conf.set("spark.sql.columnVector.offheap.enabled", "true")
    try:
        q = "SELECT p, q, sum(d), max(id) FROM {t} GROUP BY p, q"
        df = typed.sql(q.format(t="lakeskip.vt.part"))
        assert _rows(df) == _rows(typed.sql(q.format(t="oracle_part")))
        assert _scan_types(df, "lakeskip.vt.part") == [(TYPED, [OFF_HEAP] * 2 + [CONSTANT] * 2)]
    finally:
        typed.conf.unset("spark.sql.columnVector.offheap.enabled")
    df = typed.sql("SELECT sum(d) FROM lakeskip.vt.part")
    assert _rows(df) == _rows(typed.sql("SELECT sum(d) FROM oracle_part"))
    assert _scan_types(df, "lakeskip.vt.part") == [(TYPED, [ON_HEAP])], "on-heap again"


def test_runtime_filters_on_a_typed_scan(typed: SparkSession) -> None:
    typed.sql("CREATE TABLE lakeskip.vt.fact (k BIGINT, v DECIMAL(15,2), p INT) PARTITIONED BY (p)")
    typed.sql("CREATE TABLE lakeskip.vt.dim (p INT, name STRING)")
    fact = "SELECT id, CAST(id AS DECIMAL(15,2)) / 4, CAST(id % 8 AS INT) FROM range(0, 8000, 1, 1)"
    typed.sql(f"INSERT INTO lakeskip.vt.fact {fact}")
    typed.sql("INSERT INTO lakeskip.vt.dim SELECT CAST(id AS INT), concat('n', id) FROM range(8)")
    typed.sql(fact).toDF("k", "v", "p").createOrReplaceTempView("oracle_fact")
    typed.sql(
        "SELECT CAST(id AS INT) AS p, concat('n', id) AS name FROM range(8)"
    ).createOrReplaceTempView("oracle_dim")
    q = (
        "SELECT d.name, sum(f.v), count(*) FROM {f} f JOIN {d} d ON f.p = d.p "
        "WHERE d.name IN ('n1', 'n6') GROUP BY d.name"
    )
    df = typed.sql(q.format(f="lakeskip.vt.fact", d="lakeskip.vt.dim"))
    assert _rows(df) == _rows(typed.sql(q.format(f="oracle_fact", d="oracle_dim")))
    assert _scan_types(df, "lakeskip.vt.fact") == [(TYPED, [ON_HEAP] * 1 + [CONSTANT])]
    metrics = scan_metrics(df, "lakeskip.vt.fact")
    assert metrics is not None and metrics["lakeskipFilesKept"] == 2, metrics


def test_other_readers_stay_untyped(spark: SparkSession, typed: SparkSession) -> None:
    """Deletion vectors, a merge by key, an older schema's files: their batches come from
    lakeskip's own readers, so the node stays Spark's (and the answers are right)."""
    typed.sql(
        "CREATE TABLE lakeskip.vt.dv (id BIGINT, d DECIMAL(15,2)) "
        "TBLPROPERTIES ('deletion-vectors.enabled' = 'true')"
    )
    typed.sql("INSERT INTO lakeskip.vt.dv SELECT id, CAST(id AS DECIMAL(15,2)) FROM range(3000)")
    # DML's planner strategy is the attached session's (experimental methods are per session)
    spark.sql("DELETE FROM lakeskip.vt.dv WHERE id % 10 = 3")
    df = typed.sql("SELECT count(*), sum(d) FROM lakeskip.vt.dv WHERE id >= 0")
    want = typed.sql(
        "SELECT count(*), sum(CAST(id AS DECIMAL(15,2))) FROM range(3000) WHERE id % 10 <> 3"
    )
    assert _rows(df) == _rows(want)
    assert [k for k, _ in _scan_types(df, "lakeskip.vt.dv")] == ["BatchScanExec"]

    typed.sql(
        "CREATE TABLE lakeskip.vt.pk (k BIGINT, v DECIMAL(15,2), "
        "PRIMARY KEY (k) NOT ENFORCED) TBLPROPERTIES ('bucket' = '2')"
    )
    typed.sql("INSERT INTO lakeskip.vt.pk SELECT id, CAST(id AS DECIMAL(15,2)) FROM range(2000)")
    typed.sql("INSERT INTO lakeskip.vt.pk SELECT id, CAST(-id AS DECIMAL(15,2)) FROM range(1000)")
    df = typed.sql("SELECT count(*), sum(v) FROM lakeskip.vt.pk")
    want = typed.sql(
        "SELECT count(*), sum(CAST(IF(id < 1000, -id, id) AS DECIMAL(15,2))) FROM range(2000)"
    )
    assert _rows(df) == _rows(want)
    assert all(k == "BatchScanExec" for k, _ in _scan_types(df, "lakeskip.vt.pk"))

    typed.sql("CREATE TABLE lakeskip.vt.ev (id BIGINT, d DECIMAL(15,2))")
    typed.sql("INSERT INTO lakeskip.vt.ev SELECT id, CAST(id AS DECIMAL(15,2)) FROM range(100)")
    typed.sql("ALTER TABLE lakeskip.vt.ev ADD COLUMN e STRING")
    typed.sql(
        "INSERT INTO lakeskip.vt.ev SELECT id, CAST(id AS DECIMAL(15,2)), 'x' FROM range(100, 200)"
    )
    df = typed.sql("SELECT count(e), sum(d), count(*) FROM lakeskip.vt.ev")
    assert [tuple(map(str, r)) for r in _rows(df)] == [("100", "19900.00", "200")]
