"""Tables written by Structured Streaming (one snapshot per micro-batch, with the query id and
batch id as commit user and identifier, compacted as the stream runs) read the same in
Paimon 0.9 (Java): an append table whose small files were compacted, and a primary-key table
with deletion vectors upserted by every batch."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.interop


def _files(directory: Path, batches: list[list[dict[str, Any]]]) -> None:
    directory.mkdir(parents=True)
    for i, rows in enumerate(batches):
        path = directory / f"f{i:03d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))


def test_streamed_tables_read_the_same_in_paimon(
    session: Any, spark: Any, paimon_java: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql(
        "CREATE TABLE lakeskip.db.ev (id BIGINT, cat STRING) TBLPROPERTIES "
        "('file-index.bloom-filter.columns' = 'cat', 'compaction.min.file-num' = '3')"
    )
    spark.sql(
        "CREATE TABLE lakeskip.db.pk (id BIGINT, v STRING) TBLPROPERTIES "
        "('primary-key' = 'id', 'bucket' = '2', 'deletion-vectors.enabled' = 'true')"
    )
    _files(
        tmp_path / "ev", [[{"id": b * 10 + i, "cat": f"c{i}"} for i in range(5)] for b in range(4)]
    )
    _files(tmp_path / "pk", [[{"id": k, "v": f"b{b}"} for k in range(b, b + 4)] for b in range(4)])
    for name, schema in (("ev", "id BIGINT, cat STRING"), ("pk", "id BIGINT, v STRING")):
        q = (
            spark.readStream.schema(schema)
            .option("maxFilesPerTrigger", 1)
            .json(str(tmp_path / name))
            .writeStream.option("checkpointLocation", str(tmp_path / f"ck-{name}"))
            .trigger(availableNow=True)
            .toTable(f"lakeskip.db.{name}")
        )
        q.awaitTermination()
    compacted = session.catalog.get_table("db.ev").list_snapshots()
    assert any(s.commit_kind.value == "COMPACT" for s in compacted), "the stream compacted"
    for name, cols in (("ev", "id, cat"), ("pk", "id, v")):
        ours = sorted(
            tuple(str(x) for x in r)
            for r in spark.sql(f"SELECT {cols} FROM lakeskip.db.{name}").collect()
        )
        (res,) = paimon_java(wh, {"op": "read", "table": f"db.{name}", "queries": []})
        theirs = sorted(tuple(str(x) for x in r) for r in res["rows"])
        assert theirs == ours, f"{name}: Paimon 0.9 reads other rows"
    latest = {k: f"b{b}" for b in range(4) for k in range(b, b + 4)}
    assert ours == sorted((str(k), v) for k, v in latest.items())


@pytest.fixture(scope="module")
def killed_twice(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The tables of the kill -9 test of streaming writes (a file source, 24 micro-batches
    into an append table and a primary-key table with deletion vectors, the driver killed
    twice mid-stream and restarted from its checkpoints), made once for both Paimon
    versions: (warehouse, append rows, latest version of every key)."""
    from tests.spark.write import test_streaming_kill as kill

    import lakeskip

    root = tmp_path_factory.mktemp("killed-twice")
    lakeskip.connect(str(root / "warehouse"), spark=spark)
    appended, latest, _ = kill.stream_killed_twice(spark, root)
    return root / "warehouse", appended, latest


@pytest.mark.slow
def test_tables_of_a_stream_killed_twice_read_the_same_in_paimon(
    killed_twice: Any, paimon_java: Any
) -> None:
    """Paimon (0.9 and 2.0.0) reads the rows the killed-twice stream left: every input row of
    the append table once, the latest version of every key of the primary-key table with
    deletion vectors."""
    wh, appended, latest = killed_twice
    (res,) = paimon_java(wh, {"op": "read", "table": "db.ev", "queries": []})
    got = sorted(int(r[0]) for r in res["rows"])
    assert got == sorted(r["id"] for r in appended), "Paimon: every input row once"
    (res,) = paimon_java(wh, {"op": "read", "table": "db.pk", "queries": []})
    theirs = sorted((int(r[0]), str(r[1]), int(r[2])) for r in res["rows"])
    assert theirs == sorted(latest.values()), "Paimon: the latest version of every key"
