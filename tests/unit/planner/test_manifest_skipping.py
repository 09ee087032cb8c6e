"""Manifests are skipped by the manifest list's partition stats before they are read.

Reads are counted at ``FileIO.read_bytes`` (every manifest is read through it); the kept
files must equal those of a plan over every manifest (the planner's partition tier over the
full file list), including after an overwrite that left DELETE entries in later manifests.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq

from lakeskip import types as T
from lakeskip.catalog.cache import shared_cache
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.expressions import EqualTo, GreaterThan, Or, bind, evaluate_arrow
from lakeskip.planner.scan import ScanPlanner

PARTS = 12


def _write(table: Any, p: int, tag: str) -> Any:
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    t = pa.table(
        {"id": pa.array([p * 10, p * 10 + 1], pa.int64()), "p": pa.array([p, p], pa.int32())}
    )
    return write_data_file(spec, t, (p,), f"data-{tag}-{p}.parquet")


def _table(tmp: Path) -> Any:
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    rt = T.RowType.of(("id", T.BIGINT), ("p", T.INT))
    table = cat.create_table("db.t", rt, partition_keys=["p"])
    for p in range(PARTS):  # one commit, hence one manifest, per partition
        table.commit([_write(table, p, "a")])
    return cat.get_table("db.t")


def _manifest_reads(table: Any, pred: Any) -> tuple[list[str], Any]:
    shared_cache().clear()
    reads: list[str] = []
    original = FileIO.read_bytes

    def counting(self: FileIO, path: str) -> bytes:
        reads.append(path.rsplit("/", 1)[-1])
        return original(self, path)

    with mock.patch.object(FileIO, "read_bytes", counting):
        plan = ScanPlanner(table).plan(pred)
    manifests = [n for n in reads if n.startswith("manifest-") and "list" not in n]
    return manifests, plan


def _expected(table: Any, pred: Any) -> set[str]:
    """Files with a matching row, found by reading every live file."""
    bound = bind(table.schema.row_type, pred)
    out = set()
    for e in table.scan_files():
        t = pq.read_table(io.BytesIO(table.file_io.read_bytes(table.data_file_path(e))))
        if any(evaluate_arrow(bound, t).to_pylist()):
            out.add(e.file.file_name)
    return out


def test_a_query_on_one_partition_reads_that_partitions_manifest(tmp_path: Path) -> None:
    table = _table(tmp_path)
    snapshot = table.latest_snapshot()
    assert len(table.manifest_metas(snapshot)) == PARTS, "a manifest per partition"
    manifests, plan = _manifest_reads(table, EqualTo("p", 5))
    assert len(manifests) == 1, f"read {manifests}: only partition 5's manifest"
    assert [d.entry.file.file_name for d in plan.decisions if d.keep] == ["data-a-5.parquet"]
    assert (plan.report.total_files, plan.report.skipped_by_partition) == (PARTS, PARTS - 1), (
        "files of unread manifests still count as skipped by partition"
    )
    # a predicate on another column, or an OR reaching outside the partitions, reads all
    manifests, plan = _manifest_reads(table, Or(EqualTo("p", 5), GreaterThan("id", 100)))
    assert len(manifests) == PARTS
    assert {d.entry.file.file_name for d in plan.decisions if d.keep} == _expected(
        table, Or(EqualTo("p", 5), GreaterThan("id", 100))
    )


def test_deletes_in_later_manifests_are_merged_as_before(tmp_path: Path) -> None:
    table = _table(tmp_path)
    # overwrite partitions 3 and 7: DELETE entries of their files in a new manifest
    table.commit(
        [_write(table, 3, "b"), _write(table, 7, "b")],
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=[(3,), (7,)],
    )
    table = Catalog(str(tmp_path / "wh")).get_table("db.t")
    for pred in (EqualTo("p", 3), EqualTo("p", 7), EqualTo("p", 4), GreaterThan("p", 6)):
        manifests, plan = _manifest_reads(table, pred)
        kept = {d.entry.file.file_name for d in plan.decisions if d.keep}
        assert kept == _expected(table, pred), pred
        assert len(manifests) < len(table.manifest_metas(table.latest_snapshot())), pred


def test_one_manifest_of_many_partitions_makes_only_the_partitions_read(tmp_path: Path) -> None:
    """All partitions in one manifest (one commit): a query on one partition decodes the
    manifest column-wise and makes the entries of that partition's files only; the others
    still count as skipped by partition, with their bytes and rows; the files kept are
    those a read of every file finds, before and after a DELETE of some of them."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    rt = T.RowType.of(("id", T.BIGINT), ("p", T.INT))
    table = cat.create_table("db.t", rt, partition_keys=["p"])
    files = [_write(table, p, f"{tag}") for p in range(PARTS) for tag in ("a", "b", "c")]
    table.commit(files)
    table = cat.get_table("db.t")
    for pred in (EqualTo("p", 5), GreaterThan("p", 9), Or(EqualTo("p", 1), EqualTo("id", 70))):
        shared_cache().clear()
        plan = ScanPlanner(table).plan(pred)
        kept = {d.entry.file.file_name for d in plan.decisions if d.keep}
        assert kept == _expected(table, pred), pred
        whole = ScanPlanner(table).plan(None).report
        assert (plan.report.total_files, plan.report.total_bytes, plan.report.total_rows) == (
            whole.total_files,
            whole.total_bytes,
            whole.total_rows,
        ), f"{pred}: the partitions left out are in the totals"
    shared_cache().clear()
    plan = ScanPlanner(table).plan(EqualTo("p", 5))
    (meta,) = table.manifest_metas(table.latest_snapshot())
    columns = table._manifest_columns.get((table.path, meta.file_name))
    assert columns is not None and columns.made_count == 3, "partition 5's three files only"
    assert plan.report.skipped_by_partition == 3 * (PARTS - 1)
    # a DELETE in a later manifest of one of partition 5's files
    table.commit([], deleted=[files[15]])
    table = cat.get_table("db.t")
    shared_cache().clear()
    plan = ScanPlanner(table).plan(EqualTo("p", 5))
    kept = {d.entry.file.file_name for d in plan.decisions if d.keep}
    assert kept == _expected(table, EqualTo("p", 5)) == {"data-b-5.parquet", "data-c-5.parquet"}
