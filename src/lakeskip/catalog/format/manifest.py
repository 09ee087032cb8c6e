"""Manifests and manifest lists: Avro files under ``<table>/manifest/``.

::

    snapshot-N ──► manifest-list-<uuid>-0 (base)  ──► manifest-<uuid>-0, manifest-...
               └─► manifest-list-<uuid>-1 (delta) ──► manifest-<uuid>-1
    manifest list record  = ManifestFileMeta {_VERSION=2, _FILE_NAME, _FILE_SIZE,
        _NUM_ADDED_FILES, _NUM_DELETED_FILES, _PARTITION_STATS, _SCHEMA_ID, _MIN/_MAX_BUCKET,
        _MIN/_MAX_LEVEL, _MIN/_MAX_ROW_ID}
    manifest record       = ManifestEntry {_VERSION=2, _KIND (0 ADD, 1 DELETE),
        _PARTITION (BinaryRow bytes), _BUCKET, _TOTAL_BUCKETS, _FILE (DataFileMeta)}

The record layouts are Paimon's (``ManifestEntry.SCHEMA``, ``DataFileMeta.SCHEMA``,
``ManifestFileMeta.SCHEMA``; the same field names pypaimon's ``manifest/schema/*.py``
declare). Java and pypaimon readers match fields by name and skip unknown ones. The Avro
codec follows ``manifest.compression`` (default ``zstd``); zstd blocks are (de)compressed with
pyarrow's codec, so no extra package is needed.

Example:
    >>> entry_kind = FileKind(1)
    >>> entry_kind.name
    'DELETE'
"""

from __future__ import annotations

import datetime
import io
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import fastavro
import numpy as np
import pyarrow as pa

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format import manifest_columns
from lakeskip.catalog.format.binary_row import EMPTY_ROW_BYTES, deserialize_row, serialize_row
from lakeskip.catalog.format.data_file import DataFileMeta, SimpleStats
from lakeskip.catalog.format.manifest_entry import FileKind, ManifestEntry
from lakeskip.errors import CorruptMetadataError
from lakeskip.types import DataType

__all__ = [
    "MANIFEST_ENTRY_SCHEMA",
    "MANIFEST_FILE_META_SCHEMA",
    "FileKind",
    "ManifestEntry",
    "ManifestFileMeta",
    "decode_manifest_records",
    "read_manifest",
    "read_manifest_columns",
    "read_manifest_list",
    "write_manifest",
    "write_manifest_list",
]

FORMAT_IDENTIFIER = 2
MANIFEST_DIR = "manifest"

_STATS_FIELDS: list[dict[str, Any]] = [
    {"name": "_MIN_VALUES", "type": "bytes"},
    {"name": "_MAX_VALUES", "type": "bytes"},
    {
        "name": "_NULL_COUNTS",
        "type": ["null", {"type": "array", "items": ["null", "long"]}],
        "default": None,
    },
]


def _stats_schema(name: str) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": _STATS_FIELDS}


def _opt(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", t], "default": None}


DATA_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "DataFileMeta",
    "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _stats_schema("record_KEY_STATS")},
        {"name": "_VALUE_STATS", "type": _stats_schema("record_VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
        _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
        _opt("_DELETE_ROW_COUNT", "long"),
        _opt("_EMBEDDED_FILE_INDEX", "bytes"),
        _opt("_FILE_SOURCE", "int"),
        _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_FIRST_ROW_ID", "long"),
        _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
        _opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
    ],
}

MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "ManifestEntry",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": DATA_FILE_META_SCHEMA},
    ],
}

MANIFEST_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "ManifestFileMeta",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_schema("record_PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _opt("_MIN_BUCKET", "int"),
        _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"),
        _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"),
        _opt("_MAX_ROW_ID", "long"),
    ],
}

_PARSED: dict[str, Any] = {}


