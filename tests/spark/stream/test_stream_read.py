"""Structured Streaming out of lakeskip tables: ``spark.readStream.table`` delivers the table's
latest snapshot whole, then the files each APPEND snapshot adds (COMPACT snapshots skipped;
a primary-key table: the versions each write added),
with snapshot ids as offsets; a query restarted from its checkpoint goes on where it stopped,
and a filter over the stream prunes each micro-batch's files. The oracle is the rows the test
wrote."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from lakeskip.catalog.format.snapshot import CommitKind


def _insert(spark: Any, table: str, rows: list[tuple[int, str, float]]) -> None:
    """One snapshot; one file per partition (one Spark task writes them)."""
    df = spark.createDataFrame(rows, "id BIGINT, p STRING, v DOUBLE").coalesce(1)
    df.writeTo(table).append()


def _rows(spark: Any, table: str) -> list[tuple[int, str, float]]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT id, p, v FROM {table}").collect())


def _copy(spark: Any, source: str, target: str, checkpoint: Path, **options: str) -> Any:
    reader = spark.readStream
    for k, v in options.items():
        reader = reader.option(k, v)
    q = (
        reader.table(source)
        .writeStream.option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .toTable(target)
    )
    q.awaitTermination()
    return q


def _create(spark: Any, name: str) -> None:
    # the partition column sits between the others: the stream's rows must keep the
    # table's column order although each batch's Parquet scan puts partition columns last
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p STRING, v DOUBLE) PARTITIONED BY (p)")


def test_stream_reads_the_snapshot_then_each_append_and_resumes_after_restart(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    _create(spark, "lakeskip.db.src")
    _create(spark, "lakeskip.db.dst")
    written: list[tuple[int, str, float]] = []
    for b in range(2):
        batch = [(b * 10 + i, f"p{i % 2}", float(i)) for i in range(5)]
        _insert(spark, "lakeskip.db.src", batch)
        written += batch
    ck = tmp_path / "ck"
    q1 = _copy(spark, "lakeskip.db.src", "lakeskip.db.dst", ck)
    assert _rows(spark, "lakeskip.db.dst") == sorted(written)
    # the first micro-batch is the latest snapshot whole (two appends, one batch)
    assert q1.lastProgress["numInputRows"] == len(written)

    for b in range(2, 5):
        batch = [(b * 10 + i, f"p{i % 3}", float(i)) for i in range(4)]
        _insert(spark, "lakeskip.db.src", batch)
        written += batch
        if b == 3:  # a COMPACT snapshot rewrites rows already delivered: not delivered again
            spark.sql("CALL lakeskip.sys.compact(table => 'db.src')")
    kinds = [s.commit_kind for s in session.catalog.get_table("db.src").list_snapshots()]
    assert CommitKind.COMPACT in kinds
    _copy(spark, "lakeskip.db.src", "lakeskip.db.dst", ck)
    assert _rows(spark, "lakeskip.db.dst") == sorted(written), "every row once after restart"

    # nothing new: a third run delivers nothing
    q3 = _copy(spark, "lakeskip.db.src", "lakeskip.db.dst", ck)
    assert _rows(spark, "lakeskip.db.dst") == sorted(written)
    assert sum(p["numInputRows"] for p in q3.recentProgress) == 0


def test_scan_modes_and_max_files_per_trigger(session: Any, spark: Any, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    _create(spark, "lakeskip.db.modes")
    batches = [[(b * 10 + i, "a", float(b)) for i in range(3)] for b in range(4)]
    for batch in batches:
        _insert(spark, "lakeskip.db.modes", batch)  # snapshots 1..4, one file each

    def run(name: str, **options: str) -> tuple[list[tuple[int, str, float]], Any]:
        spark.sql(f"CREATE TABLE lakeskip.db.{name} (id BIGINT, p STRING, v DOUBLE)")
        q = _copy(spark, "lakeskip.db.modes", f"lakeskip.db.{name}", tmp_path / name, **options)
        return _rows(spark, f"lakeskip.db.{name}"), q

    def flat(bs: list[list[tuple[int, str, float]]]) -> list[tuple[int, str, float]]:
        return sorted(r for b in bs for r in b)

    rows, _ = run("from3", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "3"})
    assert rows == flat(batches[2:])
    rows, _ = run("full2", **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"})
    assert rows == flat(batches)  # snapshot 2 whole (batches 0, 1), then 3 and 4
    rows, _ = run("latest", **{"scan.mode": "latest"})
    assert rows == []  # only what is committed after the start
    rows, q = run(
        "paced", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}, maxFilesPerTrigger="1"
    )
    assert rows == flat(batches)
    assert [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]] == [3, 3, 3, 3]


def test_a_filter_over_the_stream_prunes_each_batch(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql("CREATE TABLE lakeskip.db.pruned (id BIGINT, p STRING, v DOUBLE)")
    for b in range(4):  # one file per insert, id ranges apart: min/max stats separate them
        _insert(spark, "lakeskip.db.pruned", [(b * 100 + i, "x", float(i)) for i in range(10)])
    assert len(session.catalog.get_table("db.pruned").scan_files()) == 4
    got: list[tuple[int, float]] = []

    def collect(df: Any, batch_id: int) -> None:
        got.extend((r.id, r.v) for r in df.collect())

    def run() -> Any:
        q = (
            spark.readStream.table("lakeskip.db.pruned")
            .filter("id = 205 OR id = 305")
            .select("id", "v")
            .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .foreachBatch(collect)
            .start()
        )
        q.awaitTermination()
        return q

    # Spark's Parquet reader would drop the other files' row groups by their own statistics
    # and dictionaries: off, so that the rows read are those of the files lakeskip kept
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        q = run()
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")
    assert sorted(got) == [(205, 5.0), (305, 5.0)]
    # rows read by the stream's scan: the two files that may hold the ids, not all four
    assert sum(p["numInputRows"] for p in q.recentProgress) == 20
    for b in range(4, 6):
        _insert(spark, "lakeskip.db.pruned", [(b * 100 + i, "x", float(i)) for i in range(10)])
    _insert(spark, "lakeskip.db.pruned", [(205, "y", 9.0)])
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        q = run()
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")
    assert sorted(got) == [(205, 5.0), (205, 9.0), (305, 5.0)]
    assert sum(p["numInputRows"] for p in q.recentProgress) == 1, "the 400s and 500s skipped"


def test_a_partial_update_table_is_refused_in_one_line(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql(
        "CREATE TABLE lakeskip.db.keyed (id BIGINT, v DOUBLE) TBLPROPERTIES"
        " ('primary-key' = 'id', 'bucket' = '1', 'merge-engine' = 'partial-update')"
    )
    spark.sql("INSERT INTO lakeskip.db.keyed VALUES (1, 1.0)")
    q = (
        spark.readStream.table("lakeskip.db.keyed")
        .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .format("memory")
        .queryName("keyed_out")
        .start()
    )
    with pytest.raises(Exception, match="merge-engine 'partial-update' is not supported") as err:
        q.awaitTermination()
    assert "streaming read of a primary-key table" in str(err.value)


@pytest.mark.parametrize("dv", [True, False], ids=["deletion-vectors", "merge-on-read"])
def test_primary_key_stream_delivers_each_written_version_once(
    session: Any, spark: Any, tmp_path: Path, dv: bool
) -> None:
    """A primary-key table read as a stream (Paimon's changelog-producer none): the first
    micro-batch is the table, then one micro-batch per write holding exactly the rows that
    write upserted (no retraction for DELETE, nothing for COMPACT), across restarts from the
    checkpoint. Enough writes that a deletion-vector table's lookup write merges old runs
    into its new files (their copied rows must not come again). Oracle: the rows written."""
    from lakeskip.planner.stream import changed_files

    name = f"lakeskip.db.pk_{'dv' if dv else 'mor'}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    props = "'primary-key' = 'id', 'bucket' = '2'" + (
        ", 'deletion-vectors.enabled' = 'true'" if dv else ""
    )
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p STRING, v DOUBLE) TBLPROPERTIES ({props})")
    got: list[list[tuple[int, str, float]]] = []

    def collect(df: Any, batch_id: int) -> None:
        got.append(sorted(tuple(r) for r in df.collect()))

    def run() -> None:
        q = (
            spark.readStream.table(name)
            .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .foreachBatch(collect)
            .start()
        )
        q.awaitTermination()

    def write(rows: list[tuple[int, str, float]]) -> None:
        spark.createDataFrame(rows, "id BIGINT, p STRING, v DOUBLE").writeTo(name).append()

    first = [(i, "a", 1.0) for i in range(10)]
    write(first)
    run()
    assert [b for b in got if b] == [sorted(first)], "the first batch is the table"
    got.clear()
    writes: list[list[tuple[int, str, float]]] = []
    state = {r[0]: r for r in first}  # the table, as the writes and the DELETE leave it
    for w in range(10):  # each write updates some keys and adds others
        rows = [((w * 3 + i) % 14, "b", float(10 + w)) for i in range(5)]
        rows = sorted({r[0]: r for r in rows}.values())
        write(rows)
        writes.append(rows)
        state.update({r[0]: r for r in rows})
        if w == 2:
            spark.sql(f"DELETE FROM {name} WHERE id = 0")  # delivers nothing
            state.pop(0, None)
            spark.sql(f"CALL lakeskip.sys.compact(table => '{name.split('.', 1)[1]}')")
        if w == 5:
            run()  # a restart from the checkpoint in the middle
    run()
    assert [b for b in got if b] == [sorted(r) for r in writes], "each write's versions once"
    table = session.catalog.get_table(name.split(".", 1)[1])
    assert CommitKind.COMPACT in {s.commit_kind for s in table.list_snapshots()}
    if dv:  # the case of old rows merged into a write's new files was met
        assert any(changed_files(table, s)[1] for s in table.list_snapshots())
    table_rows = sorted(tuple(r) for r in spark.sql(f"SELECT id, p, v FROM {name}").collect())
    assert table_rows == sorted(state.values())
    # the batches applied in order as upserts give the table, but for the deleted key
    upserted = {r[0]: r for r in first}
    for batch in got:
        upserted.update({r[0]: r for r in batch})
    assert {k: v for k, v in upserted.items() if k in state} == state
    assert set(upserted) - set(state) <= {0}


def test_rate_source_into_a_table_exactly_once_across_a_restart(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    """Spark's rate source (values 0, 1, 2, ... in order) into an append table, stopped and
    restarted from its checkpoint: the table holds each value of the committed batches once,
    with no gap (a batch lands whole or not at all)."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql("CREATE TABLE lakeskip.db.ticks (value BIGINT, timestamp TIMESTAMP)")

    def run_until(batches: int) -> None:
        q = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 20)
            .load()
            .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(processingTime="500 milliseconds")
            .toTable("lakeskip.db.ticks")
        )
        deadline = time.monotonic() + 120
        while (
            sum(1 for p in q.recentProgress if p["numInputRows"]) < batches
            and time.monotonic() < deadline
        ):
            time.sleep(0.5)
        q.stop()

    def values() -> list[int]:
        return sorted(r[0] for r in spark.sql("SELECT value FROM lakeskip.db.ticks").collect())

    run_until(2)
    first = values()
    assert first and first == list(range(len(first)))
    run_until(2)
    second = values()
    assert len(second) > len(first)
    assert second == list(range(len(second))), "each value once, none lost across the restart"


