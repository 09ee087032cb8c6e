"""``parquet.*`` table options: validation, and what the data writer puts in the files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeskip.catalog import Catalog
from lakeskip.catalog.format.parquet_options import (
    DICTIONARY_SAMPLE_ROWS,
    BloomFilterSpec,
    _repeats,
    parquet_write_options,
)
from lakeskip.catalog.write.data_writer import DataWriter, write_all
from lakeskip.catalog.write.timings import WriteTimings
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import ColumnNotFoundError, InvalidOptionError
from lakeskip.types import RowType, parse_sql_type

ROW = RowType.of(
    ("id", parse_sql_type("BIGINT")),
    ("user_id", parse_sql_type("STRING")),
    ("ok", parse_sql_type("BOOLEAN")),
    ("tags", parse_sql_type("MAP<STRING, STRING>")),
    ("price", parse_sql_type("DECIMAL(10, 2)")),
)


def test_per_column_bloom_with_ndv_and_fpp() -> None:
    opts = parquet_write_options(
        {
            "parquet.bloom.filter.enabled#user_id": "true",
            "parquet.bloom.filter.expected.ndv#user_id": "5000",
            "parquet.bloom.filter.fpp#user_id": "0.02",
        },
        ROW,
    )
    assert opts.bloom_filters == {"user_id": BloomFilterSpec(ndv=5000, fpp=0.02)}
    assert opts.bloom_filter_options(10) == {"user_id": {"ndv": 5000, "fpp": 0.02}}


def test_ndv_defaults_to_the_file_row_count() -> None:
    opts = parquet_write_options({"parquet.bloom.filter.enabled#id": "true"}, ROW)
    assert opts.bloom_filter_options(777) == {"id": {"ndv": 777, "fpp": 0.01}}


def test_global_switch_takes_every_eligible_column_and_a_column_can_opt_out() -> None:
    opts = parquet_write_options(
        {"parquet.bloom.filter.enabled": "true", "parquet.bloom.filter.enabled#id": "false"}, ROW
    )
    # BOOLEAN and MAP cannot have a Parquet bloom filter; id opted out
    assert sorted(opts.bloom_filters) == ["price", "user_id"]


def test_no_option_means_no_bloom_and_a_page_index() -> None:
    opts = parquet_write_options({}, ROW)
    assert opts.bloom_filters == {}
    assert opts.page_index is True
    assert opts.compression == "zstd"
    assert "bloom_filter_options" not in opts.writer_kwargs(_data(10))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"parquet.bloom.filter.enabeld#id": "true"}, "did you mean"),
        ({"parquet.bloom.filter.enabled#id": "yes"}, "expected true or false"),
        ({"parquet.bloom.filter.fpp#id": "1.5"}, "must be in (0, 1)"),
        ({"parquet.bloom.filter.fpp#id": "nan"}, "must be in (0, 1)"),
        ({"parquet.bloom.filter.expected.ndv#id": "0"}, "must be > 0"),
        ({"parquet.bloom.filter.expected.ndv#id": "many"}, "not an integer"),
        ({"parquet.bloom.filter.enabled#ok": "true"}, "is BOOLEAN"),
        ({"parquet.bloom.filter.enabled#tags": "true"}, "is MAP"),
        ({"parquet.bloom.filter.enabled#": "true"}, "no column after '#'"),
        ({"parquet.page-index.enabled": "1"}, "expected true or false"),
        ({"parquet.block.size": "-5"}, "must be > 0"),
        ({"parquet.writer.version": "v2"}, "unknown table option"),
    ],
)
def test_bad_options_are_rejected(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parquet_write_options(options, ROW)


def test_a_missing_column_is_named() -> None:
    with pytest.raises(ColumnNotFoundError, match="nope"):
        parquet_write_options({"parquet.bloom.filter.enabled#nope": "true"}, ROW)


def test_writers_ignore_parquet_mr_keys_lakeskip_does_not_use() -> None:
    """A table made by Paimon may carry any parquet-mr key; writing must not fail on it."""
    opts = parquet_write_options(
        {"parquet.enable.dictionary": "false", "parquet.bloom.filter.enabled#id": "true"},
        ROW,
        strict=False,
    )
    assert list(opts.bloom_filters) == ["id"]


def test_create_table_validates_parquet_options(catalog: Catalog) -> None:
    with pytest.raises(InvalidOptionError, match="is BOOLEAN"):
        catalog.create_table("t", ROW, options={"parquet.bloom.filter.enabled#ok": "true"})
    with pytest.raises(ColumnNotFoundError):
        catalog.create_table("t", ROW, options={"parquet.bloom.filter.fpp#missing": "0.1"})
    catalog.create_table("t", ROW, options={"parquet.bloom.filter.enabled#user_id": "true"})


SMALL = RowType.of(("id", parse_sql_type("BIGINT")), ("user_id", parse_sql_type("STRING")))


def _data(n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "user_id": pa.array([f"u{i * 7 % n}" if i % 10 else None for i in range(n)]),
        }
    )


def _write(catalog: Catalog, options: dict[str, str], data: pa.Table) -> list[pq.ParquetFile]:
    table = catalog.create_table("t", SMALL, options=options)
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    entries = write_all(spec, [data])
    return [
        pq.ParquetFile(f"{table.path}/{table.partition_path(e.partition)}/{e.file.file_name}")
        for e in entries
    ]


def test_written_file_has_the_bloom_filter_and_page_index_and_same_rows(
    catalog: Catalog,
) -> None:
    data = _data(3000)
    (f,) = _write(
        catalog,
        {
            "parquet.bloom.filter.enabled#user_id": "true",
            "parquet.block.size": str(data.nbytes // 3),
            "file.compression": "snappy",
        },
        data,
    )
    meta = f.metadata
    assert meta.num_row_groups >= 3, "block size of a third of the data gives >= 3 row groups"
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        by_name = {rg.column(i).path_in_schema: rg.column(i) for i in range(rg.num_columns)}
        assert by_name["user_id"].bloom_filter_offset is not None, "user_id should have a bloom"
        assert by_name["id"].bloom_filter_offset is None, "id was not asked for a bloom filter"
        assert by_name["user_id"].has_column_index, "page index is written by default"
        assert by_name["user_id"].compression == "SNAPPY"
    assert f.read().equals(data.cast(SMALL.to_arrow())), "bloom/page index must not change rows"


def test_page_index_can_be_turned_off(catalog: Catalog) -> None:
    (f,) = _write(catalog, {"parquet.page-index.enabled": "false"}, _data(100))
    col = f.metadata.row_group(0).column(1)
    assert not col.has_column_index
    assert col.bloom_filter_offset is None


def test_writer_reports_stage_timings(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    table = catalog.create_table("t", SMALL, options={"file-index.bloom-filter.columns": "user_id"})
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    writer = DataWriter(spec)
    entries = writer.write_batches(iter([_data(500), _data(300)]))
    t = writer.timings()
    assert (t.files, t.rows) == (len(entries), 800)
    assert t.parquet > 0 and t.index > 0, f"stages measured: {t.summary()}"
    # CPU seconds: the index stage's are a part of the task's
    assert 0 < t.index_cpu < t.cpu, f"cpu measured: {t.summary()}"
    total = t + WriteTimings(parquet=1.0, files=1, cpu=2.0, index_cpu=0.5)
    assert total.files == t.files + 1
    assert total.parquet == pytest.approx(t.parquet + 1.0)
    assert total.cpu == pytest.approx(t.cpu + 2.0)
    assert total.index_cpu == pytest.approx(t.index_cpu + 0.5)
    assert set(t.as_dict()) == {*WriteTimings.STAGES, "files", "rows", "cpu", "index_cpu"}


def _encodings(f: pq.ParquetFile) -> dict[str, tuple[str, ...]]:
    rg = f.metadata.row_group(0)
    return {rg.column(i).path_in_schema: rg.column(i).encodings for i in range(rg.num_columns)}


def test_dictionary_only_where_values_repeat(catalog: Catalog) -> None:
    """Distinct ids get plain encoding (a dictionary would not pay and slows Spark's reader);
    repeating user ids get a dictionary, as parquet-mr would decide."""
    data = pa.table(
        {
            "id": pa.array(range(5000), pa.int64()),
            "user_id": pa.array([f"u{i % 7}" for i in range(5000)]),
        }
    )
    (f,) = _write(catalog, {}, data)
    enc = _encodings(f)
    assert "RLE_DICTIONARY" not in enc["id"], enc
    assert "RLE_DICTIONARY" in enc["user_id"], enc
    assert f.read().equals(data.cast(SMALL.to_arrow()))


def test_dictionary_can_be_forced_per_column(catalog: Catalog) -> None:
    data = pa.table({"id": pa.array(range(500), pa.int64()), "user_id": pa.array(["same"] * 500)})
    (f,) = _write(
        catalog,
        {"parquet.enable.dictionary#id": "true", "parquet.enable.dictionary#user_id": "false"},
        data,
    )
    enc = _encodings(f)
    assert "RLE_DICTIONARY" in enc["id"] and "RLE_DICTIONARY" not in enc["user_id"], enc


def test_nested_columns_keep_their_dictionary() -> None:
    opts = parquet_write_options({}, ROW)
    t = pa.table(
        {
            "id": pa.array(range(100), pa.int64()),
            "tags": pa.array([[("k", "v")]] * 100, pa.map_(pa.string(), pa.string())),
        }
    )
    assert opts.use_dictionary(t) == ["tags.key_value.key", "tags.key_value.value"]
    off = parquet_write_options({"parquet.enable.dictionary": "false"}, ROW)
    assert off.use_dictionary(t) == []


FLOATS = RowType.of(
    ("id", parse_sql_type("BIGINT")),
    ("d", parse_sql_type("DOUBLE")),
    ("f", parse_sql_type("FLOAT")),
    ("z", parse_sql_type("DOUBLE")),
    ("m", parse_sql_type("MAP<STRING, DOUBLE>")),
    ("a", parse_sql_type("ARRAY<FLOAT>")),
)


def _float_file(catalog: Catalog, rows: int = 40) -> pq.ParquetFile:
    nan, inf = float("nan"), float("inf")
    data = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "d": [nan if i % 10 == 0 else inf if i % 10 == 1 else float(i) for i in range(rows)],
            "f": pa.array([float(i) for i in range(rows)], pa.float32()),  # no NaN: keeps stats
            "z": [0.0 if i % 2 else 1.0 for i in range(rows)],
            "m": pa.array(
                [[("k", nan if i == 3 else 1.0)] for i in range(rows)],
                pa.map_(pa.string(), pa.float64()),
            ),
            "a": pa.array(
                [[1.0, nan] if i == 5 else [2.0] for i in range(rows)], pa.list_(pa.float32())
            ),
        }
    )
    table = catalog.create_table("t", FLOATS, options={"parquet.block.size": "200"})
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    (e,) = write_all(spec, [data])
    return pq.ParquetFile(f"{table.path}/{table.partition_path(e.partition)}/{e.file.file_name}")


def test_float_chunks_holding_nan_get_no_statistics_and_no_column_index(catalog: Catalog) -> None:
    """Issue 26: pyarrow leaves NaN out of min/max (min 2.0, max inf), and Spark's pushed
    Parquet filters (NaN above +Infinity) then skip row groups whose NaN rows match."""
    meta = _float_file(catalog).metadata
    assert meta.num_row_groups >= 2
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        cols = {rg.column(i).path_in_schema: rg.column(i) for i in range(rg.num_columns)}
        for path in ("d", "m.key_value.value", "a.list.element"):  # the file holds NaN there
            assert not cols[path].is_stats_set, f"{path}: NaN-less min/max written"
            assert not cols[path].has_column_index, f"{path}: NaN-less column index written"
        for path in ("id", "f", "z", "m.key_value.key"):
            assert cols[path].is_stats_set and cols[path].statistics.has_min_max, path
            assert cols[path].has_column_index, path


def test_zero_bounds_follow_parquets_signed_zero_rule(catalog: Catalog) -> None:
    """A min of 0.0 is written as -0.0 and a max of -0.0 as +0.0 (pyarrow does this
    itself; parquet-mr's reader widens the same way), so ``c = -0.0`` / ``c = 0.0`` keep
    the row group."""
    double = parse_sql_type("DOUBLE")
    table = catalog.create_table("t", RowType.of(("p", double), ("n", double)))
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    (e,) = write_all(spec, [pa.table({"p": [0.0, 1.0], "n": [-1.0, -0.0]})])
    path = f"{table.path}/{table.partition_path(e.partition)}/{e.file.file_name}"
    rg = pq.ParquetFile(path).metadata.row_group(0)
    p, n = rg.column(0).statistics, rg.column(1).statistics
    assert str(p.min) == "-0.0" and p.max == 1.0
    assert n.min == -1.0 and str(n.max) == "0.0"


def test_float_columns_get_no_parquet_bloom_filter(catalog: Catalog) -> None:
    """pyarrow hashes a double's bits: a bloom filter would tell -0.0 from 0.0 (and NaNs
    of other bits apart), which Spark's ``c = 0.0`` treats as equal."""
    double = parse_sql_type("DOUBLE")
    rt = RowType.of(("id", parse_sql_type("BIGINT")), ("d", double))
    table = catalog.create_table("t", rt, options={"parquet.bloom.filter.enabled": "true"})
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    (e,) = write_all(spec, [pa.table({"id": [1, 2], "d": [-0.0, 1.5]})])
    path = f"{table.path}/{table.partition_path(e.partition)}/{e.file.file_name}"
    rg = pq.ParquetFile(path).metadata.row_group(0)
    assert rg.column(0).bloom_filter_offset is not None
    assert rg.column(1).bloom_filter_offset is None


_SAMPLE_VALUES = st.one_of(
    st.lists(st.one_of(st.none(), st.integers(-3, 3)), max_size=60).map(
        lambda v: pa.array(v, pa.int64())
    ),
    st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=60).map(
        lambda v: pa.array(v, pa.int64())
    ),
    st.lists(
        st.one_of(
            st.none(), st.sampled_from([0.0, -0.0, 1.5, float("nan"), float("inf")]), st.floats()
        ),
        max_size=60,
    ).map(lambda v: pa.array(v, pa.float64())),
    st.lists(
        st.one_of(st.none(), st.sampled_from(["", "a", "b", "é"]), st.text(max_size=3)), max_size=60
    ).map(lambda v: pa.array(v, pa.string())),
    st.lists(
        st.one_of(st.none(), st.decimals(-99, 99, places=1, allow_nan=False)), max_size=60
    ).map(lambda v: pa.array(v, pa.decimal128(4, 1))),
)


@given(
    st.lists(_SAMPLE_VALUES, min_size=1, max_size=3).filter(
        lambda arrays: len({a.type for a in arrays}) == 1
    )
)
def test_dictionary_choice_agrees_with_count_distinct(arrays: list[pa.Array]) -> None:
    """The choice of a dictionary (the same Parquet bytes as before the choice counted
    ``unique``'s values): oracle ``pc.count_distinct`` of the sample, the non-null distinct
    values, over nulls, NaN, signed zeros, repeats, several chunks."""
    column = pa.chunked_array(arrays, arrays[0].type)
    sample = column.slice(0, DICTIONARY_SAMPLE_ROWS)
    valid = len(sample) - sample.null_count
    expected = True if valid == 0 else 2 * pc.count_distinct(sample).as_py() <= valid
    assert _repeats(column) == expected
