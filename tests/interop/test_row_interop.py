"""ROW (STRUCT) columns between lakeskip, Apache Paimon 0.9.0 (Java) and pypaimon 2.1
(issue 28 item 4): tables written by every lakeskip writer -- Session.sql INSERT, plain
spark.sql INSERT, DataFrame writeTo / insertInto / saveAsTable, Session.write, CTAS through
both front ends, compaction, a primary-key table with a ROW value column -- are read back by
Paimon and pypaimon with the same rows; Paimon numbers the nested fields of the same CREATE
exactly as lakeskip does, and keeps the same stats for them.

Paimon 0.9's Parquet reader cannot read a ROW nested in a ROW under a NULL outer row
(ArrayIndexOutOfBoundsException in HeapLongVector), and reads a ROW whose fields are all NULL as
a NULL ROW -- on files Paimon 0.9 wrote itself just as on ours (checked below). So the tables
of the writer test have NULL outer rows nowhere and all-NULL rows nowhere; pypaimon reads
both cases from our files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.interop.test_pypaimon import pypaimon_python, run_pypaimon  # noqa: F401

pytestmark = pytest.mark.interop

ST = "x INT, y STRING, z ROW<a BIGINT, b ARRAY<INT>>"

READ_SCRIPT = """
    import json, sys
    from pypaimon import CatalogFactory
    cat = CatalogFactory.create({"warehouse": sys.argv[1]})
    out = {}
    for name in sys.argv[2:]:
        rb = cat.get_table(name).new_read_builder()
        out[name] = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    print(json.dumps(out, default=str))
"""


def _row(i: int, outer_null: bool = False) -> str:
    if outer_null and i % 7 == 3:
        return f"({i}, NULL)"
    x = "CAST(NULL AS INT)" if i % 5 == 4 else str(i % 4)
    z = "NULL" if i % 6 == 5 else f"named_struct('a', {i * 10}, 'b', array({i}, NULL, {i + 1}))"
    return f"({i}, named_struct('x', {x}, 'y', 'y{i}', 'z', {z}))"


def _value(i: int) -> dict[str, Any] | None:
    """Row i's ``st`` as :func:`_row` (outer_null) writes it."""
    if i % 7 == 3:
        return None
    z = None if i % 6 == 5 else {"a": i * 10, "b": [i, None, i + 1]}
    return {"x": None if i % 5 == 4 else i % 4, "y": f"y{i}", "z": z}


def _as_list(v: Any) -> Any:
    """A ROW value as PaimonProbe's write op takes it: a list of field values."""
    if isinstance(v, dict):
        return [_as_list(x) for x in v.values()]
    return v


def _values(ids: range) -> str:
    return ", ".join(_row(i) for i in ids)


def _java_text(v: Any, top: bool = True) -> str | None:
    """A value as PaimonProbe prints it: ROW {a,b}, ARRAY [a,b], nested null as "null"."""
    if v is None:
        return None if top else "null"
    if isinstance(v, dict):
        return "{" + ",".join(str(_java_text(x, False)) for x in v.values()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(str(_java_text(x, False)) for x in v) + "]"
    return str(v)


def _dicts(session: Any, table: str) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in session.sql(f"SELECT * FROM {table}").collect()]


