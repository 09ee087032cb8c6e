"""Structured Streaming into lakeskip tables: ``writeStream.toTable`` writes each micro-batch
with the batch writer and commits it exactly once (the query id and batch id are the
snapshot's commit user and identifier), so a batch Spark runs again after a restart lands
once. The kill -9 tests are in ``test_streaming_kill.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lakeskip.catalog.format.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind


def _json_files(directory: Path, batches: list[list[dict[str, Any]]], start: int = 0) -> None:
    """One JSON-lines file per batch (a file source with maxFilesPerTrigger=1 reads one per
    micro-batch, oldest first: each file is given its own modification time, a second
    after the previous one's, so that the order of the batches is the order of the files)."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches, start):
        tmp = directory / f".f{i:04d}.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(tmp, (1_700_000_000 + i, 1_700_000_000 + i))
        os.replace(tmp, directory / f"f{i:04d}.json")


def _stream(spark: Any, source: Path, schema: str) -> Any:
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(source))


def _run(df: Any, table: str, checkpoint: Path, **trigger: Any) -> Any:
    q = (
        df.writeStream.option("checkpointLocation", str(checkpoint))
        .trigger(**(trigger or {"availableNow": True}))
        .toTable(table)
    )
    q.awaitTermination()
    return q


def _ids(spark: Any, table: str) -> list[int]:
    return sorted(r[0] for r in spark.sql(f"SELECT id FROM {table}").collect())


