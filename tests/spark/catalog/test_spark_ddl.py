"""The DDL Spark users type on lakeskip tables through plain ``spark.sql``, each as Paimon's
Spark connector does it; after each statement the table's rows equal a model kept here."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def lake(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    import lakeskip

    lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    return spark


def _rows(spark, table: str) -> list[tuple]:  # type: ignore[no-untyped-def,type-arg]
    return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {table}").collect())


def _kinds(spark, table: str) -> list[str]:  # type: ignore[no-untyped-def]
    db, name = table.rsplit(".", 1)
    q = f"SELECT commit_kind FROM {db}.`{name}$snapshots` ORDER BY snapshot_id"
    return [r[0] for r in spark.sql(q).collect()]


@pytest.mark.parametrize(
    "ddl",
    [
        "(id BIGINT, v STRING, dt STRING) PARTITIONED BY (dt)",
        "(id BIGINT NOT NULL, v STRING, dt STRING NOT NULL) PARTITIONED BY (dt) "
        "TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '2')",
    ],
    ids=["append", "primary-key"],
)
def test_truncate_table_is_one_overwrite_snapshot_with_no_files(lake, ddl: str) -> None:  # type: ignore[no-untyped-def]
    spark = lake
    t = "lakeskip.default.tr"
    spark.sql(f"CREATE TABLE {t} {ddl}")
    spark.sql(f"TRUNCATE TABLE {t}")  # an empty table: nothing to commit
    assert _kinds(spark, t) == []
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 'd1'), (2, 'b', 'd2')")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c', 'd1')")
    assert _rows(spark, t) == [(1, "a", "d1"), (2, "b", "d2"), (3, "c", "d1")]
    spark.sql(f"TRUNCATE TABLE {t}")
    assert _rows(spark, t) == [], "no rows after TRUNCATE"
    assert _kinds(spark, t)[-1] == "OVERWRITE"
    files = spark.sql("SELECT count(*) FROM lakeskip.default.`tr$files`").collect()[0][0]
    assert files == 0, "the truncate snapshot lists no data files"
    # the table lives on: writes after the truncate, time travel before it
    spark.sql(f"INSERT INTO {t} VALUES (4, 'd', 'd3')")
    assert _rows(spark, t) == [(4, "d", "d3")]
    assert len(_rows(spark, f"{t} VERSION AS OF 2")) == 3


def _schema_of(wh: Path, name: str):  # type: ignore[no-untyped-def]
    from lakeskip.catalog.catalog import Catalog

    s = Catalog(str(wh)).get_table(name).schema
    fields = [(f.id, f.name, str(f.type), f.type.nullable, f.description) for f in s.fields]
    return fields, s.partition_keys, s.primary_keys, dict(s.options), s.comment


def test_show_create_table_recreates_the_table(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import lakeskip

    wh = tmp_path / "wh"
    session = lakeskip.connect(str(wh), spark=spark)
    spark.sql(
        "CREATE TABLE lakeskip.default.sc (id BIGINT NOT NULL COMMENT 'the key', "
        "v STRING, n INT NOT NULL, dt STRING NOT NULL) PARTITIONED BY (dt) "
        "COMMENT 'a table' TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '2', "
        "'file-index.bloom-filter.columns' = 'v', 'merge-engine' = 'deduplicate')"
    )
    spark.sql("INSERT INTO lakeskip.default.sc VALUES (1, 'a', 1, 'd1'), (2, 'b', 2, 'd2')")
    [[text]] = spark.sql("SHOW CREATE TABLE lakeskip.default.sc").collect()
    assert "lakeskip." not in text.replace("`lakeskip`.", ""), f"no state properties: {text}"
    assert "'primary-key' = 'id,dt'" in text and "`n` INT NOT NULL" in text, text
    spark.sql(text.replace("`sc`", "`sc2`"))
    assert _schema_of(wh, "default.sc2") == _schema_of(wh, "default.sc")
    [[again]] = spark.sql("SHOW CREATE TABLE lakeskip.default.sc2").collect()
    assert again == text.replace("`sc`", "`sc2`")
    # Session.sql's own SHOW CREATE TABLE (Paimon's PRIMARY KEY clause) recreates it too
    [[own]] = session.sql("SHOW CREATE TABLE sc").collect()
    session.sql(own.replace("default.sc ", "default.sc3 "))
    assert _schema_of(wh, "default.sc3") == _schema_of(wh, "default.sc")


def test_create_table_like_copies_schema_keys_and_options(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from pyspark.errors import AnalysisException

    import lakeskip

    wh = tmp_path / "wh"
    lakeskip.connect(str(wh), spark=spark)
    spark.sql(
        "CREATE TABLE lakeskip.default.src (id BIGINT NOT NULL COMMENT 'k', v STRING, "
        "dt STRING NOT NULL) PARTITIONED BY (dt) COMMENT 'c' TBLPROPERTIES "
        "('primary-key' = 'id,dt', 'bucket' = '2', 'file-index.bloom-filter.columns' = 'v')"
    )
    spark.sql("INSERT INTO lakeskip.default.src VALUES (1, 'a', 'd1')")
    spark.sql("CREATE TABLE lakeskip.default.cp LIKE lakeskip.default.src")
    assert _schema_of(wh, "default.cp") == _schema_of(wh, "default.src")
    assert _rows(spark, "lakeskip.default.cp") == [], "LIKE copies no rows"
    spark.sql(
        "CREATE TABLE lakeskip.default.cp2 LIKE lakeskip.default.src TBLPROPERTIES ('bucket' = '4')"
    )
    _, parts, keys, options, _ = _schema_of(wh, "default.cp2")
    assert (parts, keys, options["bucket"]) == (("dt",), ("id", "dt"), "4")
    # the copy is a working primary-key table: an upsert replaces the row
    spark.sql("INSERT INTO lakeskip.default.cp VALUES (1, 'a', 'd1')")
    spark.sql("INSERT INTO lakeskip.default.cp VALUES (1, 'b', 'd1')")
    assert _rows(spark, "lakeskip.default.cp") == [(1, "b", "d1")]
    # a source that is not a lakeskip table of this catalog: one line, nothing created
    spark.sql("CREATE TABLE default.ddl_like_plain (id INT) USING parquet")
    try:
        with pytest.raises(AnalysisException, match="must be a lakeskip table") as e:
            spark.sql("CREATE TABLE lakeskip.default.bad LIKE spark_catalog.default.ddl_like_plain")
        assert "\n" not in str(e.value).split("SQLSTATE")[0].strip(), str(e.value)
    finally:
        spark.sql("DROP TABLE default.ddl_like_plain")
    assert not spark.catalog.tableExists("lakeskip.default.bad")


def test_show_partitions_and_drop_partition(lake) -> None:  # type: ignore[no-untyped-def]
    from pyspark.errors import AnalysisException

    spark = lake
    t = "lakeskip.default.pt"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, dt STRING, h INT) PARTITIONED BY (dt, h)")
    model = [(1, "a", "d1", 1), (2, "b", "d1", 2), (3, "c", "d2", 1), (4, "d", "d1", 1)]
    spark.sql(
        f"INSERT INTO {t} VALUES " + ", ".join(f"({i}, '{v}', '{d}', {h})" for i, v, d, h in model)
    )

    def shown(sql: str) -> list[str]:
        return sorted(r[0] for r in spark.sql(sql).collect())

    assert shown(f"SHOW PARTITIONS {t}") == ["dt=d1/h=1", "dt=d1/h=2", "dt=d2/h=1"]
    assert shown(f"SHOW PARTITIONS {t} PARTITION (dt = 'd1')") == ["dt=d1/h=1", "dt=d1/h=2"]
    spark.sql(f"ALTER TABLE {t} DROP PARTITION (dt = 'd1', h = 1)")
    model = [r for r in model if (r[2], r[3]) != ("d1", 1)]
    assert _rows(spark, t) == sorted(model), "only that partition's rows are gone"
    assert _kinds(spark, t)[-1] == "OVERWRITE"
    assert shown(f"SHOW PARTITIONS {t}") == ["dt=d1/h=2", "dt=d2/h=1"]
    # a partition with no data: Spark's own one-line error; IF EXISTS: nothing committed
    snapshots = len(_kinds(spark, t))
    with pytest.raises(AnalysisException, match="PARTITIONS_NOT_FOUND"):
        spark.sql(f"ALTER TABLE {t} DROP PARTITION (dt = 'd9', h = 1)")
    spark.sql(f"ALTER TABLE {t} DROP IF EXISTS PARTITION (dt = 'd9', h = 1)")
    assert len(_kinds(spark, t)) == snapshots
    with pytest.raises(AnalysisException, match="exists while it holds data"):
        spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt = 'd7', h = 1)")
    assert _rows(spark, t) == sorted(model)


@pytest.mark.parametrize(
    "props",
    ["", "TBLPROPERTIES ('primary-key' = 'id,dt,h', 'bucket' = '2')"],
    ids=["append", "primary-key"],
)
def test_truncate_partition_removes_only_that_partitions_rows(lake, props: str) -> None:  # type: ignore[no-untyped-def]
    """``TRUNCATE TABLE t PARTITION (...)`` as Paimon's connector: one OVERWRITE snapshot
    without that partition's files; other partitions, later writes and time travel before
    it are unchanged. A partial spec is refused in one line (Spark's own error)."""
    spark = lake
    t = "lakeskip.default.tp"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT NOT NULL, v STRING, dt STRING NOT NULL, h INT NOT NULL) "
        f"PARTITIONED BY (dt, h) {props}"
    )
    model = [(1, "a", "d1", 1), (2, "b", "d1", 2), (3, "c", "d2", 1), (4, "d", "d1", 1)]
    spark.sql(
        f"INSERT INTO {t} VALUES " + ", ".join(f"({i}, '{v}', '{d}', {h})" for i, v, d, h in model)
    )
    spark.sql(f"TRUNCATE TABLE {t} PARTITION (dt = 'd1', h = 1)")
    kept = [r for r in model if (r[2], r[3]) != ("d1", 1)]
    assert _rows(spark, t) == sorted(kept), "only that partition's rows are gone"
    assert _kinds(spark, t) == ["APPEND", "OVERWRITE"]
    with pytest.raises(Exception, match="does not support truncation of multiple partition"):
        spark.sql(f"TRUNCATE TABLE {t} PARTITION (dt = 'd1')")  # Spark's own one-line refusal
    assert _rows(spark, t) == sorted(kept) and len(_kinds(spark, t)) == 2, "nothing committed"
    spark.sql(f"INSERT INTO {t} VALUES (5, 'e', 'd1', 1)")
    assert _rows(spark, t) == sorted([*kept, (5, "e", "d1", 1)])
    assert _rows(spark, f"{t} VERSION AS OF 1") == sorted(model)