def _parsed(name: str, schema: dict[str, Any]) -> Any:
    if name not in _PARSED:
        _PARSED[name] = fastavro.parse_schema(schema)
    return _PARSED[name]


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """One manifest file as a manifest list records it."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None


# -- zstd through pyarrow ----------------------------------------------------------------


def _write_long(fo: BinaryIO, n: int) -> None:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    fo.write(bytes(out))


def _read_long(fo: BinaryIO) -> int:
    shift = result = 0
    while True:
        b = fo.read(1)
        if not b:
            raise EOFError("truncated Avro block length")
        result |= (b[0] & 0x7F) << shift
        shift += 7
        if not b[0] & 0x80:
            return (result >> 1) ^ -(result & 1)


def _zstd_write_block(fo: BinaryIO, block_bytes: bytes, compression_level: Any) -> None:
    data = pa.Codec("zstd").compress(block_bytes, asbytes=True)
    _write_long(fo, len(data))
    fo.write(data)


def _zstd_read_block(fo: BinaryIO) -> io.BytesIO:
    data = fo.read(_read_long(fo))
    return io.BytesIO(pa.input_stream(pa.BufferReader(data), compression="zstd").read())


def _ensure_zstd() -> None:
    """fastavro decodes zstd only with an extra package; use pyarrow's codec instead."""
    from fastavro import _read, _write

    try:
        import backports.zstd  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        _read.BLOCK_READERS["zstandard"] = _zstd_read_block
        _write.BLOCK_WRITERS["zstandard"] = _zstd_write_block  # type: ignore[attr-defined]


_ensure_zstd()


# -- conversions -------------------------------------------------------------------------


def _stats_to_avro(s: SimpleStats) -> dict[str, Any]:
    return {
        "_MIN_VALUES": s.min_values,
        "_MAX_VALUES": s.max_values,
        "_NULL_COUNTS": list(s.null_counts),
    }


_EMPTY_STATS = SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())


def _stats_from_avro(rec: dict[str, Any] | None) -> SimpleStats:
    if rec is None:
        return _EMPTY_STATS
    lo, hi = rec["_MIN_VALUES"], rec["_MAX_VALUES"]
    counts = rec.get("_NULL_COUNTS")
    if not counts and lo == EMPTY_ROW_BYTES and hi == EMPTY_ROW_BYTES:
        return _EMPTY_STATS  # append tables' key stats: one shared object
    return SimpleStats(
        lo if type(lo) is bytes else bytes(lo),
        hi if type(hi) is bytes else bytes(hi),
        tuple(counts) if counts is not None else (),
    )


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MILLI = datetime.timedelta(milliseconds=1)


def _millis(value: Any) -> int | None:
    if value is None:
        return None
    if type(value) is datetime.datetime and value.tzinfo is datetime.timezone.utc:
        return (value - _EPOCH) // _MILLI  # fastavro's timestamp-millis: aware UTC
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        delta: datetime.timedelta = value - datetime.datetime(
            1970, 1, 1, tzinfo=datetime.timezone.utc
        )
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
    millis: int = int(value)
    return millis


def _tuple_or_none(value: Any) -> tuple[Any, ...] | None:
    return tuple(value) if value is not None else None


def file_to_avro(f: DataFileMeta) -> dict[str, Any]:
    return {
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_MIN_KEY": f.min_key,
        "_MAX_KEY": f.max_key,
        "_KEY_STATS": _stats_to_avro(f.key_stats),
        "_VALUE_STATS": _stats_to_avro(f.value_stats),
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
        "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id,
        "_LEVEL": f.level,
        "_EXTRA_FILES": list(f.extra_files),
        "_CREATION_TIME": f.creation_time,
        "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": f.embedded_index,
        "_FILE_SOURCE": f.file_source,
        "_VALUE_STATS_COLS": list(f.value_stats_cols) if f.value_stats_cols is not None else None,
        "_EXTERNAL_PATH": f.external_path,
        "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": list(f.write_cols) if f.write_cols is not None else None,
        "_WRITE_COLS_SEQUENCES": (
            list(f.write_cols_sequences) if f.write_cols_sequences is not None else None
        ),
    }


def file_from_avro(r: dict[str, Any]) -> DataFileMeta:
    # positional, in DataFileMeta's field order: 100,000 entries are decoded per cold plan
    get = r.get
    embedded = get("_EMBEDDED_FILE_INDEX")
    extra = get("_EXTRA_FILES")
    return DataFileMeta(
        r["_FILE_NAME"],
        int(r["_FILE_SIZE"]),
        int(r["_ROW_COUNT"]),
        bytes(r["_MIN_KEY"]),
        bytes(r["_MAX_KEY"]),
        _stats_from_avro(get("_KEY_STATS")),
        _stats_from_avro(get("_VALUE_STATS")),
        int(r["_MIN_SEQUENCE_NUMBER"]),
        int(r["_MAX_SEQUENCE_NUMBER"]),
        int(r["_SCHEMA_ID"]),
        int(r["_LEVEL"]),
        tuple(extra) if extra else (),
        _millis(get("_CREATION_TIME")),
        get("_DELETE_ROW_COUNT"),
        bytes(embedded) if embedded is not None else None,
        get("_FILE_SOURCE"),
        _tuple_or_none(get("_VALUE_STATS_COLS")),
        get("_EXTERNAL_PATH"),
        get("_FIRST_ROW_ID"),
        _tuple_or_none(get("_WRITE_COLS")),
        _tuple_or_none(get("_WRITE_COLS_SEQUENCES")),
    )


