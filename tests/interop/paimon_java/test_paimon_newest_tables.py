"""More table kinds written by the newest Apache Paimon (2.0.0, Java API; see ``conftest.py``),
read, pruned and written by lakeskip, then read again by Paimon -- the kinds the connector test
(``test_paimon_spark_connector.py``, which needs a locally built connector) covers, here without
the connector, so they run in ``make test-interop``:

* an unaware-bucket, partitioned append table with all four of Paimon's value indexes (bloom
  filter, bitmap, BSI, range-bitmap), embedded in the manifests or in ``.index`` files;
* an append table with deletion vectors that Paimon wrote (its ``BaseAppendDeleteFileMaintainer``,
  as its Spark DELETE does), merged with lakeskip's own;
* a primary-key table with ``sequence.field``, fixed and dynamic bucket;
* ROW / ARRAY / MAP columns, append and primary key; and the other way, a lakeskip table with
  them read by Paimon 2.0.0.

Every read is checked against rows kept here in plain Python (the oracle); the files that hold
a predicate's rows are found by reading each data file with pyarrow and filtering in Python, so
pruning is checked never to drop one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.interop.reads import java_rows, lakeskip_rows, text_rows

from lakeskip.expressions import (
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)
from lakeskip.planner.scan import ScanPlanner
from lakeskip.types import parse_sql_type

pytestmark = pytest.mark.interop

Row = list[Any]
Match = Callable[[dict[str, Any]], bool]

# -- append table with Paimon's four value indexes ------------------------------------------

APPEND_FIELDS = [
    ["id", "BIGINT"], ["s", "STRING"], ["b", "INT"], ["n", "BIGINT"], ["v", "INT"], ["dt", "STRING"]
]  # fmt: skip
APPEND_INDEXES = {
    "file-index.bloom-filter.columns": "s",
    "file-index.bloom-filter.s.items": "40",
    "file-index.bitmap.columns": "b",
    "file-index.bsi.columns": "n",
    "file-index.range-bitmap.columns": "v",
}


def _q(op: str, col: str, *values: Any) -> dict[str, Any]:
    return {"op": op, "col": col, "values": list(values)}


# (Paimon probe predicate, lakeskip's expression, the oracle's test of a row); every file holds
# the rows of both extremes, so min/max stats prune none of these
QUERIES: list[tuple[dict[str, Any], BooleanExpression, Match]] = [
    (_q("eq", "s", "k213"), EqualTo("s", "k213"), lambda r: r["s"] == "k213"),
    (_q("in", "s", "k102", "k305"), In("s", ["k102", "k305"]), lambda r: r["s"] in ("k102", "k305")),
    (_q("eq", "b", 17), EqualTo("b", 17), lambda r: r["b"] == 17),
    (_q("in", "b", 3, 31), In("b", [3, 31]), lambda r: r["b"] in (3, 31)),
    (_q("eq", "n", 2105), EqualTo("n", 2105), lambda r: r["n"] == 2105),
    (_q("lt", "n", 1010), LessThan("n", 1010), lambda r: r["n"] < 1010),
    (_q("gt", "n", 3110), GreaterThan("n", 3110), lambda r: r["n"] > 3110),
    (
        {"and": [_q("ge", "n", 2100), _q("le", "n", 2103)]},
        And(GreaterThanOrEqual("n", 2100), LessThanOrEqual("n", 2103)),
        lambda r: 2100 <= r["n"] <= 2103,
    ),
    (_q("eq", "v", 215), EqualTo("v", 215), lambda r: r["v"] == 215),
    (
        {"and": [_q("ge", "v", 300), _q("le", "v", 305)]},
        And(GreaterThanOrEqual("v", 300), LessThanOrEqual("v", 305)),
        lambda r: 300 <= r["v"] <= 305,
    ),
    (
        {"and": [_q("eq", "dt", "p1"), _q("eq", "s", "k213")]},
        And(EqualTo("dt", "p1"), EqualTo("s", "k213")),
        lambda r: r["dt"] == "p1" and r["s"] == "k213",
    ),
]  # fmt: skip


def _append_rows(f: int) -> list[Row]:
    """Write f: one file per partition p0 / p1, each with the shared extremes."""
    rows: list[Row] = []
    for p in (0, 1):
        base = f * 100 + p * 50
        rows += [
            [base + j, f"k{f}{p}{j % 6}", 10 * f + 5 * p + j % 5, 1000 * f + 100 * p + j,
             100 * f + 10 * p + j % 10, f"p{p}"]
            for j in range(18)
        ]  # fmt: skip
        rows += [[base + 18, "a", 0, 0, 0, f"p{p}"], [base + 19, "z", 999, 99_999, 10_000, f"p{p}"]]
    return rows


def _file_rows(files: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each live data file's rows in file order (deleted ones too), read with pyarrow: the
    oracle of which file holds what."""
    out = {}
    for f in files:
        bucket_dir = "/" + f["bucket_path"].removeprefix("file:").lstrip("/")
        out[f["file"]] = pq.read_table(Path(bucket_dir) / f["file"]).to_pylist()
    return out


