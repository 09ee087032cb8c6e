"""Paimon's system tables (``t$snapshots`` ...) through spark.sql, Session.sql and the shell,
checked against the table's real state after writes, ALTER, tags, DELETE with deletion
vectors and expiry (the metadata is read back independently with the catalog API)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

import lakeskip
from lakeskip.catalog.format.index_manifest import IndexManifestEntry
from lakeskip.catalog.ops.system_tables import METADATA_SYSTEM_TABLES, system_table_columns
from lakeskip.catalog.ops.tags import list_tags
from lakeskip.cli import main

APPEND = "lakeskip.db.ev"


@pytest.fixture
def lk(spark: SparkSession, tmp_path: Path) -> Any:
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    return s


def _sys(spark: SparkSession, table: str, name: str, tail: str = "") -> list[dict[str, Any]]:
    db, t = table.rsplit(".", 1)
    return [r.asDict() for r in spark.sql(f"SELECT * FROM {db}.`{t}${name}` {tail}").collect()]


def test_metadata_system_tables_match_the_table_state(spark: SparkSession, lk: Any) -> None:
    spark.sql(
        f"CREATE TABLE {APPEND} (id BIGINT, cat STRING, p STRING) PARTITIONED BY (p) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns'='cat', 'file-index.in-manifest-threshold'='1')"
    )
    for i, p in enumerate(["x", "y", "x"]):
        spark.sql(
            f"INSERT INTO {APPEND} SELECT id, concat('c', CAST(id AS STRING)), '{p}' "
            f"FROM range({i * 100}, {i * 100 + 20}, 1, 1)"
        )
    spark.sql(f"ALTER TABLE {APPEND} SET TBLPROPERTIES ('snapshot.num-retained.min'='1')")
    lk.sql("CALL sys.create_tag(table => 'db.ev', tag => 'first', snapshot => 1)")
    lk.sql("CALL sys.create_tag(table => 'db.ev', tag => 'kept', time_retained => '1 h')")
    table = lk.catalog.get_table("db.ev")

    # every column in Paimon's order, with Paimon's names
    for name in METADATA_SYSTEM_TABLES:
        cols = [f.name for f in spark.table(f"lakeskip.db.`ev${name}`").schema.fields]
        assert cols == [c[0] for c in system_table_columns(name)], name

    snaps = _sys(spark, APPEND, "snapshots")
    assert [s["snapshot_id"] for s in snaps] == [1, 2, 3]
    assert [s["total_record_count"] for s in snaps] == [20, 40, 60]
    assert [s["commit_kind"] for s in snaps] == ["APPEND"] * 3
    on_disk = table.list_snapshots()
    assert [s["base_manifest_list"] for s in snaps] == [s.base_manifest_list for s in on_disk]

    schemas = _sys(spark, APPEND, "schemas")
    assert [s["schema_id"] for s in schemas] == [0, 1]
    assert json.loads(schemas[1]["options"])["snapshot.num-retained.min"] == "1"
    assert json.loads(schemas[0]["partition_keys"]) == ["p"]
    assert [f["name"] for f in json.loads(schemas[0]["fields"])] == ["id", "cat", "p"]

    options = {r["key"]: r["value"] for r in _sys(spark, APPEND, "options")}
    assert options == dict(table.schema.options)

    tags = _sys(spark, APPEND, "tags")
    assert [(t["tag_name"], t["snapshot_id"], t["record_count"]) for t in tags] == [
        ("first", 1, 20),
        ("kept", 3, 60),
    ]
    assert [t["time_retained"] for t in tags] == [None, "PT1H"]

    entries = table.scan_files()
    files = _sys(spark, APPEND, "files")
    assert sorted(f["file_path"].rsplit("/", 1)[1] for f in files) == sorted(
        e.file.file_name for e in entries
    )
    assert sorted(f["partition"] for f in files) == ["{x}", "{x}", "{y}"]
    one = next(f for f in files if f["partition"] == "{y}")
    assert one["record_count"] == 20 and one["min_value_stats"] == "{cat=c100, id=100, p=y}"
    assert one["max_value_stats"] == "{cat=c119, id=119, p=y}"
    assert one["null_value_counts"] == "{cat=0, id=0, p=0}" and one["min_key"] is None
    assert {f["file_format"] for f in files} == {"parquet"}

    # every file has its bloom filter in a .index file (threshold 1 byte): name and sizes
    idx = _sys(spark, APPEND, "file_indexes")
    assert len(idx) == 3
    assert {(r["column_name"], r["index_type"], r["storage_type"]) for r in idx} == {
        ("cat", "bloom-filter", "FILE")
    }
    for r in idx:
        path = r["index_file_path"]
        assert path.endswith(".index")
        assert r["index_container_size_in_bytes"] == len(table.file_io.read_bytes(path))
        assert 0 < r["index_size_in_bytes"] < r["index_container_size_in_bytes"]

    parts = {r["partition"]: r for r in _sys(spark, APPEND, "partitions")}
    assert {k: (v["record_count"], v["file_count"]) for k, v in parts.items()} == {
        "p=x": (40, 2),
        "p=y": (20, 1),
    }
    metas = table.manifest_metas(table.latest_snapshot())  # type: ignore[arg-type]
    manifests = _sys(spark, APPEND, "manifests")
    assert [m["file_name"] for m in manifests] == [m.file_name for m in metas]
    assert sum(m["num_added_files"] for m in manifests) == 3

    # time travel: the per-snapshot tables describe the named snapshot
    assert len(_sys(spark, APPEND, "files", "VERSION AS OF 1")) == 1
    assert len(_sys(spark, APPEND, "files", "VERSION AS OF 'first'")) == 1
    assert len(_sys(spark, APPEND, "manifests", "VERSION AS OF 2")) == 2
    assert [r["partition"] for r in _sys(spark, APPEND, "partitions", "VERSION AS OF 1")] == ["p=x"]

    # expiry: the expired snapshots leave t$snapshots, the tags stay
    lk.sql("CALL sys.expire_snapshots(table => 'db.ev', retain_max => 1)")
    assert [s["snapshot_id"] for s in _sys(spark, APPEND, "snapshots")] == [3]
    assert [t["tag_name"] for t in _sys(spark, APPEND, "tags")] == [
        t.name for t in list_tags(table)
    ]
    # Session.sql and filters / projections over a system table
    got = lk.sql("SELECT tag_name FROM db.`ev$tags` WHERE snapshot_id = 1").collect()
    assert [r[0] for r in got] == ["first"]

    with pytest.raises(AnalysisException, match=r"cannot be found|not found"):
        spark.sql("SELECT * FROM lakeskip.db.`ev$nope`").collect()
    with pytest.raises(AnalysisException, match=r"does not support append|read-only|UNSUPPORTED"):
        spark.sql("INSERT INTO lakeskip.db.`ev$snapshots` SELECT * FROM lakeskip.db.`ev$snapshots`")


def test_deletion_vector_index_files_and_keys(spark: SparkSession, lk: Any) -> None:
    lk.sql(
        "CREATE TABLE db.k (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('deletion-vectors.enabled'='true', 'bucket'='1')"
    )
    lk.sql("INSERT INTO db.k VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    lk.sql("DELETE FROM db.k WHERE id = 2")
    table = lk.catalog.get_table("db.k")
    entries: list[IndexManifestEntry] = table.index_entries(table.latest_snapshot())
    rows = _sys(spark, "lakeskip.db.k", "table_indexes")
    assert [(r["index_type"], r["file_name"], r["file_size"], r["row_count"]) for r in rows] == [
        (
            e.index_file.index_type,
            e.index_file.file_name,
            e.index_file.file_size,
            e.index_file.row_count,
        )
        for e in entries
    ]
    assert rows and rows[0]["index_type"] == "DELETION_VECTORS"
    (dv,) = rows[0]["dv_ranges"]
    (data,) = table.scan_files()
    assert dv["f0"] == data.file.file_name and dv["_CARDINALITY"] == 1
    assert _sys(spark, "lakeskip.db.k", "table_indexes", "VERSION AS OF 1") == []
    (f,) = _sys(spark, "lakeskip.db.k", "files")
    assert (f["min_key"], f["max_key"], f["partition"]) == ("[1]", "[3]", "{}")


def test_shell_lists_snapshots(spark: SparkSession, tmp_path: Path, capsys: Any) -> None:
    wh = str(tmp_path / "wh")
    code = main(
        [
            "sql",
            "--warehouse",
            wh,
            "-e",
            "CREATE TABLE t (id BIGINT); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); "
            "SELECT snapshot_id, total_record_count FROM `t$snapshots` ORDER BY snapshot_id; "
            "SELECT rowkind, id FROM `t$audit_log` ORDER BY id",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "| snapshot_id | total_record_count |" in out
    assert "| 2           | 2                  |" in out
    assert "| rowkind | id |" in out and "| +I      | 2  |" in out


def test_read_optimized_reads_the_top_level_only(spark: SparkSession, lk: Any) -> None:
    lk.sql(
        "CREATE TABLE db.r (id INT, v STRING, p STRING, PRIMARY KEY (id, p) NOT ENFORCED) "
        "PARTITIONED BY (p) WITH ('bucket'='2')"
    )
    lk.sql("INSERT INTO db.r VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y')")
    lk.sql("INSERT INTO db.r VALUES (1, 'a2', 'x')")
    ro = "lakeskip.db.`r$read_optimized`"
    assert spark.sql(f"SELECT * FROM {ro}").collect() == []  # nothing compacted yet
    lk.sql("CALL sys.compact(table => 'db.r')")
    lk.sql("INSERT INTO db.r VALUES (2, 'b2', 'x')")  # level 0: not read-optimized yet

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in spark.sql(sql).collect())

    assert rows(f"SELECT * FROM {ro}") == [(1, "a2", "x"), (2, "b", "x"), (3, "c", "y")]
    assert rows(f"SELECT v FROM {ro} WHERE id = 2") == [("b",)]
    assert rows("SELECT * FROM lakeskip.db.r WHERE id = 2") == [(2, "b2", "x")]
    assert rows(f"SELECT * FROM {ro} VERSION AS OF 2") == []
    top = {r["level"] for r in _sys(spark, "lakeskip.db.r", "files") if r["level"] > 0}
    assert top == {5}, "Paimon's read-optimized level: num-levels (6 by default) - 1"
    with pytest.raises(AnalysisException, match="system tables are read-only"):
        spark.sql(f"INSERT INTO {ro} VALUES (9, 'z', 'x')")
    # an append table: read_optimized is the table
    spark.sql("CREATE TABLE lakeskip.db.a (id INT)")
    spark.sql("INSERT INTO lakeskip.db.a VALUES (1), (2)")
    assert rows("SELECT * FROM lakeskip.db.`a$read_optimized`") == [(1,), (2,)]


def test_audit_log_keeps_row_kinds_and_deletes(spark: SparkSession, lk: Any) -> None:
    """``t$audit_log``: Paimon's batch read with forceKeepDelete (each key's newest version per
    bucket, ``-D`` kept, rowkind first); DVs applied; append rows are all ``+I``."""
    lk.sql(
        "CREATE TABLE db.u (id INT, v STRING, p STRING, PRIMARY KEY (id, p) NOT ENFORCED) "
        "PARTITIONED BY (p) WITH ('bucket'='2')"
    )
    lk.sql("INSERT INTO db.u VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y')")
    lk.sql("INSERT INTO db.u VALUES (1, 'a2', 'x')")
    lk.sql("DELETE FROM db.u WHERE id = 2")
    au = "lakeskip.db.`u$audit_log`"

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in spark.sql(sql).collect())

    assert spark.table(au).columns == ["rowkind", "id", "v", "p"]
    assert rows(f"SELECT * FROM {au}") == [
        ("+I", 1, "a2", "x"),
        ("+I", 3, "c", "y"),
        ("-D", 2, "b", "x"),
    ]
    assert rows(f"SELECT id FROM {au} WHERE rowkind = '-D'") == [(2,)]
    assert rows(f"SELECT v, rowkind FROM {au} WHERE id < 3") == [("a2", "+I"), ("b", "-D")]
    assert rows(f"SELECT * FROM {au} VERSION AS OF 1") == [
        ("+I", 1, "a", "x"),
        ("+I", 2, "b", "x"),
        ("+I", 3, "c", "y"),
    ]
    assert "AuditLog" in "\n".join(r[0] for r in spark.sql(f"EXPLAIN SELECT * FROM {au}").collect())
    by_session = lk.sql("SELECT rowkind, id FROM db.`u$audit_log` WHERE id = 2").collect()
    assert [tuple(r) for r in by_session] == [("-D", 2)]
    with pytest.raises(AnalysisException, match="system tables are read-only"):
        spark.sql(f"INSERT INTO {au} VALUES ('+I', 9, 'z', 'x')")

    # deletion vectors: Paimon reads the files above level 0 minus their DVs
    lk.sql(
        "CREATE TABLE db.d (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('deletion-vectors.enabled'='true', 'bucket'='1')"
    )
    lk.sql("INSERT INTO db.d VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    lk.sql("INSERT INTO db.d VALUES (1, 'a2')")
    lk.sql("DELETE FROM db.d WHERE id = 3")
    assert rows("SELECT * FROM lakeskip.db.`d$audit_log`") == [("+I", 1, "a2"), ("+I", 2, "b")]

    # an append table: every row, +I
    spark.sql("CREATE TABLE lakeskip.db.ap (id INT)")
    spark.sql("INSERT INTO lakeskip.db.ap VALUES (1), (2)")
    assert rows("SELECT * FROM lakeskip.db.`ap$audit_log`") == [("+I", 1), ("+I", 2)]
