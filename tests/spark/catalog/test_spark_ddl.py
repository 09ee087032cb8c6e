"""The DDL Spark users type on lakeskip tables through plain ``spark.sql``, each as Paimon's
Spark connector does it; after each statement the table's rows equal a model kept here."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def lake(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    import lakeskip

    lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    return spark


def _rows(spark, table: str) -> list[tuple]:  # type: ignore[no-untyped-def,type-arg]
    return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {table}").collect())


def _kinds(spark, table: str) -> list[str]:  # type: ignore[no-untyped-def]
    db, name = table.rsplit(".", 1)
    q = f"SELECT commit_kind FROM {db}.`{name}$snapshots` ORDER BY snapshot_id"
    return [r[0] for r in spark.sql(q).collect()]


@pytest.mark.parametrize(
    "ddl",
    [
        "(id BIGINT, v STRING, dt STRING) PARTITIONED BY (dt)",
        "(id BIGINT NOT NULL, v STRING, dt STRING NOT NULL) PARTITIONED BY (dt) "
        "TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '2')",
    ],
    ids=["append", "primary-key"],
)
def test_truncate_table_is_one_overwrite_snapshot_with_no_files(lake, ddl: str) -> None:  # type: ignore[no-untyped-def]
    spark = lake
    t = "lakeskip.default.tr"
    spark.sql(f"CREATE TABLE {t} {ddl}")
    spark.sql(f"TRUNCATE TABLE {t}")  # an empty table: nothing to commit
    assert _kinds(spark, t) == []
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 'd1'), (2, 'b', 'd2')")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c', 'd1')")
    assert _rows(spark, t) == [(1, "a", "d1"), (2, "b", "d2"), (3, "c", "d1")]
    spark.sql(f"TRUNCATE TABLE {t}")
    assert _rows(spark, t) == [], "no rows after TRUNCATE"
    assert _kinds(spark, t)[-1] == "OVERWRITE"
    files = spark.sql("SELECT count(*) FROM lakeskip.default.`tr$files`").collect()[0][0]
    assert files == 0, "the truncate snapshot lists no data files"
    # the table lives on: writes after the truncate, time travel before it
    spark.sql(f"INSERT INTO {t} VALUES (4, 'd', 'd3')")
    assert _rows(spark, t) == [(4, "d", "d3")]
    assert len(_rows(spark, f"{t} VERSION AS OF 2")) == 3


def _schema_of(wh: Path, name: str):  # type: ignore[no-untyped-def]
    from lakeskip.catalog.catalog import Catalog

    s = Catalog(str(wh)).get_table(name).schema
    fields = [(f.id, f.name, str(f.type), f.type.nullable, f.description) for f in s.fields]
    return fields, s.partition_keys, s.primary_keys, dict(s.options), s.comment


def test_show_create_table_recreates_the_table(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import lakeskip

    wh = tmp_path / "wh"
    session = lakeskip.connect(str(wh), spark=spark)
    spark.sql(
        "CREATE TABLE lakeskip.default.sc (id BIGINT NOT NULL COMMENT 'the key', "
        "v STRING, n INT NOT NULL, dt STRING NOT NULL) PARTITIONED BY (dt) "
        "COMMENT 'a table' TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '2', "
        "'file-index.bloom-filter.columns' = 'v', 'merge-engine' = 'deduplicate')"
    )
    spark.sql("INSERT INTO lakeskip.default.sc VALUES (1, 'a', 1, 'd1'), (2, 'b', 2, 'd2')")
    [[text]] = spark.sql("SHOW CREATE TABLE lakeskip.default.sc").collect()
    assert "lakeskip." not in text.replace("`lakeskip`.", ""), f"no state properties: {text}"
    assert "'primary-key' = 'id,dt'" in text and "`n` INT NOT NULL" in text, text
    spark.sql(text.replace("`sc`", "`sc2`"))
    assert _schema_of(wh, "default.sc2") == _schema_of(wh, "default.sc")
    [[again]] = spark.sql("SHOW CREATE TABLE lakeskip.default.sc2").collect()
    assert again == text.replace("`sc`", "`sc2`")
    # Session.sql's own SHOW CREATE TABLE (Paimon's PRIMARY KEY clause) recreates it too
    [[own]] = session.sql("SHOW CREATE TABLE sc").collect()
    session.sql(own.replace("default.sc ", "default.sc3 "))
    assert _schema_of(wh, "default.sc3") == _schema_of(wh, "default.sc")
