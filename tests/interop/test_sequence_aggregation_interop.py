"""``sequence.field`` and ``merge-engine = aggregation`` between lakeskip, Paimon 0.9 (Java)
and pypaimon 2.1: both read lakeskip's tables with lakeskip's rows after writes (versions out
of sequence-field order, duplicate keys in one write), DELETE / UPDATE (sequence-field table)
and a full compaction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.interop.reads import java_rows, lakeskip_rows, pypaimon_rows, text_rows
from tests.interop.test_pypaimon import pypaimon_python  # noqa: F401

pytestmark = pytest.mark.interop


# values compared as lower-case text


def _ours(session: Any) -> list[list[str | None]]:
    return lakeskip_rows(session, "SELECT * FROM t", lower=True)


def _java(paimon_java: Any, wh: Path) -> list[list[str | None]]:
    return java_rows(paimon_java, wh, "default.t", lower=True)


def _py(python: str, wh: Path, columns: list[str]) -> list[list[str | None]]:
    rows = pypaimon_rows(python, wh, "default.t")
    return text_rows(([r[c] for c in columns] for r in rows), lower=True)


def _fill_sequence(session: Any) -> None:
    session.sql(
        "CREATE TABLE t (id BIGINT, dt STRING, ts BIGINT, v STRING, "
        "PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) "
        "WITH ('sequence.field' = 'ts', 'bucket' = '2')"
    )
    session.sql("INSERT INTO t VALUES (1, 'a', 10, 'new'), (1, 'a', 5, 'old'), (2, 'a', 1, 'x')")
    session.sql("INSERT INTO t VALUES (1, 'a', 7, 'late'), (2, 'a', 2, 'y'), (3, 'b', 3, 'z')")
    session.sql("INSERT INTO t VALUES (4, 'b', NULL, 'p'), (4, 'b', NULL, 'q'), (5, 'a', 1, 'r')")
    session.sql("UPDATE t SET v = 'upd' WHERE id = 3")
    session.sql("DELETE FROM t WHERE id = 5")


def _fill_aggregation(session: Any) -> None:
    session.sql(
        "CREATE TABLE t (id BIGINT PRIMARY KEY NOT ENFORCED, total BIGINT, hi INT, "
        "tags STRING, first STRING, last STRING, price DECIMAL(8, 2)) WITH ("
        "'merge-engine' = 'aggregation', 'bucket' = '2', "
        "'fields.total.aggregate-function' = 'sum', 'fields.hi.aggregate-function' = 'max', "
        "'fields.tags.aggregate-function' = 'listagg', "
        "'fields.tags.list-agg-delimiter' = ';', "
        "'fields.first.aggregate-function' = 'first_non_null_value', "
        "'fields.last.aggregate-function' = 'last_value', "
        "'fields.price.aggregate-function' = 'product')"
    )
    session.sql(
        "INSERT INTO t VALUES (1, 10, 3, 'a', NULL, 'x', 1.50), (1, 5, 9, 'b', 'f', NULL, 2.00), "
        "(2, NULL, NULL, NULL, NULL, 'y', NULL)"
    )
    session.sql(
        "INSERT INTO t VALUES (1, 1, 4, NULL, 'g', 'z', 3.00), (2, 7, 1, 'c', 'h', NULL, 1.25), "
        "(3, -2, -2, 'd', NULL, NULL, NULL)"
    )


SEQ_COLUMNS = ["id", "dt", "ts", "v"]
AGG_COLUMNS = ["id", "total", "hi", "tags", "first", "last", "price"]


def test_paimon_java_reads_lakeskip_sequence_field_table(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    _fill_sequence(session)
    want = [["1", "a", "10", "new"], ["2", "a", "2", "y"], ["3", "b", "3", "upd"]]
    want.append(["4", "b", None, "q"])
    assert _ours(session) == sorted(want, key=repr)
    assert _java(paimon_java, wh) == _ours(session)
    session.sql("CALL sys.compact(table => 't')")
    assert _java(paimon_java, wh) == _ours(session)
    session.sql("INSERT INTO t VALUES (1, 'a', 9, 'stale'), (2, 'a', 3, 'w')")
    assert _java(paimon_java, wh) == _ours(session)


def test_paimon_java_reads_lakeskip_aggregation_table(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    _fill_aggregation(session)
    want = [
        ["1", "16", "9", "a;b", "f", "z", "9.00"],
        ["2", "7", "1", "c", "h", None, "1.25"],
        ["3", "-2", "-2", "d", None, None, None],
    ]
    assert _ours(session) == want
    assert _java(paimon_java, wh) == want
    session.sql("CALL sys.compact(table => 't')")
    session.sql("INSERT INTO t VALUES (2, 1, 0, 'e', 'i', 'w', 2.00)")
    assert _java(paimon_java, wh) == _ours(session)
    assert _ours(session)[1] == ["2", "8", "1", "c;e", "h", "w", "2.50"]


@pytest.mark.parametrize(
    ("fill", "columns", "more"),
    [
        (_fill_sequence, SEQ_COLUMNS, "(1, 'a', 9, 'stale'), (2, 'a', 3, 'w')"),
        (_fill_aggregation, AGG_COLUMNS, "(2, 1, 0, 'e', 'i', 'w', 2.00)"),
    ],
    ids=["sequence-field", "aggregation"],
)
def test_pypaimon_reads_lakeskip_table(
    session: Any,
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
    fill: Callable[[Any], None],
    columns: list[str],
    more: str,
) -> None:
    """pypaimon's merge-on-read after the writes, then after a full compaction and an insert
    of versions older (sequence field) or to aggregate (aggregation) than the compacted."""
    wh = tmp_path / "warehouse"
    fill(session)
    assert _py(pypaimon_python, wh, columns) == _ours(session)
    session.sql("CALL sys.compact(table => 't')")
    session.sql(f"INSERT INTO t VALUES {more}")
    assert _py(pypaimon_python, wh, columns) == _ours(session)


def test_paimon_java_reads_lakeskip_sequence_group_table(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    session.sql(
        "CREATE TABLE t (id BIGINT PRIMARY KEY NOT ENFORCED, g INT, a STRING, b INT, c STRING) "
        "WITH ('merge-engine' = 'partial-update', 'fields.g.sequence-group' = 'a,b', "
        "'bucket' = '2')"
    )
    session.sql("INSERT INTO t VALUES (1, 2, 'a2', 2, 'c1'), (2, NULL, 'x', 1, NULL)")
    session.sql("INSERT INTO t VALUES (1, 1, 'old', 9, NULL), (2, 1, 'y', NULL, 'c2')")
    session.sql("INSERT INTO t VALUES (1, 3, NULL, 3, NULL), (3, 5, 'z', 5, 'c3')")
    want = [
        ["1", "3", None, "3", "c1"],
        ["2", "1", "y", None, "c2"],
        ["3", "5", "z", "5", "c3"],
    ]
    assert _ours(session) == want
    assert _java(paimon_java, wh) == want
    session.sql("CALL sys.compact(table => 't')")
    session.sql("INSERT INTO t VALUES (3, 4, 'stale', 4, 'c4')")
    assert _ours(session)[2] == ["3", "5", "z", "5", "c4"]
    assert _java(paimon_java, wh) == _ours(session)
