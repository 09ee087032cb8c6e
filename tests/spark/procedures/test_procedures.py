"""CALL sys.rewrite_file_index and sys.compact through real Spark tasks."""

from __future__ import annotations

import os
import warnings

import pytest

from lakeskip.errors import ColumnNotFoundError, InvalidArgumentError, LakeskipWarning


def _table(session, n_files: int = 4, rows: int = 40) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE t (id BIGINT, k STRING, v BIGINT, dt STRING) PARTITIONED BY (dt)")
    for f in range(n_files):
        values = ", ".join(
            f"({f * rows + i}, 'k{(f * 7 + i * 13) % 97}', {(i * 37 + f * 11) % 101}, "
            f"'{'p1' if f % 2 else 'p0'}')"
            for i in range(rows)
        )
        session.sql(f"INSERT INTO t SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")


def _rows(session, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def,type-arg]
    return sorted(tuple(r) for r in session.sql(sql).collect())


def test_rewrite_file_index_adds_changes_and_drops_indexes(session) -> None:  # type: ignore[no-untyped-def]
    _table(session)
    before = _rows(session, "SELECT * FROM t")
    assert session.sql("SELECT * FROM t WHERE k = 'k5'").count() >= 0
    session.sql(
        "ALTER TABLE t SET ('file-index.bloom-filter.columns'='k', "
        "'file-index.bloom-filter.k.items'='50', 'file-index.bitmap.columns'='v', "
        "'file-index.in-manifest-threshold'='1 mb')"
    )
    r = session.sql("CALL sys.rewrite_file_index(table => 't')").collect()[0]
    assert r["files_rewritten"] == 4 and r["files_unchanged"] == 0 and r["indexes_written"] == 8
    entries = session.catalog.get_table("default.t").scan_files()
    assert all(e.file.embedded_index or e.file.index_file_name for e in entries)
    assert _rows(session, "SELECT * FROM t") == before, "data untouched"
    # no-op: nothing to rewrite, no new snapshot
    snap = session.catalog.get_table("default.t").latest_snapshot().id
    r = session.sql("CALL sys.rewrite_file_index('t')").collect()[0]
    assert (r["files_rewritten"], r["files_unchanged"]) == (0, 4)
    assert session.catalog.get_table("default.t").latest_snapshot().id == snap
    # index pruning now works on the rewritten files
    session.sql("SELECT * FROM t WHERE k = 'nope'").collect()
    assert session.last_reports[0].kept_files == 0
    # externalise: a tiny threshold moves every container to a .index file named as Paimon does
    session.sql("ALTER TABLE t SET ('file-index.in-manifest-threshold'='1 b')")
    session.sql("CALL sys.rewrite_file_index(table => 't', where => \"dt = 'p1'\")")
    entries = session.catalog.get_table("default.t").scan_files()
    p1 = [e for e in entries if e.partition == ("p1",)]
    p0 = [e for e in entries if e.partition == ("p0",)]
    assert all(e.file.index_file_name == e.file.file_name + ".index" for e in p1)
    assert all(e.file.embedded_index is None for e in p1)
    assert all(e.file.embedded_index is not None for e in p0), "where => only touched p1"
    # drop the bloom filter: stale bytes must not survive
    session.sql(
        "ALTER TABLE t UNSET ('file-index.bloom-filter.columns', 'file-index.bloom-filter.k.items')"
    )
    session.sql("CALL sys.rewrite_file_index(table => 't')")
    table = session.catalog.get_table("default.t")
    from lakeskip.index.format import FileIndexContainer

    for e in table.scan_files():
        data = e.file.embedded_index or table.file_io.read_bytes(
            f"{table.data_file_dir(e)}/{e.file.index_file_name}"
        )
        assert FileIndexContainer.decode(data).columns() == ["v"], "bloom on k dropped"
    p1 = [e for e in table.scan_files() if e.partition == ("p1",)]
    assert all(e.file.index_file_name == e.file.file_name + "-1.index" for e in p1)
    assert _rows(session, "SELECT * FROM t") == before


