"""File-index container: Java golden round trip, random round trip, garbage splice."""

from __future__ import annotations

import contextlib
import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip import types as T
from lakeskip.errors import CorruptIndexError
from lakeskip.index.file_index import FileIndexFile
from lakeskip.index.format import MAGIC, FileIndexContainer, write_container
from lakeskip.index.result import BitmapResult

_GOLDEN = json.loads((Path(__file__).parents[2] / "golden/java/container.json").read_text())


@pytest.mark.parametrize("case", _GOLDEN["cases"], ids=lambda c: c["case"])
def test_java_container_decodes_and_reencodes(case: dict) -> None:  # type: ignore[type-arg]
    data = bytes.fromhex(case["hex"])
    c = FileIndexContainer.decode(data)
    got = [(e.column, e.index_type) for e in c.entries]
    assert got == [(e["column"], e["index_type"]) for e in case["entries"]], "header order"
    for e in case["entries"]:
        p = c.payload(e["column"], e["index_type"])
        want = None if e["payload_hex"] is None else bytes.fromhex(e["payload_hex"])
        assert (None if p is None else bytes(p)) == want, f"payload {e['column']}"
    assert write_container(c.to_mapping()) == data, "re-encode must be byte-identical to Java"


_names = st.text(min_size=1, max_size=8)
_mapping = st.dictionaries(
    _names,
    st.dictionaries(
        st.sampled_from(["bloom-filter", "bitmap", "bsi"]),
        st.one_of(st.none(), st.binary(max_size=30)),
        min_size=1,
    ),
    max_size=4,
)


@given(_mapping)
def test_round_trip(m: dict[str, dict[str, bytes | None]]) -> None:
    data = write_container(m)
    c = FileIndexContainer.decode(data)
    assert c.to_mapping() == m, "decode(write(m)) == m"
    assert c.columns() == list(m), "column order kept"


def _sample() -> bytes:
    return write_container({"a": {"bloom-filter": b"\x01\x02\x03"}, "b": {"bitmap": b"xyz"}})


def test_wrong_magic_and_version() -> None:
    data = bytearray(_sample())
    bad = bytes(struct.pack(">q", MAGIC + 1)) + data[8:]
    with pytest.raises(CorruptIndexError):
        FileIndexContainer.decode(bad)
    with pytest.raises(CorruptIndexError):
        FileIndexContainer.decode(data[:8] + struct.pack(">i", 2) + data[12:])


def test_every_truncation_raises_or_is_consistent() -> None:
    data = _sample()
    for n in range(len(data)):
        with pytest.raises(CorruptIndexError):
            FileIndexContainer.decode(data[:n])


def test_out_of_range_and_overlap() -> None:
    data = _sample()
    c = FileIndexContainer.decode(data)
    # locate the startPos of the second entry in the header and rewrite it
    e1, e2 = c.entries
    hdr = bytearray(data)
    pos = bytes(hdr).find(struct.pack(">ii", e2.start, e2.length))
    assert pos > 0
    hdr[pos : pos + 8] = struct.pack(">ii", e1.start, e2.length)  # overlaps the first
    with pytest.raises(CorruptIndexError):
        FileIndexContainer.decode(bytes(hdr))
    hdr[pos : pos + 8] = struct.pack(">ii", e2.start, 1000)  # past the end
    with pytest.raises(CorruptIndexError):
        FileIndexContainer.decode(bytes(hdr))
    hdr[pos : pos + 8] = struct.pack(">ii", -1, 3)  # EMPTY with a length
    with pytest.raises(CorruptIndexError):
        FileIndexContainer.decode(bytes(hdr))


@given(st.binary(max_size=80))
def test_random_garbage_never_crashes(junk: bytes) -> None:
    data = struct.pack(">q", MAGIC) + junk
    with contextlib.suppress(CorruptIndexError):
        FileIndexContainer.decode(data)


_CPP = json.loads(
    (Path(__file__).parents[2] / "golden/paimon_cpp/container.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("case", _CPP["cases"], ids=lambda c: c["case"])
def test_paimon_cpp_container(case: dict) -> None:  # type: ignore[type-arg]
    """Java-written containers from paimon-cpp: parse, answer the test's queries, re-encode."""
    data = bytes.fromhex(case["hex"])
    assert len(data) == case["length"], "vector copied whole"
    c = FileIndexContainer.decode(data)
    got = [(e.column, e.index_type, e.start == -1) for e in c.entries]
    want = [(e["column"], e["index_type"], e["empty"]) for e in case["entries"]]
    assert got == want, "header entries in Java's order"
    assert write_container(c.to_mapping()) == data, "re-encode must be byte-identical to Java"
    schema = T.RowType.of(*((n, T.parse_sql_type(t)) for n, t in case["schema"].items()))
    f = FileIndexFile.from_bytes(data, schema)
    for q in case["queries"]:
        (reader,) = f.readers(q["column"])
        visit = getattr(reader, f"visit_{q['op']}")
        res = visit() if q["value"] is None else visit(q["value"])
        rows = sorted(res.bitmap) if isinstance(res, BitmapResult) else None
        assert rows == q["rows"], f"{q['column']} {q['op']} {q['value']}: Java's answer {q['rows']}"
    if case["case"] == "TestCreateEmptyFileIndexReader":
        assert c.payload("c1", "empty") is None, "startPos -1 is the EMPTY flag"


def test_write_layout_by_hand() -> None:
    """Header arithmetic checked field by field (headLength, absolute startPos, redundant 0)."""
    data = write_container({"é": {"bloom-filter": b"\x07" * 3, "bitmap": None}})
    r = struct.unpack_from
    assert r(">qii", data, 0) == (MAGIC, 1, len(data) - 3), "magic, version, headLength"
    assert r(">iH", data, 16) == (1, 2) and data[22:24] == "é".encode(), "1 column, UTF name"
    assert r(">i", data, 24) == (2,), "2 index types"
    assert data[28:42] == b"\x00\x0cbloom-filter"
    assert r(">ii", data, 42) == (len(data) - 3, 3), "absolute start, length"
    assert data[50:58] == b"\x00\x06bitmap" and r(">ii", data, 58) == (-1, 0), "EMPTY flag"
    assert r(">i", data, 66) == (0,) and data[70:] == b"\x07" * 3, "redundant length 0, body"


def test_decode_accepts_memoryview_and_redundant_bytes() -> None:
    data = bytearray(write_container({"a": {"bitmap": b"xy"}}))
    # a future writer's redundant bytes: grow headLength and startPos by 2 and insert them
    head = struct.unpack_from(">i", data, 12)[0]
    start_at = head - 4 - 8
    struct.pack_into(">i", data, 12, head + 2)
    struct.pack_into(">i", data, start_at, head + 2)
    struct.pack_into(">i", data, head - 4, 2)
    spliced = bytes(data[:head]) + b"RR" + bytes(data[head:])
    c = FileIndexContainer.decode(memoryview(spliced))
    assert bytes(c.payload("a", "bitmap") or b"") == b"xy", "redundant bytes are skipped"