@pytest.mark.parametrize(
    "props",
    ["", "TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '2')"],
    ids=["append", "primary-key"],
)
def test_dynamic_partition_overwrite_replaces_only_the_partitions_written(lake, props: str) -> None:  # type: ignore[no-untyped-def]
    spark = lake
    t = "lakeskip.default.dyn"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT NOT NULL, v STRING, dt STRING NOT NULL) PARTITIONED BY (dt) {props}"
    )
    model = {(1, "a", "d1"), (2, "b", "d2"), (3, "c", "d3"), (4, "d", "d1")}
    spark.sql(f"INSERT INTO {t} VALUES " + ", ".join(f"({i}, '{v}', '{d}')" for i, v, d in model))

    def overwrite(rows: set[tuple[int, str, str]]) -> None:  # what dynamic overwrite means
        nonlocal model
        touched = {r[2] for r in rows}
        model = {r for r in model if r[2] not in touched} | rows

    key = "spark.sql.sources.partitionOverwriteMode"
    spark.conf.set(key, "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {t} SELECT * FROM VALUES (10, 'x', 'd1'), (11, 'y', 'd4')")
        overwrite({(10, "x", "d1"), (11, "y", "d4")})
        assert _rows(spark, t) == sorted(model)
        spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt) SELECT 12, 'z', 'd2'")
        overwrite({(12, "z", "d2")})
        assert _rows(spark, t) == sorted(model)
        spark.createDataFrame([(13, "w", "d3")], "id BIGINT, v STRING, dt STRING").writeTo(
            t
        ).overwritePartitions()
        overwrite({(13, "w", "d3")})
        assert _rows(spark, t) == sorted(model)
        before = len(_kinds(spark, t))
        spark.sql(f"INSERT OVERWRITE {t} SELECT * FROM {t} WHERE id < 0")  # no rows: no change
        assert _rows(spark, t) == sorted(model) and len(_kinds(spark, t)) == before
    finally:
        spark.conf.set(key, "static")
    # static mode keeps its meaning: the whole table
    spark.sql(f"INSERT OVERWRITE {t} SELECT 20, 's', 'd9'")
    assert _rows(spark, t) == [(20, "s", "d9")]