def test_deletion_vectors_of_the_batch_end_apply(session: Any, spark: Any, tmp_path: Path) -> None:
    """An append table with deletion vectors: each micro-batch delivers its files' rows minus
    those the vectors of its last snapshot delete (a DELETE commits vectors, no files: it
    delivers nothing and retracts nothing, as Paimon's streaming read)."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql(
        "CREATE TABLE lakeskip.db.dv (id BIGINT, p STRING, v DOUBLE) PARTITIONED BY (p) "
        "TBLPROPERTIES ('deletion-vectors.enabled' = 'true')"
    )
    spark.sql("CREATE TABLE lakeskip.db.dv_out (id BIGINT, p STRING, v DOUBLE)")
    a = [(i, "a", float(i)) for i in range(6)]
    _insert(spark, "lakeskip.db.dv", a)
    spark.sql("DELETE FROM lakeskip.db.dv WHERE id = 2")
    _copy(spark, "lakeskip.db.dv", "lakeskip.db.dv_out", tmp_path / "ck")
    want = sorted(r for r in a if r[0] != 2)
    assert _rows(spark, "lakeskip.db.dv_out") == want
    b = [(10 + i, "b", float(i)) for i in range(4)]
    _insert(spark, "lakeskip.db.dv", b)
    spark.sql("DELETE FROM lakeskip.db.dv WHERE id IN (3, 11)")  # 3 was delivered already
    _copy(spark, "lakeskip.db.dv", "lakeskip.db.dv_out", tmp_path / "ck")
    assert _rows(spark, "lakeskip.db.dv_out") == sorted(want + [r for r in b if r[0] != 11])


def test_a_running_stream_sees_each_commit_of_another_writer_once(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    """A query with a processing-time trigger reads the table while this thread commits to it
    (the other application): the sink holds every committed row once."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    _create(spark, "lakeskip.db.live")
    _create(spark, "lakeskip.db.live_out")
    q = (
        spark.readStream.table("lakeskip.db.live")
        .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="200 milliseconds")
        .toTable("lakeskip.db.live_out")
    )
    written: list[tuple[int, str, float]] = []
    try:
        for b in range(6):
            batch = [(b * 10 + i, f"p{i % 2}", float(b)) for i in range(3)]
            _insert(spark, "lakeskip.db.live", batch)
            written += batch
            if b == 2:
                q.processAllAvailable()
                assert _rows(spark, "lakeskip.db.live_out") == sorted(written)
        q.processAllAvailable()
    finally:
        q.stop()
    assert _rows(spark, "lakeskip.db.live_out") == sorted(written)


