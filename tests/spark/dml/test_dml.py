"""Copy-on-write DELETE and UPDATE (lakeskip.spark.modify.dispatch) against plain Spark recomputation."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.examples import spark_examples

import lakeskip.spark.modify.dispatch as dml
from lakeskip.catalog.format.manifest import FileKind, read_manifest, read_manifest_list
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.errors import (
    ColumnNotFoundError,
    CommitConflictError,
    InvalidArgumentError,
    QueryFailedError,
    UnsupportedStatementError,
)
from lakeskip.spark import input_files

TABLE = """CREATE TABLE t (id BIGINT, k STRING, v INT, p INT) PARTITIONED BY (p) WITH (
    'file-index.bloom-filter.columns' = 'k',
    'file-index.bitmap.columns' = 'v')"""


def _rows(df) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _names(session, name: str = "t") -> set[str]:  # type: ignore[no-untyped-def]
    return {os.path.basename(p) for p in session.table(name).files()}


def _fill(session, n_files: int = 4, rows: int = 20) -> None:  # type: ignore[no-untyped-def]
    """File f holds ids f*rows.., k 'k<f>_<i>' (NULL every 7th), v f*10 + i % 5 (NULL every
    6th), p f % 2: one INSERT (and task) per file, so files have disjoint v and k ranges."""
    session.sql(TABLE)
    for f in range(n_files):
        values = ", ".join(
            f"({f * rows + i}, {'NULL' if i % 7 == 3 else repr(f'k{f}_{i}')}, "
            f"{'NULL' if i % 6 == 5 else f * 10 + i % 5}, {f % 2})"
            for i in range(rows)
        )
        session.sql(f"INSERT INTO t SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")


def _plain(session, name: str = "t"):  # type: ignore[no-untyped-def]
    """Every live row, read without lakeskip (the oracle's input)."""
    t = session.catalog.get_table(f"default.{name}")
    rt = t.schema.row_type
    return session.spark.read.schema(rt.spark_ddl()).parquet(
        *[f"file://{t.data_file_path(e)}" for e in t.scan_files()]
    )


def _snapshot_entries(session, snapshot_id: int):  # type: ignore[no-untyped-def]
    t = session.catalog.get_table("default.t")
    snap = t.snapshot(snapshot_id)
    out = []
    for meta in read_manifest_list(t.file_io, t.path, snap.delta_manifest_list):
        out += read_manifest(t.file_io, t.path, meta.file_name, t.partition_types)
    return snap, out


def test_delete_equals_spark_and_touches_only_matching_files(session) -> None:  # type: ignore[no-untyped-def]
    _fill(session)
    before_files = _names(session)
    before = _rows(session.sql("SELECT * FROM t"))
    old_snapshot = session.catalog.get_table("default.t").latest_snapshot().id
    cond = "v IN (11, 12) OR k = 'k3_4'"  # rows in files 1 and 3 only
    expected = _rows(_plain(session).where(f"NOT ({cond}) OR ({cond}) IS NULL"))
    deleted = len(before) - len(expected)
    result = session.sql(f"DELETE FROM t WHERE {cond}").collect()[0]
    report = session.last_reports[0]
    assert report.total_files == 4 and report.kept_files == 2, report.summary()
    assert result["rows_deleted"] == deleted == 7
    assert result["files_rewritten"] == 2 and result["files_added"] == 2
    assert _rows(session.sql("SELECT * FROM t")) == expected
    after_files = _names(session)
    assert len(before_files & after_files) == 2, "files 0 and 2 hold no match: untouched"
    # one OVERWRITE snapshot: DELETE entries for the two rewritten files, ADDs for the new
    snap, entries = _snapshot_entries(session, result["snapshot_id"])
    assert snap.commit_kind is CommitKind.OVERWRITE and snap.id == old_snapshot + 1
    assert sorted(e.kind.name for e in entries) == ["ADD", "ADD", "DELETE", "DELETE"]
    assert {e.file.file_name for e in entries if e.kind is FileKind.DELETE} == (
        before_files - after_files
    )
    # time travel to the snapshot before the DELETE still reads the old rows
    assert _rows(session.sql(f"SELECT * FROM t VERSION AS OF {old_snapshot}")) == before
    # a DELETE nothing matches commits nothing
    none = session.sql("DELETE FROM t WHERE v = 11").collect()[0]
    assert none["rows_deleted"] == 0 and none["snapshot_id"] is None
    assert session.catalog.get_table("default.t").latest_snapshot().id == snap.id


def test_indexes_still_prune_after_a_rewrite(session) -> None:  # type: ignore[no-untyped-def]
    _fill(session)
    session.sql("DELETE FROM t WHERE v = 31")  # rewrites file 3 (v 30..34)
    session.sql("UPDATE t SET k = concat(k, '!') WHERE id = 21")  # rewrites file 1
    for where, files in (("k = 'k3_2'", 1), ("k = 'k1_1!'", 1), ("v = 33", 1), ("v = 31", 0)):
        df = session.sql(f"SELECT * FROM t WHERE {where}")
        assert len(input_files(df)) == files, where
        report = session.last_reports[0]
        assert report.kept_files == files and report.total_files == 4, report.summary()
        assert _rows(df) == _rows(_plain(session).where(where)), where
    assert _rows(session.sql("SELECT id, k FROM t WHERE id = 21")) == [(21, "k1_1!")]


def test_update_equals_spark_and_moves_partitions(session) -> None:  # type: ignore[no-untyped-def]
    _fill(session)
    before_files = _names(session)
    cond = "v >= 20 AND v < 23"  # file 2 only; NULL v rows keep their values
    sets = {"k": "upper(k)", "v": "v + 100", "p": "p + 5"}
    plain = _plain(session)
    exprs = [
        f"CASE WHEN ({cond}) THEN {sets[c]} ELSE {c} END AS {c}" if c in sets else c
        for c in ("id", "k", "v", "p")
    ]
    expected = _rows(plain.selectExpr(*exprs))
    matching = plain.where(cond).count()
    result = session.sql(
        f"UPDATE t AS x SET x.k = upper(k), v = v + 100, p = x.p + 5 WHERE {cond}"
    ).collect()[0]
    assert result["rows_updated"] == matching > 0
    assert result["files_rewritten"] == 1
    assert _rows(session.sql("SELECT * FROM t")) == expected
    assert len(before_files & _names(session)) == 3
    # the updated rows moved to partition p = 5; partition pruning sees them there
    moved = session.sql("SELECT id FROM t WHERE p = 5")
    assert len(moved.collect()) == matching
    assert session.last_reports[0].kept_files == 1


def test_null_condition_keeps_rows(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE n (id BIGINT, v INT)")
    session.sql("INSERT INTO n VALUES (1, 1), (2, NULL), (3, 9), (4, NULL)")
    assert session.sql("DELETE FROM n WHERE v > 5").collect()[0]["rows_deleted"] == 1
    assert _rows(session.sql("SELECT * FROM n")) == [(1, 1), (2, None), (4, None)]
    out = session.sql("UPDATE n SET v = 0 WHERE v <> 1").collect()[0]
    assert out["rows_updated"] == 0 and out["snapshot_id"] is None, "NULL <> 1 is NULL"
    assert session.sql("UPDATE n SET v = -1 WHERE NOT (v > 5)").collect()[0]["rows_updated"] == 1
    assert _rows(session.sql("SELECT * FROM n")) == [(1, -1), (2, None), (4, None)]
    # a column added later reads NULL in the old file, also in the condition
    session.sql("ALTER TABLE n ADD COLUMNS (w STRING)")
    session.sql("INSERT INTO n VALUES (5, 5, 'x')")
    assert session.sql("DELETE FROM n WHERE w IS NULL AND id = 1").collect()[0][1] == 1
    assert session.sql("UPDATE n SET w = 'y' WHERE v IS NULL").collect()[0][1] == 2
    assert _rows(session.sql("SELECT * FROM n")) == [(2, None, "y"), (4, None, "y"), (5, 5, "x")]
    session.sql("DELETE FROM n")  # no WHERE: every row
    assert _rows(session.sql("SELECT * FROM n")) == []


def test_update_errors(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE e (id BIGINT NOT NULL, s STRING)")
    session.sql("INSERT INTO e VALUES (1, 'a'), (2, 'b')")
    with pytest.raises(ColumnNotFoundError, match="no column nope"):
        session.sql("UPDATE e SET nope = 1")
    with pytest.raises(InvalidArgumentError, match=r"deterministic \(rand\(\) is not\)"):
        session.sql("DELETE FROM e WHERE rand() < 0.5")
    with pytest.raises(QueryFailedError, match="NULL in NOT NULL column id"):
        session.sql("UPDATE e SET id = NULL WHERE s = 'a'")
    assert _rows(session.sql("SELECT * FROM e")) == [(1, "a"), (2, "b")], "nothing committed"
    with pytest.raises(UnsupportedStatementError, match=r"^DELETE \.\.\. USING is not supported"):
        session.sql("DELETE FROM e USING e AS o WHERE e.id = o.id")


def test_delete_conflicts_with_a_concurrent_rewrite(session, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A commit that removed a file being rewritten (here TRUNCATE, between the rewrite and
    the commit): the conflicting attempt's new files are removed and the DELETE runs again
    against the new snapshot (commit.max-retries); with no retry left it fails, and no row
    comes back either way."""
    _fill(session, n_files=2)
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('commit.max-retries' = '0')")
    table = session.catalog.get_table("default.t")
    write = dml.write_entries
    written: list[str] = []

    def racing_write(t, df):  # type: ignore[no-untyped-def]
        entries = write(t, df)
        written.extend(t.data_file_path(e) for e in entries.added)
        session.sql("TRUNCATE TABLE t")
        return entries

    monkeypatch.setattr(dml, "write_entries", racing_write)
    with pytest.raises(CommitConflictError, match="nothing was changed"):
        dml.delete_where(session.spark, table, "v = 1")
    assert written and not any(os.path.exists(p) for p in written)
    assert _rows(session.sql("SELECT * FROM t")) == []

    written.clear()
    session.sql("DROP TABLE t")
    _fill(session, n_files=2)  # default commit.max-retries: the DELETE is run again
    table = session.catalog.get_table("default.t")
    result = dml.delete_where(session.spark, table, "v = 1")
    assert written and not any(os.path.exists(p) for p in written), "the first attempt's files"
    assert result.snapshot_id is None, "run again on the truncated table: nothing to delete"
    assert _rows(session.sql("SELECT * FROM t")) == []


def test_delete_also_deletes_rows_appended_concurrently(session, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A matching row another writer commits while the DELETE writes: the DELETE commits after
    it, so it must delete it too (serializable, as Delta's and Iceberg's defaults; issue #33:
    the table equals a replay in commit order). The commit finds the newer file may match and
    the statement runs again on the newer snapshot."""
    _fill(session, n_files=2)
    table = session.catalog.get_table("default.t")
    write = dml.write_entries
    raced: list[int] = []

    def racing_write(t, df):  # type: ignore[no-untyped-def]
        entries = write(t, df)
        if not raced:  # one concurrent writer, once
            raced.append(1)
            session.sql("INSERT INTO t VALUES (999, 'late', 1, 0)")  # matches, committed first
        return entries

    monkeypatch.setattr(dml, "write_entries", racing_write)
    result = dml.delete_where(session.spark, table, "v = 1")
    assert raced, "the concurrent insert ran"
    assert result.rows == 4, "the retried DELETE read the late row too"
    assert _rows(session.sql("SELECT id FROM t WHERE v = 1")) == []
    assert session.sql("SELECT count(*) FROM t").collect()[0][0] == 40 + 1 - 4


# -- random conditions vs plain Spark ---------------------------------------------------------

_ATOMS = st.one_of(
    st.integers(-2, 36).map(lambda n: f"v = {n}"),
    st.integers(-2, 36).map(lambda n: f"v > {n}"),
    st.integers(0, 40).map(lambda n: f"id <= {n}"),
    st.sampled_from(["k = 'k0_1'", "k = 'k1_9'", "k IN ('k2_0', 'k3_8', 'zz')", "k < 'k1'"]),
    st.sampled_from(["v IS NULL", "k IS NOT NULL", "p = 1", "upper(k) = 'K2_2'"]),
    st.sampled_from(["k LIKE 'k3%'", "v IN (1, 22, NULL)", "v NOT IN (30, 31)"]),
)
_CONDITIONS = st.recursive(
    _ATOMS,
    lambda inner: st.one_of(
        inner.map(lambda a: f"NOT ({a})"),
        st.tuples(inner, inner).map(lambda ab: f"({ab[0]}) AND ({ab[1]})"),
        st.tuples(inner, inner).map(lambda ab: f"({ab[0]}) OR ({ab[1]})"),
    ),
    max_leaves=3,
)


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=4, fuzz=24),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cond=_CONDITIONS, update=st.booleans())
def test_random_conditions_match_plain_spark(session, cond: str, update: bool) -> None:  # type: ignore[no-untyped-def]
    session.sql("DROP TABLE IF EXISTS t")
    _fill(session)
    plain = _plain(session)
    files_before = _names(session)
    matching_files = {
        os.path.basename(r[0])
        for r in plain.where(cond).selectExpr("_metadata.file_name").distinct().collect()
    }
    if update:
        expected = _rows(
            plain.selectExpr(
                "id",
                f"CASE WHEN ({cond}) THEN 'u' ELSE k END AS k",
                f"CASE WHEN ({cond}) THEN -v ELSE v END AS v",
                "p",
            )
        )
        count = plain.where(cond).count()
        result = session.sql(f"UPDATE t SET k = 'u', v = -v WHERE {cond}").collect()[0]
        assert result["rows_updated"] == count, cond
    else:
        expected = _rows(plain.where(f"NOT ({cond}) OR ({cond}) IS NULL"))
        result = session.sql(f"DELETE FROM t WHERE {cond}").collect()[0]
        assert result["rows_deleted"] == 80 - len(expected), cond
    assert _rows(session.sql("SELECT * FROM t")) == expected, cond
    assert result["files_rewritten"] == len(matching_files), cond
    assert files_before - matching_files <= _names(session), "non-matching files untouched"


def test_subquery_condition_and_clustered_table(session) -> None:  # type: ignore[no-untyped-def]
    """A condition with a (correlated) subquery over a Spark view; a table with write-time
    clustering gets sorted new files."""
    session.sql(
        "CREATE TABLE c (id BIGINT, v INT) WITH ('clustering.columns' = 'v', "
        "'file-index.bitmap.columns' = 'v')"
    )
    session.sql("INSERT INTO c SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 5), (2, 3), (3, 9)")
    session.sql("INSERT INTO c SELECT /*+ REPARTITION(1) */ * FROM VALUES (4, 1), (5, 7), (6, 2)")
    session.spark.createDataFrame([(2,), (5,)], "id BIGINT").createOrReplaceTempView("gone")
    try:
        out = session.sql(
            "DELETE FROM c WHERE EXISTS (SELECT 1 FROM gone g WHERE g.id = c.id) OR v = 9"
        ).collect()[0]
        assert out["rows_deleted"] == 3 and out["files_rewritten"] == 2
        assert _rows(session.sql("SELECT * FROM c")) == [(1, 5), (4, 1), (6, 2)]
        session.sql("UPDATE c SET v = -v WHERE id IN (SELECT id + 3 FROM gone)")  # ids 5, 8
        assert _rows(session.sql("SELECT * FROM c")) == [(1, 5), (4, 1), (6, 2)]
        # each file was written sorted on v; v = 10 - v reverses that order unless the
        # rewrite sorts again
        out = session.sql("UPDATE c SET v = 10 - v WHERE id IN (4, 6)").collect()[0]
        assert out["rows_updated"] == 2 and out["files_rewritten"] == 1
        assert _rows(session.sql("SELECT * FROM c")) == [(1, 5), (4, 9), (6, 8)]
        t = session.catalog.get_table("default.c")
        for e in t.scan_files():
            path = f"file://{t.data_file_path(e)}"
            values = [r[0] for r in session.spark.read.parquet(path).select("v").collect()]
            assert values == sorted(values), "written sorted on the clustering column"
        assert max(e.file.row_count for e in t.scan_files()) >= 2, "some file holds an order"
    finally:
        session.spark.catalog.dropTempView("gone")
