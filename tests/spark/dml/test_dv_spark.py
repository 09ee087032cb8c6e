"""DELETE / UPDATE on deletion-vector tables (merge-on-read) against plain recomputation."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.examples import spark_examples

from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.errors import CommitConflictError, CorruptDeletionVectorError, QueryFailedError

TABLE = """CREATE TABLE t (id BIGINT, k STRING, v INT, p INT) PARTITIONED BY (p) WITH (
    'deletion-vectors' = 'true',
    'file-index.bloom-filter.columns' = 'k',
    'file-index.bitmap.columns' = 'v')"""


def _rows(df) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _fill(session, n_files: int = 4, rows: int = 20) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    session.sql(TABLE)
    out = []
    for f in range(n_files):
        vals = [
            (
                f * rows + i,
                None if i % 7 == 3 else f"k{f}_{i}",
                None if i % 6 == 5 else f * 10 + i % 5,
                f % 2,
            )
            for i in range(rows)
        ]
        out += vals
        text = ", ".join(
            f"({a}, {'NULL' if b is None else repr(b)}, {'NULL' if c is None else c}, {d})"
            for a, b, c, d in vals
        )
        session.sql(f"INSERT INTO t SELECT /*+ REPARTITION(1) */ * FROM VALUES {text}")
    return out


def _files(session):  # type: ignore[no-untyped-def]
    t = session.catalog.get_table("default.t")
    return t, {e.file.file_name for e in t.scan_files()}


def test_delete_marks_rows_without_rewriting_files(session) -> None:  # type: ignore[no-untyped-def]
    rows = _fill(session)
    t, before = _files(session)
    result = session.sql("DELETE FROM t WHERE v IN (11, 12) OR k = 'k3_4'").collect()[0]
    expected = [r for r in rows if not (r[2] in (11, 12) or r[1] == "k3_4")]
    assert result["rows_deleted"] == len(rows) - len(expected) == 7
    assert result["files_rewritten"] == 0 and result["files_added"] == 0
    assert result["files_marked"] == 2  # the two files given a DV
    t, after = _files(session)
    assert before == after, "no data file is rewritten"
    snap = t.latest_snapshot()
    assert snap.index_manifest and snap.commit_kind is CommitKind.OVERWRITE
    assert len(t.deletion_files()) == 2
    assert _rows(session.sql("SELECT * FROM t")) == sorted(expected, key=repr)
    assert _rows(session.spark.table("lakeskip.default.t")) == sorted(expected, key=repr)
    desc = {r[0]: r[1] for r in session.sql("DESCRIBE EXTENDED t").collect()}
    assert desc["Rows"] == str(len(expected)) and desc["Rows deleted by deletion vectors"] == "7"
    # a filtered read (pushed-down Parquet filter + index pruning) also skips deleted rows
    assert _rows(session.sql("SELECT id FROM t WHERE v = 11")) == []
    assert _rows(session.sql("SELECT id FROM t WHERE p = 1 AND v >= 10 AND v < 20")) == sorted(
        [(r[0],) for r in expected if r[3] == 1 and r[2] is not None and 10 <= r[2] < 20],
        key=repr,
    )
    # deleting again merges with the existing DVs; time travel sees the old rows
    session.sql("DELETE FROM t WHERE v = 13")
    expected = [r for r in expected if r[2] != 13]
    assert _rows(session.sql("SELECT * FROM t")) == sorted(expected, key=repr)
    assert len(_rows(session.sql(f"SELECT * FROM t VERSION AS OF {snap.id - 1}"))) == len(rows)
    # appends keep the DVs
    session.sql("INSERT INTO t VALUES (999, 'x', 1, 0)")
    assert _rows(session.sql("SELECT count(*) FROM t")) == [(len(expected) + 1,)]


def test_input_files_lists_the_files_of_a_dv_scan(session) -> None:  # type: ignore[no-untyped-def]
    """``input_files`` sees through ``LakeDvScan``: the kept files, with and without DVs."""
    from lakeskip.spark.front.catalog_setup import input_files

    _fill(session)
    _, names = _files(session)
    df = session.spark.table("lakeskip.default.t")
    assert {os.path.basename(f) for f in input_files(df)} == names, "no DV yet: plain scan"
    session.sql("DELETE FROM t WHERE v = 11")
    df = session.spark.table("lakeskip.default.t")
    assert "DeletionVectors" in df._jdf.queryExecution().executedPlan().toString()
    assert {os.path.basename(f) for f in input_files(df)} == names
    kept = input_files(session.spark.table("lakeskip.default.t").where("p = 1"))
    assert len(kept) == 2 and {os.path.basename(f) for f in kept} < names, "partition pruned"


def test_update_is_dv_plus_append(session) -> None:  # type: ignore[no-untyped-def]
    rows = _fill(session)
    _, before = _files(session)
    result = session.sql("UPDATE t SET v = v + 100, p = p + 5 WHERE v >= 20 AND v < 23").collect()[
        0
    ]
    hit = [r for r in rows if r[2] is not None and 20 <= r[2] < 23]
    expected = [r for r in rows if r not in hit] + [(a, b, c + 100, d + 5) for a, b, c, d in hit]
    assert result["rows_updated"] == len(hit) > 0 and result["files_rewritten"] == 0
    assert result["files_marked"] >= 1 and result["files_added"] >= 1
    _t, after = _files(session)
    assert before < after
    assert _rows(session.sql("SELECT * FROM t")) == sorted(expected, key=repr)
    # updating the updated rows again: the old versions stay deleted
    session.sql("UPDATE t SET k = 'z' WHERE p = 5")
    expected = [(a, "z" if d == 5 else b, c, d) for a, b, c, d in expected]
    assert _rows(session.sql("SELECT * FROM t")) == sorted(expected, key=repr)


def test_deleting_every_row_of_a_file_drops_it(session) -> None:  # type: ignore[no-untyped-def]
    _fill(session, n_files=2, rows=10)
    result = session.sql("DELETE FROM t WHERE id < 10").collect()[0]
    # the file is dropped from the snapshot, not rewritten: its rows were marked deleted
    assert (result["rows_deleted"], result["files_rewritten"], result["files_marked"]) == (10, 0, 1)
    assert result["files_added"] == 0
    t, files = _files(session)
    assert len(files) == 1 and not t.deletion_files()
    assert _rows(session.sql("SELECT min(id), count(*) FROM t")) == [(10, 10)]


def test_corrupt_dv_fails_the_read(session) -> None:  # type: ignore[no-untyped-def]
    _fill(session, n_files=1, rows=10)
    session.sql("DELETE FROM t WHERE id = 3")
    t, _ = _files(session)
    (ref,) = t.deletion_files().values()
    data = bytearray(t.file_io.read_bytes(ref.path))
    data[-1] ^= 0xFF
    t.file_io.write_bytes(ref.path, bytes(data))
    with pytest.raises((CorruptDeletionVectorError, QueryFailedError), match=ref.index_file):
        session.sql("SELECT * FROM t").collect()
    with pytest.raises((CorruptDeletionVectorError, QueryFailedError), match=ref.index_file):
        session.sql("DELETE FROM t WHERE id = 4")


def test_concurrent_dv_change_conflicts(session, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import lakeskip.spark.modify.dv as dv_dml

    _fill(session, n_files=1, rows=10)
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('commit.max-retries' = '0')")
    real = dv_dml.read_vectors

    def racing(other: int):  # type: ignore[no-untyped-def]
        def read(table, entries, snapshot):  # type: ignore[no-untyped-def]
            out = real(table, entries, snapshot)
            monkeypatch.setattr(dv_dml, "read_vectors", real)
            session.sql(f"DELETE FROM t WHERE id = {other}")  # another writer, in between
            return out

        return read

    monkeypatch.setattr(dv_dml, "read_vectors", racing(1))
    with pytest.raises(CommitConflictError, match="run it again"):
        session.sql("DELETE FROM t WHERE id = 2")
    assert _rows(session.sql("SELECT id FROM t")) == [(i,) for i in range(10) if i != 1]
    # with retries left the DELETE reads the changed DV again and commits
    session.sql("ALTER TABLE t UNSET TBLPROPERTIES ('commit.max-retries')")
    monkeypatch.setattr(dv_dml, "read_vectors", racing(3))
    session.sql("DELETE FROM t WHERE id = 2")
    assert _rows(session.sql("SELECT id FROM t")) == [(i,) for i in range(10) if i not in (1, 2, 3)]


_CONDITIONS = st.sampled_from(
    [
        "v = 11",
        "v > 25",
        "k IS NULL",
        "id % 3 = 0",
        "k LIKE 'k2%' OR v < 5",
        "p = 1 AND id % 2 = 0",
        "v IN (1, 12, 33) OR id > 70",
        "NOT (v < 30)",
    ]
)


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=4, fuzz=24),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(st.tuples(_CONDITIONS, st.booleans()), min_size=1, max_size=3))
def test_random_deletes_and_updates_match_recomputation(session, steps) -> None:  # type: ignore[no-untyped-def]
    session.sql("DROP TABLE IF EXISTS t")
    rows = _fill(session, n_files=4, rows=20)
    df = session.spark.createDataFrame(rows, "id BIGINT, k STRING, v INT, p INT")
    for cond, update in steps:
        if update:
            session.sql(f"UPDATE t SET v = v + 1000, k = concat(k, '!') WHERE {cond}")
            df = df.selectExpr(
                *(
                    f"CASE WHEN coalesce({cond}, false) THEN {e} ELSE {c} END AS {c}"
                    for c, e in (
                        ("id", "id"),
                        ("k", "concat(k, '!')"),
                        ("v", "v + 1000"),
                        ("p", "p"),
                    )
                )
            )
        else:
            session.sql(f"DELETE FROM t WHERE {cond}")
            df = df.where(f"NOT coalesce({cond}, false)")
        assert _rows(session.sql("SELECT * FROM t")) == _rows(df), (cond, update)
    # through the filter path too
    assert _rows(session.sql("SELECT * FROM t WHERE v > 20")) == _rows(df.where("v > 20"))


@pytest.mark.parametrize("strategy", ["none", "order", "zorder"])
def test_compaction_drops_deleted_rows_and_their_dvs(session, strategy) -> None:  # type: ignore[no-untyped-def]
    rows = _fill(session)
    session.sql("DELETE FROM t WHERE id % 3 = 0 OR v = 11")
    expected = sorted((r for r in rows if not (r[0] % 3 == 0 or r[2] == 11)), key=repr)
    # rewrite_file_index keeps the data files, so their DVs stay valid
    session.sql("CALL sys.rewrite_file_index(table => 't')")
    t, _ = _files(session)
    assert len(t.deletion_files()) == 4
    assert _rows(session.sql("SELECT * FROM t")) == expected
    if strategy == "none":
        session.sql("CALL sys.compact(table => 't')")
    else:
        session.sql(
            f"CALL sys.compact(table => 't', order_strategy => '{strategy}', order_by => 'id,v')"
        )
    t, _ = _files(session)
    assert not t.deletion_files(), "compaction removes the DVs of the files it rewrote"
    assert t.latest_snapshot().index_manifest is None
    assert sum(e.file.row_count for e in t.scan_files()) == len(expected)
    assert _rows(session.sql("SELECT * FROM t")) == expected
    # data files hold exactly the live rows now (read without lakeskip)
    plain = [
        tuple(r.values())
        for e in t.scan_files()
        for r in pq.read_table(t.data_file_path(e)).to_pylist()
    ]
    assert sorted(((a, b, c, p) for a, b, c, p in plain), key=repr) == expected
    assert os.path.isdir(f"{t.path}/index")


def test_temp_view_path_applies_dvs(session) -> None:  # type: ignore[no-untyped-def]
    """The view-based read (EXPLAIN, and Session.sql without javac) skips deleted rows too."""
    from lakeskip.spark.read.query import plan_query, run_planned
    from lakeskip.sql.statements import parse_statement

    rows = _fill(session, n_files=2, rows=10)
    session.sql("DELETE FROM t WHERE id % 4 = 1")
    query = parse_statement("SELECT * FROM t WHERE v >= 0")
    planned = plan_query(session.spark, session.catalog, query, "default", session.time_zone)
    got = _rows(run_planned(session.spark, planned))
    assert got == sorted(
        (r for r in rows if r[0] % 4 != 1 and r[2] is not None and r[2] >= 0), key=repr
    )


def test_insert_overwrite_drops_the_partitions_dvs(session) -> None:  # type: ignore[no-untyped-def]
    rows = _fill(session)
    session.sql("DELETE FROM t WHERE id % 5 = 0")  # DVs on all four files (p = 0 and 1)
    session.sql("INSERT OVERWRITE t PARTITION (p = 0) VALUES (500, 'n', 1)")
    t, _ = _files(session)
    live = {e.file.file_name: e for e in t.scan_files()}
    assert set(t.deletion_files()) <= set(live)
    assert {live[n].partition for n in t.deletion_files()} == {(1,)}
    expected = [r for r in rows if r[3] == 1 and r[0] % 5 != 0] + [(500, "n", 1, 0)]
    assert _rows(session.sql("SELECT * FROM t")) == sorted(expected, key=repr)


def test_row_positions_survive_row_group_skipping_and_file_splits(session) -> None:  # type: ignore[no-untyped-def]
    """Many row groups in one file, Spark splitting it across tasks and skipping row groups
    on a pushed filter: the Parquet row index still names each row's position."""
    session.sql(
        "CREATE TABLE big (id BIGINT, v BIGINT) WITH ('deletion-vectors' = 'true', "
        "'parquet.block.size' = '2048')"
    )
    n = 6000
    session.sql(f"INSERT INTO big SELECT /*+ REPARTITION(1) */ id, id * 3 FROM range({n})")
    t = session.catalog.get_table("default.big")
    (entry,) = t.scan_files()
    md = pq.ParquetFile(t.data_file_path(entry)).metadata
    assert md.num_row_groups > 4, "the test needs several row groups"
    session.sql("DELETE FROM big WHERE id % 7 = 3 OR (id > 4000 AND id < 4100)")
    live = [i for i in range(n) if not (i % 7 == 3 or 4000 < i < 4100)]
    conf = session.spark.conf
    old = conf.get("spark.sql.files.maxPartitionBytes")
    conf.set("spark.sql.files.maxPartitionBytes", str(max(1024, entry.file.file_size // 5)))
    try:
        df = session.sql("SELECT id, v FROM big")
        assert df.rdd.getNumPartitions() > 1, "the file must be split across tasks"
        assert sorted(tuple(r) for r in df.collect()) == [(i, i * 3) for i in live]
        q = session.sql("SELECT id FROM big WHERE id >= 3990 AND id < 4200")
        assert sorted(tuple(r) for r in q.collect()) == [(i,) for i in live if 3990 <= i < 4200]
        assert _rows(session.sql("SELECT count(*) FROM big WHERE v % 2 = 0")) == [
            (sum(1 for i in live if (i * 3) % 2 == 0),)
        ]
    finally:
        conf.set("spark.sql.files.maxPartitionBytes", old)
