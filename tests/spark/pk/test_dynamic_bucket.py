"""Dynamic bucket mode (``bucket = -1``, the default for primary-key tables) through Spark:
the assigner spreads keys over buckets in several tasks, a key never moves, buckets grow at
``dynamic-bucket.target-row-num``, and reads, DML, deletion vectors, compaction, rollback and
expiry see the same rows as a plain-Python model."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeskip.catalog.format.hash_index import HASH_INDEX, hash_entries, key_hashes, read_hash_index
from lakeskip.types import BIGINT


def _bucket_keys(session: Any, name: str) -> dict[int, set[int]]:
    """bucket -> ids in its live files (every version, deletes included)."""
    table = session.table(name).table
    out: dict[int, set[int]] = defaultdict(set)
    for e in table.scan_files():
        with table.file_io.open_input(table.data_file_path(e)) as f:
            data = pq.read_table(f, columns=["_KEY_id"])
        out[e.bucket].update(data.column("_KEY_id").to_pylist())
    return dict(out)


def _hash_index(session: Any, name: str) -> dict[int, set[int]]:
    table = session.table(name).table
    entries = hash_entries(table.index_entries(table.latest_snapshot()))
    return {
        b: set(read_hash_index(table.file_io, table.path, m).tolist())
        for (_, b), m in entries.items()
    }


def _check_layout(session: Any, name: str, target: int) -> dict[int, set[int]]:
    buckets = _bucket_keys(session, name)
    seen: dict[int, int] = {}
    for b, ids in buckets.items():
        for i in ids:
            assert seen.setdefault(i, b) == b, f"key {i} in buckets {seen[i]} and {b}"
    index = _hash_index(session, name)
    for b, ids in buckets.items():
        want = set(key_hashes([pa.array(sorted(ids), pa.int64())], (BIGINT,)).tolist())
        assert want <= index[b]  # every live key's hash is in its bucket's index
        assert len(index[b]) <= target
    all_hashes = [h for hs in index.values() for h in hs]
    assert len(all_hashes) == len(set(all_hashes))  # no hash in two buckets
    return buckets


def test_dynamic_bucket_default_write_read_dml(session: Any) -> None:
    s = session
    s.sql("CREATE DATABASE db")
    s.sql(
        "CREATE TABLE db.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('dynamic-bucket.target-row-num' = '300')"
    )
    ddl = s.sql("SHOW CREATE TABLE db.t").collect()[0][0]
    assert re.search(r"'bucket' = '-1'", ddl), ddl
    model: dict[int, str] = {}
    s.sql("INSERT INTO db.t SELECT id, concat('a', id) FROM range(0, 1000)")
    model.update({i: f"a{i}" for i in range(1000)})
    buckets = _check_layout(s, "db.t", 300)
    # 2 assigners (local[2]): 1000 keys at 300 per bucket -> at least 4 buckets, both parities
    assert len(buckets) >= 4 and {b % 2 for b in buckets} == {0, 1}
    s.sql("INSERT INTO db.t SELECT id, concat('b', id) FROM range(500, 1600)")
    model.update({i: f"b{i}" for i in range(500, 1600)})
    _check_layout(s, "db.t", 300)

    def rows() -> dict[int, str]:
        return {r[0]: r[1] for r in s.sql("SELECT id, v FROM db.t").collect()}

    assert rows() == model
    assert s.sql("SELECT v FROM db.t WHERE id = 777").collect()[0][0] == "b777"
    s.sql("DELETE FROM db.t WHERE id % 7 = 0")
    model = {k: v for k, v in model.items() if k % 7}
    s.sql("UPDATE db.t SET v = 'u' WHERE id BETWEEN 100 AND 120")
    model.update({k: "u" for k in model if 100 <= k <= 120})
    s.spark.createDataFrame(
        [(5, "m"), (7, "m7"), (5000, "new")], "id BIGINT, v STRING"
    ).createOrReplaceTempView("src")
    s.sql(
        "MERGE INTO db.t AS t USING src ON t.id = src.id "
        "WHEN MATCHED THEN UPDATE SET v = src.v WHEN NOT MATCHED THEN INSERT *"
    )
    model.update({5: "m", 7: "m7", 5000: "new"})
    assert rows() == model
    _check_layout(s, "db.t", 300)
    before = s.table("db.t").table.latest_snapshot()
    s.sql("CALL sys.compact(table => 'db.t')")
    assert rows() == model
    _check_layout(s, "db.t", 300)
    # a one-row write runs one wave of tasks (P = default parallelism), not one task per
    # shuffle partition: with spark.sql.shuffle.partitions = 50 it ran 50 write tasks
    sc = s.spark.sparkContext
    s.spark.conf.set("spark.sql.shuffle.partitions", "50")
    sc.setJobGroup("lakeskip-small-write", "one-row INSERT")
    try:
        s.sql("INSERT INTO db.t VALUES (9000, 'late')")
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        s.spark.conf.set("spark.sql.shuffle.partitions", "2")
    tracker = sc.statusTracker()
    stages = [
        info
        for job in tracker.getJobIdsForGroup("lakeskip-small-write")
        for stage in (tracker.getJobInfo(job).stageIds if tracker.getJobInfo(job) else [])
        if (info := tracker.getStageInfo(stage)) is not None
    ]
    assert stages and max(st.numTasks for st in stages) <= sc.defaultParallelism, [
        (st.name, st.numTasks) for st in stages
    ]
    s.sql(f"CALL sys.rollback(table => 'db.t', snapshot => {before.id})")
    assert rows() == model
    index = _hash_index(s, "db.t")
    late = int(key_hashes([pa.array([9000], pa.int64())], (BIGINT,))[0])
    assert all(late not in hs for hs in index.values())  # the rolled-back key's hash left
    s.sql("INSERT OVERWRITE db.t SELECT id, 'o' FROM range(0, 10)")
    assert rows() == dict.fromkeys(range(10), "o")
    buckets = _check_layout(s, "db.t", 300)
    assert set().union(*_hash_index(s, "db.t").values()) == set(
        key_hashes([pa.array(np.arange(10), pa.int64())], (BIGINT,)).tolist()
    )
    assert sum(len(v) for v in buckets.values()) == 10
    table = s.table("db.t").table
    types = {e.index_file.index_type for e in table.index_entries(table.latest_snapshot())}
    assert types == {HASH_INDEX}
    # expiry deletes the HASH files only expired snapshots named; the live ones stay
    s.sql("CALL sys.expire_snapshots(table => 'db.t', retain_max => 1, retain_min => 1)")
    live = {e.index_file.file_name for e in table.index_entries(table.latest_snapshot())}
    on_disk = {p.name for p in (Path(table.path) / "index").iterdir()}
    assert on_disk == live
    assert rows() == dict.fromkeys(range(10), "o")
