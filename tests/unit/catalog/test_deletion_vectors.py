"""Deletion vectors: block and index-file format, index manifest, and the commit side."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from lakeskip.catalog import Catalog, FileStoreTable
from lakeskip.catalog.deletion_vectors import (
    MAGIC,
    DeletionVectorMeta,
    DeletionVectorUpdate,
    IndexFileMeta,
    decode_vector,
    encode_index_file,
    encode_vector,
)
from lakeskip.catalog.index_manifest import IndexManifestEntry, decode_entries, encode_entries
from lakeskip.catalog.manifest import FileKind
from lakeskip.catalog.snapshot import CommitKind
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


@settings(max_examples=60, deadline=None)
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


@settings(max_examples=200, deadline=None)
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
