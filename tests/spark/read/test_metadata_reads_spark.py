"""What a Spark query reads of the table's metadata (issue 39), counted where it is read
(``FileIO`` in this process: the catalog's callbacks run on the driver's py4j threads):

* a query on one partition reads only that partition's manifests (the manifest list's
  partition stats rule out the others), through the whole ``plan_scan`` callback;
* a bloom point lookup on files that also carry bitmap and range-bitmap indexes reads at
  most 1.2x the bytes of the bloom sections it uses, and the scan's metric
  ``lakeskipIndexBytesRead`` shows exactly the bytes read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from pyspark.sql import SparkSession
from tests.spark.read.scan_metrics import lakeskip_metrics, plan_nodes

import lakeskip
from lakeskip.catalog.cache import shared_cache
from lakeskip.catalog.file_io import FileIO
from lakeskip.index.format import FileIndexContainer

PARTS = 12


@pytest.fixture(scope="module")
def lk(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    wh = tmp_path_factory.mktemp("mr") / "wh"
    session = lakeskip.connect(str(wh), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.mr")
    yield session


def _metrics(df: Any) -> dict[str, int]:
    found: dict[str, int] = {}
    for node in plan_nodes(df):
        found.update(lakeskip_metrics(node))
    return found


def test_a_query_on_one_partition_reads_only_its_manifests(
    spark: SparkSession, lk: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "lakeskip.mr.parts"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, v BIGINT, p INT) PARTITIONED BY (p)")
    for p in range(PARTS):  # two commits per partition: two manifests, two files each
        for half in range(2):
            lo = p * 100 + half * 50
            spark.sql(
                f"INSERT INTO {name} SELECT id, id * 3, {p} FROM range({lo}, {lo + 50}, 1, 1)"
            )
    table = lk.catalog.get_table("mr.parts")
    manifests = table.manifest_metas(table.latest_snapshot())
    assert len(manifests) == 2 * PARTS, "a manifest per commit"
    monkeypatch.setenv("LAKESKIP_MANIFEST_CACHE_DIR", "off")  # count every manifest read
    reads: list[str] = []
    original = FileIO.read_bytes

    def counting(self: FileIO, path: str) -> bytes:
        reads.append(path.rsplit("/", 1)[-1])
        return original(self, path)

    for where, parts in (("p = 5", {5}), ("p IN (2, 9) AND v > 0", {2, 9})):
        shared_cache().clear()
        reads.clear()
        with mock.patch.object(FileIO, "read_bytes", counting):
            df = spark.sql(f"SELECT id, p FROM {name} WHERE {where}")
            got = sorted(tuple(r) for r in df.collect())
        want = sorted((i, p) for p in parts for i in range(p * 100, p * 100 + 100))
        assert got == want, where
        read = [n for n in reads if n.startswith("manifest-") and "list" not in n]
        assert len(read) == 2 * len(parts), (where, read)
        m = _metrics(df)
        assert (m["lakeskipFilesTotal"], m["lakeskipFilesKept"]) == (2 * PARTS, 2 * len(parts)), m


def test_a_bloom_lookup_reads_only_its_bloom_sections(spark: SparkSession, lk: Any) -> None:
    name = "lakeskip.mr.idx"
    rows = 4000  # ~2.4 KB of bloom per file: the 256-byte first read of a header is ~10 %
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, v INT, k BIGINT) TBLPROPERTIES ("
        "'file-index.bloom-filter.columns' = 'id', "
        f"'file-index.bloom-filter.id.items' = '{rows}', "
        "'file-index.bitmap.columns' = 'v', "
        "'file-index.range-bitmap.columns' = 'v,k', "
        "'file-index.in-manifest-threshold' = '1 b')"
    )
    files = 6
    for f in range(files):  # file f: the even ids below 2 * rows, and the odd id 2 * f + 1
        spark.sql(
            f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id, CAST(id % 97 AS INT), "
            f"id * 7919 % 100003 FROM (SELECT id * 2 AS id FROM range(0, {rows - 1}, 1, 1) "
            f"UNION ALL SELECT CAST({2 * f + 1} AS BIGINT))"
        )
    table = lk.catalog.get_table("mr.idx")
    entries = table.scan_files()
    assert len(entries) == files
    bloom = total = 0
    for e in entries:
        data = table.file_io.read_bytes(f"{table.data_file_dir(e)}/{e.file.index_file_name}")
        container = FileIndexContainer.decode(data)
        assert set(container.columns()) == {"id", "v", "k"}, "the container holds every index"
        bloom += sum(x.length for x in container.entries if x.column == "id")
        total += len(data)
    read: list[int] = []
    original = FileIO.read_range

    def counting(self: FileIO, path: str, offset: int, length: int) -> bytes:
        data = original(self, path, offset, length)
        read.append(len(data))
        return data

    shared_cache().clear()
    with mock.patch.object(FileIO, "read_range", counting):
        df = spark.sql(f"SELECT * FROM {name} WHERE id = 7")
        got = [tuple(r) for r in df.collect()]
    assert got == [(7, 7, 7 * 7919 % 100003)], "id 7 = 2 * 3 + 1: only in file 3"
    m = _metrics(df)
    assert (m["lakeskipFilesTotal"], m["lakeskipFilesKept"]) == (files, 1), m
    assert sum(read) <= 1.2 * bloom, (
        f"read {sum(read)} index bytes for {bloom} bytes of bloom sections (whole: {total})"
    )
    assert m["lakeskipIndexBytesRead"] == sum(read), (m, read)
