"""The most important test: the planner never skips a file that holds a matching row.

Random tables (several types, nulls, skew, a map column) are written as several real data
files with stats and every index type (embedded or in ``.index`` files), random predicates
(nested AND/OR/NOT, IN lists, ranges at and beyond the edges, nulls, map keys) are planned,
and every skipped file is checked against the oracle (``evaluate_arrow`` over its rows, the
same query with no pruning). ``make fuzz`` runs it with thousands of examples."""

from __future__ import annotations

import os
import struct
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.expressions.strategies import SCALARS, column_values, predicates

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.index.format import FileIndexContainer, write_container
from lakeskip.planner.report import SkipTier
from lakeskip.planner.scan import ScanPlanner

COLUMNS = ["i32", "i64", "f64", "s", "d", "ts", "dec", "b"]
OPTIONS = {
    "file-index.bloom-filter.columns": "s,i64,m[k]",
    "file-index.bloom-filter.s.items": "20",
    "file-index.bloom-filter.i64.items": "20",
    "file-index.bloom-filter.m.items": "20",
    "file-index.bitmap.columns": "i32,b,f64",
    "file-index.bsi.columns": "dec,d,ts",
    "file-index.range-bitmap.columns": "i32,f64,s,ts,dec,m[k]",
    "file-index.range-bitmap.s.chunk-size": "8b",
    "metadata.stats-mode": "full",
}


def _map_values(draw: Any, n: int) -> list[Any]:
    keys = st.sampled_from(["k", "j"])
    vals = st.one_of(st.none(), st.sampled_from(["x", "y", "z"]))
    entry = st.dictionaries(keys, vals, max_size=2)
    return [draw(st.one_of(st.none(), entry)) for _ in range(n)]


def _file_rows(data: st.DataObject, n: int) -> pa.Table:
    """``n`` random rows of every column."""
    cols = {c: data.draw(column_values(c, n), label=c) for c in COLUMNS}
    arrays = {c: pa.array(cols[c], SCALARS[c][0].to_arrow()) for c in COLUMNS}
    arrays["m"] = pa.array(_map_values(data.draw, n), pa.map_(pa.string(), pa.string()))
    return pa.table(arrays)


def _predicate(data: st.DataObject, all_values: dict[str, list[Any]]) -> E.BooleanExpression:
    pred = data.draw(predicates(all_values, depth=2), label="predicate")
    if data.draw(st.booleans(), label="map"):
        pred = E.Or(
            pred, E.EqualTo(E.Reference("m", key="k"), data.draw(st.sampled_from(["x", "q"])))
        )
    return pred


def _values_and_rows(
    entries: list[Any], files: list[pa.Table]
) -> tuple[dict[str, list[Any]], dict[str, pa.Table]]:
    """Every column's values (for the predicates' literals), and each file's rows by name."""
    values = {c: [v for t in files for v in t[c].to_pylist()] for c in COLUMNS}
    return values, {e.file.file_name: t for e, t in zip(entries, files, strict=True)}


