"""A manifest's entries decoded into columns (numpy arrays per field), no object per entry.

A manifest of 100,000 entries took 2-3 s of Python to decode record by record (fastavro's
dicts, then one :class:`~lakeskip.catalog.format.data_file.DataFileMeta` each), most of a
table's first plan. Here the Avro container is decoded **column-wise**: the records of one
Avro block follow each other (each starts where the last ended), but blocks are independent,
so the decoder walks every block at once: record ``j`` of all blocks, field by field, each
field one vectorised step over an array of block positions. A long is its value; a string
or bytes field its start and length in the decompressed buffer; an array its items with
their records. Entries are then made only for the rows asked for
(:meth:`ManifestColumns.entries`): a plan of one partition makes the objects of that
partition's files, not of the manifest's.

The decoder reads the writer schema from the file (fields matched by name, unknown ones
skipped, as fastavro and Paimon do). Where it meets what it does not handle -- a union that
is not ``[null, T]``, an array of records, a codec other than null / deflate / zstandard, a
field of an unexpected type -- or anything malformed, :func:`decode` returns ``None`` and
the caller decodes the manifest the record-by-record way (:func:`~lakeskip.catalog.format.
manifest.read_manifest`), which says what is wrong. Both make equal entries (the oracle test
compares them on random manifests).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
import zlib
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
import pyarrow as pa

from lakeskip.catalog.format.binary_row import EMPTY_ROW_BYTES, deserialize_row
from lakeskip.catalog.format.data_file import DataFileMeta, SimpleStats
from lakeskip.catalog.format.manifest_entry import FileKind, ManifestEntry
from lakeskip.errors import CorruptMetadataError
from lakeskip.types import DataType

__all__ = ["LiveColumns", "ManifestColumns", "decode"]

_MAGIC = b"Obj\x01"
_FORMAT = 2  # the manifest entry version read_manifest accepts
_AR10 = np.arange(10, dtype=np.int64)
_SHIFTS = (7 * _AR10).astype(np.uint64)
_T = TypeVar("_T")
_EMPTY_STATS = SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())
_MADE_BYTES = 1200  # one made entry's Python objects (the catalog's manifest cache's figure)


class _Unsupported(Exception):
    """The decoder does not handle this file: decode it record by record instead."""


# -- reading primitives over many positions at once ---------------------------------------


def _varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The zigzag varints (Avro int / long) starting at each of ``pos``: (values, next
    positions)."""
    first = buf[pos]
    if not (first & 0x80).any():  # every one a single byte: most of a manifest's
        n = first.astype(np.int64)
        return (n >> 1) ^ -(n & 1), pos + 1
    g = buf[pos[:, None] + _AR10].astype(np.uint64)
    cont = g >= 0x80
    if cont.all(axis=1).any():
        raise _Unsupported("varint longer than 10 bytes")
    length = np.argmin(cont, axis=1) + 1
    valid = _AR10[None, :] < length[:, None]
    n = np.where(valid, (g & np.uint64(0x7F)) << _SHIFTS, np.uint64(0)).sum(axis=1, dtype=np.uint64)
    value = (n >> np.uint64(1)).astype(np.int64) ^ -(n & np.uint64(1)).astype(np.int64)
    return value, pos + length


