"""Per-file index writer and reader: random tables, threshold boundary, map keys, registry types."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip import types as T
from lakeskip.errors import CorruptIndexError
from lakeskip.index.file_index import FileIndexFile, build_file_index, map_lookup_first
from lakeskip.index.format import write_container
from lakeskip.index.options import parse_file_index_options
from lakeskip.index.registry import get_indexer
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


_ALL = {
    "file-index.bloom-filter.columns": "id,s,m[k]",
    "file-index.bloom-filter.id.items": "40",
    "file-index.bloom-filter.s.items": "40",
    "file-index.bloom-filter.m.items": "40",
    "file-index.bitmap.columns": "id,s,m[k]",
    "file-index.bsi.columns": "id",
    "file-index.in-manifest-threshold": "1mb",
}


def _rows_of(res: object) -> set[int] | None:
    bm = getattr(res, "bitmap", None)
    return None if bm is None else set(bm)


@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-20, 20)),
            st.one_of(st.none(), st.sampled_from(["", "a", "b", "é", "a\x00"])),
            st.one_of(st.none(), st.dictionaries(st.sampled_from(["k", "j"]), st.integers(0, 3))),
        ),
        max_size=40,
    ),
    st.integers(-25, 25),
)
def test_every_reader_agrees_with_the_rows(rows: list[tuple], probe: int) -> None:  # type: ignore[type-arg]
    """bloom, bitmap and bsi through the registry: a SKIP or a row set never drops a match."""
    ids = [r[0] for r in rows]
    ss = [r[1] for r in rows]
    ms = [r[2] for r in rows]
    res = build_file_index(_table(ids, ss, ms), SCHEMA, parse_file_index_options(_ALL, SCHEMA))
    assert res.embedded is not None, "1mb threshold: embedded"
    assert {k: set(v) for k, v in res.index_types.items()} == {
        "id": {"bloom-filter", "bitmap", "bsi"},
        "s": {"bloom-filter", "bitmap"},
        "m[k]": {"bloom-filter", "bitmap"},
    }
    f = FileIndexFile.from_bytes(res.embedded, SCHEMA)
    mk = [None if m is None else m.get("k") for m in ms]
    for name, vals, probes in (
        ("id", ids, [probe, *ids]),
        ("s", ss, ["a", "zz", *ss]),
        ("m[k]", mk, [probe % 4, *mk]),
    ):
        if not rows:
            continue  # all EMPTY: no readers, REMAIN
        typed = f.typed_readers(name)
        assert len(typed) == len(res.index_types[name]), f"{name}: one reader per index"
        for v in probes:
            if v is None:
                continue
            want = {i for i, x in enumerate(vals) if x == v}
            for index_type, r in typed:
                got = r.visit_equal(v)
                rows_got = _rows_of(got)
                if got is SKIP:
                    assert not want, f"{index_type} on {name} skipped {v!r} present in {want}"
                elif rows_got is not None:
                    assert want <= rows_got, f"{index_type} on {name}={v!r} lost {want - rows_got}"


@pytest.mark.parametrize("rows", [1, 7, 300])
def test_each_counting_index_reports_the_rows_it_was_built_over(rows: int) -> None:
    """bitmap, bsi and range-bitmap record their row count; ``row_count`` reads it from the
    payload's first bytes (the bloom filter records none)."""
    t = _table([i % 5 for i in range(rows)], ["a"] * rows, [None] * rows)
    opts = parse_file_index_options(
        {**_ALL, "file-index.range-bitmap.columns": "id", "file-index.in-manifest-threshold": "0"},
        SCHEMA,
    )
    res = build_file_index(t, SCHEMA, opts)
    assert res.external is not None
    c = FileIndexFile.from_bytes(res.external, SCHEMA).container
    got = {
        (e.column, e.index_type): get_indexer(e.index_type).row_count(
            c.payload(e.column, e.index_type) or b""
        )
        for e in c.entries
    }
    assert got == {
        ("id", "bloom-filter"): None,
        ("id", "bitmap"): rows,
        ("id", "bsi"): rows,
        ("id", "range-bitmap"): rows,
        ("s", "bloom-filter"): None,
        ("s", "bitmap"): rows,
        ("m[k]", "bloom-filter"): None,
        ("m[k]", "bitmap"): rows,
    }, "each index counts the file's rows"