def _check_skips(plan: Any, pred: Any, schema: T.RowType, files: dict[str, pa.Table]) -> None:
    """Every skipped file holds no matching row (the oracle: ``evaluate_arrow`` over its
    rows); a row bitmap kept every matching row."""
    bound = E.bind(schema, pred)
    for d in plan.decisions:
        matches = E.evaluate_arrow(bound, files[d.entry.file.file_name]).to_pylist()
        if not d.keep:
            assert not any(matches), (
                f"skipped {d.entry.file.file_name} by {d.reason} but rows "
                f"{[i for i, m in enumerate(matches) if m]} match {pred!r}"
            )
        elif d.rows is not None:
            missing = [i for i, m in enumerate(matches) if m and i not in d.rows]
            assert not missing, f"row bitmap of {d.reason} lost rows {missing} for {pred!r}"


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "40")))
@given(data=st.data())
def test_planner_never_skips_a_matching_file(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp: Path = tmp_path_factory.mktemp("nw")
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    row_type = T.RowType.of(
        *[(c, SCALARS[c][0]) for c in COLUMNS], ("m", T.map_of(T.STRING, T.STRING))
    )
    threshold = data.draw(st.sampled_from(["0 b", "500 b", "1 mb"]), label="threshold")
    table = cat.create_table(
        "db.t", row_type, options={**OPTIONS, "file-index.in-manifest-threshold": threshold}
    )
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    n_files = data.draw(st.integers(1, 4), label="files")
    files: list[pa.Table] = []
    entries = []
    for f in range(n_files):
        t = _file_rows(data, data.draw(st.integers(1, 12), label="rows"))
        files.append(t)
        entries.append(write_data_file(spec, t, (), f"data-nw-{f}.parquet"))
    table.commit(entries)
    all_values, by_name = _values_and_rows(entries, files)
    planner = ScanPlanner(table)
    for _ in range(4):
        pred = _predicate(data, all_values)
        _check_skips(planner.plan(pred), pred, table.schema.row_type, by_name)


# every indexed column has an index that records its row count (bitmap, bsi, range-bitmap),
# so a container can be checked against the data file whatever column a predicate tests
COUNTED_OPTIONS = {**OPTIONS, "file-index.bsi.columns": "dec,d,ts,i64"}
_ROW_COUNT_AT = {"bitmap": 1, "bsi": 1, "range-bitmap": 5}  # i32 rowCount's offset in each


def _recounted(container: bytes, rows: int) -> bytes:
    """``container`` with every recorded row count changed to ``rows``."""
    mapping = FileIndexContainer.decode(container).to_mapping()
    for by_type in mapping.values():
        for index_type, payload in by_type.items():
            at = _ROW_COUNT_AT.get(index_type)
            if payload is not None and at is not None:
                by_type[index_type] = payload[:at] + struct.pack(">i", rows) + payload[at + 4 :]
    return write_container(mapping)


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "40")))
@given(data=st.data())
def test_an_index_that_does_not_count_the_files_rows_is_never_used(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """An index container of another data file (a swapped index name, a copied embedded
    index), or one whose indexes claim another row count than the manifest's, keeps the
    file: every skip is checked against the rows (the oracle) and no index tier may skip."""
    tmp: Path = tmp_path_factory.mktemp("nc")
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    row_type = T.RowType.of(
        *[(c, SCALARS[c][0]) for c in COLUMNS], ("m", T.map_of(T.STRING, T.STRING))
    )
    threshold = data.draw(st.sampled_from(["0 b", "1 mb"]), label="threshold")
    table = cat.create_table(
        "db.t",
        row_type,
        options={**COUNTED_OPTIONS, "file-index.in-manifest-threshold": threshold},
    )
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    counts = data.draw(st.lists(st.integers(1, 12), min_size=2, max_size=4, unique=True))
    files: list[pa.Table] = []
    written = []
    for f, n in enumerate(counts):
        files.append(_file_rows(data, n))
        written.append(write_data_file(spec, files[-1], (), f"data-nc-{f}.parquet"))
    damage = data.draw(st.sampled_from(["swap", "recount"]), label="damage")
    entries = []
    for f, e in enumerate(written):
        meta = e.file
        if damage == "swap":  # the next file's index, embedded or by name
            other = written[(f + 1) % len(written)].file
            meta = replace(meta, embedded_index=other.embedded_index, extra_files=other.extra_files)
        elif meta.embedded_index is not None:
            claimed = meta.row_count - 1 if meta.row_count > 1 else meta.row_count + 1
            meta = replace(meta, embedded_index=_recounted(meta.embedded_index, claimed))
        else:
            claimed = meta.row_count - 1 if meta.row_count > 1 else meta.row_count + 1
            path = f"{table.data_file_dir(e)}/{meta.index_file_name}"
            table.file_io.write_bytes(path, _recounted(table.file_io.read_bytes(path), claimed))
        entries.append(replace(e, file=meta))
    table.commit(entries)
    all_values, by_name = _values_and_rows(entries, files)
    planner = ScanPlanner(table)
    for _ in range(4):
        pred = _predicate(data, all_values)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            plan = planner.plan(pred)
        assert all("file kept" in str(w.message) for w in said), [str(w.message) for w in said]
        _check_skips(plan, pred, table.schema.row_type, by_name)
        for d in plan.decisions:
            assert d.tier not in (SkipTier.EMBEDDED_INDEX, SkipTier.INDEX_FILE), (
                f"{damage}: {d.entry.file.file_name} skipped by {d.reason}, an index that "
                f"does not count its {d.entry.file.row_count} rows"
            )
            assert d.rows is None, f"{damage}: row positions from another file's index"
