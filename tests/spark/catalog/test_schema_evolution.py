"""Schema evolution through Session.sql (issue 41): the ALTER forms on a table with data and a
bloom index on the renamed column; old and new rows under the new schema (renamed by field
id, dropped gone, added NULL, widened cast), the renamed column still pruning old files, time
travel with each snapshot's own schema, a dropped name re-added as a new column. The
expected rows are written out by hand from what was inserted."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lakeskip.errors import SchemaChangeError


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


def test_the_catalog_scan_reads_old_files_by_field_id(evolved: Any) -> None:
    """Plain ``spark.sql`` on the catalog: the old schema version's files through their own
    Parquet scan, projected by id (``LakeEvolvedScan``); the same rows as the planned read."""
    assert evolved.catalog_name is not None, "javac is installed here: the catalog is active"
    spark, t = evolved.spark, f"{evolved.catalog_name}.default.t"
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == _rows(evolved.sql("SELECT * FROM t"))
    assert _rows(spark.sql(f"SELECT id FROM {t} WHERE name = 'c'")) == [(3,), (4,)]
    assert _rows(spark.sql(f"SELECT name, id FROM {t} WHERE w > 250 AND c IS NULL")) == [
        ("c", 3),
        ("e", 5),
    ]
    assert _rows(spark.sql(f"SELECT dt, count(*), sum(w) FROM {t} GROUP BY dt")) == [
        ("x", 4, 4000000600),
        ("y", 1, 500),
    ]
    old = spark.sql(f"SELECT * FROM {t} VERSION AS OF 2 WHERE s <> 'a'")
    assert _rows(old) == [(2, "d", 20, 200, "x"), (3, "c", 30, 300, "x"), (5, "e", 50, 500, "y")]


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


def test_the_alter_forms_through_spark_sql_read_right_and_the_renamed_column_prunes(
    session: Any,
) -> None:
    """Issue 41's done-when, as a user runs it: every statement through plain ``spark.sql`` on
    the catalog (CREATE with a bloom index, INSERTs, ADD FIRST / AFTER, RENAME of the indexed
    column, DROP, widening TYPE, COMMENT, DROP NOT NULL): old and new rows under the new
    schema, and the renamed column's bloom filter still skips the old file it rules out (the
    catalog scan's own pruning report)."""
    from lakeskip.spark import pruning_reports

    cat, spark = session.catalog_name, session.spark
    assert cat is not None, "javac is installed here: the catalog is active"
    t = f"{cat}.default.five"
    spark.sql(
        f"CREATE TABLE {t} (id INT NOT NULL, s STRING, v SMALLINT, w INT, dt STRING) "
        "PARTITIONED BY (dt) TBLPROPERTIES ('file-index.bloom-filter.columns'='s')"
    )
    for values in ("(1, 'a', 10, 100, 'x'), (2, 'd', 20, 200, 'x')", "(3, 'c', 30, 300, 'x')"):
        spark.sql(f"INSERT INTO {t} SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")
    spark.sql(f"INSERT INTO {t} VALUES (5, 'e', 50, 500, 'y')")
    for alter in (
        "ADD COLUMN c BIGINT AFTER id",
        "ADD COLUMNS (f STRING FIRST)",
        "RENAME COLUMN s TO name",
        "DROP COLUMN v",
        "ALTER COLUMN w TYPE BIGINT",
        "ALTER COLUMN c COMMENT 'added later'",
        "ALTER COLUMN id DROP NOT NULL",
    ):
        spark.sql(f"ALTER TABLE {t} {alter}")
    spark.sql(f"INSERT INTO {t} VALUES ('ff', 4, 40, 'c', 4000000000, 'x')")
    df = spark.sql(f"SELECT * FROM {t}")
    assert df.columns == ["f", "id", "c", "name", "w", "dt"]
    expected = [
        (None, 1, None, "a", 100, "x"),
        (None, 2, None, "d", 200, "x"),
        (None, 3, None, "c", 300, "x"),
        (None, 5, None, "e", 500, "y"),
        ("ff", 4, 40, "c", 4000000000, "x"),
    ]
    assert _rows(df) == expected
    schema = session.table("five").table.schema
    assert schema.options["file-index.bloom-filter.columns"] == "name", "the index follows"
    assert schema.row_type.field("c").description == "added later"
    with pruning_reports(spark) as reports:
        got = _rows(spark.sql(f"SELECT id, w FROM {t} WHERE name = 'c'"))
    assert got == [(3, 300), (4, 4000000000)]
    (report,) = reports
    # x: 'a','d' (min/max keep 'c', its bloom filter under the old name does not), 'c', 'c';
    # y: 'e' (stats skip it)
    assert (report.total_files, report.kept_files) == (4, 2), report.summary()
    assert report.skipped_by_index.get("bloom-filter") == 1, report.summary()
    assert _rows(spark.sql(f"SELECT id FROM {t} WHERE w > 250 AND c IS NULL")) == [(3,), (5,)]
    # rewrites of the old files keep their rows: a new index (files keep their schema),
    # then compaction (old files read by field id into current-schema files)
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('file-index.bloom-filter.columns'='name,id')")
    spark.sql(f"CALL {cat}.sys.rewrite_file_index(table => 'default.five')")
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == expected
    with pruning_reports(spark) as reports:
        assert _rows(spark.sql(f"SELECT id FROM {t} WHERE name = 'c'")) == [(3,), (4,)]
    assert reports[0].skipped_by_index.get("bloom-filter") == 1, reports[0].summary()
    spark.sql(f"CALL {cat}.sys.compact(table => 'default.five')")
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == expected
    files = session.table("five").table.scan_files()
    # x's three files became one of the current schema; y's one file stays as it is
    assert sorted((e.partition, e.file.schema_id) for e in files) == [(("x",), 8), (("y",), 0)]


