"""Primary-key writes in bounded memory through Spark: a tiny ``write-buffer-size`` spills
sorted runs in the write tasks, and the table holds what the unbounded write and a plain
Spark "latest row per key" give."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from lakeskip.spark.write.writer import last_write_timings


def test_tiny_write_buffer_spills_and_matches_spark(session: Any) -> None:
    spark = session.spark
    name = session.catalog_name
    statements = [  # (first key, last key, step, tag): keys unique within a statement
        (0, 6000, 1, "a"),
        (3000, 9000, 2, "b"),
        (0, 9000, 7, "c"),
    ]
    for table, props in (
        ("tiny", ", 'write-buffer-size' = '16 kb', 'local-sort.max-num-file-handles' = '2'"),
        ("big", ""),
    ):
        spark.sql(
            f"CREATE TABLE {name}.default.{table} (id INT, v STRING, n BIGINT, "
            f"PRIMARY KEY (id) NOT ENFORCED) TBLPROPERTIES ('bucket' = '2'{props})"
        )
        for lo, hi, step, tag in statements:
            session.sql(
                f"INSERT INTO {table} SELECT CAST(id AS INT), "
                f"concat('{tag}', CAST(id AS STRING)), id * 3 "
                f"FROM range({lo}, {hi}, {step})"
            )
            timings = last_write_timings()
            assert timings is not None
            if table == "tiny":
                assert timings.spilled > 0  # the tasks wrote sorted runs to local disk
            else:
                assert timings.spilled == 0
    parts = [
        spark.range(lo, hi, step).select(
            F.col("id").cast("int").alias("id"),
            F.concat(F.lit(tag), F.col("id").cast("string")).alias("v"),
            (F.col("id") * 3).alias("n"),
            F.lit(i).alias("stmt"),
        )
        for i, (lo, hi, step, tag) in enumerate(statements)
    ]
    union = parts[0].unionByName(parts[1]).unionByName(parts[2])
    newest = Window.partitionBy("id").orderBy(F.col("stmt").desc())
    oracle = union.withColumn("r", F.row_number().over(newest)).where("r = 1").drop("r", "stmt")
    want = sorted(tuple(r) for r in oracle.collect())
    tiny = sorted(tuple(r) for r in spark.table(f"{name}.default.tiny").collect())
    big = sorted(tuple(r) for r in spark.table(f"{name}.default.big").collect())
    assert tiny == want
    assert big == want


def test_universal_compaction_after_upserts(session: Any) -> None:
    """Small upserts into a big bucket: each write is followed by universal compaction
    (trigger 3), the bucket never keeps more runs than that, the big top-level run is not
    rewritten, and the rows are the Spark oracle's."""
    from lakeskip.catalog.format.snapshot import CommitKind
    from lakeskip.catalog.write.universal import bucket_runs

    spark = session.spark
    session.sql(
        "CREATE TABLE u (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) TBLPROPERTIES "
        "('bucket' = '1', 'num-sorted-run.compaction-trigger' = '3')"
    )
    session.sql("INSERT INTO u SELECT CAST(id AS INT), 'base' FROM range(0, 20000)")
    table = session.catalog.get_table("default.u")
    tops: set[frozenset[str]] = set()
    written = []
    for w in range(1, 9):
        previous = table.refresh().scan_files()
        before = {e.file.file_name for e in previous}
        session.sql(
            f"INSERT INTO u SELECT CAST(id * 97 % 20000 AS INT), 'w{w}' "
            f"FROM range({w * 100}, {w * 100 + 200})"
        )
        live = table.refresh().scan_files()
        assert len(bucket_runs(live)) <= 3
        top = frozenset(e.file.file_name for e in live if e.file.level == 3)
        if any(e.file.level == 3 for e in previous):  # the base is compacted to the top
            tops.add(top)
            written.append(sum(e.file.file_size for e in live if e.file.file_name not in before))
    kinds = [s.commit_kind for s in table.refresh().list_snapshots()]
    assert kinds.count(CommitKind.COMPACT) >= 2
    assert len(written) >= 4 and len(tops) == 1  # the 20000-key run stayed where it was
    total = sum(e.file.file_size for e in table.refresh().scan_files())
    # an upsert of 1 % of the keys, with its compaction, wrote a small part of the table
    assert max(written) < total * 0.15, (written, total)
    want = dict.fromkeys(range(20000), "base")
    for w in range(1, 9):
        for i in range(w * 100, w * 100 + 200):
            want[i * 97 % 20000] = f"w{w}"
    got = {r[0]: r[1] for r in spark.table(f"{session.catalog_name}.default.u").collect()}
    assert got == want
    # write-only (Paimon's option): writes leave the compaction to CALL sys.compact
    session.sql("ALTER TABLE u SET TBLPROPERTIES ('write-only' = 'true')")
    compactions = kinds.count(CommitKind.COMPACT)
    for w in range(3):
        session.sql(f"INSERT INTO u VALUES ({w}, 'x{w}')")
    kinds = [s.commit_kind for s in table.refresh().list_snapshots()]
    assert kinds.count(CommitKind.COMPACT) == compactions
    assert len(bucket_runs(table.refresh().scan_files())) > 3