def _avro_bytes(schema: Any, records: Iterable[dict[str, Any]], codec: str) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records, codec=codec)
    return buf.getvalue()


def _avro_records(data: bytes, what: str) -> list[dict[str, Any]]:
    try:
        records: list[Any] = list(fastavro.reader(io.BytesIO(data)))
        return records
    except Exception as e:  # fastavro raises many types on corrupt input
        raise CorruptMetadataError(f"cannot read {what}: {type(e).__name__}: {e}") from e


def new_file_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}-0"


# -- manifests ---------------------------------------------------------------------------


def write_manifest(
    file_io: FileIO,
    table_path: str,
    entries: Sequence[ManifestEntry],
    partition_types: Sequence[DataType],
    schema_id: int,
    codec: str = "zstandard",
) -> ManifestFileMeta:
    """Write one manifest file; returns its manifest-list record."""
    records = [
        {
            "_VERSION": FORMAT_IDENTIFIER,
            "_KIND": int(e.kind),
            "_PARTITION": serialize_row(e.partition, partition_types),
            "_BUCKET": e.bucket,
            "_TOTAL_BUCKETS": e.total_buckets,
            "_FILE": file_to_avro(e.file),
        }
        for e in entries
    ]
    data = _avro_bytes(_parsed("entry", MANIFEST_ENTRY_SCHEMA), records, codec)
    name = new_file_name("manifest")
    file_io.write_bytes(f"{table_path}/{MANIFEST_DIR}/{name}", data)
    return ManifestFileMeta(
        file_name=name,
        file_size=len(data),
        num_added_files=sum(1 for e in entries if e.kind is FileKind.ADD),
        num_deleted_files=sum(1 for e in entries if e.kind is FileKind.DELETE),
        partition_stats=partition_stats([e.partition for e in entries], partition_types),
        schema_id=schema_id,
        min_bucket=min((e.bucket for e in entries), default=None),
        max_bucket=max((e.bucket for e in entries), default=None),
        min_level=min((e.file.level for e in entries), default=None),
        max_level=max((e.file.level for e in entries), default=None),
    )


def partition_stats(
    partitions: Sequence[tuple[Any, ...]], partition_types: Sequence[DataType]
) -> SimpleStats:
    """Min/max/null counts of partition values (``_PARTITION_STATS``)."""
    n = len(partition_types)
    mins: list[Any] = [None] * n
    maxs: list[Any] = [None] * n
    nulls = [0] * n
    for p in partitions:
        for i, v in enumerate(p):
            if v is None:
                nulls[i] += 1
                continue
            if mins[i] is None or v < mins[i]:
                mins[i] = v
            if maxs[i] is None or v > maxs[i]:
                maxs[i] = v
    return SimpleStats(
        serialize_row(mins, partition_types), serialize_row(maxs, partition_types), tuple(nulls)
    )


def _manifest_bytes(file_io: FileIO, table_path: str, file_name: str) -> bytes:
    try:
        return file_io.read_bytes(f"{table_path}/{MANIFEST_DIR}/{file_name}")
    except FileNotFoundError as e:
        raise CorruptMetadataError(f"manifest {file_name} not found") from e


def read_manifest(
    file_io: FileIO, table_path: str, file_name: str, partition_types: Sequence[DataType]
) -> list[ManifestEntry]:
    """All entries of one manifest file (decoded column-wise where
    :mod:`~lakeskip.catalog.format.manifest_columns` can, else record by record).

    Raises:
        CorruptMetadataError: missing or undecodable file.
    """
    data = _manifest_bytes(file_io, table_path, file_name)
    columns = manifest_columns.decode(data)
    if columns is not None:
        return columns.entries(np.arange(columns.n), partition_types)
    return decode_manifest_records(data, file_name, partition_types)


def read_manifest_columns(
    file_io: FileIO, table_path: str, file_name: str, partition_types: Sequence[DataType]
) -> manifest_columns.ManifestColumns | list[ManifestEntry]:
    """One manifest file as columns, or as all its entries where the column-wise decoder
    does not handle it.

    Raises:
        CorruptMetadataError: missing or undecodable file.
    """
    data = _manifest_bytes(file_io, table_path, file_name)
    columns = manifest_columns.decode(data)
    if columns is not None:
        return columns
    return decode_manifest_records(data, file_name, partition_types)


