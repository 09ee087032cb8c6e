"""Primary-key tables with deletion vectors through Spark: every write leaves one live
version per key in files at level > 0 (older versions marked in DVs), reads apply the DVs
without merging, and every answer equals an independent "latest row per key"."""

from __future__ import annotations

from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import spark_examples
from tests.spark.pk.pk_reads import check_catalog_reads

from lakeskip.catalog.pk.primary_key import TOP_LEVEL
from lakeskip.errors import InvalidOptionError


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def _check_layout(table: Any) -> None:
    """Paimon's DV read invariants: no level-0 file, no retract row, one sorted run per
    level of a bucket, and exactly one live version per key."""
    table = table.refresh()
    entries = table.scan_files()
    refs = table.deletion_files()
    seen: set[tuple[Any, ...]] = set()
    runs: dict[tuple[Any, ...], list[tuple[Any, Any]]] = {}
    for e in entries:
        assert e.file.level > 0
        assert not e.file.delete_row_count
        data = pq.read_table(table.data_file_path(e))
        assert set(data["_VALUE_KIND"].to_pylist()) <= {0, 2}
        ref = refs.get(e.file.file_name)
        dead = table.read_deletion_vector(ref, e.file.row_count) if ref is not None else set()
        keys = [c for c in data.column_names if c.startswith("_KEY_")]
        for i, row in enumerate(data.select(keys).to_pylist()):
            if i in dead:
                continue
            k = (e.partition, e.bucket, tuple(row.values()))
            assert k not in seen, f"key {k} live twice"
            seen.add(k)
        runs.setdefault((e.partition, e.bucket, e.file.level), []).append(
            (e.file.min_key, e.file.max_key)
        )
    for ranges in runs.values():
        assert len(ranges) == 1 or len(set(ranges)) == len(ranges)


def test_upserts_deletes_updates_and_compaction(session: Any) -> None:
    session.sql(
        "CREATE TABLE t (id BIGINT, dt STRING, v STRING, n INT) PARTITIONED BY (dt) "
        "WITH ('primary-key' = 'id,dt', 'bucket' = '2', 'deletion-vectors' = 'true', "
        "'file-index.bloom-filter.columns' = 'v')"
    )
    session.sql(
        "INSERT INTO t VALUES (1, 'x', 'a', 1), (2, 'x', 'b', 2), (3, 'y', 'c', 3), (4, 'y', 'd', 4)"
    )
    table = session.catalog.get_table("default.t")
    assert {e.file.level for e in table.scan_files()} == {TOP_LEVEL}
    session.sql("INSERT INTO t VALUES (2, 'x', 'bb', 20), (5, 'x', 'e', 5)")
    _check_layout(table)
    assert {e.file.level for e in table.refresh().scan_files()} <= {TOP_LEVEL, TOP_LEVEL - 1}
    assert table.refresh().deletion_files()  # the old version of id 2 is marked
    name = f"{session.catalog_name}.default.t"
    want = [
        (1, "x", "a", 1),
        (2, "x", "bb", 20),
        (3, "y", "c", 3),
        (4, "y", "d", 4),
        (5, "x", "e", 5),
    ]
    assert _rows(session.sql("SELECT id, dt, v, n FROM t")) == want
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == want
    # the older version of id 2 never comes back, neither through a value filter
    assert _rows(session.spark.sql(f"SELECT id FROM {name} WHERE v = 'b'")) == []
    assert _rows(session.sql("SELECT id FROM t WHERE v = 'b'")) == []
    session.sql("DELETE FROM t WHERE v = 'bb' OR id = 3")
    _check_layout(table)
    want = [(1, "x", "a", 1), (4, "y", "d", 4), (5, "x", "e", 5)]
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == want
    session.sql("UPDATE t SET n = n * 100, v = upper(v) WHERE dt = 'y' OR id = 1")
    _check_layout(table)
    want = [(1, "x", "A", 100), (4, "y", "D", 400), (5, "x", "e", 5)]
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == want
    assert _rows(session.sql("SELECT * FROM t")) == want
    # more writes than levels: level 1 taken -> the bucket is compacted into the top level
    for i in range(5):
        session.sql(f"INSERT INTO t VALUES (1, 'x', 'w{i}', {i}), (7, 'y', 'z', {i})")
        _check_layout(table)
    want = [(1, "x", "w4", 4), (4, "y", "D", 400), (5, "x", "e", 5), (7, "y", "z", 4)]
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == want
    # plain spark.sql DML through the catalog
    session.spark.sql(f"DELETE FROM {name} WHERE id = 5")
    session.spark.sql(f"UPDATE {name} SET n = -1 WHERE id = 7")
    _check_layout(table)
    want = [(1, "x", "w4", 4), (4, "y", "D", 400), (7, "y", "z", -1)]
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == want
    # rewrite_file_index keeps the data files (and so their DVs): rows unchanged
    values = ", ".join(f"({i}, 'z', 'q', {i})" for i in range(20, 30))
    session.sql(f"INSERT INTO t VALUES {values}")
    session.sql("UPDATE t SET n = 400 WHERE id IN (20, 21)")
    want = sorted([*want, *((i, "z", "q", 400 if i < 22 else i) for i in range(20, 30))])
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == want
    dvs = table.refresh().deletion_files()
    assert dvs
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('file-index.bitmap.columns' = 'n')")
    session.sql("CALL sys.rewrite_file_index(table => 't')")
    assert table.refresh().deletion_files().keys() == dvs.keys()
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == want
    assert _rows(session.spark.sql(f"SELECT id FROM {name} WHERE n = 400")) == [(4,), (20,), (21,)]
    session.sql("CALL sys.compact(table => 't')")
    table = table.refresh()
    assert {e.file.level for e in table.scan_files()} == {TOP_LEVEL}
    assert not table.deletion_files()
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == want
    session.sql("CALL sys.rewrite_file_index(table => 't')")
    assert _rows(session.sql("SELECT id FROM t WHERE v = 'D'")) == [(4,)]