def test_set_not_null_as_paimon(session: Any) -> None:
    """``ALTER COLUMN c SET NOT NULL``: plain ``spark.sql`` never reaches the catalog (Spark's
    analyzer refuses nullable -> not null for every V2 table, Paimon's too: one line, table
    untouched). ``Session.sql`` does as Paimon: refused in one line while the option
    ``alter-column-null-to-not-null.disabled`` is true (its default); with it false, allowed
    when every file's stats prove no NULL, refused (table untouched) when a file holds one."""
    cat, spark = session.catalog_name, session.spark
    assert cat is not None, "javac is installed here: the catalog is active"
    t = f"{cat}.default.nn"
    spark.sql(f"CREATE TABLE {t} (a INT, b STRING)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x'), (NULL, 'y')")

    def refused(run: Any, sql: str, message: str) -> None:
        before = session.table("nn").table.schema.id
        with pytest.raises(Exception, match=message) as info:
            run(sql)
        first = str(info.value).strip().splitlines()[0]
        assert re.search(message, first), f"not on the first line: {info.value}"
        assert session.table("nn").table.schema.id == before, "refused: no schema written"

    refused(
        spark.sql,
        f"ALTER TABLE {t} ALTER COLUMN b SET NOT NULL",
        "Cannot change nullable column to non-nullable",
    )
    refused(
        session.sql,
        "ALTER TABLE nn ALTER COLUMN b SET NOT NULL",
        "^Cannot update column type from nullable to non nullable for b. You can set table "
        "configuration option 'alter-column-null-to-not-null.disabled' = 'false'",
    )
    spark.sql(
        f"ALTER TABLE {t} SET TBLPROPERTIES ('alter-column-null-to-not-null.disabled'='false')"
    )
    refused(
        session.sql,
        "ALTER TABLE nn ALTER COLUMN a SET NOT NULL",
        r"^Cannot update column a of default.nn to NOT NULL: data file \S+ holds NULL$",
    )
    session.sql("ALTER TABLE nn ALTER COLUMN b SET NOT NULL")
    assert not session.table("nn").table.schema.row_type.field("b").type.nullable
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == [(None, "y"), (1, "x")]
    with pytest.raises(Exception, match="NULL"):
        spark.sql(f"INSERT INTO {t} VALUES (2, NULL)")
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == [(None, "y"), (1, "x")]


@pytest.mark.parametrize(
    "options",
    ["'bucket' = '1'", "'bucket' = '1', 'deletion-vectors.enabled' = 'true'"],
    ids=["merge-on-read", "deletion-vectors"],
)
def test_drop_column_on_a_primary_key_table(session: Any, options: str) -> None:
    """A value column of a primary-key table may be dropped (Paimon allows it; lakeskip's
    merge reads key-value files by name and ignores it); upserts, the merged read through
    ``spark.sql`` and ``Session.sql``, and compaction stay right. Dropping the key or a
    partition column, renaming a partition column and retyping the key are refused in one
    line (``tests/spark/pk/test_pk_schema_evolution.py``: RENAME and TYPE of value columns)."""
    cat, spark = session.catalog_name, session.spark
    assert cat is not None, "javac is installed here: the catalog is active"
    t = f"{cat}.default.pkd"
    spark.sql(
        f"CREATE TABLE {t} (k INT NOT NULL, v STRING, w INT, dt STRING NOT NULL) "
        f"PARTITIONED BY (dt) TBLPROPERTIES ('primary-key' = 'k,dt', {options})"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 10, 'x'), (2, 'b', 20, 'x'), (3, 'c', 30, 'y')")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'bb', 21, 'x')")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN v")
    spark.sql(f"INSERT INTO {t} VALUES (1, 11, 'x'), (4, 40, 'y')")
    expected = [(1, 11, "x"), (2, 21, "x"), (3, 30, "y"), (4, 40, "y")]
    assert spark.table(t).columns == ["k", "w", "dt"]
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == expected
    assert _rows(session.sql("SELECT * FROM pkd")) == expected
    assert _rows(spark.sql(f"SELECT k FROM {t} WHERE w > 10 AND dt = 'x'")) == [(1,), (2,)]
    spark.sql(f"CALL {cat}.sys.compact(table => 'default.pkd')")
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == expected
    before = session.table("pkd").table.schema.id
    for sql, message in (
        (f"ALTER TABLE {t} DROP COLUMN k", r"Cannot drop partition key or primary key: \[k\]"),
        (f"ALTER TABLE {t} DROP COLUMN dt", r"Cannot drop partition key or primary key: \[dt\]"),
        (f"ALTER TABLE {t} RENAME COLUMN dt TO day", r"Cannot rename partition column: \[dt\]"),
        (f"ALTER TABLE {t} ALTER COLUMN k TYPE BIGINT", "Cannot update primary key"),
    ):
        with pytest.raises(Exception, match=message) as info:
            spark.sql(sql)
        assert re.search(message, str(info.value).strip().splitlines()[0]), str(info.value)
    assert session.table("pkd").table.schema.id == before, "no refused change wrote a schema"
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == expected
