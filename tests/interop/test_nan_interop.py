"""Apache Paimon 0.9 (Java) reads a lakeskip table with NaN predicates (issue 26).

lakeskip's files keep NaN out of nothing a reader filters on: a FLOAT/DOUBLE column holding NaN
has no min/max in the manifest stats nor in the Parquet statistics, so Paimon's planner and
Parquet reader keep every file and row group that holds a NaN row. Paimon's read with a
filter is not exact (it drops files and row groups, not rows), so its rows are filtered here
by the predicate and must equal what ``spark.sql`` on the lakeskip catalog returns.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.interop

NAN, INF = float("nan"), float("inf")
# (Paimon probe predicate, Python test of a row's c, the same in Spark SQL)
QUERIES = [
    ({"op": "eq", "col": "c", "values": ["NaN"]}, math.isnan, "c = double('NaN')"),
    ({"op": "ge", "col": "c", "values": ["NaN"]}, math.isnan, "c >= double('NaN')"),
    (
        {"op": "gt", "col": "c", "values": ["Infinity"]},
        math.isnan,  # Spark and Java order NaN above +Infinity
        "c > double('Infinity')",
    ),
    ({"op": "lt", "col": "c", "values": ["Infinity"]}, lambda c: c < INF, "c < double('Infinity')"),
]


def _c(i: int, f: int) -> float:
    if f == 2:
        return float(i)  # a file without NaN: its stats are bounds
    return NAN if i % 10 == 0 else INF if i % 10 == 1 else float(i)


def test_paimon_reads_the_nan_rows_of_a_lakeskip_table(
    session: Any, paimon_java: Any, tmp_path: Path
) -> None:
    session.sql("CREATE TABLE nan_t (id BIGINT, c DOUBLE) WITH ('parquet.block.size' = '2000')")
    for f in range(3):
        values = ", ".join(
            f"({i}, double('{_c(i, f)!r}'))".replace("'nan'", "'NaN'").replace(
                "'inf'", "'Infinity'"
            )
            for i in range(f * 300, f * 300 + 300)
        )
        session.sql(f"INSERT INTO nan_t SELECT /*+ REPARTITION(1) */ * FROM VALUES {values}")
    wh = tmp_path / "warehouse"
    read = {"op": "read", "table": "default.nan_t", "queries": [q for q, _, _ in QUERIES]}
    filtered = [
        {"op": "read_filtered", "table": "default.nan_t", "query": q} for q, _, _ in QUERIES
    ]
    result, *reads = paimon_java(wh, read, *filtered)
    assert len(result["rows"]) == 900
    for (_, test, sql), got, rows in zip(QUERIES, result["results"], reads, strict=True):
        want = sorted(r[0] for r in session.sql(f"SELECT id FROM nan_t WHERE {sql}").collect())
        assert want, sql
        # the rows of the files and row groups Paimon kept, filtered exactly here
        theirs = sorted(int(i) for i, c in rows if c is not None and test(float(c)))
        assert theirs == want, f"{sql}: Paimon {len(theirs)} rows, lakeskip {len(want)}"
        assert len(got["kept"]) == (3 if sql.startswith("c <") else 2), (sql, got)