def test_dml_reports_marked_and_rewritten_files(session: Any) -> None:
    """A file that only gets a DV (or is dropped, every row deleted) is marked, not
    rewritten; files a write compacts (level 1 taken) are rewritten."""
    session.sql(
        "CREATE TABLE t (id BIGINT, n INT) "
        "WITH ('primary-key' = 'id', 'bucket' = '1', 'deletion-vectors' = 'true')"
    )
    session.sql("INSERT INTO t VALUES (1, 1), (2, 2)")  # top level
    session.sql("INSERT INTO t VALUES (3, 3)")  # one level lower, a file of one row

    def run(sql: str) -> tuple[int, int, int, int]:
        r = session.sql(sql).collect()[0]
        return (r[1], r["files_rewritten"], r["files_marked"], r["files_added"])

    assert run("DELETE FROM t WHERE id = 3") == (1, 0, 1, 0)  # its file is dropped
    assert run("DELETE FROM t WHERE id = 1") == (1, 0, 1, 0)  # a DV on the first file
    assert run("UPDATE t SET n = 20 WHERE id = 2") == (1, 0, 1, 1)  # the old row: dropped
    inserted = [10 + 2 * k for k in range(TOP_LEVEL - 1)]
    for i in inserted:  # levels below: down to level 1
        session.sql(f"INSERT INTO t VALUES ({i}, {i}), ({i + 1}, {i + 1})")
    table = session.catalog.get_table("default.t")
    files = len(table.refresh().scan_files())
    assert min(e.file.level for e in table.scan_files()) == 1
    # level 1 taken: the bucket's files are compacted into one run (rewritten, none marked)
    assert run("UPDATE t SET n = -1 WHERE id = 10") == (1, files, 0, 1)
    _check_layout(table)
    want = [(2, 20), (10, -1), *sorted((j, j) for i in inserted for j in (i, i + 1) if j != 10)]
    assert _rows(session.sql("SELECT * FROM t")) == want


