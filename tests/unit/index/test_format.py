"""File-index container: Java golden round trip, random round trip, garbage splice."""

from __future__ import annotations

import contextlib
import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip.errors import CorruptIndexError
from lakeskip.index.format import MAGIC, FileIndexContainer, write_container

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
