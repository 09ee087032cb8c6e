"""Time travel (VERSION / TIMESTAMP AS OF, scan.* options) and INSERT results, end to end."""

from __future__ import annotations

import time

import pytest

from lakeskip.errors import SnapshotNotFoundError, UnsupportedStatementError


def _two_inserts(session) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE tt (id BIGINT, s STRING)")
    session.sql("INSERT INTO tt VALUES (1, 'a')")
    t1 = session.table("tt").table.latest_snapshot().time_millis
    time.sleep(0.05)  # distinct commit times (ordering, not a timing threshold)
    session.sql("INSERT INTO tt VALUES (2, 'b')")
    t2 = session.table("tt").table.latest_snapshot().time_millis
    assert t2 > t1
    return t1, t2


def _ids(df) -> list[int]:  # type: ignore[no-untyped-def]
    return sorted(r[0] for r in df.collect())


def test_version_as_of_reads_that_snapshot(session) -> None:  # type: ignore[no-untyped-def]
    _two_inserts(session)
    assert _ids(session.sql("SELECT id FROM tt VERSION AS OF 1")) == [1], "snapshot 1 has row 1"
    assert session.last_reports[0].snapshot_id == 1
    assert _ids(session.sql("SELECT id FROM tt FOR SYSTEM_VERSION AS OF 1")) == [1]
    assert _ids(session.sql("SELECT id FROM tt FOR VERSION AS OF 2 AS x WHERE x.id > 0")) == [1, 2]
    assert _ids(session.sql("SELECT id FROM tt")) == [1, 2], "no clause: latest"
    # one query reading two versions of the same table
    both = session.sql(
        "SELECT a.id FROM tt VERSION AS OF 2 a LEFT ANTI JOIN tt VERSION AS OF 1 b ON a.id = b.id"
    )
    assert _ids(both) == [2]
    with pytest.raises(SnapshotNotFoundError, match="snapshot 7 does not exist"):
        session.sql("SELECT * FROM tt VERSION AS OF 7")


def test_version_as_of_a_tag(session) -> None:  # type: ignore[no-untyped-def]
    _two_inserts(session)
    table = session.table("tt").table
    # a Paimon tag: the snapshot's JSON in tag/tag-<name>
    table.file_io.write_bytes(f"{table.path}/tag/tag-first", table.snapshot(1).to_json().encode())
    assert _ids(session.sql("SELECT id FROM tt VERSION AS OF 'first'")) == [1]
    assert _ids(session.sql("SELECT id FROM tt VERSION AS OF '2'")) == [1, 2], "digits: an id"
    with pytest.raises(SnapshotNotFoundError, match="neither a tag nor a snapshot id"):
        session.sql("SELECT * FROM tt VERSION AS OF 'nope'")


def test_tag_procedures_and_reading_an_expired_tagged_snapshot(session) -> None:  # type: ignore[no-untyped-def]
    _two_inserts(session)
    spark = session.spark
    name = f"{session.catalog_name}.default.tt" if session.catalog_name else "tt"
    cat = session.catalog_name or "spark_catalog"
    row = spark.sql(f"CALL {cat}.sys.create_tag(table => 'default.tt', tag => 'v1', snapshot => 1)")
    assert row.collect()[0]["snapshot_id"] == 1
    session.sql("INSERT INTO tt VALUES (3, 'c')")
    session.sql("CALL sys.expire_snapshots(table => 'tt', retain_max => 1, retain_min => 1)")
    table = session.table("tt").table
    assert [s.id for s in table.list_snapshots()] == [3]
    assert _ids(spark.sql(f"SELECT id FROM {name} VERSION AS OF 'v1'")) == [1], (
        "the tag holds snapshot 1 after it expired"
    )
    assert _ids(session.sql("SELECT id FROM tt VERSION AS OF 'v1'")) == [1]
    with pytest.raises(Exception, match="tag 'v1' already exists"):
        session.sql("CALL sys.create_tag('tt', 'v1')")
    session.sql("CALL sys.rename_tag(table => 'tt', tag => 'v1', target_tag => 'first')")
    assert _ids(session.sql("SELECT id FROM tt VERSION AS OF 'first'")) == [1]
    session.sql("CALL sys.delete_tag('tt', 'first')")
    with pytest.raises(SnapshotNotFoundError):
        session.sql("SELECT * FROM tt VERSION AS OF 'first'")