def test_insert_overwrite_replaces_without_lookup(session: Any) -> None:
    session.sql(
        "CREATE TABLE o (id INT PRIMARY KEY NOT ENFORCED, v STRING) "
        "WITH ('bucket' = '2', 'deletion-vectors.enabled' = 'true')"
    )
    session.sql("INSERT INTO o VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    session.sql("INSERT INTO o VALUES (2, 'bb')")
    session.sql("INSERT OVERWRITE o VALUES (2, 'x'), (9, 'y')")
    assert _rows(session.sql("SELECT * FROM o")) == [(2, "x"), (9, "y")]
    table = session.catalog.get_table("default.o")
    _check_layout(table)
    assert not table.deletion_files()


def test_deletion_vectors_option_on_primary_key_tables(session: Any) -> None:
    session.sql("CREATE TABLE a (id INT PRIMARY KEY NOT ENFORCED, v INT)")
    with pytest.raises(InvalidOptionError, match="cannot be changed by ALTER TABLE"):
        session.sql("ALTER TABLE a SET TBLPROPERTIES ('deletion-vectors.enabled' = 'true')")
    session.sql(
        "CREATE TABLE b (id INT PRIMARY KEY NOT ENFORCED, v INT) WITH ('deletion-vectors' = 'true')"
    )
    with pytest.raises(InvalidOptionError, match="cannot be turned off"):
        session.sql("ALTER TABLE b SET TBLPROPERTIES ('deletion-vectors.enabled' = 'false')")
    with pytest.raises(InvalidOptionError, match="unaware-bucket"):
        session.sql(
            "CREATE TABLE c (id INT, v INT) WITH ('bucket' = '2', 'bucket-key' = 'id', "
            "'deletion-vectors' = 'true')"
        )


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["insert", "insert", "delete", "update"]),
        st.lists(st.integers(0, 11), min_size=1, max_size=6, unique=True),
        st.integers(-5, 5),
    ),
    min_size=1,
    max_size=7,
)


@pytest.mark.fuzz
@settings(max_examples=spark_examples(test=2, fuzz=12), deadline=None)
@given(ops=_OPS, lo=st.integers(-4, 4), key=st.integers(0, 11))
def test_spark_reads_equal_latest_row_per_key(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, ops: Any, lo: int, key: int
) -> None:
    """Random upserts / deletes / updates on a DV primary-key table; every read (Spark
    catalog with value and key filters, the temp-view path) equals "latest row per key"
    recomputed here, and the files keep Paimon's DV read invariants."""
    import lakeskip

    s = lakeskip.connect(str(tmp_path_factory.mktemp("pkdv") / "wh"), spark=spark)
    s.sql(
        "CREATE TABLE t (k INT, p STRING, n INT, PRIMARY KEY (k, p) NOT ENFORCED) "
        "PARTITIONED BY (p) WITH ('bucket' = '2', 'deletion-vectors' = 'true', "
        "'file-index.bloom-filter.columns' = 'n')"
    )
    model: dict[tuple[int, str], int] = {}
    for i, (op, keys, n) in enumerate(ops):
        if op == "insert":
            values = ", ".join(f"({k}, 'p{k % 2}', {n + i})" for k in keys)
            s.sql(f"INSERT INTO t VALUES {values}")
            for k in keys:
                model[(k, f"p{k % 2}")] = n + i
        elif op == "delete":
            s.sql(f"DELETE FROM t WHERE n < {n} OR k = {keys[0]}")
            model = {kp: v for kp, v in model.items() if not (v < n or kp[0] == keys[0])}
        else:
            s.sql(f"UPDATE t SET n = n + 10 WHERE k >= {keys[0]}")
            model = {kp: v + 10 if kp[0] >= keys[0] else v for kp, v in model.items()}
    table = s.catalog.get_table("default.t")
    _check_layout(table)
    name = f"{s.catalog_name}.default.t"
    all_rows = sorted((k, p, v) for (k, p), v in model.items())
    check_catalog_reads(spark, name, all_rows, lo, key)
    from lakeskip.spark.read.query import table_view

    view = table_view(spark, table, table.scan_files())
    assert sorted((r["k"], r["p"], r["n"]) for r in view.collect()) == all_rows
