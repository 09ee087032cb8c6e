"""The splits of a lakeskip Parquet scan, made by ``LakeFileIndex.splits`` straight from the
reply's file columns, against the splits Spark's own ``FileScan.partitions`` makes of the same
scan over the same index (its listing of the files' statuses, built on demand), and the rows
read against the rows written.

Many partitions (a NULL partition value, values shared by several partitions' keys), files at
external paths, names Spark quotes in a URI, files cut into several splits
(``spark.sql.files.maxPartitionBytes``), partition columns read all, some or none, data
filters, and partition filters (where the scan takes Spark's own way); files Spark's listing
leaves out (a name starting with ``_`` or ``.``, a size of 0) left out the same way.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec

PARTITIONS = 9
PER_PARTITION = 4
ROWS = 30


def _scans(df: Any) -> list[Any]:
    """The lakeskip scans of ``df``'s executed plan (``BatchScan`` and ``LakeV1Scan`` nodes)."""
    todo, found = [df._jdf.queryExecution().executedPlan()], []
    while todo:
        node = todo.pop()
        kids = node.children().iterator()
        while kids.hasNext():
            todo.append(kids.next())
        if node.nodeName().startswith(("BatchScan", "LakeV1Scan")):
            found.append(node.scan())
    return found


def _described(splits: Any, schema: Any) -> list[tuple[Any, ...]]:
    """Every split as Spark's reader sees it: partition index, path, range, partition values
    (as read), file time and size, hosts, metadata."""
    return [
        (
            part.index(),
            f.filePath().toString(),
            f.start(),
            f.length(),
            f.partitionValues().toSeq(schema).toString(),
            f.modificationTime(),
            f.fileSize(),
            len(f.locations()),
            f.otherConstantMetadataColumnValues().toString(),
        )
        for part in splits
        for f in part.files()
    ]


def _same_splits_as_spark(df: Any) -> int:
    """Asserts the scan's splits equal those Spark's FileScan makes over the same index;
    returns how many split files there are."""
    (scan,) = _scans(df)
    inner = scan.inner()
    schema = inner.readPartitionSchema()
    ours = _described(scan.planInputPartitions(), schema)
    spark = _described(inner.toBatch().planInputPartitions(), schema)
    assert ours == spark
    return len(ours)


def _table(session: Any, name: str, partitioned: bool = True) -> tuple[Any, WriteSpec]:
    session.sql("CREATE DATABASE IF NOT EXISTS db")
    by = " PARTITIONED BY (p, q)" if partitioned else ""
    session.sql(f"CREATE TABLE db.{name} (id BIGINT, v BIGINT, p INT, q STRING){by}")
    table = session.catalog.get_table(f"db.{name}")
    return table, WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)


def _file(
    spec: WriteSpec, lo: int, p: int, q: str | None, name: str, partitioned: bool = True
) -> tuple[Any, list[Any]]:
    rows = [(i, (i * 7919) % 1000, p, q) for i in range(lo, lo + ROWS)]
    data = pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "v": pa.array([r[1] for r in rows], pa.int64()),
            "p": pa.array([p] * ROWS, pa.int32()),
            "q": pa.array([q] * ROWS, pa.string()),
        }
    )
    return write_data_file(spec, data, (p, q) if partitioned else (), name), rows


def _external(entry: Any, table: Any, ext: Path) -> Any:
    """``entry`` with its file moved out of the table, at an external path."""
    src = Path(table.data_file_path(entry).removeprefix("file:"))
    dst = ext / src.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(src, dst)
    return dataclasses.replace(entry, file=dataclasses.replace(entry.file, external_path=str(dst)))


