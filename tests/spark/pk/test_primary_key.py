"""Primary-key tables through Spark: upserts, merge-on-read through the Spark catalog
(``spark.sql`` and ``Session.sql``), checked against an independent "latest row per key"."""

from __future__ import annotations

from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import spark_examples
from tests.spark.pk.pk_reads import check_catalog_reads

from lakeskip.errors import InvalidArgumentError, InvalidOptionError


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_key_inserted_twice_returns_latest_row(session: Any) -> None:
    session.sql("CREATE TABLE t (id BIGINT, v STRING, n INT, PRIMARY KEY (id) NOT ENFORCED)")
    session.sql("INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)")
    session.sql("INSERT INTO t VALUES (2, 'B', 21), (4, 'd', 40)")
    session.sql("INSERT INTO t VALUES (2, 'BB', 22), (1, 'A', 11)")
    want = [(1, "A", 11), (2, "BB", 22), (3, "c", 30), (4, "d", 40)]
    assert _rows(session.sql("SELECT * FROM t")) == want
    name = f"{session.catalog_name}.default.t"
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == want
    newer = session.spark.sql(f"SELECT v FROM {name} WHERE n > 20")
    assert sorted(r[0] for r in newer.collect()) == ["BB", "c", "d"]
    assert session.spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0] == 4
    # an older version matching a filter never comes back
    assert _rows(session.sql("SELECT id FROM t WHERE v = 'b'")) == []
    table = session.catalog.get_table("default.t")
    assert table.schema.primary_keys == ("id",)
    assert table.schema.options["bucket"] == "-1"  # dynamic bucket, Paimon's default
    assert not table.schema.row_type.field("id").type.nullable
    entries = table.scan_files()
    by_bucket: dict[int, list[int]] = {}
    for e in entries:
        by_bucket.setdefault(e.bucket, []).append(e.file.min_sequence_number)
    for seqs in by_bucket.values():  # sequence numbers continue per bucket
        assert sorted(seqs)[0] == 0 and len(set(seqs)) == len(seqs)
    data = pq.read_table(table.data_file_path(entries[0]))
    assert data.column_names[:3] == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND"]


def test_merge_on_read_of_files_with_many_row_groups(session: Any) -> None:
    """The merge holds one open reader per file of a bucket; files of many row groups (every
    bucket file over 1Mi rows at the default block size) are read to the end."""
    session.sql(
        "CREATE TABLE rg (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '1', 'parquet.block.size' = '4000')"
    )
    session.sql("INSERT INTO rg SELECT id, CAST(id AS STRING) FROM range(0, 6000)")
    session.sql("INSERT INTO rg SELECT id, 'u' FROM range(2000, 8000)")
    files = session.table("rg").files()
    assert len(files) == 2 and all(pq.ParquetFile(f).metadata.num_row_groups > 5 for f in files)
    got = session.sql("SELECT count(*), count_if(v = 'u'), sum(id) FROM rg").collect()[0]
    assert tuple(got) == (8000, 6000, sum(range(8000)))


def test_merge_on_read_returns_every_row_of_many_files_and_row_groups(session: Any) -> None:
    """Three files of one bucket open at once, each of many row groups, with nulls in every
    value column: each row read equals the newest version recomputed here (a reader closed
    under the merge failed, or with the vectorized reader gave rows of zeros)."""
    session.sql(
        "CREATE TABLE mg (id BIGINT, s STRING, d DOUBLE, n INT, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '1', 'parquet.block.size' = '3000')"
    )
    want: dict[int, tuple[Any, ...]] = {}
    for tag, ids in (("a", range(0, 6000)), ("b", range(2000, 8000, 2)), ("c", range(1, 9000, 3))):
        step = ids.step
        session.sql(
            f"INSERT INTO mg SELECT id, IF(id % 7 = 0, NULL, concat('{tag}', id)), "
            f"IF(id % 5 = 1, NULL, id * {step}.5), IF(id % 3 = 2, NULL, CAST(id AS INT) + {step}) "
            f"FROM range({ids.start}, {ids.stop}, {step})"
        )
        for i in ids:
            want[i] = (
                i,
                None if i % 7 == 0 else f"{tag}{i}",
                None if i % 5 == 1 else i * (step + 0.5),
                None if i % 3 == 2 else i + step,
            )
    files = session.table("mg").files()
    assert len(files) == 3 and all(pq.ParquetFile(f).metadata.num_row_groups > 3 for f in files)
    name = f"{session.catalog_name}.default.mg"
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == sorted(want.values())
    got = session.spark.sql(f"SELECT id, n FROM {name} WHERE id BETWEEN 4000 AND 4100")
    assert _rows(got) == sorted((r[0], r[3]) for r in want.values() if 4000 <= r[0] <= 4100)


