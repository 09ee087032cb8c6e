"""MERGE INTO on append tables (copy-on-write), and DELETE / UPDATE / MERGE from plain
``spark.sql`` on a user's own session, against an independent Python recomputation."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.examples import spark_examples

from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    QueryFailedError,
    TableNotFoundError,
)
from lakeskip.spark.front.native_query import pruning_reports

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


@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=3, fuzz=20),
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


# -- primary-key and deletion-vector tables -------------------------------------------------

_KIND_DDL = {
    "pk": "CREATE TABLE t (id BIGINT, v INT, PRIMARY KEY (id) NOT ENFORCED)",
    "dv": "CREATE TABLE t (id BIGINT, v INT) WITH ('deletion-vectors' = 'true')",
    "pkdv": (
        "CREATE TABLE t (id BIGINT, v INT, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('deletion-vectors' = 'true')"
    ),
}


def _expected_pk(
    target: list[Row],
    source: list[Row],
    matched: list[Clause],
    not_matched: list[Clause],
    by_source: list[Clause],
) -> list[Row] | str:
    """The primary-key table after the MERGE (one row per key: an inserted key replaces the
    existing row), or the error the statement must fail with."""
    rows = {t[0]: t for t in target}
    written: list[Row | None] = []  # None: the key is deleted
    keys: list[int] = []
    for t in target:
        ms = [s for s in source if s[0] == t[0]]
        if len(ms) > 1 and matched:
            return "more than one source row"
        clause = _first(matched, t, ms[0]) if ms else _first(by_source, t, None)
        if clause is None:
            continue
        keys.append(t[0])
        if clause.action == "update":
            assert clause.value is not None
            new = clause.value(t, ms[0] if ms else None)
            assert new[0] == t[0]  # the clauses above never change the key
            written.append(new)
        else:
            written.append(None)
    for s in source:
        if s[0] in rows:
            continue
        clause = _first(not_matched, s, s)
        if clause is not None:
            assert clause.value is not None
            new = clause.value(s, s)
            keys.append(new[0])
            written.append(new)
    if len(set(keys)) < len(keys):
        return "same primary key"
    for key, new in zip(keys, written, strict=True):
        if new is None:
            rows.pop(key, None)
        else:
            rows[key] = new
    return sorted(rows.values(), key=repr)


_NEAR_ROW = st.tuples(st.integers(0, 6), st.one_of(st.none(), st.integers(-2, 14)))


@pytest.mark.parametrize("kind", ["pk", "dv", "pkdv"])
@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=4, fuzz=24),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(  # few keys: versions of one key in several files, sources hitting them
    chunks=st.lists(st.lists(_NEAR_ROW, min_size=1, max_size=5), min_size=1, max_size=3),
    source=st.lists(_NEAR_ROW, max_size=6),
    matched=_clauses(_MATCHED, _MATCHED_LAST, 2),
    not_matched=_clauses(_NOT_MATCHED[:2], _NOT_MATCHED[2:], 1),
    by_source=_clauses(_BY_SOURCE[:1], _BY_SOURCE[1:], 1),
    plain_spark=st.booleans(),
)
def test_merge_on_primary_key_and_dv_tables_matches_a_python_model(  # type: ignore[no-untyped-def]
    session, kind, chunks, source, matched, not_matched, by_source, plain_spark
) -> None:
    """Keys repeat across INSERTs (upserts on the primary-key table), and a DELETE before the
    MERGE leaves older versions (primary key) or DVs (deletion vectors) the MERGE must not
    see as live rows."""
    clauses = [*matched, *not_matched, *by_source]
    if not clauses:
        clauses = not_matched = [_NOT_MATCHED[2]]
    spark = session.spark
    session.sql("DROP TABLE IF EXISTS t")
    session.sql(_KIND_DDL[kind])
    target: list[Row] = []
    for chunk in chunks:
        if kind in (
            "pk",
            "pkdv",
        ):  # one version per key per INSERT (which of two would win is open)
            chunk = list({r[0]: r for r in chunk}.values())
        values = ", ".join(f"({i}, {'NULL' if v is None else v})" for i, v in chunk)
        session.sql(f"INSERT INTO t SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")
        if kind in ("pk", "pkdv"):
            keys = {r[0] for r in chunk}
            target = [r for r in target if r[0] not in keys] + chunk
        else:
            target += chunk
    session.sql("DELETE FROM t WHERE v = 0")
    target = [r for r in target if r[1] != 0]
    spark.createDataFrame(source or [], "id BIGINT, v INT").createOrReplaceTempView("src")
    if kind in ("pk", "pkdv"):
        expected: list[Row] | str = _expected_pk(target, source, matched, not_matched, by_source)
    else:
        model = _expected(target, source, matched, not_matched, by_source)
        expected = "more than one source row" if model is None else model[0]
    before = _rows(session.sql("SELECT * FROM t"))
    snapshot = session.catalog.get_table("default.t").latest_snapshot()
    sql = " ".join(["ON t.id = s.id", *(c.sql for c in clauses)])
    try:
        if plain_spark:
            run = lambda: spark.sql(f"MERGE INTO lakeskip.default.t USING src AS s {sql}")  # noqa: E731
        else:
            run = lambda: session.sql(f"MERGE INTO t USING src AS s {sql}").collect()[0]  # noqa: E731
        if isinstance(expected, str):
            with pytest.raises(Exception, match=expected):
                run()
            table = session.catalog.get_table("default.t")
            assert table.latest_snapshot() == snapshot, "nothing committed"
            assert _rows(session.sql("SELECT * FROM t")) == before
            return
        result = run()
        assert _rows(session.sql("SELECT * FROM t")) == expected, sql
        assert _rows(spark.table("lakeskip.default.t")) == expected, sql
        if not plain_spark and kind in ("pk", "dv"):
            # primary key: versions are appended; deletion vectors: rows are marked
            assert result["files_rewritten"] == 0, "nothing rewritten"
        if not plain_spark and kind == "pk":
            assert result["files_marked"] == 0
    finally:
        spark.catalog.dropTempView("src")


def test_merge_on_a_partitioned_primary_key_table(session) -> None:  # type: ignore[no-untyped-def]
    """Counts, +U/-D/+I versions in one APPEND snapshot, an inserted existing key upserts,
    and the errors (one line, table untouched)."""
    session.sql(
        "CREATE TABLE k (id BIGINT, dt STRING, v STRING, PRIMARY KEY (dt, id) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '2')"
    )
    session.sql("INSERT INTO k VALUES (1, 'a', 'x'), (2, 'a', 'y'), (3, 'b', 'z')")
    session.sql("INSERT INTO k VALUES (2, 'a', 'y2')")  # key (a, 2) twice: latest wins
    table = session.catalog.get_table("default.k")
    files = {e.file.file_name for e in table.scan_files()}
    session.spark.createDataFrame(
        [(1, "a", None, 1), (2, "a", "Y", 5), (3, "b", "Z", 5), (4, "b", "n", 0)],
        "id BIGINT, dt STRING, v STRING, w INT",
    ).createOrReplaceTempView("s")
    try:
        out = session.sql(
            "MERGE INTO k USING s ON k.id = s.id AND k.dt = s.dt "
            "WHEN MATCHED AND s.v IS NULL THEN DELETE "
            "WHEN MATCHED AND k.v = 'y2' THEN UPDATE SET v = concat(k.v, s.v) "
            "WHEN NOT MATCHED THEN INSERT (id, dt, v) VALUES (s.id, s.dt, s.v)"
        ).collect()[0]
        assert (out["rows_updated"], out["rows_deleted"], out["rows_inserted"]) == (1, 1, 1)
        assert out["files_rewritten"] == 0
        want = [(2, "a", "y2Y"), (3, "b", "z"), (4, "b", "n")]
        assert _rows(session.sql("SELECT * FROM k")) == want
        table.refresh()
        snap = table.latest_snapshot()
        assert snap is not None and snap.commit_kind is CommitKind.APPEND
        assert files <= {e.file.file_name for e in table.scan_files()}, "nothing rewritten"
        # an inserted row whose key exists (the ON condition did not match it) replaces it
        session.sql(
            "MERGE INTO k USING s ON k.id = s.id AND k.dt = s.dt AND s.w = 0 "
            "WHEN NOT MATCHED AND s.id = 3 THEN INSERT *"
        )
        want = [(2, "a", "y2Y"), (3, "b", "Z"), (4, "b", "n")]
        assert _rows(session.sql("SELECT * FROM k")) == want
        for bad, words in [
            (
                "MERGE INTO k USING s ON k.id = s.id AND k.dt = s.dt "
                "WHEN MATCHED THEN UPDATE SET id = s.id + 10",
                "changes the primary key",
            ),
            (
                "MERGE INTO k USING s ON k.id = s.id AND k.dt = s.dt "
                "WHEN MATCHED THEN UPDATE SET dt = 'c'",
                "changes the primary key",
            ),
            (
                "MERGE INTO k USING (SELECT 9 AS id, 'a' AS dt, 'p' AS v UNION ALL "
                "SELECT 9, 'a', 'q') s ON k.id = s.id WHEN NOT MATCHED THEN INSERT *",
                "same primary key",
            ),
            (
                "MERGE INTO k USING s ON k.dt = s.dt WHEN MATCHED THEN DELETE",
                "more than one source row",
            ),
            (
                "MERGE INTO k USING s ON k.id = s.id AND k.dt = s.dt "
                "WHEN NOT MATCHED THEN INSERT (v) VALUES (s.v)",
                "NULL in NOT NULL column",
            ),
        ]:
            with pytest.raises(Exception) as info:
                session.sql(bad)
            first = str(info.value).strip().splitlines()[0]
            assert words in first, first
        assert _rows(session.sql("SELECT * FROM k")) == want, "failed statements changed nothing"
        # UPDATE SET * with the key in the ON condition keeps the key: allowed, as in Paimon
        session.sql(
            "MERGE INTO k USING (SELECT id, dt, upper(v) AS v FROM s) s "
            "ON k.id = s.id AND k.dt = s.dt WHEN MATCHED THEN UPDATE SET *"
        )
        assert _rows(session.sql("SELECT * FROM k")) == [
            (2, "a", "Y"),
            (3, "b", "Z"),
            (4, "b", "N"),
        ]
    finally:
        session.spark.catalog.dropTempView("s")


def test_merge_on_a_dv_table_marks_positions(session) -> None:  # type: ignore[no-untyped-def]
    """Matched rows get DV marks (no data file rewritten), updated and inserted rows are
    appended, all in one snapshot."""
    session.sql("CREATE TABLE d (id BIGINT, v STRING) WITH ('deletion-vectors' = 'true')")
    session.sql(
        "INSERT INTO d SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 'a'), (2, 'b'), (3, 'c')"
    )
    table = session.catalog.get_table("default.d")
    files = {e.file.file_name for e in table.scan_files()}
    out = session.sql(
        "MERGE INTO d USING (SELECT 1 AS id, 'A' AS v UNION ALL SELECT 2, NULL UNION ALL "
        "SELECT 7, 'g') s ON d.id = s.id WHEN MATCHED AND s.v IS NULL THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    ).collect()[0]
    assert (out["rows_updated"], out["rows_deleted"], out["rows_inserted"]) == (1, 1, 1)
    assert _rows(session.sql("SELECT * FROM d")) == [(1, "A"), (3, "c"), (7, "g")]
    table.refresh()
    assert files <= {e.file.file_name for e in table.scan_files()}, "the old file stays"
    dvs = table.deletion_files(table.latest_snapshot())
    assert set(dvs) == files, "the old file has a DV"
    assert table.latest_snapshot().id == 2, "one snapshot"
