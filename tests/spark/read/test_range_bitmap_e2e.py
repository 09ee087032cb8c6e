"""range-bitmap end to end: written in Spark tasks, added by rewrite_file_index, and used by
the planner where min/max stats cannot help (every file spans the whole value range)."""

from __future__ import annotations

import os

from lakeskip.spark import input_files


def _fill(session, table: str) -> None:  # type: ignore[no-untyped-def]
    # file f holds v = 1000 * j + 10 * f and names '<letter j><f>': every file's min/max
    # spans (almost) everything, so only an index can tell the files apart
    for f in range(4):
        values = ", ".join(
            f"({1000 * j + 10 * f}, '{chr(ord('a') + j)}{f}', {(1000 * j + 10 * f) / 7.0})"
            for j in range(10)
        )
        session.sql(f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")


CASES = {
    "v BETWEEN 2005 AND 2015": 1,
    "v > 9020": 1,
    "v >= 9020": 2,
    "v < 10 OR v = 5030": 2,
    "v IN (3010, 4010, 7777)": 1,
    "name = 'c2'": 1,
    "name >= 'j3'": 1,
    "name LIKE 'e1%'": 1,
    "d BETWEEN 287.0 AND 288.0": 1,
    "d = 0.0": 1,
    "v <> 10": 4,
    "v = 5": 0,
}


def _check(session, table: str, cases: dict[str, int]) -> None:  # type: ignore[no-untyped-def]
    files = session.table(table).files()
    for where, expected in cases.items():
        df = session.sql(f"SELECT * FROM {table} WHERE {where}")
        got = {os.path.basename(p) for p in input_files(df)}
        assert len(got) == expected, f"{where}: read {len(got)} files, expected {expected}"
        plain = session.spark.read.parquet(*files).where(where)
        assert sorted(map(tuple, df.collect())) == sorted(map(tuple, plain.collect())), where


def test_range_bitmap_prunes_where_stats_cannot(session) -> None:  # type: ignore[no-untyped-def]
    session.sql(
        "CREATE TABLE rb (v BIGINT, name STRING, d DOUBLE) WITH ("
        "'file-index.range-bitmap.columns' = 'v,name,d', "
        "'file-index.range-bitmap.name.chunk-size' = '8b')"
    )
    _fill(session, "rb")
    _check(session, "rb", CASES)
    report = session.last_reports[0]
    assert report.kept_files == 0 and report.total_files == 4


def test_rewrite_file_index_adds_range_bitmap(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE rb2 (v BIGINT, name STRING, d DOUBLE)")
    _fill(session, "rb2")
    _check(session, "rb2", {"v BETWEEN 2005 AND 2015": 4})  # stats alone: every file
    session.sql("ALTER TABLE rb2 SET ('file-index.range-bitmap.columns' = 'v,name,d')")
    r = session.sql("CALL sys.rewrite_file_index(table => 'rb2')").collect()[0]
    assert r["files_rewritten"] == 4 and r["indexes_written"] == 12
    _check(session, "rb2", CASES)
