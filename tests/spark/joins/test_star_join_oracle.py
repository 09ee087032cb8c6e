"""Never a wrong answer through a join (issue 38): random star joins, lakeskip with runtime
filtering against plain Spark over Parquet that Spark itself wrote from the same rows.

Each example draws fact rows (keys in a small range, duplicates, NULL keys), cuts them in key
order into several files (one INSERT each: a fact table clustered by its join key), draws a
dimension (duplicate and NULL keys, possibly empty, a key type that may differ from the
fact's) and a filter on it, and runs one of the join shapes of ``SHAPES`` (inner joins, IN and
EXISTS subqueries, and the anti joins NOT EXISTS and NOT IN, which must skip no fact file). The oracle shares nothing with
the path under test: the same rows written by ``DataFrame.write.parquet`` and read by Spark
without lakeskip. Beyond equal answers, the fact scan's files read are checked against the
files computed here from the rows: when Spark hands the scan its runtime filter (the fact key
is the join's type, so Spark's ``translateRuntimeFilterV2`` passes it, or a lossless widening
cast of it, which ``LakeJoinKeys`` pairs with an uncast conjunct), lakeskip reads exactly the
files whose key range holds a selected dimension key -- fewer than all when the filter is
selective.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from tests.examples import spark_examples
from tests.spark.read.scan_metrics import scan_metrics

import lakeskip

#: (fact key type, dimension key type, whether the fact scan gets a runtime filter on k)
KEY_TYPES = [
    ("BIGINT", "BIGINT", True),
    ("BIGINT", "INT", True),
    ("INT", "SMALLINT", True),
    # CAST(f.k AS BIGINT) = d.k: Spark passes no runtime filter on a cast column; lakeskip's
    # LakeJoinKeys adds f.k = TRY_CAST(d.k AS INT) (implied: the cast is lossless)
    ("INT", "BIGINT", True),
    ("BIGINT", "DECIMAL(12,0)", True),  # both sides cast to DECIMAL(20,0)
    ("INT", "DOUBLE", True),
    ("BIGINT", "DOUBLE", False),  # lossy (two longs can share a double): no runtime filter
]
TAGS = ["a", "b", "c", "d"]
KEYS = st.one_of(st.none(), st.integers(0, 40))

# the dimension broadcast, as a star join's is (at these sizes Spark might otherwise pick
# either side; only a broadcast dimension lets it plan dynamic pruning on the fact)
SHAPES = {
    "inner": (
        "SELECT /*+ BROADCAST(d) */ d.tag, count(*), sum(f.v), min(f.k), max(f.k) FROM {f} f JOIN {d} d "
        "ON f.k = d.k WHERE {where} GROUP BY d.tag"
    ),
    "rows": (
        "SELECT /*+ BROADCAST(d) */ f.k, f.v, d.tag FROM {f} f JOIN {d} d ON f.k = d.k "
        "WHERE {where}"
    ),
    # a predicate subquery is still an expression when LakeJoinKeys runs (Spark makes it a
    # LeftSemi join later): a cast fact key gets its uncast conjunct in the subquery's condition
    "semi": "SELECT f.k, f.v FROM {f} f WHERE f.k IN (SELECT d.k FROM {d} d WHERE {where})",
    "exists": (
        "SELECT f.k, f.v FROM {f} f WHERE EXISTS (SELECT 1 FROM {d} d WHERE d.k = f.k AND {where})"
    ),
    # anti joins: every fact row without a match is kept, so no fact file may be skipped
    "anti": (
        "SELECT f.k, f.v FROM {f} f "
        "WHERE NOT EXISTS (SELECT 1 FROM {d} d WHERE d.k = f.k AND {where})"
    ),
    "not_in": "SELECT f.k, f.v FROM {f} f WHERE f.k NOT IN (SELECT d.k FROM {d} d WHERE {where})",
    # the dimension on the left, in two files by key, and a (likely selective, to Spark)
    # predicate on the fact: Spark's PartitionPruning would prune the dimension first
    "dim_first": (
        "SELECT /*+ BROADCAST(d) */ f.k, f.v, d.tag FROM {d} d JOIN {f} f ON d.k = f.k "
        "WHERE {where} AND f.v > -6"
    ),
}

_names = itertools.count()


@st.composite
def star(draw: st.DrawFn) -> dict[str, Any]:
    rows = draw(st.lists(st.tuples(KEYS, st.integers(-5, 5)), min_size=2, max_size=60))
    # key order (NULL keys first): each file one range of keys, 2 to 5 files
    ordered = sorted(rows, key=lambda r: -1 if r[0] is None else r[0])
    cuts = sorted(
        draw(st.lists(st.integers(1, len(ordered) - 1), min_size=1, max_size=4, unique=True))
    )
    chunks = [ordered[a:b] for a, b in itertools.pairwise([0, *cuts, len(ordered)])]
    dim = draw(
        st.lists(st.tuples(KEYS, st.sampled_from(TAGS)), max_size=25)
    )  # empty dimension included
    tags = draw(st.lists(st.sampled_from(TAGS), min_size=1, max_size=3, unique=True))
    negate = draw(st.booleans())
    fact_type, dim_type, uncast = draw(st.sampled_from(KEY_TYPES))
    return {
        "chunks": chunks,
        "dim": dim,
        "tags": tags,
        "negate": negate,
        "fact_type": fact_type,
        "dim_type": dim_type,
        "uncast": uncast,
        "shape": draw(st.sampled_from(sorted(SHAPES))),
    }


@pytest.fixture(scope="module")
def warehouse(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("star")
    s = lakeskip.connect(str(root / "wh"), spark=spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakeskip.star")
    return s, root


def _values(rows: list[tuple[Any, ...]]) -> str:
    return ", ".join(
        "(" + ", ".join("NULL" if v is None else repr(v) for v in r) + ")" for r in rows
    )


def _typed(rows: list[tuple[Any, Any]], key_type: str) -> list[tuple[Any, Any]]:
    """Rows with their key as Python's value of ``key_type`` (``createDataFrame`` checks)."""
    to: Any = {"DOUBLE": float}.get(key_type, Decimal if key_type.startswith("DECIMAL") else int)
    return [(None if k is None else to(k), x) for k, x in rows]


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=3, fuzz=12),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@example(  # runtime filter on k: 1 of 3 files holds the selected keys (10, 11)
    case={
        "chunks": [[(1, 1), (2, 2), (2, 5)], [(10, 1), (11, 1), (11, -2)], [(None, 4), (20, 3)]],
        "dim": [(10, "a"), (None, "a"), (11, "a"), (20, "b"), (10, "a")],
        "tags": ["a"],
        "negate": False,
        "fact_type": "BIGINT",
        "dim_type": "INT",
        "uncast": True,
        "shape": "inner",
    }
)
@example(  # an INT fact key joined to a BIGINT dimension key: filtered through the cast
    case={
        "chunks": [[(1, 1), (2, 2), (2, 5)], [(10, 1), (11, 1), (11, -2)], [(None, 4), (20, 3)]],
        "dim": [(10, "a"), (None, "a"), (11, "a"), (20, "b"), (10, "a")],
        "tags": ["a"],
        "negate": False,
        "fact_type": "INT",
        "dim_type": "BIGINT",
        "uncast": True,
        "shape": "rows",
    }
)
@example(  # the same through a semi join, selecting the first and last files' keys
    case={
        "chunks": [[(1, 1), (2, 2)], [(10, 1), (11, 1)], [(20, 3), (21, 0)]],
        "dim": [(2, "b"), (21, "c"), (10, "a")],
        "tags": ["a"],
        "negate": True,
        "fact_type": "INT",
        "dim_type": "SMALLINT",
        "uncast": True,
        "shape": "semi",
    }
)
@example(  # an INT fact key IN a BIGINT subquery (the gap hypothesis found: kept 2 of 2)
    case={
        "chunks": [[(1, 1), (2, 2)], [(10, 1), (11, 1)], [(20, 3), (21, 0)]],
        "dim": [(2, "b"), (21, "c"), (10, "a"), (None, "a")],
        "tags": ["a"],
        "negate": False,
        "fact_type": "INT",
        "dim_type": "BIGINT",
        "uncast": True,
        "shape": "semi",
    }
)
@example(  # the same through a correlated EXISTS, on a DECIMAL dimension key
    case={
        "chunks": [[(1, 1), (2, 2)], [(10, 1), (11, 1)], [(20, 3), (21, 0)]],
        "dim": [(2, "b"), (21, "c"), (10, "a")],
        "tags": ["a"],
        "negate": False,
        "fact_type": "BIGINT",
        "dim_type": "DECIMAL(12,0)",
        "uncast": True,
        "shape": "exists",
    }
)
@example(  # NOT IN a selective subquery holding a NULL key: no row, and no file skipped early
    case={
        "chunks": [[(1, 1), (2, 2)], [(10, 1), (11, 1)], [(None, 3), (21, 0)]],
        "dim": [(None, "a"), (10, "a"), (21, "b")],
        "tags": ["a"],
        "negate": False,
        "fact_type": "INT",
        "dim_type": "BIGINT",
        "uncast": True,
        "shape": "not_in",
    }
)
@example(  # NOT EXISTS: the files without a selected key are the ones the answer needs
    case={
        "chunks": [[(1, 1), (2, 2)], [(10, 1), (11, 1)], [(None, 3), (21, 0)]],
        "dim": [(10, "a"), (11, "a")],
        "tags": ["a"],
        "negate": False,
        "fact_type": "INT",
        "dim_type": "BIGINT",
        "uncast": True,
        "shape": "anti",
    }
)
@given(case=star())
def test_star_join_equals_plain_spark_and_reads_only_matching_files(
    spark: SparkSession, warehouse: Any, case: dict[str, Any]
) -> None:
    session, root = warehouse
    n = next(_names)
    fact, dim = f"lakeskip.star.f{n}", f"lakeskip.star.d{n}"
    spark.sql(f"CREATE TABLE {fact} (k {case['fact_type']}, v INT)")
    for chunk in case["chunks"]:  # one file per chunk: the fact table clustered by k
        spark.sql(
            f"INSERT INTO {fact} SELECT /*+ COALESCE(1) */ CAST(k AS {case['fact_type']}), "
            f"CAST(v AS INT) FROM VALUES {_values(chunk)} AS x(k, v)"
        )
    spark.sql(f"CREATE TABLE {dim} (k {case['dim_type']}, tag STRING)")
    dim_rows = sorted(case["dim"], key=lambda r: -1 if r[0] is None else r[0])
    half = len(dim_rows) // 2 if case["shape"] == "dim_first" else 0
    for part in (dim_rows[:half], dim_rows[half:]):  # dim_first: two files by key
        if part:
            spark.sql(
                f"INSERT INTO {dim} SELECT /*+ COALESCE(1) */ CAST(k AS {case['dim_type']}), "
                f"CAST(tag AS STRING) FROM VALUES {_values(part)} AS x(k, tag)"
            )
    assert len(session.table(f"star.f{n}").files()) == len(case["chunks"])
    # the oracle: the same rows written by Spark, read without lakeskip
    rows = [r for c in case["chunks"] for r in c]
    of, od = root / f"of{n}", root / f"od{n}"
    for path, data, schema in (
        (of, _typed(rows, case["fact_type"]), f"k {case['fact_type']}, v INT"),
        (od, _typed(case["dim"], case["dim_type"]), f"k {case['dim_type']}, tag STRING"),
    ):
        spark.createDataFrame(data, schema).write.parquet(str(path))
        spark.read.schema(schema).parquet(str(path)).createOrReplaceTempView(path.name)

    tags = ", ".join(repr(t) for t in case["tags"])
    where = f"d.tag {'NOT ' if case['negate'] else ''}IN ({tags})"
    text = SHAPES[case["shape"]]
    df = spark.sql(text.format(f=fact, d=dim, where=where))
    got = sorted(map(tuple, df.collect()), key=repr)
    want = sorted(
        map(tuple, spark.sql(text.format(f=f"of{n}", d=f"od{n}", where=where)).collect()),
        key=repr,
    )
    assert got == want, f"{case}: lakeskip {got} vs plain Spark {want}"

    # files: those whose key range holds a selected dimension key (NULL keys never join)
    selected = {
        k for k, tag in case["dim"] if k is not None and (tag in case["tags"]) != case["negate"]
    }
    ranges = [
        (min(ks), max(ks))
        for ks in ([k for k, _ in c if k is not None] for c in case["chunks"])
        if ks
    ]
    matching = sum(1 for lo, hi in ranges if any(lo <= k <= hi for k in selected))
    needed = sum(1 for c in case["chunks"] if any(k in selected for k, _ in c))
    disjoint = any(a[1] < b[0] for a in ranges for b in ranges)
    m = scan_metrics(df, fact)
    anti = case["shape"] in ("anti", "not_in")
    if m is None:  # Spark dropped the fact scan (one side of the join empty)
        # an anti join drops it only where no row can survive (a NULL in NOT IN's subquery)
        assert (not want) if anti else needed == 0, case
        return
    kept = m["lakeskipFilesKept"]
    assert m["lakeskipFilesTotal"] == len(case["chunks"])
    assert kept >= needed  # never fewer than the files holding a joined row
    if anti:
        # the fact rows without a match are the answer: a runtime filter from the subquery
        # must not reach the fact scan, and no file is skipped
        assert kept == len(case["chunks"]), (case, m)
    elif case["shape"] == "dim_first":
        # whether the fact or the dimension gets the runtime filter depends on the
        # dimension's files and sizes (test_runtime_filter_spark.py checks the files)
        assert kept <= len(case["chunks"]), (case, m)
    elif case["uncast"] and disjoint:
        # Spark planned a runtime filter on k (uncast, or through LakeJoinKeys' uncast
        # conjunct, in a join or a predicate subquery) and lakeskip applied it: only the files
        # whose range holds a selected key are read
        assert kept == matching, (case, m, matching)
    else:
        # no runtime filter (a lossy cast, or no two files apart: nothing declared): the files
        # with a non-NULL key, and those with none unless Spark pushed IS NOT NULL (not
        # inferred for every join shape)
        assert len(ranges) <= kept <= len(case["chunks"]), (case, m)
