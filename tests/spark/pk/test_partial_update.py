"""``merge-engine = partial-update`` through Spark: every merge path (the catalog's
``LakePkScan``, the temp-view merge, compaction, the writer's in-write merge) against rows
recomputed here in Python, and the DELETE / UPDATE rules Paimon imposes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import spark_examples

from lakeskip.errors import InvalidOptionError, UnsupportedStatementError

PU = "'merge-engine' = 'partial-update'"


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _all_paths(session: Any, table: str, where: str = "") -> list[list[tuple[Any, ...]]]:
    """The same query through Session.sql, spark.sql on the catalog and the temp-view merge."""
    from lakeskip.spark.read.query import table_view

    name = f"{session.catalog_name}.default.{table}"
    t = session.catalog.get_table(f"default.{table}")
    view = table_view(session.spark, t, t.scan_files())
    view.createOrReplaceTempView("pu_view")
    try:
        cond = f" WHERE {where}" if where else ""
        return [
            _rows(session.sql(f"SELECT * FROM {table}{cond}")),
            _rows(session.spark.sql(f"SELECT * FROM {name}{cond}")),
            _rows(session.spark.sql(f"SELECT * FROM pu_view{cond}")),
        ]
    finally:
        session.spark.catalog.dropTempView("pu_view")


def test_partial_update_takes_each_columns_newest_non_null_value(session: Any) -> None:
    session.sql(
        "CREATE TABLE t (id INT, dt STRING, a STRING, b STRING, n INT, "
        "PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) "
        f"WITH ({PU}, 'bucket' = '2', 'file-index.bloom-filter.columns' = 'b')"
    )
    session.sql("INSERT INTO t VALUES (1, 'x', 'a1', NULL, NULL), (2, 'x', NULL, 'b2', 2)")
    # duplicate keys in one INSERT merge too (Paimon's write buffer)
    session.sql(
        "INSERT INTO t VALUES (1, 'x', NULL, 'b1', NULL), (1, 'x', NULL, NULL, 10), "
        "(3, 'y', 'a3', NULL, NULL)"
    )
    session.sql("INSERT INTO t VALUES (2, 'x', 'a2', NULL, NULL), (1, 'x', NULL, NULL, 11)")
    want = [
        (1, "x", "a1", "b1", 11),
        (2, "x", "a2", "b2", 2),
        (3, "y", "a3", None, None),
    ]
    for got in _all_paths(session, "t"):
        assert got == want
    # a = 'a1' and b = 'b1' come from different files: the row still matches
    for got in _all_paths(session, "t", "a = 'a1' AND b = 'b1'"):
        assert got == [want[0]]
    for got in _all_paths(session, "t", "b IS NULL"):
        assert got == [want[2]]
    for got in _all_paths(session, "t", "n = 10"):
        assert got == []
    session.sql("CALL sys.compact(table => 't')")
    entries = session.catalog.get_table("default.t").scan_files()
    assert {e.file.level for e in entries} == {5}
    for got in _all_paths(session, "t"):
        assert got == want
    # UPDATE writes the changed row; later partial inserts still fill in
    session.sql("UPDATE t SET n = n + 100 WHERE a = 'a1' OR id = 3")
    session.sql("INSERT INTO t VALUES (3, 'y', NULL, 'b3', NULL)")
    want = [(1, "x", "a1", "b1", 111), (2, "x", "a2", "b2", 2), (3, "y", "a3", "b3", None)]
    for got in _all_paths(session, "t"):
        assert got == want
    with pytest.raises(UnsupportedStatementError, match="cannot set a column to NULL"):
        session.sql("UPDATE t SET b = NULL WHERE id = 1")
    with pytest.raises(UnsupportedStatementError, match="remove-record-on-delete"):
        session.sql("DELETE FROM t WHERE id = 1")
    with pytest.raises(UnsupportedStatementError, match="deduplicate only, not partial-update"):
        session.sql("MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert _all_paths(session, "t")[0] == want
    text = session.sql("SHOW CREATE TABLE t").collect()[0][0]
    assert "'merge-engine' = 'partial-update'" in text
    name = f"{session.catalog_name}.default.t"
    props = {r[0]: r[1] for r in session.spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    assert props["merge-engine"] == "partial-update"
    described = session.spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    assert any("partial-update" in str(r[1]) for r in described)


def test_partial_update_delete_options(session: Any) -> None:
    session.sql(
        "CREATE TABLE r (id INT PRIMARY KEY NOT ENFORCED, a STRING, n INT) "
        f"WITH ({PU}, 'partial-update.remove-record-on-delete' = 'true')"
    )
    session.sql("INSERT INTO r VALUES (1, 'a', 1), (2, 'b', 2)")
    session.sql("DELETE FROM r WHERE n = 1")
    for got in _all_paths(session, "r"):
        assert got == [(2, "b", 2)]
    # Paimon resets the row to the delete record's values: a later partial insert of the
    # key fills in from them (until a full compaction drops the deleted key)
    session.sql("INSERT INTO r VALUES (1, NULL, 5)")
    for got in _all_paths(session, "r"):
        assert got == [(1, "a", 5), (2, "b", 2)]
    session.sql("DELETE FROM r WHERE id = 1")
    session.sql("CALL sys.compact(table => 'r')")
    session.sql("INSERT INTO r VALUES (1, NULL, 6)")
    for got in _all_paths(session, "r"):
        assert got == [(1, None, 6), (2, "b", 2)]

    session.sql(
        f"CREATE TABLE i (id INT PRIMARY KEY NOT ENFORCED, a STRING) WITH ({PU}, 'ignore-delete' = 'true')"
    )
    session.sql("INSERT INTO i VALUES (1, 'a')")
    with pytest.raises(UnsupportedStatementError, match="ignores delete records"):
        session.sql("DELETE FROM i WHERE id = 1")
    with pytest.raises(InvalidOptionError, match="cannot be changed by ALTER TABLE"):
        session.sql("ALTER TABLE i SET TBLPROPERTIES ('ignore-delete' = 'false')")


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ("'merge-engine' = 'first-row', 'deletion-vectors' = 'true'", "first-row' yet"),
        ("'merge-engine' = 'aggregation', 'fields.v.aggregate-function' = 'count'", "'count'"),
        (f"{PU}, 'fields.v.sequence-group' = 'nope'", "no column 'nope'"),
        (f"{PU}, 'fields.v.aggregate-function' = 'sum'", "aggregation functions"),
        (f"{PU}, 'fields.default-aggregate-function' = 'sum'", "aggregation functions"),
        (f"{PU}, 'sequence.field' = 'nope'", "no column 'nope'"),
        ("'ignore-delete' = 'true'", "partial-update' only"),
        (f"{PU}, 'ignore-delete' = 'maybe'", "expected true or false"),
    ],
)
def test_merge_option_errors(session: Any, options: str, match: str) -> None:
    with pytest.raises(InvalidOptionError, match=match):
        session.sql(
            f"CREATE TABLE e (id INT PRIMARY KEY NOT ENFORCED, v INT, w INT) WITH ({options})"
        )
    assert not session.catalog.table_exists("default.e")


def test_partial_update_needs_a_primary_key(session: Any) -> None:
    with pytest.raises(InvalidOptionError, match="needs a primary key"):
        session.sql(f"CREATE TABLE e (id INT, v INT) WITH ({PU})")


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["insert", "insert", "insert", "delete", "update", "compact"]),
        st.lists(st.integers(0, 7), min_size=1, max_size=5),
        st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=5, max_size=5),
    ),
    min_size=1,
    max_size=6,
)


@pytest.mark.fuzz
@settings(max_examples=spark_examples(test=2, fuzz=12), deadline=None)
@given(ops=_OPS, lo=st.integers(-4, 4), key=st.integers(0, 7))
def test_spark_partial_update_equals_the_model(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, ops: Any, lo: int, key: int
) -> None:
    """Random partial inserts (NULLs, duplicate keys), deletes, updates and compactions through
    SQL on a ``remove-record-on-delete`` table; every read equals the rows recomputed here."""
    import lakeskip

    s = lakeskip.connect(str(tmp_path_factory.mktemp("puh") / "wh"), spark=spark)
    s.sql(
        "CREATE TABLE t (k INT, p STRING, n INT, m INT, PRIMARY KEY (k, p) NOT ENFORCED) "
        f"PARTITIONED BY (p) WITH ({PU}, 'partial-update.remove-record-on-delete' = 'true', "
        "'bucket' = '2', 'file-index.bloom-filter.columns' = 'n')"
    )
    # key -> (alive, [n, m]); a deleted key keeps its delete record's values until compaction
    model: dict[tuple[int, str], tuple[bool, list[int | None]]] = {}

    def lit(v: int | None) -> str:
        return "CAST(NULL AS INT)" if v is None else str(v)

    for op, keys, vals in ops:
        if op == "insert":
            rows = [(k, f"p{k % 2}", vals[j % 5], vals[(j + 2) % 5]) for j, k in enumerate(keys)]
            s.sql(
                "INSERT INTO t VALUES "
                + ", ".join(f"({k}, '{p}', {lit(n)}, {lit(m)})" for k, p, n, m in rows)
            )
            for k, p, n, m in rows:
                old = model.get((k, p), (False, [None, None]))[1]
                model[(k, p)] = (
                    True,
                    [n if n is not None else old[0], m if m is not None else old[1]],
                )
        elif op == "delete":
            c = vals[0] if vals[0] is not None else 0
            s.sql(f"DELETE FROM t WHERE n < {c} OR k = {keys[0]}")
            for kp, (alive, v) in list(model.items()):
                if alive and ((v[0] is not None and v[0] < c) or kp[0] == keys[0]):
                    model[kp] = (False, v)
        elif op == "update":
            s.sql(f"UPDATE t SET m = coalesce(m, 0) + 10 WHERE k >= {keys[0]}")
            for kp, (alive, v) in list(model.items()):
                if alive and kp[0] >= keys[0]:
                    model[kp] = (True, [v[0], (v[1] or 0) + 10])
        else:
            s.sql("CALL sys.compact(table => 't')")
            model = {kp: st_ for kp, st_ in model.items() if st_[0]}
    all_rows = sorted(
        ((k, p, v[0], v[1]) for (k, p), (alive, v) in model.items() if alive), key=repr
    )
    name = f"{s.catalog_name}.default.t"
    for where, keep in (
        ("", lambda r: True),
        (f"n >= {lo}", lambda r: r[2] is not None and r[2] >= lo),
        (f"k = {key}", lambda r: r[0] == key),
        (f"n = {lo} AND m IS NULL", lambda r: r[2] == lo and r[3] is None),
        (f"p = 'p1' OR m < {lo}", lambda r: r[1] == "p1" or (r[3] is not None and r[3] < lo)),
    ):
        cond = f" WHERE {where}" if where else ""
        got = _rows(spark.sql(f"SELECT k, p, n, m FROM {name}{cond}"))
        assert got == [r for r in all_rows if keep(r)], where
        assert _rows(s.sql(f"SELECT k, p, n, m FROM t{cond}")) == got, where
