"""Fixed-bucket append tables between lakeskip and Apache Paimon 0.9.0's Java classes.

* lakeskip writes a bucketed table (``bucket-key`` of two columns, partitioned): Paimon reads
  the same rows, finds every file in the bucket lakeskip recorded, and for filters pinning
  the bucket key plans the same files lakeskip plans (stats + bucket, no file indexes);
* Paimon writes into that table and into its own bucketed table: every row of its files lies
  in the bucket lakeskip's function gives it, lakeskip reads the same rows and prunes buckets
  exactly as Paimon does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from lakeskip.catalog.format.bucket import bucket_ids
from lakeskip.expressions import And, BooleanExpression, EqualTo, In
from lakeskip.planner.scan import ScanPlanner

pytestmark = pytest.mark.interop

# (Paimon probe predicate, the same for lakeskip, whether it pins the whole bucket key)
KEY2_QUERIES: list[tuple[dict[str, Any], BooleanExpression, bool]] = [
    (
        {"and": [{"op": "eq", "col": "id", "values": [17]}, {"op": "eq", "col": "s", "values": ["k17"]}]},
        And(EqualTo("id", 17), EqualTo("s", "k17")),
        True,
    ),
    (
        {"and": [{"op": "in", "col": "id", "values": [3, 40, 77]}, {"op": "in", "col": "s", "values": ["k3", "k40"]}]},
        And(In("id", [3, 40, 77]), In("s", ["k3", "k40"])),
        True,
    ),
    ({"op": "eq", "col": "id", "values": [17]}, EqualTo("id", 17), False),
]  # fmt: skip


def _rows(lo: int, hi: int) -> list[list[Any]]:
    return [[i, f"k{i % 50}", i % 7, "p0" if i % 3 else "p1"] for i in range(lo, hi)]


def _values_sql(rows: list[list[Any]]) -> str:
    return ", ".join(f"({i}, '{s}', {v}, '{dt}')" for i, s, v, dt in rows)


def _lakeskip_rows(session: Any, table: str) -> list[list[str]]:
    rows = session.sql(f"SELECT id, s, v, dt FROM {table}").collect()
    return sorted(([str(x) for x in r] for r in rows), key=repr)


def _check_buckets(table: Any) -> int:
    """Every file's rows hash to its entry's bucket; returns the number of files."""
    entries = table.scan_files()
    spec_key = table.schema.options["bucket-key"].split(",")
    types = [table.schema.row_type.field(k).type for k in spec_key]
    n = int(table.schema.options["bucket"])
    for e in entries:
        with table.file_io.open_input(table.data_file_path(e)) as f:
            data = pq.read_table(f)
        got = set(bucket_ids([data[k] for k in spec_key], types, n).tolist())
        assert got == {e.bucket}, f"{e.file.file_name} in bucket-{e.bucket} holds buckets {got}"
        assert e.total_buckets == n
    return len(entries)


def _check_plans(session: Any, name: str, result: dict[str, Any], queries: Any) -> None:
    table = session.catalog.get_table(name)
    by_name = {e.file.file_name: e for e in table.scan_files()}
    for (query, expr, pins), got in zip(queries, result["results"], strict=True):
        plan = ScanPlanner(table).plan(expr)
        ours = sorted(e.file.file_name for e in plan.files)
        assert sorted(got["plan"]) == ours, f"{query}: Paimon plans {got['plan']}, lakeskip {ours}"
        if pins:
            assert plan.report.skipped_by_bucket > 0, query
            assert len({by_name[f].bucket for f in ours}) < int(table.schema.options["bucket"])
        else:
            assert plan.report.skipped_by_bucket == 0, query


def test_paimon_reads_lakeskip_bucketed_tables_and_plans_the_same_buckets(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.bt"
    session.sql(
        "CREATE TABLE bt (id BIGINT, s STRING, v INT, dt STRING) PARTITIONED BY (dt) "
        "WITH ('bucket' = '4', 'bucket-key' = 'id,s')"
    )
    session.sql(f"INSERT INTO bt SELECT * FROM VALUES {_values_sql(_rows(0, 60))}")
    session.sql(f"INSERT INTO bt SELECT * FROM VALUES {_values_sql(_rows(60, 100))}")
    read = {"op": "read", "table": name, "queries": [q for q, _, _ in KEY2_QUERIES]}
    files, result = paimon_java(wh, {"op": "files", "table": name}, read)
    table = session.catalog.get_table(name)
    ours = {e.file.file_name: e.bucket for e in table.scan_files()}
    assert {f["file"]: f["bucket"] for f in files} == ours
    assert len(set(ours.values())) == 4
    assert sorted(result["rows"], key=repr) == _lakeskip_rows(session, name)
    _check_plans(session, name, result, KEY2_QUERIES)

    # Paimon appends with its own bucket function; lakeskip finds its rows where it hashes them
    write = {"op": "write", "table": name, "rows": _rows(100, 160)}
    _, result = paimon_java(wh, write, read)
    table = session.catalog.get_table(name)
    assert _check_buckets(table) > len(ours)
    assert sorted(result["rows"], key=repr) == _lakeskip_rows(session, name)
    _check_plans(session, name, result, KEY2_QUERIES)


def test_lakeskip_reads_and_prunes_paimon_written_bucketed_tables(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.pb"
    create = {
        "op": "create",
        "table": name,
        "fields": [["id", "BIGINT"], ["s", "STRING"], ["v", "INT"], ["dt", "STRING"]],
        "options": {"bucket": "5", "bucket-key": "s"},
    }
    queries = [
        ({"op": "eq", "col": "s", "values": ["k12"]}, EqualTo("s", "k12"), True),
        ({"op": "in", "col": "s", "values": ["k1", "k2"]}, In("s", ["k1", "k2"]), True),
        ({"op": "eq", "col": "v", "values": [3]}, EqualTo("v", 3), False),
    ]
    writes = [{"op": "write", "table": name, "rows": _rows(lo, lo + 50)} for lo in (0, 50)]
    read = {"op": "read", "table": name, "queries": [q for q, _, _ in queries]}
    *_, files, result = paimon_java(wh, create, *writes, {"op": "files", "table": name}, read)
    table = session.catalog.get_table(name)
    assert _check_buckets(table) == len(files)
    assert {f["file"]: f["bucket"] for f in files} == {
        e.file.file_name: e.bucket for e in table.scan_files()
    }
    assert sorted(result["rows"], key=repr) == _lakeskip_rows(session, name)
    _check_plans(session, name, result, queries)
    df = session.sql("SELECT id, s FROM pb WHERE s = 'k12'")
    assert sorted(r["id"] for r in df.collect()) == [12, 62]
    assert session.last_reports[0].skipped_by_bucket > 0
