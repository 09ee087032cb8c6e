"""Deletion vectors: Paimon's ``DELETION_VECTORS`` index files under ``<table>/index/``.

A deletion vector (DV) marks row positions of one data file as deleted; readers skip them.
Many DVs share one index file (``index-<uuid>-<n>``), each a self-checking block::

    index file   u8 version = 1
                 block, block, ...                       (offsets from the file start)

    block        i32 BE  length  = 4 + len(bitmap)       (DeletionVectorMeta.length)
                 i32 BE  magic   = 1581511376            (BitmapDeletionVector)
                 bitmap          RoaringBitmap32, portable format (see index/primitives/roaring)
                 i32 BE  crc32   of magic + bitmap

The index manifest (:mod:`lakeskip.catalog.format.index_manifest`) lists, per index file, the data
files it holds DVs for with their block offset, ``length`` and cardinality. Paimon's 64-bit
form (``deletion-vectors.bitmap64``, magic 1681511377 little-endian, length covering the
whole block) is recognised and refused: lakeskip writes and reads 32-bit DVs, which is what
Paimon 0.9 and pypaimon read.

A DV is data, not an index: a missing, truncated or corrupt block, a bad CRC or a position
beyond the file's rows raises :class:`~lakeskip.errors.CorruptDeletionVectorError` naming the
index file -- never "read the file without it".

Example:
    >>> from pyroaring import BitMap
    >>> data, metas = encode_index_file([("data-1.parquet", BitMap([1, 5]))])
    >>> metas[0].offset, metas[0].length, metas[0].cardinality
    (1, 24, 2)
    >>> sorted(decode_vector(data, metas[0], rows=10, where="index-x"))
    [1, 5]
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lakeskip.catalog.file_io import FileIO
from lakeskip.errors import CorruptDeletionVectorError, CorruptIndexError
from lakeskip.index.primitives.roaring import read_bitmap, serialize_bitmap

__all__ = [
    "DELETION_VECTORS_INDEX",
    "INDEX_DIR",
    "DeletionFile",
    "DeletionVectorMeta",
    "DeletionVectorUpdate",
    "IndexFileMeta",
    "decode_vector",
    "drop_deleted",
    "encode_index_file",
    "encode_vector",
    "new_index_file_name",
    "read_vector",
    "write_index_file",
]

DELETION_VECTORS_INDEX = "DELETION_VECTORS"
INDEX_DIR = "index"
VERSION_V1 = 1
MAGIC = 1581511376
MAGIC_BITMAP64 = 1681511377
MAX_POSITION = 0x7FFFFFFF
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class DeletionVectorMeta:
    """Where one data file's DV sits in an index file (``_DELETIONS_VECTORS_RANGES`` item)."""

    data_file_name: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True, slots=True)
class IndexFileMeta:
    """One index file as the index manifest records it."""

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None
    external_path: str | None = None


def new_index_file_name() -> str:
    """``index-<uuid>-0``: Paimon's ``IndexPathFactory`` naming."""
    return f"index-{uuid.uuid4()}-0"


def encode_vector(bm: BitMap) -> bytes:
    """One block: length, magic, portable RoaringBitmap32, CRC32 of magic + bitmap."""
    if len(bm) and bm.max() > MAX_POSITION:
        raise ValueError(f"row position {bm.max()} beyond a 32-bit deletion vector")
    data = _I32.pack(MAGIC) + serialize_bitmap(bm)
    return _I32.pack(len(data)) + data + _U32.pack(zlib.crc32(data) & 0xFFFFFFFF)


def encode_index_file(
    vectors: Sequence[tuple[str, BitMap]],
) -> tuple[bytes, tuple[DeletionVectorMeta, ...]]:
    """The bytes of one index file holding ``vectors`` (data file name, DV) in order."""
    parts = [bytes([VERSION_V1])]
    pos = 1
    metas = []
    for name, bm in vectors:
        block = encode_vector(bm)
        metas.append(DeletionVectorMeta(name, pos, len(block) - 8, len(bm)))
        parts.append(block)
        pos += len(block)
    return b"".join(parts), tuple(metas)