def _key(rows: list[Any]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def test_row_tables_from_every_writer_read_by_paimon_and_pypaimon(
    session: Any,
    spark: Any,
    paimon_java: Any,
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    wh = tmp_path / "warehouse"
    cat = session.catalog_name
    session.sql(f"CREATE TABLE t (id INT, st ROW<{ST}>)")
    session.sql(f"INSERT INTO t VALUES {_values(range(0, 4))}")
    spark.sql(f"INSERT INTO {cat}.default.t VALUES {_values(range(4, 8))}")

    def df(ids: range) -> Any:
        return spark.sql(f"SELECT * FROM VALUES {_values(ids)} AS v(id, st)")

    df(range(8, 10)).writeTo(f"{cat}.default.t").append()
    df(range(10, 12)).write.insertInto(f"{cat}.default.t")
    df(range(12, 14)).write.mode("append").saveAsTable(f"{cat}.default.t")
    session.write(df(range(14, 16)), "default.t")
    session.sql("CREATE TABLE c1 AS SELECT * FROM t")
    spark.sql(f"CREATE TABLE {cat}.default.c2 AS SELECT * FROM {cat}.default.t")
    session.sql("CALL sys.compact(table => 'c1')")
    session.sql(
        "CREATE TABLE p (id INT, st STRUCT<x: INT, y: STRING, z: STRUCT<a: BIGINT, b: "
        "ARRAY<INT>>>, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket'='2')"
    )
    session.sql(f"INSERT INTO p VALUES {_values(range(0, 12))}")
    spark.sql(
        f"INSERT INTO {cat}.default.p SELECT id + 6, st FROM VALUES {_values(range(0, 12))} AS v(id, st)"
    )
    tables = ["default.t", "default.c1", "default.c2", "default.p"]
    ours = {name: _dicts(session, name) for name in tables}
    assert len(ours["default.t"]) == 16 and len(ours["default.p"]) == 18
    assert _key(ours["default.c1"]) == _key(ours["default.c2"]) == _key(ours["default.t"])

    results = paimon_java(wh, *({"op": "read", "table": n, "queries": []} for n in tables))
    for name, result in zip(tables, results, strict=True):
        want = sorted(([_java_text(v) for v in r.values()] for r in ours[name]), key=repr)
        assert sorted(result["rows"], key=repr) == want, f"Paimon 0.9 reads other rows of {name}"
    got = run_pypaimon(pypaimon_python, READ_SCRIPT, str(wh), *tables)
    for name in tables:
        assert _key(got[name]) == _key(ours[name]), f"pypaimon reads other rows of {name}"

    # Paimon numbers the nested fields of the same columns exactly as lakeskip does
    st_type = session.catalog.get_table("default.t").schema.row_type.field("st").type
    paimon_java(
        wh,
        {
            "op": "create",
            "table": "db.made",
            "fields": [["id", "INT"], ["st", st_type.to_paimon_json()]],
            "options": {},
        },
    )
    made = json.loads((wh / "db.db" / "made" / "schema" / "schema-0").read_text())
    mine = json.loads((wh / "default.db" / "t" / "schema" / "schema-0").read_text())
    assert made["fields"] == mine["fields"]
    assert made["highestFieldId"] == mine["highestFieldId"] == 6


def test_nested_nulls_stats_and_paimon_09s_nested_reader(
    session: Any,
    paimon_java: Any,
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    wh = tmp_path / "warehouse"
    # flat ROW with NULL rows and NULL fields: Paimon 0.9 and pypaimon read it
    session.sql("CREATE TABLE f (id INT, st ROW<x INT, y STRING>)")
    session.sql(
        "INSERT INTO f VALUES (1, named_struct('x', 1, 'y', 'a')), (2, NULL), "
        "(3, named_struct('x', CAST(NULL AS INT), 'y', NULL))"
    )
    # a nested ROW under NULL outer rows, one file, and the same rows written by Paimon
    session.sql(f"CREATE TABLE n (id INT, st ROW<{ST}>)")
    session.sql(
        f"INSERT INTO n SELECT /*+ REPARTITION(1) */ * FROM VALUES "
        f"{', '.join(_row(i, outer_null=True) for i in range(8))} AS v(id, st)"
    )
    ours_n = _dicts(session, "default.n")
    want = [{"id": i, "st": _value(i)} for i in range(8)]
    assert _key(ours_n) == _key(want)
    st_type = session.catalog.get_table("default.n").schema.row_type.field("st").type
    paimon_java(
        wh,
        {
            "op": "create",
            "table": "db.n",
            "fields": [["id", "INT"], ["st", st_type.to_paimon_json()]],
            "options": {},
        },
        {
            "op": "write",
            "table": "db.n",
            "rows": [[r["id"], _as_list(r["st"])] for r in want],
        },
    )
    # the same stats as Paimon's for the ROW column: min, max and null count all null
    (ours,) = session.catalog.get_table("default.n").scan_files()
    (theirs,) = session.catalog.get_table("db.n").scan_files()
    assert ours.file.value_stats.null_counts == (0, None)
    if paimon_java.release < (1, 0):
        assert ours.file.value_stats == theirs.file.value_stats
    else:
        # Paimon >= 1.0 stores dense stats (``_VALUE_STATS_COLS``): the ROW column, which has
        # none, is left out rather than stored as nulls; the same stats either way
        assert theirs.file.value_stats_cols == ("id",)
        assert theirs.file.value_stats.null_counts == ours.file.value_stats.null_counts[:1]

    # Paimon reads our flat ROW file exactly as its own file of the same rows (0.9 reads both
    # ROWs whose fields are all NULL as a NULL ROW: a quirk of its nested Parquet reader)
    f_type = session.catalog.get_table("default.f").schema.row_type.field("st").type
    _, _, ours_f, theirs_f = paimon_java(
        wh,
        {
            "op": "create",
            "table": "db.f",
            "fields": [["id", "INT"], ["st", f_type.to_paimon_json()]],
            "options": {},
        },
        {"op": "write", "table": "db.f", "rows": [[1, [1, "a"]], [2, None], [3, [None, None]]]},
        {"op": "read", "table": "default.f", "queries": []},
        {"op": "read", "table": "db.f", "queries": []},
    )
    assert sorted(ours_f["rows"], key=repr) == sorted(theirs_f["rows"], key=repr)
    # 2.0 reads row 3 as it is, a ROW of two NULL fields
    three = None if paimon_java.release < (1, 0) else "{null,null}"
    assert sorted(ours_f["rows"], key=repr) == [["1", "{1,a}"], ["2", None], ["3", three]]
    # (pypaimon 2.1 cannot read Paimon 0.9's own manifests: no _VALUE_STATS_COLS field)
    got = run_pypaimon(pypaimon_python, READ_SCRIPT, str(wh), "default.f", "default.n")
    assert _key(got["default.f"]) == _key(_dicts(session, "default.f"))
    assert _key(got["default.n"]) == _key(ours_n), "pypaimon reads our nested NULL rows"
    if paimon_java.release >= (1, 0):
        # the newest Paimon reads a nested ROW under a NULL outer row, ours as its own
        for name in ("db.n", "default.n"):
            (got_n,) = paimon_java(wh, {"op": "read", "table": name, "queries": []})
            expected = sorted(([_java_text(v) for v in r.values()] for r in want), key=repr)
            assert sorted(got_n["rows"], key=repr) == expected, name
        return
    # Paimon 0.9 fails on a nested ROW under a NULL outer row, its own file as ours
    for name in ("db.n", "default.n"):
        with pytest.raises(AssertionError, match="ArrayIndexOutOfBoundsException"):
            paimon_java(wh, {"op": "read", "table": name, "queries": []})