def test_corrupt_index_keeps_file_and_warns(session) -> None:  # type: ignore[no-untyped-def]
    session.sql(
        "CREATE TABLE c (id BIGINT, k STRING) WITH ('file-index.bloom-filter.columns'='k', "
        "'file-index.in-manifest-threshold'='1 b')"
    )
    session.sql("INSERT INTO c SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 'a'), (2, 'b')")
    table = session.catalog.get_table("default.c")
    (e,) = table.scan_files()
    path = f"{table.data_file_dir(e)}/{e.file.index_file_name}"
    table.file_io.write_bytes(path, b"garbage, not an index")
    with pytest.warns(LakeskipWarning, match="unusable"):
        df = session.sql("SELECT * FROM c WHERE k = 'aa'")  # within min/max: stats keep it
    assert session.last_reports[0].kept_files == 1, "a corrupt index keeps the file"
    assert df.count() == 0
    os.remove(path)
    session.catalog.get_table("default.c")  # (index bytes are cached by path: still unusable)
    with pytest.warns(LakeskipWarning, match="unusable|cannot read index file"):
        assert session.sql("SELECT * FROM c WHERE k = 'a'").count() == 1


@pytest.mark.parametrize("strategy", ["order", "zorder", "hilbert"])
def test_sort_compaction_keeps_rows_and_tightens_files(session, strategy: str) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE z (id BIGINT, a BIGINT, b BIGINT) WITH ('target-file-size'='1 kb')")
    for f in range(4):
        values = ", ".join(
            f"({f * 200 + i}, {(i * 7919 + f * 13) % 200}, {(i * 104729) % 200})"
            for i in range(200)
        )
        session.sql(f"INSERT INTO z SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")
    before = _rows(session, "SELECT * FROM z")
    kept_before = {}
    for pred in ("a < 20", "b BETWEEN 50 AND 60"):
        session.sql(f"SELECT * FROM z WHERE {pred}").collect()
        r = session.last_reports[0]
        kept_before[pred] = r.kept_files / r.total_files
    res = session.sql(
        f"CALL sys.compact(table => 'z', order_strategy => '{strategy}', order_by => 'a,b')"
    ).collect()[0]
    assert res["files_before"] == 4 and res["rows"] == 800
    assert res["note"] is None, "files small enough to skip"
    assert _rows(session, "SELECT * FROM z") == before, "rows identical before and after"
    oracle = {"a < 20": lambda r: r[1] < 20, "b BETWEEN 50 AND 60": lambda r: 50 <= r[2] <= 60}
    for pred, frac in kept_before.items():
        got = _rows(session, f"SELECT * FROM z WHERE {pred}")
        assert got == [row for row in before if oracle[pred](row)], pred
        r = session.last_reports[0]
        if strategy == "order" and pred.startswith("b"):
            continue  # a linear order clusters its first column only
        assert r.kept_files / r.total_files < frac, (
            f"{strategy}: {pred} kept {r.kept_files}/{r.total_files} files after compaction, "
            f"{frac:.2f} of files before"
        )


def test_sort_compaction_into_one_file_says_so(session) -> None:  # type: ignore[no-untyped-def]
    """Issue 28: a z-order compaction that wrote one file (nothing skippable) said nothing."""
    session.sql("CREATE TABLE one (id BIGINT, a BIGINT)")
    for f in range(3):
        session.sql(f"INSERT INTO one VALUES ({f}, {f * 7}), ({f + 10}, {f})")
    res = session.sql(
        "CALL sys.compact(table => 'one', order_strategy => 'zorder', order_by => 'id,a')"
    ).collect()[0]
    assert res["files_before"] >= 3 and (res["files_after"], res["rows"]) == (1, 6)
    assert res["note"].startswith("default.one fits in one file per partition"), res["note"]
    assert "smaller 'target-file-size'" in res["note"]
    assert session.sql("CALL sys.compact('one')").collect()[0]["note"] is None, "bin-packing"


