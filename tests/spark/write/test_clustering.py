"""Write-time clustering (clustering.columns) and incremental clustering compaction."""

from __future__ import annotations

import pytest

from lakeskip.errors import ColumnNotFoundError, InvalidArgumentError, InvalidOptionError

ROWS = "SELECT /*+ REPARTITION(4) */ id, (id * 7919) % 1000 AS a, (id * 104729) % 1000 AS b FROM range(0, 4000)"


def _kept(session, sql: str) -> float:  # type: ignore[no-untyped-def]
    session.sql(sql).collect()
    r = session.last_reports[0]
    return r.kept_files / r.total_files


def test_write_time_clustering_keeps_fewer_files(session) -> None:  # type: ignore[no-untyped-def]
    """Each INSERT is cut into files by its estimated size over ``target-file-size``, at
    curve-cell corners, whatever the number of partitions its input arrives in (4, then 1):
    a filter on either clustering column keeps fewer files than on a plain table."""
    session.sql("CREATE TABLE plain (id BIGINT, a BIGINT, b BIGINT)")
    session.sql(
        "CREATE TABLE clustered (id BIGINT, a BIGINT, b BIGINT) "
        "WITH ('clustering.columns'='a,b', 'target-file-size'='2 kb')"
    )
    for t in ("plain", "clustered"):
        session.sql(f"INSERT INTO {t} {ROWS}")
        session.sql(f"INSERT INTO {t} {ROWS.replace('REPARTITION(4)', 'REPARTITION(1)')}")
    assert len(session.table("clustered").table.scan_files()) >= 8
    for pred in ("a < 100", "b BETWEEN 400 AND 450"):
        plain = _kept(session, f"SELECT * FROM plain WHERE {pred}")
        clustered = _kept(session, f"SELECT * FROM clustered WHERE {pred}")
        assert plain == 1.0 and clustered <= 0.6, f"{pred}: clustered kept {clustered:.2f}"
        a = sorted(map(tuple, session.sql(f"SELECT * FROM plain WHERE {pred}").collect()))
        b = sorted(map(tuple, session.sql(f"SELECT * FROM clustered WHERE {pred}").collect()))
        assert a == b


def test_clustering_options_are_validated(session) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ColumnNotFoundError):
        session.sql("CREATE TABLE x (id BIGINT) WITH ('clustering.columns'='nope')")
    with pytest.raises(InvalidOptionError):
        session.sql(
            "CREATE TABLE x (id BIGINT) WITH ('clustering.columns'='id', 'clustering.strategy'='spiral')"
        )
    with pytest.raises(InvalidArgumentError, match="MAP"):
        session.sql(
            "CREATE TABLE x (id BIGINT, m MAP<STRING,STRING>) WITH ('clustering.columns'='m')"
        )
    with pytest.raises(InvalidOptionError, match="partition column"):
        session.sql(
            "CREATE TABLE x (id BIGINT, dt STRING) PARTITIONED BY (dt) WITH ('clustering.columns'='dt')"
        )
    assert session.sql("SHOW TABLES").collect() == [], "nothing created"


def test_incremental_clustering_reclusters_only_what_overlaps(session) -> None:  # type: ignore[no-untyped-def]
    session.sql(
        "CREATE TABLE inc (id BIGINT, a BIGINT, b BIGINT) WITH ('clustering.columns'='a,b', "
        "'clustering.incremental'='true', 'target-file-size'='4 kb')"
    )
    session.sql(f"INSERT INTO inc {ROWS}")
    before = sorted(map(tuple, session.sql("SELECT * FROM inc").collect()))
    r = session.sql("CALL sys.compact(table => 'inc')").collect()[0]
    assert r["strategy"] == "incremental-zorder" and r["overlap_after"] <= r["overlap_before"]
    assert sorted(map(tuple, session.sql("SELECT * FROM inc").collect())) == before
    table = session.catalog.get_table("default.inc")
    clustered = {e.file.file_name for e in table.scan_files()}
    assert all(e.file.level == 1 for e in table.scan_files())
    # new rows confined to a corner: only the clustered files covering that corner are redone
    session.sql(
        "INSERT INTO inc SELECT /*+ REPARTITION(1) */ 100000 + id, id % 5, id % 7 FROM range(0, 20)"
    )
    r = session.sql("CALL sys.compact(table => 'inc')").collect()[0]
    after = {e.file.file_name for e in session.catalog.get_table("default.inc").scan_files()}
    untouched = clustered & after
    assert untouched, "files no new file overlaps must be left alone"
    assert r["files_before"] < len(clustered) + 1, r
    assert session.sql("SELECT count(*) FROM inc").collect()[0][0] == 4020
    with pytest.raises(InvalidArgumentError, match="incremental"):
        session.sql(
            "CALL sys.compact(table => 'inc', order_strategy => 'zorder', order_by => 'a,b')"
        )