def test_duplicate_keys_in_one_insert_keep_the_last(session: Any) -> None:
    session.sql(
        "CREATE TABLE t (id INT PRIMARY KEY NOT ENFORCED, v STRING) TBLPROPERTIES ('bucket' = '2')"
    )
    session.sql("INSERT INTO t VALUES (1, 'a'), (1, 'b'), (2, 'x')")
    rows = _rows(session.sql("SELECT * FROM t"))
    assert len(rows) == 2 and rows[1] == (2, "x") and rows[0][0] == 1


def test_partitioned_primary_key_through_spark_catalog(session: Any) -> None:
    name = f"{session.catalog_name}.default.p"
    session.spark.sql(
        f"CREATE TABLE {name} (id BIGINT, dt STRING, v INT) PARTITIONED BY (dt) "
        "TBLPROPERTIES ('primary-key' = 'dt,id', 'bucket' = '3')"
    )
    session.spark.sql(f"INSERT INTO {name} VALUES (1, 'x', 1), (1, 'y', 2), (2, 'x', 3)")
    session.spark.sql(f"INSERT INTO {name} VALUES (1, 'x', 10), (3, 'y', 30)")
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == [
        (1, "x", 10),
        (1, "y", 2),
        (2, "x", 3),
        (3, "y", 30),
    ]
    assert _rows(session.spark.sql(f"SELECT id, v FROM {name} WHERE dt = 'x'")) == [(1, 10), (2, 3)]
    table = session.catalog.get_table("default.p")
    assert table.schema.primary_keys == ("dt", "id")


def test_primary_key_ddl_errors(session: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="must contain all partition columns"):
        session.sql(
            "CREATE TABLE e1 (id INT, dt STRING, PRIMARY KEY (id) NOT ENFORCED) PARTITIONED BY (dt)"
        )
    with pytest.raises(InvalidOptionError, match="merge-engine"):
        session.sql(
            "CREATE TABLE e2 (id INT PRIMARY KEY NOT ENFORCED, v INT) "
            "WITH ('merge-engine' = 'aggregate')"
        )
    with pytest.raises(InvalidOptionError, match="bucket"):
        session.sql(
            "CREATE TABLE e3 (id INT PRIMARY KEY NOT ENFORCED, v INT) WITH ('bucket' = '0')"
        )
    with pytest.raises(InvalidArgumentError, match="not supported yet"):
        session.sql("CREATE TABLE e4 (id DOUBLE PRIMARY KEY NOT ENFORCED, v INT)")
    assert not session.catalog.table_exists("default.e1")


def test_delete_and_update_write_new_versions(session: Any) -> None:
    session.sql(
        "CREATE TABLE t (id BIGINT, dt STRING, v STRING, n INT) PARTITIONED BY (dt) "
        "WITH ('primary-key' = 'id,dt', 'bucket' = '2', 'file-index.bloom-filter.columns' = 'v')"
    )
    session.sql(
        "INSERT INTO t VALUES (1, 'x', 'a', 1), (2, 'x', 'b', 2), (3, 'y', 'c', 3), (4, 'y', 'd', 4)"
    )
    session.sql("INSERT INTO t VALUES (2, 'x', 'bb', 20)")
    session.sql("DELETE FROM t WHERE v = 'bb' OR id = 3")
    assert _rows(session.sql("SELECT id, dt, v, n FROM t")) == [(1, "x", "a", 1), (4, "y", "d", 4)]
    # the older version of id 2 ('b') must not come back, neither through a filter
    assert _rows(session.sql("SELECT id FROM t WHERE v = 'b'")) == []
    session.sql("UPDATE t SET n = n * 100, v = upper(v) WHERE dt = 'y' OR id = 1")
    name = f"{session.catalog_name}.default.t"
    assert _rows(session.spark.sql(f"SELECT * FROM {name}")) == [
        (1, "x", "A", 100),
        (4, "y", "D", 400),
    ]
    session.sql("INSERT INTO t VALUES (3, 'y', 'again', 5)")
    assert _rows(session.spark.sql(f"SELECT id, v FROM {name} WHERE dt = 'y'")) == [
        (3, "again"),
        (4, "D"),
    ]
    with pytest.raises(InvalidArgumentError, match="cannot assign primary key"):
        session.sql("UPDATE t SET id = 9 WHERE id = 1")
    table = session.catalog.get_table("default.t")
    kinds = set()
    for e in table.scan_files():
        kinds |= set(pq.read_table(table.data_file_path(e))["_VALUE_KIND"].to_pylist())
    assert kinds == {0, 2, 3}
    before = _rows(session.sql("SELECT * FROM t"))
    with pytest.raises(InvalidArgumentError, match="order_strategy is not supported"):
        session.sql("CALL sys.compact(table => 't', order_strategy => 'zorder', order_by => 'n')")
    session.sql("CALL sys.compact(table => 't')")
    assert _rows(session.sql("SELECT * FROM t")) == before
    entries = session.catalog.get_table("default.t").scan_files()
    assert {e.file.level for e in entries} == {5}
    assert len({(e.partition, e.bucket) for e in entries}) == len(entries)
    # value-column indexes are rebuilt per file on a primary-key table too
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('file-index.bitmap.columns' = 'n')")
    session.sql("CALL sys.rewrite_file_index(table => 't')")
    assert _rows(session.sql("SELECT id, n FROM t WHERE n = 400")) == [(4, 400)]
    assert _rows(session.spark.sql(f"SELECT id FROM {name} WHERE n = 1")) == []


