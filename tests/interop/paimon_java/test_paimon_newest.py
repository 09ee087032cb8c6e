"""Tables written by the newest Apache Paimon (2.0.0, Java API; see ``conftest.py``), read, pruned
and written by lakeskip, then read again by Paimon.

* An append table with all three of Paimon's value indexes (bloom filter, bitmap, range-bitmap)
  in fixed buckets, compacted by Paimon: lakeskip reads its rows, keeps exactly the files
  Paimon keeps for every predicate (range predicates through Paimon's range-bitmap), rebuilds
  byte-identical containers, then INSERTs, DELETEs and compacts; Paimon reads lakeskip's rows
  and still prunes the same files.
* A primary-key table with deletion vectors, upserted and deleted by Paimon and compacted by
  its lookup compaction (DV index files written by Paimon): lakeskip reads its rows, then
  upserts, DELETEs and compacts it; Paimon reads lakeskip's rows after each step.

0.9 has no range-bitmap index, so these run against the newest release only; the tests they
generalise (``test_paimon_java*.py``, ``test_*_interop.py``) run against both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

pytestmark = pytest.mark.interop

# (Paimon probe predicate, the same predicate for lakeskip's planner); every file holds the
# rows v = 0 and v = 1000 and s = 'a' and s = 'z', so min/max stats prune none of these
QUERIES: list[tuple[dict[str, Any], BooleanExpression]] = [
    ({"op": "eq", "col": "s", "values": ["k12"]}, EqualTo("s", "k12")),
    ({"op": "in", "col": "s", "values": ["k12", "k47"]}, In("s", ["k12", "k47"])),
    ({"op": "eq", "col": "b", "values": [13]}, EqualTo("b", 13)),
    ({"op": "eq", "col": "v", "values": [213]}, EqualTo("v", 213)),
    ({"op": "lt", "col": "v", "values": [110]}, LessThan("v", 110)),
    ({"op": "le", "col": "v", "values": [109]}, LessThanOrEqual("v", 109)),
    ({"op": "gt", "col": "v", "values": [330]}, GreaterThan("v", 330)),
    ({"op": "ge", "col": "v", "values": [331]}, GreaterThanOrEqual("v", 331)),
    (
        {"and": [{"op": "ge", "col": "v", "values": [200]}, {"op": "lt", "col": "v", "values": [220]}]},
        And(GreaterThanOrEqual("v", 200), LessThan("v", 220)),
    ),
]  # fmt: skip
INDEXES = {
    "file-index.bloom-filter.columns": "s",
    "file-index.bloom-filter.s.items": "40",
    "file-index.bitmap.columns": "b",
    "file-index.range-bitmap.columns": "v",
}


def _rows(f: int) -> list[list[Any]]:
    """File f: ids f*20.., s k<f*10+j>, b 10*f+j%10, v 100*f+j, plus the shared extremes."""
    rows: list[list[Any]] = [
        [f * 20 + j, f"k{f * 10 + j % 10:02d}", 10 * f + j % 10, 100 * f + j] for j in range(18)
    ]
    rows += [[f * 20 + 18, "a", 0, 0], [f * 20 + 19, "z", 999, 1000]]
    return rows


def _kept(session: Any, table: str, expr: BooleanExpression) -> list[str]:
    t = session.catalog.get_table(table)
    return sorted(e.file.file_name for e in ScanPlanner(t).plan(expr).files)


def _read_op(table: str) -> dict[str, Any]:
    return {"op": "read", "table": table, "queries": [q for q, _ in QUERIES]}


def _check_same(session: Any, table: str, result: dict[str, Any], step: str) -> None:
    ours = lakeskip_rows(session, f"SELECT * FROM {table}")
    assert text_rows(result["rows"]) == ours, f"{step}: Paimon reads other rows"
    for (query, expr), got in zip(QUERIES, result["results"], strict=True):
        mine = _kept(session, table, expr)
        # "plan" is Paimon's planning (stats + embedded indexes), "kept" what its reader keeps
        # after the ``.index`` files: lakeskip applies both while planning
        assert got["kept"] == mine, (
            f"{step}: for {query} Paimon keeps {len(got['kept'])} files, lakeskip "
            f"{len(mine)}: Paimon only {sorted(set(got['kept']) - set(mine))}, lakeskip only "
            f"{sorted(set(mine) - set(got['kept']))}"
        )


def test_lakeskip_reads_prunes_and_writes_a_newest_paimon_indexed_table(
    session: Any, paimon_newest: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.nt"
    create = {
        "op": "create",
        "table": name,
        "fields": [["id", "BIGINT"], ["s", "STRING"], ["b", "INT"], ["v", "INT"]],
        "options": {"bucket": "2", "bucket-key": "id", **INDEXES},
    }
    writes = [{"op": "write", "table": name, "rows": _rows(f)} for f in range(4)]
    *_, files, result = paimon_newest(
        wh, create, *writes, {"op": "files", "table": name}, _read_op(name)
    )
    # with range-bitmap most containers pass the 500 b in-manifest threshold: ``.index`` files
    assert len(files) == 8 and all(f["extra"] or f["embedded"] for f in files)
    assert any(f["extra"] for f in files), "Paimon wrote .index files"
    _check_same(session, name, result, "written by Paimon 2.0")
    assert any(len(r["kept"]) < 8 for r in result["results"][4:]), "range-bitmap must prune"

    # Paimon's own full compaction of each bucket: one file per bucket, indexes rebuilt
    compacted, files, result = paimon_newest(
        wh, {"op": "compact", "table": name}, {"op": "files", "table": name}, _read_op(name)
    )
    assert compacted == 2 and len(files) == 2
    _check_same(session, name, result, "after Paimon's compaction")

    # lakeskip's containers are Paimon 2.0's, byte for byte (bloom, bitmap V2, range-bitmap)
    r = session.sql(f"CALL sys.rewrite_file_index('{name}')").collect()[0]
    assert (r["files_rewritten"], r["files_unchanged"]) == (0, 2)

    # lakeskip writes: INSERT, DELETE, compaction; Paimon reads and prunes the result alike
    values = ", ".join(f"({i}, '{s}', {b}, {v})" for i, s, b, v in _rows(5))
    session.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")
    (result,) = paimon_newest(wh, _read_op(name))
    _check_same(session, name, result, "after lakeskip's INSERT")
    session.sql(f"DELETE FROM {name} WHERE v BETWEEN 100 AND 105 OR s = 'k55'")
    (result,) = paimon_newest(wh, _read_op(name))
    _check_same(session, name, result, "after lakeskip's DELETE")
    session.sql(f"CALL sys.compact(table => '{name}')")
    more = {"op": "write", "table": name, "rows": _rows(6)}
    _, result = paimon_newest(wh, more, _read_op(name))
    _check_same(session, name, result, "after lakeskip's compaction and a Paimon write")
    assert len(result["rows"]) == 6 * 20 - 6 - 2  # v 100..105, and k55 twice


PK_FIELDS = [["id", "BIGINT"], ["s", "STRING"], ["v", "INT"], ["dt", "STRING"]]


def test_lakeskip_reads_and_writes_a_newest_paimon_dv_primary_key_table(
    session: Any, paimon_newest: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.pk"
    create = {
        "op": "create",
        "table": name,
        "fields": PK_FIELDS,
        "partition": ["dt"],
        "options": {
            "primary-key": "dt,id",
            "bucket": "2",
            "deletion-vectors.enabled": "true",
            "file-index.bloom-filter.columns": "s",
        },
    }
    first = [[i, f"s{i}", i, f"p{i % 2}"] for i in range(40)]
    upserts = [[i, f"u{i}", 1000 + i, f"p{i % 2}"] for i in range(0, 40, 3)]
    deletes = [[i, None, None, f"p{i % 2}"] for i in range(1, 40, 5)]
    *_, files_before = paimon_newest(
        wh,
        create,
        {"op": "write", "table": name, "rows": first},
        {"op": "compact", "table": name},
        {"op": "files", "table": name},
    )
    assert {f["level"] for f in files_before} == {5}
    *_, files = paimon_newest(
        wh,
        {"op": "write", "table": name, "rows": upserts},
        {"op": "write", "table": name, "rows": deletes, "kinds": ["-D"] * len(deletes)},
        {"op": "compact", "table": name, "full": False},
        {"op": "files", "table": name},
    )
    assert any(f["dv"] for f in files), f"Paimon's lookup compaction wrote no DV: {files}"
    expected = {i: [i, f"s{i}", i, f"p{i % 2}"] for i in range(40)}
    expected.update({r[0]: r for r in upserts})
    for r in deletes:
        expected.pop(r[0])
    text = text_rows(expected.values())
    assert java_rows(paimon_newest, wh, name) == text
    assert lakeskip_rows(session, f"SELECT * FROM {name}") == text, (
        "lakeskip reads Paimon's DVs as Paimon does"
    )

    session.sql(
        f"INSERT INTO {name} VALUES (2, 'l2', 2002, 'p0'), (100, 'l100', 100, 'p0'), "
        "(7, 'l7', 7007, 'p1')"
    )
    assert java_rows(paimon_newest, wh, name) == lakeskip_rows(session, f"SELECT * FROM {name}"), (
        "after upserts"
    )
    session.sql(f"DELETE FROM {name} WHERE id IN (3, 4, 100) OR s = 'u9'")
    assert java_rows(paimon_newest, wh, name) == lakeskip_rows(session, f"SELECT * FROM {name}"), (
        "after DELETE"
    )
    session.sql(f"CALL sys.compact(table => '{name}')")
    ours = lakeskip_rows(session, f"SELECT * FROM {name}")
    assert java_rows(paimon_newest, wh, name) == ours, "after lakeskip's compaction"
    assert len(ours) == 40 - len(deletes) + 1 - 4
