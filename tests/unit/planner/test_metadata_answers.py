"""Answers from the manifests. Aggregates (lakeskip.planner.aggregate): exact answers, and a
refusal wherever the manifest cannot be exact; the oracle is pyarrow over the files' rows.
LIMIT and ORDER BY ... LIMIT (lakeskip.planner.top_n): the kept files' live rows, sorted,
begin with the same sort-key values as all the table's live rows sorted; the oracle is
Python's own sort of every row, sharing nothing with the stats."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples

from lakeskip import expressions as E
from lakeskip.catalog.format.data_file import make_data_file_meta
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.format.stats import collect_stats, file_column_stats
from lakeskip.planner.aggregate import (
    AggregateCall,
    AggregateFunction,
    MetadataAggregate,
    Refusal,
    aggregate_from_columns,
    aggregate_from_metadata,
)
from lakeskip.planner.columnar_stats import FileStatsColumns, decode_file_stats
from lakeskip.planner.top_n import SortKey, limit_columns, limit_files, rows_all_match
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


@settings(max_examples=unit_examples(60))
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


@settings(max_examples=unit_examples(80))
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


OLD_SCHEMA = TableSchema.create(0, RowType.of(("id", BIGINT), ("p", INT)), ("p",), {}, None)
WIDE_SCHEMA = TableSchema.create(
    1, RowType.of(("id", BIGINT), ("p", INT), ("z", BIGINT)), ("p",), {}, None
)
MIXED_FILES = st.lists(
    st.tuples(
        st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=0, max_size=5),
        st.integers(0, 2),
        st.sampled_from(["full", "full", "counts", "none", "old"]),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=unit_examples(150))
@given(files=MIXED_FILES, which=st.sets(st.integers(0, 6), min_size=1))
def test_columns_answer_as_the_records(
    files: list[tuple[list[int | None], int, str]], which: set[int]
) -> None:
    """aggregate_from_columns (row counts and stats as columns, as a plan decodes them) gives
    aggregate_from_metadata's answer (record by record) wherever it answers: the same
    partitions in the same order, values, file counts and sample files; a refusal only where
    the records refuse. Files of all stats modes, empty files, and files written before a
    column was added (schema 0: no ``z``)."""
    every = [
        AggregateCall(F.COUNT_STAR),
        AggregateCall(F.COUNT, "id"),
        AggregateCall(F.MIN, "id"),
        AggregateCall(F.MAX, "id"),
        AggregateCall(F.COUNT, "z"),
        AggregateCall(F.MIN, "z"),
        AggregateCall(F.MAX, "z"),
    ]
    calls = [every[i] for i in sorted(which)]
    schemas = {0: OLD_SCHEMA, 1: WIDE_SCHEMA}
    entries = []
    for i, (ids, p, mode) in enumerate(files):
        rows = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "p": pa.array([p] * len(ids), pa.int32()),
                "z": pa.array([None if v is None else v * 3 for v in ids], pa.int64()),
            }
        )
        old = mode == "old"
        schema = schemas[0 if old else 1]
        stats, cols = collect_stats(
            rows.select(schema.row_type.names), schema.row_type, "full" if old else mode
        )
        meta = make_data_file_meta(f"f{i}", 10, len(ids), stats, cols, schema.id, None, ())
        entries.append(ManifestEntry(FileKind.ADD, (p,), 0, -1, meta))
    want = aggregate_from_metadata(
        WIDE_SCHEMA, entries, calls, schema_by_id=schemas.__getitem__, deleted_rows=lambda e: 0
    )
    numbered: dict[tuple[Any, ...], int] = {}
    ids = np.asarray([numbered.setdefault(tuple(e.partition), len(numbered)) for e in entries])
    metas = [e.file for e in entries]
    got = aggregate_from_columns(
        WIDE_SCHEMA,
        np.asarray([m.row_count for m in metas], dtype=np.int64),
        lambda: decode_file_stats(
            FileStatsColumns.of_metas(metas), schemas.__getitem__, WIDE_SCHEMA, lambda i: None
        ),
        ids,
        list(numbered),
        calls,
        entry_at=entries.__getitem__,
        schema_by_id=schemas.__getitem__,
    )
    if got is None:  # the columns cannot tell: answered record by record
        assert not all(mode in ("full", "old") for _, _, mode in files) or not files
        return
    if isinstance(got, Refusal):
        assert isinstance(want, Refusal), want
        return
    assert got == want


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


TOP_ROW_TYPE = RowType.of(("k", BIGINT), ("x", DOUBLE), ("p", INT))
TOP_SCHEMA = TableSchema.create(0, TOP_ROW_TYPE, (), {}, None)


def _top_entry(ids: list[int | None], name: str, mode: str = "full") -> ManifestEntry:
    rows = pa.table(
        {
            "k": pa.array(ids, pa.int64()),
            "x": pa.array([None if i is None else i / 2 for i in ids], pa.float64()),
            "p": pa.array([0] * len(ids), pa.int32()),
        }
    )
    stats, cols = collect_stats(rows, TOP_ROW_TYPE, mode)
    meta = make_data_file_meta(name, 10, rows.num_rows, stats, cols, 0, None, ())
    return ManifestEntry(FileKind.ADD, (), 0, -1, meta)


def _sort_values(values: list[int | None], key: SortKey) -> list[int | None]:
    nulls = [v for v in values if v is None]
    rest = sorted((v for v in values if v is not None), reverse=key.descending)
    return nulls + rest if key.nulls_first else rest + nulls  # type: ignore[operator]


TOP_FILES = st.lists(
    st.tuples(
        st.lists(st.one_of(st.none(), st.integers(-20, 20)), min_size=1, max_size=6),
        st.sets(st.integers(0, 5), max_size=2),  # deleted positions
        st.sampled_from(["full", "full", "full", "none"]),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=unit_examples(200))
@given(
    files=TOP_FILES,
    limit=st.integers(0, 20),
    descending=st.booleans(),
    nulls_first=st.booleans(),
)
def test_top_n_keeps_the_files_of_the_first_rows(
    files: list[tuple[list[int | None], set[int], str]],
    limit: int,
    descending: bool,
    nulls_first: bool,
) -> None:
    key = SortKey("k", descending, nulls_first)
    entries, live, deleted = [], [], {}
    for i, (ids, gone, mode) in enumerate(files):
        gone = {g for g in gone if g < len(ids)}
        e = _top_entry(ids, f"f{i}", mode)
        entries.append(e)
        deleted[e.file.file_name] = len(gone)
        live.append([v for j, v in enumerate(ids) if j not in gone])
    kept = limit_files(
        TOP_SCHEMA,
        entries,
        [key],
        limit,
        schema_by_id=lambda _: TOP_SCHEMA,
        deleted_rows=lambda e: deleted[e.file.file_name],
    )
    assert kept is not None
    names = {e.file.file_name for e in kept}
    every = [v for rows in live for v in rows]
    read = [
        v for e, rows in zip(entries, live, strict=True) if e.file.file_name in names for v in rows
    ]
    want = _sort_values(every, key)[:limit]
    assert _sort_values(read, key)[:limit] == want, (files, names)


@settings(max_examples=unit_examples(100))
@given(files=TOP_FILES, limit=st.integers(0, 20))
def test_limit_keeps_enough_rows(
    files: list[tuple[list[int | None], set[int], str]], limit: int
) -> None:
    entries = [_top_entry(ids, f"f{i}") for i, (ids, _, _) in enumerate(files)]
    gone = {f"f{i}": len({g for g in d if g < len(ids)}) for i, (ids, d, _) in enumerate(files)}
    kept = limit_files(
        TOP_SCHEMA,
        entries,
        [],
        limit,
        schema_by_id=lambda _: TOP_SCHEMA,
        deleted_rows=lambda e: gone[e.file.file_name],
    )
    assert kept is not None
    live = lambda e: e.file.row_count - gone[e.file.file_name]  # noqa: E731
    assert sum(map(live, kept)) >= min(limit, sum(map(live, entries)))


@settings(max_examples=unit_examples(200))
@given(
    files=st.lists(
        st.tuples(
            st.lists(st.one_of(st.none(), st.integers(-20, 20)), min_size=0, max_size=6),
            st.sampled_from(["full", "full", "full", "counts", "none"]),
        ),
        min_size=0,
        max_size=8,
    ),
    limit=st.integers(-1, 20),
    order=st.one_of(st.none(), st.tuples(st.booleans(), st.booleans())),
    where=st.one_of(st.none(), st.integers(-25, 25)),
)
# a file not proven to match, before the ones that reach the limit: never kept by LIMIT; its
# NULLs never counted under ORDER BY
@example(files=[([1, 2], "full"), ([10, 11], "full")], limit=1, order=None, where=5)
@example(files=[([None, None, 6], "full"), ([5, 5], "full")], limit=2, order=(False, True), where=0)
def test_columns_limit_as_the_records(
    files: list[tuple[list[int | None], str]],
    limit: int,
    order: tuple[bool, bool] | None,
    where: int | None,
) -> None:
    """limit_columns (row counts and stats as columns, no deleted rows) keeps exactly the
    files limit_files keeps record by record, for LIMIT and ORDER BY k [DESC] NULLS
    FIRST/LAST LIMIT, without a filter and over ``k >= where`` (the files proven to match by
    rows_all_match from the columns: the same files as from each file's stats): files of all
    stats modes, empty and all-NULL files."""
    entries = [_top_entry(ids, f"f{i}", mode) for i, (ids, mode) in enumerate(files)]
    keys = [] if order is None else [SortKey("k", *order)]
    metas = [e.file for e in entries]
    stats = decode_file_stats(
        FileStatsColumns.of_metas(metas),
        lambda _: TOP_SCHEMA,
        TOP_SCHEMA,
        lambda i: file_column_stats(metas[i], TOP_SCHEMA, TOP_SCHEMA),
    )
    matches = None
    if where is not None:
        pred = E.GreaterThanOrEqual("k", where)
        matches = rows_all_match(
            TOP_SCHEMA, entries, pred, time_zone="UTC", schema_by_id=lambda _: TOP_SCHEMA
        )
        by_columns = rows_all_match(
            TOP_SCHEMA,
            entries,
            pred,
            time_zone="UTC",
            schema_by_id=lambda _: TOP_SCHEMA,
            stats=stats,
        )
        assert by_columns == matches
    want = limit_files(
        TOP_SCHEMA,
        entries,
        keys,
        limit,
        schema_by_id=lambda _: TOP_SCHEMA,
        deleted_rows=lambda e: 0,
        matches=matches,
    )
    got = limit_columns(
        TOP_SCHEMA,
        np.asarray([m.row_count for m in metas], dtype=np.int64),
        lambda: stats,
        keys,
        limit,
        None if matches is None else np.asarray(matches, dtype=np.bool_),
    )
    if limit < 0:
        assert got is None and want is None
        return
    assert got is not None and want is not None
    assert [e.file.file_name for e, k in zip(entries, got.tolist(), strict=True) if k] == [
        e.file.file_name for e in want
    ], (files, limit, order, where)


def test_skips_where_the_stats_allow_and_never_elsewhere() -> None:
    files = [_top_entry([1, 2, 3], "a"), _top_entry([7, 8, 9], "b"), _top_entry([5, 9, 6], "c")]
    run: Any = lambda order, limit, **kw: limit_files(  # noqa: E731
        kw.get("schema", TOP_SCHEMA),
        files,
        order,
        limit,
        schema_by_id=lambda _: TOP_SCHEMA,
        deleted_rows=lambda e: 0,
    )
    names = lambda kept: [e.file.file_name for e in kept]  # noqa: E731
    assert names(run([SortKey("k", True, False)], 2)) == ["b", "c"]  # 9, 9 tie: both kept
    assert names(run([SortKey("k", False, True)], 3)) == ["a"]
    # 4 rows: a's 3 and one of c's reach only by c's max 9, under which b's 7 may come
    assert names(run([SortKey("k", False, True)], 4)) == ["a", "b", "c"]
    assert names(run([], 4)) == ["a", "b"]
    # NULLs first: a file with a NULL is among the first rows
    files.append(_top_entry([None, 50], "d"))
    assert names(run([SortKey("k", False, True)], 1)) == ["d"]
    assert names(run([SortKey("k", False, False)], 1)) == ["a"]
    assert run([SortKey("x", False, True)], 1) is None  # DOUBLE: NaN is not in the stats
    pk = TableSchema.create(0, TOP_ROW_TYPE, (), {"bucket": "1"}, None, primary_keys=("k",))
    assert run([SortKey("k", False, True)], 1, schema=pk) is None  # merged versions


# -- a top-N over a filter: only files the filter holds on in every row count -------------

FILTER_ROW_TYPE = RowType.of(("k", BIGINT), ("v", INT), ("p", STRING))
FILTER_SCHEMA = TableSchema.create(0, FILTER_ROW_TYPE, ("p",), {}, None)

_OPS: dict[str, Any] = {
    "<": (E.LessThan, lambda a, b: a < b),
    "<=": (E.LessThanOrEqual, lambda a, b: a <= b),
    ">": (E.GreaterThan, lambda a, b: a > b),
    ">=": (E.GreaterThanOrEqual, lambda a, b: a >= b),
    "=": (E.EqualTo, lambda a, b: a == b),
    "<>": (E.NotEqualTo, lambda a, b: a != b),
}

# (expression, row -> True / False / None): SQL's three-valued logic, written here, not bound
Pred = tuple[Any, Any]


def _leaves() -> st.SearchStrategy[Pred]:
    def compare(col: str, op: str, value: Any) -> Pred:
        make, test = _OPS[op]

        def holds(row: dict[str, Any]) -> bool | None:
            return None if row[col] is None else test(row[col], value)

        return make(col, value), holds

    def null_test(col: str, negate: bool) -> Pred:
        if negate:
            return E.IsNotNull(col), lambda row: row[col] is not None
        return E.IsNull(col), lambda row: row[col] is None

    def member(col: str, values: list[int]) -> Pred:
        return E.In(col, values), lambda row: None if row[col] is None else row[col] in values

    ops = st.sampled_from(sorted(_OPS))
    return st.one_of(
        st.builds(compare, st.sampled_from(["k", "v"]), ops, st.integers(-12, 12)),
        st.builds(compare, st.just("p"), ops, st.sampled_from(["a", "b", "c"])),
        st.builds(null_test, st.sampled_from(["k", "v", "p"]), st.booleans()),
        st.builds(member, st.sampled_from(["k", "v"]), st.lists(st.integers(-5, 5), min_size=1)),
    )


def _combine(children: st.SearchStrategy[Pred]) -> st.SearchStrategy[Pred]:
    def both(a: Pred, b: Pred) -> Pred:
        def holds(row: dict[str, Any]) -> bool | None:
            x, y = a[1](row), b[1](row)
            if x is False or y is False:
                return False
            return None if x is None or y is None else True

        return E.And(a[0], b[0]), holds

    def either(a: Pred, b: Pred) -> Pred:
        def holds(row: dict[str, Any]) -> bool | None:
            x, y = a[1](row), b[1](row)
            if x is True or y is True:
                return True
            return None if x is None or y is None else False

        return E.Or(a[0], b[0]), holds

    def negate(a: Pred) -> Pred:
        def holds(row: dict[str, Any]) -> bool | None:
            x = a[1](row)
            return None if x is None else not x

        return E.Not(a[0]), holds

    return st.one_of(
        st.builds(both, children, children),
        st.builds(either, children, children),
        st.builds(negate, children),
    )


PREDICATES = st.recursive(_leaves(), _combine, max_leaves=4)
FILTER_FILES = st.lists(
    st.tuples(
        st.lists(
            st.tuples(
                st.one_of(st.none(), st.integers(-12, 12)),
                st.one_of(st.none(), st.integers(-12, 12)),
            ),
            min_size=1,
            max_size=6,
        ),
        st.sampled_from(["a", "b", "c", None]),
        st.sets(st.integers(0, 5), max_size=2),  # deleted positions
        st.sampled_from(["full", "full", "full", "counts"]),
    ),
    min_size=1,
    max_size=6,
)


def _filter_entry(
    rows: list[tuple[int | None, int | None]], p: str | None, name: str, mode: str
) -> Any:
    table = pa.table(
        {
            "k": pa.array([r[0] for r in rows], pa.int64()),
            "v": pa.array([r[1] for r in rows], pa.int32()),
            "p": pa.array([p] * len(rows), pa.string()),
        }
    )
    stats, cols = collect_stats(table, FILTER_ROW_TYPE, mode)
    meta = make_data_file_meta(name, 10, table.num_rows, stats, cols, 0, None, ())
    return ManifestEntry(FileKind.ADD, (p,), 0, -1, meta)


@settings(max_examples=unit_examples(300))
@given(
    files=FILTER_FILES,
    pred=PREDICATES,
    limit=st.integers(0, 15),
    descending=st.booleans(),
    nulls_first=st.booleans(),
    plain=st.booleans(),
)
def test_top_n_over_a_filter_keeps_the_first_matching_rows(
    files: list[tuple[list[tuple[int | None, int | None]], str | None, set[int], str]],
    pred: Pred,
    limit: int,
    descending: bool,
    nulls_first: bool,
    plain: bool,
) -> None:
    """The oracle: the rows of every file, filtered by the predicate's own three-valued rule
    (written above, not the bound tree the planner evaluates), sorted by Python. A file the
    planner says matches in every row does; the kept files' matching live rows, sorted, begin
    with the same sort-key values as all matching live rows (for a plain LIMIT: hold enough
    matching rows)."""
    expression, holds = pred
    entries, live_rows = [], []
    for i, (rows, p, gone, mode) in enumerate(files):
        gone = {g for g in gone if g < len(rows)}
        entries.append(_filter_entry(rows, p, f"f{i}", mode))
        live_rows.append(
            [{"k": k, "v": v, "p": p} for j, (k, v) in enumerate(rows) if j not in gone]
        )
    deleted = {
        e.file.file_name: e.file.row_count - len(r) for e, r in zip(entries, live_rows, strict=True)
    }
    matches = rows_all_match(
        FILTER_SCHEMA, entries, expression, time_zone="UTC", schema_by_id=lambda _: FILTER_SCHEMA
    )
    for (rows, p, _, _), m in zip(files, matches, strict=True):
        if m:  # every row written, deleted or not, holds
            assert all(holds({"k": k, "v": v, "p": p}) is True for k, v in rows), (
                expression,
                rows,
                p,
            )
    key = SortKey("k", descending, nulls_first)
    kept = limit_files(
        FILTER_SCHEMA,
        entries,
        [] if plain else [key],
        limit,
        schema_by_id=lambda _: FILTER_SCHEMA,
        deleted_rows=lambda e: deleted[e.file.file_name],
        matches=matches,
    )
    assert kept is not None
    names = {e.file.file_name for e in kept}
    selected = [[r["k"] for r in rows if holds(r) is True] for rows in live_rows]
    every = [k for ks in selected for k in ks]
    read = [
        k for e, ks in zip(entries, selected, strict=True) if e.file.file_name in names for k in ks
    ]
    if plain:
        assert len(read) >= min(limit, len(every)), (expression, names)
    else:
        assert _sort_values(read, key)[:limit] == _sort_values(every, key)[:limit], (
            expression,
            names,
        )


def test_a_filter_proven_on_whole_files_skips_the_others() -> None:
    """``WHERE p = 'a' AND v > 0 ORDER BY k DESC LIMIT 2``: files of partition a with v > 0 in
    every row count; b's file is not counted but kept where it could rank among the first;
    a file whose v may fail the filter counts nothing and is kept only by its best rank."""
    a_low = _filter_entry([(1, 1), (2, 2)], "a", "a_low", "full")
    a_high = _filter_entry([(8, 1), (9, 3)], "a", "a_high", "full")
    mixed = _filter_entry([(7, -1), (6, 5)], "a", "mixed", "full")
    b = _filter_entry([(20, 1)], "b", "b", "full")
    entries = [a_low, a_high, mixed, b]
    pred = E.And(E.EqualTo("p", "a"), E.GreaterThan("v", 0))
    matches = rows_all_match(
        FILTER_SCHEMA, entries, pred, time_zone="UTC", schema_by_id=lambda _: FILTER_SCHEMA
    )
    assert matches == [True, True, False, False]
    kept = limit_files(
        FILTER_SCHEMA,
        entries,
        [SortKey("k", True, False)],
        2,
        schema_by_id=lambda _: FILTER_SCHEMA,
        deleted_rows=lambda e: 0,
        matches=matches,
    )
    assert kept is not None and [e.file.file_name for e in kept] == ["a_high", "b"]
    # nothing proven: nothing counts, every file kept
    none = limit_files(
        FILTER_SCHEMA,
        entries,
        [SortKey("k", True, False)],
        2,
        schema_by_id=lambda _: FILTER_SCHEMA,
        deleted_rows=lambda e: 0,
        matches=[False] * 4,
    )
    assert none == entries


STRING_ROW_TYPE = RowType.of(("s", STRING))
# a file's stats mode is its schema version's: full stats rank it, truncated ones do not
STRING_SCHEMAS = {
    i: TableSchema.create(i, STRING_ROW_TYPE, (), {"metadata.stats-mode": mode}, None)
    for i, mode in enumerate(["full", "truncate(2)", "counts"])
}


@settings(max_examples=unit_examples(200))
@given(
    files=st.lists(
        st.tuples(
            st.lists(
                st.one_of(st.none(), st.text(alphabet="abz\u00e9\U0001f600", max_size=4)),
                min_size=1,
                max_size=6,
            ),
            st.sampled_from([0, 0, 1, 2]),
        ),
        min_size=1,
        max_size=6,
    ),
    limit=st.integers(0, 12),
    descending=st.booleans(),
    nulls_first=st.booleans(),
)
def test_top_n_by_a_string_uses_full_stats_only(
    files: list[tuple[list[str | None], int]], limit: int, descending: bool, nulls_first: bool
) -> None:
    """The oracle: Python's sort of every value by code point (Spark's order of UTF-8 bytes)."""
    entries = []
    for i, (values, sid) in enumerate(files):
        schema = STRING_SCHEMAS[sid]
        mode = schema.options["metadata.stats-mode"]
        stats, cols = collect_stats(
            pa.table({"s": pa.array(values, pa.string())}), STRING_ROW_TYPE, mode
        )
        meta = make_data_file_meta(f"f{i}", 10, len(values), stats, cols, sid, None, ())
        entries.append(ManifestEntry(FileKind.ADD, (), 0, -1, meta))
    key = SortKey("s", descending, nulls_first)
    kept = limit_files(
        STRING_SCHEMAS[0],
        entries,
        [key],
        limit,
        schema_by_id=STRING_SCHEMAS.__getitem__,
        deleted_rows=lambda e: 0,
    )
    assert kept is not None
    names = {e.file.file_name for e in kept}
    every = [v for values, _ in files for v in values]
    read = [v for i, (values, _) in enumerate(files) if f"f{i}" in names for v in values]
    assert _sort_values(read, key)[:limit] == _sort_values(every, key)[:limit], (files, names)


def test_truncated_string_stats_rank_a_file_anywhere() -> None:
    def entry(name: str, values: list[str], sid: int) -> ManifestEntry:
        mode = STRING_SCHEMAS[sid].options["metadata.stats-mode"]
        stats, cols = collect_stats(pa.table({"s": values}), STRING_ROW_TYPE, mode)
        return ManifestEntry(
            FileKind.ADD,
            (),
            0,
            -1,
            make_data_file_meta(name, 1, len(values), stats, cols, sid, None, ()),
        )

    files = [entry("a", ["aaa", "abc"], 0), entry("z", ["zzz", "zzy"], 0), entry("t", ["mmmm"], 1)]
    run = lambda desc: [  # noqa: E731
        e.file.file_name
        for e in limit_files(
            STRING_SCHEMAS[0],
            files,
            [SortKey("s", desc, False)],
            1,
            schema_by_id=STRING_SCHEMAS.__getitem__,
            deleted_rows=lambda e: 0,
        )
        or []
    ]
    assert run(True) == ["z", "t"]  # t's stats are truncated: kept, never counted
    assert run(False) == ["a", "t"]
