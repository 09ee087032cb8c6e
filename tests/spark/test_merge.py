"""MERGE INTO on append tables (copy-on-write), and DELETE / UPDATE / MERGE from plain
``spark.sql`` on a user's own session, against an independent Python recomputation."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeskip.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    QueryFailedError,
    TableNotFoundError,
)
from lakeskip.spark.native_query import pruning_reports

Row = tuple[int, int | None]  # (id, v)
Cond = Callable[[Row, Row | None], bool | None]


def _rows(df) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _names(session, name: str = "t") -> set[str]:  # type: ignore[no-untyped-def]
    return {os.path.basename(p) for p in session.table(name).files()}


def _lt(a: int | None, b: int | None) -> bool | None:
    return None if a is None or b is None else a < b


def _gt(a: int | None, b: int) -> bool | None:
    return None if a is None else a > b


@dataclass(frozen=True)
class Clause:
    sql: str  # the whole WHEN ... THEN ... clause
    cond: Cond | None  # over (target row, source row) -> SQL truth value
    action: str  # update | delete | insert
    value: Callable[[Row, Row | None], Row] | None = None


# conditions over t (target) and s (source); NULLs as SQL has them
_MATCHED = [
    Clause(
        "WHEN MATCHED AND s.v > 5 THEN UPDATE SET v = s.v",
        lambda t, s: _gt(s[1], 5) if s else None,
        "update",
        lambda t, s: (t[0], s[1]) if s else t,
    ),
    Clause("WHEN MATCHED AND t.v IS NULL THEN DELETE", lambda t, s: t[1] is None, "delete"),
    Clause(
        "WHEN MATCHED AND t.v < s.v THEN DELETE",
        lambda t, s: _lt(t[1], s[1]) if s else None,
        "delete",
    ),
    Clause(
        "WHEN MATCHED AND s.v IS NULL THEN UPDATE SET v = -1",
        lambda t, s: s is not None and s[1] is None,
        "update",
        lambda t, s: (t[0], -1),
    ),
]
_MATCHED_LAST = [
    Clause("WHEN MATCHED THEN UPDATE SET *", None, "update", lambda t, s: s if s else t),
    Clause("WHEN MATCHED THEN DELETE", None, "delete"),
    Clause(
        "WHEN MATCHED THEN UPDATE SET v = t.v + 100",
        None,
        "update",
        lambda t, s: (t[0], None if t[1] is None else t[1] + 100),
    ),
]
_NOT_MATCHED = [
    Clause(
        "WHEN NOT MATCHED AND s.v > 3 THEN INSERT *",
        lambda t, s: _gt(s[1] if s else None, 3),
        "insert",
        lambda t, s: s,
    ),  # type: ignore[arg-type,return-value]
    Clause(
        "WHEN NOT MATCHED AND s.v IS NULL THEN INSERT (id) VALUES (s.id + 1000)",
        lambda t, s: s is not None and s[1] is None,
        "insert",
        lambda t, s: (s[0] + 1000, None),
    ),  # type: ignore[index]
    Clause(
        "WHEN NOT MATCHED THEN INSERT (v, id) VALUES (7, s.id)",
        None,
        "insert",
        lambda t, s: (s[0], 7),
    ),  # type: ignore[index]
]
_BY_SOURCE = [
    Clause(
        "WHEN NOT MATCHED BY SOURCE AND t.v > 10 THEN DELETE", lambda t, s: _gt(t[1], 10), "delete"
    ),
    Clause(
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 0", None, "update", lambda t, s: (t[0], 0)
    ),
]


def _first(clauses: list[Clause], t: Row, s: Row | None) -> Clause | None:
    for c in clauses:
        if c.cond is None or c.cond(t, s) is True:
            return c
    return None


def _expected(
    target: list[Row],
    source: list[Row],
    matched: list[Clause],
    not_matched: list[Clause],
    by_source: list[Clause],
) -> tuple[list[Row], set[int]] | None:
    """The table after the MERGE and the indexes of the target rows an action applied to;
    ``None``: the statement must fail (a target row matched by two source rows)."""
    out: list[Row] = []
    touched: set[int] = set()
    for i, t in enumerate(target):
        ms = [s for s in source if s[0] == t[0]]
        if len(ms) > 1 and matched:
            return None
        clause = _first(matched, t, ms[0]) if ms else _first(by_source, t, None)
        if clause is None:
            out.append(t)
            continue
        touched.add(i)
        if clause.action == "update":
            assert clause.value is not None
            out.append(clause.value(t, ms[0] if ms else None))
    for s in source:
        if any(t[0] == s[0] for t in target):
            continue
        clause = _first(not_matched, s, s)
        if clause is not None:
            assert clause.value is not None
            out.append(clause.value(s, s))
    return sorted(out, key=repr), touched


_ROW = st.tuples(st.integers(0, 12), st.one_of(st.none(), st.integers(-2, 14)))


@st.composite
def _clauses(draw, pool: list[Clause], last: list[Clause], most: int) -> list[Clause]:  # type: ignore[no-untyped-def]
    chosen = draw(st.lists(st.sampled_from(pool), max_size=most, unique_by=lambda c: c.sql))
    if last and draw(st.booleans()):
        chosen.append(draw(st.sampled_from(last)))
    return chosen


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    chunks=st.lists(st.lists(_ROW, min_size=1, max_size=5), min_size=1, max_size=3),
    source=st.lists(_ROW, max_size=6),
    matched=_clauses(_MATCHED, _MATCHED_LAST, 2),
    not_matched=_clauses(_NOT_MATCHED[:2], _NOT_MATCHED[2:], 1),
    by_source=_clauses(_BY_SOURCE[:1], _BY_SOURCE[1:], 1),
    plain_spark=st.booleans(),
)
def test_merge_matches_a_python_recomputation(  # type: ignore[no-untyped-def]
    session, chunks, source, matched, not_matched, by_source, plain_spark
) -> None:
    clauses = [*matched, *not_matched, *by_source]
    if not clauses:
        clauses = not_matched = [_NOT_MATCHED[2]]
    spark = session.spark
    session.sql("DROP TABLE IF EXISTS t")
    session.sql("CREATE TABLE t (id BIGINT, v INT)")
    target: list[Row] = []
    files: list[int] = []  # target row -> its chunk (one file per chunk)
    for n, chunk in enumerate(chunks):
        values = ", ".join(f"({i}, {'NULL' if v is None else v})" for i, v in chunk)
        session.sql(f"INSERT INTO t SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")
        target += chunk
        files += [n] * len(chunk)
    spark.createDataFrame(source or [], "id BIGINT, v INT").createOrReplaceTempView("src")
    before = _names(session)
    expected = _expected(target, source, matched, not_matched, by_source)
    sql = " ".join(["ON t.id = s.id", *(c.sql for c in clauses)])
    try:
        if plain_spark:
            run = lambda: spark.sql(f"MERGE INTO lakeskip.default.t USING src AS s {sql}")  # noqa: E731
        else:
            run = lambda: session.sql(f"MERGE INTO t USING src AS s {sql}").collect()[0]  # noqa: E731
        if expected is None:
            with pytest.raises(Exception, match="more than one source row"):
                run()
            assert _names(session) == before, "nothing committed"
            return
        result = run()
        rows, touched = expected
        assert _rows(session.sql("SELECT * FROM t")) == rows, sql
        rewritten = {files[i] for i in touched}
        after = _names(session)
        assert len(before - after) == len(rewritten), "only files with acted-on rows"
        if not plain_spark:
            assert result["files_rewritten"] == len(rewritten)
    finally:
        spark.catalog.dropTempView("src")


def test_merge_counts_and_errors(session) -> None:  # type: ignore[no-untyped-def]
    session.sql("CREATE TABLE m (id BIGINT NOT NULL, v STRING, p INT) PARTITIONED BY (p)")
    session.sql("INSERT INTO m SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 'a', 0), (2, 'b', 0)")
    first = _names(session, "m")
    session.sql("INSERT INTO m SELECT /*+ REPARTITION(1) */ * FROM VALUES (3, 'c', 1), (4, 'd', 1)")
    untouched = _names(session, "m") - first  # the p=1 file: no row of it is matched
    session.spark.createDataFrame(
        [(1, "x", 1), (2, None, 0), (9, "n", 1)], "id BIGINT, v STRING, p INT"
    ).createOrReplaceTempView("s")
    try:
        out = session.sql(
            "MERGE INTO m USING s ON m.id = s.id WHEN MATCHED AND s.v IS NULL THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        ).collect()[0]
        assert (out["rows_updated"], out["rows_deleted"], out["rows_inserted"]) == (1, 1, 1)
        assert out["files_rewritten"] == 1  # the p=0 file; 1 moves to p=1 (a new file)
        assert _rows(session.sql("SELECT * FROM m")) == [
            (1, "x", 1),
            (3, "c", 1),
            (4, "d", 1),
            (9, "n", 1),
        ]
        assert len(untouched) == 1 and untouched <= _names(session, "m")
        # a target row matched twice
        session.spark.createDataFrame(
            [(3, "y"), (3, "z")], "id BIGINT, v STRING"
        ).createOrReplaceTempView("s")
        with pytest.raises(InvalidArgumentError, match="more than one source row"):
            session.sql("MERGE INTO m USING s ON m.id = s.id WHEN MATCHED THEN DELETE")
        # ... is fine without WHEN MATCHED (Spark's rule)
        session.sql(
            "MERGE INTO m USING s ON m.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)"
        )
        with pytest.raises(ColumnNotFoundError, match="no column nope"):
            session.sql("MERGE INTO m USING s ON m.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1")
        session.spark.createDataFrame(
            [(3, "y"), (8, "z")], "id BIGINT, v STRING"
        ).createOrReplaceTempView("s")
        with pytest.raises(QueryFailedError, match="NULL in NOT NULL column id"):
            session.sql(
                "MERGE INTO m USING s ON m.id = s.id WHEN NOT MATCHED THEN INSERT (v) VALUES (s.v)"
                " WHEN MATCHED THEN UPDATE SET id = NULL"
            )
        with pytest.raises(InvalidArgumentError, match="deterministic"):
            session.sql(
                "MERGE INTO m USING s ON m.id = s.id AND rand() < 2 WHEN MATCHED THEN DELETE"
            )
        with pytest.raises(TableNotFoundError):
            session.sql("MERGE INTO nope USING s ON nope.id = s.id WHEN MATCHED THEN DELETE")
        assert _rows(session.sql("SELECT * FROM m")) == [
            (1, "x", 1),
            (3, "c", 1),
            (4, "d", 1),
            (9, "n", 1),
        ], "failed statements changed nothing"
        # a lakeskip table as the source (pruned through lakeskip too)
        session.sql("CREATE TABLE src2 (id BIGINT, v STRING, p INT)")
        session.sql("INSERT INTO src2 VALUES (4, 'D', 1)")
        session.sql(
            "MERGE INTO m USING src2 ON m.id = src2.id WHEN MATCHED THEN UPDATE SET v = src2.v"
        )
        assert ("4", "D") in {(str(r[0]), r[1]) for r in session.sql("SELECT * FROM m").collect()}
    finally:
        session.spark.catalog.dropTempView("s")


def test_plain_spark_sql_dml_on_an_attached_session(session) -> None:  # type: ignore[no-untyped-def]
    """The user's own session, catalog attached at run time (no parser extension): DELETE,
    UPDATE and MERGE go through LakeDmlStrategy to the same code; errors are one line."""
    spark = session.spark
    spark.sql(
        "CREATE TABLE lakeskip.default.u (id BIGINT, k STRING) TBLPROPERTIES ("
        "'file-index.bloom-filter.columns' = 'k')"
    )
    spark.sql(
        "INSERT INTO lakeskip.default.u SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 'a'), (2, 'b')"
    )
    spark.sql(
        "INSERT INTO lakeskip.default.u SELECT /*+ REPARTITION(1) */ * FROM VALUES (3, 'c'), (4, 'd')"
    )
    assert _names(session, "u")
    with pruning_reports(spark) as reports:
        assert spark.sql("DELETE FROM lakeskip.default.u WHERE k = 'c'").collect() == []
    assert reports[-1].kept_files == 1, "the DELETE condition pruned by the bloom index"
    spark.sql("UPDATE lakeskip.default.u AS x SET k = upper(x.k) WHERE x.id <= 2")
    spark.sql(
        "MERGE INTO lakeskip.default.u t USING (SELECT 4 AS id, 'z' AS k UNION ALL SELECT 5, 'y') s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET k = s.k WHEN NOT MATCHED THEN INSERT *"
    )
    assert _rows(spark.table("lakeskip.default.u")) == [(1, "A"), (2, "B"), (4, "z"), (5, "y")]
    for bad, words in [
        ("UPDATE lakeskip.default.u SET nope = 1", "nope"),
        ("DELETE FROM lakeskip.default.u WHERE nope = 1", "nope"),
        (
            "MERGE INTO lakeskip.default.u t USING (SELECT 1 AS id) s ON t.id = s.id "
            "WHEN MATCHED AND rand() < 1 THEN DELETE",
            "deterministic",
        ),
    ]:
        with pytest.raises(Exception) as info:
            spark.sql(bad).collect()
        message = str(info.value).strip()
        assert words in message.splitlines()[0], message
    assert _rows(spark.table("lakeskip.default.u")) == [(1, "A"), (2, "B"), (4, "z"), (5, "y")]
    assert spark.sql("SELECT 1").collect()[0][0] == 1, "the session survives"


def test_explain_uses_the_catalog_planning(session) -> None:  # type: ignore[no-untyped-def]
    """EXPLAIN PRUNING, Session.explain and the query itself: one planning (the catalog's),
    so their reports agree."""
    session.sql("CREATE TABLE x (id BIGINT, k STRING) WITH ('file-index.bloom-filter.columns'='k')")
    for f in range(3):
        session.sql(
            f"INSERT INTO x SELECT /*+ REPARTITION(1) */ id, concat('k', id) FROM range({f * 10}, {f * 10 + 10})"
        )
    query = "SELECT * FROM x WHERE id = 25 OR id = 3"
    rows = session.sql(f"EXPLAIN PRUNING {query}").collect()
    metrics = {r["metric"]: r["value"] for r in rows}
    explained = session.explain(query)
    session.sql(query).collect()
    ran = session.last_reports
    assert metrics["files kept"] == "2" and metrics["files total"] == "3"  # stats prune one
    assert len(ran) == 1 and ran[0].kept_files == 2
    assert [(r.kept_files, r.predicate) for r in explained] == [
        (r.kept_files, r.predicate) for r in ran
    ]
    plan = session.sql(f"EXPLAIN {query}").collect()[0][0]
    assert "files kept = 2" in plan and "== Physical Plan ==" in plan, plan
