"""Apache Paimon's Java classes (0.9.0 and the newest, 2.0.0) read, prune and write tables
together with lakeskip.

Every check runs ``java/PaimonProbe.java`` (see ``conftest.py``) on the same warehouse:

* lakeskip writes (INSERT, INSERT OVERWRITE of a partition, ``rewrite_file_index`` to
  ``.index`` files, z-order sort compaction, ``expire_snapshots``, Paimon's own expiry):
  Paimon reads the same rows, and for bloom-filter and bitmap predicates keeps exactly the
  files lakeskip's planner keeps (embedded indexes, then ``.index`` files); against 0.9 the
  table is pinned to ``file-index.paimon-compatibility = 0.9`` (bitmap V1, 0.9's container
  layout), against 2.0 it has lakeskip's defaults (bitmap V2, the 1.2+ layout);
* Paimon writes (with its indexes): lakeskip reads the same rows, prunes with Paimon's
  indexes exactly as Paimon does, rebuilds byte-identical containers, adds an index, and
  Paimon still reads the table afterwards.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lakeskip.catalog.format import manifest_columns
from lakeskip.catalog.format.manifest import decode_manifest_records
from lakeskip.expressions import (
    And,
    BooleanExpression,
    EqualTo,
    In,
    IsNull,
    NotEqualTo,
    Or,
)
from lakeskip.planner.scan import ScanPlanner
from lakeskip.types import STRING

pytestmark = pytest.mark.interop


def _pin(paimon_java: Any, prefix: str = "") -> str:
    """The table property lakeskip needs for that Paimon to read its indexes (none for >= 1.2)."""
    return (
        f"{prefix}'file-index.paimon-compatibility'='0.9'" if paimon_java.release < (1, 0) else ""
    )


# (Paimon probe predicate, the same predicate for lakeskip's planner)
QUERIES: list[tuple[dict[str, Any], BooleanExpression]] = [
    ({"op": "eq", "col": "s", "values": ["k12"]}, EqualTo("s", "k12")),
    ({"op": "in", "col": "s", "values": ["k12", "k27"]}, In("s", ["k12", "k27"])),
    ({"op": "eq", "col": "s", "values": ["k55"]}, EqualTo("s", "k55")),
    ({"op": "eq", "col": "v", "values": [13]}, EqualTo("v", 13)),
    ({"op": "in", "col": "v", "values": [13, 35]}, In("v", [13, 35])),
    ({"op": "isnull", "col": "v"}, IsNull("v")),
    ({"op": "ne", "col": "v", "values": [0]}, NotEqualTo("v", 0)),
    (
        {"or": [{"op": "eq", "col": "s", "values": ["k12"]}, {"op": "eq", "col": "v", "values": [35]}]},
        Or(EqualTo("s", "k12"), EqualTo("v", 35)),
    ),
    (
        {"and": [{"op": "eq", "col": "s", "values": ["k20"]}, {"op": "eq", "col": "dt", "values": ["p1"]}]},
        And(EqualTo("s", "k20"), EqualTo("dt", "p1")),
    ),
    ({"op": "eq", "col": "id", "values": [5]}, EqualTo("id", 5)),
]  # fmt: skip


def _file_rows(f: int) -> list[tuple[int, str, int | None, str]]:
    """10 rows whose min/max are shared by every file (k00..k99, 0..100), so only the
    indexes can tell the files apart on the middle values."""
    rows: list[tuple[int, str, int | None, str]] = []
    for j in range(10):
        s = "k00" if j == 0 else "k99" if j == 1 else f"k{10 + f * 8 + j - 2:02d}"
        v: int | None = 0 if j == 0 else 100 if j == 1 else 10 + f * 8 + j - 2
        if f % 2 and j == 9:
            v = None
        rows.append((f * 10 + j, s, v, "p0" if f % 2 == 0 else "p1"))
    return rows


def _values_sql(rows: list[tuple[int, str, int | None, str]]) -> str:
    return ", ".join(f"({i}, '{s}', {'NULL' if v is None else v}, '{dt}')" for i, s, v, dt in rows)


def _text(v: Any) -> str | None:
    return None if v is None else str(v)


def _lakeskip_rows(session: Any, table: str) -> list[list[str | None]]:
    rows = session.sql(f"SELECT id, s, v, dt FROM {table}").collect()
    return sorted(([_text(x) for x in r] for r in rows), key=repr)


def _lakeskip_kept(session: Any, table: str, expr: BooleanExpression) -> list[str]:
    t = session.catalog.get_table(table)
    return sorted(e.file.file_name for e in ScanPlanner(t).plan(expr).files)


def _read_op(table: str) -> dict[str, Any]:
    return {"op": "read", "table": table, "queries": [q for q, _ in QUERIES]}


def _check_same(session: Any, table: str, result: dict[str, Any], step: str) -> None:
    theirs = sorted(result["rows"], key=repr)
    assert theirs == _lakeskip_rows(session, table), f"{step}: Paimon reads other rows"
    t = session.catalog.get_table(table)
    assert result["snapshot"] == t.latest_snapshot().id, f"{step}: other snapshot"
    for (query, expr), got in zip(QUERIES, result["results"], strict=True):
        ours = _lakeskip_kept(session, table, expr)
        assert set(got["kept"]) <= set(got["plan"])
        assert got["kept"] == ours, (
            f"{step}: for {query} Paimon keeps {len(got['kept'])} files, lakeskip "
            f"{len(ours)}: Paimon only {sorted(set(got['kept']) - set(ours))}, lakeskip only "
            f"{sorted(set(ours) - set(got['kept']))}"
        )


def _index_kinds(session: Any, table: str) -> tuple[int, int]:
    files = session.catalog.get_table(table).scan_files()
    embedded = sum(e.file.embedded_index is not None for e in files)
    external = sum(e.file.index_file_name is not None for e in files)
    return embedded, external


def test_paimon_reads_and_prunes_lakeskip_tables_after_every_operation(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.t"
    session.sql(
        "CREATE TABLE t (id BIGINT, s STRING, v INT, dt STRING) PARTITIONED BY (dt) WITH ("
        "'file-index.bloom-filter.columns'='s', 'file-index.bloom-filter.s.items'='20', "
        f"'file-index.bitmap.columns'='v'{_pin(paimon_java, ', ')})"
    )
    for f in range(4):
        session.sql(
            f"INSERT INTO t SELECT /*+ REPARTITION(1) */ * FROM VALUES {_values_sql(_file_rows(f))}"
        )
    assert _index_kinds(session, name) == (4, 0), "every file has an embedded container"
    before = session.catalog.get_table(name).latest_snapshot().id  # tagged and expired below
    (result,) = paimon_java(wh, _read_op(name))
    _check_same(session, name, result, "after INSERT")
    assert any(len(r["kept"]) < 4 for r in result["results"]), "the indexes must prune"

    rows = [(i + 1000, s, v, "p0") for i, s, v, _ in _file_rows(4)]
    session.sql(
        "INSERT OVERWRITE t PARTITION (dt = 'p0') SELECT /*+ REPARTITION(1) */ col1, col2, col3 "
        f"FROM VALUES {_values_sql(rows)}"
    )
    (result,) = paimon_java(wh, _read_op(name))
    _check_same(session, name, result, "after INSERT OVERWRITE of partition p0")

    # the issue 17 repro: a COMPACT commit rewriting the indexes of the same data files
    session.sql(
        "ALTER TABLE t SET TBLPROPERTIES ('file-index.bloom-filter.columns'='s,id', "
        "'file-index.bloom-filter.id.items'='20', 'file-index.in-manifest-threshold'='1 b')"
    )
    session.sql("CALL sys.rewrite_file_index('default.t')")
    assert _index_kinds(session, name) == (0, 3), "every container moved to a .index file"
    (result,) = paimon_java(wh, _read_op(name))
    _check_same(session, name, result, "after rewrite_file_index (.index files)")

    session.sql("CALL sys.compact(table => 't', order_strategy => 'zorder', order_by => 's,v')")
    (result,) = paimon_java(wh, _read_op(name))
    _check_same(session, name, result, "after z-order sort compaction")

    session.sql(f"CALL sys.create_tag(table => 't', tag => 'older', snapshot => {before})")
    session.sql("CALL sys.expire_snapshots(table => 't', retain_last => 2)")
    (result,) = paimon_java(wh, _read_op(name))
    _check_same(session, name, result, "after lakeskip's expire_snapshots")
    assert session.catalog.get_table(name).list_snapshots()[0].id > before, "tag outlived it"
    (tagged,) = paimon_java(wh, {**_read_op(name), "queries": [], "tag": "older"})
    ours = session.sql(f"SELECT id, s, v, dt FROM {name} VERSION AS OF 'older'").collect()
    assert sorted(tagged["rows"], key=repr) == sorted(
        ([_text(x) for x in r] for r in ours), key=repr
    ), "Paimon reads lakeskip's tag of an expired snapshot as lakeskip does"
    assert sorted(tagged["rows"], key=repr) != _lakeskip_rows(session, name), "not the latest"
    session.sql("CALL sys.rollback(table => 't', version => 'older')")
    (result,) = paimon_java(wh, _read_op(name))
    _check_same(session, name, result, "after lakeskip's rollback to a tag")
    assert sorted(result["rows"], key=repr) == sorted(tagged["rows"], key=repr)

    # Paimon's own expiry walks lakeskip's DELETE/ADD entries: no live file may go
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('file-index.bloom-filter.s.items'='30')")
    session.sql("CALL sys.rewrite_file_index('default.t')")
    expired, result = paimon_java(wh, {"op": "expire", "table": name, "retain": 1}, _read_op(name))
    assert expired >= 1
    _check_same(session, name, result, "after rewrite_file_index + Paimon's expire_snapshots")


def _paimon_rows(f: int) -> list[list[Any]]:
    return [list(r) for r in _file_rows(f)]


@pytest.mark.parametrize("threshold", ["500 b", "1 b"], ids=["embedded", "index-files"])
def test_lakeskip_reads_prunes_and_reindexes_paimon_written_tables(
    session: Any, paimon_java: Any, tmp_path: Path, threshold: str
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.pt"
    create = {
        "op": "create",
        "table": name,
        "fields": [["id", "BIGINT"], ["s", "STRING"], ["v", "INT"], ["dt", "STRING"]],
        "partition": ["dt"],
        "options": {
            # three columns whose Java HashMap order (s, v, id) is not the option order
            "file-index.bloom-filter.columns": "id,s",
            "file-index.bloom-filter.s.items": "20",
            "file-index.bloom-filter.id.items": "20",
            "file-index.bitmap.columns": "v",
            "file-index.in-manifest-threshold": threshold,
        },
    }
    writes = [{"op": "write", "table": name, "rows": _paimon_rows(f)} for f in range(4)]
    *_, files, result = paimon_java(
        wh, create, *writes, {"op": "files", "table": name}, _read_op(name)
    )
    assert len(files) == 4
    if threshold == "1 b":
        assert all(f["extra"] == [f"{f['file']}.index"] for f in files), "Paimon wrote .index"
    else:
        assert all(f["embedded"] for f in files), "Paimon embedded its indexes"
    _check_same(session, name, result, "Paimon-written table")
    _manifests_decode_alike(wh / "default.db" / "pt", paimon_java.version)

    # lakeskip rebuilds the same containers byte for byte: nothing to rewrite. Against 0.9 the
    # pin keeps bitmap at version 1 (0.9 reads no other) and the 0.9 container layout; against
    # the newest Paimon lakeskip's defaults are its defaults
    if _pin(paimon_java):
        session.sql(f"ALTER TABLE pt SET TBLPROPERTIES ({_pin(paimon_java)})")
    r = session.sql("CALL sys.rewrite_file_index('default.pt')").collect()[0]
    assert (r["files_rewritten"], r["files_unchanged"]) == (0, 4), (
        f"lakeskip's containers must equal the ones Paimon {paimon_java.version} wrote"
    )

    # changed index options + a lakeskip INSERT; Paimon reads and prunes the result the same way
    session.sql("ALTER TABLE pt SET TBLPROPERTIES ('file-index.bloom-filter.s.items'='30')")
    r = session.sql("CALL sys.rewrite_file_index('default.pt')").collect()[0]
    assert r["files_rewritten"] == 4
    session.sql(
        f"INSERT INTO pt SELECT /*+ REPARTITION(1) */ * FROM VALUES {_values_sql(_file_rows(5))}"
    )
    more = [{"op": "write", "table": name, "rows": _paimon_rows(6)}]
    *_, result = paimon_java(wh, *more, _read_op(name))
    _check_same(session, name, result, "re-indexed by lakeskip, then written by both")


def _manifests_decode_alike(table_dir: Path, version: str) -> None:
    """Paimon's own manifests decode column-wise (not left to the record-by-record path) to
    the entries fastavro's records give, every field."""
    types = (STRING,)
    manifests = [p for p in (table_dir / "manifest").glob("manifest-*") if "list" not in p.name]
    assert manifests
    for path in manifests:
        data = path.read_bytes()
        columns = manifest_columns.decode(data)
        assert columns is not None, f"Paimon {version}'s {path.name} decoded column-wise"
        assert columns.entries(np.arange(columns.n), types) == decode_manifest_records(
            data, path.name, types
        ), f"Paimon {version}'s {path.name}"