def test_an_index_counting_other_rows_gives_no_reader() -> None:
    """A container whose bitmap counts 3 rows opened for a file of 4 rows (another file's
    container): no reader of it is handed out, the bloom filters' included."""
    three = build_file_index(
        _table([1, 2, 3], ["a", "b", "c"], [None] * 3),
        SCHEMA,
        parse_file_index_options(_ALL, SCHEMA),
    ).embedded
    assert three is not None
    assert len(FileIndexFile.from_bytes(three, SCHEMA, row_count=3).readers("s")) == 2
    assert len(FileIndexFile.from_bytes(three, SCHEMA).readers("s")) == 2, "unknown: no check"
    other = FileIndexFile.from_bytes(three, SCHEMA, row_count=4)
    for name in ("s", "id", "m[k]"):
        with pytest.raises(CorruptIndexError, match="counts 3 rows, the data file has 4"):
            other.readers(name)


def test_empty_entries_and_lazy_readers() -> None:
    t = _table([], [], [])
    res = build_file_index(t, SCHEMA, parse_file_index_options(_ALL, SCHEMA))
    data = res.embedded
    assert data is not None
    c = FileIndexFile.from_bytes(data, SCHEMA)
    assert all(e.start == -1 for e in c.container.entries), "no rows: every index EMPTY"
    assert c.readers("id") == [], "EMPTY gives no reader (REMAIN)"
    one = build_file_index(
        _table([1], ["a"], [None]), SCHEMA, parse_file_index_options(_ALL, SCHEMA)
    )
    assert one.embedded is not None
    f = FileIndexFile.from_bytes(one.embedded, SCHEMA)
    assert f.typed_readers("id") is f.typed_readers("id"), "readers created once, then cached"
    assert len(f.readers("m[k]")) == 2, "bloom and bitmap on the map key"
    bitmap = dict(f.typed_readers("m[k]"))["bitmap"]
    assert _rows_of(bitmap.visit_is_null()) == {0}, "null map: the key lookup is null"


def test_nanosecond_timestamps_floor_for_every_index() -> None:
    schema = T.RowType.of(("t", T.parse_sql_type("TIMESTAMP(9)")))
    nanos = [-1_744_877_000 + 1, None, 1_745_542_802_000_123_999]
    table = pa.table({"t": pa.array(nanos, pa.timestamp("ns"))})
    opts = parse_file_index_options(
        {"file-index.bloom-filter.columns": "t", "file-index.bitmap.columns": "t"}, schema
    )
    res = build_file_index(table, schema, opts)
    data = res.embedded or res.external
    assert data is not None
    f = FileIndexFile.from_bytes(data, schema)
    for index_type, r in f.typed_readers("t"):
        for row, micros in ((0, -1_744_877), (2, 1_745_542_802_000_123)):
            got = r.visit_equal(micros)
            assert got is not SKIP, f"{index_type}: floor({nanos[row]} ns) = {micros} us"
            rows = _rows_of(got)
            assert rows is None or row in rows, f"{index_type}: row {row} lost"


_MAPS = st.lists(
    st.one_of(
        st.none(),
        st.lists(
            st.tuples(st.sampled_from(["a", "b", "dev", ""]), st.one_of(st.none(), st.text())),
            max_size=4,
        ),
    ),
    max_size=30,
)


@given(_MAPS, st.integers(0, 30), st.integers(0, 30), st.sampled_from(["a", "dev", "zz", ""]))
def test_map_lookup_first_equals_arrow(
    maps: list[list[tuple[str, str | None]] | None], start: int, length: int, key: str
) -> None:
    """Oracle: Arrow's own map_lookup(..., "first"), on sliced arrays too (the keys of a
    sliced MapArray are not sliced)."""
    col = pa.array(maps, pa.map_(pa.string(), pa.string()))
    col = col.slice(min(start, len(col)), length)
    want = pc.map_lookup(col, pa.scalar(key, pa.string()), "first")
    assert map_lookup_first(col, key).to_pylist() == want.to_pylist()
