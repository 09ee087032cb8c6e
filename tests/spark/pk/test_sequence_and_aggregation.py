"""``sequence.field`` and ``merge-engine = aggregation`` end to end through Spark SQL: writes
(duplicate keys within one INSERT merge as Paimon's write buffer does), reads by
``Session.sql`` (temp-view merge) and by the Spark catalog (``LakePkScan``), compaction, DML,
``SHOW CREATE TABLE``. The rules themselves are in ``tests/cases/pk_merge_cases.json``."""

from __future__ import annotations

from typing import Any

import pytest

from lakeskip.errors import InvalidOptionError, UnsupportedStatementError


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _both(session: Any, table: str, where: str = "") -> list[list[tuple[Any, ...]]]:
    cond = f" WHERE {where}" if where else ""
    name = f"{session.catalog_name}.default.{table}"
    return [
        _rows(session.sql(f"SELECT * FROM {table}{cond}")),
        _rows(session.spark.sql(f"SELECT * FROM {name}{cond}")),
    ]


def test_sequence_field_orders_versions_in_writes_reads_compaction_and_dml(session: Any) -> None:
    session.sql(
        "CREATE TABLE s (id INT, dt STRING, ts BIGINT, v STRING, "
        "PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) "
        "WITH ('sequence.field' = 'ts', 'bucket' = '2')"
    )
    # within one write: the largest ts wins, not the last row
    session.sql("INSERT INTO s VALUES (1, 'a', 10, 'new'), (1, 'a', 5, 'old'), (2, 'a', 1, 'x')")
    # across writes: a late row with an older ts loses
    session.sql("INSERT INTO s VALUES (1, 'a', 7, 'late'), (2, 'a', 2, 'y'), (3, 'b', NULL, 'n')")
    session.sql("INSERT INTO s VALUES (3, 'b', NULL, 'm')")  # NULL ties: the newer write wins
    want = [(1, "a", 10, "new"), (2, "a", 2, "y"), (3, "b", None, "m")]
    for got in _both(session, "s"):
        assert got == want
    for got in _both(session, "s", "v = 'late' OR v = 'old'"):
        assert got == []
    # UPDATE keeps ts, so its +U version ties and wins by sequence number; DELETE likewise
    session.sql("UPDATE s SET v = 'upd' WHERE id = 1")
    session.sql("DELETE FROM s WHERE id = 2")
    want = [(1, "a", 10, "upd"), (3, "b", None, "m")]
    for got in _both(session, "s"):
        assert got == want
    session.sql(
        "MERGE INTO s USING (SELECT 3 AS id, 'b' AS dt, 4 AS ts, 'merged' AS v) src "
        "ON s.id = src.id AND s.dt = src.dt WHEN MATCHED THEN UPDATE SET *"
    )
    want = [(1, "a", 10, "upd"), (3, "b", 4, "merged")]
    session.sql("CALL sys.compact(table => 's')")
    for got in _both(session, "s"):
        assert got == want
    # an older ts written after compaction still loses
    session.sql("INSERT INTO s VALUES (1, 'a', 9, 'stale')")
    for got in _both(session, "s"):
        assert got == want
    text = session.sql("SHOW CREATE TABLE s").collect()[0][0]
    assert "'sequence.field' = 'ts'" in text
    with pytest.raises(InvalidOptionError, match="cannot be changed by ALTER TABLE"):
        session.sql("ALTER TABLE s SET TBLPROPERTIES ('sequence.field.sort-order' = 'descending')")


def test_aggregation_engine_in_writes_reads_compaction(session: Any) -> None:
    session.sql(
        "CREATE TABLE g (id INT PRIMARY KEY NOT ENFORCED, total BIGINT, hi INT, "
        "tags STRING, seen BOOLEAN, last STRING, price DECIMAL(8, 2)) WITH ("
        "'merge-engine' = 'aggregation', 'bucket' = '2', "
        "'fields.total.aggregate-function' = 'sum', 'fields.hi.aggregate-function' = 'max', "
        "'fields.tags.aggregate-function' = 'listagg', "
        "'fields.tags.list-agg-delimiter' = ';', 'fields.seen.aggregate-function' = 'bool_or', "
        "'fields.price.aggregate-function' = 'product', "
        "'file-index.bloom-filter.columns' = 'tags')"
    )
    session.sql(
        "INSERT INTO g VALUES (1, 10, 3, 'a', false, 'x', 1.50), (1, 5, 9, 'b', NULL, NULL, 2.00), "
        "(2, NULL, NULL, NULL, NULL, 'y', NULL)"
    )
    session.sql(
        "INSERT INTO g VALUES (1, 1, 4, NULL, true, 'z', 3.00), (2, 7, 1, 'c', false, NULL, 1.25)"
    )
    want = [
        (1, 16, 9, "a;b", True, "z", pytest.approx(9.0)),
        (2, 7, 1, "c", False, "y", pytest.approx(1.25)),
    ]
    for got in _both(session, "g"):
        assert [tuple(float(v) if i == 6 else v for i, v in enumerate(r)) for r in got] == want
    # 16 is in no file: the planner must not prune by total's stats
    for got in _both(session, "g", "total = 16"):
        assert [r[0] for r in got] == [1]
    for got in _both(session, "g", "tags = 'a;b'"):
        assert [r[0] for r in got] == [1]
    session.sql("CALL sys.compact(table => 'g')")
    session.sql("INSERT INTO g VALUES (2, 1, 0, 'd', NULL, NULL, 2.00)")
    want[1] = (2, 8, 1, "c;d", False, "y", pytest.approx(2.5))
    for got in _both(session, "g"):
        assert [tuple(float(v) if i == 6 else v for i, v in enumerate(r)) for r in got] == want
    for statement in (
        "DELETE FROM g WHERE id = 1",
        "UPDATE g SET total = 0 WHERE id = 1",
        "MERGE INTO g USING (SELECT 1 AS id) s ON g.id = s.id WHEN MATCHED THEN DELETE",
    ):
        with pytest.raises(UnsupportedStatementError, match="aggregation table"):
            session.sql(statement)
    with pytest.raises(InvalidOptionError, match="aggregate function 'median'"):
        session.sql(
            "CREATE TABLE bad (id INT PRIMARY KEY NOT ENFORCED, v INT) WITH ("
            "'merge-engine' = 'aggregation', 'fields.v.aggregate-function' = 'median')"
        )
    with pytest.raises(InvalidOptionError, match="'sum' does not take column 'v'"):
        session.sql(
            "CREATE TABLE bad (id INT PRIMARY KEY NOT ENFORCED, v STRING) WITH ("
            "'merge-engine' = 'aggregation', 'fields.v.aggregate-function' = 'sum')"
        )
    assert not session.catalog.table_exists("default.bad")
