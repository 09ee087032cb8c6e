"""Pruning shown by Spark's own tools: the scan's EXPLAIN description, its custom metrics in
``SQLMetrics`` of the executed plan (what the SQL tab and the SQL listener show), and the
table state in ``DESCRIBE TABLE EXTENDED`` through plain ``spark.sql``."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from tests.spark.read.scan_metrics import batch_scans, lakeskip_metrics, plan_nodes, scan_metrics

import lakeskip
from lakeskip.spark import pruning_reports
from lakeskip.spark.front.catalog_setup import service_for

T = "lakeskip.db.ev"


@pytest.fixture
def lk(spark: SparkSession, tmp_path: Path) -> Any:
    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql(
        f"CREATE TABLE {T} (id BIGINT, cat STRING, p STRING) PARTITIONED BY (p) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns'='cat')"
    )
    for i, p in enumerate(["x", "y", "x", "y"]):
        spark.sql(
            f"INSERT INTO {T} SELECT id, concat('c', CAST(id AS STRING)), '{p}' "
            f"FROM range({i * 100}, {i * 100 + 20}, 1, 1)"
        )
    return s


def _scan_metrics(df: DataFrame) -> dict[str, int]:
    """The lakeskip SQLMetrics of the executed plan's scan node (after the query ran)."""
    found = [got for got in map(lakeskip_metrics, plan_nodes(df)) if got]
    assert len(found) == 1, found
    return found[0]


def test_point_lookup_metrics_equal_the_pruning_report(spark: SparkSession, lk: Any) -> None:
    query = f"SELECT * FROM {T} WHERE cat = 'c205' AND p = 'x'"
    with pruning_reports(spark) as reports:
        df = spark.sql(query)
        assert [tuple(r) for r in df.collect()] == [(205, "c205", "x")]
    (report,) = reports
    m = _scan_metrics(df)
    assert (m["lakeskipFilesTotal"], m["lakeskipFilesKept"]) == (
        report.total_files,
        report.kept_files,
    )
    assert (report.total_files, report.kept_files) == (4, 1)
    assert m["lakeskipSkippedPartition"] == report.skipped_by_partition == 2
    assert m["lakeskipSkippedStats"] == report.skipped_by_stats
    assert m["lakeskipSkippedIndex_bloom-filter"] == report.skipped_by_index["bloom-filter"]
    assert (
        m["lakeskipSkippedColumn_bloom-filter(cat)"]
        == report.skipped_by_column["bloom-filter(cat)"]
    )
    assert m["lakeskipIndexFilesRead"] == report.index_files_read > 0
    assert m["lakeskipIndexBytesRead"] == report.index_bytes_read > 0

    # the same query again reuses the scan (ScanCache): the same figures, no planning
    with pruning_reports(spark) as again:
        df2 = spark.sql(query)
        df2.collect()
    m2 = _scan_metrics(df2)
    assert {k: v for k, v in m2.items() if k != "lakeskipPlanningMs"} == {
        k: v for k, v in m.items() if k != "lakeskipPlanningMs"
    }
    assert m2["lakeskipPlanningMs"] == 0
    assert [r.kept_files for r in again] == [1]

    # another predicate on the same snapshot: its own figures
    with pruning_reports(spark) as third:
        df3 = spark.sql(f"SELECT * FROM {T} WHERE id >= 300")
        df3.collect()
    m3 = _scan_metrics(df3)
    assert (m3["lakeskipFilesTotal"], m3["lakeskipFilesKept"]) == (4, 1)
    assert m3["lakeskipSkippedStats"] == 3 == third[0].skipped_by_stats
    assert m3["lakeskipIndexFilesRead"] == third[0].index_files_read


def test_explain_names_kept_total_and_reasons(spark: SparkSession, lk: Any) -> None:
    text = spark.sql(f"EXPLAIN SELECT * FROM {T} WHERE cat = 'c205'").collect()[0][0]
    assert "Pruning: files 1/4 kept; skipped by partition" not in text
    assert "Pruning: files 1/4 kept; skipped by stats 2, bloom-filter(cat) 1; snapshot 4" in text
    formatted = spark.sql(f"EXPLAIN FORMATTED SELECT * FROM {T} WHERE p = 'y'").collect()[0][0]
    assert "Pruning: files 2/4 kept; skipped by partition 2; snapshot 4" in formatted