@pytest.mark.parametrize("dv", [False, True], ids=["merge-on-read", "deletion-vectors"])
def test_rollback_a_primary_key_table(session, dv: bool) -> None:  # type: ignore[no-untyped-def]
    session.sql("DROP TABLE IF EXISTS rb")
    session.sql(
        "CREATE TABLE rb (k INT, v STRING) WITH ('primary-key' = 'k', 'bucket' = '2', "
        f"'deletion-vectors.enabled' = '{str(dv).lower()}')"
    )
    session.sql("INSERT INTO rb VALUES (1, 'a'), (2, 'b')")
    session.sql("INSERT INTO rb VALUES (1, 'a2'), (3, 'c')")
    session.sql("DELETE FROM rb WHERE k = 2")
    rows = lambda: sorted(tuple(r) for r in session.sql("SELECT k, v FROM rb").collect())  # noqa: E731
    assert rows() == [(1, "a2"), (3, "c")]
    spark = session.spark
    cat = session.catalog_name or "spark_catalog"
    out = spark.sql(f"CALL {cat}.sys.rollback(table => 'default.rb', version => '1')").collect()
    assert (out[0]["previous_snapshot_id"], out[0]["current_snapshot_id"]) == (3, 4)
    assert rows() == [(1, "a"), (2, "b")], "the merged view of snapshot 1"
    session.sql("INSERT INTO rb VALUES (2, 'b2')")
    assert rows() == [(1, "a"), (2, "b2")], "writes go on from the restored state"
    assert sorted(
        tuple(r) for r in session.sql("SELECT k, v FROM rb VERSION AS OF 3").collect()
    ) == [(1, "a2"), (3, "c")], "the rolled-back snapshots stay readable"


def test_timestamp_as_of(session) -> None:  # type: ignore[no-untyped-def]
    t1, _ = _two_inserts(session)
    session.spark.conf.set("spark.sql.session.timeZone", "UTC")
    at = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t1 / 1000 + 0.0))
    at += f".{t1 % 1000:03d}"
    assert _ids(session.sql(f"SELECT id FROM tt TIMESTAMP AS OF '{at}'")) == [1]
    assert _ids(session.sql(f"SELECT id FROM tt FOR SYSTEM_TIME AS OF '{at}'")) == [1]
    assert _ids(session.sql("SELECT id FROM tt TIMESTAMP AS OF current_timestamp()")) == [1, 2]
    with pytest.raises(SnapshotNotFoundError, match="no snapshot at or before"):
        session.sql("SELECT * FROM tt TIMESTAMP AS OF '2020-01-01 00:00:00'")


def test_scan_options_time_travel(session) -> None:  # type: ignore[no-untyped-def]
    _two_inserts(session)
    session.sql("ALTER TABLE tt SET TBLPROPERTIES ('scan.snapshot-id' = '1')")
    assert _ids(session.sql("SELECT id FROM tt")) == [1], "table option scan.snapshot-id"
    assert _ids(session.sql("SELECT id FROM tt VERSION AS OF 2")) == [1, 2], "clause wins"
    session.sql("ALTER TABLE tt UNSET TBLPROPERTIES ('scan.snapshot-id')")
    t1 = session.table("tt").table.snapshot(1).time_millis
    session.spark.conf.set("spark.paimon.scan.timestamp-millis", str(t1))
    try:
        assert _ids(session.sql("SELECT id FROM tt")) == [1], "session conf"
    finally:
        session.spark.conf.unset("spark.paimon.scan.timestamp-millis")
    assert _ids(session.sql("SELECT id FROM tt")) == [1, 2]


