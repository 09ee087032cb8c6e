"""MERGE INTO prunes the target by the source's ON keys (``spark.merge_prune``): rows against
an independent Python model on many-file targets, files kept against the files that hold a
match, the cases that must not prune (``<=>`` handled, coerced types, too many keys, NOT
MATCHED BY SOURCE), and a non-deterministic source evaluated once."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.examples import spark_examples
from tests.spark.dml.test_merge import (
    _BY_SOURCE,
    _MATCHED,
    _MATCHED_LAST,
    _NOT_MATCHED,
    Row,
    _clauses,
    _expected,
    _expected_pk,
    _rows,
)

from lakeskip.errors import InvalidArgumentError
from lakeskip.spark.modify.merge_prune import MAX_KEYS_CONF

_BLOOM = "'file-index.bloom-filter.columns' = 'id', 'file-index.bloom-filter.id.fpp' = '0.01'"
_DDL = {
    "append": f"CREATE TABLE t (id BIGINT, v INT) WITH ({_BLOOM})",
    "dv": f"CREATE TABLE t (id BIGINT, v INT) WITH ('deletion-vectors' = 'true', {_BLOOM})",
    "pk": "CREATE TABLE t (id BIGINT, v INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')",
    "pkdv": (
        "CREATE TABLE t (id BIGINT, v INT, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '4', 'deletion-vectors' = 'true')"
    ),
}
_PK = ("pk", "pkdv")


def _insert(session, name: str, rows: list[Row]) -> None:  # type: ignore[no-untyped-def]
    values = ", ".join(f"({i}, {'NULL' if v is None else v})" for i, v in rows)
    session.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")


@pytest.fixture
def reset_max_keys(session) -> Iterator[None]:  # type: ignore[no-untyped-def]
    yield
    session.spark.conf.unset(MAX_KEYS_CONF)


_WIDE_ROW = st.tuples(st.integers(0, 40), st.one_of(st.none(), st.integers(-2, 14)))


@pytest.mark.parametrize("kind", list(_DDL))
@pytest.mark.fuzz
@settings(
    max_examples=spark_examples(test=2, fuzz=12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    chunks=st.lists(st.lists(_WIDE_ROW, min_size=1, max_size=6), min_size=3, max_size=6),
    source=st.lists(_WIDE_ROW, max_size=4),
    matched=_clauses(_MATCHED, _MATCHED_LAST, 2),
    not_matched=_clauses(_NOT_MATCHED[:2], _NOT_MATCHED[2:], 1),
    by_source=st.one_of(st.just([]), _clauses(_BY_SOURCE[:1], _BY_SOURCE[1:], 1)),
    bound=st.sampled_from([10_000, 10_000, 2]),
)
def test_pruned_merge_matches_a_python_model(  # type: ignore[no-untyped-def]
    session, reset_max_keys, kind, chunks, source, matched, not_matched, by_source, bound
) -> None:
    """Several target files, a source hitting few of them: the rows are the model's, and the
    plan keeps at least every file holding a live row whose key the source has."""
    clauses = [*matched, *not_matched, *by_source]
    if not clauses:
        clauses = not_matched = [_NOT_MATCHED[2]]
    spark = session.spark
    spark.conf.set(MAX_KEYS_CONF, str(bound))
    session.sql("DROP TABLE IF EXISTS t")
    session.sql(_DDL[kind])
    target: list[Row] = []
    for chunk in chunks:
        if kind in _PK:  # one version per key per INSERT
            chunk = list({r[0]: r for r in chunk}.values())
            keys = {r[0] for r in chunk}
            target = [r for r in target if r[0] not in keys] + chunk
        else:
            target += chunk
        _insert(session, "t", chunk)
    table = session.catalog.get_table("default.t")
    live = list(table.scan_files())
    keys = {s[0] for s in source}
    holding = 0 if kind in _PK else _files_holding(session, keys)  # before the MERGE
    spark.createDataFrame(source or [], "id BIGINT, v INT").createOrReplaceTempView("src")
    if kind in _PK:
        expected: list[Row] | str = _expected_pk(target, source, matched, not_matched, by_source)
    else:
        model = _expected(target, source, matched, not_matched, by_source)
        expected = "more than one source row" if model is None else model[0]
    sql = " ".join(["MERGE INTO t USING src AS s ON t.id = s.id", *(c.sql for c in clauses)])
    try:
        if isinstance(expected, str):
            with pytest.raises(Exception, match=expected):
                session.sql(sql)
            return
        session.sql(sql)
        (report,) = session.last_reports
        assert _rows(session.sql("SELECT * FROM t")) == expected, sql
        assert report.total_files == len(live)
        if by_source or len(keys) > bound:
            assert report.kept_files == report.total_files, "no pruning"
        else:  # append files hold rows: each holding a source key is kept
            assert report.kept_files >= holding
    finally:
        spark.catalog.dropTempView("src")


def _files_holding(session, keys: set[int]) -> int:  # type: ignore[no-untyped-def]
    """How many live files of append table ``t`` hold a row with one of ``keys`` (read with
    pyarrow; no deletes were made, so every row is live)."""
    table = session.catalog.get_table("default.t")
    n = 0
    for e in table.scan_files():
        with table.file_io.open_input(table.data_file_path(e)) as f:
            ids = pq.read_table(f, columns=["id"]).column("id").to_pylist()
        n += bool(keys & set(ids))
    return n


@pytest.mark.parametrize("kind", list(_DDL))
def test_a_selective_source_reads_few_files(session, kind) -> None:  # type: ignore[no-untyped-def]
    """Eight files whose id ranges all overlap (min/max cannot prune): the bloom filter
    (append, dv) or the bucket (pk) keeps only the files of the source's two keys."""
    session.sql(_DDL[kind].replace("'bucket' = '4'", "'bucket' = '8'"))
    for f in range(8):
        if kind in _PK:  # a bucketed table: the key decides the file's bucket
            session.sql(f"INSERT INTO t SELECT id, 0 FROM range({f * 100}, {f * 100 + 100})")
        else:
            session.sql(f"INSERT INTO t SELECT /*+ REPARTITION(1) */ id, 0 FROM range({f}, 800, 8)")
    table = session.catalog.get_table("default.t")
    total = len(list(table.scan_files()))
    ideal = 2 if kind in _PK else _files_holding(session, {17, 402})
    out = session.sql(
        "MERGE INTO t USING (SELECT 17 AS id, 5 AS v UNION ALL SELECT 402, 6 "
        "UNION ALL SELECT 9000, 7) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    ).collect()[0]
    (report,) = session.last_reports
    assert (out["rows_updated"], out["rows_inserted"]) == (2, 1)
    assert report.total_files == total
    # append: + one bloom false positive; pk: the two keys' buckets, in each the two INSERTs
    # whose key range holds 17 or 402 (min/max cannot tell the keys apart)
    most = 4 if kind in _PK else ideal + 1
    assert ideal <= report.kept_files <= most, report.summary()
    assert report.kept_files < total
    assert _rows(session.sql("SELECT * FROM t WHERE v <> 0")) == [(17, 5), (402, 6), (9000, 7)]
    assert session.sql("SELECT count(*) FROM t").collect()[0][0] == 801


def test_keys_that_coerce_or_compare_nulls(session) -> None:  # type: ignore[no-untyped-def]
    """``<=>`` matches NULL keys (pruned with IS NULL); a STRING key against INT source
    values is compared by Spark after a cast (``'01' = 1``), so that MERGE does not prune;
    an INT key against BIGINT source values prunes (integers compare exactly)."""
    spark = session.spark
    session.sql("CREATE TABLE c (k STRING, n INT, v INT)")
    for k, n, v in [("'01'", 1, 1), ("'1'", 2, 2), ("NULL", 3, 3), ("'2'", 4, 4)]:
        session.sql(f"INSERT INTO c SELECT /*+ REPARTITION(1) */ {k}, {n}, {v}")
    plain = spark.createDataFrame(
        [("01", 1, 1), ("1", 2, 2), (None, 3, 3), ("2", 4, 4)], "k STRING, n INT, v INT"
    )
    plain.createOrReplaceTempView("oracle")
    try:
        # STRING = INT: Spark's own answer over a plain view is the oracle
        spark.sql("SELECT 1 AS k").createOrReplaceTempView("s")
        want = spark.sql("SELECT count(*) FROM oracle t JOIN s ON t.k = s.k").collect()[0][0]
        out = session.sql(
            "MERGE INTO c t USING s ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = 100"
        ).collect()[0]
        (report,) = session.last_reports
        assert out["rows_updated"] == want and want >= 1
        assert report.kept_files == report.total_files == 4, "coerced key: no pruning"
        # <=> with a NULL source key: the NULL row matches, and only its file is read
        spark.sql("SELECT CAST(NULL AS STRING) AS k").createOrReplaceTempView("s")
        out = session.sql(
            "MERGE INTO c t USING s ON t.k <=> s.k WHEN MATCHED THEN UPDATE SET v = 7"
        ).collect()[0]
        (report,) = session.last_reports
        assert out["rows_updated"] == 1
        assert report.kept_files == 1 and report.total_files >= 4
        assert _rows(session.sql("SELECT n, v FROM c WHERE k IS NULL")) == [(3, 7)]
        # = with a NULL source key: matches nothing, reads nothing
        out = session.sql(
            "MERGE INTO c t USING s ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = 8"
        ).collect()[0]
        (report,) = session.last_reports
        assert out["rows_updated"] == 0 and report.kept_files == 0
        # INT key, BIGINT source values (one beyond INT): pruned, exact
        spark.sql(
            "SELECT CAST(4 AS BIGINT) AS n UNION ALL SELECT 1099511627776"
        ).createOrReplaceTempView("s")
        out = session.sql(
            "MERGE INTO c t USING s ON t.n = s.n WHEN MATCHED THEN UPDATE SET v = 9"
        ).collect()[0]
        (report,) = session.last_reports
        assert out["rows_updated"] == 1 and report.kept_files == 1
        assert _rows(session.sql("SELECT n, v FROM c WHERE n = 4")) == [(4, 9)]
    finally:
        spark.catalog.dropTempView("s")
        spark.catalog.dropTempView("oracle")


def test_too_many_source_keys_or_by_source_clauses_read_everything(  # type: ignore[no-untyped-def]
    session, reset_max_keys
) -> None:
    spark = session.spark
    session.sql(f"CREATE TABLE t (id BIGINT, v INT) WITH ({_BLOOM})")
    for f in range(4):
        session.sql(f"INSERT INTO t SELECT /*+ REPARTITION(1) */ id, 0 FROM range({f}, 400, 4)")
    merge = (
        "MERGE INTO t USING (SELECT explode(array(1, 2, 5)) AS id) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = v + 1"
    )
    session.sql(merge)
    assert session.last_reports[0].kept_files == 2, "1 and 5 share a file"
    spark.conf.set(MAX_KEYS_CONF, "2")  # three keys: over the bound
    session.sql(merge)
    assert session.last_reports[0].kept_files == 4
    spark.conf.set(MAX_KEYS_CONF, "3")
    session.sql(merge)
    assert session.last_reports[0].kept_files == 2
    session.sql(merge + " WHEN NOT MATCHED BY SOURCE AND t.id = 3 THEN DELETE")
    assert session.last_reports[0].kept_files == 4
    assert _rows(session.sql("SELECT * FROM t WHERE v <> 0 OR id = 3")) == [
        (1, 4),
        (2, 4),
        (5, 4),
    ]
    spark.conf.set(MAX_KEYS_CONF, "many")
    with pytest.raises(InvalidArgumentError, match=MAX_KEYS_CONF):
        session.sql(merge)


@pytest.mark.parametrize("kind", ["append", "dv", "pk"])
def test_a_random_source_is_evaluated_once(session, kind) -> None:  # type: ignore[no-untyped-def]
    """A source drawn with rand(): the counts, the matched rows and the inserted rows all
    come from one draw (two draws disagree on about half the rows)."""
    session.sql(_DDL[kind])
    for f in range(4):
        session.sql(f"INSERT INTO t SELECT /*+ REPARTITION(1) */ id, 0 FROM range({f}, 40, 4)")
    out = session.sql(
        "MERGE INTO t USING (SELECT id, 1 AS v FROM range(80) WHERE rand() < 0.5) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    ).collect()[0]
    rows = _rows(session.sql("SELECT * FROM t"))
    assert len(rows) == 40 + out["rows_inserted"], "no id both kept and inserted"
    assert len({r[0] for r in rows}) == len(rows)
    assert sum(1 for i, v in rows if v == 1 and i < 40) == out["rows_updated"]
    assert sum(1 for i, v in rows if i >= 40) == out["rows_inserted"]
    assert 0 < out["rows_updated"] < 40, "the draw is random (a draw of all or none: rerun)"
