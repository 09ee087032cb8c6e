"""RENAME COLUMN and ALTER COLUMN TYPE on primary-key tables (issue 41): key-value files
written before the change are read by field id on every path -- the catalog's merge-on-read
(``LakePkScan``) and deletion-vector scans through ``spark.sql`` and the DataFrame API,
``Session.sql``, the temp-view merge (``table_view``), compaction, the deletion-vector
write's key lookups, partial-update and aggregation with renamed sequence fields, a
primary-key stream -- with upserts spanning both schema versions. Time travel to the old
snapshot reads its own schema; a bloom index on the renamed value column still skips the old
file it rules out. Expected rows are written out by hand from what was inserted."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lakeskip.errors import SchemaChangeError
from lakeskip.expressions import EqualTo
from lakeskip.planner.scan import ScanPlanner


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _every_path(session: Any, table: str, where: str = "") -> list[list[tuple[Any, ...]]]:
    """The same query through spark.sql on the catalog, the DataFrame API, Session.sql and
    the temp-view merge (``table_view``)."""
    from lakeskip.spark.read.query import table_view

    spark = session.spark
    name = f"{session.catalog_name}.default.{table}"
    t = session.catalog.get_table(f"default.{table}")
    view = table_view(spark, t, t.scan_files())
    view.createOrReplaceTempView("evolved_view")
    try:
        cond = f" WHERE {where}" if where else ""
        df = spark.table(name)
        return [
            _rows(spark.sql(f"SELECT * FROM {name}{cond}")),
            _rows(df.where(where) if where else df),
            _rows(session.sql(f"SELECT * FROM {table}{cond}")),
            _rows(spark.sql(f"SELECT * FROM evolved_view{cond}")),
        ]
    finally:
        spark.catalog.dropTempView("evolved_view")


BEFORE = [
    (1, "a", 10, 100, "x"),
    (2, "d", 20, 200, "x"),
    (3, "c", 30, 300, "x"),
    (5, "e", 50, 500, "y"),
    (7, "a", 70, 700, "z"),
    (8, "d", 80, 800, "z"),
]
AFTER = [
    (1, "a", 10, 100, "x"),
    (2, "dd", 4_000_000_000, 201, "x"),  # upserted after the change, widened value
    (3, "c", 30, 300, "x"),
    (5, "e", 50, 500, "y"),
    (6, "c", 60, 600, "y"),  # new after the change
    (7, "a", 70, 700, "z"),
    (8, "d", 80, 800, "z"),
]


@pytest.mark.parametrize(
    "options",
    [
        "'bucket' = '1'",
        "'bucket' = '1', 'deletion-vectors.enabled' = 'true'",
        "'bucket' = '-1', 'dynamic-bucket.target-row-num' = '3'",
    ],
    ids=["merge-on-read", "deletion-vectors", "dynamic-bucket"],
)
def test_rename_and_widen_on_a_primary_key_table_read_right_on_every_path(
    session: Any, options: str
) -> None:
    from lakeskip.spark import pruning_reports

    cat, spark = session.catalog_name, session.spark
    assert cat is not None, "javac is installed here: the catalog is active"
    t = f"{cat}.default.pke"
    spark.sql(
        f"CREATE TABLE {t} (k INT NOT NULL, s STRING, v INT, w INT, dt STRING NOT NULL) "
        f"PARTITIONED BY (dt) TBLPROPERTIES ('primary-key' = 'k,dt', {options}, "
        "'file-index.bloom-filter.columns' = 's')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 10, 100, 'x'), (2, 'b', 20, 200, 'x')")
    # z: one file 'a'..'d' (min/max keep 'c', its bloom filter rules 'c' out)
    spark.sql(
        f"INSERT INTO {t} VALUES (2, 'd', 20, 200, 'x'), (3, 'c', 30, 300, 'x'), "
        "(5, 'e', 50, 500, 'y'), (7, 'a', 70, 700, 'z'), (8, 'd', 80, 800, 'z')"
    )
    old_snapshot = session.catalog.get_table("default.pke").latest_snapshot().id
    for alter in ("RENAME COLUMN s TO name", "ALTER COLUMN v TYPE BIGINT", "RENAME COLUMN k TO id"):
        spark.sql(f"ALTER TABLE {t} {alter}")
    # upserts spanning both versions: key 2 (old files) updated, key 6 new
    spark.sql(f"INSERT INTO {t} VALUES (2, 'dd', 4000000000, 201, 'x'), (6, 'c', 60, 600, 'y')")
    assert spark.table(t).columns == ["id", "name", "v", "w", "dt"]
    schema = session.catalog.get_table("default.pke").schema
    assert schema.primary_keys == ("id", "dt")
    assert schema.options["file-index.bloom-filter.columns"] == "name", "the index follows"
    for got in _every_path(session, "pke"):
        assert got == AFTER
    for got in _every_path(session, "pke", "v > 25 AND name <> 'e'"):
        assert got == [r for r in AFTER if r[2] > 25 and r[1] != "e"]
    for got in _every_path(session, "pke", "id = 2"):
        assert got == [AFTER[1]]
    # the renamed column's bloom index still skips the old file in z
    with pruning_reports(spark) as reports:
        got = _rows(spark.sql(f"SELECT id, dt FROM {t} WHERE name = 'c'"))
    assert got == [(3, "x"), (6, "y")]
    (report,) = reports
    table = session.catalog.get_table("default.pke")
    kept = {e.file.file_name for e in ScanPlanner(table).plan(EqualTo("name", "c")).files}
    z_files = {e.file.file_name for e in table.scan_files() if e.partition == ("z",)}
    assert z_files and not z_files & kept, "the old z files are skipped"
    if len(z_files) == 1:  # one file 'a'..'d' (a dynamic bucket may split z: stats skip them)
        assert report.skipped_by_index.get("bloom-filter", 0) >= 1, report.summary()
    # SHOW CREATE TABLE of the evolved table recreates it (renamed key, index option)
    [[text]] = spark.sql(f"SHOW CREATE TABLE {t}").collect()
    spark.sql(text.replace("`pke`", "`pke_copy`"))
    copy = session.catalog.get_table("default.pke_copy").schema
    assert [(f.name, str(f.type)) for f in copy.row_type] == [
        (f.name, str(f.type)) for f in schema.row_type
    ]
    assert (copy.primary_keys, copy.partition_keys) == (schema.primary_keys, schema.partition_keys)
    assert copy.options == schema.options
    # time travel: the old snapshot with its own schema
    old = spark.sql(f"SELECT * FROM {t} VERSION AS OF {old_snapshot}")
    assert old.columns == ["k", "s", "v", "w", "dt"]
    assert _rows(old) == BEFORE
    assert _rows(spark.sql(f"SELECT k FROM {t} VERSION AS OF {old_snapshot} WHERE s = 'd'")) == [
        (2,),
        (8,),
    ]
    # a later upsert on the old files again (the write's lookups), then compaction
    spark.sql(f"INSERT INTO {t} VALUES (7, 'aa', 71, 701, 'z')")
    after = sorted([r for r in AFTER if r[0] != 7] + [(7, "aa", 71, 701, "z")], key=repr)
    for got in _every_path(session, "pke"):
        assert got == after
    spark.sql(f"CALL {cat}.sys.compact(table => 'default.pke')")
    for got in _every_path(session, "pke"):
        assert got == after
    assert _rows(spark.sql(f"SELECT * FROM {t} VERSION AS OF {old_snapshot}")) == BEFORE


def test_primary_key_tables_refuse_what_paimon_refuses_in_one_line(session: Any) -> None:
    spark, cat = session.spark, session.catalog_name
    t = f"{cat}.default.pkr"
    spark.sql(
        f"CREATE TABLE {t} (k INT NOT NULL, v INT, dt STRING NOT NULL) PARTITIONED BY (dt) "
        "TBLPROPERTIES ('primary-key' = 'k,dt', 'bucket' = '1')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 1, 'x')")
    refused = [
        ("ALTER TABLE pkr ALTER COLUMN k TYPE BIGINT", "Cannot update primary key$"),
        ("ALTER TABLE pkr RENAME COLUMN dt TO day", r"Cannot rename partition column: \[dt\]$"),
    ]
    for sql, message in refused:  # plain spark.sql: the first line says it
        with pytest.raises(Exception, match=message.rstrip("$")) as info:
            spark.sql(sql.replace("pkr", t))
        assert re.search(message.rstrip("$"), str(info.value).strip().splitlines()[0])
    # Session.sql: the typed error, one line (a narrowing Spark's parser lets through)
    narrowing = ("ALTER TABLE pkr ALTER COLUMN v TYPE SMALLINT", r"Column type v\[INT\] cannot be")
    for sql, message in (*refused, narrowing):
        with pytest.raises(SchemaChangeError, match="^" + message) as typed:
            session.sql(sql)
        assert "\n" not in str(typed.value)
    assert session.catalog.get_table("default.pkr").schema.id == 0, "no schema written"
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == [(1, 1, "x")]


@pytest.mark.parametrize(
    "engine",
    [
        "'merge-engine' = 'partial-update', 'sequence.field' = 'ts'",
        "'merge-engine' = 'aggregation', 'fields.v.aggregate-function' = 'sum', "
        "'fields.m.aggregate-function' = 'max', 'sequence.field' = 'ts'",
    ],
    ids=["partial-update", "aggregation"],
)
def test_merge_engines_with_renamed_and_widened_sequence_and_value_columns(
    session: Any, engine: str
) -> None:
    """The merge engines read the old versions by field id: a renamed sequence field still
    orders them (its option follows), a renamed aggregated column still sums old and new
    versions (its ``fields.<c>.*`` option follows), a widened column merges both types."""
    cat, spark = session.catalog_name, session.spark
    t = f"{cat}.default.pkm"
    spark.sql(
        f"CREATE TABLE {t} (k INT NOT NULL, v INT, m STRING, ts INT) "
        f"TBLPROPERTIES ('primary-key' = 'k', 'bucket' = '1', {engine})"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 10, 'b', 5), (2, 20, 'a', 5)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 11, NULL, 3)")  # older by ts: loses / is summed
    for alter in (
        "RENAME COLUMN v TO val",
        "ALTER COLUMN val TYPE BIGINT",
        "RENAME COLUMN ts TO t2",
    ):
        spark.sql(f"ALTER TABLE {t} {alter}")
    options = session.catalog.get_table("default.pkm").schema.options
    assert options["sequence.field"] == "t2"
    spark.sql(f"INSERT INTO {t} VALUES (1, 5000000000, NULL, 9), (2, NULL, 'c', 4)")
    if "partial-update" in engine:
        # k=1: newest by t2 is 9 (val), m from the newest non-NULL ('b', t2=5);
        # k=2: t2=4 is older than 5: its 'c' loses to 'a', its NULL val changes nothing
        expected = [(1, 5_000_000_000, "b", 9), (2, 20, "a", 5)]
    else:
        expected = [(1, 10 + 11 + 5_000_000_000, "b", 9), (2, 20, "c", 5)]
        assert options["fields.val.aggregate-function"] == "sum"
    for got in _every_path(session, "pkm"):
        assert got == expected
    spark.sql(f"CALL {cat}.sys.compact(table => 'default.pkm')")
    for got in _every_path(session, "pkm"):
        assert got == expected


def test_a_primary_key_stream_reads_files_written_after_a_rename(
    session: Any, tmp_path: Any
) -> None:
    """A stream started before a RENAME keeps its columns; the snapshot written after it is
    read by field id (the changes scan's older-version part)."""
    cat, spark = session.catalog_name, session.spark
    t = f"{cat}.default.pks"
    spark.sql(
        f"CREATE TABLE {t} (k INT NOT NULL, v STRING) "
        "TBLPROPERTIES ('primary-key' = 'k', 'bucket' = '1')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    q = (
        spark.readStream.table(t)
        .writeStream.format("memory")
        .queryName("pk_evolved_stream")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .start()
    )
    try:
        q.processAllAvailable()
        spark.sql(f"ALTER TABLE {t} RENAME COLUMN v TO w")
        spark.sql(f"INSERT INTO {t} VALUES (2, 'b'), (1, 'aa')")
        q.processAllAvailable()
    finally:
        q.stop()
    got = _rows(spark.sql("SELECT * FROM pk_evolved_stream"))
    assert got == [(1, "a"), (1, "aa"), (2, "b")]