def test_both_read_paths_choose_the_same_snapshot(session) -> None:  # type: ignore[no-untyped-def]
    """The Spark catalog's scan and the session's pruned views (EXPLAIN, no javac) take the
    snapshot from one function (lakeskip.catalog.ops.time_travel.read_snapshot)."""
    from lakeskip.spark.read.query import plan_query, run_planned
    from lakeskip.sql.statements import Query, parse_statement

    t1, _ = _two_inserts(session)

    def both(sql: str) -> tuple[list[int], list[int]]:
        query = parse_statement(sql)
        assert isinstance(query, Query)
        planned = plan_query(session.spark, session.catalog, query, "default", session.time_zone)
        return _ids(session.sql(sql)), _ids(run_planned(session.spark, planned))

    assert both("SELECT id FROM tt VERSION AS OF 1") == ([1], [1])
    assert both(f"SELECT id FROM tt TIMESTAMP AS OF timestamp_millis({t1})") == ([1], [1])
    session.sql("ALTER TABLE tt SET TBLPROPERTIES ('scan.tag-name' = 'first')")
    session.sql("CALL sys.create_tag(table => 'default.tt', tag => 'first', snapshot => 1)")
    assert both("SELECT id FROM tt") == ([1], [1]), "the table's option"
    assert both("SELECT id FROM tt VERSION AS OF 2") == ([1, 2], [1, 2]), "the clause wins"
    session.spark.conf.set("spark.paimon.scan.snapshot-id", "2")
    try:
        assert both("SELECT id FROM tt") == ([1, 2], [1, 2]), "the session's setting wins"
    finally:
        session.spark.conf.unset("spark.paimon.scan.snapshot-id")
    session.sql("ALTER TABLE tt UNSET TBLPROPERTIES ('scan.tag-name')")
    assert both("SELECT id FROM tt") == ([1, 2], [1, 2]), "the latest"


def test_time_travel_prunes_that_snapshots_files(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE p (id BIGINT, s STRING) WITH ('file-index.bloom-filter.columns'='s')")
    for i in range(3):
        session.sql(f"INSERT INTO p VALUES ({i}, 's{i}')")
    df = session.sql("SELECT id FROM p VERSION AS OF 2 WHERE s = 's1'")
    assert _ids(df) == [1]
    report = session.last_reports[0]
    assert report.snapshot_id == 2
    assert (report.total_files, report.kept_files) == (2, 1), report.summary()


def test_time_travel_reads_with_that_snapshots_schema(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE e (id BIGINT)")
    session.sql("INSERT INTO e VALUES (1)")
    session.sql("ALTER TABLE e ADD COLUMNS (s STRING)")
    session.sql("INSERT INTO e VALUES (2, 'x')")
    assert session.sql("SELECT * FROM e VERSION AS OF 1").columns == ["id"]
    rows = sorted(tuple(r) for r in session.sql("SELECT * FROM e").collect())
    assert rows == [(1, None), (2, "x")], "old file reads the new column as NULL"
    assert _ids(session.sql("SELECT id FROM e WHERE s IS NULL")) == [1]


def test_unsupported_clauses_are_kept_or_rejected(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE k (id BIGINT, s STRING)")
    session.sql("INSERT INTO k VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    pivot = session.sql("SELECT * FROM k PIVOT (sum(id) FOR s IN ('a', 'b'))").collect()
    assert [tuple(r) for r in pivot] == [(4, 2)], "PIVOT must not be dropped"
    sampled = session.sql("SELECT * FROM k TABLESAMPLE (1 ROWS)").collect()
    assert len(sampled) == 1, "TABLESAMPLE must not be dropped"
    # Paimon's system tables are served (tests/spark/catalog/test_system_tables.py); unquoted, the
    # name parses as `k AS $snapshots`: refused, saying how to write it
    assert [r[0] for r in session.sql("SELECT snapshot_id FROM `k$snapshots`").collect()] == [1]
    with pytest.raises(UnsupportedStatementError, match="backquotes"):
        session.sql("SELECT * FROM k$snapshots")


def test_insert_results_and_positional_select(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE w (id BIGINT, name STRING, score DOUBLE, day DATE)")
    r = session.sql("INSERT INTO w SELECT id, concat('n', id), NULL, NULL FROM range(0, 100)")
    assert r.collect()[0]["rows_written"] == 100
    r = session.sql("INSERT INTO w SELECT 1, 1, 1, NULL")
    assert r.collect()[0]["rows_written"] == 1
    r = session.sql("INSERT OVERWRITE w VALUES (1, 'a', 1.0, NULL), (2, 'b', 2.0, NULL)")
    assert r.collect()[0]["rows_written"] == 2, "overwrite reports rows added, not added-deleted"
    assert session.sql("SELECT count(*) FROM w").collect()[0][0] == 2


def test_insert_by_name_and_with(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE bn (id BIGINT, name STRING, score DOUBLE)")
    session.sql("INSERT INTO bn BY NAME SELECT 'x' AS name, 1 AS id")
    session.sql("WITH src AS (SELECT 2 AS id) INSERT INTO bn SELECT id, 'y', 0.5 FROM src")
    rows = sorted(tuple(r) for r in session.sql("SELECT * FROM bn").collect())
    assert rows == [(1, "x", None), (2, "y", 0.5)], rows
