"""Dynamic bucket mode (``bucket = -1`` on a primary-key table): Paimon's hash bucket assigner.

A key's bucket is not a function of the key: the first write of a key puts it in a bucket
with room (fewer than ``dynamic-bucket.target-row-num`` keys), opening a new bucket when none
has room, and the ``HASH`` index (:mod:`lakeskip.catalog.format.hash_index`) remembers the key's hash
so every later version goes to the same bucket. As Paimon's Spark writer does
(``PaimonSparkWriter`` HASH_DYNAMIC, ``HashBucketAssigner``, ``PartitionIndex``,
``SimpleHashBucketAssigner``), the assignment runs in ``P`` Spark tasks, ``A`` assigners::

    P = dynamic-bucket.assigner-parallelism (default: Spark's default parallelism)
    A = min(dynamic-bucket.initial-buckets, P) (default: P)
    assigner of a row = (|partHash % P| + |keyHash % A|) % P      BucketAssigner.computeAssigner
    buckets an assigner opens: b with b % A == assigner % A       BucketAssigner.isMyBucket

    per (partition, assigner), for each new key hash in arrival order:
      hash already in the index          -> its bucket
      else the first of my buckets (ascending) with < target hashes -> it (count + 1)
      else the smallest b of mine not used yet -> new bucket (count 1)
      (dynamic-bucket.max-buckets reached -> one of my buckets, chosen by the hash)

A hash is owned by exactly one assigner in a write, so a key never lands in two buckets; an
assigner loads from the index only its own hashes and the counts of its own buckets. Writes
that commit concurrently into the same partition could disagree on a new key's bucket: the
commit checks that the partition's ``HASH`` files are still the ones the write read
(:class:`~lakeskip.catalog.format.hash_index.HashIndexChange`) and the write is retried otherwise.

Example:
    >>> idx = PartitionIndex.empty(target=2, assigners=2, assigner=1)
    >>> idx.assign(np.array([10, 11, 10, 12], np.int32)).tolist()
    [1, 1, 1, 3]
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.bucket import _hash_rows, murmur_words
from lakeskip.catalog.format.deletion_vectors import IndexFileMeta
from lakeskip.catalog.format.hash_index import key_hashes, read_hash_index
from lakeskip.errors import InvalidOptionError
from lakeskip.types import DataType

__all__ = [
    "ASSIGNER_PARALLELISM",
    "INITIAL_BUCKETS",
    "MAX_BUCKETS",
    "TARGET_ROW_NUM",
    "AssignSpec",
    "BucketMode",
    "DynamicBucketOptions",
    "PartitionIndex",
    "assign_table",
    "assigner_ids",
    "bucket_mode",
    "partition_hashes",
    "routing_values",
    "row_assigners",
]

TARGET_ROW_NUM = "dynamic-bucket.target-row-num"
INITIAL_BUCKETS = "dynamic-bucket.initial-buckets"
ASSIGNER_PARALLELISM = "dynamic-bucket.assigner-parallelism"
MAX_BUCKETS = "dynamic-bucket.max-buckets"
DEFAULT_TARGET_ROW_NUM = 2_000_000
_MAX_BUCKET_ID = 32767  # Paimon keeps buckets in a short (Int2ShortHashMap)


class BucketMode(enum.Enum):
    """How a table's rows are spread over ``bucket-<n>/`` directories (Paimon's
    ``BucketMode``): one place decides it from the options."""

    UNAWARE = "bucket-unaware"  # append table, bucket = -1: everything in bucket 0
    FIXED = "hash-fixed"  # bucket = N: the bucket key's hash modulo N
    DYNAMIC = "hash-dynamic"  # primary key, bucket = -1: the HASH index says


def bucket_mode(options: Mapping[str, str], primary_keys: Sequence[str]) -> BucketMode:
    """The table's bucket mode.

    >>> bucket_mode({"bucket": "-1"}, ["id"]).name, bucket_mode({}, []).name
    ('DYNAMIC', 'UNAWARE')
    >>> bucket_mode({"bucket": "4"}, ["id"]).name
    'FIXED'
    """
    raw = str(options.get("bucket", "-1")).strip()
    if raw != "-1":
        return BucketMode.FIXED
    return BucketMode.DYNAMIC if primary_keys else BucketMode.UNAWARE


def _int_option(options: Mapping[str, str], key: str, lo: int) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        n = int(str(raw).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r} = {raw!r}: not an integer") from None
    if n < lo:
        raise InvalidOptionError(f"option {key!r} = {raw!r}: must be >= {lo}")
    return n


@dataclass(frozen=True, slots=True)
class DynamicBucketOptions:
    """The ``dynamic-bucket.*`` options, with Paimon's defaults."""

    target_row_num: int = DEFAULT_TARGET_ROW_NUM
    initial_buckets: int | None = None
    assigner_parallelism: int | None = None
    max_buckets: int = -1

    @staticmethod
    def of(options: Mapping[str, str]) -> DynamicBucketOptions:
        """Parse (raises InvalidOptionError on a bad value).

        >>> DynamicBucketOptions.of({"dynamic-bucket.target-row-num": "10"}).target_row_num
        10
        """
        target = _int_option(options, TARGET_ROW_NUM, 1)
        max_buckets = _int_option(options, MAX_BUCKETS, -1)
        if max_buckets == 0:
            raise InvalidOptionError(f"option {MAX_BUCKETS!r} = '0': must be -1 or > 0")
        return DynamicBucketOptions(
            DEFAULT_TARGET_ROW_NUM if target is None else target,
            _int_option(options, INITIAL_BUCKETS, 1),
            _int_option(options, ASSIGNER_PARALLELISM, 1),
            -1 if max_buckets is None else max_buckets,
        )

    def assigners(self, default_parallelism: int) -> tuple[int, int]:
        """(P channels, A assigners) as Paimon's Spark writer picks them."""
        p = self.assigner_parallelism or max(1, default_parallelism)
        if self.max_buckets != -1:
            p = min(p, self.max_buckets)
        a = min(self.initial_buckets, p) if self.initial_buckets is not None else p
        return p, a