@pytest.fixture(params=[True, False], ids=["partitioned", "unpartitioned"])
def many(session: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Counter[tuple[Any, ...]]:
    """``db.many``: PARTITIONS partitions (or as many values of ``p, q`` in an unpartitioned
    table) of PER_PARTITION files each, some external, one name Spark quotes; returns the
    rows written."""
    partitioned = request.param
    table, spec = _table(session, "many", partitioned)
    entries, rows = [], []
    for p in range(PARTITIONS):
        q = None if p == 4 else f"k{p % 3}"
        for i in range(PER_PARTITION):
            name = "data odd %1.parquet" if (p, i) == (2, 1) else f"data-{p}-{i}.parquet"
            lo = (p * PER_PARTITION + i) * ROWS
            entry, written = _file(spec, lo, p, q, name, partitioned)
            if (p + i) % 5 == 0:
                entry = _external(entry, table, tmp_path / "ext" / f"p{p % 2}")
            entries.append(entry)
            rows += written
    table.commit(entries)
    return Counter(rows)


QUERIES = {
    "no partition column": ("SELECT id, v FROM db.many", lambda r: (r[0], r[1])),
    "every column": ("SELECT * FROM db.many", lambda r: r),
    "one partition column": ("SELECT q, id FROM db.many", lambda r: (r[3], r[0])),
    "partition columns reordered": ("SELECT q, p, id FROM db.many", lambda r: (r[3], r[2], r[0])),
    "data filter": ("SELECT id, p FROM db.many WHERE v > 500", lambda r: (r[0], r[2])),
    "partition filter": ("SELECT id, q FROM db.many WHERE p >= 3", lambda r: (r[0], r[3])),
}


@pytest.mark.parametrize("split_bytes", [None, 700])
@pytest.mark.parametrize("query", list(QUERIES))
def test_splits_and_rows_as_spark_makes_them(
    session: Any, many: Counter[tuple[Any, ...]], query: str, split_bytes: int | None
) -> None:
    sql, shape = QUERIES[query]
    spark = session.spark
    if split_bytes is not None:  # each file cut into several splits
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(split_bytes))
        spark.conf.set("spark.sql.files.openCostInBytes", "100")
    try:
        df = session.sql(sql)
        splits = _same_splits_as_spark(df)
        expected: Counter[tuple[Any, ...]] = Counter()
        for row, n in many.items():
            keep = {"data filter": row[1] > 500, "partition filter": row[2] >= 3}.get(query, True)
            if keep:
                expected[shape(row)] += n
        assert Counter(tuple(r) for r in df.collect()) == expected
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")
    files = PARTITIONS * PER_PARTITION if query != "partition filter" else 6 * PER_PARTITION
    assert splits > files if split_bytes else splits == files


@pytest.mark.parametrize("ignored", [None, ""])
def test_files_spark_does_not_list_are_left_out_alike(session: Any, ignored: str | None) -> None:
    """Names Spark's listing takes for hidden or metadata files, and a size of 0, are left out
    of the splits as Spark's own listing leaves them out; with
    ``spark.sql.files.ignoredPathSegmentRegex`` empty (no hidden-file filter) only the
    ``_metadata`` names and the empty file are."""
    name = "odd" if ignored is None else "odd_unfiltered"
    table, spec = _table(session, name)
    entries = []
    names = ["_hidden.parquet", ".dot.parquet", "_p=1.parquet", "_metadata-x.parquet"]
    for i, file_name in enumerate([*names, "ok.parquet", "empty.parquet"]):
        entry, _ = _file(spec, i * ROWS, i % 2, "k", file_name)
        if file_name == "empty.parquet":
            entry = dataclasses.replace(entry, file=dataclasses.replace(entry.file, file_size=0))
        entries.append(entry)
    table.commit(entries)
    conf = session.spark.conf
    if ignored is not None:
        conf.set("spark.sql.files.ignoredPathSegmentRegex", ignored)
    try:
        df = session.sql(f"SELECT id FROM db.{name}")
        (scan,) = _scans(df)
        schema = scan.inner().readPartitionSchema()
        listed = {Path(r[1]).name for r in _described(scan.planInputPartitions(), schema)}
        expected = {"ok.parquet", "_p=1.parquet"}
        if ignored is not None:
            expected |= {"_hidden.parquet", ".dot.parquet"}
        assert listed == expected
        assert _same_splits_as_spark(df) == len(expected)
    finally:
        conf.unset("spark.sql.files.ignoredPathSegmentRegex")
