"""Schema evolution through Session.sql (issue 41): the ALTER forms on a table with data and a
bloom index on the renamed column; old and new rows under the new schema (renamed by field
id, dropped gone, added NULL, widened cast), the renamed column still pruning old files, time
travel with each snapshot's own schema, a dropped name re-added as a new column. The
expected rows are written out by hand from what was inserted."""

from __future__ import annotations

from typing import Any

import pytest

from lakeskip.errors import QueryFailedError, SchemaChangeError


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


@pytest.fixture
def evolved(session: Any) -> Any:
    session.sql(
        "CREATE TABLE t (id INT NOT NULL, s STRING, v SMALLINT, w INT, dt STRING) "
        "PARTITIONED BY (dt) TBLPROPERTIES ('file-index.bloom-filter.columns'='s')"
    )
    ddl = "id INT, s STRING, v SMALLINT, w INT, dt STRING"
    for rows in (
        [(1, "a", 10, 100, "x"), (2, "d", 20, 200, "x")],  # one file: 'a'..'d' holds no 'c'
        [(3, "c", 30, 300, "x"), (5, "e", 50, 500, "y")],
    ):
        session.write(session.spark.createDataFrame(rows, ddl).coalesce(1), "t")
    for sql in (
        "ALTER TABLE t ADD COLUMN c BIGINT AFTER id",
        "ALTER TABLE t RENAME COLUMN s TO name",
        "ALTER TABLE t DROP COLUMN v",
        "ALTER TABLE t ALTER COLUMN w TYPE BIGINT",
        "ALTER TABLE t ALTER COLUMN c COMMENT 'added later'",
        "ALTER TABLE t ALTER COLUMN id DROP NOT NULL",
    ):
        session.sql(sql)
    session.sql("INSERT INTO t VALUES (4, 40, 'c', 4000000000, 'x')")
    return session


def test_old_and_new_rows_read_under_the_new_schema(evolved: Any) -> None:
    t = evolved.table("t").table
    assert [(f.id, f.name, str(f.type)) for f in t.schema.row_type] == [
        (0, "id", "INT"),
        (5, "c", "BIGINT"),
        (1, "name", "STRING"),
        (3, "w", "BIGINT"),
        (4, "dt", "STRING"),
    ]
    assert t.schema.options["file-index.bloom-filter.columns"] == "name", "the index follows"
    assert t.schema.row_type.field("c").description == "added later"
    assert t.schema.row_type.field("id").type.nullable
    df = evolved.sql("SELECT * FROM t")
    assert df.columns == ["id", "c", "name", "w", "dt"]
    assert _rows(df) == [
        (1, None, "a", 100, "x"),
        (2, None, "d", 200, "x"),
        (3, None, "c", 300, "x"),
        (4, 40, "c", 4000000000, "x"),
        (5, None, "e", 500, "y"),
    ]
    assert _rows(evolved.sql("SELECT id FROM t WHERE w > 250 AND c IS NULL")) == [(3,), (5,)]


def test_the_renamed_column_still_prunes_old_files_by_its_bloom_index(evolved: Any) -> None:
    assert _rows(evolved.sql("SELECT id FROM t WHERE name = 'c'")) == [(3,), (4,)]
    (report,) = evolved.last_reports
    # x holds three files: 'a','d' (min/max keep 'c'; the bloom filter does not), 'c', 'c';
    # y holds 'e' (its stats skip it)
    assert report.total_files == 4 and report.kept_files == 2, report.summary()
    assert report.skipped_by_index.get("bloom-filter") == 1, report.summary()


def test_time_travel_reads_each_snapshot_with_its_own_schema(evolved: Any) -> None:
    df = evolved.sql("SELECT * FROM t VERSION AS OF 2")
    assert df.columns == ["id", "s", "v", "w", "dt"]
    assert _rows(df) == [
        (1, "a", 10, 100, "x"),
        (2, "d", 20, 200, "x"),
        (3, "c", 30, 300, "x"),
        (5, "e", 50, 500, "y"),
    ]
    assert _rows(evolved.sql("SELECT id FROM t VERSION AS OF 2 WHERE s = 'c'")) == [(3,)]


def test_a_dropped_name_added_again_is_a_new_column(evolved: Any) -> None:
    evolved.sql("ALTER TABLE t ADD COLUMN v STRING")
    evolved.sql("INSERT INTO t VALUES (6, NULL, 'f', 6, 'x', 'six')")
    assert _rows(evolved.sql("SELECT id, v FROM t WHERE v IS NOT NULL")) == [(6, "six")]
    assert _rows(evolved.sql("SELECT count(*) FROM t WHERE v IS NULL")) == [(5,)]


