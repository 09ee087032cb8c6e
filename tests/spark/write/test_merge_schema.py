"""Writes that evolve the table's schema (issue 41): Spark's own schema evolution of a write
(``INSERT WITH SCHEMA EVOLUTION``, ``writeTo(t).withSchemaEvolution()``; the DataFrame option
``mergeSchema`` / ``write.merge-schema`` sets the same flag where ``LakeExtensions`` is
installed: ``tests/spark/front/test_ddl_paths.py``) adds the new columns as a new schema file
(Paimon's layout, new field ids) and old files read NULL in them; a column whose type differs
is cast to the table's type, not widened; without evolution a new column is refused in one
line and the table is untouched. Expected rows are written out by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def lake(spark: Any, tmp_path: Path) -> Any:
    import lakeskip

    return lakeskip.connect(str(tmp_path / "wh"), spark=spark)


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


def _layout(lake: Any, name: str) -> list[tuple[int, str, str]]:
    return [(f.id, f.name, str(f.type)) for f in lake.table(name).table.schema.row_type]


@pytest.mark.parametrize(
    "props",
    ["", "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')"],
    ids=["append", "primary-key"],
)
def test_a_write_with_schema_evolution_adds_its_new_columns(lake: Any, props: str) -> None:
    spark, t = lake.spark, f"{lake.catalog_name}.default.ev"
    spark.sql(f"CREATE TABLE {t} (id INT NOT NULL, s STRING) {props}")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    # a Python int is BIGINT: id stays INT (cast, not widened); n is new
    df = spark.createDataFrame([(3, "c", 30)], "id BIGINT, s STRING, n INT")
    df._jdf.writeTo(t).withSchemaEvolution().append()
    assert _layout(lake, "ev") == [(0, "id", "INT"), (1, "s", "STRING"), (2, "n", "INT")]
    schema_files = sorted(p.name for p in (Path(lake.table("ev").table.path) / "schema").iterdir())
    assert schema_files == ["schema-0", "schema-1"], "one new schema file"
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == [(1, "a", None), (2, "b", None), (3, "c", 30)]
    assert _rows(spark.sql(f"SELECT id FROM {t} WHERE n IS NULL")) == [(1,), (2,)]
    # by name, with the new column first and an existing one missing
    spark.sql(
        f"INSERT WITH SCHEMA EVOLUTION INTO {t} BY NAME SELECT 'x' AS m, 4 AS id, 'd' AS s, 40 AS n"
    )
    assert _layout(lake, "ev")[-1] == (3, "m", "STRING")
    assert _rows(spark.sql(f"SELECT id, m FROM {t} WHERE m IS NOT NULL OR id = 1")) == [
        (1, None),
        (4, "x"),
    ]


def test_without_schema_evolution_a_new_column_is_one_line_and_the_table_untouched(
    lake: Any,
) -> None:
    spark, t = lake.spark, f"{lake.catalog_name}.default.strict"
    spark.sql(f"CREATE TABLE {t} (id INT, s STRING)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    df = spark.createDataFrame([(2, "b", 20)], "id INT, s STRING, n INT")
    with pytest.raises(Exception, match="n") as info:
        df.writeTo(t).append()
    first = str(info.value).strip().splitlines()[0]
    assert "INCOMPATIBLE_DATA_FOR_TABLE" in first or "too many" in first.lower(), str(info.value)
    assert _layout(lake, "strict") == [(0, "id", "INT"), (1, "s", "STRING")]
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == [(1, "a")]
