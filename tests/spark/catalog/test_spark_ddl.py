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
