"""The deletion-vector write of primary-key tables (:mod:`lakeskip.catalog.write.pk_dv_write`)
without Spark: levels chosen per write, DVs of older versions, DELETE as marks, and the
commit's conflict checks against concurrent writers of the same bucket."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.pk_tables import commit_pk_dv, pk_write_spec

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.pk.primary_key import TOP_LEVEL, RowKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.pk_dv_write import PkDvSpec, PkDvWriter, pk_dv_spec
from lakeskip.errors import CommitConflictError
from lakeskip.types import INT, STRING, RowType

ROW = RowType.of(("k", INT), ("v", STRING))


def _table(tmp_path: Path) -> FileStoreTable:
    cat = Catalog(str(tmp_path / "wh"))
    return cat.create_table(
        "default.t",
        ROW,
        options={"primary-key": "k", "bucket": "1", "deletion-vectors.enabled": "true"},
    )


def _prepare(
    table: FileStoreTable, rows: dict[int, str], kind: RowKind = RowKind.INSERT
) -> tuple[PkDvSpec, PkDvWriter, list[ManifestEntry]]:
    table = table.refresh()
    spec = pk_dv_spec(table, pk_write_spec(table, kind), fresh=False)
    writer = PkDvWriter(spec)
    data = pa.table({"k": list(rows), "v": list(rows.values())}, schema=ROW.to_arrow())
    return spec, writer, writer.write_batches([data])


def _commit(table: FileStoreTable, prepared: tuple[PkDvSpec, PkDvWriter, list[Any]]) -> None:
    commit_pk_dv(table, *prepared)


def _live(table: FileStoreTable) -> dict[int, str]:
    table = table.refresh()
    refs = table.deletion_files()
    out: dict[int, str] = {}
    for e in table.scan_files():
        data = pq.read_table(table.data_file_path(e))
        ref = refs.get(e.file.file_name)
        dead = table.read_deletion_vector(ref, e.file.row_count) if ref is not None else set()
        for i, r in enumerate(data.select(["k", "v"]).to_pylist()):
            if i not in dead:
                assert r["k"] not in out
                out[r["k"]] = r["v"]
    return out


def test_levels_dvs_and_bucket_compaction(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commit(t, _prepare(t, {1: "a", 2: "b", 3: "c"}))
    assert [e.file.level for e in t.refresh().scan_files()] == [TOP_LEVEL]
    _commit(t, _prepare(t, {2: "B", 4: "d"}))
    levels = sorted(e.file.level for e in t.refresh().scan_files())
    assert levels == [TOP_LEVEL - 1, TOP_LEVEL]
    (dv,) = t.refresh().deletion_files().values()
    assert dv.meta.cardinality == 1
    assert _live(t) == {1: "a", 2: "B", 3: "c", 4: "d"}
    # DELETE: a DV mark only, no file written; a file left with nothing live is removed
    _commit(t, _prepare(t, {2: "", 4: ""}, RowKind.DELETE))
    assert _live(t) == {1: "a", 3: "c"}
    assert sorted(e.file.level for e in t.refresh().scan_files()) == [TOP_LEVEL]
    for i in range(TOP_LEVEL):  # fill the levels below the top, then compact the bucket
        _commit(t, _prepare(t, {1: f"w{i}", 10 + i: "n"}))
    files = t.refresh().scan_files()
    assert [e.file.level for e in files] == [TOP_LEVEL]
    assert not t.refresh().deletion_files()
    written = {10 + i: "n" for i in range(TOP_LEVEL)}
    assert _live(t) == {1: f"w{TOP_LEVEL - 1}", 3: "c", **written}
    seqs = pq.read_table(t.data_file_path(files[0]))["_SEQUENCE_NUMBER"].to_pylist()
    assert len(set(seqs)) == len(seqs)


def test_small_writes_leave_the_big_top_run_alone(tmp_path: Path) -> None:
    """Level 1 taken: the new rows merge with the small newer runs universal compaction
    picks (Paimon's forced level-0 pick), not the whole bucket: the big top-level file is
    never rewritten (only its DV grows), and every key stays live once."""
    t = _table(tmp_path)
    base = dict.fromkeys(range(3000), "base")
    _commit(t, _prepare(t, base))
    (top,) = [e.file.file_name for e in t.refresh().scan_files()]
    want = dict(base)
    for w in range(12):
        rows = {(w * 37 + j * 101) % 3200: f"w{w}" for j in range(20)}
        _commit(t, _prepare(t, rows))
        want.update(rows)
        files = t.refresh().scan_files()
        assert top in {e.file.file_name for e in files}, w
        levels = [e.file.level for e in files]
        assert 0 not in levels and len(levels) == len(set(levels))  # one file per level here
        assert _live(t) == want
    assert t.refresh().deletion_files()  # the top file's updated keys: DV marks


def test_concurrent_writes_to_one_bucket_conflict(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commit(t, _prepare(t, {1: "a", 2: "b"}))
    first = _prepare(t, {5: "x"})
    second = _prepare(t, {5: "y"})  # planned on the same snapshot: both add key 5
    _commit(t, first)
    with pytest.raises(CommitConflictError, match="looked up"):
        _commit(t, second)
    assert _live(t) == {1: "a", 2: "b", 5: "x"}
    # a concurrent change to a DV this write read is a conflict too
    a = _prepare(t, {1: "A"})
    b = _prepare(t, {1: "AA"})
    _commit(t, a)
    with pytest.raises(CommitConflictError):
        _commit(t, b)
    assert _live(t) == {1: "A", 2: "b", 5: "x"}
