"""pyiceberg-style "should skip" / "should read" cases for the three pruning tiers.

The never-wrong tests only check that no matching file is skipped: a planner that keeps
every file passes them. These cases pin that each tier *does* prune what it can (and reads
what it must), each with the reason in its assertion message. They fail when pruning is
turned off (stats evaluator answering "might match", index evaluator never skipping, or the
planner keeping every file).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.rolling_writer import write_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.index.file_index import FileIndexFile, build_file_index
from lakeskip.index.options import parse_file_index_options
from lakeskip.planner.index_evaluator import evaluate_file_index
from lakeskip.planner.report import SkipTier
from lakeskip.planner.scan import ScanPlanner
from lakeskip.planner.stats import ColumnStats, FileStats
from lakeskip.planner.stats_evaluator import StatsEvaluator

# -- tier 1: stats ---------------------------------------------------------------------------

STATS_SCHEMA = T.RowType.of(
    ("id", T.BIGINT),
    ("s", T.STRING),
    ("all_nulls", T.STRING),
    ("some_nulls", T.STRING),
    ("no_stats", T.INT),
    ("f", T.DOUBLE),
    ("same", T.INT),
    ("pre", T.STRING),
    ("m", T.map_of(T.STRING, T.STRING)),
)
FILE = FileStats(
    50,
    {
        "id": ColumnStats(30, 79, 0),
        "s": ColumnStats("aa", "dC", 0),
        "all_nulls": ColumnStats(None, None, 50),
        "some_nulls": ColumnStats("bbb", "eee", 10),
        "f": ColumnStats(1.0, 2.0, 0),
        "same": ColumnStats(5, 5, 0),
        "pre": ColumnStats("abc1", "abc9", 0),
    },
)
MK = E.Reference("m", key="k")

SHOULD_SKIP_BY_STATS = [
    (E.LessThan("id", 30), "min(id)=30 is not < 30"),
    (E.LessThanOrEqual("id", 29), "min(id)=30 > 29"),
    (E.GreaterThan("id", 79), "max(id)=79 is not > 79"),
    (E.GreaterThanOrEqual("id", 80), "max(id)=79 < 80"),
    (E.EqualTo("id", 29), "29 < min(id)=30"),
    (E.EqualTo("id", 80), "80 > max(id)=79"),
    (E.In("id", [1, 2, 100]), "every IN value outside [30, 79]"),
    (E.IsNull("id"), "null_count(id)=0"),
    (E.EqualTo("all_nulls", "a"), "every all_nulls is null: = is never true"),
    (E.IsNotNull("all_nulls"), "every all_nulls is null"),
    (E.LessThan("all_nulls", "a"), "every all_nulls is null: < is never true"),
    (E.EqualTo("s", "a"), "'a' < min(s)='aa'"),
    (E.EqualTo("s", "dD"), "'dD' > max(s)='dC'"),
    (E.StartsWith("s", "e"), "max(s)='dC' starts below 'e'"),
    (E.StartsWith("s", "a0"), "min(s)='aa' starts above 'a0'"),
    (E.NotStartsWith("pre", "abc"), "min and max of pre start with 'abc', so every value does"),
    (E.NotEqualTo("same", 5), "every same is 5"),
    (E.NotIn("same", [5, 6]), "every same is 5, which is in the list"),
    (E.LessThan("f", 1.0), "min(f)=1.0 and NaN is never < a number"),
    (E.And(E.GreaterThan("id", 79), E.EqualTo("s", "b")), "AND with a side that cannot match"),
    (E.Or(E.GreaterThan("id", 79), E.LessThan("id", 30)), "neither OR side can match"),
    (E.Not(E.GreaterThanOrEqual("id", 30)), "NOT (id >= 30) is id < 30"),
]

SHOULD_READ_BY_STATS = [
    (E.LessThan("id", 31), "min(id)=30 < 31"),
    (E.GreaterThan("id", 78), "max(id)=79 > 78"),
    (E.EqualTo("id", 30), "= min"),
    (E.EqualTo("id", 79), "= max"),
    (E.EqualTo("id", 50), "inside [30, 79]"),
    (E.In("id", [1, 30]), "30 is in range"),
    (E.IsNotNull("id"), "id has values"),
    (E.NotEqualTo("id", 30), "other values exist"),
    (E.NotIn("id", [30, 31]), "other values exist"),
    (E.IsNull("some_nulls"), "null_count(some_nulls)=10"),
    (E.EqualTo("some_nulls", "ccc"), "inside ['bbb', 'eee']"),
    (E.EqualTo("no_stats", 5), "no stats for no_stats"),
    (E.EqualTo(MK, "x"), "no stats for map values"),
    (E.GreaterThan("f", 2.0), "NaN rows are above every number and hide from max(f)"),
    (E.NotEqualTo("f", 1.5), "float <> never prunes (NaN)"),
    (E.StartsWith("s", "b"), "'b...' lies between 'aa' and 'dC'"),
    (E.StartsWith("s", "dC"), "max(s)='dC' itself"),
    (E.Or(E.GreaterThan("id", 79), E.EqualTo("s", "b")), "one OR side might match"),
    (E.AlwaysTrue(), "no predicate"),
]


@pytest.mark.parametrize(("expr", "reason"), SHOULD_SKIP_BY_STATS, ids=repr)
def test_stats_should_skip(expr: E.BooleanExpression, reason: str) -> None:
    ev = StatsEvaluator(E.bind(STATS_SCHEMA, expr))
    assert ev.evaluate(FILE) is False, f"should skip {expr!r}: {reason}"


@pytest.mark.parametrize(("expr", "reason"), SHOULD_READ_BY_STATS, ids=repr)
def test_stats_should_read(expr: E.BooleanExpression, reason: str) -> None:
    ev = StatsEvaluator(E.bind(STATS_SCHEMA, expr))
    assert ev.evaluate(FILE) is True, f"should read {expr!r}: {reason}"


# -- tiers 3/4: file indexes -----------------------------------------------------------------

INDEX_SCHEMA = T.RowType.of(("k", T.STRING), ("id", T.BIGINT), ("s", T.STRING), ("v", T.INT))
INDEX_ROWS = pa.table(
    {
        "k": pa.array(["a", "a", "b", "b", "c", "c", None, "a"], pa.string()),
        "id": pa.array([30, 31, 32, 33, 34, 35, 36, 79], pa.int64()),
        "s": pa.array([f"u{i}" for i in range(8)], pa.string()),
        "v": pa.array([1, 2, 3, 4, 5, 6, 7, None], pa.int32()),
    }
)
INDEX_OPTIONS = {
    "file-index.bitmap.columns": "k",
    "file-index.bsi.columns": "id",
    "file-index.bloom-filter.columns": "s",
    "file-index.bloom-filter.s.items": "100",
    "file-index.bloom-filter.s.fpp": "0.0001",
    "file-index.range-bitmap.columns": "v",
    "file-index.in-manifest-threshold": "0",
}


@pytest.fixture(scope="module")
def index_file() -> FileIndexFile:
    opts = parse_file_index_options(INDEX_OPTIONS, INDEX_SCHEMA)
    built = build_file_index(INDEX_ROWS, INDEX_SCHEMA, opts)
    assert built.external is not None
    return FileIndexFile.from_bytes(built.external, INDEX_SCHEMA)


SHOULD_SKIP_BY_INDEX = [
    (E.EqualTo("k", "z"), "bitmap", "no k = 'z'"),
    (E.In("k", ["y", "z"]), "bitmap", "neither listed k value is present"),
    (E.EqualTo("id", 50), "bsi", "id 50 not among 30..36, 79"),
    (E.GreaterThan("id", 79), "bsi", "max(id)=79"),
    (E.LessThan("id", 30), "bsi", "min(id)=30"),
    (E.EqualTo("s", "nope"), "bloom-filter", "'nope' not added to the bloom filter"),
    (E.EqualTo("v", 100), "range-bitmap", "v has no 100"),
    (E.GreaterThan("v", 7), "range-bitmap", "max(v)=7"),
    (
        E.And(E.EqualTo("k", "a"), E.EqualTo("id", 32)),
        None,
        "rows of k='a' {0,1,7} and id=32 {2} are disjoint",
    ),
    (E.Or(E.EqualTo("k", "z"), E.EqualTo("id", 50)), "bitmap", "neither OR side has rows"),
]

SHOULD_READ_BY_INDEX = [
    (E.EqualTo("k", "a"), {0, 1, 7}),
    (E.In("k", ["b", "z"]), {2, 3}),
    (E.IsNull("k"), {6}),
    (E.NotEqualTo("k", "a"), {2, 3, 4, 5}),
    (E.GreaterThanOrEqual("id", 79), {7}),
    (E.And(E.GreaterThanOrEqual("id", 31), E.LessThanOrEqual("id", 32)), {1, 2}),
    (E.GreaterThan("v", 6), {6}),
    (E.IsNull("v"), {7}),
    (E.And(E.EqualTo("k", "a"), E.EqualTo("id", 31)), {1}),
    (E.EqualTo("s", "u3"), None),  # a bloom filter keeps the file, without row positions
    (E.Or(E.EqualTo("k", "z"), E.EqualTo("s", "u3")), None),
]


@pytest.mark.parametrize(("expr", "index_type", "reason"), SHOULD_SKIP_BY_INDEX, ids=repr)
def test_index_should_skip(
    index_file: FileIndexFile, expr: E.BooleanExpression, index_type: str | None, reason: str
) -> None:
    verdict = evaluate_file_index(E.bind(INDEX_SCHEMA, expr), index_file)
    assert verdict.skip, f"should skip {expr!r} by {index_type or 'indexes'}: {reason}"
    # None: no single index excluded the file, only the AND of their row sets (which index
    # the report then names is the report's business)
    if index_type is not None:
        assert verdict.index_type == index_type, f"{expr!r}: decided by {verdict.index_type}"


@pytest.mark.parametrize(("expr", "rows"), SHOULD_READ_BY_INDEX, ids=repr)
def test_index_should_read(
    index_file: FileIndexFile, expr: E.BooleanExpression, rows: set[int] | None
) -> None:
    bound = E.bind(INDEX_SCHEMA, expr)
    verdict = evaluate_file_index(bound, index_file)
    matching = {i for i, m in enumerate(E.evaluate_arrow(bound, INDEX_ROWS).to_pylist()) if m}
    assert not verdict.skip, f"should read {expr!r}: rows {sorted(matching)} match"
    got = None if verdict.rows is None else set(verdict.rows)
    assert got == rows, f"{expr!r}: exact indexes narrow to rows {rows}, got {got}"
    assert got is None or matching <= got, f"{expr!r}: lost matching rows {matching - got}"


# -- the scan planner: every tier on real files ----------------------------------------------

PLAN_SCHEMA = T.RowType.of(("p", T.STRING), ("id", T.BIGINT), ("k", T.STRING), ("s", T.STRING))
PLAN_OPTIONS = {
    "file-index.bitmap.columns": "k",
    "file-index.bloom-filter.columns": "s",
    "file-index.bloom-filter.s.items": "100",
    "file-index.bloom-filter.s.fpp": "0.0001",
    "metadata.stats-mode": "full",
}
# file: (partition, first id, k values (cycled), external .index file?)
PLAN_FILES = [
    ("x", 0, ["a", "c"], False),
    ("x", 10, ["b", "d"], True),
    ("y", 20, ["a", "d"], False),
    ("y", 30, ["e"], True),
]


@pytest.fixture(scope="module")
def planned_table(tmp_path_factory: pytest.TempPathFactory) -> FileStoreTable:
    tmp: Path = tmp_path_factory.mktemp("cases")
    cat = Catalog(str(tmp / "wh"))
    cat.create_database("db")
    entries = []
    table = None
    for i, (p, first, ks, external) in enumerate(PLAN_FILES):
        threshold = "0 b" if external else "1 mb"
        opts = {**PLAN_OPTIONS, "file-index.in-manifest-threshold": threshold}
        if table is None:
            table = cat.create_table("db.t", PLAN_SCHEMA, partition_keys=["p"], options=opts)
        spec = WriteSpec(table.file_io, table.path, table.schema)
        ids = list(range(first, first + 10))
        rows = pa.table(
            {
                "p": [p] * 10,
                "id": ids,
                "k": [ks[j % len(ks)] for j in range(10)],
                "s": [f"s{j}" for j in ids],
            }
        )
        index_options = parse_file_index_options(opts, PLAN_SCHEMA)
        entries.append(write_data_file(spec, rows, (p,), f"data-{i}.parquet", index_options))
    assert table is not None
    table.commit(entries)
    return table


SHOULD_PLAN = [
    (E.EqualTo("p", "y"), {2, 3}, "partition p = 'y'"),
    (E.EqualTo("id", 15), {1}, "stats: only file 1 spans 10..19"),
    (E.LessThan("id", 10), {0}, "stats: only file 0 has ids below 10"),
    (E.GreaterThanOrEqual("id", 25), {2, 3}, "stats: files 2 and 3 reach 25"),
    (E.EqualTo("k", "c"), {0}, "stats keep k ranges [a,c], [b,d], [a,d]; bitmaps drop 1, 2"),
    (E.EqualTo("k", "b"), {1}, "stats drop [e,e], bitmaps drop [a,c], [a,d]"),
    (E.And(E.EqualTo("k", "d"), E.GreaterThan("id", 15)), {1, 2}, "k = 'd' in 1, 2; ids > 15"),
    (E.EqualTo("s", "s12"), {1}, "stats drop s20.., s30..; bloom drops file 0"),
    (E.And(E.EqualTo("p", "x"), E.EqualTo("k", "d")), {1}, "partition then bitmap"),
    (E.EqualTo("id", 100), set(), "no file reaches 100"),
    (E.IsNull("k"), set(), "no nulls in k"),
    (E.EqualTo("id", 1.5), set(), "a BIGINT never equals 1.5: the predicate is false"),
    (E.Or(E.EqualTo("id", 5), E.EqualTo("k", "e")), {0, 3}, "each OR side keeps one file"),
]


@pytest.mark.parametrize(("expr", "kept", "reason"), SHOULD_PLAN, ids=repr)
def test_planner_keeps_exactly(
    planned_table: FileStoreTable, expr: E.BooleanExpression, kept: set[int], reason: str
) -> None:
    plan = ScanPlanner(planned_table).plan(expr)
    got = {
        int(d.entry.file.file_name.split("-")[1].split(".")[0]) for d in plan.decisions if d.keep
    }
    assert got == kept, f"{expr!r}: should keep files {sorted(kept)} ({reason}), kept {sorted(got)}"


def test_planner_names_the_tier(planned_table: FileStoreTable) -> None:
    plan = ScanPlanner(planned_table).plan(E.EqualTo("k", "c"))
    tiers = {d.entry.file.file_name: d.tier for d in plan.decisions if not d.keep}
    assert tiers == {
        "data-1.parquet": SkipTier.INDEX_FILE,
        "data-2.parquet": SkipTier.EMBEDDED_INDEX,
        "data-3.parquet": SkipTier.STATS,
    }, f"k = 'c': file 1 has an .index file, file 2 an embedded index, file 3 k=[e,e]: {tiers}"
    by_partition = ScanPlanner(planned_table).plan(E.EqualTo("p", "y"))
    # partition x's files are left out of the manifest's read, undecided, counted as skipped
    assert by_partition.report.skipped_by_partition == 2, "p = 'y' skips partition x"
    assert {d.entry.partition for d in by_partition.decisions} == {("y",)}
    assert by_partition.report.total_files == 4
    assert (
        by_partition.report.total_bytes == ScanPlanner(planned_table).plan(None).report.total_bytes
    )
    false = ScanPlanner(planned_table).plan(E.EqualTo("id", 1.5))
    assert {d.tier for d in false.decisions} == {SkipTier.PREDICATE}, "always-false predicate"


def test_planner_without_indexes_reads_what_only_indexes_exclude(
    planned_table: FileStoreTable,
) -> None:
    plan = ScanPlanner(planned_table).plan(E.EqualTo("k", "c"), use_indexes=False)
    got = sorted(d.entry.file.file_name for d in plan.decisions if d.keep)
    assert got == ["data-0.parquet", "data-1.parquet", "data-2.parquet"], (
        f"use_indexes=False: stats alone cannot drop files 1, 2 for k = 'c': {got}"
    )


def test_planner_opens_no_index_for_a_predicate_on_unindexed_columns(
    planned_table: FileStoreTable,
) -> None:
    # `id` has no index (only k: bitmap, s: bloom-filter): files 1 and 3 keep theirs in
    # .index files, which a plan on `id` alone has no reason to fetch
    unindexed = ScanPlanner(planned_table).plan(E.GreaterThanOrEqual("id", 5)).report
    assert (unindexed.index_files_read, unindexed.index_bytes_read) == (0, 0), (
        f"id >= 5 tests no indexed column, yet {unindexed.index_files_read} index files "
        f"({unindexed.index_bytes_read} bytes) were read"
    )
    assert unindexed.kept_files == 4
    indexed = ScanPlanner(planned_table).plan(E.Or(E.EqualTo("k", "b"), E.EqualTo("id", 5))).report
    assert indexed.index_files_read >= 1, "k is indexed: its .index files are read"


def test_planner_opens_no_index_that_cannot_answer_the_leaves(
    planned_table: FileStoreTable,
) -> None:
    """``s`` has a bloom filter, which answers ``=`` and ``IN`` only: a range or IS NOT
    NULL on ``s`` leaves every file REMAIN, so no index file is fetched (issue 39: no cost
    when nothing can be skipped); ``=`` on it is evaluated as before."""
    planner = ScanPlanner(planned_table)
    for expr in (
        E.GreaterThan("s", "a"),
        E.IsNotNull("s"),
        E.And(E.IsNotNull("s"), E.LessThan("id", 99)),
    ):
        r = planner.plan(expr).report
        assert (r.index_files_read, r.index_bytes_read) == (0, 0), (expr, r.index_files_read)
    assert planner.plan(E.EqualTo("s", "s12")).report.index_bytes_read > 0