def assigner_ids(
    partition_hash: np.ndarray, key_hash: np.ndarray, channels: int, assigners: int
) -> np.ndarray:
    """``BucketAssigner.computeAssigner`` of every row (Java remainders).

    >>> assigner_ids(np.array([7], np.int32), np.array([-5], np.int32), 4, 4).tolist()
    [0]
    """
    start = np.abs(np.fmod(partition_hash.astype(np.int64), channels))
    own = np.abs(np.fmod(key_hash.astype(np.int64), assigners))
    out: np.ndarray = ((start + own) % channels).astype(np.int32)
    return out


def routing_values(channels: int) -> np.ndarray:
    """For each assigner id ``a``, an INT whose Spark hash partitioning (``pmod(murmur3(v,
    42), channels)``: Spark's ``repartition(n, col)``) is ``a``, so the assigners land in
    ``channels`` distinct tasks. Spark's Murmur3 of an INT is Paimon's hash of one word."""
    out = np.full(channels, -1, dtype=np.int32)
    found = 0
    start = 0
    while found < channels:
        cand = np.arange(start, start + 4096, dtype=np.uint32)
        h = murmur_words(cand.reshape(-1, 1)).astype(np.int64)
        target = np.mod(h, channels)
        for v, t in zip(cand.tolist(), target.tolist(), strict=True):
            if out[t] < 0:
                out[t] = v
                found += 1
        start += 4096
    return out


