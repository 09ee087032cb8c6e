"""Deletion vectors: block and index-file format, index manifest, and the commit side."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap
from tests.examples import unit_examples

from lakeskip.catalog import Catalog, FileStoreTable
from lakeskip.catalog.format.deletion_vectors import (
    MAGIC,
    DeletionVectorMeta,
    DeletionVectorUpdate,
    IndexFileMeta,
    decode_vector,
    encode_index_file,
    encode_vector,
)
from lakeskip.catalog.format.index_manifest import (
    IndexManifestEntry,
    decode_entries,
    encode_entries,
)
from lakeskip.catalog.format.manifest import FileKind, read_manifest_list
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.errors import CommitConflictError, CorruptDeletionVectorError, InvalidOptionError
from lakeskip.types import BIGINT, STRING, RowType

ROW = RowType.of(("id", BIGINT), ("dt", STRING))


def _table(catalog: Catalog, **options: str) -> FileStoreTable:
    catalog.create_database("db", ignore_if_exists=True)
    return catalog.create_table(
        "db.t", ROW, partition_keys=["dt"], options={"deletion-vectors": "true", **options}
    )


# -- format --------------------------------------------------------------------------------


def test_block_layout_is_paimons() -> None:
    data = encode_vector(BitMap([3]))
    length, magic = struct.unpack_from(">ii", data)
    assert magic == MAGIC == 1581511376
    assert length == len(data) - 8, "length covers magic + bitmap, not itself nor the CRC"
    body = data[4 : 4 + length]
    assert struct.unpack_from(">I", data, 4 + length)[0] == zlib.crc32(body)
    assert BitMap.deserialize(body[4:]) == BitMap([3])


@settings(max_examples=unit_examples(60), deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, 300_000), max_size=300).map(BitMap),
        min_size=1,
        max_size=5,
    )
)
def test_index_file_round_trip(vectors: list[BitMap]) -> None:
    named = [(f"data-{i}.parquet", bm) for i, bm in enumerate(vectors)]
    data, metas = encode_index_file(named)
    assert data[0] == 1
    for (name, bm), m in zip(named, metas, strict=True):
        assert m.data_file_name == name and m.cardinality == len(bm)
        assert decode_vector(data, m, 300_001, "f") == bm


@settings(max_examples=unit_examples(200), deadline=None)
@given(st.data())
def test_garbage_splice_never_passes_silently(data: Any) -> None:
    """Any flipped byte in a block is an error naming the file, or (bytes the CRC does not
    cover: none in a block) the same DV: never a different set of positions."""
    bm = BitMap(data.draw(st.lists(st.integers(0, 5000), min_size=1, max_size=50)))
    raw, (meta,) = encode_index_file([("d.parquet", bm)])
    pos = data.draw(st.integers(0, len(raw) - 1))
    new = data.draw(st.integers(0, 255).filter(lambda b: b != raw[pos]))
    spliced = raw[:pos] + bytes([new]) + raw[pos + 1 :]
    with pytest.raises(CorruptDeletionVectorError, match="index-x"):
        decode_vector(spliced, meta, 5001, "index-x")


def test_truncation_rows_and_bitmap64_are_errors() -> None:
    raw, (meta,) = encode_index_file([("d.parquet", BitMap([1, 9]))])
    with pytest.raises(CorruptDeletionVectorError, match="outside"):
        decode_vector(raw[:-3], meta, 10, "f")
    with pytest.raises(CorruptDeletionVectorError, match="beyond"):
        decode_vector(raw, meta, 5, "f")
    b64 = bytearray(raw)
    b64[meta.offset + 4 : meta.offset + 8] = (1681511377).to_bytes(4, "little")
    with pytest.raises(CorruptDeletionVectorError, match="bitmap64"):
        decode_vector(bytes(b64), meta, 10, "f")


def test_index_manifest_round_trip() -> None:
    from lakeskip.types import INT

    meta = IndexFileMeta(
        "DELETION_VECTORS",
        "index-1",
        99,
        2,
        (DeletionVectorMeta("a", 1, 20, 3), DeletionVectorMeta("b", 29, 22, None)),
    )
    e = IndexManifestEntry(FileKind.ADD, (7,), 0, meta)
    for codec in ("null", "zstandard", "deflate"):
        assert decode_entries(encode_entries([e], (INT,), codec), (INT,), "m") == [e]


# -- options -------------------------------------------------------------------------------


def test_alias_is_stored_as_paimons_key(catalog: Catalog) -> None:
    t = _table(catalog)
    assert t.schema.options == {"deletion-vectors.enabled": "true"}


def test_unsupported_combinations_are_refused(catalog: Catalog) -> None:
    catalog.create_database("db", ignore_if_exists=True)
    with pytest.raises(InvalidOptionError, match="unaware-bucket"):
        catalog.create_table(
            "db.b",
            ROW,
            options={"deletion-vectors.enabled": "true", "bucket": "2", "bucket-key": "id"},
        )
    with pytest.raises(InvalidOptionError, match="bitmap64"):
        catalog.create_table(
            "db.c", ROW, options={"deletion-vectors": "true", "deletion-vectors.bitmap64": "true"}
        )
    with pytest.raises(InvalidOptionError, match="disagree"):
        catalog.create_table(
            "db.d",
            ROW,
            options={"deletion-vectors": "true", "deletion-vectors.enabled": "false"},
        )
    _table(catalog)
    with pytest.raises(InvalidOptionError, match="cannot be turned off"):
        catalog.alter_table("db.t", {"deletion-vectors": "false"})


# -- commit --------------------------------------------------------------------------------


def _rows(ids: range, dt: str) -> dict[str, list[Any]]:
    return {"id": list(ids), "dt": [dt] * len(ids)}


def _dvs(t: FileStoreTable) -> dict[str, list[int]]:
    return {name: sorted(t.read_deletion_vector(ref)) for name, ref in t.deletion_files().items()}


def test_dvs_commit_carry_over_and_drop(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog)
    a = write_file(t, _rows(range(10), "x"), ("x",))
    b = write_file(t, _rows(range(10, 20), "x"), ("x",))
    c = write_file(t, _rows(range(20, 30), "y"), ("y",))
    t.commit([a, b, c])
    s2 = t.commit(
        [],
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=[],
        deletion_vectors=DeletionVectorUpdate(
            {a.file.file_name: BitMap([1, 2]), c.file.file_name: BitMap([0])},
            {a.file.file_name: None, c.file.file_name: None},
        ),
    )
    assert s2 is not None and s2.index_manifest
    # as Paimon's FileStoreCommitImpl: record counts are data-file row counts (ADD minus
    # DELETE entries), so a commit of DVs alone changes neither
    assert (s2.total_record_count, s2.delta_record_count) == (30, 0)
    # nor does it list a manifest: no empty manifest file in its delta (nor on disk)
    assert read_manifest_list(t.file_io, t.path, s2.delta_manifest_list) == []
    assert len(t.manifest_metas(s2)) == 1
    assert _dvs(t) == {a.file.file_name: [1, 2], c.file.file_name: [0]}
    # an append carries the index manifest forward unchanged
    d = write_file(t, _rows(range(30, 31), "x"), ("x",))
    s3 = t.commit([d])
    assert s3 is not None and s3.index_manifest == s2.index_manifest
    # a second DV on b: a's DV (same index file) is carried into the new file
    base = {n: r.index_file for n, r in t.deletion_files().items()}
    t.commit(
        [],
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=[],
        deletion_vectors=DeletionVectorUpdate(
            {b.file.file_name: BitMap([9])}, {b.file.file_name: None}
        ),
    )
    assert _dvs(t) == {
        a.file.file_name: [1, 2],
        b.file.file_name: [9],
        c.file.file_name: [0],
    }
    # a writer that read a's old DV conflicts once it changed
    t.commit(
        [],
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=[],
        deletion_vectors=DeletionVectorUpdate(
            {a.file.file_name: BitMap([1, 2, 3])},
            {a.file.file_name: t.deletion_files()[a.file.file_name].index_file},
        ),
    )
    latest = t.latest_snapshot()
    with pytest.raises(CommitConflictError, match="deletion vector"):
        t.commit(
            [],
            kind=CommitKind.OVERWRITE,
            overwrite_partitions=[],
            deletion_vectors=DeletionVectorUpdate(
                {a.file.file_name: BitMap([4])}, {a.file.file_name: base[a.file.file_name]}
            ),
        )
    assert t.latest_snapshot() == latest
    # compaction of a drops its DV in the same snapshot; re-adding the same file keeps it
    merged = write_file(t, _rows(range(4, 10), "x"), ("x",))
    t.commit([merged], deleted=[a], kind=CommitKind.COMPACT)
    assert a.file.file_name not in _dvs(t) and _dvs(t)[b.file.file_name] == [9]
    t.commit([c], deleted=[c], kind=CommitKind.COMPACT)
    assert _dvs(t)[c.file.file_name] == [0]
    # a DV for a file that is gone is a conflict
    with pytest.raises(CommitConflictError, match="no longer live"):
        t.commit(
            [],
            kind=CommitKind.OVERWRITE,
            overwrite_partitions=[],
            deletion_vectors=DeletionVectorUpdate({a.file.file_name: BitMap([0])}, {}),
        )


def test_missing_index_file_is_an_error_naming_it(catalog: Catalog, write_file: Any) -> None:
    t = _table(catalog)
    a = write_file(t, _rows(range(10), "x"), ("x",))
    t.commit([a])
    t.commit(
        [],
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=[],
        deletion_vectors=DeletionVectorUpdate({a.file.file_name: BitMap([1])}, {}),
    )
    ref = t.deletion_files()[a.file.file_name]
    t.file_io.delete(ref.path)
    with pytest.raises(CorruptDeletionVectorError, match=ref.index_file):
        t.read_deletion_vector(ref)


# -- maintenance ---------------------------------------------------------------------------


def _set_dv(t: FileStoreTable, name: str, positions: list[int]) -> None:
    ref = t.deletion_files().get(name)
    t.commit(
        [],
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=[],
        deletion_vectors=DeletionVectorUpdate(
            {name: BitMap(positions)}, {name: ref.index_file if ref else None}
        ),
    )


def test_expiry_and_orphans_know_index_files(catalog: Catalog, write_file: Any) -> None:
    import os
    import time

    from lakeskip.catalog.ops.maintenance import expire_snapshots, remove_orphan_files

    t = _table(catalog)
    a = write_file(t, _rows(range(10), "x"), ("x",))
    b = write_file(t, _rows(range(10, 20), "y"), ("y",))
    t.commit([a, b])
    _set_dv(t, a.file.file_name, [1])
    _set_dv(t, b.file.file_name, [2])
    first = t.deletion_files()
    _set_dv(t, a.file.file_name, [1, 3])  # a's index file is replaced; b's stays
    live = t.deletion_files()
    assert live[b.file.file_name] == first[b.file.file_name]
    old_a = first[a.file.file_name]
    index_dir = f"{t.path}/index"
    manifests_before = {n for n in os.listdir(f"{t.path}/manifest") if n.startswith("index-")}
    result = expire_snapshots(t, retain_last=1)
    assert result.dv_files_deleted == 1 and not os.path.exists(old_a.path)
    assert {os.path.basename(r.path) for r in live.values()} == set(os.listdir(index_dir))
    latest_manifest = t.latest_snapshot().index_manifest
    left = {n for n in os.listdir(f"{t.path}/manifest") if n.startswith("index-")}
    assert left == {latest_manifest} and latest_manifest in manifests_before
    assert _dvs(t) == {a.file.file_name: [1, 3], b.file.file_name: [2]}
    # an unreferenced index file is an orphan; live ones are not
    stray = f"{index_dir}/index-stray-0"
    t.file_io.write_bytes(stray, b"\x01")
    old = time.time() - 3600
    for n in os.listdir(index_dir):
        os.utime(f"{index_dir}/{n}", (old, old))
    orphans = remove_orphan_files(t, int(time.time() * 1000) - 1000)
    assert orphans.paths == (stray,)
    assert _dvs(t) == {a.file.file_name: [1, 3], b.file.file_name: [2]}


def test_planner_skips_files_whose_rows_are_all_deleted(catalog: Catalog, write_file: Any) -> None:
    from lakeskip.planner.report import SkipTier
    from lakeskip.planner.scan import ScanPlanner

    t = _table(catalog)
    a = write_file(t, _rows(range(3), "x"), ("x",))
    b = write_file(t, _rows(range(3, 6), "x"), ("x",))
    t.commit([a, b])
    _set_dv(t, a.file.file_name, [0, 1, 2])  # every row of a (written by another engine)
    _set_dv(t, b.file.file_name, [0, 1])
    plan = ScanPlanner(t).plan(None)
    assert [e.file.file_name for e in plan.files] == [b.file.file_name]
    (dead,) = [d for d in plan.decisions if not d.keep]
    assert dead.entry.file.file_name == a.file.file_name and dead.tier is SkipTier.DELETED
    assert [d.keep for d in plan.decisions] == [True, False]  # kept first, as file by file


def test_a_dv_moved_by_a_neighbours_commit_is_no_conflict(
    catalog: Catalog, write_file: Any
) -> None:
    t = _table(catalog)
    a = write_file(t, _rows(range(10), "x"), ("x",))
    b = write_file(t, _rows(range(10, 20), "x"), ("x",))
    t.commit([a, b])
    both = DeletionVectorUpdate(
        {a.file.file_name: BitMap([1]), b.file.file_name: BitMap([2])},
        {a.file.file_name: None, b.file.file_name: None},
    )
    t.commit([], kind=CommitKind.OVERWRITE, overwrite_partitions=[], deletion_vectors=both)
    refs = t.deletion_files()
    assert refs[a.file.file_name].index_file == refs[b.file.file_name].index_file
    read_b = t.read_deletion_vector(refs[b.file.file_name])
    # writer 1 changes a's DV; b's DV is carried into a new index file
    _set_dv(t, a.file.file_name, [1, 4])
    # writer 2 read b's DV before that: it only moved, same positions -> commits
    t.commit(
        [],
        kind=CommitKind.OVERWRITE,
        overwrite_partitions=[],
        deletion_vectors=DeletionVectorUpdate(
            {b.file.file_name: BitMap([2, 3])},
            {b.file.file_name: refs[b.file.file_name].index_file},
            {b.file.file_name: read_b},
        ),
    )
    assert _dvs(t) == {a.file.file_name: [1, 4], b.file.file_name: [2, 3]}
    # but a writer whose read DV differs from the current one conflicts
    stale = t.deletion_files()[a.file.file_name]
    _set_dv(t, a.file.file_name, [1, 4, 5])
    with pytest.raises(CommitConflictError, match="deletion vector"):
        t.commit(
            [],
            kind=CommitKind.OVERWRITE,
            overwrite_partitions=[],
            deletion_vectors=DeletionVectorUpdate(
                {a.file.file_name: BitMap([1, 4, 9])},
                {a.file.file_name: stale.index_file},
                {a.file.file_name: BitMap([1, 4])},
            ),
        )
