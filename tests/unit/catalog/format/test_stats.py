"""collect_stats against a plain-Python oracle; file_column_stats mapping by field id."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip.catalog import TableSchema, collect_stats, file_column_stats, make_data_file_meta
from lakeskip.catalog.format.binary_row import deserialize_row
from lakeskip.catalog.format.stats import truncate_max, truncate_min
from lakeskip.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP,
    Field,
    RowType,
    array_of,
    decimal_type,
    map_of,
)

RT = RowType.of(
    ("i", INT),
    ("b", BIGINT),
    ("s", STRING),
    ("bin", BINARY),
    ("d", DOUBLE),
    ("ok", BOOLEAN),
    ("day", DATE),
    ("ts", TIMESTAMP),
    ("dec", decimal_type(12, 2)),
    ("m", map_of(STRING, INT)),
    ("arr", array_of(INT)),
)


def _decode(stats: Any, rt: RowType) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    types = [f.type for f in rt]
    return deserialize_row(stats.min_values, types), deserialize_row(stats.max_values, types)


rows_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "i": st.none() | st.integers(-(2**31), 2**31 - 1),
            "b": st.none() | st.integers(-(2**63), 2**63 - 1),
            "s": st.none() | st.text(max_size=30),
            "bin": st.none() | st.binary(max_size=30),
            "d": st.none() | st.floats(allow_nan=False),
            "ok": st.none() | st.booleans(),
            "day": st.none() | st.dates(),
            "ts": st.none() | st.datetimes(),
            "dec": st.none()
            | st.decimals(min_value=-(10**9), max_value=10**9, places=2, allow_nan=False),
            "m": st.none() | st.dictionaries(st.text(max_size=3), st.integers(0, 9), max_size=2),
            "arr": st.none() | st.lists(st.integers(0, 9), max_size=3),
        }
    ),
    min_size=1,
    max_size=40,
)


def _internal(name: str, v: Any) -> Any:
    if v is None:
        return None
    if name == "day":
        return (v - datetime.date(1970, 1, 1)).days
    if name == "ts":
        d = v - datetime.datetime(1970, 1, 1)
        return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    return v


@given(rows_strategy, st.sampled_from(["full", "truncate(4)", "counts"]))
def test_stats_bound_every_value(rows: list[dict[str, Any]], mode: str) -> None:
    table = pa.Table.from_pylist(
        [{**r, "m": list(r["m"].items()) if r["m"] is not None else None} for r in rows],
        schema=RT.to_arrow(),
    )
    stats, cols = collect_stats(table, RT, mode)
    assert cols is None, "dense store lists no columns when every column has stats"
    mins, maxs = _decode(stats, RT)
    for k, f in enumerate(RT):
        values = [_internal(f.name, r[f.name]) for r in rows]
        present = [v for v in values if v is not None]
        assert stats.null_counts[k] == len(values) - len(present), f"null count of {f.name}"
        lo, hi = mins[k], maxs[k]
        if mode == "counts" or f.type.is_nested:
            assert lo is None and hi is None, f"{f.name}: {mode} keeps no min/max"
            continue
        if not present:
            assert lo is None and hi is None, f"{f.name}: all null"
            continue
        if lo is None:  # truncation could not produce an upper bound
            assert hi is None and mode.startswith("truncate"), f"{f.name}: dropped stats"
            continue

        def key(v: Any, name: str = f.name) -> Any:
            return v.encode() if name == "s" else v  # strings order by UTF-8 bytes

        assert all(key(lo) <= key(v) for v in present), f"min({f.name})={lo!r} > some value"
        assert all(key(hi) >= key(v) for v in present), f"max({f.name})={hi!r} < some value"
        if mode == "full":
            assert lo in present and hi in present, f"{f.name}: full mode keeps exact values"


def test_none_mode_keeps_no_columns() -> None:
    table = pa.table({"i": [1, None]}, schema=RowType.of(("i", INT)).to_arrow())
    stats, cols = collect_stats(table, RowType.of(("i", INT)), "none")
    assert cols == () and stats.null_counts == ()


def test_nan_drops_min_max_but_keeps_null_count() -> None:
    rt = RowType.of(("d", DOUBLE))
    stats, _ = collect_stats(pa.table({"d": [1.0, math.nan, None]}), rt, "full")
    mins, maxs = _decode(stats, rt)
    assert mins == (None,) and maxs == (None,), "NaN sorts above all numbers: no safe max"
    assert stats.null_counts == (1,)


def test_truncation_rounds_the_max_up() -> None:
    assert truncate_min("abcdef", 3) == "abc"
    assert truncate_max("abcdef", 3) == "abd"
    assert truncate_max("ab\U0010ffff\U0010ffffz", 4) == "ac", "overflowing chars carry left"
    assert truncate_max("\U0010ffff" * 5, 2) is None
    assert truncate_max("a\ud7ffxyz", 2) == "a\ue000", "surrogates are skipped"
    rt = RowType.of(("s", STRING))
    stats, _ = collect_stats(pa.table({"s": ["\U0010ffff" * 20]}), rt, "truncate(16)")
    assert _decode(stats, rt) == ((None,), (None,)), "no upper bound: Paimon drops both"


def test_file_column_stats_maps_by_field_id() -> None:
    old_rt = RowType((Field(0, "id", BIGINT), Field(1, "old_name", STRING), Field(2, "gone", INT)))
    new_rt = RowType((Field(0, "id", BIGINT), Field(1, "new_name", STRING), Field(3, "added", INT)))
    old = TableSchema.create(0, old_rt, [], {}, None)
    new = dataclasses.replace(TableSchema.create(1, new_rt, [], {}, None), highest_field_id=3)
    table = pa.table({"id": [5, 1], "old_name": ["x", None], "gone": [1, 2]})
    stats, cols = collect_stats(table, old_rt, "full")
    meta = make_data_file_meta("f.parquet", 1, 2, stats, cols, 0, None, ())
    got = file_column_stats(meta, old, new)
    assert got == {"id": (1, 5, 0), "new_name": ("x", "x", 1)}, (
        "renamed column keyed by its new name, dropped column gone, added column absent"
    )


def test_file_column_stats_dense_subset_and_decimal() -> None:
    rt = RowType.of(("a", INT), ("dec", decimal_type(20, 2)))
    schema = TableSchema.create(0, rt, [], {}, None)
    sub = RowType((rt.fields[1],))
    stats, _ = collect_stats(pa.table({"dec": [decimal.Decimal("1.50"), None]}), sub, "full")
    meta = make_data_file_meta("f.parquet", 1, 2, stats, ("dec",), 0, None, ())
    assert file_column_stats(meta, schema, schema) == {
        "dec": (decimal.Decimal("1.50"), decimal.Decimal("1.50"), 1)
    }


@pytest.mark.parametrize("mode", ["none", "counts", "full", "truncate(16)"])
def test_modes_round_trip_through_file_column_stats(mode: str) -> None:
    rt = RowType.of(("a", INT), ("s", STRING))
    schema = TableSchema.create(0, rt, [], {}, None)
    stats, cols = collect_stats(pa.table({"a": [3, 1], "s": ["q", "p"]}), rt, mode)
    meta = make_data_file_meta("f.parquet", 1, 2, stats, cols, 0, None, ())
    got = file_column_stats(meta, schema, schema)
    table: dict[str, dict[str, Any]] = {
        "none": {},
        "counts": {"a": (None, None, 0), "s": (None, None, 0)},
        "full": {"a": (1, 3, 0), "s": ("p", "q", 0)},
        "truncate(16)": {"a": (1, 3, 0), "s": ("p", "q", 0)},
    }
    expected = table[mode]
    assert got == expected, mode


def _entry(data: dict[str, list[Any]], rt: RowType, schema_id: int, mode: str = "full") -> Any:
    from lakeskip.catalog import FileKind, ManifestEntry

    stats, cols = collect_stats(pa.table(data, schema=rt.to_arrow()), rt, mode)
    meta = make_data_file_meta(
        "f.parquet", 1, len(next(iter(data.values()))), stats, cols, schema_id, None, ()
    )
    return ManifestEntry(FileKind.ADD, (), 0, -1, meta)


def test_unpushable_columns_are_those_spark_could_misread_in_the_files() -> None:
    """Issue 26: the scan keeps filters on these columns out of Spark's pushed Parquet
    filters (old files' min/max without NaN, dictionaries telling -0.0 from 0.0, bloom
    filters, millisecond timestamps)."""
    from lakeskip.catalog.format.stats import unpushable_columns
    from lakeskip.types import parse_sql_type

    old_rt = RowType((Field(0, "id", BIGINT), Field(1, "a", DOUBLE), Field(2, "b", DOUBLE)))
    new_rt = RowType((*old_rt.fields, Field(3, "added", DOUBLE)))
    old = TableSchema.create(0, old_rt, [], {}, None)
    new = dataclasses.replace(TableSchema.create(1, new_rt, [], {}, None), highest_field_id=3)
    schemas = {0: old, 1: new}.__getitem__
    plain = _entry({"id": [1, 2], "a": [1.0, 2.0], "b": [math.inf, None]}, old_rt, 0)
    zero_b = _entry({"id": [1, 2], "a": [1.0, 2.0], "b": [-1.0, 3.0]}, old_rt, 0)
    nan_a = _entry({"id": [1, 2], "a": [math.nan, 1.0], "b": [None, None]}, old_rt, 0)
    nulls_b = _entry({"id": [1], "a": [1.0], "b": [None]}, old_rt, 0, "counts")
    nan_added = _entry({"id": [1], "a": [1.0], "b": [1.0], "added": [math.nan]}, new_rt, 1)
    assert unpushable_columns([plain], new, schemas) == frozenset(), "bounds: no NaN, no zero"
    assert unpushable_columns([plain, nan_a], new, schemas) == {"a"}, "NaN drops a's bounds"
    assert unpushable_columns([zero_b], new, schemas) == {"b"}, "b may hold -0.0 or 0.0"
    assert unpushable_columns([nulls_b], new, schemas) == {"a"}, (
        "counts mode: a unknown; b only nulls; 'added' not in the file (nulls)"
    )
    assert unpushable_columns([nan_added], new, schemas) == {"added"}

    def unknown(schema_id: int) -> TableSchema:
        raise KeyError(schema_id)

    assert unpushable_columns([plain], new, unknown) == {"a", "b", "added"}, "unknown schema"
    bloom = dataclasses.replace(new, options={"parquet.bloom.filter.enabled#b": "true"})
    assert unpushable_columns([plain], bloom, schemas) == {"b"}, "old files' bloom filters"
    ts_rt = RowType.of(
        ("ms", parse_sql_type("TIMESTAMP_LTZ(3)")), ("us", parse_sql_type("TIMESTAMP_LTZ(6)"))
    )
    ts = TableSchema.create(0, ts_rt, [], {}, None)
    assert unpushable_columns([], ts, schemas) == {"ms"}, "Spark truncates micros to millis"


def test_unpushable_columns_checks_only_the_filtered_columns() -> None:
    from lakeskip.catalog.format.stats import unpushable_columns

    rt = RowType((Field(0, "id", BIGINT), Field(1, "A", DOUBLE), Field(2, "b", DOUBLE)))
    schema = TableSchema.create(0, rt, [], {}, None)
    nan = _entry({"id": [1], "A": [math.nan], "b": [math.nan]}, rt, 0)
    assert unpushable_columns([nan], schema, lambda _: schema, ["a"]) == {"A"}
    assert unpushable_columns([nan], schema, lambda _: schema, ["id"]) == frozenset()
    assert unpushable_columns([nan], schema, lambda _: schema) == {"A", "b"}
