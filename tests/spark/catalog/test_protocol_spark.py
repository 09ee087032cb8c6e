"""The Python–JVM protocol seen from the Java side: each error kind becomes the Spark
exception Spark's analyzer acts on, and a version mismatch is one line saying to rebuild."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

import lakeskip
from lakeskip.errors import LakeskipError
from lakeskip.spark.bridge import catalog_service
from lakeskip.spark.front import catalog_setup
from lakeskip.spark.jvm.protocol import PROTOCOL


@pytest.fixture
def jcat(spark: SparkSession, tmp_path: Path) -> Any:
    """The JVM LakeCatalog ``lakeskip`` over a fresh warehouse with table db.t."""
    lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql("CREATE TABLE lakeskip.db.t (id BIGINT)")
    return spark._jsparkSession.sessionState().catalogManager().catalog("lakeskip")


def _names(spark: SparkSession, names: list[str]) -> Any:
    gw = spark.sparkContext._gateway
    assert gw is not None
    out = gw.new_array(gw.jvm.java.lang.String, len(names))
    for i, n in enumerate(names):
        out[i] = n
    return out


def _thrown(call: Any) -> str | None:
    """The error condition of what a JVM call threw (PySpark converts the exception):
    Spark's NoSuchTableException is TABLE_OR_VIEW_NOT_FOUND, ...; lakeskip's one-line
    AnalysisException has none."""
    try:
        call()
    except AnalysisException as e:
        return e.getCondition()
    return "nothing thrown"


def test_error_kinds_become_sparks_own_exceptions(spark: SparkSession, jcat: Any) -> None:
    jvm = spark._jvm
    gw = spark.sparkContext._gateway
    assert jvm is not None and gw is not None

    def ident(ns: str, name: str) -> Any:
        return jvm.org.apache.spark.sql.connector.catalog.Identifier.of(_names(spark, [ns]), name)

    schema = jvm.org.apache.spark.sql.types.StructType.fromDDL("id BIGINT")
    no_transforms = gw.new_array(jvm.org.apache.spark.sql.connector.expressions.Transform, 0)
    no_changes = gw.new_array(jvm.org.apache.spark.sql.connector.catalog.TableChange, 0)

    def create(ns: str, name: str, props: dict[str, str] | None = None) -> Any:
        m = jvm.java.util.HashMap()
        for k, v in (props or {}).items():
            m.put(k, v)
        return jcat.createTable(ident(ns, name), schema, no_transforms, m)

    # table_not_found / database_not_found
    not_found = "TABLE_OR_VIEW_NOT_FOUND"  # NoSuchTableException
    assert _thrown(lambda: jcat.loadTable(ident("db", "missing"))) == not_found
    assert _thrown(lambda: jcat.loadTable(ident("nodb", "t"))) == not_found
    assert _thrown(lambda: jcat.alterTable(ident("db", "missing"), no_changes)) == not_found
    # NoSuchNamespaceException
    assert _thrown(lambda: jcat.listTables(_names(spark, ["nodb"]))) == "SCHEMA_NOT_FOUND"
    # TableAlreadyExistsException (Spark's CREATE TABLE asks tableExists first: only a race
    # gets here)
    assert _thrown(lambda: create("db", "t")) == "TABLE_OR_VIEW_ALREADY_EXISTS"
    # any other kind: lakeskip's one readable line, no condition
    with pytest.raises(AnalysisException, match="bucket") as e:
        create("db", "bad", {"bucket": "x"})
    assert e.value.getCondition() is None and "Traceback" not in str(e.value)
    # and through Spark SQL
    with pytest.raises(AnalysisException) as e:
        spark.table("lakeskip.db.missing")
    assert e.value.getCondition() == not_found, str(e.value)
    with pytest.raises(AnalysisException) as e:
        spark.sql("SHOW TABLES IN lakeskip.nodb").collect()
    assert e.value.getCondition() == "SCHEMA_NOT_FOUND", str(e.value)


def test_protocol_mismatch_is_rebuild_the_jar_on_both_sides(
    spark: SparkSession, jcat: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a callback from a jar of another version: Spark shows Python's one line
    monkeypatch.setattr(catalog_service, "PROTOCOL", PROTOCOL + 1)
    with pytest.raises(
        AnalysisException,
        match=rf"protocol mismatch \(jar {PROTOCOL}, Python {PROTOCOL + 1}\): rebuild",
    ):
        spark.sql("SHOW NAMESPACES IN lakeskip").collect()
    monkeypatch.undo()
    # registering with a jar of another version
    monkeypatch.setattr(catalog_setup, "PROTOCOL", PROTOCOL + 1)
    with pytest.raises(
        LakeskipError, match=f"jar speaks protocol {PROTOCOL}, Python {PROTOCOL + 1}: rebuild it"
    ):
        catalog_setup.service_for(spark, register=True)
    monkeypatch.undo()
    catalog_setup.service_for(spark, register=True)
    assert [r[1] for r in spark.sql("SHOW TABLES IN lakeskip.db").collect()] == ["t"]