def _kept(session: Any, table: str, expr: BooleanExpression) -> list[str]:
    t = session.catalog.get_table(table)
    return sorted(e.file.file_name for e in ScanPlanner(t).plan(expr).files)


def _read_op(table: str) -> dict[str, Any]:
    return {"op": "read", "table": table, "queries": [q for q, _, _ in QUERIES]}


def _check_append(
    session: Any, paimon: Any, wh: Path, name: str, expected: list[Row], step: str
) -> list[dict[str, Any]]:
    files, result = paimon(wh, {"op": "files", "table": name}, _read_op(name))
    text = text_rows(expected)
    assert text_rows(result["rows"]) == text, f"{step}: Paimon reads other rows"
    assert lakeskip_rows(session, f"SELECT * FROM {name}") == text, f"{step}: lakeskip's rows"
    by_file = _file_rows(files)
    assert sum(len(r) for r in by_file.values()) == len(expected)
    for (query, expr, match), got in zip(QUERIES, result["results"], strict=True):
        mine = _kept(session, name, expr)
        holding = {f for f, rows in by_file.items() if any(match(r) for r in rows)}
        assert holding <= set(mine), f"{step}: lakeskip skips {holding - set(mine)} for {query}"
        # Paimon's "kept": its plan (stats, embedded indexes) then its reader (.index files)
        assert got["kept"] == mine, (
            f"{step}: for {query} Paimon keeps {got['kept']}, lakeskip {mine}"
        )
        if len(holding) < len(files):  # the extremes are in every file: n < 1010 keeps all
            assert len(mine) < len(files), f"{step}: {query} pruned nothing"
    return files


