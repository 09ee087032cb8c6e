"""``merge-engine = first-row`` through Spark: the first row written for a key stands.

Written like a primary-key table with deletion vectors (lookup per bucket, no level-0 file,
no DV needed: a row whose key is already live is simply not written), so Paimon's batch
read (level 0 skipped, the rest read as it is) sees the same rows. Every answer is checked
against an independent "first row per key" recomputed here."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import spark_examples
from tests.spark.pk.pk_reads import check_catalog_reads
from tests.spark.pk.test_primary_key_dv import _check_layout

from lakeskip.errors import UnsupportedStatementError


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_first_row_keeps_the_first_and_refuses_dml(session: Any) -> None:
    session.sql(
        "CREATE TABLE f (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('merge-engine' = 'first-row', 'bucket' = '2', "
        "'file-index.bloom-filter.columns' = 'v')"
    )
    session.sql("INSERT INTO f VALUES (1, 'a'), (2, 'b')")
    session.sql("INSERT INTO f VALUES (2, 'late'), (3, 'c')")
    session.sql("INSERT INTO f VALUES (1, 'later'), (3, 'late'), (4, 'd')")
    want = [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    name = f"{session.catalog_name}.default.f"
    assert _rows(session.sql("SELECT id, v FROM f")) == want
    assert _rows(session.spark.sql(f"SELECT id, v FROM {name}")) == want
    assert _rows(session.spark.sql(f"SELECT id FROM {name} WHERE v = 'late'")) == []
    table = session.catalog.get_table("default.f")
    _check_layout(table)
    assert not table.refresh().deletion_files(), "first-row needs no deletion vector"
    for statement in (
        "DELETE FROM f WHERE id = 1",
        "UPDATE f SET v = 'x' WHERE id = 1",
        "MERGE INTO f USING (SELECT 1L AS id, 'm' AS v) s ON f.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v",
    ):
        with pytest.raises(UnsupportedStatementError, match="first-row table"):
            session.sql(statement)
    assert _rows(session.sql("SELECT id, v FROM f")) == want, "untouched"
    session.sql("CALL sys.compact(table => 'f')")
    assert _rows(session.spark.sql(f"SELECT id, v FROM {name}")) == want
    session.sql("INSERT INTO f VALUES (4, 'again'), (5, 'e')")
    assert _rows(session.sql("SELECT id, v FROM f")) == [*want, (5, "e")]


_BATCHES = st.lists(
    st.tuples(
        st.lists(st.integers(0, 11), min_size=1, max_size=6, unique=True), st.integers(-5, 5)
    ),
    min_size=1,
    max_size=7,
)


@pytest.mark.fuzz
@settings(max_examples=spark_examples(test=2, fuzz=12), deadline=None)
@given(
    batches=_BATCHES, lo=st.integers(-4, 4), key=st.integers(0, 11), compact_at=st.integers(0, 8)
)
def test_spark_reads_equal_first_row_per_key(
    spark: Any,
    tmp_path_factory: pytest.TempPathFactory,
    batches: Any,
    lo: int,
    key: int,
    compact_at: int,
) -> None:
    """Random INSERT batches (keys unique within a batch: which of two rows of one
    distributed write came first is not defined) on a first-row table; every read equals
    "first row per key" and the files keep Paimon's raw-read invariants."""
    import lakeskip

    s = lakeskip.connect(str(tmp_path_factory.mktemp("fr") / "wh"), spark=spark)
    s.sql(
        "CREATE TABLE t (k INT, p STRING, n INT, PRIMARY KEY (k, p) NOT ENFORCED) "
        "PARTITIONED BY (p) WITH ('bucket' = '2', 'merge-engine' = 'first-row', "
        "'file-index.bloom-filter.columns' = 'n')"
    )
    model: dict[tuple[int, str], int] = {}
    for i, (keys, n) in enumerate(batches):
        values = ", ".join(f"({k}, 'p{k % 2}', {n + i})" for k in keys)
        s.sql(f"INSERT INTO t VALUES {values}")
        for k in keys:
            model.setdefault((k, f"p{k % 2}"), n + i)
        if i == compact_at:
            s.sql("CALL sys.compact(table => 't')")
    table = s.catalog.get_table("default.t")
    _check_layout(table)
    name = f"{s.catalog_name}.default.t"
    all_rows = sorted((k, p, v) for (k, p), v in model.items())
    check_catalog_reads(spark, name, all_rows, lo, key)
    from lakeskip.spark.read.query import table_view

    view = table_view(spark, table, table.scan_files())
    assert sorted((r["k"], r["p"], r["n"]) for r in view.collect()) == all_rows