class _Chunks:
    """What a field decoded, step by step: (record rows, values...) per step."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, *arrays: np.ndarray) -> None:
        if len(arrays[0]):
            self.parts.append(arrays)

    def cat(self, width: int) -> list[np.ndarray]:
        if not self.parts:
            return [np.zeros(0, dtype=np.int64) for _ in range(width)]
        return [np.concatenate([p[i] for p in self.parts]) for i in range(width)]


# -- the schema as decoding steps ---------------------------------------------------------


class _Node:
    """Decodes one Avro type at many positions (``pos``) of rows ``rows`` (record numbers,
    or item keys inside an array); returns the next positions."""

    def run(self, buf: np.ndarray, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class _Long(_Node):
    def __init__(self) -> None:
        self.out = _Chunks()

    def run(self, buf: np.ndarray, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
        value, pos = _varints(buf, pos)
        self.out.add(rows, value)
        return pos


class _Bytes(_Node):
    def __init__(self) -> None:
        self.out = _Chunks()

    def run(self, buf: np.ndarray, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
        length, pos = _varints(buf, pos)
        if (length < 0).any():
            raise _Unsupported("negative length")
        self.out.add(rows, pos, length)
        after: np.ndarray = pos + length
        return after


class _Fixed(_Node):
    """Skipped: ``boolean``, ``float``, ``double``, ``fixed`` (a known size)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def run(self, buf: np.ndarray, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return pos + self.size


class _Null(_Node):
    def run(self, buf: np.ndarray, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return pos


class _Optional(_Node):
    """``[null, T]`` (either order): rows whose branch is null are left out of ``T``'s
    output, so a missing row means null."""

    def __init__(self, inner: _Node, null_branch: int) -> None:
        self.inner = inner
        self.null_branch = null_branch

    def run(self, buf: np.ndarray, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
        branch, pos = _varints(buf, pos)
        if ((branch != 0) & (branch != 1)).any():
            raise _Unsupported("union branch out of range")
        some = branch != self.null_branch
        if some.all():
            return self.inner.run(buf, pos, rows)
        if some.any():
            pos = pos.copy()
            pos[some] = self.inner.run(buf, pos[some], rows[some])
        return pos


class _Record(_Node):
    def __init__(self, fields: list[tuple[str, _Node]]) -> None:
        self.fields = fields
        self.by_name = dict(fields)

    def run(self, buf: np.ndarray, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
        for _, node in self.fields:
            pos = node.run(buf, pos, rows)
        return pos


class _Array(_Node):
    """An array of a leaf type (of a fixed size: skipped): its items' rows are item keys ``row * _ITEMS + i`` (so
    sorting them orders items by record, then by position)."""

    def __init__(self, item: _Node) -> None:
        leaf = item.inner if isinstance(item, _Optional) else item
        if not isinstance(leaf, (_Long, _Bytes, _Fixed)) or (
            isinstance(leaf, _Fixed) and leaf.size < 1
        ):
            raise _Unsupported("array of a non-leaf type")  # or of items of no bytes
        self.item = item
        self.present = _Chunks()  # rows whose array was read (not null)
        self.keys = _Chunks()  # every item's key, null items included

    def run(self, buf: np.ndarray, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
        self.present.add(rows)
        pos = pos.copy()
        seen = np.zeros(len(pos), dtype=np.int64)
        active = np.arange(len(pos))
        while len(active):
            count, at = _varints(buf, pos[active])
            neg = count < 0
            if neg.any():  # a negative count is followed by the block's size in bytes
                count = np.abs(count)
                _, at[neg] = _varints(buf, at[neg])
            pos[active] = at
            more = count > 0
            active, count = active[more], count[more]
            if (count > len(buf) - pos[active]).any():  # each item takes a byte at least
                raise _Unsupported("array longer than its bytes")
            if (count > _ITEMS).any() or (seen[active] + count > _ITEMS).any():
                raise _Unsupported("array too long")
            for i in range(int(count.max()) if len(count) else 0):
                sub = active[count > i]
                keys = rows[sub] * _ITEMS + seen[sub] + i
                self.keys.add(keys)
                pos[sub] = self.item.run(buf, pos[sub], keys)
            seen[active] += count
        return pos


_ITEMS = 1 << 20  # most items an array of one record may hold here


_FIXED_SIZES = {"boolean": 1, "float": 4, "double": 8}


def _node(schema: Any, names: dict[str, Any]) -> _Node:
    if isinstance(schema, str):
        if schema in ("int", "long", "enum"):
            return _Long()
        if schema in ("bytes", "string"):
            return _Bytes()
        if schema == "null":
            return _Null()
        if schema in _FIXED_SIZES:
            return _Fixed(_FIXED_SIZES[schema])
        if schema in names:
            return _node(names[schema], names)
        raise _Unsupported(f"type {schema}")
    if isinstance(schema, list):
        if len(schema) == 2 and "null" in schema:
            null_at = schema.index("null")
            return _Optional(_node(schema[1 - null_at], names), null_at)
        raise _Unsupported("union")
    if isinstance(schema, dict):
        t = schema.get("type")
        if t == "record":
            if "name" in schema:
                names[schema["name"]] = schema
            return _Record([(f["name"], _node(f["type"], names)) for f in schema["fields"]])
        if t == "array":
            return _Array(_node(schema["items"], names))
        if t == "enum":
            return _Long()
        if t == "fixed":
            return _Fixed(int(schema["size"]))
        if isinstance(t, (str, list, dict)):
            return _node(t, names)  # a logical type over a primitive, or a nested type
    raise _Unsupported(f"type {schema!r}")


# -- the container ------------------------------------------------------------------------


def _long_at(data: bytes, at: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = data[at]
        at += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), at
        if shift > 63:
            raise _Unsupported("bad varint")


def _bytes_at(data: bytes, at: int) -> tuple[bytes, int]:
    """The length-prefixed bytes at ``at``; a damaged length (negative, past the end) is
    refused: a negative one would walk back over what was read (an endless header loop)."""
    n, at = _long_at(data, at)
    if n < 0 or at + n > len(data):
        raise _Unsupported("bad length")
    return data[at : at + n], at + n


def _header(data: bytes) -> tuple[dict[str, bytes], bytes, int]:
    if data[:4] != _MAGIC:
        raise _Unsupported("not an Avro container")
    at = 4
    meta: dict[str, bytes] = {}
    while True:
        count, at = _long_at(data, at)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, at = _long_at(data, at)
        if count > len(data) - at:  # each entry takes at least one byte
            raise _Unsupported("bad metadata count")
        for _ in range(count):
            key, at = _bytes_at(data, at)
            meta[key.decode()], at = _bytes_at(data, at)
    sync = data[at : at + 16]
    return meta, sync, at + 16


def _blocks(data: bytes, codec: str, sync: bytes, at: int) -> tuple[list[bytes], list[int]]:
    bodies: list[bytes] = []
    counts: list[int] = []
    end = len(data)
    while at < end:
        count, at = _long_at(data, at)
        size, at = _long_at(data, at)
        if count < 0 or size < 0 or at + size + 16 > end:
            raise _Unsupported("bad block")
        block = data[at : at + size]
        at += size
        if data[at : at + 16] != sync:
            raise _Unsupported("bad sync marker")
        at += 16
        if codec == "null":
            body = block
        elif codec == "deflate":
            body = zlib.decompress(block, -15)
        elif codec == "zstandard":
            body = pa.input_stream(pa.BufferReader(block), compression="zstd").read()
        else:
            raise _Unsupported(f"codec {codec}")
        if count:
            bodies.append(body)
            counts.append(count)
    return bodies, counts


def _walk(root: _Node, bodies: list[bytes], counts: list[int]) -> tuple[bytes, int]:
    """Decode every record of every block, all blocks at once; returns the blocks' bytes
    (where the columns' starts and ends point) and the number of records."""
    starts = np.zeros(len(bodies) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in bodies], out=starts[1:])
    raw = b"".join(bodies) + bytes(16)  # room for a 10-byte varint read at the very end
    buf = np.frombuffer(raw, dtype=np.uint8)
    per_block = np.asarray(counts, dtype=np.int64)
    first_row = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(per_block[:-1], out=first_row[1:])
    order = np.argsort(-per_block, kind="stable")  # blocks still going form a prefix
    pos = starts[:-1][order]
    ends = starts[1:][order]
    rows0 = first_row[order]
    left = per_block[order]
    for j in range(int(left.max()) if len(left) else 0):
        live = int(np.count_nonzero(left > j))
        p = root.run(buf, pos[:live], rows0[:live] + j)
        if (p > ends[:live]).any():
            raise _Unsupported("record beyond its block")
        pos[:live] = p
    if (pos != ends).any():
        raise _Unsupported("block not consumed exactly")
    return raw, int(per_block.sum())


# -- columns ------------------------------------------------------------------------------


def _covered(rows: np.ndarray, n: int) -> np.ndarray:
    null = np.ones(n, dtype=np.bool_)
    null[rows] = False
    return null


@dataclass(frozen=True, slots=True)
class _LongCol:
    values: np.ndarray  # int64, 0 where null
    null: np.ndarray  # bool

    @classmethod
    def of(cls, node: _Node, n: int) -> _LongCol:
        if not isinstance(node, _Long):
            raise _Unsupported("not a long")
        rows, values = node.out.cat(2)
        out = np.zeros(n, dtype=np.int64)
        out[rows] = values
        return cls(out, _covered(rows, n))

    def list(self, rows: np.ndarray) -> list[int | None]:
        out: list[int | None] = self.values[rows].tolist()
        for i in np.flatnonzero(self.null[rows]).tolist():
            out[i] = None
        return out


@dataclass(frozen=True, slots=True)
class _BytesCol:
    start: np.ndarray
    end: np.ndarray
    null: np.ndarray

    @classmethod
    def of(cls, node: _Node, n: int) -> _BytesCol:
        if not isinstance(node, _Bytes):
            raise _Unsupported("not bytes")
        rows, start, length = node.out.cat(3)
        s = np.zeros(n, dtype=np.int64)
        e = np.zeros(n, dtype=np.int64)
        s[rows] = start
        e[rows] = start + length
        return cls(s, e, _covered(rows, n))

    def equal(self, raw: bytes, rows: np.ndarray, value: bytes) -> np.ndarray:
        """Which of ``rows`` hold exactly ``value`` (not null), compared without a bytes
        object per row."""
        start = self.start[rows]
        mask: np.ndarray = ~self.null[rows] & (self.end[rows] - start == len(value))
        if value and mask.any():
            at = np.flatnonzero(mask)
            got = np.frombuffer(raw, dtype=np.uint8)[start[at][:, None] + np.arange(len(value))]
            mask[at] = (got == np.frombuffer(value, dtype=np.uint8)).all(axis=1)
        return mask

    def texts(self, raw: bytes, rows: np.ndarray) -> list[str | None]:
        """The UTF-8 text of each of ``rows`` (None where null), each decoded straight from
        its slice: a third of ``list()`` and a decode per row (100,000 file names).

        Raises:
            UnicodeDecodeError: a value that is not UTF-8.
        """
        null = self.null[rows]
        if null.all():
            return [None] * len(rows)
        out: list[str | None] = [
            raw[a:b].decode()
            for a, b in zip(self.start[rows].tolist(), self.end[rows].tolist(), strict=True)
        ]
        for i in np.flatnonzero(null).tolist():
            out[i] = None
        return out

    def list(self, raw: bytes, rows: np.ndarray) -> list[Any]:
        null = self.null[rows]
        if null.all():
            return [None] * len(rows)
        if self.equal(raw, rows, EMPTY_ROW_BYTES).all():  # an append table's keys: one object
            return [EMPTY_ROW_BYTES] * len(rows)
        out: list[Any] = [
            raw[a:b]
            for a, b in zip(self.start[rows].tolist(), self.end[rows].tolist(), strict=True)
        ]
        for i in np.flatnonzero(null).tolist():
            out[i] = None
        return out


@dataclass(frozen=True, slots=True)
class _ArrayCol:
    """One array field: per record, ``offsets[r]:offsets[r + 1]`` of the flat items."""

    offsets: np.ndarray
    items: _LongCol | _BytesCol
    null: np.ndarray  # the array itself null

    @classmethod
    def of(cls, node: _Node, n: int) -> _ArrayCol:
        if not isinstance(node, _Array):
            raise _Unsupported("not an array")
        (keys,) = node.keys.cat(1)
        keys = np.sort(keys)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys // _ITEMS, minlength=n), out=offsets[1:])
        item = node.item
        leaf = item.inner if isinstance(item, _Optional) else item
        m = len(keys)
        if isinstance(leaf, _Long):
            rows, values = leaf.out.cat(2)
            at = np.searchsorted(keys, rows)
            vals = np.zeros(m, dtype=np.int64)
            vals[at] = values
            items: _LongCol | _BytesCol = _LongCol(vals, _covered(at, m))
        elif isinstance(leaf, _Bytes):
            rows, start, length = leaf.out.cat(3)
            at = np.searchsorted(keys, rows)
            s = np.zeros(m, dtype=np.int64)
            e = np.zeros(m, dtype=np.int64)
            s[at] = start
            e[at] = start + length
            items = _BytesCol(s, e, _covered(at, m))
        else:
            raise _Unsupported("array item")
        (present,) = node.present.cat(1)
        return cls(offsets, items, _covered(present, n))

    def tuples(self, raw: bytes, rows: np.ndarray, text: bool) -> list[Any]:
        n = len(rows)
        null = self.null[rows]
        if null.all():
            return [None] * n
        lo = self.offsets[rows]
        lens = self.offsets[rows + 1] - lo
        width = int(lens[0]) if n else 0
        if (lens == width).all():  # as many items in every record: most manifests' arrays
            same = (
                isinstance(self.items, _LongCol)
                and width > 0
                and not null.any()
                and self._one_record(lo, width)
            )
            if width == 0:
                out: list[Any] = [()] * n
            elif same:  # e.g. null counts of files without nulls: one tuple
                out = [tuple(self._flat(raw, lo[0] + np.arange(width), text))] * n
            else:
                take = (lo[:, None] + np.arange(width)).ravel()
                flat = self._flat(raw, take, text)
                out = list(zip(*(flat[i::width] for i in range(width)), strict=True))
        else:
            take = np.arange(int(lens.sum()), dtype=np.int64) + np.repeat(
                lo - (np.cumsum(lens) - lens), lens
            )
            flat = self._flat(raw, take, text)
            out = []
            a = 0
            for b in np.cumsum(lens).tolist():
                out.append(tuple(flat[a:b]))
                a = b
        for i in np.flatnonzero(null).tolist():
            out[i] = None
        return out

    def _one_record(self, lo: np.ndarray, width: int) -> bool:
        """Whether the long arrays of ``width`` items at ``lo`` are all the same (no item
        null)."""
        items = cast(_LongCol, self.items)
        take = lo[:, None] + np.arange(width)
        values = items.values[take]
        return bool((values == values[0]).all() and not items.null[take].any())

    def _flat(self, raw: bytes, take: np.ndarray, text: bool) -> list[Any]:
        if isinstance(self.items, _LongCol):
            return self.items.list(take)
        flat = self.items.list(raw, take)
        if text:
            flat = [v.decode() if v is not None else None for v in flat]
        return flat


_FILE_FIELDS = (  # DataFileMeta's fields in order: (Avro name, how read, required)
    ("_FILE_NAME", "str", True),
    ("_FILE_SIZE", "long", True),
    ("_ROW_COUNT", "long", True),
    ("_MIN_KEY", "bytes", True),
    ("_MAX_KEY", "bytes", True),
    ("_KEY_STATS", "stats", False),
    ("_VALUE_STATS", "stats", False),
    ("_MIN_SEQUENCE_NUMBER", "long", True),
    ("_MAX_SEQUENCE_NUMBER", "long", True),
    ("_SCHEMA_ID", "long", True),
    ("_LEVEL", "long", True),
    ("_EXTRA_FILES", "strs-or-empty", False),
    ("_CREATION_TIME", "long", False),
    ("_DELETE_ROW_COUNT", "long", False),
    ("_EMBEDDED_FILE_INDEX", "bytes", False),
    ("_FILE_SOURCE", "long", False),
    ("_VALUE_STATS_COLS", "strs", False),
    ("_EXTERNAL_PATH", "str", False),
    ("_FIRST_ROW_ID", "long", False),
    ("_WRITE_COLS", "strs", False),
    ("_WRITE_COLS_SEQUENCES", "longs", False),
)


_FIELD_AT = {name: i for i, (name, _, _) in enumerate(_FILE_FIELDS)}


def _distinct(raw: bytes, col: _BytesCol, n: int) -> tuple[np.ndarray, list[bytes]]:
    """The distinct values of a bytes column (no nulls) in the order first seen, and each
    row's number among them. Values all of one short length (a partition row of fixed-size
    fields) are compared as rows of a byte matrix, without an object per row."""
    length = col.end - col.start
    if n and length[0] <= 256 and (length == length[0]).all():
        width = int(length[0])
        if not width:
            return np.zeros(n, dtype=np.int64), [b""]
        buf = np.frombuffer(raw, dtype=np.uint8)
        matrix = np.ascontiguousarray(buf[col.start[:, None] + np.arange(width)])
        _, first, inverse = np.unique(
            matrix.view(np.dtype((np.void, width))).reshape(n),
            return_index=True,
            return_inverse=True,
        )
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        starts = col.start[first[order]].tolist()
        return rank[inverse.reshape(n)], [raw[a : a + width] for a in starts]
    ids: dict[bytes, int] = {}
    number = np.fromiter(
        (ids.setdefault(r, len(ids)) for r in col.list(raw, np.arange(n))), dtype=np.int64, count=n
    )
    return number, list(ids)


def _unwrap(node: _Node) -> _Node:
    return node.inner if isinstance(node, _Optional) else node


class ManifestColumns:
    """The entries of one manifest as columns; :meth:`entries` makes the objects of the rows
    asked for (each row's once: later calls return the same objects)."""

    def __init__(self, raw: bytes, n: int, root: _Record) -> None:
        self.raw = raw
        self.n = n
        top = root.by_name
        for name in ("_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE"):
            if name not in top:
                raise _Unsupported(f"no {name}")
        if "_VERSION" in top:
            version = _LongCol.of(top["_VERSION"], n)
            if n and ((version.values != _FORMAT) | version.null).any():
                raise _Unsupported("version")
        kind = _LongCol.of(top["_KIND"], n)
        bucket = _LongCol.of(top["_BUCKET"], n)
        total = _LongCol.of(top["_TOTAL_BUCKETS"], n)
        if kind.null.any() or bucket.null.any() or total.null.any():
            raise _Unsupported("null key field")
        if ((kind.values != 0) & (kind.values != 1)).any():
            raise _Unsupported("kind")
        self.kind = kind.values
        self.bucket = bucket.values
        self.total_buckets = total.values
        part = _BytesCol.of(top["_PARTITION"], n)
        if part.null.any():
            raise _Unsupported("null partition")
        # distinct partitions (a manifest holds few), numbered as first seen
        self.partition_id, self.partition_bytes = _distinct(raw, part, n)
        file = top["_FILE"]
        if not isinstance(file, _Record):
            raise _Unsupported("_FILE")
        self._file: list[tuple[str, Any]] = []
        for name, how, required in _FILE_FIELDS:
            node = file.by_name.get(name)
            if node is None:
                if required:
                    raise _Unsupported(f"no {name}")
                self._file.append((how, None))
                continue
            self._file.append((how, self._column(_unwrap(node), how)))
        self._made: np.ndarray = np.empty(n, dtype=object)
        self._partitions: dict[tuple[DataType, ...], list[tuple[Any, ...]]] = {}
        self._lock = threading.Lock()
        self._made_count = 0

    def _column(self, node: _Node, how: str) -> Any:
        n = self.n
        if how == "long":
            return _LongCol.of(node, n)
        if how in ("str", "bytes"):
            return _BytesCol.of(node, n)
        if how in ("strs", "strs-or-empty", "longs"):
            return _ArrayCol.of(node, n)
        assert how == "stats"
        if not isinstance(node, _Record):
            raise _Unsupported("stats")
        lo, hi = node.by_name.get("_MIN_VALUES"), node.by_name.get("_MAX_VALUES")
        if lo is None or hi is None:
            raise _Unsupported("stats fields")
        counts = node.by_name.get("_NULL_COUNTS")
        return (
            _BytesCol.of(lo, n),
            _BytesCol.of(hi, n),
            _ArrayCol.of(_unwrap(counts), n) if counts is not None else None,
        )

    def partitions(self, partition_types: Sequence[DataType]) -> list[tuple[Any, ...]]:
        """The distinct partitions (``partition_id`` indexes them), decoded once.

        Raises:
            CorruptMetadataError: a partition that is not a row of these types.
        """
        key = tuple(partition_types)
        got = self._partitions.get(key)
        if got is None:
            got = self._partitions[key] = [
                deserialize_row(p, partition_types) for p in self.partition_bytes
            ]
        return got

    def rows_in(self, keep: np.ndarray) -> tuple[np.ndarray, tuple[int, int, int]]:
        """The rows of the partitions ``keep`` selects (a mask over :meth:`partitions`), and
        the live files the others hold: how many, their bytes and rows (ADDs less DELETEs,
        as an unread manifest's files are counted)."""
        mask = np.asarray(keep, dtype=np.bool_)[self.partition_id]
        sign = np.where(self.kind == 0, 1, -1)[~mask]
        size, count = self._file[1][1], self._file[2][1]
        return np.flatnonzero(mask), (
            int(sign.sum()),
            int((sign * size.values[~mask]).sum()),
            int((sign * count.values[~mask]).sum()),
        )

    @property
    def made_count(self) -> int:
        """How many entries :meth:`entries` has made so far."""
        return self._made_count

    def nbytes(self) -> int:
        """Roughly what these columns hold in memory, the entries made so far included."""
        return len(self.raw) + 300 * self.n + _MADE_BYTES * self._made_count

    def entries(self, rows: np.ndarray, partition_types: Sequence[DataType]) -> list[Any]:
        """The :class:`~lakeskip.catalog.format.manifest.ManifestEntry` of each of ``rows``
        (ascending row numbers), in order.

        Raises:
            CorruptMetadataError: a string that is not UTF-8, a partition not of these types.
        """
        with self._lock:  # py4j callback threads may plan the same manifest at once
            return self._entries(rows, partition_types)

    def _entries(self, rows: np.ndarray, partition_types: Sequence[DataType]) -> list[Any]:
        made = self._made
        todo = rows[np.asarray([m is None for m in made[rows].tolist()], dtype=np.bool_)]
        self._made_count += len(todo)
        if len(todo):
            try:
                fields = self._file_lists(todo)
            except UnicodeDecodeError as e:
                raise CorruptMetadataError(f"manifest: a string is not UTF-8: {e}") from e
            files = bulk(DataFileMeta, fields)
            partitions = self.partitions(partition_types)
            kinds = (FileKind.ADD, FileKind.DELETE)
            made[todo] = bulk(
                ManifestEntry,
                [
                    [kinds[k] for k in self.kind[todo].tolist()],
                    [partitions[p] for p in self.partition_id[todo].tolist()],
                    self.bucket[todo].tolist(),
                    self.total_buckets[todo].tolist(),
                    files,
                ],
            )
        out: list[Any] = made[rows].tolist()
        return out

    def _file_lists(self, rows: np.ndarray) -> list[list[Any]]:
        return [self._values(how, col, rows) for how, col in self._file]

    def field(self, name: str, rows: np.ndarray) -> list[Any]:
        """The values of ``_FILE`` field ``name`` (an Avro name of ``_FILE_FIELDS``, e.g.
        ``_FILE_NAME``) at ``rows``, as the entries of those rows hold them.

        Raises:
            UnicodeDecodeError: a string that is not UTF-8.
        """
        how, col = self._file[_FIELD_AT[name]]
        return self._values(how, col, rows)

    def longs(self, name: str, rows: np.ndarray, null: bool = False) -> np.ndarray | None:
        """A long ``_FILE`` field at ``rows`` as int64, or None where some row is null (then
        :meth:`field` says which); ``null``: a null (or a field the manifest lacks) as 0."""
        how, col = self._file[_FIELD_AT[name]]
        if how != "long":
            return None
        if col is None:
            return np.zeros(len(rows), dtype=np.int64) if null else None
        if not null and col.null[rows].any():
            return None
        out: np.ndarray = col.values[rows]
        return out

    def stats_lists(
        self, name: str, rows: np.ndarray
    ) -> tuple[list[Any], list[Any], list[Any]] | None:
        """The min values, max values and null counts of stats field ``name``
        (``_VALUE_STATS``) at ``rows``, as the entries' :class:`SimpleStats` hold them, without
        an object per row; None when the manifest has no such field."""
        col = self._file[_FIELD_AT[name]][1]
        n = len(rows)
        e = _EMPTY_STATS
        if col is None:
            return None
        own, mins, maxs, cs = _own_stats(self.raw, rows, *col)
        if len(own) == n:
            return mins, maxs, cs
        lo, hi, counts = [e.min_values] * n, [e.max_values] * n, [e.null_counts] * n
        for j, i in enumerate(own.tolist()):
            lo[i], hi[i], counts[i] = mins[j], maxs[j], cs[j]
        return lo, hi, counts

    def stats_spans(
        self, name: str, rows: np.ndarray
    ) -> tuple[list[Any], tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
        """Stats field ``name`` at ``rows`` where every row has stats of its own: the null
        counts, and where the min and max rows lie in :attr:`raw` (starts, ends) -- the bytes
        :meth:`stats_lists` would list; None where some row's stats are shared or missing."""
        col = self._file[_FIELD_AT[name]][1]
        if col is None:
            return None
        lo, hi, counts = col
        own, _, _, cs = _own_stats(self.raw, rows, lo, hi, counts, values=False)
        if len(own) != len(rows) or lo.null[rows].any() or hi.null[rows].any():
            return None
        return cs, (lo.start[rows], lo.end[rows]), (hi.start[rows], hi.end[rows])

    def _values(self, how: str, col: Any, rows: np.ndarray) -> list[Any]:
        raw = self.raw
        n = len(rows)
        if col is None:
            return [() if how == "strs-or-empty" else None] * n
        if how == "long":
            return col.list(rows)  # type: ignore[no-any-return]
        if how == "bytes":
            return col.list(raw, rows)  # type: ignore[no-any-return]
        if how == "str":
            return col.texts(raw, rows)  # type: ignore[no-any-return]
        if how in ("strs", "strs-or-empty"):
            got = col.tuples(raw, rows, text=True)
            return [v or () for v in got] if how == "strs-or-empty" else got
        if how == "longs":
            return col.tuples(raw, rows, text=False)  # type: ignore[no-any-return]
        return _stats(raw, rows, *col)


@functools.cache
def _slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot descriptors' setters of a frozen slotted dataclass, in field order."""
    return tuple(getattr(cls, f.name).__set__ for f in dataclasses.fields(cls))


def bulk(cls: type[_T], columns: Sequence[Sequence[Any]]) -> list[_T]:
    """``[cls(*row) for row in zip(*columns)]`` for a frozen slotted dataclass without a
    ``__post_init__``, made a field at a time over all objects (each slot set by its
    descriptor in one ``map``): a frozen ``__init__`` sets each field through
    ``object.__setattr__``, a third of the time of a 100,000-file manifest's entries."""
    setters = _slot_setters(cast(type, cls))
    if len(columns) != len(setters) or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: {len(columns)} columns for {len(setters)} fields")
    n = len(columns[0]) if columns else 0
    new = object.__new__
    out = [new(cls) for _ in range(n)]
    for setter, values in zip(setters, columns, strict=True):
        if len(values) != n:
            raise ValueError(f"{cls.__name__}: columns of {n} and {len(values)} values")
        deque(map(setter, out, values), maxlen=0)
    return out


def _own_stats(
    raw: bytes,
    rows: np.ndarray,
    lo: _BytesCol,
    hi: _BytesCol,
    counts: _ArrayCol | None,
    values: bool = True,
) -> tuple[np.ndarray, list[Any], list[Any], list[Any]]:
    """Of ``rows``, the positions whose stats are their own (not null, not empty with no
    null counts: those are ``_EMPTY_STATS``), and those rows' min, max (``values``: else
    not made) and null counts."""
    # the stats record itself null, or empty with no null counts (append tables' key
    # stats): one shared object
    empty = lo.equal(raw, rows, EMPTY_ROW_BYTES) & hi.equal(raw, rows, EMPTY_ROW_BYTES)
    if counts is not None:
        empty &= counts.null[rows] | (counts.offsets[rows + 1] == counts.offsets[rows])
    shared = lo.null[rows] | empty
    own = np.flatnonzero(~shared)
    if not len(own):
        return own, [], [], []
    take = rows[own]
    cs: list[Any] = counts.tuples(raw, take, text=False) if counts is not None else [()] * len(take)
    if counts is not None and counts.null[take].any():
        cs = [c if c is not None else () for c in cs]
    if not values:
        return own, [], [], cs
    return own, lo.list(raw, take), hi.list(raw, take), cs


def _stats(
    raw: bytes, rows: np.ndarray, lo: _BytesCol, hi: _BytesCol, counts: _ArrayCol | None
) -> list[SimpleStats]:
    n = len(rows)
    own, mins, maxs, cs = _own_stats(raw, rows, lo, hi, counts)
    if not len(own):
        return [_EMPTY_STATS] * n
    made = bulk(SimpleStats, [mins, maxs, cs])
    if len(own) == n:
        return made
    out = [_EMPTY_STATS] * n
    for i, v in zip(own.tolist(), made, strict=True):
        out[i] = v
    return out


def decode(data: bytes) -> ManifestColumns | None:
    """The entries of a manifest file (its bytes) as columns, or None when this decoder does
    not handle the file (then decode it record by record)."""
    try:
        meta, sync, at = _header(data)
        schema = json.loads(meta["avro.schema"])
        codec = meta.get("avro.codec", b"null").decode()
        root = _node(schema, {})
        if not isinstance(root, _Record):
            return None
        bodies, counts = _blocks(data, codec, sync, at)
        raw, n = _walk(root, bodies, counts)
        return ManifestColumns(raw, n, root)
    except (
        _Unsupported,
        IndexError,
        ValueError,
        KeyError,
        TypeError,
        zlib.error,
        pa.ArrowException,
        OverflowError,
    ):
        return None


class LiveColumns:
    """The live files of a snapshot (or of some of its manifests) as columns: rows of decoded
    manifests (:class:`ManifestColumns`), an ADD each, in the order the record-by-record merge
    lists them (:func:`~lakeskip.catalog.table.merge_entries`). What a plan of every file reads
    -- names, sizes, row counts, partitions, stats -- is taken field by field, and
    :meth:`entries` makes the per-file objects only for whoever needs them (the same objects
    :meth:`ManifestColumns.entries` makes).

    Args:
        parts: (manifest columns, ascending rows) in manifest order.
        partition_types: the table's partition column types.
        order: positions in the parts' rows laid end to end (None: all of them, in order).
    """

    def __init__(
        self,
        parts: Sequence[tuple[ManifestColumns, np.ndarray]],
        partition_types: Sequence[DataType],
        order: np.ndarray | None = None,
    ) -> None:
        self.parts = tuple(parts)
        self.partition_types = tuple(partition_types)
        self.order = order
        self._fields: dict[str, list[Any]] = {}

    def __len__(self) -> int:
        if self.order is not None:
            return len(self.order)
        return sum(len(rows) for _, rows in self.parts)

    def _arrange(self, values: list[Any]) -> list[Any]:
        if self.order is None:
            return values
        return [values[i] for i in self.order.tolist()]

    def field(self, name: str) -> list[Any]:
        """``_FILE`` field ``name`` of every file (kept: callers must not change the list).

        Raises:
            CorruptMetadataError: a string that is not UTF-8.
        """
        got = self._fields.get(name)
        if got is None:
            try:
                values = [v for mc, rows in self.parts for v in mc.field(name, rows)]
            except UnicodeDecodeError as e:
                raise CorruptMetadataError(f"manifest: a string is not UTF-8: {e}") from e
            got = self._fields[name] = self._arrange(values)
        return got

    def longs(self, name: str) -> np.ndarray:
        """A long ``_FILE`` field as int64 (a null read as 0)."""
        got = [mc.longs(name, rows, null=True) for mc, rows in self.parts]
        if all(g is not None for g in got):
            flat = np.concatenate([cast(np.ndarray, g) for g in got]) if got else np.zeros(0)
        else:
            flat = np.asarray([v or 0 for v in self._plain_field(name)], dtype=np.int64)
        flat = flat.astype(np.int64, copy=False)
        return flat if self.order is None else flat[self.order]

    def _plain_field(self, name: str) -> list[Any]:
        return [v for mc, rows in self.parts for v in mc.field(name, rows)]

    def stats_lists(self, name: str) -> tuple[list[Any], list[Any], list[Any]] | None:
        """:meth:`ManifestColumns.stats_lists` of every file (None: some manifest has no
        such field)."""
        lo: list[Any] = []
        hi: list[Any] = []
        counts: list[Any] = []
        for mc, rows in self.parts:
            got = mc.stats_lists(name, rows)
            if got is None:
                return None
            lo += got[0]
            hi += got[1]
            counts += got[2]
        return self._arrange(lo), self._arrange(hi), self._arrange(counts)

    def stats_spans(
        self, name: str
    ) -> (
        tuple[list[Any], tuple[bytes, np.ndarray, np.ndarray], tuple[bytes, np.ndarray, np.ndarray]]
        | None
    ):
        """:meth:`ManifestColumns.stats_spans` of every file, the min and max rows as
        (buffer, starts, ends) in one buffer (the manifests' joined); None where some file's
        stats are shared or missing (then :meth:`stats_lists`)."""
        got = [mc.stats_spans(name, rows) for mc, rows in self.parts]
        if any(g is None for g in got) or not got:
            return None
        spans = cast(
            list[tuple[list[Any], tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]],
            got,
        )
        shift = np.cumsum([0] + [len(mc.raw) for mc, _ in self.parts[:-1]])
        raw = (
            self.parts[0][0].raw
            if len(self.parts) == 1
            else b"".join(mc.raw for mc, _ in self.parts)
        )
        counts = self._arrange([c for g in spans for c in g[0]])

        def joined(which: int) -> tuple[bytes, np.ndarray, np.ndarray]:
            start = np.concatenate(
                [g[which][0] + k for g, k in zip(spans, shift.tolist(), strict=True)]
            )
            end = np.concatenate(
                [g[which][1] + k for g, k in zip(spans, shift.tolist(), strict=True)]
            )
            if self.order is not None:
                start, end = start[self.order], end[self.order]
            return raw, start, end

        return counts, joined(1), joined(2)

    def partitions(self) -> tuple[np.ndarray, list[tuple[Any, ...]], list[bytes]]:
        """Each file's partition as a number, and the distinct partitions those number (their
        values, decoded once, and their ``BinaryRow`` bytes).

        Raises:
            CorruptMetadataError: a partition that is not a row of the partition types.
        """
        ids: dict[bytes, int] = {}
        values: list[tuple[Any, ...]] = []
        per_part: list[np.ndarray] = []
        for mc, rows in self.parts:
            decoded = mc.partitions(self.partition_types)
            local = np.empty(len(mc.partition_bytes), dtype=np.int64)
            for j, b in enumerate(mc.partition_bytes):
                at = ids.get(b)
                if at is None:
                    at = ids[b] = len(values)
                    values.append(decoded[j])
                local[j] = at
            per_part.append(local[mc.partition_id[rows]])
        flat = np.concatenate(per_part) if per_part else np.zeros(0, dtype=np.int64)
        return (flat if self.order is None else flat[self.order]), values, list(ids)

    def buckets(self) -> np.ndarray:
        return self._per_file([mc.bucket[rows] for mc, rows in self.parts])

    def total_buckets(self) -> np.ndarray:
        """Each file's ``_TOTAL_BUCKETS`` (its table's bucket count when it was written)."""
        return self._per_file([mc.total_buckets[rows] for mc, rows in self.parts])

    def _per_file(self, flat: list[np.ndarray]) -> np.ndarray:
        out = np.concatenate(flat) if flat else np.zeros(0, dtype=np.int64)
        return out if self.order is None else out[self.order]

    def entries(self) -> list[ManifestEntry]:
        """The :class:`ManifestEntry` of every file, in order.

        Raises:
            CorruptMetadataError: a string that is not UTF-8, a partition not of these types.
        """
        made = [e for mc, rows in self.parts for e in mc.entries(rows, self.partition_types)]
        return self._arrange(made)

    def entry_at(self, i: int) -> ManifestEntry:
        """The :class:`ManifestEntry` of file ``i`` alone."""
        at = int(self.order[i]) if self.order is not None else i
        for mc, rows in self.parts:
            if at < len(rows):
                made: ManifestEntry = mc.entries(rows[at : at + 1], self.partition_types)[0]
                return made
            at -= len(rows)
        raise IndexError(i)

    def take(self, keep: np.ndarray) -> LiveColumns:
        """The files where the mask ``keep`` is set."""
        keep = np.asarray(keep, dtype=np.bool_)
        if keep.all():
            return self
        at = np.flatnonzero(keep) if self.order is None else self.order[keep]
        return LiveColumns(self.parts, self.partition_types, at)

    @staticmethod
    def merged(
        parts: Sequence[tuple[ManifestColumns, np.ndarray]], partition_types: Sequence[DataType]
    ) -> LiveColumns:
        """The live files of ``parts`` (ADDs and DELETEs of manifests in commit order): every
        ADD not cancelled by a later DELETE of the same file (partition, bucket, level, name,
        extra files, embedded index, external path), in the order
        :func:`~lakeskip.catalog.table.merge_entries` keeps them."""
        whole = LiveColumns(parts, partition_types)
        kinds = [mc.kind[rows] for mc, rows in parts]
        names = whole.field("_FILE_NAME")
        if all(not k.any() for k in kinds) and len(set(names)) == len(names):
            return whole  # every entry an ADD of a file no other entry names
        kind = np.concatenate(kinds).tolist() if kinds else []
        # each row's partition as its entry holds it (one tuple per manifest and partition)
        part = [
            p
            for mc, rows in parts
            for p in map(mc.partitions(partition_types).__getitem__, mc.partition_id[rows].tolist())
        ]
        keys = zip(
            part,
            whole.buckets().tolist(),
            whole._plain_field("_LEVEL"),
            names,
            whole._plain_field("_EXTRA_FILES"),
            whole._plain_field("_EMBEDDED_FILE_INDEX"),
            whole._plain_field("_EXTERNAL_PATH"),
            strict=True,
        )
        live: dict[tuple[Any, ...], int] = {}
        for i, (k, key) in enumerate(zip(kind, keys, strict=True)):
            if k == 0:
                live[key] = i
            else:
                live.pop(key, None)
        order = np.fromiter(live.values(), dtype=np.int64, count=len(live))
        return LiveColumns(parts, partition_types, order)