def decode_vector(data: bytes, meta: DeletionVectorMeta, rows: int | None, where: str) -> BitMap:
    """Read and check one DV block of an index file's bytes.

    Args:
        data: the whole index file.
        meta: the block's range from the index manifest.
        rows: the data file's row count (positions must be below it); ``None``: unchecked.
        where: the index file, for error messages.

    Raises:
        CorruptDeletionVectorError: anything that is not a valid 32-bit DV block.
    """

    def bad(reason: str) -> CorruptDeletionVectorError:
        return CorruptDeletionVectorError(
            f"corrupt deletion vector of {meta.data_file_name} in {where} "
            f"(byte {meta.offset}): {reason}"
        )

    if not data or data[0] != VERSION_V1:
        raise bad(f"index file version {data[0] if data else 'missing'}, expected {VERSION_V1}")
    start = meta.offset
    if start < 1 or meta.length < 4 or start + 8 + meta.length > len(data):
        raise bad(f"block of {meta.length} bytes outside the {len(data)}-byte file")
    length = _I32.unpack_from(data, start)[0]
    magic = _I32.unpack_from(data, start + 4)[0]
    if magic != MAGIC:
        if int.from_bytes(data[start + 4 : start + 8], "little") == MAGIC_BITMAP64:
            raise bad("64-bit deletion vector (deletion-vectors.bitmap64) is not supported")
        raise bad(f"magic {magic}, expected {MAGIC}")
    if length != meta.length:
        raise bad(f"block length {length}, manifest says {meta.length}")
    body = data[start + 4 : start + 4 + length]
    crc = _U32.unpack_from(data, start + 4 + length)[0]
    if zlib.crc32(body) & 0xFFFFFFFF != crc:
        raise bad("CRC mismatch")
    try:
        bm = read_bitmap(memoryview(body), 4, rows if rows is not None else 1 << 32, length - 4)
    except CorruptIndexError as e:
        raise bad(e.reason) from e
    if meta.cardinality is not None and len(bm) != meta.cardinality:
        raise bad(f"{len(bm)} positions, manifest says {meta.cardinality}")
    return bm


def read_vector(
    file_io: FileIO, path: str, meta: DeletionVectorMeta, rows: int | None = None
) -> BitMap:
    """Read one DV from an index file (whole file read: index files are small).

    Raises:
        CorruptDeletionVectorError: the index file is missing or the block is corrupt.
    """
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError as e:
        raise CorruptDeletionVectorError(
            f"deletion vector index file {path} of {meta.data_file_name} is missing"
        ) from e
    return decode_vector(data, meta, rows, path)


def write_index_file(
    file_io: FileIO, table_path: str, vectors: Sequence[tuple[str, BitMap]]
) -> IndexFileMeta:
    """Write a new index file under ``<table>/index/``; returns its manifest record."""
    data, metas = encode_index_file(vectors)
    name = new_index_file_name()
    file_io.write_bytes(f"{table_path}/{INDEX_DIR}/{name}", data)
    return IndexFileMeta(DELETION_VECTORS_INDEX, name, len(data), len(metas), metas)


@dataclass(frozen=True, slots=True)
class DeletionFile:
    """Where a data file's live DV is: the index file (path and name) and the block."""

    path: str
    index_file: str
    meta: DeletionVectorMeta


@dataclass(frozen=True, slots=True)
class DeletionVectorUpdate:
    """The DV part of a commit.

    Attributes:
        vectors: data file name -> its complete new DV (already merged with the old one); an
            empty bitmap removes the file's DV.
        base: data file name -> the index file that held its DV when the writer read it
            (``None``: it had none). Every file of ``vectors``, and every deleted file whose
            rows were read through its DV (compaction), belongs here: the commit fails with
            CommitConflictError if another commit changed that DV in between.
        read: data file name -> the DV the writer read (optional): when another commit only
            moved it to a new index file (it rewrote a neighbour's DV), the same positions
            there are no conflict.
        seen: a primary-key write's lookup (optional): the live files it read in the
            buckets it adds files to. Another live file in such a bucket at commit time is
            a conflict: it may hold a key this write also holds, and both would be live.
    """

    vectors: Mapping[str, BitMap]
    base: Mapping[str, str | None]
    read: Mapping[str, BitMap] = field(default_factory=dict)
    seen: frozenset[str] | None = None


def drop_deleted(data: pa.Table, deleted: bytes | None, where: str) -> pa.Table:
    """The rows of a whole data file that its DV (portable RoaringBitmap bytes) keeps.

    Raises:
        CorruptDeletionVectorError: a position beyond the file's rows.
    """
    if deleted is None:
        return data
    positions = np.frombuffer(BitMap.deserialize(deleted).to_array(), dtype=np.uint32)
    if len(positions) and int(positions.max()) >= data.num_rows:
        raise CorruptDeletionVectorError(
            f"deletion vector of {where} deletes row {int(positions.max())} of {data.num_rows}"
        )
    mask = np.ones(data.num_rows, dtype=bool)
    mask[positions] = False
    return data.filter(pa.array(mask))