@pytest.mark.parametrize("threshold", ["1 mb", "1 b"], ids=["embedded", "index-files"])
def test_lakeskip_prunes_and_writes_a_newest_paimon_append_table_with_four_indexes(
    session: Any, paimon_newest: Any, tmp_path: Path, threshold: str
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.ap"
    create = {
        "op": "create",
        "table": name,
        "fields": APPEND_FIELDS,
        "partition": ["dt"],
        "options": {
            "bucket": "-1",
            **APPEND_INDEXES,
            "file-index.in-manifest-threshold": threshold,
        },
    }
    expected = [r for f in range(4) for r in _append_rows(f)]
    writes = [{"op": "write", "table": name, "rows": _append_rows(f)} for f in range(4)]
    paimon_newest(wh, create, *writes)
    files = _check_append(session, paimon_newest, wh, name, expected, "written by Paimon 2.0")
    assert len(files) == 8
    if threshold == "1 b":
        assert all(f["extra"] and not f["embedded"] for f in files), "Paimon wrote .index files"
    else:
        assert all(f["embedded"] and not f["extra"] for f in files), "embedded containers"

    # lakeskip's containers are Paimon 2.0's, byte for byte (bloom, bitmap, BSI, range-bitmap)
    r = session.sql(f"CALL sys.rewrite_file_index('{name}')").collect()[0]
    assert (r["files_rewritten"], r["files_unchanged"]) == (0, 8)

    # lakeskip writes: INSERT, DELETE, compaction; Paimon reads and prunes the result alike
    mine = _append_rows(5)
    values = ", ".join(f"({i}, '{s}', {b}, {n}, {v}, '{dt}')" for i, s, b, n, v, dt in mine)
    session.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")
    expected += mine
    files = _check_append(session, paimon_newest, wh, name, expected, "after lakeskip's INSERT")
    assert len(files) == 10
    if threshold == "1 b":
        assert all(f["extra"] for f in files), "lakeskip wrote .index files as the table says"
    session.sql(f"DELETE FROM {name} WHERE v BETWEEN 100 AND 105 OR s = 'k213'")
    expected = [r for r in expected if not (100 <= r[4] <= 105 or r[1] == "k213")]
    _check_append(session, paimon_newest, wh, name, expected, "after lakeskip's DELETE")
    session.sql(f"CALL sys.compact(table => '{name}')")
    files = _check_append(session, paimon_newest, wh, name, expected, "after lakeskip's compact")
    more = _append_rows(6)
    paimon_newest(wh, {"op": "write", "table": name, "rows": more})
    _check_append(session, paimon_newest, wh, name, expected + more, "a Paimon write after")


# -- append table with Paimon's deletion vectors ---------------------------------------------

DV_FIELDS = [["id", "BIGINT"], ["s", "STRING"], ["dt", "STRING"]]


def _dv_rows(f: int) -> list[Row]:
    return [[f * 100 + p * 50 + j, f"s{f}{p}{j}", f"p{p}"] for p in (0, 1) for j in range(30)]


@pytest.mark.parametrize("bucket", ["-1", "2"], ids=["unaware-bucket", "fixed-bucket"])
def test_lakeskip_reads_and_extends_newest_paimon_append_deletion_vectors(
    session: Any, paimon_newest: Any, tmp_path: Path, bucket: str
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.dv"
    options = {"bucket": bucket, "deletion-vectors.enabled": "true"}
    if bucket != "-1":
        options["bucket-key"] = "id"
    create = {"op": "create", "table": name, "fields": DV_FIELDS, "partition": ["dt"],
              "options": options}  # fmt: skip
    *_, files = paimon_newest(
        wh,
        create,
        *({"op": "write", "table": name, "rows": _dv_rows(f)} for f in range(2)),
        {"op": "files", "table": name},
    )

    def paimon_deletes(files: list[dict[str, Any]], gone: Callable[[int], bool]) -> set[int]:
        """Paimon deletes, through its own deletion vectors, the rows whose id ``gone`` takes."""
        by_file = _file_rows(files)
        positions = {
            f: [i for i, r in enumerate(rows) if gone(r["id"])] for f, rows in by_file.items()
        }
        positions = {f: p for f, p in positions.items() if p}
        (n,) = paimon_newest(wh, {"op": "delete_positions", "table": name, "deletes": positions})
        assert n == len(positions) > 1
        return {r["id"] for rows in by_file.values() for r in rows if gone(r["id"])}

    expected = {r[0]: r for f in range(2) for r in _dv_rows(f)}
    for i in paimon_deletes(files, lambda i: i % 7 == 0):
        expected.pop(i)

    def check(step: str) -> None:
        text = text_rows(expected.values())
        assert java_rows(paimon_newest, wh, name) == text, f"{step}: Paimon's rows"
        assert lakeskip_rows(session, f"SELECT * FROM {name}") == text, f"{step}: lakeskip's rows"

    (files,) = paimon_newest(wh, {"op": "files", "table": name})
    assert sum(1 for f in files if f["dv"]) > 1, f"Paimon wrote no deletion vector: {files}"
    check("Paimon's deletion vectors")
    session.sql(f"DELETE FROM {name} WHERE id % 5 = 0 OR s = 's1017'")
    expected = {i: r for i, r in expected.items() if i % 5 != 0 and r[1] != "s1017"}
    check("lakeskip's DELETE over Paimon's vectors")
    session.sql(f"INSERT INTO {name} VALUES (900, 's900', 'p0'), (901, 's901', 'p1')")
    expected |= {900: [900, "s900", "p0"], 901: [901, "s901", "p1"]}
    check("lakeskip's INSERT")
    (files,) = paimon_newest(wh, {"op": "files", "table": name})
    for i in paimon_deletes(files, lambda i: i % 3 == 0 and i in expected):
        expected.pop(i)
    check("Paimon's deletion vectors merged with lakeskip's")
    session.sql(f"CALL sys.compact(table => '{name}')")
    check("lakeskip's compaction")


# -- primary key with sequence.field ---------------------------------------------------------

SEQ_FIELDS = [["id", "BIGINT"], ["dt", "STRING"], ["ts", "BIGINT"], ["v", "STRING"]]


@pytest.mark.parametrize("bucket", ["2", "-1"], ids=["fixed-bucket", "dynamic-bucket"])
def test_lakeskip_reads_and_writes_a_newest_paimon_sequence_field_table(
    session: Any, paimon_newest: Any, tmp_path: Path, bucket: str
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.sq"
    create = {
        "op": "create",
        "table": name,
        "fields": SEQ_FIELDS,
        "partition": ["dt"],
        "options": {"primary-key": "dt,id", "bucket": bucket, "sequence.field": "ts"},
    }
    # versions out of ts order across writes, and within one write
    writes = [
        [[i, f"p{i % 2}", 10 * i % 17, f"a{i}"] for i in range(20)],
        [[i, f"p{i % 2}", (7 * i) % 13, f"b{i}"] for i in range(0, 30, 2)],
        [[i, f"p{i % 2}", 5, f"c{i}"] for i in range(0, 30, 3)]
        + [[i, f"p{i % 2}", 20, f"d{i}"] for i in range(0, 30, 9)],
    ]
    expected: dict[int, Row] = {}

    def apply(rows: list[Row]) -> None:
        for r in rows:  # the larger ts wins; an equal ts: the later write
            old = expected.get(r[0])
            if old is None or r[2] >= old[2]:
                expected[r[0]] = r

    for w in writes:
        apply(w)
    *_, files = paimon_newest(
        wh,
        create,
        *({"op": "write", "table": name, "rows": w} for w in writes),
        {"op": "files", "table": name},
    )
    assert len(files) > 4, "several sorted runs"

    def check(step: str) -> None:
        text = text_rows(expected.values())
        assert java_rows(paimon_newest, wh, name) == text, f"{step}: Paimon's rows"
        assert lakeskip_rows(session, f"SELECT * FROM {name}") == text, f"{step}: lakeskip's rows"

    check("written by Paimon 2.0")
    ours = [[i, f"p{i % 2}", 12 if i % 4 else 1, f"l{i}"] for i in range(10, 40, 2)]
    values = ", ".join(f"({i}, '{dt}', {ts}, '{v}')" for i, dt, ts, v in ours)
    session.sql(f"INSERT INTO {name} VALUES {values}")
    apply(ours)
    check("lakeskip's INSERT (lower ts ignored)")
    session.sql(f"CALL sys.compact(table => '{name}')")
    check("lakeskip's compaction")
    again = [[i, f"p{i % 2}", 13, f"e{i}"] for i in range(0, 40, 5)]
    paimon_newest(wh, {"op": "write", "table": name, "rows": again})
    apply(again)
    check("a Paimon write after lakeskip's")


# -- ROW / ARRAY / MAP -----------------------------------------------------------------------

NESTED_SQL = "id BIGINT, r ROW<a INT, b STRING>, arr ARRAY<INT>, m MAP<STRING, INT>"


def _nested_fields() -> list[list[Any]]:
    return [
        ["id", "BIGINT"],
        ["r", parse_sql_type("ROW<a INT, b STRING>").to_paimon_json()],
        ["arr", parse_sql_type("ARRAY<INT>").to_paimon_json()],
        ["m", parse_sql_type("MAP<STRING, INT>").to_paimon_json()],
    ]


def _nested(i: int, tag: str) -> Row:
    """Row i: NULLs inside and at the top of each nested column now and then."""
    r = None if i % 7 == 3 else [None if i % 5 == 4 else i, f"{tag}{i}"]
    arr = None if i % 6 == 5 else [i, None, i + 1]
    m = None if i % 8 == 6 else [[f"x{i}", i], ["y", None if i % 3 == 0 else -i]]
    return [i, r, arr, m]


def _java_text(v: Any, top: bool = True) -> str | None:
    """A value as PaimonProbe prints it: ROW {a,b}, ARRAY [a,b], MAP {k=v} (entries sorted),
    nested null "null"."""
    if v is None:
        return None if top else "null"
    if isinstance(v, dict):
        entries = sorted(f"{_java_text(k, False)}={_java_text(x, False)}" for k, x in v.items())
        return "{" + ",".join(entries) + "}"
    if isinstance(v, tuple):  # a pyspark Row
        return "{" + ",".join(str(_java_text(x, False)) for x in v) + "}"
    if isinstance(v, list):
        return "[" + ",".join(str(_java_text(x, False)) for x in v) + "]"
    return str(v)


def _oracle_text(rows: list[Row]) -> list[list[str | None]]:
    """The probe's text of rows written as :func:`_nested` makes them."""
    out = []
    for i, r, arr, m in rows:
        out.append([
            str(i),
            None if r is None else _java_text(tuple(r)),
            _java_text(arr),
            None if m is None else _java_text(dict(m)),
        ])  # fmt: skip
    return sorted(out, key=repr)


def _field_ids(path: Path) -> dict[str, int | None]:
    """Every field's Parquet field id by dotted path (nested fields too), as pyarrow reads the
    file's schema back."""
    out: dict[str, int | None] = {}

    def walk(prefix: str, f: pa.Field) -> None:
        name = prefix + f.name
        raw = (f.metadata or {}).get(b"PARQUET:field_id")
        out[name] = None if raw is None else int(raw)
        t = f.type
        if pa.types.is_map(t):
            walk(name + ".", t.key_field)
            walk(name + ".", t.item_field)
        elif pa.types.is_list(t):
            walk(name + ".", t.value_field)
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(name + ".", t.field(i))

    for f in pq.read_schema(path):
        walk("", f)
    return out


def _data_files(paimon: Any, wh: Path, name: str) -> set[Path]:
    (files,) = paimon(wh, {"op": "files", "table": name})
    return {
        Path("/" + f["bucket_path"].removeprefix("file:").lstrip("/")) / f["file"] for f in files
    }


def _lakeskip_text(session: Any, name: str) -> list[list[str | None]]:
    return sorted(
        ([_java_text(v) for v in row] for row in session.sql(f"SELECT * FROM {name}").collect()),
        key=repr,
    )


def _sql_value(row: Row) -> str:
    i, r, arr, m = row
    rs = "NULL" if r is None else f"named_struct('a', {'NULL' if r[0] is None else r[0]}, 'b', '{r[1]}')"  # fmt: skip
    arrs = "NULL" if arr is None else "array(" + ", ".join("NULL" if x is None else str(x) for x in arr) + ")"  # fmt: skip
    ms = (
        "NULL"
        if m is None
        else "map(" + ", ".join(f"'{k}', {'CAST(NULL AS INT)' if v is None else v}" for k, v in m) + ")"
    )  # fmt: skip
    return f"({i}, {rs}, CAST({arrs} AS ARRAY<INT>), {ms})"


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_lakeskip_reads_and_writes_newest_paimon_row_array_map_columns(
    session: Any, paimon_newest: Any, tmp_path: Path, primary_key: bool
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.nest"
    options = {"primary-key": "id", "bucket": "2"} if primary_key else {}
    create = {"op": "create", "table": name, "fields": _nested_fields(), "options": options}
    first = [_nested(i, "a") for i in range(24)]
    second = [_nested(i, "b") for i in range(16, 40)]
    paimon_newest(
        wh,
        create,
        {"op": "write", "table": name, "rows": first},
        {"op": "write", "table": name, "rows": second},
    )
    expected: dict[int, Row] = {}
    rows: list[Row] = []

    def add(new: list[Row]) -> None:
        nonlocal rows
        if primary_key:
            expected.update({r[0]: r for r in new})
            rows = list(expected.values())
        else:
            rows = rows + new

    add(first)
    add(second)

    def check(step: str) -> None:
        want = _oracle_text(rows)
        assert java_rows(paimon_newest, wh, name) == want, f"{step}: Paimon's rows"
        assert _lakeskip_text(session, name) == want, f"{step}: lakeskip's rows"

    check("written by Paimon 2.0")
    paimons = _data_files(paimon_newest, wh, name)
    ours = [_nested(i, "l") for i in range(30, 50, 3)]
    session.sql(f"INSERT INTO {name} VALUES {', '.join(_sql_value(r) for r in ours)}")
    add(ours)
    check("lakeskip's INSERT")
    # lakeskip's files carry the Parquet field ids Paimon's writer gives the same columns
    # (nested fields, key-value system columns); Paimon read them back just above
    lakeskips = _data_files(paimon_newest, wh, name) - paimons
    want = _field_ids(min(paimons))
    assert lakeskips and all(v is not None for v in want.values()), want
    assert all(_field_ids(p) == want for p in paimons), "Paimon's own files differ"
    for p in lakeskips:
        assert _field_ids(p) == want, f"{p.name}: Parquet field ids"
    session.sql(f"DELETE FROM {name} WHERE id % 4 = 1")
    rows = [r for r in rows if r[0] % 4 != 1]
    expected = {k: r for k, r in expected.items() if k % 4 != 1}
    check("lakeskip's DELETE")
    session.sql(f"CALL sys.compact(table => '{name}')")
    check("lakeskip's compaction")


def test_newest_paimon_reads_a_lakeskip_map_table(
    session: Any, paimon_newest: Any, tmp_path: Path
) -> None:
    """The other way: a table lakeskip creates and writes, with a MAP beside ROW and ARRAY (the
    ROW / ARRAY tables of ``test_row_interop.py`` run against both releases already)."""
    wh = tmp_path / "warehouse"
    session.sql(f"CREATE TABLE mt ({NESTED_SQL})")
    rows = [_nested(i, "a") for i in range(20)]
    session.sql(f"INSERT INTO mt VALUES {', '.join(_sql_value(r) for r in rows[:10])}")
    session.sql(f"INSERT INTO mt VALUES {', '.join(_sql_value(r) for r in rows[10:])}")
    want = _oracle_text(rows)
    assert _lakeskip_text(session, "default.mt") == want
    assert java_rows(paimon_newest, wh, "default.mt") == want, "Paimon 2.0 reads lakeskip's MAPs"
    session.sql("CALL sys.compact(table => 'mt')")
    assert java_rows(paimon_newest, wh, "default.mt") == want, "after lakeskip's compaction"