def decode_manifest_records(
    data: bytes, file_name: str, partition_types: Sequence[DataType]
) -> list[ManifestEntry]:
    """The entries of a manifest file's bytes, record by record (fastavro's records).

    Raises:
        CorruptMetadataError: undecodable bytes.
    """
    out = []
    # a manifest holds few distinct partitions: decode each once (and share the tuple)
    partitions: dict[bytes, tuple[Any, ...]] = {}
    kinds = {int(k): k for k in FileKind}
    for r in _avro_records(data, f"manifest {file_name}"):
        try:
            version = r.get("_VERSION", FORMAT_IDENTIFIER)
            if version != FORMAT_IDENTIFIER:
                raise CorruptMetadataError(f"manifest {file_name}: unsupported version {version}")
            raw = bytes(r["_PARTITION"])
            partition = partitions.get(raw)
            if partition is None:
                partition = partitions[raw] = deserialize_row(raw, partition_types)
            kind = kinds.get(r["_KIND"])
            out.append(
                ManifestEntry(
                    kind=kind if kind is not None else FileKind(int(r["_KIND"])),
                    partition=partition,
                    bucket=int(r["_BUCKET"]),
                    total_buckets=int(r["_TOTAL_BUCKETS"]),
                    file=file_from_avro(r["_FILE"]),
                )
            )
        except (KeyError, ValueError, TypeError) as e:
            raise CorruptMetadataError(f"manifest {file_name}: bad entry: {e}") from e
    return out


# -- manifest lists ----------------------------------------------------------------------


def write_manifest_list(
    file_io: FileIO, table_path: str, metas: Sequence[ManifestFileMeta], codec: str = "zstandard"
) -> tuple[str, int]:
    """Write a manifest list; returns ``(file name, size)``."""
    records = [
        {
            "_VERSION": FORMAT_IDENTIFIER,
            "_FILE_NAME": m.file_name,
            "_FILE_SIZE": m.file_size,
            "_NUM_ADDED_FILES": m.num_added_files,
            "_NUM_DELETED_FILES": m.num_deleted_files,
            "_PARTITION_STATS": _stats_to_avro(m.partition_stats),
            "_SCHEMA_ID": m.schema_id,
            "_MIN_BUCKET": m.min_bucket,
            "_MAX_BUCKET": m.max_bucket,
            "_MIN_LEVEL": m.min_level,
            "_MAX_LEVEL": m.max_level,
            "_MIN_ROW_ID": m.min_row_id,
            "_MAX_ROW_ID": m.max_row_id,
        }
        for m in metas
    ]
    data = _avro_bytes(_parsed("list", MANIFEST_FILE_META_SCHEMA), records, codec)
    name = new_file_name("manifest-list")
    file_io.write_bytes(f"{table_path}/{MANIFEST_DIR}/{name}", data)
    return name, len(data)


def read_manifest_list(file_io: FileIO, table_path: str, name: str) -> list[ManifestFileMeta]:
    """The manifest files a manifest list names.

    Raises:
        CorruptMetadataError: missing or undecodable file.
    """
    try:
        data = file_io.read_bytes(f"{table_path}/{MANIFEST_DIR}/{name}")
    except FileNotFoundError as e:
        raise CorruptMetadataError(f"manifest list {name} not found") from e
    out = []
    for r in _avro_records(data, f"manifest list {name}"):
        try:
            out.append(
                ManifestFileMeta(
                    file_name=r["_FILE_NAME"],
                    file_size=int(r["_FILE_SIZE"]),
                    num_added_files=int(r["_NUM_ADDED_FILES"]),
                    num_deleted_files=int(r["_NUM_DELETED_FILES"]),
                    partition_stats=_stats_from_avro(r.get("_PARTITION_STATS")),
                    schema_id=int(r["_SCHEMA_ID"]),
                    min_bucket=r.get("_MIN_BUCKET"),
                    max_bucket=r.get("_MAX_BUCKET"),
                    min_level=r.get("_MIN_LEVEL"),
                    max_level=r.get("_MAX_LEVEL"),
                    min_row_id=r.get("_MIN_ROW_ID"),
                    max_row_id=r.get("_MAX_ROW_ID"),
                )
            )
        except (KeyError, ValueError, TypeError) as e:
            raise CorruptMetadataError(f"manifest list {name}: bad record: {e}") from e
    return out