def test_refusals_are_one_line(evolved: Any) -> None:
    for sql, message in (
        ("ALTER TABLE t RENAME COLUMN dt TO day", r"^Cannot rename partition column: \[dt\]$"),
        ("ALTER TABLE t DROP COLUMN dt", r"^Cannot drop partition key or primary key: \[dt\]$"),
        ("ALTER TABLE t ALTER COLUMN w TYPE INT", r"^Column type w\[BIGINT\] cannot be"),
        ("ALTER TABLE t ADD COLUMN z INT NOT NULL", "^Column z cannot specify NOT NULL"),
    ):
        with pytest.raises(SchemaChangeError, match=message):
            evolved.sql(sql)
    assert evolved.table("t").table.schema.id == 6, "six ALTERs, no refused one wrote a schema"


def test_dml_on_an_evolved_table_reads_old_files_by_id(evolved: Any) -> None:
    evolved.sql("UPDATE t SET w = w + 1 WHERE name = 'a'")
    evolved.sql("DELETE FROM t WHERE name = 'd'")
    assert _rows(evolved.sql("SELECT id, name, w FROM t WHERE dt = 'x'")) == [
        (1, "a", 101),
        (3, "c", 300),
        (4, "c", 4000000000),
    ]


def test_the_catalog_scan_refuses_what_it_would_read_by_name(evolved: Any) -> None:
    assert evolved.catalog_name is not None, "javac is installed here: the catalog is active"
    with pytest.raises(Exception, match="cannot read them by field id yet") as info:
        evolved.spark.sql(f"SELECT * FROM {evolved.catalog_name}.default.t").collect()
    assert not isinstance(info.value, QueryFailedError)


def test_spark_sql_alter_on_the_catalog(session: Any) -> None:
    """The same ALTER forms through plain ``spark.sql`` on the catalog (Spark's TableChanges
    through ``LakeOps.alterTable``): a change Spark's Parquet scan reads right by name (ADD)
    stays readable there; after a RENAME the planned read answers."""
    cat, spark = session.catalog_name, session.spark
    assert cat is not None, "javac is installed here: the catalog is active"
    k = f"{cat}.default.k"
    spark.sql(
        f"CREATE TABLE {k} (id INT NOT NULL, s STRING, v SMALLINT, w INT) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns'='s')"
    )
    spark.sql(f"INSERT INTO {k} VALUES (1, 'a', 10, 100)")
    spark.sql(f"ALTER TABLE {k} ADD COLUMN c BIGINT COMMENT 'new' FIRST")
    assert _rows(spark.sql(f"SELECT * FROM {k}")) == [(None, 1, "a", 10, 100)]
    spark.sql(f"ALTER TABLE {k} ADD COLUMNS (d STRING AFTER id)")
    for sql in (
        f"ALTER TABLE {k} RENAME COLUMN s TO name",
        f"ALTER TABLE {k} DROP COLUMN v",
        f"ALTER TABLE {k} ALTER COLUMN w TYPE BIGINT",
        f"ALTER TABLE {k} ALTER COLUMN w COMMENT 'wide'",
        f"ALTER TABLE {k} ALTER COLUMN id DROP NOT NULL",
        f"ALTER TABLE {k} ALTER COLUMN d FIRST",
    ):
        spark.sql(sql)
    spark.sql(f"INSERT INTO {k} VALUES ('dd', 7, 2, 'b', 5000000000)")
    schema = session.table("k").table.schema
    assert [(f.name, str(f.type), f.description) for f in schema.row_type] == [
        ("d", "STRING", None),
        ("c", "BIGINT", "new"),
        ("id", "INT", None),
        ("name", "STRING", None),
        ("w", "BIGINT", "wide"),
    ]
    assert schema.options["file-index.bloom-filter.columns"] == "name"
    assert _rows(session.sql("SELECT * FROM k")) == [
        (None, None, 1, "a", 100),
        ("dd", 7, 2, "b", 5000000000),
    ]
    assert _rows(session.sql("SELECT id FROM k WHERE name = 'a'")) == [(1,)]
    with pytest.raises(Exception, match="Column z cannot specify NOT NULL") as info:
        spark.sql(f"ALTER TABLE {k} ADD COLUMN z INT NOT NULL")
    assert "Column z cannot specify NOT NULL" in str(info.value).splitlines()[0]
    assert session.table("k").table.schema.id == 8
