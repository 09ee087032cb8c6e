"""The column-wise manifest decoder (lakeskip.catalog.format.manifest_columns) against the
record-by-record one (fastavro's records, ``decode_manifest_records``) on random manifests:
the same entries, every field, for all rows and for any subset of rows; the same counts of
the files a partition selection leaves out; and on manifests whose writer schema differs
from ours (fields missing, unknown fields, a nullable stats record) or whose bytes are
damaged, never different entries.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import threading
from typing import Any

import fastavro
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples

from lakeskip import types as T
from lakeskip.catalog.format import manifest_columns
from lakeskip.catalog.format.binary_row import EMPTY_ROW_BYTES, serialize_row
from lakeskip.catalog.format.data_file import EMPTY_STATS, DataFileMeta, SimpleStats
from lakeskip.catalog.format.manifest import (
    FORMAT_IDENTIFIER,
    MANIFEST_ENTRY_SCHEMA,
    FileKind,
    ManifestEntry,
    decode_manifest_records,
    file_to_avro,
)
from lakeskip.catalog.table import merge_entries
from lakeskip.errors import CorruptMetadataError

TYPES = (T.INT, T.STRING)

_text = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=12)
# the empty row, and bytes of its length that differ from it in one byte (the decoder shares
# one object for every empty row it finds)
_near_empty = st.sampled_from(
    [EMPTY_ROW_BYTES, EMPTY_ROW_BYTES[:-1] + b"\x01", b"\x01" + EMPTY_ROW_BYTES[1:], b"", b"\x00"]
)
_bytes = st.binary(max_size=40) | _near_empty
_long = st.integers(-(2**63), 2**63 - 1)
_count = st.integers(0, 2**40)
_null_counts = st.lists(st.one_of(st.none(), _count), max_size=5).map(tuple) | st.sampled_from(
    [(), (0,), (0, 0, 0), (None,), (0, None)]
)
_stats = st.one_of(
    st.just(SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())),
    st.builds(SimpleStats, _bytes, _bytes, _null_counts),
)
_names = st.lists(_text, max_size=4).map(tuple)


def _file(i: int) -> st.SearchStrategy[DataFileMeta]:
    return st.builds(
        DataFileMeta,
        st.just(f"data-{i}.parquet") | _text.map(lambda t: f"{t}-{i}"),
        _count,
        _count,
        _bytes,
        _bytes,
        _stats,
        _stats,
        _long,
        _long,
        st.integers(0, 50),
        st.integers(0, 5),
        _names,
        st.none() | st.integers(0, 2**42),  # timestamp-millis, as fastavro reads it back
        st.none() | _count,
        st.none() | _bytes,
        st.none() | st.integers(0, 1),
        st.none() | _names,
        st.none() | _text,
        st.none() | _count,
        st.none() | _names,
        st.none() | st.lists(_long, max_size=4).map(tuple),
    )


@st.composite
def _entries(draw: st.DrawFn) -> list[ManifestEntry]:
    n = draw(st.integers(0, 60))
    partitions = draw(
        st.lists(
            st.tuples(st.none() | st.integers(-5, 5), st.none() | _text), min_size=1, max_size=5
        )
    )
    # sometimes every file the same but for its name (a column of one value throughout: the
    # decoder shares one object for some of those)
    same = draw(st.none() | _file(0))
    return [
        ManifestEntry(
            draw(st.sampled_from(FileKind)),
            draw(st.sampled_from(partitions)),
            draw(st.integers(-1, 9)),
            draw(st.integers(-2, 16)),
            draw(_file(i)) if same is None else dataclasses.replace(same, file_name=f"d-{i}"),
        )
        for i in range(n)
    ]


def _records(entries: list[ManifestEntry]) -> list[dict[str, Any]]:
    return [
        {
            "_VERSION": FORMAT_IDENTIFIER,
            "_KIND": int(e.kind),
            "_PARTITION": serialize_row(e.partition, TYPES),
            "_BUCKET": e.bucket,
            "_TOTAL_BUCKETS": e.total_buckets,
            "_FILE": file_to_avro(e.file),
        }
        for e in entries
    ]


def _avro(schema: dict[str, Any], records: list[dict[str, Any]], codec: str, every: int) -> bytes:
    buf = io.BytesIO()
    # small blocks: many blocks of unequal length decoded at once; a fixed sync marker (fastavro
    # draws a random one): the same example gives the same bytes, so hypothesis can replay it
    fastavro.writer(
        buf,
        fastavro.parse_schema(schema),
        records,
        codec=codec,
        sync_interval=every,
        sync_marker=b"lakeskip-sync-16",
    )
    return buf.getvalue()


def _columns(data: bytes) -> manifest_columns.ManifestColumns:
    got = manifest_columns.decode(data)
    assert got is not None, "a manifest of our schema is decoded column-wise"
    return got


@settings(max_examples=unit_examples(60), deadline=None)
@given(
    _entries(),
    st.sampled_from(["null", "deflate", "zstandard"]),
    st.integers(1, 5000),
    st.data(),
)
def test_same_entries_as_record_by_record(
    entries: list[ManifestEntry], codec: str, every: int, data: st.DataObject
) -> None:
    raw = _avro(MANIFEST_ENTRY_SCHEMA, _records(entries), codec, every)
    want = decode_manifest_records(raw, "m", TYPES)
    assert want == entries
    cols = _columns(raw)
    n = len(want)
    assert cols.n == n
    # a subset first (the rest made later must equal too), then all rows
    rows = np.asarray(sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)))) if n else []))
    rows = rows.astype(np.int64)
    assert cols.entries(rows, TYPES) == [want[i] for i in rows.tolist()]
    assert cols.entries(np.arange(n), TYPES) == want
    # a partition selection: the rows of the partitions kept, and what the others hold
    parts = cols.partitions(TYPES)
    keep = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(parts), max_size=len(parts))))
    picked, (files, size, count) = cols.rows_in(keep)
    chosen = {p for p, k in zip(parts, keep.tolist(), strict=True) if k}
    assert [want[i] for i in picked.tolist()] == [e for e in want if e.partition in chosen]
    out = [e for e in want if e.partition not in chosen]
    sign = [1 if e.kind is FileKind.ADD else -1 for e in out]
    assert files == sum(sign)
    assert size == sum(s * e.file.file_size for s, e in zip(sign, out, strict=True))
    assert count == sum(s * e.file.row_count for s, e in zip(sign, out, strict=True))


def _other_writer() -> dict[str, Any]:
    """Our entry schema as another writer might have it: optional fields missing, an unknown
    field in the middle of ``_FILE``, the value stats record nullable, a union the other
    way round."""
    schema = copy.deepcopy(MANIFEST_ENTRY_SCHEMA)
    file = schema["fields"][-1]["type"]
    fields = [f for f in file["fields"] if f["name"] not in ("_WRITE_COLS", "_FIRST_ROW_ID")]
    at = next(i for i, f in enumerate(fields) if f["name"] == "_LEVEL")
    fields.insert(at, {"name": "_UNKNOWN", "type": {"type": "array", "items": "double"}})
    for f in fields:
        if f["name"] == "_VALUE_STATS":
            f["type"] = ["null", f["type"]]
        if f["name"] == "_EXTERNAL_PATH":
            f["type"] = ["string", "null"]
            f["default"] = ""
    file["fields"] = fields
    return schema


@settings(max_examples=unit_examples(30), deadline=None)
@given(_entries(), st.integers(1, 3000), st.data())
def test_another_writers_schema(entries: list[ManifestEntry], every: int, data: Any) -> None:
    records = _records(entries)
    for r in records:
        f = r["_FILE"]
        f["_UNKNOWN"] = data.draw(st.lists(st.floats(allow_nan=False), max_size=3))
        if data.draw(st.booleans()):
            f["_VALUE_STATS"] = None
    raw = _avro(_other_writer(), records, "zstandard", every)
    want = decode_manifest_records(raw, "m", TYPES)
    assert _columns(raw).entries(np.arange(len(want)), TYPES) == want


@settings(max_examples=unit_examples(80), deadline=None)
@given(_entries(), st.data())
def test_damaged_bytes_never_give_other_entries(entries: list[ManifestEntry], data: Any) -> None:
    raw = bytearray(_avro(MANIFEST_ENTRY_SCHEMA, _records(entries), "null", 2000))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    try:
        want: list[ManifestEntry] | None = decode_manifest_records(bytes(raw), "m", TYPES)
    except CorruptMetadataError:
        want = None
    cols = manifest_columns.decode(bytes(raw))
    if cols is None:
        return  # decoded record by record instead: the same as want
    try:
        got = cols.entries(np.arange(cols.n), TYPES)
    except CorruptMetadataError:
        return  # refused, as the other decoder may have
    if want is not None:
        assert got == want


def _zigzag(v: int) -> bytes:
    z, out = (v << 1) ^ (v >> 63), bytearray()
    while z > 0x7F:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    return bytes(out + bytes([z]))


@pytest.mark.parametrize(
    "header",
    [
        # an empty key, then a value of length -2: back to the same key, 10**12 times over
        _zigzag(10**12) + _zigzag(0) + _zigzag(-2),
        _zigzag(1) + _zigzag(-2) + b"ab" + _zigzag(0),
        _zigzag(1) + _zigzag(1) + b"k" + _zigzag(50) + b"short",
        _zigzag(-(10**12)) + _zigzag(3) + b"abc",
    ],
)
def test_a_damaged_header_is_left_to_the_record_decoder_at_once(header: bytes) -> None:
    done: list[object] = []
    worker = threading.Thread(
        target=lambda: done.append(manifest_columns.decode(b"Obj\x01" + header)), daemon=True
    )
    worker.start()
    worker.join(10)
    assert done == [None], "refused without walking the damaged header for ever"


def test_unsupported_files_are_left_to_the_record_decoder() -> None:
    schema = copy.deepcopy(MANIFEST_ENTRY_SCHEMA)
    schema["fields"][2] = {"name": "_PARTITION", "type": ["bytes", "string", "null"]}
    raw = _avro(schema, [], "null", 100)
    assert manifest_columns.decode(raw) is None, "a three-way union"
    assert manifest_columns.decode(b"not avro") is None
    good = _avro(MANIFEST_ENTRY_SCHEMA, [], "null", 100)
    assert manifest_columns.decode(good) is not None


@pytest.mark.parametrize("kind", [2, -1])
def test_an_unknown_kind_is_refused_as_before(kind: int) -> None:
    e = ManifestEntry(
        FileKind.ADD,
        (1, "a"),
        0,
        1,
        DataFileMeta(
            "f",
            1,
            1,
            b"",
            b"",
            SimpleStats(b"", b"", ()),
            SimpleStats(b"", b"", ()),
            0,
            0,
            0,
            0,
            (),
        ),
    )
    records = _records([e])
    records[0]["_KIND"] = kind
    raw = _avro(MANIFEST_ENTRY_SCHEMA, records, "null", 100)
    assert manifest_columns.decode(raw) is None
    with pytest.raises(CorruptMetadataError):
        decode_manifest_records(raw, "m", TYPES)


@settings(max_examples=unit_examples(60), deadline=None)
@given(st.lists(_entries(), min_size=1, max_size=3), st.data())
def test_live_columns_are_the_merged_entries(
    manifests: list[list[ManifestEntry]], data: st.DataObject
) -> None:
    """The live files of manifests in commit order as columns (``LiveColumns.merged``) against
    the record-by-record entries merged as ``FileStoreTable.scan_files`` merges them: the same
    files in the same order, every field a plan reads equal, the same entries made, for all
    files and for any subset."""
    # later manifests delete some files of earlier ones (their ADD, as Paimon writes the
    # DELETE) and sometimes add one of them again
    earlier = [e for m in manifests for e in m if e.kind is FileKind.ADD]
    if earlier:
        gone = data.draw(st.lists(st.sampled_from(earlier), max_size=6))
        again = data.draw(st.lists(st.sampled_from(earlier), max_size=2))
        manifests.append(
            [dataclasses.replace(e, kind=FileKind.DELETE) for e in gone]
            + [dataclasses.replace(e, kind=FileKind.ADD) for e in again]
        )
    raws = [_avro(MANIFEST_ENTRY_SCHEMA, _records(m), "null", 100) for m in manifests]
    every = [e for raw in raws for e in decode_manifest_records(raw, "m", TYPES)]
    want = merge_entries(every)
    parts = [(c, np.arange(c.n)) for c in map(_columns, raws)]
    live = manifest_columns.LiveColumns.merged(parts, TYPES)
    assert len(live) == len(want)
    files = [e.file for e in want]
    assert live.field("_FILE_NAME") == [f.file_name for f in files]
    assert live.field("_EXTERNAL_PATH") == [f.external_path for f in files]
    assert live.field("_CREATION_TIME") == [f.creation_time for f in files]
    assert live.field("_VALUE_STATS_COLS") == [f.value_stats_cols for f in files]
    for name, attr in (
        ("_FILE_SIZE", "file_size"),
        ("_ROW_COUNT", "row_count"),
        ("_SCHEMA_ID", "schema_id"),
        ("_LEVEL", "level"),
    ):
        assert live.longs(name).tolist() == [getattr(f, attr) for f in files]
    stats = live.stats_lists("_VALUE_STATS")
    assert stats is not None
    assert list(zip(*stats, strict=True)) == [
        (f.value_stats.min_values, f.value_stats.max_values, f.value_stats.null_counts)
        for f in files
    ]
    spans = live.stats_spans("_VALUE_STATS")
    if spans is not None:  # every file's own stats, read where they lie: the same bytes
        counts, (raw, lo, lo_end), (_, hi, hi_end) = spans
        assert counts == stats[2]
        assert [raw[a:b] for a, b in zip(lo.tolist(), lo_end.tolist(), strict=True)] == stats[0]
        assert [raw[a:b] for a, b in zip(hi.tolist(), hi_end.tolist(), strict=True)] == stats[1]
    else:  # some entry's stats are shared or missing: a live file's or a cancelled one's
        assert any(e.file.value_stats == EMPTY_STATS for e in every)
    number, values, _ = live.partitions()
    assert [values[k] for k in number.tolist()] == [e.partition for e in want]
    assert live.buckets().tolist() == [e.bucket for e in want]
    keep = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(want), max_size=len(want))))
    some = live.take(keep)
    picked = [e for e, k in zip(want, keep.tolist(), strict=True) if k]
    assert [some.entry_at(i) for i in range(len(some))] == picked
    assert some.field("_FILE_NAME") == [e.file.file_name for e in picked]
    assert some.entries() == picked
    assert live.entries() == want