def test_compact_bin_packs_small_files_and_validates(session) -> None:  # type: ignore[no-untyped-def]
    _table(session, n_files=6, rows=5)
    before = _rows(session, "SELECT * FROM t")
    r = session.sql("CALL sys.compact('t')").collect()[0]
    assert r["files_before"] == 6 and r["files_after"] == 2, "one file per partition"
    assert _rows(session, "SELECT * FROM t") == before
    with pytest.raises(InvalidArgumentError, match="partition column"):
        session.sql(
            "CALL sys.compact(table => 't', order_strategy => 'zorder', order_by => 'dt,id')"
        )
    with pytest.raises(ColumnNotFoundError):
        session.sql("CALL sys.compact(table => 't', order_strategy => 'order', order_by => 'nope')")
    with pytest.raises(InvalidArgumentError, match="order_strategy"):
        session.sql("CALL sys.compact(table => 't', order_strategy => 'spiral', order_by => 'id')")
    with pytest.raises(InvalidArgumentError, match="no argument"):
        session.sql("CALL sys.compact(tabel => 't')")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _rows(session, "SELECT * FROM t") == before


def test_each_catalog_runs_its_own_procedures_and_system_tables(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two lakeskip catalogs in one session, a table of the same name in each:
    ``CALL lk2.sys.compact`` compacts lk2's table (it looked in the first catalog's
    warehouse), ``CALL sys.x`` runs in the current catalog, system tables are per catalog."""
    import lakeskip

    first = lakeskip.connect(str(tmp_path / "wh1"), spark=spark)
    second = "lk2procs"
    lakeskip.connect(str(tmp_path / "wh2"), spark=spark, catalog_name=second)
    for cat, rows in (("lakeskip", (1, 2)), (second, (10, 20, 30))):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {cat}.other")
        spark.sql(f"CREATE TABLE {cat}.other.t2 (id BIGINT)")
        for r in rows:
            spark.sql(f"INSERT INTO {cat}.other.t2 VALUES ({r})")

    def kinds(cat: str) -> list[str]:
        snaps = spark.sql(f"SELECT commit_kind FROM {cat}.other.`t2$snapshots` ORDER BY 1")
        return sorted(r[0] for r in snaps.collect())

    def files(cat: str) -> int:
        return int(spark.sql(f"SELECT count(*) FROM {cat}.other.`t2$files`").collect()[0][0])

    spark.sql(f"CALL {second}.sys.compact(table => 'other.t2')").collect()
    assert files(second) == 1, f"{second}'s table is compacted"
    assert kinds(second) == ["APPEND", "APPEND", "APPEND", "COMPACT"]
    assert kinds("lakeskip") == ["APPEND", "APPEND"], "the first catalog's table is untouched"
    assert files("lakeskip") == 2
    got = sorted(r[0] for r in spark.sql(f"SELECT id FROM {second}.other.t2").collect())
    assert got == [10, 20, 30]
    # Session.sql of the first catalog: CALL naming the second goes there, a bare CALL stays
    spark.sql(f"INSERT INTO {second}.other.t2 VALUES (40)")
    first.sql(f"CALL {second}.sys.compact(table => 'other.t2')").collect()
    assert (files(second), files("lakeskip")) == (1, 2)
    first.sql("CALL sys.compact(table => 'other.t2')").collect()
    assert files("lakeskip") == 1
    # a bare CALL through spark.sql runs in the current catalog
    spark.sql(f"INSERT INTO {second}.other.t2 VALUES (50)")
    before = spark.catalog.currentCatalog()
    try:
        spark.sql(f"USE {second}.other")
        spark.sql("CALL sys.compact(table => 'other.t2')").collect()
    finally:
        spark.catalog.setCurrentCatalog(before)
    assert files(second) == 1
    got = sorted(r[0] for r in spark.sql(f"SELECT id FROM {second}.other.t2").collect())
    assert got == [10, 20, 30, 40, 50]