def test_persistent_view_over_a_lakeskip_table_reads_its_current_rows(lake) -> None:  # type: ignore[no-untyped-def]
    """Views live in the session catalog; Spark stores the view's text and resolves the
    lakeskip table at each read, so the view sees every later commit."""
    spark = lake
    spark.sql("CREATE TABLE lakeskip.default.vt (id BIGINT, k STRING)")
    spark.sql("INSERT INTO lakeskip.default.vt VALUES (1, 'a'), (2, 'b')")
    spark.sql(
        "CREATE OR REPLACE VIEW default.ddl_vt_view AS "
        "SELECT id, k FROM lakeskip.default.vt WHERE k <> 'z'"
    )
    try:
        assert _rows(spark, "default.ddl_vt_view") == [(1, "a"), (2, "b")]
        spark.sql("INSERT INTO lakeskip.default.vt VALUES (3, 'c'), (4, 'z')")
        spark.sql("DELETE FROM lakeskip.default.vt WHERE id = 1")
        assert _rows(spark, "default.ddl_vt_view") == [(2, "b"), (3, "c")]
    finally:
        spark.sql("DROP VIEW IF EXISTS default.ddl_vt_view")


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"  # Spark's own quoting, written here once more


def _answer(spark, query: str) -> list[tuple]:  # type: ignore[no-untyped-def,type-arg]
    return sorted((tuple(r) for r in spark.sql(query).collect()), key=repr)


