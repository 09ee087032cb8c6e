"""Dynamic bucket mode without Spark: the HASH index file format, the bucket assigner as a
model over many writes (a key never in two buckets, buckets open at the target, the index
holds exactly the keys written), and the commit's HASH bookkeeping."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.deletion_vectors import IndexFileMeta
from lakeskip.catalog.format.hash_index import (
    HASH_INDEX,
    HashIndexChange,
    combine_hash_entries,
    decode_hashes,
    encode_hashes,
    key_hashes,
    read_hash_index,
    write_hash_index,
)
from lakeskip.catalog.format.index_manifest import IndexManifestEntry
from lakeskip.catalog.format.manifest import FileKind
from lakeskip.catalog.pk.dynamic_bucket import (
    AssignSpec,
    BucketMode,
    DynamicBucketOptions,
    PartitionIndex,
    assign_table,
    assigner_ids,
    bucket_mode,
    routing_values,
)
from lakeskip.errors import CommitConflictError, CorruptMetadataError, InvalidOptionError
from lakeskip.types import BIGINT, STRING

# -- the file format ---------------------------------------------------------------------


def test_hash_file_is_big_endian_int32s_as_paimon_writes_them() -> None:
    # Paimon's IntFileUtils.writeInt: (v >>> 24) & 0xFF first
    assert encode_hashes(np.array([1, -2], np.int32)) == bytes.fromhex("00000001fffffffe")
    assert decode_hashes(bytes.fromhex("00000001fffffffe"), "f").tolist() == [1, -2]
    with pytest.raises(CorruptMetadataError, match="whole number"):
        decode_hashes(b"\x00\x00\x01", "f")


@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=50))
def test_hash_file_round_trip(values: list[int]) -> None:
    arr = np.array(values, np.int32)
    assert decode_hashes(encode_hashes(arr), "f").tolist() == values


def test_read_hash_index_checks_row_count(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))[0]
    meta = write_hash_index(io, str(tmp_path), np.array([3, 4], np.int32))
    assert meta.index_type == HASH_INDEX and meta.row_count == 2 and meta.file_size == 8
    assert read_hash_index(io, str(tmp_path), meta).tolist() == [3, 4]
    bad = IndexFileMeta(HASH_INDEX, meta.file_name, 8, 3)
    with pytest.raises(CorruptMetadataError, match="says 3"):
        read_hash_index(io, str(tmp_path), bad)
    with pytest.raises(CorruptMetadataError, match="not found"):
        read_hash_index(io, str(tmp_path), IndexFileMeta(HASH_INDEX, "nope", 0, 0))


def test_key_hash_is_paimons_binary_row_hash() -> None:
    from lakeskip.catalog.format.bucket import row_hash

    ids = [0, 1, -7, 2**40]
    got = key_hashes([pa.array(ids, pa.int64())], (BIGINT,)).tolist()
    assert got == [row_hash((i,), (BIGINT,)) for i in ids]
    s = ["", "a", "longer than seven"]
    got = key_hashes([pa.array(s)], (STRING,)).tolist()
    assert got == [row_hash((x,), (STRING,)) for x in s]


# -- options and the mode ----------------------------------------------------------------


def test_bucket_mode_and_options() -> None:
    assert bucket_mode({"bucket": "-1"}, ["id"]) is BucketMode.DYNAMIC
    assert bucket_mode({}, ["id"]) is BucketMode.DYNAMIC
    assert bucket_mode({}, []) is BucketMode.UNAWARE
    assert bucket_mode({"bucket": "3"}, []) is BucketMode.FIXED
    o = DynamicBucketOptions.of({})
    assert o.target_row_num == 2_000_000 and o.max_buckets == -1
    assert o.assigners(8) == (8, 8)
    assert DynamicBucketOptions.of({"dynamic-bucket.initial-buckets": "3"}).assigners(8) == (8, 3)
    assert DynamicBucketOptions.of({"dynamic-bucket.assigner-parallelism": "2"}).assigners(8) == (
        2,
        2,
    )
    assert DynamicBucketOptions.of({"dynamic-bucket.max-buckets": "4"}).assigners(8) == (4, 4)
    with pytest.raises(InvalidOptionError, match="max-buckets"):
        DynamicBucketOptions.of({"dynamic-bucket.max-buckets": "0"})


def test_assigner_ids_follow_paimons_compute_assigner() -> None:
    # BucketAssigner.computeAssigner: (|ph % P| + |kh % A|) % P with Java remainders
    ph, kh = np.array([-7, 5, 2**31 - 1], np.int32), np.array([-3, 10, -(2**31)], np.int32)
    want = [
        (abs(int(math.fmod(p, 4))) + abs(int(math.fmod(k, 3)))) % 4
        for p, k in zip(ph, kh, strict=True)
    ]
    assert assigner_ids(ph, kh, 4, 3).tolist() == want


def test_routing_values_reach_distinct_spark_partitions() -> None:
    from lakeskip.catalog.format.bucket import murmur_words

    for n in (1, 2, 8, 13):
        routes = routing_values(n)
        h = murmur_words(routes.astype(np.uint32).reshape(-1, 1)).astype(np.int64)
        assert np.mod(h, n).tolist() == list(range(n))


# -- the assigner as a model over many writes ---------------------------------------------


def _spec(
    tmp: str, index: dict[Any, Any], channels: int, assigners: int, target: int
) -> AssignSpec:
    return AssignSpec(
        file_io=FileIO.for_uri(tmp)[0],
        table_path=tmp,
        partition_keys=("p",),
        partition_types=(BIGINT,),
        key=("id",),
        key_types=(BIGINT,),
        channels=channels,
        assigners=assigners,
        options=DynamicBucketOptions(target_row_num=target),
        index={p: tuple(sorted((b, m) for (q, b), m in index.items() if q == p)) for p, _ in index},
    )


def _one_write(
    tmp: str,
    index: dict[tuple[tuple[Any, ...], int], IndexFileMeta],
    rows: list[tuple[int, int]],
    channels: int,
    assigners: int,
    target: int,
    batch: int,
) -> dict[tuple[int, int], int]:
    """One write as the Spark tasks do it: rows shuffled to their assigner's task, each task
    assigning its rows batch by batch, then each bucket's HASH file rewritten."""
    spec = _spec(tmp, index, channels, assigners, target)
    table = pa.table(
        {"p": [p for p, _ in rows], "id": [k for _, k in rows]},
        schema=pa.schema([("p", pa.int64()), ("id", pa.int64())]),
    )
    from lakeskip.catalog.pk.dynamic_bucket import row_assigners

    ids = row_assigners(table, spec) if rows else np.empty(0, np.int32)
    got: dict[tuple[int, int], int] = {}
    written: dict[tuple[tuple[Any, ...], int], list[int]] = defaultdict(list)
    for task in range(channels):  # each task has its own state
        mine = table.filter(pa.array(ids == task)) if rows else table
        state: dict[Any, Any] = {}
        for start in range(0, mine.num_rows, batch):
            part = mine.slice(start, batch)
            buckets = assign_table(part, spec, state, lambda p: p)
            for p, k, b in zip(
                part.column("p").to_pylist(),
                part.column("id").to_pylist(),
                buckets.tolist(),
                strict=True,
            ):
                assert got.setdefault((p, k), b) == b
                written[((p,), b)].append(k)
    for key, keys in written.items():
        hashes = key_hashes([pa.array(keys, pa.int64())], (BIGINT,))
        old = index.get(key)
        before = read_hash_index(FileIO.for_uri(tmp)[0], tmp, old) if old else np.empty(0, np.int32)
        merged = np.union1d(before, hashes).astype(np.int32)
        if len(merged) != len(before):
            index[key] = write_hash_index(FileIO.for_uri(tmp)[0], tmp, merged)
    return got