def test_describe_extended_lists_state_and_queries_do_not_ask(spark: SparkSession, lk: Any) -> None:
    service = service_for(spark)
    before = service.callback_stats()
    spark.sql(f"SELECT * FROM {T} WHERE id = 5").collect()
    spark.table(T).groupBy("p").count().collect()
    assert "table_detail" not in {
        k for k, v in service.callback_stats().since(before).calls.items() if v
    }
    rows = {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {T}").collect()}
    props = rows["Table Properties"]
    for part in (
        "lakeskip.snapshot=4",
        "lakeskip.data-files=4",
        "lakeskip.rows=80",
        "lakeskip.indexes=bloom-filter(cat)",
        "lakeskip.indexed-files=0 embedded, 4 in .index files",
    ):
        assert part in props, props
    shown = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {T}").collect()}
    assert shown["lakeskip.rows"] == "80"
    # a new commit is a new state
    spark.sql(f"DELETE FROM {T} WHERE p = 'y'")
    shown = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {T}").collect()}
    assert (shown["lakeskip.rows"], shown["lakeskip.snapshot"]) == ("40", "5")
    # SHOW CREATE TABLE's text creates the same table: the state is not taken as options
    ddl = spark.sql(f"SHOW CREATE TABLE {T}").collect()[0][0]
    quoted = "`lakeskip`.`db`.`ev`"
    assert quoted in ddl, ddl
    spark.sql(ddl.replace(quoted, "lakeskip.db.copy", 1))
    copy = lk.catalog.get_table("db.copy")
    assert dict(copy.schema.options) == {"file-index.bloom-filter.columns": "cat"}


def test_partition_values_needing_escapes_read_back(spark: SparkSession, tmp_path: Path) -> None:
    """``LakeFileIndex`` makes a file's path from its directory's URI and its name: partition
    directories whose names Paimon escapes or a URI quotes (space, ``%``, ``=``, ``/``,
    ``:``, non-ASCII) read every row back, filtered or not, and the scan's files are the
    partition directories' own (``input_file_name()`` against the files on disk)."""
    lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    name = "lakeskip.db.odd"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p STRING) PARTITIONED BY (p)")
    values = ["a b", "x%y", "p=q", "s/t", "u:v", "é", "%20", "plain"]
    for round_ in range(2):  # two files per partition
        rows = ", ".join(f"({round_ * 100 + i}, '{v}')" for i, v in enumerate(values))
        spark.sql(f"INSERT INTO {name} VALUES {rows}")
    want = sorted((r * 100 + i, v) for r in range(2) for i, v in enumerate(values))
    assert sorted(tuple(r) for r in spark.sql(f"SELECT id, p FROM {name}").collect()) == want
    for i, v in enumerate(values):
        got = spark.sql(f"SELECT id FROM {name} WHERE p = '{v}'").collect()
        assert sorted(r[0] for r in got) == [i, 100 + i], v
    on_disk = {str(p.resolve()) for p in (tmp_path / "wh").rglob("data-*.parquet")}
    scanned = {r[0] for r in spark.sql(f"SELECT input_file_name() FROM {name}").collect()}
    local = {urllib.parse.unquote(urllib.parse.urlparse(f).path) for f in scanned}
    assert local == on_disk and len(on_disk) == 2 * len(values)


def _file_scan(df: DataFrame) -> Any:
    """The one file scan node (V1 ``FileSourceScanExec`` or V2 ``BatchScanExec``) of ``df``'s
    executed plan."""
    leaves = df._jdf.queryExecution().executedPlan().collectLeaves().iterator()
    scans = []
    while leaves.hasNext():
        leaf = leaves.next()
        if leaf.getClass().getSimpleName() in ("FileSourceScanExec", "BatchScanExec"):
            scans.append(leaf)
    assert len(scans) == 1, [s.getClass().getSimpleName() for s in scans]
    return scans[0]