class PartitionIndex:
    """One assigner's view of one partition: its key hashes -> bucket, and how many hashes
    each of its buckets holds (Paimon's ``PartitionIndex``, vectorised over a batch)."""

    def __init__(
        self,
        hashes: np.ndarray,
        buckets: np.ndarray,
        counts: Mapping[int, int],
        target: int,
        assigners: int,
        assigner: int,
        max_buckets: int = -1,
    ) -> None:
        order = np.argsort(hashes, kind="stable")
        self._base_h = hashes[order].astype(np.int32)
        self._base_b = buckets[order].astype(np.int32)
        self._new: dict[int, int] = {}
        self.counts: dict[int, int] = dict(counts)
        self.target = target
        self.assigners = assigners
        self.assigner = assigner
        self.max_buckets = max_buckets

    @staticmethod
    def empty(target: int, assigners: int, assigner: int, max_buckets: int = -1) -> PartitionIndex:
        """A partition with no index yet (a new table or partition, or INSERT OVERWRITE)."""
        e = np.empty(0, np.int32)
        return PartitionIndex(e, e, {}, target, assigners, assigner, max_buckets)

    def _mine(self, b: int) -> bool:
        return b % self.assigners == self.assigner % self.assigners

    def _lookup(self, uniq: np.ndarray) -> np.ndarray:
        out = np.full(len(uniq), -1, dtype=np.int32)
        if len(self._base_h):
            pos = np.minimum(np.searchsorted(self._base_h, uniq), len(self._base_h) - 1)
            hit = self._base_h[pos] == uniq
            out[hit] = self._base_b[pos[hit]]
        if self._new:
            miss = np.flatnonzero(out < 0)
            got = [self._new.get(h, -1) for h in uniq[miss].tolist()]
            out[miss] = np.asarray(got, dtype=np.int32)
        return out

    def assign(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket of every row's key hash; new hashes are recorded in arrival order."""
        if len(hashes) == 0:
            return np.empty(0, np.int32)
        uniq, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        buckets = self._lookup(uniq)
        fresh = np.flatnonzero(buckets < 0)
        if len(fresh):
            fresh = fresh[np.argsort(first[fresh], kind="stable")]  # arrival order
            buckets[fresh] = self._place(len(fresh), uniq[fresh])
            self._new.update(zip(uniq[fresh].tolist(), buckets[fresh].tolist(), strict=True))
        out: np.ndarray = buckets[inverse.reshape(-1)]
        return out

    def _place(self, n: int, new_hashes: np.ndarray) -> np.ndarray:
        """Buckets for ``n`` new hashes, in order: fill my buckets with room (ascending),
        then open new ones of mine."""
        plan: list[tuple[int, int]] = []  # (bucket, how many)
        left = n
        for b in sorted(self.counts):
            room = self.target - self.counts[b]
            if room > 0 and left:
                take = min(room, left)
                plan.append((b, take))
                left -= take
        limit = _MAX_BUCKET_ID if self.max_buckets == -1 else self.max_buckets - 1
        b = self.assigner % self.assigners
        while left:
            while b in self.counts or any(p == b for p, _ in plan):
                b += self.assigners
            if b > limit:
                break
            take = min(self.target, left)
            plan.append((b, take))
            left -= take
            b += self.assigners
        if left and self.max_buckets == -1:
            raise InvalidOptionError(
                f"dynamic bucket mode needs more than {_MAX_BUCKET_ID + 1} buckets: raise "
                f"{TARGET_ROW_NUM!r} (now {self.target})"
            )
        ids = np.repeat(
            np.array([p for p, _ in plan], np.int32), np.array([c for _, c in plan], np.int64)
        )
        for p, c in plan:
            self.counts[p] = self.counts.get(p, 0) + c
        if left:  # max-buckets reached: spread the rest over my buckets (Paimon: at random)
            mine = np.array(sorted(self.counts), np.int32)
            if len(mine) == 0:
                raise InvalidOptionError(
                    f"option {MAX_BUCKETS!r} = {self.max_buckets} leaves assigner "
                    f"{self.assigner} no bucket: lower {ASSIGNER_PARALLELISM!r}"
                )
            rest = mine[np.abs(np.fmod(new_hashes[n - left :].astype(np.int64), len(mine)))]
            ids = np.concatenate([ids, rest])
        return ids


@dataclass(frozen=True, slots=True)
class AssignSpec:
    """What an assigner task needs (picklable): the table's partition and key columns,
    the assigner counts, and per partition (normalized) its ``HASH`` files at the write's
    snapshot ((bucket, file) pairs); ``fresh``: ignore them (INSERT OVERWRITE)."""

    file_io: FileIO
    table_path: str
    partition_keys: tuple[str, ...]
    partition_types: tuple[DataType, ...]
    key: tuple[str, ...]
    key_types: tuple[DataType, ...]
    channels: int
    assigners: int
    options: DynamicBucketOptions
    index: Mapping[tuple[Any, ...], tuple[tuple[int, IndexFileMeta], ...]] = field(
        default_factory=dict
    )
    fresh: bool = False


def partition_hashes(table: pa.Table, spec: AssignSpec) -> np.ndarray:
    """``BinaryRow.hashCode()`` of every row's partition (the empty row when unpartitioned)."""
    n = table.num_rows
    if not spec.partition_keys:
        empty = murmur_words(np.zeros((1, 2), np.uint32))[0]  # the 8-byte empty BinaryRow
        return np.full(n, empty, dtype=np.int32)
    return _hash_rows(
        [table.column(k).combine_chunks() for k in spec.partition_keys], spec.partition_types
    )


def row_assigners(table: pa.Table, spec: AssignSpec) -> np.ndarray:
    """The assigner id of every row."""
    keys = key_hashes([table.column(k) for k in spec.key], spec.key_types)
    return assigner_ids(partition_hashes(table, spec), keys, spec.channels, spec.assigners)


def load_index(
    spec: AssignSpec, partition: tuple[Any, ...], partition_hash: int, assigner: int
) -> PartitionIndex:
    """An assigner's :class:`PartitionIndex` from the partition's ``HASH`` files: the hashes
    it owns and the sizes of its buckets (Paimon's ``PartitionIndex.loadIndex``)."""
    o = spec.options
    files = () if spec.fresh else spec.index.get(partition, ())
    if not files:
        return PartitionIndex.empty(o.target_row_num, spec.assigners, assigner, o.max_buckets)
    hs: list[np.ndarray] = []
    bs: list[np.ndarray] = []
    counts: dict[int, int] = {}
    for bucket, meta in files:
        hashes = read_hash_index(spec.file_io, spec.table_path, meta)
        if bucket % spec.assigners == assigner % spec.assigners:
            counts[bucket] = counts.get(bucket, 0) + len(hashes)
        owned = hashes[
            assigner_ids(
                np.full(len(hashes), partition_hash, np.int32),
                hashes,
                spec.channels,
                spec.assigners,
            )
            == assigner
        ]
        hs.append(owned)
        bs.append(np.full(len(owned), bucket, np.int32))
    return PartitionIndex(
        np.concatenate(hs),
        np.concatenate(bs),
        counts,
        o.target_row_num,
        spec.assigners,
        assigner,
        o.max_buckets,
    )


def _groups(values: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    order = np.argsort(values, kind="stable")
    sv = values[order]
    starts = np.flatnonzero(np.r_[True, sv[1:] != sv[:-1]]) if len(sv) else np.empty(0, int)
    ends = np.r_[starts[1:], len(sv)]
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        yield int(sv[s]), order[s:e]


def assign_table(
    table: pa.Table,
    spec: AssignSpec,
    state: dict[tuple[tuple[Any, ...], int], PartitionIndex],
    normalize: Any,
) -> np.ndarray:
    """The bucket of every row of ``table`` (rows in arrival order), updating ``state``
    (one :class:`PartitionIndex` per (partition, assigner), loaded on first use).
    ``normalize``: internal partition values of a row's partition tuple."""
    n = table.num_rows
    out = np.empty(n, dtype=np.int32)
    if n == 0:
        return out
    part_h = partition_hashes(table, spec)
    keys = key_hashes([table.column(k) for k in spec.key], spec.key_types)
    ids = assigner_ids(part_h, keys, spec.channels, spec.assigners)
    if spec.partition_keys:
        parts = table.select(list(spec.partition_keys))
        groups = parts.group_by(list(spec.partition_keys), use_threads=False).aggregate([])
        partitions = [tuple(r[k] for k in spec.partition_keys) for r in groups.to_pylist()]
    else:
        partitions = [()]
    for values in partitions:
        if spec.partition_keys:
            mask: Any = None
            for k, v in zip(spec.partition_keys, values, strict=True):
                col = table.column(k)
                m = pc.is_null(col) if v is None else pc.fill_null(pc.equal(col, v), False)
                mask = m if mask is None else pc.and_(mask, m)
            rows = np.flatnonzero(np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool))
        else:
            rows = np.arange(n)
        partition = normalize(values)
        for assigner, sub in _groups(ids[rows]):
            idx = rows[sub]
            key = (partition, assigner)
            index = state.get(key)
            if index is None:
                index = state[key] = load_index(spec, partition, int(part_h[idx[0]]), assigner)
            out[idx] = index.assign(keys[idx])
    return out
