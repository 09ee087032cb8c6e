"""Decoded manifests on local disk, so that a fresh process does not decode Avro again.

Decoding a manifest (fastavro's records, then one :class:`DataFileMeta` per entry) was most
of a fresh process's first plan: about 25 µs an entry, 2-3 s at 100,000 files. Manifest files
are immutable (every write makes a new ``manifest-<uuid>-0``), so their decoded entries can be
kept across processes, like the in-memory :mod:`lakeskip.catalog.cache` keeps them across
queries: one file per manifest under ``~/.cache/lakeskip/manifests`` (``marshal`` of the
entries' field tuples, zstd-compressed, with an xxhash64 checksum), keyed by the table path,
the manifest's name and its size from the manifest list. The table's own files are never
touched: its manifests stay Paimon's Avro, read by Paimon and pypaimon as before.

Only manifests of at least ``LAKESKIP_MANIFEST_CACHE_MIN_ENTRIES`` entries (default 256) are
kept; smaller ones decode in a few milliseconds. ``LAKESKIP_MANIFEST_CACHE_DIR`` moves the
directory (``off`` turns the cache off), ``LAKESKIP_MANIFEST_CACHE_BYTES`` bounds it
(default 1 GiB; the least recently used files go first). A manifest decoded by a query is
stored by one background thread (:func:`store_later`: the query does not wait for the
encoding, a tenth of a first read's time at 100,000 entries; the process waits for it at
exit); not a local manifest whose columns are decoded in memory already (a plan of some of
its partitions read them): its entries are made from those, and decoding the local file again
costs about what loading it from here does. A cache file that is unreadable,
fails its checksum or names another manifest is ignored and the manifest decoded from the
table: the cache can cost a read, never change an answer.

The files are the current user's: ``marshal`` is not meant for data from others, so the
directory should not be shared with other users.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import marshal
import operator
import os
import struct
import tempfile
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import xxhash

from lakeskip.catalog.format.binary_row import deserialize_row, serialize_row
from lakeskip.catalog.format.data_file import DataFileMeta, SimpleStats
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry
from lakeskip.types import DataType

__all__ = ["cache_dir", "flush", "load", "min_entries", "store", "store_later"]

_MAGIC = b"LSMC"
# the layout of a cached entry follows DataFileMeta's fields: a field added, removed, renamed
# or moved is a new version, so files written by another lakeskip version are not read
_VERSION = zlib.crc32(",".join(f.name for f in dataclasses.fields(DataFileMeta)).encode() + b"/1")
_HEADER = struct.Struct("<4sIQQ")  # magic, version, checksum of the body, raw body size
_DEFAULT_BYTES = 1 << 30
_STATS_AT = (5, 6)  # key_stats, value_stats among DataFileMeta's fields
# every field of an entry's file in one C call (``dataclasses.fields`` per entry was a
# third of storing a 20,000-entry manifest)
_FILE_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(DataFileMeta)))


def cache_dir() -> Path | None:
    """Where decoded manifests are kept, or None when the cache is off."""
    text = os.environ.get("LAKESKIP_MANIFEST_CACHE_DIR")
    if text is not None and text.strip().lower() in ("", "off", "false", "0"):
        return None
    if text:
        return Path(text)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "lakeskip", "manifests")


def min_entries() -> int:
    """Manifests with fewer entries are not kept (default 256)."""
    return _int_env("LAKESKIP_MANIFEST_CACHE_MIN_ENTRIES", 256)


def _int_env(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name) or default)
    except ValueError:
        return default  # a cache setting never fails a query


def _file(root: Path, table_path: str, name: str, size: int) -> Path:
    digest = xxhash.xxh3_128_hexdigest(f"{table_path}\0{name}\0{size}".encode())
    return root / f"{digest}.lsmc"


def load(
    table_path: str, name: str, size: int, partition_types: Sequence[DataType]
) -> tuple[list[ManifestEntry], int] | None:
    """The entries of manifest ``name`` (``size`` bytes) if the cache holds them, and the
    bytes their fields take (for the in-memory cache's bound)."""
    root = cache_dir()
    if root is None:
        return None
    path = _file(root, table_path, name, size)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        entries = _decode(data, table_path, name, size, partition_types)
    except Exception:  # corrupt, truncated, another version: decode the manifest instead
        entries = None
    if entries is None:
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: evicted last
    return entries


def store(
    table_path: str,
    name: str,
    size: int,
    entries: Sequence[ManifestEntry],
    partition_types: Sequence[DataType],
) -> None:
    """Keep the decoded entries of manifest ``name`` (best effort: errors are ignored)."""
    root = _store_root(entries)
    if root is not None:
        _store(root, table_path, name, size, entries, partition_types)


def _store_root(entries: Sequence[ManifestEntry]) -> Path | None:
    """The directory to keep ``entries`` in; None when the cache is off or they are few."""
    root = cache_dir()
    return None if root is None or len(entries) < min_entries() else root


def _store(
    root: Path,
    table_path: str,
    name: str,
    size: int,
    entries: Sequence[ManifestEntry],
    partition_types: Sequence[DataType],
) -> None:
    try:
        data = _encode(entries, table_path, name, size, partition_types)
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, _file(root, table_path, name, size))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _written(root, len(data))
    except Exception:  # a full disk or a read-only home: no cache, same answers
        return


