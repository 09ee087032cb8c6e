from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from lakeskip import types as T
from lakeskip.errors import ColumnNotFoundError, TypeMismatchError


@pytest.mark.parametrize(
    ("text", "paimon", "spark"),
    [
        ("bigint", "BIGINT", "BIGINT"),
        ("INTEGER", "INT", "INT"),
        ("string", "STRING", "STRING"),
        ("varchar(10)", "VARCHAR(10)", "STRING"),
        ("decimal(10,2)", "DECIMAL(10, 2)", "DECIMAL(10,2)"),
        ("timestamp", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIMESTAMP"),
        ("timestamp_ntz", "TIMESTAMP(6)", "TIMESTAMP_NTZ"),
        ("TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP_NTZ"),
        ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIMESTAMP"),
        ("BYTES", "BYTES", "BINARY"),
        ("INT NOT NULL", "INT NOT NULL", "INT"),
    ],
)
def test_type_spellings_round_trip(text: str, paimon: str, spark: str) -> None:
    t = T.parse_sql_type(text)
    assert t.to_paimon_json() == paimon
    assert t.spark_ddl() == spark
    assert T.parse_paimon_json(t.to_paimon_json()) == t


def test_map_type_paimon_json() -> None:
    t = T.parse_sql_type("map<string, bigint>")
    assert t.to_paimon_json() == {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}
    assert T.parse_paimon_json(t.to_paimon_json()) == t
    assert t.to_arrow() == pa.map_(pa.string(), pa.int64())


def test_unknown_type_is_a_clear_error() -> None:
    with pytest.raises(TypeMismatchError, match="unknown type 'STRNG'"):
        T.parse_sql_type("strng")


@pytest.mark.parametrize(
    "t",
    [
        T.INT,
        T.BIGINT,
        T.STRING,
        T.DOUBLE,
        T.DATE,
        T.TIMESTAMP_LTZ,
        T.decimal_type(12, 3),
        T.map_of(T.STRING, T.STRING),
    ],
)
def test_arrow_round_trip(t: T.DataType) -> None:
    assert T.from_arrow(t.to_arrow()) == t


def test_to_internal() -> None:
    assert T.to_internal(T.DATE, datetime.date(1970, 1, 11)) == 10
    assert T.to_internal(T.TIMESTAMP, "1970-01-01 00:00:01") == 1_000_000
    ts3 = T.DataType(T.TypeRoot.TIMESTAMP, precision=3)
    assert T.to_internal(ts3, datetime.datetime(1970, 1, 1, 0, 0, 2)) == 2000
    assert T.to_internal(T.decimal_type(5, 2), "1.5") == decimal.Decimal("1.50")
    with pytest.raises(TypeMismatchError):
        T.to_internal(T.decimal_type(5, 2), "1.555")
    with pytest.raises(TypeMismatchError):
        T.to_internal(T.TINYINT, 300)
    with pytest.raises(TypeMismatchError):
        T.to_internal(T.INT, "7")


def test_row_type_lookup() -> None:
    row = T.RowType.of(("id", T.BIGINT), ("Name", T.STRING))
    assert row.index_of("name") == 1
    with pytest.raises(ColumnNotFoundError, match="column not found: nope"):
        row.field("nope")
