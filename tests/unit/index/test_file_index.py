"""Per-file index writer and reader: random tables, threshold boundary, map keys, registry types."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip import types as T
from lakeskip.errors import CorruptIndexError
from lakeskip.index.file_index import FileIndexFile, build_file_index
from lakeskip.index.format import write_container
from lakeskip.index.options import parse_file_index_options
from lakeskip.index.result import REMAIN, SKIP

SCHEMA = T.RowType.of(("id", T.BIGINT), ("s", T.STRING), ("m", T.map_of(T.STRING, T.INT)))


def _table(
    ids: list[int | None], ss: list[str | None], ms: list[dict[str, int] | None]
) -> pa.Table:
    return pa.Table.from_arrays(
        [
            pa.array(ids, pa.int64()),
            pa.array(ss, pa.string()),
            pa.array(
                [None if m is None else list(m.items()) for m in ms],
                pa.map_(pa.string(), pa.int32()),
            ),
        ],
        schema=SCHEMA.to_arrow() if hasattr(SCHEMA, "to_arrow") else None,
    )


_OPTS = {
    "file-index.bloom-filter.columns": "id,s,m[k]",
    "file-index.bloom-filter.id.items": "50",
    "file-index.bloom-filter.s.items": "50",
    "file-index.bloom-filter.m.items": "50",
    "file-index.in-manifest-threshold": "0",
}


@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-1000, 1000)),
            st.one_of(st.none(), st.text(max_size=4)),
            st.one_of(st.none(), st.dictionaries(st.sampled_from(["k", "j"]), st.integers(0, 9))),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_present_values_remain(rows: list[tuple]) -> None:  # type: ignore[type-arg]
    ids, ss, ms = (list(c) for c in zip(*rows, strict=True))
    res = build_file_index(_table(ids, ss, ms), SCHEMA, parse_file_index_options(_OPTS, SCHEMA))
    assert res.embedded is None and res.external is not None, "threshold 0 -> external"
    f = FileIndexFile.from_bytes(res.external, SCHEMA)
    for name, vals in (
        ("id", ids),
        ("s", ss),
        ("m[k]", [None if m is None else m.get("k") for m in ms]),
    ):
        readers = f.readers(name)
        assert readers, f"{name} has a bloom reader"
        for v in vals:
            if v is not None:
                assert all(r.visit_equal(v) is REMAIN for r in readers), f"{name}={v!r} present"


def test_threshold_boundary_is_inclusive() -> None:
    t = _table([1, 2, 3], ["a", "b", None], [None, {"k": 1}, {}])
    base = {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": "10"}
    size = len(
        build_file_index(
            t,
            SCHEMA,
            parse_file_index_options({**base, "file-index.in-manifest-threshold": "0"}, SCHEMA),
        ).external
        or b""
    )
    at = build_file_index(
        t,
        SCHEMA,
        parse_file_index_options({**base, "file-index.in-manifest-threshold": f"{size}b"}, SCHEMA),
    )
    assert at.embedded is not None and at.external is None, "size == threshold -> embedded"
    below = build_file_index(
        t,
        SCHEMA,
        parse_file_index_options(
            {**base, "file-index.in-manifest-threshold": f"{size - 1}b"}, SCHEMA
        ),
    )
    assert below.external is not None and below.embedded is None, "size > threshold -> external"
    assert dict(at.index_types) == {"id": ("bloom-filter",)}


def test_nothing_configured_and_empty_table() -> None:
    t = _table([], [], [])
    res = build_file_index(t, SCHEMA, parse_file_index_options({}, SCHEMA))
    assert res.embedded is None and res.external is None
    res = build_file_index(t, SCHEMA, parse_file_index_options(_OPTS, SCHEMA))
    data = res.embedded or res.external
    assert data is not None
    f = FileIndexFile.from_bytes(data, SCHEMA)
    for r in f.readers("id"):
        assert r.visit_equal(1) in (SKIP, REMAIN)


def test_unknown_type_and_column_ignored() -> None:
    data = write_container(
        {"gone": {"bloom-filter": b"\x00\x00\x00\x01\x00"}, "id": {"mystery": b"zz"}}
    )
    f = FileIndexFile.from_bytes(data, SCHEMA)
    assert f.readers("gone") == [] and f.readers("id") == [], "ignored -> REMAIN"


def test_corrupt_bytes() -> None:
    with pytest.raises(CorruptIndexError):
        FileIndexFile.from_bytes(b"garbage-garbage-garbage-", SCHEMA)


def test_bitmap_and_bsi_through_registry() -> None:
    ids = [5, None, 7, 5, -3]
    t = _table(ids, ["x", "y", None, "x", "z"], [None] * 5)
    o = parse_file_index_options(
        {
            "file-index.bitmap.columns": "id,s",
            "file-index.bsi.columns": "id",
            "file-index.in-manifest-threshold": "1mb",
        },
        SCHEMA,
    )
    res = build_file_index(t, SCHEMA, o)
    assert res.embedded is not None
    f = FileIndexFile.from_bytes(res.embedded, SCHEMA)
    assert len(f.readers("id")) == 2 and len(f.readers("s")) == 1
    for r in f.readers("id"):
        got = r.visit_equal(5)
        assert got is not SKIP, "5 is present"
        rows = getattr(got, "bitmap", None)
        assert rows is None or {0, 3} <= set(rows), f"rows 0 and 3 hold 5, got {rows}"
