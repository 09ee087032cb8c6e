"""Schema evolution with Paimon's semantics (issue 41): the schema files ALTER writes, the
field ids, what is refused, options that follow a rename, and a planner that never skips a
file holding a match across schema versions (oracle: each file's rows kept in Python by
field id, mapped to the current schema and filtered by ``evaluate_arrow``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.expressions.strategies import predicates

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.field_mapping import reads_by_name
from lakeskip.catalog.format.schema import SchemaManager
from lakeskip.catalog.schema_evolution import (
    AddColumn,
    DropColumn,
    Move,
    RenameColumn,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
    apply_changes,
    widens,
)
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import ColumnNotFoundError, SchemaChangeError, UnsupportedIndexTypeError
from lakeskip.planner.scan import ScanPlanner


@pytest.fixture
def cat(tmp_path: Path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _table(cat: Catalog, **kw: Any) -> None:
    row_type = T.RowType.of(
        ("id", T.INT), ("s", T.STRING), ("st", T.row_of(("x", T.INT))), ("dt", T.STRING)
    )
    cat.create_table("db.t", row_type, **kw)


def _layout(cat: Catalog) -> list[tuple[int, str, str]]:
    return [(f.id, f.name, str(f.type)) for f in cat.get_table("db.t").schema.row_type]


def test_each_alter_publishes_the_next_schema_file_with_stable_ids(
    cat: Catalog, tmp_path: Path
) -> None:
    _table(cat, partition_keys=["dt"])
    st_x = "STRUCT<`x`: INT>"
    assert _layout(cat) == [
        (0, "id", "INT"),
        (1, "s", "STRING"),
        (2, "st", st_x),
        (4, "dt", "STRING"),
    ]
    s1 = cat.alter_columns("db.t", [AddColumn(("c",), T.BIGINT, "new", Move.first())])
    s2 = cat.alter_columns(
        "db.t",
        [RenameColumn(("s",), "name"), UpdateColumnType(("id",), T.BIGINT), DropColumn(("c",))],
    )
    s3 = cat.alter_columns("db.t", [AddColumn(("c",), T.STRING, move=Move.after("id"))])
    assert (s1.id, s2.id, s3.id) == (1, 2, 3)
    schema_dir = tmp_path / "wh" / "db.db" / "t" / "schema"
    assert sorted(p.name for p in schema_dir.iterdir()) == [f"schema-{i}" for i in range(4)]
    one = json.loads((schema_dir / "schema-1").read_text())
    assert (one["fields"][0]["id"], one["fields"][0]["name"]) == (5, "c")
    assert one["fields"][0]["description"] == "new" and one["highestFieldId"] == 5
    # the re-added c is a new column: a new id, never the dropped one's
    assert _layout(cat) == [
        (0, "id", "BIGINT"),
        (6, "c", "STRING"),
        (1, "name", "STRING"),
        (2, "st", st_x),
        (4, "dt", "STRING"),
    ]
    assert cat.get_table("db.t").schema.highest_field_id == 6
    # every older version stays readable as it was
    old = SchemaManager(cat.file_io, cat.get_table("db.t").path).read(0)
    assert old.row_type.names == ["id", "s", "st", "dt"]


def test_nested_fields_comments_nullability_and_moves(cat: Catalog) -> None:
    cat.create_table(
        "db.t", T.RowType.of(("k", T.INT.with_nullable(False)), ("a", T.INT), ("b", T.INT))
    )
    s = cat.alter_columns(
        "db.t",
        [
            AddColumn(("st",), T.row_of(("x", T.INT))),
            AddColumn(("st", "y"), T.STRING, move=Move.first()),
            RenameColumn(("st", "x"), "xx"),
            UpdateColumnType(("st", "xx"), T.BIGINT),
            UpdateColumnComment(("a",), "the a"),
            UpdateColumnNullability(("k",), True),
            UpdateColumnPosition(("b",), Move("BEFORE", "a")),
        ],
    )
    st_type = s.row_type.field("st").type
    assert [(f.id, f.name, str(f.type)) for f in st_type.row_fields] == [
        (5, "y", "STRING"),
        (4, "xx", "BIGINT"),
    ]
    assert s.row_type.names == ["k", "b", "a", "st"]
    assert s.row_type.field("a").description == "the a"
    assert s.row_type.field("k").type.nullable
    assert (s.row_type.field("st").id, s.highest_field_id) == (3, 5)
    # Paimon's applyMove: AFTER/BEFORE of a later or earlier column, FIRST, LAST
    s = cat.alter_columns("db.t", [UpdateColumnPosition(("k",), Move("AFTER", "st"))])
    assert s.row_type.names == ["b", "a", "st", "k"]
    s = cat.alter_columns("db.t", [UpdateColumnPosition(("k",), Move("BEFORE", "b"))])
    assert s.row_type.names == ["k", "b", "a", "st"]
    s = cat.alter_columns("db.t", [UpdateColumnPosition(("k",), Move("LAST"))])
    assert s.row_type.names == ["b", "a", "st", "k"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (RenameColumn(("dt",), "day"), r"^Cannot rename partition column: \[dt\]$"),
        (DropColumn(("dt",)), r"^Cannot drop partition key or primary key: \[dt\]$"),
        (UpdateColumnType(("dt",), T.STRING), r"^Cannot update partition column: \[dt\]$"),
        (AddColumn(("z",), T.INT.with_nullable(False)), "^Column z cannot specify NOT NULL"),
        (
            UpdateColumnType(("id",), T.SMALLINT),
            r"^Column type id\[INT\] cannot be converted to SMALLINT without losing",
        ),
        (UpdateColumnType(("s",), T.INT), r"^Column type s\[STRING\] cannot be converted"),
        (UpdateColumnNullability(("s",), False), "^Cannot update column type from nullable"),
        (AddColumn(("s",), T.INT), "^table db.t already has a column s$"),
        (RenameColumn(("id",), "s"), "^cannot rename id to s: that column exists$"),
        (UpdateColumnPosition(("id",), Move("AFTER", "id")), "^Cannot move itself for column id"),
        (AddColumn(("id", "x"), T.INT), "^column id is INT, not a ROW: no field x$"),
    ],
)
def test_refusals_are_one_line_and_leave_the_table_untouched(
    cat: Catalog, change: Any, message: str
) -> None:
    _table(cat, partition_keys=["dt"])
    with pytest.raises(SchemaChangeError, match=message) as info:
        cat.alter_columns("db.t", [change])
    assert "\n" not in str(info.value)
    assert cat.get_table("db.t").schema.id == 0


def test_primary_key_tables_refuse_what_paimon_refuses(cat: Catalog) -> None:
    cat.create_table(
        "db.t",
        T.RowType.of(
            ("dt", T.STRING.with_nullable(False)),
            ("k", T.INT.with_nullable(False)),
            ("v", T.INT),
            ("st", T.row_of(("x", T.INT))),
        ),
        partition_keys=["dt"],
        options={"bucket": "1", "sequence.field": "v"},
        primary_keys=["dt", "k"],
    )
    for change, message in [
        (DropColumn(("k",)), r"^Cannot drop partition key or primary key: \[k\]$"),
        (DropColumn(("dt",)), r"^Cannot drop partition key or primary key: \[dt\]$"),
        (UpdateColumnNullability(("k",), True), "^Cannot change nullability of primary key$"),
        (UpdateColumnType(("k",), T.BIGINT), "^Cannot update primary key$"),
        (RenameColumn(("dt",), "day"), r"^Cannot rename partition column: \[dt\]$"),
        (UpdateColumnType(("dt",), T.STRING), r"^Cannot update partition column: \[dt\]$"),
        (UpdateColumnType(("v",), T.BIGINT), "^Cannot update type of column v: option "),
        (RenameColumn(("st", "x"), "y"), "^RENAME COLUMN of a nested field is not supported"),
        (UpdateColumnType(("st", "x"), T.BIGINT), "^ALTER COLUMN TYPE of a nested field"),
        (DropColumn(("st", "x")), "^DROP COLUMN of a nested field is not supported"),
    ]:
        with pytest.raises(SchemaChangeError, match=message) as info:
            cat.alter_columns("db.t", [change])
        assert "\n" not in str(info.value)
    assert cat.get_table("db.t").schema.id == 0, "refused: no schema file"
    # what Paimon allows: a key or value column renamed (options follow), a value widened,
    # dropped, its name added back as a new column (read by field id, not by name)
    s = cat.alter_columns(
        "db.t",
        [RenameColumn(("k",), "id"), RenameColumn(("v",), "w"), AddColumn(("x",), T.SMALLINT)],
    )
    assert s.row_type.names == ["dt", "id", "w", "st", "x"] and s.primary_keys == ("dt", "id")
    assert s.options["sequence.field"] == "w"
    s = cat.alter_columns("db.t", [UpdateColumnType(("x",), T.BIGINT), DropColumn(("st",))])
    assert [str(f.type) for f in s.row_type][-1] == "BIGINT"
    s = cat.alter_columns("db.t", [AddColumn(("st",), T.STRING)])
    assert s.row_type.names == ["dt", "id", "w", "x", "st"]
    assert s.row_type.field("st").id != 3, "a new column, a new field id"


def test_missing_columns_and_drop_of_every_column(cat: Catalog) -> None:
    cat.create_table("db.t", T.RowType.of(("a", T.INT)))
    with pytest.raises(ColumnNotFoundError, match="column not found: nope"):
        cat.alter_columns("db.t", [RenameColumn(("nope",), "x")])
    with pytest.raises(ColumnNotFoundError, match="column not found: nope"):
        cat.alter_columns("db.t", [AddColumn(("b",), T.INT, move=Move.after("nope"))])
    with pytest.raises(SchemaChangeError, match=r"^Cannot drop all fields in table$"):
        cat.alter_columns("db.t", [DropColumn(("a",))])


def test_index_and_key_options_follow_a_rename_and_a_drop(cat: Catalog) -> None:
    cat.create_table(
        "db.t",
        T.RowType.of(("a", T.INT), ("b", T.STRING), ("m", T.map_of(T.STRING, T.INT))),
        options={
            "bucket": "2",
            "bucket-key": "a",
            "file-index.bloom-filter.columns": "b,a,m[k]",
            "file-index.bloom-filter.b.fpp": "0.01",
            "file-index.bitmap.columns": "b",
        },
    )
    s = cat.alter_columns("db.t", [RenameColumn(("b",), "bb"), RenameColumn(("a",), "aa")])
    assert s.options["bucket-key"] == "aa"
    assert s.options["file-index.bloom-filter.columns"] == "bb,aa,m[k]"
    assert s.options["file-index.bloom-filter.bb.fpp"] == "0.01"
    assert "file-index.bloom-filter.b.fpp" not in s.options
    assert s.options["file-index.bitmap.columns"] == "bb"
    # a dropped column's indexes go with it; a column another option names stays
    s = cat.alter_columns("db.t", [DropColumn(("bb",))])
    assert s.options["file-index.bloom-filter.columns"] == "aa,m[k]"
    assert not any(k.startswith("file-index.bitmap") or ".bb." in k for k in s.options)
    with pytest.raises(SchemaChangeError, match=r"^Cannot drop column aa: option 'bucket-key'"):
        cat.alter_columns("db.t", [DropColumn(("aa",))])
    with pytest.raises(SchemaChangeError, match="option 'bucket-key' names it"):
        cat.alter_columns("db.t", [UpdateColumnType(("aa",), T.BIGINT)])


def test_a_retyped_column_must_suit_its_index(cat: Catalog) -> None:
    cat.create_table("db.t", T.RowType.of(("a", T.INT)), options={"file-index.bitmap.columns": "a"})
    s = cat.alter_columns("db.t", [UpdateColumnType(("a",), T.BIGINT)])
    assert str(s.row_type.field("a").type) == "BIGINT"
    cat.create_table("db.u", T.RowType.of(("a", T.INT)), options={"file-index.bsi.columns": "a"})
    with pytest.raises(UnsupportedIndexTypeError) as info:
        cat.alter_columns("db.u", [UpdateColumnType(("a",), T.DOUBLE)])
    assert "bsi" in str(info.value)
    assert cat.get_table("db.u").schema.id == 0


def test_widenings_are_exact_ones() -> None:
    ok = [
        (T.TINYINT, T.INT),
        (T.INT, T.BIGINT),
        (T.SMALLINT, T.DOUBLE),
        (T.FLOAT, T.DOUBLE),
        (T.decimal_type(5, 2), T.decimal_type(8, 3)),
        (T.parse_sql_type("VARCHAR(3)"), T.STRING),
    ]
    bad = [
        (T.BIGINT, T.INT),
        (T.BIGINT, T.DOUBLE),  # 2**53 + 1 has no double
        (T.INT, T.FLOAT),
        (T.DOUBLE, T.FLOAT),
        (T.decimal_type(5, 2), T.decimal_type(5, 3)),
        (T.INT, T.STRING),
        (T.STRING, T.parse_sql_type("VARCHAR(3)")),
        (T.DATE, T.TIMESTAMP),
    ]
    assert all(widens(a, b) for a, b in ok), [(a, b) for a, b in ok if not widens(a, b)]
    assert not any(widens(a, b) for a, b in bad), [(a, b) for a, b in bad if widens(a, b)]


def test_a_concurrent_alter_that_took_the_id_is_built_upon(cat: Catalog) -> None:
    cat.create_table("db.t", T.RowType.of(("a", T.INT)))
    path = cat.get_table("db.t").path
    manager = SchemaManager(cat.file_io, path)
    current = manager.read(0)
    # another writer publishes schema-1 between our read and our commit: ours becomes schema-2
    theirs = apply_changes(current, [AddColumn(("b",), T.INT)])
    assert manager.try_commit(theirs)
    assert not manager.try_commit(apply_changes(current, [AddColumn(("c",), T.INT)]))
    s = cat.alter_columns("db.t", [AddColumn(("c",), T.INT)])
    assert (s.id, s.row_type.names, [f.id for f in s.row_type]) == (2, ["a", "b", "c"], [0, 1, 2])


# -- never wrong across schema versions ----------------------------------------------------

OPTIONS = {
    "file-index.bloom-filter.columns": "s",
    "file-index.bitmap.columns": "i",
    "metadata.stats-mode": "full",
}
_STEPS = ["write", "write", "rename", "widen", "drop", "add", "readd"]


def _values(t: T.DataType, n: int) -> st.SearchStrategy[list[Any]]:
    if t.root is T.TypeRoot.STRING:
        one: st.SearchStrategy[Any] = st.sampled_from(["a", "ab", "b", "zz", ""])
    else:
        one = st.integers(-20, 20)
    return st.lists(st.one_of(st.none(), one), min_size=n, max_size=n)


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "25")), deadline=None)
@given(data=st.data())
def test_planner_never_skips_a_match_across_schema_versions(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp: Path = tmp_path_factory.mktemp("evol")
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    table = cat.create_table(
        "db.t", T.RowType.of(("i", T.INT), ("s", T.STRING), ("j", T.SMALLINT)), options=OPTIONS
    )
    by_id: dict[str, dict[int, list[Any]]] = {}  # file -> field id -> values (the oracle)
    counts: dict[str, int] = {}
    for step in range(data.draw(st.integers(2, 7), label="steps")):
        names = table.schema.row_type.names
        action = data.draw(st.sampled_from(_STEPS), label="action")
        if action == "rename":
            old = data.draw(st.sampled_from(names))
            cat.alter_columns("db.t", [RenameColumn((old,), f"{old}{step}")])
        elif action == "widen":
            small = [f.name for f in table.schema.row_type if f.type.root is T.TypeRoot.SMALLINT]
            if small:
                cat.alter_columns("db.t", [UpdateColumnType((small[0],), T.BIGINT)])
        elif action == "drop" and len(names) > 1:
            cat.alter_columns("db.t", [DropColumn((data.draw(st.sampled_from(names)),))])
        elif action in ("add", "readd"):
            gone = {"i", "s", "j"} - set(names)
            name = sorted(gone)[0] if action == "readd" and gone else f"n{step}"
            t = T.INT if name != "s" else T.STRING
            cat.alter_columns("db.t", [AddColumn((name,), t)])
        if action != "write":
            table.refresh()
            continue
        n = data.draw(st.integers(1, 6), label="rows")
        rt = table.schema.row_type
        cols = {f.name: data.draw(_values(f.type, n), label=f.name) for f in rt}
        batch = pa.table({f.name: pa.array(cols[f.name], f.type.to_arrow()) for f in rt})
        spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
        entry = write_data_file(spec, batch, (), f"data-evol-{step}.parquet")
        table.commit([entry])
        by_id[entry.file.file_name] = {f.id: cols[f.name] for f in rt}
        counts[entry.file.file_name] = n
    table.refresh()
    rt = table.schema.row_type
    values = {f.name: [v for rows in by_id.values() for v in rows.get(f.id, [])] for f in rt}
    types = {f.name: f.type for f in rt}
    pred = data.draw(predicates(values, depth=2, types=types), label="predicate")
    plan = ScanPlanner(table).plan(pred)
    assert {d.entry.file.file_name for d in plan.decisions} == set(by_id)
    bound = E.bind(rt, pred)
    for d in plan.decisions:
        name = d.entry.file.file_name
        rows = pa.table(
            {
                f.name: pa.array(by_id[name].get(f.id, [None] * counts[name]), f.type.to_arrow())
                for f in rt
            }
        )
        matches = E.evaluate_arrow(bound, rows).to_pylist()
        assert d.keep or not any(matches), (
            f"skipped {name} (schema {d.entry.file.schema_id}) by {d.reason} but it has "
            f"matching rows for {pred!r} under schema {table.schema.id}"
        )
        file_type = table.schema_by_id(d.entry.file.schema_id).row_type
        if reads_by_name(file_type, rt):  # then a by-name read gives each column by its id
            for f in rt:
                if file_type.has(f.name):
                    g = file_type.field(f.name)
                    assert (g.id, g.type.with_nullable(True)) == (f.id, f.type.with_nullable(True))


def test_a_column_added_later_is_all_null_in_older_files(cat: Catalog) -> None:
    table = cat.create_table("db.t", T.RowType.of(("a", T.INT)))
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    old = write_data_file(
        spec, pa.table({"a": pa.array([1, 2], pa.int32())}), (), "data-old.parquet"
    )
    table.commit([old])
    cat.alter_columns("db.t", [AddColumn(("b",), T.INT)])
    table.refresh()
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    rows = pa.table({"a": pa.array([3], pa.int32()), "b": pa.array([5], pa.int32())})
    table.commit([write_data_file(spec, rows, (), "data-new.parquet")])
    kept = {
        d.entry.file.file_name: d.keep for d in ScanPlanner(table).plan(E.EqualTo("b", 5)).decisions
    }
    assert kept == {"data-old.parquet": False, "data-new.parquet": True}, "old file: b all NULL"
    kept = {
        d.entry.file.file_name: d.keep for d in ScanPlanner(table).plan(E.IsNull("b")).decisions
    }
    assert kept["data-old.parquet"], "IS NULL matches every row of the old file"


def test_set_not_null_as_paimon_with_stats_proving_no_null(cat: Catalog) -> None:
    """Paimon refuses NULL -> NOT NULL unless ``alter-column-null-to-not-null.disabled`` is
    false; lakeskip then also wants every live file's stats to prove the column holds no
    NULL (a file older than the column holds only NULL in it)."""
    table = cat.create_table("db.t", T.RowType.of(("a", T.INT), ("b", T.STRING)))
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    rows = pa.table({"a": pa.array([1, None], pa.int32()), "b": ["x", "y"]})
    table.commit([write_data_file(spec, rows, (), "data-0.parquet")])
    with pytest.raises(
        SchemaChangeError, match=r"^Cannot update column type from nullable to non"
    ) as info:
        cat.alter_columns("db.t", [UpdateColumnNullability(("b",), False)])
    assert "'alter-column-null-to-not-null.disabled' = 'false'" in str(info.value)
    cat.alter_table("db.t", {"alter-column-null-to-not-null.disabled": "false"})
    before = cat.get_table("db.t").schema.id
    with pytest.raises(
        SchemaChangeError,
        match=r"^Cannot update column a of db\.t to NOT NULL: data file data-0\.parquet holds NULL$",
    ):
        cat.alter_columns("db.t", [UpdateColumnNullability(("a",), False)])
    assert cat.get_table("db.t").schema.id == before, "refused: no schema file"
    s = cat.alter_columns(
        "db.t", [RenameColumn(("b",), "c"), UpdateColumnNullability(("c",), False)]
    )
    assert not s.row_type.field("c").type.nullable and s.row_type.field("a").type.nullable
    cat.alter_columns("db.t", [AddColumn(("d",), T.INT)])
    with pytest.raises(SchemaChangeError, match=r"data file data-0\.parquet has no null count"):
        cat.alter_columns("db.t", [UpdateColumnNullability(("d",), False)])
