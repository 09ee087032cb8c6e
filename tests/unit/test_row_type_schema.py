"""ROW (Spark STRUCT) columns without Spark: spellings, Paimon's schema JSON and field ids,
stats as Paimon's Parquet writer keeps them, and the refusals (issue 28 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from lakeskip import types as T
from lakeskip.catalog import Catalog, collect_stats
from lakeskip.catalog.format.binary_row import deserialize_row
from lakeskip.errors import (
    ColumnNotFoundError,
    TypeMismatchError,
    UnsupportedIndexTypeError,
)
from lakeskip.expressions import EqualTo, IsNull, bind
from lakeskip.sql.statements import parse_statement

NESTED = T.row_of(("a", T.row_of(("b", T.row_of(("c", T.INT))))), ("d", T.INT))


@pytest.mark.parametrize(
    "text",
    [
        "STRUCT<x: INT, y: STRING>",
        "struct<x:int,y:string>",
        "ROW<x INT, y STRING>",
        "ROW<`x` INT, `y` STRING>",
    ],
)
def test_spark_and_paimon_spellings_are_one_type(text: str) -> None:
    t = T.parse_sql_type(text)
    assert t == T.row_of(("x", T.INT), ("y", T.STRING))
    assert t.spark_ddl() == "STRUCT<`x`: INT, `y`: STRING>"


def test_nested_fields_keep_nullability_comments_and_odd_names() -> None:
    text = "STRUCT<x: INT NOT NULL COMMENT 'it''s x', `y z`: STRUCT<a: ARRAY<STRUCT<b: INT>>>>"
    t = T.parse_sql_type(text + " NOT NULL")
    assert not t.nullable
    x, yz = t.row_fields
    assert (x.name, x.type, x.description) == ("x", T.INT.with_nullable(False), "it's x")
    assert yz.name == "y z" and yz.type.row_fields[0].type.value == T.row_of(("b", T.INT))
    # every spelling we write parses back to the same type
    assert T.parse_sql_type(t.spark_ddl()) == t.with_nullable(True)
    assert T.parse_paimon_json(t.to_paimon_json()) == t
    paimon_row = "ROW<x INT NOT NULL 'it''s x', `y z` ROW<a ARRAY<ROW<b INT>>>>"
    assert T.parse_sql_type(paimon_row) == t.with_nullable(True)


@pytest.mark.parametrize(
    "text", ["STRUCT<>", "STRUCT<x INT", "STRUCT<x: INT, X: STRING>", "STRUCT<1: INT>"]
)
def test_malformed_rows_are_type_errors(text: str) -> None:
    with pytest.raises(TypeMismatchError):
        T.parse_sql_type(text)


def test_paimon_json_is_paimons_row_layout() -> None:
    # RowType.serializeJson / DataField.serializeJson: {"type": "ROW[ NOT NULL]", "fields":
    # [{"id", "name", "type", "description"?}]}
    t = T.parse_sql_type("ROW<x INT NOT NULL 'd', y MAP<STRING, ROW<z BIGINT>>> NOT NULL")
    assert t.to_paimon_json() == {
        "type": "ROW NOT NULL",
        "fields": [
            {"id": 0, "name": "x", "type": "INT NOT NULL", "description": "d"},
            {
                "id": 1,
                "name": "y",
                "type": {
                    "type": "MAP",
                    "key": "STRING NOT NULL",
                    "value": {"type": "ROW", "fields": [{"id": 0, "name": "z", "type": "BIGINT"}]},
                },
            },
        ],
    }


def test_field_ids_follow_paimons_reassign_field_id() -> None:
    # Paimon's ReassignFieldIdTest: a<b<c>>, d reassigned from 2 uses ids 3..6; Java evaluates
    # the nested type before the field takes its id, so c=3, b=4, a=5, d=6
    (f,), top = T.assign_field_ids([("r", NESTED, None)], 1)
    assert f.id == 2
    a, d = f.type.row_fields
    b = a.type.row_fields[0]
    c = b.type.row_fields[0]
    assert (c.id, b.id, a.id, d.id, top) == (3, 4, 5, 6, 6)
    assert sorted(T.field_ids(f.type)) == [3, 4, 5, 6]
    # ids inside arrays and maps are numbered too
    (g,), top = T.assign_field_ids(
        [("m", T.map_of(T.STRING, T.array_of(T.row_of(("q", T.INT)))), None)], 6
    )
    assert (g.id, g.type.value.value.row_fields[0].id, top) == (7, 8, 8)


def test_schema_file_numbers_nested_fields_and_add_columns_continues(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    row_type = T.RowType.of(("id", T.BIGINT), ("st", NESTED), ("v", T.STRING))
    t = cat.create_table("db.t", row_type)
    obj = json.loads((tmp_path / "wh" / "db.db" / "t" / "schema" / "schema-0").read_text())
    assert [(f["id"], f["name"]) for f in obj["fields"]] == [(0, "id"), (1, "st"), (6, "v")]
    st = obj["fields"][1]["type"]
    assert st["type"] == "ROW"
    assert [(f["id"], f["name"]) for f in st["fields"]] == [(4, "a"), (5, "d")]
    assert st["fields"][0]["type"]["fields"][0]["id"] == 3  # b
    assert obj["highestFieldId"] == 6
    assert (
        t.schema.row_type.field("st").type == cat.get_table("db.t").schema.row_type.field("st").type
    ), "the schema file reads back"
    s1 = cat.add_columns("db.t", [T.Field(0, "s2", T.row_of(("q", T.INT), ("r", T.STRING)))])
    s2 = s1.row_type.field("s2")
    assert (s2.id, [f.id for f in s2.type.row_fields], s1.highest_field_id) == (7, [8, 9], 9)


def test_row_columns_have_no_stats_as_in_paimons_parquet_writer() -> None:
    # ParquetSimpleStatsExtractor looks stats up by column path; a ROW's paths are its leaves
    # (st.x), so min, max and null count of st are all null
    row_type = T.RowType.of(("id", T.INT), ("st", T.row_of(("x", T.INT), ("y", T.STRING))))
    table = pa.Table.from_pylist(
        [{"id": 1, "st": {"x": 5, "y": "a"}}, {"id": 2, "st": None}], schema=row_type.to_arrow()
    )
    stats, cols = collect_stats(table, row_type)
    assert cols is None
    assert stats.null_counts == (0, None)
    types = [f.type for f in row_type]
    assert deserialize_row(stats.min_values, types) == (1, None)
    assert deserialize_row(stats.max_values, types) == (2, None)


def test_file_indexes_on_row_columns_or_their_fields_are_refused(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    row_type = T.RowType.of(("id", T.INT), ("st", T.row_of(("x", T.INT))))
    for column, error in (("st", UnsupportedIndexTypeError), ("st.x", UnsupportedIndexTypeError)):
        with pytest.raises(error, match=r"st") as e:
            cat.create_table(
                "default.bad", row_type, options={"file-index.bloom-filter.columns": column}
            )
        assert "\n" not in str(e.value)
    with pytest.raises(ColumnNotFoundError):
        cat.create_table("default.bad", row_type, options={"file-index.bitmap.columns": "q.x"})
    assert not cat.table_exists("default.bad")


def test_a_predicate_on_a_row_column_binds_only_as_null_test() -> None:
    schema = T.RowType.of(("id", T.INT), ("st", T.row_of(("x", T.INT))))
    bind(schema, IsNull("st"))  # null tests bind (no stats prune them: null count is null)
    with pytest.raises(TypeMismatchError):
        bind(schema, EqualTo("st", 3))


def test_session_sql_ddl_takes_paimon_row_and_spark_struct() -> None:
    a = parse_statement("CREATE TABLE t (id INT, st ROW<x INT, y ARRAY<ROW<z STRING>>>)")
    b = parse_statement("CREATE TABLE t (id INT, st STRUCT<x: INT, y: ARRAY<STRUCT<z: STRING>>>)")
    assert a == b
    # a column named row compared in a CTAS query is left alone
    c = parse_statement("CREATE TABLE t AS SELECT * FROM s WHERE (`row` < 5)")
    assert "`row` < 5" in str(getattr(c, "as_select", ""))


def test_spark_json_keeps_nested_nullability_and_comments() -> None:
    spark_json = {
        "type": "struct",
        "fields": [
            {"name": "x", "type": "integer", "nullable": False, "metadata": {"comment": "c"}},
            {
                "name": "y",
                "type": {"type": "array", "elementType": "long", "containsNull": True},
                "nullable": True,
                "metadata": {},
            },
        ],
    }
    t = T.from_spark_json(spark_json)
    assert t == T.parse_sql_type("STRUCT<x: INT NOT NULL COMMENT 'c', y: ARRAY<BIGINT>>")
    assert t.as_nullable() == T.parse_sql_type("STRUCT<x: INT COMMENT 'c', y: ARRAY<BIGINT>>")


def test_arrow_round_trip() -> None:
    t = T.parse_sql_type("STRUCT<x: INT, y: STRUCT<z: STRING, w: ARRAY<DOUBLE>>>")
    assert t.to_arrow() == pa.struct(
        [("x", pa.int32()), ("y", pa.struct([("z", pa.string()), ("w", pa.list_(pa.float64()))]))]
    )
    assert T.from_arrow(t.to_arrow()) == t