def test_append_stream_commits_one_snapshot_per_batch(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql(
        "CREATE TABLE lakeskip.db.events (id BIGINT, cat STRING, v DOUBLE) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns' = 'cat')"
    )
    batches = [
        [{"id": b * 10 + i, "cat": f"c{b}", "v": float(i)} for i in range(4)] for b in range(5)
    ]
    _json_files(tmp_path / "in", batches)
    # columns by name, in another order than the table's
    df = _stream(spark, tmp_path / "in", "v DOUBLE, id BIGINT, cat STRING")
    q = _run(df, "lakeskip.db.events", tmp_path / "ck")
    assert _ids(spark, "lakeskip.db.events") == sorted(r["id"] for b in batches for r in b)
    table = session.catalog.get_table("db.events")
    appends = [s for s in table.list_snapshots() if s.commit_kind is CommitKind.APPEND]
    assert [(s.commit_user, s.commit_identifier) for s in appends] == [
        (q.id, b) for b in range(5)
    ], "one snapshot per micro-batch, with the query id and batch id"
    files = table.scan_files()
    assert all(e.file.embedded_index or e.file.extra_files for e in files), (
        "every file has its bloom-filter index, as in a batch write"
    )
    hits = spark.sql("SELECT id FROM lakeskip.db.events WHERE cat = 'c3'").collect()
    assert sorted(r[0] for r in hits) == [30, 31, 32, 33]


def test_a_batch_run_again_after_a_restart_lands_once(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    """The driver died after the commit of batch N but before Spark's commit log recorded
    it: on restart Spark runs batch N again (same offsets) and lakeskip writes nothing."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql("CREATE TABLE lakeskip.db.r (id BIGINT, v STRING)")
    batches = [[{"id": b * 10 + i, "v": f"b{b}"} for i in range(3)] for b in range(4)]
    _json_files(tmp_path / "in", batches)
    ck = tmp_path / "ck"
    q = _run(_stream(spark, tmp_path / "in", "id BIGINT, v STRING"), "lakeskip.db.r", ck)
    table = session.catalog.get_table("db.r")
    before = table.latest_snapshot()
    assert before is not None and before.commit_identifier == 3
    for n in (2, 3):  # Spark forgets it committed batches 2 and 3
        (ck / "commits" / str(n)).unlink()
        (ck / "commits" / f".{n}.crc").unlink(missing_ok=True)
    _json_files(tmp_path / "in", [[{"id": 40, "v": "b4"}]], start=4)
    q2 = _run(_stream(spark, tmp_path / "in", "id BIGINT, v STRING"), "lakeskip.db.r", ck)
    assert q2.id == q.id, "restarted from the checkpoint: the same query"
    assert (ck / "commits" / "3").exists(), "Spark ran batch 3 again"
    ids = _ids(spark, "lakeskip.db.r")
    assert ids == sorted([*(r["id"] for b in batches for r in b), 40]), (
        f"batches 2 and 3 ran twice but must land once: {ids}"
    )
    after = [s for s in table.list_snapshots() if s.id > before.id]
    assert [s.commit_identifier for s in after if s.commit_user == q.id] == [4], (
        "only the new batch committed (then a compaction of 5 small files)"
    )


def test_primary_key_stream_upserts_latest_per_key(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql(
        "CREATE TABLE lakeskip.db.pk (id BIGINT, v STRING, n INT) TBLPROPERTIES "
        "('primary-key' = 'id', 'bucket' = '2', 'deletion-vectors.enabled' = 'true')"
    )
    batches = [[{"id": k, "v": f"b{b}", "n": b} for k in range(b, b + 5)] for b in range(6)]
    _json_files(tmp_path / "in", batches)
    _run(
        _stream(spark, tmp_path / "in", "id BIGINT, v STRING, n INT"),
        "lakeskip.db.pk",
        tmp_path / "ck",
    )
    latest: dict[int, tuple[Any, ...]] = {}
    for b in batches:
        for r in b:
            latest[r["id"]] = (r["id"], r["v"], r["n"])
    got = sorted(tuple(r) for r in spark.sql("SELECT id, v, n FROM lakeskip.db.pk").collect())
    assert got == sorted(latest.values()), "the latest version of every key, once"


def test_processing_time_trigger_and_complete_mode(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql("CREATE TABLE lakeskip.db.counts (cat STRING, c BIGINT)")
    _json_files(tmp_path / "in", [[{"id": i, "cat": f"c{i % 2}"} for i in range(5)]])
    counts = (
        _stream(spark, tmp_path / "in", "id BIGINT, cat STRING")
        .groupBy("cat")
        .count()
        .withColumnRenamed("count", "c")
    )
    q = (
        counts.writeStream.outputMode("complete")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="200 milliseconds")
        .toTable("lakeskip.db.counts")
    )
    try:
        q.processAllAvailable()
        _json_files(tmp_path / "in", [[{"id": 9, "cat": "c1"}]], start=1)
        q.processAllAvailable()
    finally:
        q.stop()
    got = sorted(tuple(r) for r in spark.sql("SELECT cat, c FROM lakeskip.db.counts").collect())
    assert got == [("c0", 3), ("c1", 3)], "complete mode: each batch replaces the table"


def test_foreach_batch_writes_stay_batch_writes(session: Any, spark: Any, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql("CREATE TABLE lakeskip.db.fb (id BIGINT, v STRING)")
    _json_files(tmp_path / "in", [[{"id": b, "v": "x"}] for b in range(3)])

    def each(batch: Any, batch_id: int) -> None:
        batch.writeTo("lakeskip.db.fb").append()

    q = (
        _stream(spark, tmp_path / "in", "id BIGINT, v STRING")
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    assert _ids(spark, "lakeskip.db.fb") == [0, 1, 2]
    snaps = session.catalog.get_table("db.fb").list_snapshots()
    assert {s.commit_identifier for s in snaps} == {BATCH_COMMIT_IDENTIFIER}


def test_small_batches_are_compacted_and_lookups_stay_pruned(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    """12 one-file batches into an unaware-bucket append table: the partition's small files
    are compacted whenever ``compaction.min.file-num`` (4 here) of them exist, so no
    snapshot has more than 4 live files (the bound: ``compaction.min.file-num`` - 1 + the
    files of one batch); point lookups on the bloom-indexed column keep at most 1.3x the files the same
    rows written in one batch keep."""
    from lakeskip.spark.front.catalog_setup import input_files

    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    props = (
        "'file-index.bloom-filter.columns' = 'uid', 'file-index.bloom-filter.uid.fpp' = '0.01', "
        "'compaction.min.file-num' = '4'"
    )
    for name in ("streamed", "one_batch"):
        spark.sql(
            f"CREATE TABLE lakeskip.db.{name} (id BIGINT, uid STRING, cat STRING) "
            f"TBLPROPERTIES ({props})"
        )
    batches = [
        [{"id": b * 30 + i, "uid": f"u{b * 30 + i}", "cat": f"c{i % 7}"} for i in range(30)]
        for b in range(12)
    ]
    _json_files(tmp_path / "in", batches)
    schema = "id BIGINT, uid STRING, cat STRING"
    _run(_stream(spark, tmp_path / "in", schema), "lakeskip.db.streamed", tmp_path / "ck")
    spark.read.schema(schema).json(str(tmp_path / "in")).writeTo("lakeskip.db.one_batch").append()
    table = session.catalog.get_table("db.streamed")
    live = [len(table.scan_files(s)) for s in table.list_snapshots()]
    assert max(live) <= 4, f"live files per snapshot: {live}"
    assert any(s.commit_kind.value == "COMPACT" for s in table.list_snapshots())
    assert _ids(spark, "lakeskip.db.streamed") == _ids(spark, "lakeskip.db.one_batch")
    kept = {"streamed": 0, "one_batch": 0}
    for uid in ("u0", "u77", "u301", "u150", "u359", "u123", "u999999"):
        for name in kept:
            df = spark.sql(f"SELECT id FROM lakeskip.db.{name} WHERE uid = '{uid}'")
            want = [] if uid == "u999999" else [int(uid[1:])]
            assert [r[0] for r in df.collect()] == want
            kept[name] += len(input_files(df))
    assert kept["streamed"] <= 1.3 * kept["one_batch"], f"files kept by 7 lookups: {kept}"


def test_incremental_clustering_keeps_clustering_lookups_as_one_batch(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    """8 one-file batches, keys spread over the whole range in each, into a table with
    ``clustering.incremental = true``: the background clustering the batches hand their
    partitions to leaves, once it is done, only level-1 (clustered) files, more than one,
    holding exactly the input rows; a point lookup on ``k`` then
    keeps at most 1.3x the files of the same rows written in one batch into a table
    clustered at write time (counted by Spark's own input files)."""
    from lakeskip.spark.front.catalog_setup import input_files
    from lakeskip.spark.write.stream_compaction import wait_for_stream_clustering

    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    props = "'clustering.columns' = 'k', 'target-file-size' = '16 kb'"
    spark.sql(
        "CREATE TABLE lakeskip.db.streamed (k BIGINT, pad STRING) "
        f"TBLPROPERTIES ({props}, 'clustering.incremental' = 'true')"
    )
    spark.sql(f"CREATE TABLE lakeskip.db.one_batch (k BIGINT, pad STRING) TBLPROPERTIES ({props})")
    batches = [
        [{"k": (b * 211 + i * 7919) % 100_003, "pad": f"p{b}-{i}" * 8} for i in range(400)]
        for b in range(8)
    ]
    _json_files(tmp_path / "in", batches)
    schema = "k BIGINT, pad STRING"
    _run(_stream(spark, tmp_path / "in", schema), "lakeskip.db.streamed", tmp_path / "ck")
    assert wait_for_stream_clustering(timeout=300), "the clustering thread did not finish"
    spark.read.schema(schema).json(str(tmp_path / "in")).writeTo("lakeskip.db.one_batch").append()
    table = session.catalog.get_table("db.streamed")
    kinds = [s.commit_kind for s in table.list_snapshots()]
    assert kinds.count(CommitKind.APPEND) == 8 and CommitKind.COMPACT in kinds, kinds
    live = table.scan_files()
    assert live and all(e.file.level >= 1 for e in live), [e.file.level for e in live]
    assert len(live) > 1  # more than one file: the lookup can skip
    want = sorted((r["k"], r["pad"]) for b in batches for r in b)
    got = sorted(tuple(r) for r in spark.sql("SELECT k, pad FROM lakeskip.db.streamed").collect())
    assert got == want, "the clustered table holds exactly the input rows"
    kept = {"streamed": 0, "one_batch": 0}
    for k in sorted({r[0] for r in want})[::97][:8]:
        for name in kept:
            df = spark.sql(f"SELECT k FROM lakeskip.db.{name} WHERE k = {k}")
            assert len(df.collect()) == sum(1 for r in want if r[0] == k)
            kept[name] += len(input_files(df))
    assert kept["streamed"] <= 1.3 * kept["one_batch"], f"files kept by 8 lookups: {kept}"


def test_while_batches_arrive_lookups_and_unclustered_files_stay_bounded(
    session: Any, spark: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """The clustering made slow (each round first sleeps), so that batches keep arriving
    while it runs, with ``num-sorted-run.stop-trigger`` = 3. At every snapshot the stream
    committed: a partition holds at most 2 + the latest batch's files unclustered (at 3 a
    batch waits for the clustering), and a point lookup on the clustering column, for keys
    committed by then, keeps at most 1.3x the files the same keys keep on a table the same
    rows were written to in one write (same options, clustered as written): the files still
    waiting, and the clustered ones, carry the bloom filter on ``k`` such a table implies."""
    import time

    import pyarrow.parquet as pq

    from lakeskip.expressions import EqualTo
    from lakeskip.planner.scan import ScanPlanner
    from lakeskip.planner.stream import added_files
    from lakeskip.spark.write import stream_compaction

    cluster = stream_compaction.cluster_incrementally

    def slowly(*args: Any, **kwargs: Any) -> Any:
        time.sleep(3)
        return cluster(*args, **kwargs)

    monkeypatch.setattr(stream_compaction, "cluster_incrementally", slowly)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    props = "'clustering.columns' = 'k', 'target-file-size' = '16 kb'"
    spark.sql(
        "CREATE TABLE lakeskip.db.streamed (k BIGINT, pad STRING) "
        f"TBLPROPERTIES ({props}, 'clustering.incremental' = 'true', "
        "'num-sorted-run.stop-trigger' = '3', 'file-index.bloom-filter.k.items' = '2000', "
        "'file-index.bloom-filter.k.fpp' = '0.01')"
    )
    spark.sql(f"CREATE TABLE lakeskip.db.one_batch (k BIGINT, pad STRING) TBLPROPERTIES ({props})")
    batches = [
        [{"k": (b * 211 + i * 7919) % 100_003, "pad": f"p{b}-{i}" * 8} for i in range(300)]
        for b in range(10)
    ]
    _json_files(tmp_path / "in", batches)
    schema = "k BIGINT, pad STRING"
    _run(_stream(spark, tmp_path / "in", schema), "lakeskip.db.streamed", tmp_path / "ck")
    assert stream_compaction.wait_for_stream_clustering(timeout=300)
    spark.read.schema(schema).json(str(tmp_path / "in")).writeTo("lakeskip.db.one_batch").append()
    table = session.catalog.get_table("db.streamed")
    one_write = ScanPlanner(session.catalog.get_table("db.one_batch"))
    present: list[int] = []
    last_batch = 0
    waiting = []
    for s in table.list_snapshots():
        if s.commit_kind is CommitKind.APPEND:
            added = added_files(table, s)
            last_batch = len(added)
            for e in added:
                present += pq.read_table(table.data_file_path(e), columns=["k"])["k"].to_pylist()
        level0 = sum(1 for e in table.scan_files(s) if e.file.level == 0)
        waiting.append(level0)
        assert level0 <= 3 - 1 + last_batch, f"snapshot {s.id}: {level0} files unclustered"
        keys = present[:: max(1, len(present) // 10)][:10]
        planner = ScanPlanner(table)
        kept = sum(len(planner.plan(EqualTo("k", k), snapshot=s).files) for k in keys)
        once = sum(len(one_write.plan(EqualTo("k", k)).files) for k in keys)
        assert kept <= 1.3 * once, f"snapshot {s.id}: {kept} files kept, one write {once}"
    assert max(waiting) >= 2, f"no batch arrived while the clustering ran: {waiting}"
    want = sorted((r["k"], r["pad"]) for b in batches for r in b)
    got = sorted(tuple(r) for r in spark.sql("SELECT k, pad FROM lakeskip.db.streamed").collect())
    assert got == want