# a key up to 6,000,000 and a day number over 2,500 days: ranges of very different widths
WIDE_NARROW = (
    "SELECT /*+ REPARTITION(4) */ id, (id * 7919) % 6000000 AS k, (id * 104729) % 2500 AS d "
    "FROM range(0, 40000)"
)


def test_zorder_compaction_clusters_both_columns_of_different_ranges(session) -> None:  # type: ignore[no-untyped-def]
    """Rank keys (the default ``sort.curve-keys``) give each column half the curve: after
    z-order into 16 files a 1% range of either column keeps about 4 (an even 4 x 4 grid);
    the answers equal a plain table's."""
    session.sql("CREATE TABLE wn (id BIGINT, k BIGINT, d INT)")
    session.sql("CREATE TABLE wn_plain (id BIGINT, k BIGINT, d INT)")
    session.sql(f"INSERT INTO wn {WIDE_NARROW}")
    session.sql(f"INSERT INTO wn_plain {WIDE_NARROW}")
    size = sum(e.file.file_size for e in session.table("wn").table.scan_files())
    session.sql(f"ALTER TABLE wn SET TBLPROPERTIES ('target-file-size' = '{-(-size // 16)}')")
    session.sql("CALL sys.compact(table => 'wn', order_strategy => 'zorder', order_by => 'k,d')")
    for column, top in (("k", 6_000_000), ("d", 2_500)):
        kept = []
        for start in (0.03, 0.41, 0.77):
            lo, hi = int(top * start), int(top * start) + top // 100
            pred = f"{column} BETWEEN {lo} AND {hi}"
            session.sql(f"SELECT * FROM wn WHERE {pred}").collect()
            r = session.last_reports[0]
            assert r.total_files == 16
            kept.append(r.kept_files)
            got = sorted(map(tuple, session.sql(f"SELECT * FROM wn WHERE {pred}").collect()))
            want = sorted(map(tuple, session.sql(f"SELECT * FROM wn_plain WHERE {pred}").collect()))
            assert got == want and got, pred
        assert sum(kept) / len(kept) <= 2 * 4, f"{column}: a 1% range kept {kept} of 16 files"


def test_clustered_insert_computes_a_shuffled_input_twice(session) -> None:  # type: ignore[no-untyped-def]
    """A clustered INSERT runs its input's shuffle map stage twice, for the sampling job and
    the write, and counts the input's partitions in the sampling job: under adaptive
    execution asking the input for them (``df.rdd``) ran that stage a third time."""
    session.sql("CREATE TABLE agg (a BIGINT, b BIGINT, n BIGINT) WITH ('clustering.columns'='a,b')")
    sc = session.spark.sparkContext
    group = "lakeskip-clustered-shuffled-insert"
    sc.setJobGroup(group, "clustered INSERT of a GROUP BY")
    try:  # the input's map stage: 3 tasks (3 range partitions; shuffle partitions are 2)
        session.sql(
            "INSERT INTO agg SELECT id % 97 AS a, id % 89 AS b, count(*) AS n "
            "FROM range(0, 20000, 1, 3) GROUP BY id % 97, id % 89"
        )
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    tracker = sc.statusTracker()
    stages = [
        info
        for job in tracker.getJobIdsForGroup(group)
        if (job_info := tracker.getJobInfo(job)) is not None
        for stage in job_info.stageIds
        if (info := tracker.getStageInfo(stage)) is not None
    ]
    ran = [(st.name, st.numTasks) for st in stages if st.numCompletedTasks > 0]
    assert sum(n == 3 for _, n in ran) == 2, ran
    assert session.sql("SELECT count(*), sum(n) FROM agg").collect()[0][:] == (97 * 89, 20000)
