"""Aggregates from the manifests: exact answers, and a refusal wherever the manifest cannot
be exact (lakeskip.planner.aggregate). The oracle is pyarrow over the files' rows."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeskip.catalog.format.data_file import make_data_file_meta
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.stats import collect_stats
from lakeskip.planner.aggregate import (
    AggregateCall,
    AggregateFunction,
    MetadataAggregate,
    Refusal,
    aggregate_from_metadata,
)
from lakeskip.types import BIGINT, DOUBLE, INT, STRING, RowType

F = AggregateFunction
ROW_TYPE = RowType.of(("id", BIGINT), ("s", STRING), ("x", DOUBLE), ("p", INT))
SCHEMA = TableSchema.create(0, ROW_TYPE, ("p",), {}, None)


def _entry(
    rows: pa.Table, mode: str = "full", name: str = "f", schema: TableSchema = SCHEMA
) -> Any:
    stats, cols = collect_stats(rows, schema.row_type, mode)
    meta = make_data_file_meta(name, 10, rows.num_rows, stats, cols, schema.id, None, ())
    p = rows.column("p")[0].as_py() if rows.num_rows else None
    return ManifestEntry(FileKind.ADD, (p,), 0, -1, meta)


def _rows(ids: list[int | None], p: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "s": pa.array([None if i is None else f"s{i}" for i in ids], pa.string()),
            "x": pa.array([None if i is None else i / 2 for i in ids], pa.float64()),
            "p": pa.array([p] * len(ids), pa.int32()),
        }
    )


def _run(entries: list[Any], calls: list[AggregateCall], **kw: Any) -> Any:
    return aggregate_from_metadata(
        kw.pop("schema", SCHEMA),
        entries,
        calls,
        schema_by_id=lambda _: kw.get("file_schema", SCHEMA),
        deleted_rows=kw.get("deleted_rows", lambda e: 0),
    )


FILES = st.lists(
    st.tuples(
        st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=1, max_size=6),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60)
@given(files=FILES)
def test_partials_combine_to_the_rows_answer(files: list[tuple[list[int | None], int]]) -> None:
    tables = [_rows(ids, p) for ids, p in files]
    entries = [_entry(t, name=f"f{i}") for i, t in enumerate(tables)]
    calls = [
        AggregateCall(F.COUNT_STAR),
        AggregateCall(F.COUNT, "id"),
        AggregateCall(F.MIN, "id"),
        AggregateCall(F.MAX, "id"),
    ]
    out = _run(entries, calls)
    assert isinstance(out, MetadataAggregate)
    for part in out.partitions:
        rows = pa.concat_tables(
            [t for t, (_, p) in zip(tables, files, strict=True) if p == part.partition[0]]
        )
        ids = rows.column("id")
        assert part.values == (
            rows.num_rows,
            rows.num_rows - ids.null_count,
            pc.min(ids).as_py(),
            pc.max(ids).as_py(),
        )
    assert {p.partition[0] for p in out.partitions} == {p for _, p in files}


DELETED_FILES = st.lists(
    st.tuples(
        st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=1, max_size=6),
        st.integers(0, 1),
        st.sets(st.integers(0, 5), max_size=3),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=80)
@given(files=DELETED_FILES)
def test_deleted_rows_answer_right_or_refuse(
    files: list[tuple[list[int | None], int, set[int]]],
) -> None:
    """Files with deletion vectors: the stats (of all rows written) bound the live rows. Every
    answer equals pyarrow's over the live rows; refused only where a file with deleted rows
    could hold the min / max, or holds some NULLs under a count(c)."""
    entries, live, deleted = [], [], {}
    for i, (ids, p, gone) in enumerate(files):
        gone = {g for g in gone if g < len(ids)}
        e = _entry(_rows(ids, p), name=f"f{i}")
        entries.append(e)
        deleted[e.file.file_name] = len(gone)
        live.append(_rows([v for j, v in enumerate(ids) if j not in gone], p))
    calls = [
        AggregateCall(F.COUNT_STAR),
        AggregateCall(F.COUNT, "id"),
        AggregateCall(F.MIN, "id"),
        AggregateCall(F.MAX, "id"),
    ]
    for picked in ([calls[0]], [calls[1]], calls[2:], calls):
        out = _run(entries, picked, deleted_rows=lambda e: deleted[e.file.file_name])
        if isinstance(out, Refusal):
            assert any(deleted.values()) and picked != [calls[0]], out
            continue
        for part in out.partitions:
            rows = pa.concat_tables(
                [t for t, (_, p, _) in zip(live, files, strict=True) if p == part.partition[0]]
            )
            ids = rows.column("id")
            want = {
                F.COUNT_STAR: rows.num_rows,
                F.COUNT: rows.num_rows - ids.null_count,
                F.MIN: pc.min(ids).as_py(),
                F.MAX: pc.max(ids).as_py(),
            }
            assert part.values == tuple(want[c.function] for c in picked), (picked, files)


def test_deleted_rows_answered_where_the_bounds_allow() -> None:
    whole = _entry(_rows([3, 9], 0), name="whole")
    dv = _entry(_rows([4, 8, None], 0), name="dv")  # one row deleted; its stats: 4..8
    deleted = {"whole": 0, "dv": 1}
    calls = [AggregateCall(F.MIN, "id"), AggregateCall(F.MAX, "id")]
    out = _run([whole, dv], calls, deleted_rows=lambda e: deleted[e.file.file_name])
    assert isinstance(out, MetadataAggregate) and out.partitions[0].values == (3, 9)
    low = _entry(_rows([1, 8], 0), name="dv")  # 1 may be the deleted row, or the min
    out = _run([whole, low], calls[:1], deleted_rows=lambda e: deleted[e.file.file_name])
    assert isinstance(out, Refusal)
    no_nulls = _entry(_rows([4, 8], 0), name="dv")  # count(id) = live rows: none is NULL
    out = _run([no_nulls], [AggregateCall(F.COUNT, "id")], deleted_rows=lambda e: 1)
    assert isinstance(out, MetadataAggregate) and out.partitions[0].values == (1,)
    out = _run([dv], [AggregateCall(F.COUNT, "id")], deleted_rows=lambda e: 1)
    assert isinstance(out, Refusal)  # the deleted row may be the NULL


def test_refusals() -> None:
    e = _entry(_rows([1, 2, None], 0))
    count_star = [AggregateCall(F.COUNT_STAR)]
    for call in (AggregateCall(F.MIN, "s"), AggregateCall(F.MAX, "x")):  # truncation, NaN
        assert isinstance(_run([e], [call]), Refusal)
    # deleted rows: count(*) subtracts them, anything reading stats refuses
    out = _run([e], count_star, deleted_rows=lambda _: 2)
    assert isinstance(out, MetadataAggregate) and out.partitions[0].values == (1,)
    assert isinstance(_run([e], [AggregateCall(F.MAX, "id")], deleted_rows=lambda _: 1), Refusal)
    # no min/max kept (counts mode): refused, unless the column is all NULL there
    counts_only = _entry(_rows([1, None], 0), mode="counts")
    assert isinstance(_run([counts_only], [AggregateCall(F.MIN, "id")]), Refusal)
    assert isinstance(_run([counts_only], [AggregateCall(F.COUNT, "id")]), MetadataAggregate)
    all_null = _entry(_rows([None, None], 0), mode="counts")
    out = _run([all_null], [AggregateCall(F.MIN, "id")])
    assert isinstance(out, MetadataAggregate) and out.partitions[0].values == (None,)
    no_stats = _entry(_rows([1], 0), mode="none")
    assert isinstance(_run([no_stats], [AggregateCall(F.COUNT, "id")]), Refusal)
    assert isinstance(_run([no_stats], count_star), MetadataAggregate)
    # a primary-key table read by merge: rows are versions
    assert isinstance(_run([e], count_star, schema=_pk_schema(merge=True)), Refusal)
    assert isinstance(_run([e], count_star, schema=_pk_schema(merge=False)), MetadataAggregate)


def _pk_schema(*, merge: bool) -> TableSchema:
    options = {"bucket": "1"} if merge else {"bucket": "1", "deletion-vectors.enabled": "true"}
    return TableSchema.create(0, ROW_TYPE, (), options, None, primary_keys=("id",))


def test_a_column_added_later_is_null_in_older_files() -> None:
    old_schema = TableSchema.create(0, RowType.of(("id", BIGINT), ("p", INT)), ("p",), {}, None)
    rows = pa.table({"id": pa.array([4, 5], pa.int64()), "p": pa.array([0, 0], pa.int32())})
    e = _entry(rows, schema=old_schema)
    new_schema = TableSchema.create(
        1, RowType.of(("id", BIGINT), ("p", INT), ("z", BIGINT)), ("p",), {}, None
    )
    new_schema = _with_ids(new_schema, old_schema)
    out = _run(
        [e],
        [AggregateCall(F.COUNT, "z"), AggregateCall(F.MAX, "z"), AggregateCall(F.MAX, "id")],
        schema=new_schema,
        file_schema=old_schema,
    )
    assert isinstance(out, MetadataAggregate) and out.partitions[0].values == (0, None, 5)


def _with_ids(new: TableSchema, old: TableSchema) -> TableSchema:
    """``new`` keeps ``old``'s field ids for the columns they share (an ALTER ADD COLUMN)."""
    ids = {f.name: f.id for f in old.row_type}
    assert all(new.row_type.field(n).id == i for n, i in ids.items()), "ids as an ALTER keeps"
    return new