@settings(max_examples=unit_examples(25), deadline=None)
@given(
    writes=st.lists(
        st.lists(st.tuples(st.integers(0, 1), st.integers(0, 60)), max_size=80),
        min_size=1,
        max_size=5,
    ),
    assigners=st.integers(1, 3),
    target=st.integers(1, 9),
    batch=st.integers(1, 30),
)
def test_model_keys_never_move_and_buckets_grow_at_the_target(
    tmp_path_factory: pytest.TempPathFactory,
    writes: list[list[tuple[int, int]]],
    assigners: int,
    target: int,
    batch: int,
) -> None:
    tmp = str(tmp_path_factory.mktemp("dyn"))
    index: dict[tuple[tuple[Any, ...], int], IndexFileMeta] = {}
    model: dict[tuple[int, int], int] = {}  # (partition, key) -> bucket
    for rows in writes:
        got = _one_write(tmp, index, rows, assigners, assigners, target, batch)
        for pk, b in got.items():
            assert model.setdefault(pk, b) == b, f"key {pk} moved from {model[pk]} to {b}"
    io = FileIO.for_uri(tmp)[0]
    contents = {k: set(read_hash_index(io, tmp, m).tolist()) for k, m in index.items()}
    for p in (0, 1):
        keys = sorted(k for (q, k) in model if q == p)
        # the index holds exactly the hashes of the keys written, each in its key's bucket
        want: dict[int, set[int]] = defaultdict(set)
        for k in keys:
            h = int(key_hashes([pa.array([k], pa.int64())], (BIGINT,))[0])
            want[model[(p, k)]].add(h)
        have = {b: hs for (q, b), hs in contents.items() if q == (p,)}
        assert have == dict(want)
        # growth: per assigner, its buckets b % A == a, all full but the last one
        per: dict[int, list[int]] = defaultdict(list)
        for b in sorted(have):
            per[b % assigners].append(b)
        for a, bs in per.items():
            assert bs == [a + i * assigners for i in range(len(bs))]
            sizes = [len(have[b]) for b in bs]
            assert all(s == target for s in sizes[:-1]) and 0 < sizes[-1] <= target