def test_columns_added_and_renamed_while_a_stream_runs(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    """ALTER TABLE while a stream reads the table: the running query keeps the columns it
    started with and reads every new file by field id (an added column left out, a renamed
    one under its old name); restarted from its checkpoint it has the new columns, the
    files written before them read as null. Oracle: the rows inserted."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    name = "lakeskip.db.evolving"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, v DOUBLE)")
    spark.sql(f"INSERT INTO {name} VALUES (1, 1.0), (2, 2.0)")
    got: list[dict[str, Any]] = []

    def collect(df: Any, batch_id: int) -> None:
        got.extend(r.asDict() for r in df.collect())

    def start() -> Any:
        return (
            spark.readStream.table(name)
            .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(processingTime="200 milliseconds")
            .foreachBatch(collect)
            .start()
        )

    def delivered() -> list[tuple[Any, ...]]:
        return sorted(tuple(sorted(d.items())) for d in got)

    q = start()
    try:
        q.processAllAvailable()
        spark.sql(f"ALTER TABLE {name} ADD COLUMN w STRING")
        spark.sql(f"INSERT INTO {name} VALUES (3, 3.0, 'c')")
        q.processAllAvailable()
        spark.sql(f"ALTER TABLE {name} RENAME COLUMN v TO v2")
        spark.sql(f"INSERT INTO {name} VALUES (4, 4.0, 'd')")
        q.processAllAvailable()
    finally:
        q.stop()
    assert delivered() == sorted(
        tuple(sorted({"id": i, "v": float(i)}.items())) for i in (1, 2, 3, 4)
    ), "the running query: its own columns, the renamed one under its old name"
    got.clear()
    q = start()
    try:
        spark.sql(f"INSERT INTO {name} VALUES (5, 5.0, 'e')")
        q.processAllAvailable()
    finally:
        q.stop()
    assert delivered() == [tuple(sorted({"id": 5, "v2": 5.0, "w": "e"}.items()))]
    # a new query from the start reads the old files with null for the added column
    got.clear()
    q = (
        spark.readStream.table(name)
        .writeStream.option("checkpointLocation", str(tmp_path / "ck2"))
        .trigger(availableNow=True)
        .foreachBatch(collect)
        .start()
    )
    q.awaitTermination()
    want = [(1, 1.0, None), (2, 2.0, None), (3, 3.0, "c"), (4, 4.0, "d"), (5, 5.0, "e")]
    assert delivered() == sorted(
        tuple(sorted({"id": i, "v2": v, "w": w}.items())) for i, v, w in want
    )


def test_a_stream_by_path_is_refused_in_one_line(session: Any, spark: Any, tmp_path: Path) -> None:
    """As batch reads: a table is opened by the lakeskip catalog, not by its folder."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql("CREATE TABLE lakeskip.db.bypath (id BIGINT)")
    spark.sql("INSERT INTO lakeskip.db.bypath VALUES (1)")
    location = session.catalog.get_table("db.bypath").path
    with pytest.raises(Exception, match="not by path"):
        spark.readStream.format("lakeskip").load(str(location))


def test_dml_on_a_deletion_vector_append_table_is_skipped_as_paimon_skips_it(
    session: Any, spark: Any, tmp_path: Path
) -> None:
    """DELETE, UPDATE and MERGE on an append table with deletion vectors commit OVERWRITE
    snapshots, as Paimon's since 1.4 do (2.0.0 included: ``ConflictDetection
    .shouldBeOverwriteCommit``, a commit carrying deletion-vector index files or removed
    files is an OVERWRITE; 0.9 committed the vectors as a COMPACT snapshot after an APPEND
    of the new files), and a stream skips them as Paimon's does by default
    (``streaming-read-overwrite = false``): the rows an UPDATE or MERGE wrote are not
    delivered, the deleted ones not retracted; an INSERT after them is delivered."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql(
        "CREATE TABLE lakeskip.db.dml (id BIGINT, p STRING, v DOUBLE) "
        "TBLPROPERTIES ('deletion-vectors.enabled' = 'true')"
    )
    spark.sql("CREATE TABLE lakeskip.db.dml_out (id BIGINT, p STRING, v DOUBLE)")
    a = [(i, "a", float(i)) for i in range(6)]
    _insert(spark, "lakeskip.db.dml", a)
    _copy(spark, "lakeskip.db.dml", "lakeskip.db.dml_out", tmp_path / "ck")
    assert _rows(spark, "lakeskip.db.dml_out") == sorted(a)
    table = session.catalog.get_table("db.dml")
    before = len(table.list_snapshots())
    spark.sql("DELETE FROM lakeskip.db.dml WHERE id = 1")
    spark.sql("UPDATE lakeskip.db.dml SET v = v + 100 WHERE id = 2")
    source = spark.createDataFrame(
        [(3, "a", 300.0), (9, "m", 9.0)], "id BIGINT, p STRING, v DOUBLE"
    )
    source.createOrReplaceTempView("dml_src")
    spark.sql(
        "MERGE INTO lakeskip.db.dml t USING dml_src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    kinds = [s.commit_kind for s in table.list_snapshots()[before:]]
    assert kinds == [CommitKind.OVERWRITE] * 3, kinds
    b = [(20, "b", 1.0)]
    _insert(spark, "lakeskip.db.dml", b)
    _copy(spark, "lakeskip.db.dml", "lakeskip.db.dml_out", tmp_path / "ck")
    assert _rows(spark, "lakeskip.db.dml_out") == sorted(a + b)
