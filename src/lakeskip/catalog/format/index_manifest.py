"""The index manifest: ``<table>/manifest/index-manifest-<uuid>-0`` (Avro), named by the
snapshot's ``indexManifest``.

::

    snapshot-N {"indexManifest": "index-manifest-<uuid>-0", ...}
        └─► IndexManifestEntry {_VERSION=1, _KIND (0 ADD), _PARTITION (BinaryRow bytes),
                                _BUCKET, _INDEX_TYPE ("DELETION_VECTORS"), _FILE_NAME,
                                _FILE_SIZE, _ROW_COUNT (DVs in the file),
                                _DELETIONS_VECTORS_RANGES [{f0 data file, f1 offset,
                                f2 length, _CARDINALITY}], _EXTERNAL_PATH, _GLOBAL_INDEX}

Unlike data manifests it is not base + delta: every snapshot's index manifest lists *all*
live index files (Paimon's ``IndexManifestFileHandler`` combines the previous list with a
commit's changes and writes only ADD entries). A snapshot without ``indexManifest`` has no
index files. Field names and types are Paimon's ``IndexManifestEntry.SCHEMA`` (pypaimon's
``INDEX_MANIFEST_ENTRY_SCHEMA``); readers match fields by name, nested record names do not
matter.

Example:
    >>> from lakeskip.catalog.format.deletion_vectors import IndexFileMeta
    >>> e = IndexManifestEntry(FileKind.ADD, (), 0, IndexFileMeta("DELETION_VECTORS", "i", 1, 0))
    >>> decode_entries(encode_entries([e], (), "null"), (), "m") == [e]
    True
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.binary_row import deserialize_row, serialize_row
from lakeskip.catalog.format.deletion_vectors import DeletionVectorMeta, IndexFileMeta
from lakeskip.catalog.format.manifest import (
    MANIFEST_DIR,
    FileKind,
    _avro_bytes,
    _avro_records,
    _parsed,
)
from lakeskip.errors import CorruptMetadataError
from lakeskip.types import DataType

__all__ = [
    "INDEX_MANIFEST_ENTRY_SCHEMA",
    "IndexManifestEntry",
    "decode_entries",
    "encode_entries",
    "read_index_manifest",
    "write_index_manifest",
]

FORMAT_IDENTIFIER = 1
INDEX_MANIFEST_PREFIX = "index-manifest-"


def _opt(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", t], "default": None}


_DV_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record__DELETIONS_VECTORS_RANGES",
    "fields": [
        {"name": "f0", "type": "string"},
        {"name": "f1", "type": "int"},
        {"name": "f2", "type": "int"},
        _opt("_CARDINALITY", "long"),
    ],
}

_GLOBAL_INDEX_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record__GLOBAL_INDEX",
    "fields": [
        {"name": "_ROW_RANGE_START", "type": "long"},
        {"name": "_ROW_RANGE_END", "type": "long"},
        {"name": "_INDEX_FIELD_ID", "type": "int"},
        _opt("_EXTRA_FIELD_IDS", {"type": "array", "items": "int"}),
        _opt("_INDEX_META", "bytes"),
        _opt("_SOURCE_META", "bytes"),
    ],
}

INDEX_MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "IndexManifestEntry",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        _opt("_DELETIONS_VECTORS_RANGES", {"type": "array", "items": _DV_META_SCHEMA}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_GLOBAL_INDEX", _GLOBAL_INDEX_SCHEMA),
    ],
}


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    """One index file of a snapshot. ``partition`` holds internal-form values."""

    kind: FileKind
    partition: tuple[Any, ...]
    bucket: int
    index_file: IndexFileMeta


def _to_avro(e: IndexManifestEntry, partition_types: Sequence[DataType]) -> dict[str, Any]:
    f = e.index_file
    ranges = (
        None
        if f.dv_ranges is None
        else [
            {"f0": m.data_file_name, "f1": m.offset, "f2": m.length, "_CARDINALITY": m.cardinality}
            for m in f.dv_ranges
        ]
    )
    return {
        "_VERSION": FORMAT_IDENTIFIER,
        "_KIND": int(e.kind),
        "_PARTITION": serialize_row(e.partition, partition_types),
        "_BUCKET": e.bucket,
        "_INDEX_TYPE": f.index_type,
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_DELETIONS_VECTORS_RANGES": ranges,
        "_EXTERNAL_PATH": f.external_path,
        "_GLOBAL_INDEX": None,
    }


def _from_avro(r: dict[str, Any], partition_types: Sequence[DataType]) -> IndexManifestEntry:
    raw = r.get("_DELETIONS_VECTORS_RANGES")
    ranges = (
        None
        if raw is None
        else tuple(
            DeletionVectorMeta(
                str(m["f0"]),
                int(m["f1"]),
                int(m["f2"]),
                None if m.get("_CARDINALITY") is None else int(m["_CARDINALITY"]),
            )
            for m in raw
        )
    )
    return IndexManifestEntry(
        kind=FileKind(int(r["_KIND"])),
        partition=deserialize_row(bytes(r["_PARTITION"]), partition_types),
        bucket=int(r["_BUCKET"]),
        index_file=IndexFileMeta(
            index_type=str(r["_INDEX_TYPE"]),
            file_name=str(r["_FILE_NAME"]),
            file_size=int(r["_FILE_SIZE"]),
            row_count=int(r["_ROW_COUNT"]),
            dv_ranges=ranges,
            external_path=r.get("_EXTERNAL_PATH"),
        ),
    )


def encode_entries(
    entries: Sequence[IndexManifestEntry], partition_types: Sequence[DataType], codec: str
) -> bytes:
    """The Avro bytes of an index manifest."""
    schema = _parsed("index_manifest_entry", INDEX_MANIFEST_ENTRY_SCHEMA)
    return _avro_bytes(schema, [_to_avro(e, partition_types) for e in entries], codec)


def decode_entries(
    data: bytes, partition_types: Sequence[DataType], name: str
) -> list[IndexManifestEntry]:
    """Entries of an index manifest's bytes (raises CorruptMetadataError)."""
    out = []
    for r in _avro_records(data, f"index manifest {name}"):
        try:
            version = r.get("_VERSION", FORMAT_IDENTIFIER)
            if version != FORMAT_IDENTIFIER:
                raise CorruptMetadataError(f"index manifest {name}: unsupported version {version}")
            out.append(_from_avro(r, partition_types))
        except (KeyError, ValueError, TypeError) as e:
            raise CorruptMetadataError(f"index manifest {name}: bad entry: {e}") from e
    return out


def write_index_manifest(
    file_io: FileIO,
    table_path: str,
    entries: Sequence[IndexManifestEntry],
    partition_types: Sequence[DataType],
    codec: str,
) -> str:
    """Write a new index manifest; returns its file name."""
    name = f"{INDEX_MANIFEST_PREFIX}{uuid.uuid4()}-0"
    data = encode_entries(entries, partition_types, codec)
    file_io.write_bytes(f"{table_path}/{MANIFEST_DIR}/{name}", data)
    return name


def read_index_manifest(
    file_io: FileIO, table_path: str, name: str, partition_types: Sequence[DataType]
) -> list[IndexManifestEntry]:
    """Entries of an index manifest (raises CorruptMetadataError if missing or bad)."""
    try:
        data = file_io.read_bytes(f"{table_path}/{MANIFEST_DIR}/{name}")
    except FileNotFoundError as e:
        raise CorruptMetadataError(f"index manifest {name} not found") from e
    return decode_entries(data, partition_types, name)