def test_partition_index_fills_then_opens_new_buckets() -> None:
    idx = PartitionIndex.empty(target=3, assigners=4, assigner=2)
    first = idx.assign(np.arange(7, dtype=np.int32)).tolist()
    assert first == [2, 2, 2, 6, 6, 6, 10]
    # a known hash keeps its bucket; new ones fill bucket 10 first
    assert idx.assign(np.array([4, 100, 101, 102], np.int32)).tolist() == [6, 10, 10, 14]
    # loaded from an index: bucket 6 has room (2 of 3), bucket 2 is full
    loaded = PartitionIndex(
        np.array([1, 2, 3, 4, 5], np.int32),
        np.array([2, 2, 2, 6, 6], np.int32),
        {2: 3, 6: 2},
        3,
        4,
        2,
    )
    assert loaded.assign(np.array([5, 9, 8], np.int32)).tolist() == [6, 6, 10]


def test_max_buckets_spreads_the_rest_over_existing_buckets() -> None:
    idx = PartitionIndex.empty(target=2, assigners=2, assigner=0, max_buckets=3)
    got = idx.assign(np.arange(10, dtype=np.int32))
    assert got[:4].tolist() == [0, 0, 2, 2]
    assert set(got[4:].tolist()) <= {0, 2}


# -- the commit's HASH bookkeeping ---------------------------------------------------------


def _entry(p: int, b: int, name: str) -> IndexManifestEntry:
    return IndexManifestEntry(FileKind.ADD, (p,), b, IndexFileMeta(HASH_INDEX, name, 4, 1))


def test_combine_replaces_per_bucket_and_checks_what_the_write_read() -> None:
    dv = IndexManifestEntry(FileKind.ADD, (0,), 0, IndexFileMeta("DELETION_VECTORS", "d", 1, 0))
    previous = [_entry(0, 0, "a"), _entry(0, 1, "b"), _entry(1, 0, "c"), dv]
    change = HashIndexChange((_entry(0, 1, "b2"),), {(0,): frozenset({(0, "a"), (1, "b")})})
    out = combine_hash_entries("t", previous, change, None)
    assert out is not None
    assert sorted(e.index_file.file_name for e in out) == ["a", "b2", "c", "d"]
    stale = HashIndexChange((_entry(0, 1, "b2"),), {(0,): frozenset({(0, "a")})})
    with pytest.raises(CommitConflictError, match="HASH"):
        combine_hash_entries("t", previous, stale, None)
    assert combine_hash_entries("t", previous, None, None) is None
    assert combine_hash_entries("t", previous, HashIndexChange(), None) is None
    # OVERWRITE of partition 0 drops its hash files, keeps the others and the DVs
    dropped = combine_hash_entries("t", previous, None, lambda p: p == (0,))
    assert dropped is not None
    assert sorted(e.index_file.file_name for e in dropped) == ["c", "d"]
    # rollback: exactly the target's hash files
    back = combine_hash_entries(
        "t", previous, HashIndexChange((_entry(1, 0, "z"),), replace_all=True), None
    )
    assert back is not None
    assert sorted(e.index_file.file_name for e in back) == ["d", "z"]
