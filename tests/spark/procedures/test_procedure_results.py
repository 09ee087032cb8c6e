"""Every procedure's result, of any type, crosses to plain ``spark.sql`` (the JVM catalog's
``CALL``), and a bad argument is one line."""

from __future__ import annotations

import datetime
import decimal
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

import lakeskip
from lakeskip.procedures.base import Procedure, ProcedureResult
from lakeskip.procedures.registry import PROCEDURES


class AllTypes(Procedure):
    """A procedure whose one row holds every kind of Spark type."""

    name = "sys.all_types"
    doc = "test only"

    COLUMNS = (
        ("arr", "ARRAY<STRING>"),
        ("m", "MAP<STRING, BIGINT>"),
        ("st", "STRUCT<a: INT, b: ARRAY<DOUBLE>>"),
        ("nested", "ARRAY<MAP<STRING, STRUCT<x: BIGINT, y: STRING>>>"),
        ("d", "DATE"),
        ("ts", "TIMESTAMP"),
        ("dec", "DECIMAL(10, 2)"),
        ("bin", "BINARY"),
        ("f", "DOUBLE"),
        ("empty", "ARRAY<INT>"),
        ("none", "MAP<INT, STRING>"),
    )
    VALUES = (
        ["a", None, "c"],
        {"k": 1, "l": None},
        (7, [1.5, float("inf")]),
        [{"p": (1, "one")}, {}],
        datetime.date(2024, 2, 29),
        datetime.datetime(2024, 2, 29, 12, 30, 1, 250000, tzinfo=datetime.UTC),
        decimal.Decimal("12345678.91"),
        b"\x00\xffbytes",
        float("nan"),
        [],
        None,
    )

    def run(self, **_: Any) -> ProcedureResult:
        return ProcedureResult(columns=self.COLUMNS, values=(self.VALUES,))


@pytest.fixture
def lk(spark: SparkSession, tmp_path: Path) -> Any:
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    assert s.catalog_name == "lakeskip", "javac is installed here: the catalog must be active"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    return s


def test_results_of_any_type_cross(
    spark: SparkSession, lk: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PROCEDURES, "sys.all_types", f"{__name__}:AllTypes")
    df = spark.sql("CALL lakeskip.sys.all_types()")
    (row,) = df.collect()
    assert [f.name for f in df.schema.fields] == [n for n, _ in AllTypes.COLUMNS]
    assert row.arr == ["a", None, "c"]
    assert row.m == {"k": 1, "l": None}
    assert (row.st.a, row.st.b) == (7, [1.5, float("inf")])
    assert [{k: tuple(v) for k, v in m.items()} for m in row.nested] == [{"p": (1, "one")}, {}]
    assert row.d == datetime.date(2024, 2, 29)
    assert row.ts.timestamp() == AllTypes.VALUES[5].timestamp(), "pyspark: naive local time"
    assert row.dec == decimal.Decimal("12345678.91")
    assert bytes(row.bin) == b"\x00\xffbytes"
    assert row.f != row.f, "NaN"
    assert (row.empty, row.none) == ([], None)


def _call(spark: SparkSession, proc: str, args: str) -> list[Any]:
    return spark.sql(f"CALL lakeskip.sys.{proc}({args})").collect()


def test_every_procedure_through_plain_spark_sql(spark: SparkSession, lk: Any) -> None:
    spark.sql(
        "CREATE TABLE lakeskip.db.p (id BIGINT, s STRING) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns'='s')"
    )
    for i in range(3):
        spark.sql(f"INSERT INTO lakeskip.db.p VALUES ({i}, 's{i}')")
    table = lk.catalog.get_table("db.p")
    orphan = f"{table.path}/bucket-0/data-orphan-0.parquet"
    table.file_io.write_bytes(orphan, b"not referenced")
    old = time.time() - 3 * 86_400
    os.utime(orphan, (old, old))
    now = int(time.time() * 1000)
    calls: Mapping[str, list[str]] = {
        "rewrite_file_index": ["table => 'db.p'"],
        "create_tag": ["table => 'db.p', tag => 'a', snapshot => 1"],
        "replace_tag": ["table => 'db.p', tag => 'a', snapshot => 2"],
        "rename_tag": ["table => 'db.p', tag => 'a', target_tag => 'b'"],
        "delete_tag": ["table => 'db.p', tag => 'b'"],
        "rollback": ["table => 'db.p', version => '2'"],
        "rollback_to_timestamp": [f"table => 'db.p', timestamp => {now}"],
        "compact": ["table => 'db.p'"],
        "expire_snapshots": ["table => 'db.p', retain_last => 2"],
        "remove_orphan_files": ["table => 'db.p', dry_run => true", "table => 'db.p'"],
    }
    assert {f"sys.{k}" for k in calls} == set(PROCEDURES), "every procedure is called"
    results = {}
    for proc, forms in calls.items():
        for args in forms:
            rows = _call(spark, proc, args)
            assert len(rows) == 1, f"{proc}({args}): {rows}"
            results[(proc, args)] = rows[0]
    dry = results[("remove_orphan_files", "table => 'db.p', dry_run => true")]
    done = results[("remove_orphan_files", "table => 'db.p'")]
    assert dry.paths == [orphan] and dry.dry_run is True
    assert done.paths == [orphan] and done.files_deleted == 1
    assert not os.path.exists(orphan)
    assert results[("expire_snapshots", "table => 'db.p', retain_last => 2")][0] > 0


def test_a_bad_argument_is_one_line(spark: SparkSession, lk: Any) -> None:
    spark.sql("CREATE TABLE lakeskip.db.q (id BIGINT)")
    spark.sql("INSERT INTO lakeskip.db.q VALUES (1)")
    spark.sql("INSERT INTO lakeskip.db.q VALUES (2)")
    with pytest.raises(AnalysisException) as e:
        _call(spark, "expire_snapshots", "table => 'db.q', retain_last => 'abc'")
    message = str(e.value).strip()
    assert "retain_last" in message and "'abc'" in message, message
    assert "CAST_INVALID_INPUT" not in message and len(message.splitlines()) == 1, message
    assert len(lk.catalog.get_table("db.q").list_snapshots()) == 2, "nothing expired"
    with pytest.raises(AnalysisException) as e:
        spark.sql(f"CREATE TABLE lakeskip.db.{'n' * 401} (id BIGINT)")
    message = str(e.value).strip()
    assert "table name too long: 401 bytes" in message and len(message.splitlines()) == 1, message


def test_a_truncated_data_file_is_one_line_naming_file_and_table(
    spark: SparkSession, lk: Any
) -> None:
    spark.sql("CREATE TABLE lakeskip.db.tr (id BIGINT, s STRING)")
    spark.sql(
        "CREATE TABLE lakeskip.db.pk (id BIGINT, s STRING) TBLPROPERTIES ('primary-key' = 'id')"
    )
    for name in ("tr", "pk"):
        spark.sql(f"INSERT INTO lakeskip.db.{name} VALUES (1, 'a'), (2, 'b')")
        table = lk.catalog.get_table(f"db.{name}")
        path = table.data_file_path(table.scan_files()[0])
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        for run in (
            lambda n=name: spark.sql(f"SELECT * FROM lakeskip.db.{n}").collect(),
            lambda n=name: lk.sql(f"SELECT * FROM db.{n}").collect(),
        ):
            with pytest.raises(Exception) as e:
                run()
            message = str(e.value).strip()
            assert len(message.splitlines()) == 1, message[:3000]
            assert path in message, message
            assert f"of table lakeskip.db.{name} cannot be read" in message, message