def _splits(node: Any) -> list[list[tuple[str, int, int]]]:
    """The node's input partitions as lists of (file name, start, length)."""
    name = node.getClass().getSimpleName()
    parts = node.inputRDD().partitions() if name == "FileSourceScanExec" else None
    if parts is None:
        seq = node.inputPartitions()
        parts = [seq.apply(i) for i in range(seq.size())]
    return [
        sorted(
            (str(f.filePath()).rsplit("/", 1)[-1], int(f.start()), int(f.length()))
            for f in p.files()
        )
        for p in parts
    ]


def _metadata(node: Any) -> dict[str, str]:
    """``PushedFilters`` and ``ReadSchema`` as the node shows them (a V2 scan's from its
    scan's metadata)."""
    name = node.getClass().getSimpleName()
    meta = node.metadata() if name == "FileSourceScanExec" else node.scan().getMetaData()
    return {k: str(meta.apply(k)) for k in ("PushedFilters", "ReadSchema")}


def test_nothing_skipped_reads_what_plain_spark_reads(spark: SparkSession, tmp_path: Path) -> None:
    """Where no file can be skipped (issue 39's TPC-H gate), lakeskip's scan does plain
    ``spark.read.parquet``'s work over the same files: the same splits (files packed and
    split by Spark's own rules, here into several splits a file), the same filters pushed
    into the Parquet reader (row-group and page skipping) and the same columns read."""
    s = lakeskip.connect(str(tmp_path / "wh2"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.db")
    spark.sql("CREATE TABLE lakeskip.db.li (k BIGINT, mode STRING, d DATE, q INT, c STRING)")
    for i in range(3):
        spark.sql(
            "INSERT INTO lakeskip.db.li SELECT id, element_at(array('AIR', 'MAIL', 'SHIP'), "
            "CAST(id % 3 + 1 AS INT)), date_add(DATE'1994-01-01', CAST(id % 700 AS INT)), "
            f"CAST(id % 50 AS INT), repeat('x', 40) FROM range({i * 20000}, {(i + 1) * 20000}, 1, 1)"
        )
    files = s.table("db.li").files()
    assert len(files) == 3
    spark.read.parquet(*files).createOrReplaceTempView("plain_li")
    where = "WHERE mode IN ('AIR', 'MAIL') AND d >= DATE'1994-03-01' AND q < 40"
    keys = (
        "spark.sql.files.maxPartitionBytes",
        "spark.sql.files.openCostInBytes",
        "spark.lakeskip.v1-scan",
    )
    old = {k: spark.conf.get(k, None) for k in keys}
    # by default a scan that keeps every file is Spark's V1 file scan under lakeskip's node;
    # "never" keeps it the V2 scan (as a scan that pruned or takes runtime filters is)
    for mode, kind in (("unpruned", "FileSourceScanExec"), ("never", "BatchScanExec")):
        spark.conf.set("spark.sql.files.maxPartitionBytes", "10k")
        spark.conf.set("spark.sql.files.openCostInBytes", "4k")
        spark.conf.set("spark.lakeskip.v1-scan", mode)
        try:
            nodes = {}
            rows = {}
            for side, table in (("lakeskip", "lakeskip.db.li"), ("plain", "plain_li")):
                df = spark.sql(f"SELECT k, mode, q FROM {table} {where}")
                rows[side] = sorted(tuple(r) for r in df.collect())
                nodes[side] = _file_scan(df)
                if side == "lakeskip":
                    names = [n.nodeName() for n in plan_nodes(df)]
                    assert ("LakeV1Scan lakeskip.db.li" in names) == (mode != "never"), names
        finally:
            for k, v in old.items():
                if v is None:
                    spark.conf.unset(k)
                else:
                    spark.conf.set(k, v)
        assert rows["lakeskip"] == rows["plain"] and rows["plain"]
        assert nodes["lakeskip"].getClass().getSimpleName() == kind
        assert nodes["plain"].getClass().getSimpleName() == "FileSourceScanExec"
        splits = {side: _splits(n) for side, n in nodes.items()}
        assert len(splits["plain"]) > len(files), "the files are split (the setting took)"
        assert sorted(splits["lakeskip"]) == sorted(splits["plain"])
        meta = {side: _metadata(n) for side, n in nodes.items()}
        assert meta["lakeskip"] == meta["plain"], meta
        assert "In(mode, [AIR,MAIL])" in meta["plain"]["PushedFilters"]


def test_v1_scan_modes_keep_answers_figures_and_node(spark: SparkSession, lk: Any) -> None:
    """``spark.lakeskip.v1-scan``: by default a scan that keeps every file is Spark's V1 file
    scan under ``LakeV1Scan <table>`` and one that pruned stays the V2 ``BatchScan``;
    ``always`` plans both as V1, ``never`` neither. Answers are plain Spark's over the same
    files (read without lakeskip), and the node of either kind carries the same figures."""
    plain = spark.read.parquet(*lk.table("db.ev").files())
    plain.createOrReplaceTempView("ev_plain")
    queries = {
        "pruned": "SELECT id, cat FROM {} WHERE cat = 'c205' AND p = 'x'",
        "unpruned": "SELECT id, cat FROM {} WHERE id % 3 = 0",
    }
    expect = {
        "unpruned": {"pruned": "BatchScan", "unpruned": "LakeV1Scan"},
        "always": {"pruned": "LakeV1Scan", "unpruned": "LakeV1Scan"},
        "never": {"pruned": "BatchScan", "unpruned": "BatchScan"},
    }
    figures = {}
    try:
        for mode, kinds in expect.items():
            spark.conf.set("spark.lakeskip.v1-scan", mode)
            for name, q in queries.items():
                df = spark.sql(q.format(T))
                got = sorted(tuple(r) for r in df.collect())
                want = sorted(tuple(r) for r in spark.sql(q.format("ev_plain")).collect())
                assert got == want and want, (mode, name)
                (node,) = batch_scans(df, T)
                assert node.nodeName() == f"{kinds[name]} {T}", (mode, name)
                m = scan_metrics(df, T)
                assert m is not None
                kept = (m["lakeskipFilesKept"], m["lakeskipFilesTotal"])
                assert figures.setdefault(name, kept) == kept, (mode, name)
        assert figures["pruned"][0] < figures["pruned"][1]
        assert figures["unpruned"][0] == figures["unpruned"][1]
        # a scan of more files than spark.lakeskip.v1-scan.max-files stays V2
        spark.conf.set("spark.lakeskip.v1-scan", "always")
        spark.conf.set("spark.lakeskip.v1-scan.max-files", str(figures["unpruned"][0] - 1))
        df = spark.sql(queries["unpruned"].format(T))
        assert [n.nodeName() for n in batch_scans(df, T)] == [f"BatchScan {T}"]
        spark.conf.set("spark.lakeskip.v1-scan.max-files", str(figures["unpruned"][0]))
        df = spark.sql(queries["unpruned"].format(T))
        assert [n.nodeName() for n in batch_scans(df, T)] == [f"LakeV1Scan {T}"]
        spark.conf.set("spark.lakeskip.v1-scan.max-files", "lots")
        with pytest.raises(Exception, match=r"v1-scan\.max-files: 'lots' is not a number"):
            spark.sql(queries["unpruned"].format(T)).collect()
        spark.conf.unset("spark.lakeskip.v1-scan.max-files")
        spark.conf.set("spark.lakeskip.v1-scan", "sometimes")
        with pytest.raises(Exception, match=r"spark\.lakeskip\.v1-scan: 'sometimes' is not one of"):
            spark.sql(queries["unpruned"].format(T)).collect()
    finally:
        spark.conf.unset("spark.lakeskip.v1-scan")
        spark.conf.unset("spark.lakeskip.v1-scan.max-files")