# one thread: stores are rare (a manifest's first read in a process) and each is a burst of
# Python work; its worker is joined at interpreter exit, so a queued store is not cut short
_STORER = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lakeskip-manifest-cache")
_PENDING: list[concurrent.futures.Future[None]] = []


def store_later(
    table_path: str,
    name: str,
    size: int,
    entries: Sequence[ManifestEntry],
    partition_types: Sequence[DataType],
) -> None:
    """:func:`store` on the background thread, into the directory the settings name now
    (``entries`` must not change afterwards)."""
    root = _store_root(entries)
    if root is None:
        return
    future = _STORER.submit(_store, root, table_path, name, size, entries, partition_types)
    with _LOCK:
        _PENDING[:] = [f for f in _PENDING if not f.done()]
        _PENDING.append(future)


def flush() -> None:
    """Wait until every :func:`store_later` so far has written its file (or given up)."""
    with _LOCK:
        pending = list(_PENDING)
    concurrent.futures.wait(pending)


def _encode(
    entries: Sequence[ManifestEntry],
    table_path: str,
    name: str,
    size: int,
    partition_types: Sequence[DataType],
) -> bytes:
    partitions: dict[tuple[Any, ...], bytes] = {}
    records = []
    for e in entries:
        part = partitions.get(e.partition)
        if part is None:
            part = partitions[e.partition] = serialize_row(e.partition, partition_types)
        fields = list(_FILE_FIELDS(e.file))
        for i in _STATS_AT:
            s: SimpleStats = fields[i]
            fields[i] = (s.min_values, s.max_values, s.null_counts)
        records.append((int(e.kind), part, e.bucket, e.total_buckets, tuple(fields)))
    body = marshal.dumps((table_path, name, size, records))
    packed: bytes = pa.Codec("zstd", 1).compress(body, asbytes=True)
    return _HEADER.pack(_MAGIC, _VERSION, xxhash.xxh64_intdigest(packed), len(body)) + packed


def _decode(
    data: bytes, table_path: str, name: str, size: int, partition_types: Sequence[DataType]
) -> tuple[list[ManifestEntry], int] | None:
    magic, version, checksum, raw_size = _HEADER.unpack_from(data)
    packed = memoryview(data)[_HEADER.size :]
    if magic != _MAGIC or version != _VERSION or xxhash.xxh64_intdigest(packed) != checksum:
        return None
    body = pa.Codec("zstd").decompress(packed, decompressed_size=raw_size, asbytes=True)
    got_path, got_name, got_size, records = marshal.loads(body)
    if (got_path, got_name, got_size) != (table_path, name, size):
        return None  # another manifest under the same digest
    kinds = {int(k): k for k in FileKind}
    partitions: dict[bytes, tuple[Any, ...]] = {}
    stats: dict[tuple[Any, ...], SimpleStats] = {}
    out = []
    for kind, part, bucket, total_buckets, f in records:
        partition = partitions.get(part)
        if partition is None:
            partition = partitions[part] = tuple(deserialize_row(part, partition_types))
        ks = stats.get(f[5])  # key stats repeat (empty on append tables): shared, as decoded
        if ks is None:
            ks = stats[f[5]] = SimpleStats(*f[5])
        # positional, in field order (as _encode wrote them; _VERSION names the fields)
        meta = DataFileMeta(*f[:5], ks, SimpleStats(*f[6]), *f[7:])  # type: ignore[call-arg]
        out.append(ManifestEntry(kinds[kind], partition, bucket, total_buckets, meta))
    return out, raw_size


# -- bound -------------------------------------------------------------------------------

_LOCK = threading.Lock()
_UNCHECKED = [0, False]  # bytes written since the last check, checked at least once


def _written(root: Path, n: int) -> None:
    limit = _int_env("LAKESKIP_MANIFEST_CACHE_BYTES", _DEFAULT_BYTES)
    with _LOCK:
        _UNCHECKED[0] += n
        if _UNCHECKED[1] and _UNCHECKED[0] < limit // 8:
            return
        _UNCHECKED[0], _UNCHECKED[1] = 0, True
    _evict(root, limit)


def _evict(root: Path, limit: int) -> None:
    """Drop the least recently used files until the directory holds at most 3/4 of
    ``limit`` (only when it holds more than ``limit``)."""
    files = []
    total = 0
    with contextlib.suppress(OSError), os.scandir(root) as it:
        for d in it:
            if d.name.endswith(".lsmc"):
                with contextlib.suppress(OSError):
                    st = d.stat()
                    files.append((st.st_mtime, st.st_size, d.path))
                    total += st.st_size
    if total <= limit:
        return
    for _, n, path in sorted(files):
        with contextlib.suppress(OSError):
            os.unlink(path)
            total -= n
        if total <= limit * 3 // 4:
            return
