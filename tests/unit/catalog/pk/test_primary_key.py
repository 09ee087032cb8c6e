"""Primary-key tables without Spark: DDL checks, the key-value file layout and its manifest
fields, in-write dedupe, sequence numbers, and bucket/key pruning in the planner."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.pk_tables import write_pk

from lakeskip import expressions as E
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.binary_row import deserialize_row
from lakeskip.catalog.format.bucket import bucket_of
from lakeskip.catalog.pk.merge_engine import dedupe_latest
from lakeskip.catalog.pk.primary_key import RowKind
from lakeskip.errors import InvalidArgumentError, InvalidOptionError
from lakeskip.planner.report import SkipTier
from lakeskip.planner.scan import ScanPlanner
from lakeskip.sql.statement_types import CreateTable
from lakeskip.sql.statements import parse_statements
from lakeskip.types import BIGINT, DOUBLE, INT, STRING, RowType

ROW = RowType.of(("id", BIGINT), ("dt", STRING), ("v", INT))


def _write(table, rows, kind=RowKind.INSERT, prefix="w"):  # type: ignore[no-untyped-def]
    return write_pk(table, rows, kind, prefix, row_type=ROW)


def test_create_stores_keys_not_null_and_dynamic_bucket(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    t = cat.create_table("default.t", ROW, ["dt"], {"primary-key": "dt, id"})
    assert t.schema.primary_keys == ("dt", "id")
    assert t.schema.options == {"bucket": "-1"}  # Paimon's default: dynamic bucket mode
    assert [f.type.nullable for f in t.schema.row_type] == [False, False, True]
    assert t.schema.bucket_spec() is None
    assert Catalog(str(tmp_path / "wh")).get_table("default.t").schema == t.schema
    fixed = cat.create_table("default.f", ROW, ["dt"], {"primary-key": "dt, id", "bucket": "2"})
    spec = fixed.schema.bucket_spec()
    assert spec is not None and spec.key == ("id",)  # primary key minus partition columns
    with pytest.raises(InvalidArgumentError, match="bucket assigner"):
        _write(cat.get_table("default.t"), [{"dt": "d", "id": 1, "v": "x"}])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"options": {"primary-key": "id"}, "partition_keys": ["dt"]},
            InvalidArgumentError,
            "all partition columns",
        ),
        (
            {"options": {"primary-key": "dt"}, "partition_keys": ["dt"]},
            InvalidArgumentError,
            "just the partition",
        ),
        ({"options": {"primary-key": "nope"}}, InvalidArgumentError, "not found"),
        ({"options": {"primary-key": "id,id"}}, InvalidArgumentError, "twice"),
        ({"options": {"primary-key": "id", "bucket": "0"}}, InvalidOptionError, "dynamic bucket"),
        (
            {"options": {"primary-key": "id", "dynamic-bucket.target-row-num": "0"}},
            InvalidOptionError,
            "target-row-num",
        ),
        (
            {
                "options": {
                    "primary-key": "id",
                    "merge-engine": "aggregation",
                    "fields.v.aggregate-function": "count",
                }
            },
            InvalidOptionError,
            "aggregate function 'count' .*Paimon removed it",
        ),
        (
            {"options": {"primary-key": "id", "bucket": "2", "bucket-key": "v"}},
            InvalidOptionError,
            "bucket-key",
        ),
        (
            {"options": {"primary-key": "id", "clustering.columns": "v"}},
            InvalidOptionError,
            "clustering",
        ),
        (
            {"options": {"primary-key": "id"}, "primary_keys": ["dt", "id"]},
            InvalidArgumentError,
            "given twice",
        ),
    ],
)
def test_create_errors(tmp_path: Path, kwargs, error, match) -> None:  # type: ignore[no-untyped-def]
    cat = Catalog(str(tmp_path / "wh"))
    with pytest.raises(error, match=match):
        cat.create_table("default.t", ROW, **kwargs)
    assert not cat.table_exists("default.t")


def test_float_keys_and_alter_of_the_key_are_refused(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    with pytest.raises(InvalidArgumentError, match="not supported yet"):
        cat.create_table("default.f", RowType.of(("x", DOUBLE), ("v", INT)), primary_keys=["x"])
    cat.create_table("default.t", ROW, primary_keys=["id"])
    with pytest.raises(InvalidOptionError, match="cannot be changed"):
        cat.alter_table("default.t", set_options={"bucket": "4"})


def test_sql_primary_key_forms() -> None:
    for text, keys in (
        ("CREATE TABLE t (id INT, v INT, PRIMARY KEY (id) NOT ENFORCED)", ("id",)),
        ("CREATE TABLE t (id INT PRIMARY KEY NOT ENFORCED, v INT)", ("id",)),
        ("CREATE TABLE t (a INT, b INT, CONSTRAINT pk PRIMARY KEY (a, b))", ("a", "b")),
        ("CREATE TABLE t (a INT, b INT)", ()),
    ):
        (s,) = parse_statements(text)
        assert isinstance(s, CreateTable) and s.primary_keys == keys, text


def test_dedupe_keeps_the_last_arrival_per_key() -> None:
    t = pa.table({"k": [3, 1, 3, 2, 1, 3], "p": ["a"] * 6, "v": [0, 1, 2, 3, 4, 5]})
    assert dedupe_latest(t, ["k"]).to_pydict() == {"k": [1, 2, 3], "p": ["a"] * 3, "v": [4, 3, 5]}
    two = pa.table({"a": [1, 1, 1], "b": ["x", "y", "x"], "v": [1, 2, 3]})
    assert dedupe_latest(two, ["a", "b"]).to_pydict()["v"] == [3, 2]


def test_key_value_files_and_manifest_fields(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    t = cat.create_table("default.t", ROW, ["dt"], {"bucket": "1"}, primary_keys=["id", "dt"])
    (first,) = _write(t, [{"id": i, "dt": "x", "v": i} for i in (5, 3, 9, 3)])
    meta = first.file
    assert (meta.row_count, meta.min_sequence_number, meta.max_sequence_number) == (3, 0, 2)
    assert deserialize_row(meta.min_key, [BIGINT]) == (3,)
    assert deserialize_row(meta.max_key, [BIGINT]) == (9,)
    assert meta.level == 0 and meta.delete_row_count == 0 and meta.value_stats_cols is None
    data = pq.read_table(t.data_file_path(first))
    assert data.column_names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "dt", "v"]
    assert data["_KEY_id"].to_pylist() == [3, 5, 9]
    assert data["v"].to_pylist() == [3, 5, 9]  # the later (3, 'x') row won inside the write
    (second,) = _write(t, [{"id": 5, "dt": "x", "v": None}], RowKind.DELETE, "d")
    assert second.file.min_sequence_number == 3 and second.file.delete_row_count == 1
    assert pq.read_table(t.data_file_path(second))["_VALUE_KIND"].to_pylist() == [3]


def test_planner_prunes_buckets_and_key_ranges_but_not_by_value(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    t = cat.create_table("default.t", ROW, options={"primary-key": "id", "bucket": "4"})
    _write(t, [{"id": i, "dt": "x", "v": i} for i in range(0, 40)], prefix="a")
    _write(t, [{"id": i, "dt": "x", "v": -i} for i in range(100, 140)], prefix="b")
    planner = ScanPlanner(t.refresh())
    plan = planner.plan(E.EqualTo(E.Reference("id"), 7))
    bucket = bucket_of((7,), (BIGINT,), 4)
    assert {e.bucket for e in plan.files} == {bucket}
    assert len(plan.files) == 1  # the second write's file of that bucket: key range 100..139
    assert plan.report.skipped_by_bucket == 6
    # v = -7 matches no version in the first write's files but the bucket stays whole where a
    # file may match; buckets where no file may match are dropped
    plan = planner.plan(E.EqualTo(E.Reference("v"), -107))
    kept_buckets = {e.bucket for e in plan.files}
    assert bucket_of((107,), (BIGINT,), 4) in kept_buckets
    for d in plan.decisions:
        if d.entry.bucket in kept_buckets:
            assert d.keep, "a file of a live bucket was skipped by a value predicate"
        else:
            assert d.tier in (SkipTier.STATS, SkipTier.EMBEDDED_INDEX, SkipTier.INDEX_FILE)


def test_full_compaction_keeps_the_merged_rows(tmp_path: Path) -> None:
    from tests.unit.planner.test_never_wrong_primary_key import ROW_TYPE, merged
    from tests.unit.procedures.test_sort_rewrite import LocalExecutor

    from lakeskip.procedures.compact import Compact

    cat = Catalog(str(tmp_path / "wh"))
    t = cat.create_table("default.t", ROW_TYPE, ["p"], {"primary-key": "k,p", "bucket": "2"})

    def write(rows: list[dict[str, object]], kind: RowKind, prefix: str) -> None:
        write_pk(t, rows, kind, prefix, row_type=ROW_TYPE)

    write([{"k": i, "p": "x", "i32": i, "s": "a"} for i in range(10)], RowKind.INSERT, "a")
    write([{"k": i, "p": "x", "i32": -i, "s": "b"} for i in range(5, 15)], RowKind.INSERT, "b")
    write([{"k": i, "p": "x", "i32": 0, "s": "c"} for i in (0, 7, 14)], RowKind.DELETE, "c")
    want = sorted(merged(t, t.scan_files()).to_pylist(), key=repr)
    files_before = len(t.scan_files())
    result = Compact().run(
        catalog=cat,
        executor=LocalExecutor(),
        arguments={"table": "default.t"},
        default_database="default",
    )
    after = t.scan_files()
    assert result.values[0][0] == files_before and result.values[0][1] == len(after)
    assert {e.file.level for e in after} == {5}
    assert sum(e.file.row_count for e in after) == len(want)  # deletes are gone
    assert sorted(merged(t, after).to_pylist(), key=repr) == want
    # a later write still wins over the compacted versions
    write([{"k": 1, "p": "x", "i32": 99, "s": "z"}], RowKind.INSERT, "d")
    rows = {r["k"]: r for r in merged(t, t.scan_files()).to_pylist()}
    assert rows[1]["i32"] == 99 and 0 not in rows and 7 not in rows