def _lit(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# column names Spark accepts quoted: a backquote (alone, doubled, at the ends), quotes, a dot,
# spaces, a comma and parentheses, unicode; each also names the partition column and the
# columns added and renamed, and the table ("t " before it, a backquote or dot as "_")
_ODD_NAMES = ["a`b", "``", "it's", 'say "hi"', "a.b", "two words, (x)", "ünï 列"]


@pytest.mark.parametrize("name", _ODD_NAMES)
def test_odd_names_through_create_insert_select_alter_show_create(lake, name: str) -> None:  # type: ignore[no-untyped-def]
    """Every statement Spark users type with a quoted odd column name works on a lakeskip
    table and answers as Spark itself over the same rows (a temporary view of VALUES, no
    lakeskip); a table name lakeskip refuses (a backquote, a dot) is its typed error."""
    from pyspark.errors import AnalysisException

    spark = lake
    k, v, p, added, renamed = name, name + "_v", "p " + name, name + "+", "r " + name
    table = "t " + name.replace("`", "_").replace(".", "_")
    t = f"lakeskip.default.{_q(table)}"
    columns = f"({_q(k)} BIGINT NOT NULL COMMENT 'the key', {_q(v)} STRING, {_q(p)} STRING)"
    # Paimon's primary-key option is a comma-separated list: a name with a comma cannot be one
    keyed = "," not in name
    props = (
        " TBLPROPERTIES ('primary-key' = " + _lit(f"{k},{p}") + ", 'bucket' = '1')" if keyed else ""
    )
    spark.sql(f"CREATE TABLE {t} {columns} PARTITIONED BY ({_q(p)}){props}")
    if "`" in name or "." in name:
        with pytest.raises(AnalysisException, match=r"invalid table (name|identifier)"):
            spark.sql(f"CREATE TABLE lakeskip.default.{_q('t ' + name)} {columns}")
    rows = "(1, 'a', 'x'), (2, 'b', 'y'), (3, NULL, 'x')"
    spark.sql(f"INSERT INTO {t} VALUES {rows}")
    spark.sql(
        f"SELECT * FROM VALUES {rows} AS s({_q(k)}, {_q(v)}, {_q(p)})"
    ).createOrReplaceTempView("odd_oracle")
    query = f"SELECT {_q(k)}, {_q(v)} FROM {{}} WHERE {_q(p)} = 'x' AND {_q(k)} > 0"
    assert spark.table(t).columns == [k, v, p]
    assert _answer(spark, query.format(t)) == _answer(spark, query.format("odd_oracle"))
    assert _answer(spark, query.format(t)) == [(1, "a"), (3, None)]
    # ALTER: add, rename, write through the new names, drop
    spark.sql(f"ALTER TABLE {t} ADD COLUMN {_q(added)} INT")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN {_q(v)} TO {_q(renamed)}")
    spark.sql(
        f"INSERT INTO {t} ({_q(k)}, {_q(renamed)}, {_q(p)}, {_q(added)}) VALUES (4, 'd', 'x', 7)"
    )
    assert spark.table(t).columns == [k, renamed, p, added]
    got = _answer(spark, f"SELECT {_q(k)}, {_q(renamed)}, {_q(added)} FROM {t} WHERE {_q(p)} = 'x'")
    assert got == [(1, "a", None), (3, None, None), (4, "d", 7)]
    spark.sql(f"ALTER TABLE {t} DROP COLUMN {_q(added)}")
    assert spark.table(t).columns == [k, renamed, p]
    # SHOW CREATE TABLE's text recreates the table, same schema
    [[text]] = spark.sql(f"SHOW CREATE TABLE {t}").collect()
    copy = "t2" + table[1:]
    spark.sql(text.replace(_q(table), _q(copy), 1))
    wh_schema = spark.table(f"lakeskip.default.{_q(copy)}").schema
    assert wh_schema == spark.table(t).schema
    assert spark.table(f"lakeskip.default.{_q(copy)}").columns == [k, renamed, p]


@pytest.mark.parametrize("name", ["_SEQUENCE_NUMBER", "_VALUE_KIND", "rowkind", "_KEY_id"])
def test_a_column_name_paimon_refuses_is_a_typed_error(lake, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    """Paimon's ``SchemaValidation`` refuses its system column names on CREATE and ALTER;
    lakeskip refuses them too, with its typed error, before anything is written."""
    from lakeskip.catalog.catalog import Catalog
    from lakeskip.errors import InvalidArgumentError
    from lakeskip.types import BIGINT, Field, RowType

    spark = lake
    with pytest.raises(Exception, match="Paimon's") as e:
        spark.sql(f"CREATE TABLE lakeskip.default.bad ({_q(name)} BIGINT)")
    assert "\n" not in str(e.value).split("SQLSTATE")[0].strip(), "one line, no stack"
    assert not spark.catalog.tableExists("lakeskip.default.bad")
    spark.sql("CREATE TABLE lakeskip.default.ok (id BIGINT)")
    with pytest.raises(Exception, match="Paimon's"):
        spark.sql(f"ALTER TABLE lakeskip.default.ok ADD COLUMN {_q(name)} INT")
    with pytest.raises(Exception, match="Paimon's"):
        spark.sql(f"ALTER TABLE lakeskip.default.ok RENAME COLUMN id TO {_q(name)}")
    assert spark.table("lakeskip.default.ok").columns == ["id"]
    catalog = Catalog(str(tmp_path / "wh"))
    with pytest.raises(InvalidArgumentError, match="Paimon's"):
        catalog.create_table("default.bad", RowType((Field(0, name, BIGINT),)))


def test_key_and_partition_columns_are_top_level_names_as_written(lake, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """PRIMARY KEY and PARTITIONED BY name top-level columns as they are: a column named
    ``s.x`` is that column; the nested field ``s.x`` of a struct ``s`` is refused (it was
    joined into the name "s.x", so beside a column literally named so the table was keyed
    and partitioned by that other column, silently)."""
    from pyspark.errors import AnalysisException

    spark = lake
    columns = "s STRUCT<x: INT>, `s.x` INT NOT NULL, id BIGINT NOT NULL, v STRING"
    with pytest.raises(AnalysisException, match=r"PARTITIONED BY .* nested field s\.x") as e:
        spark.sql(f"CREATE TABLE lakeskip.default.n1 ({columns}) PARTITIONED BY (s.x)")
    assert "\n" not in str(e.value).split("SQLSTATE")[0].strip(), "one line, no stack"
    assert not spark.catalog.tableExists("lakeskip.default.n1")
    # Spark's SQL takes single names in PRIMARY KEY (...); a catalog API caller's constraint
    # may name a nested field (Expressions.column parses "s.x" into s, x)
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    constraints = jvm.org.apache.spark.sql.connector.catalog.constraints

    def keyed(name: str) -> dict[str, str]:
        refs = gateway.new_array(jvm.org.apache.spark.sql.connector.expressions.NamedReference, 1)
        refs[0] = jvm.org.apache.spark.sql.connector.expressions.Expressions.column(name)
        given = gateway.new_array(constraints.Constraint, 1)
        given[0] = constraints.Constraint.primaryKey("pk", refs).build()
        return dict(jvm.lakeskip.jvm.catalog.LakeOps.withPrimaryKey(jvm.java.util.HashMap(), given))

    with pytest.raises(Exception, match=r"PRIMARY KEY .* nested field s\.x"):
        keyed("s.x")
    assert keyed("`s.x`") == {"primary-key": "s.x"}
    t = "lakeskip.default.k"
    spark.sql(
        f"CREATE TABLE {t} ({columns}, PRIMARY KEY (id, `s.x`) NOT ENFORCED) "
        "PARTITIONED BY (`s.x`) TBLPROPERTIES ('bucket' = '1')"
    )
    from lakeskip.catalog.catalog import Catalog

    schema = Catalog(str(tmp_path / "wh")).get_table("default.k").schema
    assert list(schema.primary_keys) == ["id", "s.x"]
    assert list(schema.partition_keys) == ["s.x"]
    spark.sql(
        f"INSERT INTO {t} VALUES (named_struct('x', 9), 1, 1, 'a'), "
        "(named_struct('x', 9), 2, 1, 'b'), (named_struct('x', 8), 1, 1, 'c')"
    )
    got = _answer(spark, f"SELECT s.x, `s.x`, id, v FROM {t} WHERE id = 1")
    assert got == [(8, 1, 1, "c"), (9, 2, 1, "b")]  # key (id 1, `s.x` 1): its last version


@pytest.mark.parametrize("path", ["spark.sql", "Session.sql"])
def test_unset_a_quoted_key_holding_a_comma(spark, tmp_path: Path, path: str) -> None:  # type: ignore[no-untyped-def]
    """``UNSET TBLPROPERTIES ('fields.a,b.stats-mode')`` (column ``a,b``) removes that one key,
    not those of columns ``a`` and ``b``; SET of such a key keeps it whole. Oracle: the
    options as written down, by hand."""
    import lakeskip

    s = lakeskip.connect(str(tmp_path / "wh"), spark=spark)
    run = spark.sql if path == "spark.sql" else s.sql
    t = "lakeskip.default.uc" if path == "spark.sql" else "uc"
    ab, a, b, c = (f"fields.{n}.stats-mode" for n in ("a,b", "a", "b", "c, d"))
    run(
        f"CREATE TABLE {t} (`a,b` BIGINT, a BIGINT, b BIGINT, `c, d` INT) "
        f"TBLPROPERTIES ('{ab}' = 'full', '{a}' = 'none', '{b}' = 'counts')"
    )
    run(f"ALTER TABLE {t} SET TBLPROPERTIES ('{c}' = 'truncate(4)')")

    def options() -> dict[str, str]:
        got = s.catalog.get_table("default.uc").schema.options
        return {k: v for k, v in got.items() if k.startswith("fields.")}

    assert options() == {ab: "full", a: "none", b: "counts", c: "truncate(4)"}
    run(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('{ab}')")
    assert options() == {a: "none", b: "counts", c: "truncate(4)"}
    run(f"ALTER TABLE {t} UNSET TBLPROPERTIES IF EXISTS ('{c}', 'fields.no,such.stats-mode')")
    assert options() == {a: "none", b: "counts"}
    shown = {r[0]: r[1] for r in spark.sql("SHOW TBLPROPERTIES lakeskip.default.uc").collect()}
    assert {k: v for k, v in shown.items() if k.startswith("fields.")} == options()