def test_paimon_reads_decimals_stored_as_integers(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    """lakeskip stores DECIMAL(p <= 9) as INT32 and (p <= 18) as INT64, as Paimon and Spark do;
    Paimon 0.9 reads them (and the wide FIXED_LEN_BYTE_ARRAY one) with the same values, and
    lakeskip's stats prune on them."""
    import pyarrow.parquet as pq

    session.sql(
        "CREATE TABLE dec (id BIGINT, small DECIMAL(5, 2), mid DECIMAL(15, 3), wide DECIMAL(25, 4))"
    )
    session.sql(
        "INSERT INTO dec SELECT /*+ REPARTITION(1) */ id, CAST(id / 8 - 3 AS DECIMAL(5, 2)), "
        "CAST(id * 1234567.125 - 5e7 AS DECIMAL(15, 3)), "
        "CAST(id * 1e12 + 0.0001 AS DECIMAL(25, 4)) FROM range(0, 50)"
    )
    session.sql("INSERT INTO dec VALUES (50, NULL, NULL, NULL)")
    t = session.catalog.get_table("default.dec")
    first = max(t.scan_files(), key=lambda e: e.file.row_count)
    meta = pq.ParquetFile(t.data_file_path(first)).metadata
    physical = [meta.row_group(0).column(i).physical_type for i in range(1, 4)]
    assert physical == ["INT32", "INT64", "FIXED_LEN_BYTE_ARRAY"]
    (result,) = paimon_java(
        tmp_path / "warehouse", {"op": "read", "table": "default.dec", "queries": []}
    )
    ours = session.sql("SELECT id, small, mid, wide FROM dec").collect()
    assert sorted(result["rows"], key=repr) == sorted(
        ([_text(x) for x in r] for r in ours), key=repr
    )
    assert len(_lakeskip_kept(session, "default.dec", EqualTo("small", Decimal("-2.88")))) == 1