def test_describe_and_show_create_table(session: Any) -> None:
    session.sql(
        "CREATE TABLE t (id BIGINT, dt STRING, v STRING, PRIMARY KEY (dt, id) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '4')"
    )
    text = session.sql("SHOW CREATE TABLE t").collect()[0][0]
    assert "PRIMARY KEY (`dt`, `id`)" in text and "'bucket' = '4'" in text
    name = f"{session.catalog_name}.default.t"
    props = {r[0]: r[1] for r in session.spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    assert props["primary-key"] == "dt,id" and props["bucket"] == "4"
    session.sql("INSERT INTO t VALUES (1, 'x', 'a'), (1, 'x', 'b')")
    rows = session.sql("EXPLAIN PRUNING SELECT * FROM t WHERE id = 1 AND dt = 'x'").collect()
    metrics = {r["metric"]: r["value"] for r in rows}
    assert metrics["files kept"] == "1"


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["insert", "insert", "delete", "update"]),
        st.lists(st.integers(0, 11), min_size=1, max_size=6),
        st.integers(-3, 3),
    ),
    min_size=1,
    max_size=5,
)


@pytest.mark.fuzz
@settings(max_examples=spark_examples(test=2, fuzz=12), deadline=None)
@given(
    ops=_OPS,
    lo=st.integers(-4, 4),
    key=st.integers(0, 11),
    bucket=st.sampled_from(["'bucket' = '2'", "'dynamic-bucket.target-row-num' = '3'"]),
)
def test_spark_reads_equal_latest_row_per_key(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, ops: Any, lo: int, key: int, bucket: str
) -> None:
    """Random upserts / deletes / updates through SQL; every read (Spark catalog, with value
    and key filters) equals "latest row per key" recomputed here in Python."""
    import lakeskip

    s = lakeskip.connect(str(tmp_path_factory.mktemp("pkh") / "wh"), spark=spark)
    s.sql(
        "CREATE TABLE t (k INT, p STRING, n INT, PRIMARY KEY (k, p) NOT ENFORCED) "
        f"PARTITIONED BY (p) WITH ({bucket}, 'file-index.bloom-filter.columns' = 'n')"
    )  # fixed buckets, or dynamic ones (bucket = -1) growing every 3 keys
    model: dict[tuple[int, str], int] = {}
    for i, (op, keys, n) in enumerate(ops):
        if op == "insert":
            values = ", ".join(f"({k}, 'p{k % 2}', {n + i})" for k in keys)
            s.sql(f"INSERT INTO t VALUES {values}")
            for k in keys:  # the last of duplicate keys in one INSERT may win or not: skip
                model[(k, f"p{k % 2}")] = n + i
            if len(set(keys)) != len(keys):
                dup = {k for k in keys if keys.count(k) > 1}
                s.sql(f"DELETE FROM t WHERE k IN ({', '.join(map(str, dup))})")
                for k in dup:
                    model.pop((k, f"p{k % 2}"), None)
        elif op == "delete":
            s.sql(f"DELETE FROM t WHERE n < {n} OR k = {keys[0]}")
            model = {kp: v for kp, v in model.items() if not (v < n or kp[0] == keys[0])}
        else:
            s.sql(f"UPDATE t SET n = n + 10 WHERE k >= {keys[0]}")
            model = {kp: v + 10 if kp[0] >= keys[0] else v for kp, v in model.items()}
    name = f"{s.catalog_name}.default.t"
    all_rows = sorted((k, p, v) for (k, p), v in model.items())
    check_catalog_reads(spark, name, all_rows, lo, key)


def test_spark_primary_key_constraint_reaches_the_catalog(session: Any) -> None:
    n = session.catalog_name
    session.spark.sql(
        f"CREATE TABLE {n}.default.c (id INT, v STRING, CONSTRAINT pk PRIMARY KEY (id))"
    )
    session.spark.sql(f"INSERT INTO {n}.default.c VALUES (1, 'a'), (2, 'b')")
    session.spark.sql(f"INSERT INTO {n}.default.c VALUES (1, 'z')")
    assert _rows(session.spark.sql(f"SELECT * FROM {n}.default.c")) == [(1, "z"), (2, "b")]
    assert session.catalog.get_table("default.c").schema.primary_keys == ("id",)
    with pytest.raises(Exception, match="only PRIMARY KEY constraints"):
        session.spark.sql(f"CREATE TABLE {n}.default.c3 (id INT, CONSTRAINT ch CHECK (id > 0))")
    assert not session.catalog.table_exists("default.c3")
