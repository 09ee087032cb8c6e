"""Primary-key tables of every merge engine and bucket mode written by the newest Apache Paimon
(2.0.0, Java API, see ``conftest.py``), read by lakeskip, written by lakeskip, read again by
Paimon.

Each case: Paimon commits three times (inserts, updates with NULLs in some fields, and deletes
where the engine takes them) into a partitioned table without compacting, so lakeskip merges
several sorted runs on read; lakeskip reads the rows computed here in plain Python (the
oracle) and Paimon reads the same; lakeskip then upserts through Spark and Paimon reads the
oracle's next rows. (Append tables, fixed buckets and deletion vectors written by 2.0.0:
``test_paimon_newest.py`` and the ``paimon_java`` tests, which run both releases.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.interop.reads import java_rows, lakeskip_rows, text_rows

pytestmark = pytest.mark.interop

FIELDS = [["id", "BIGINT"], ["s", "STRING"], ["n", "BIGINT"], ["dt", "STRING"]]
Row = list[Any]
Merge = Callable[[Row | None, Row], Row]


def _dedup(old: Row | None, new: Row) -> Row:
    return new


def _partial(old: Row | None, new: Row) -> Row:
    return new if old is None else [o if v is None else v for o, v in zip(old, new, strict=True)]


def _sum(old: Row | None, new: Row) -> Row:
    if old is None:
        return new
    n = new[2] if old[2] is None else old[2] + (new[2] or 0)
    s = old[1] if new[1] is None else new[1]  # last_non_null_value, the default
    return [new[0], s, n, new[3]]


def _first(old: Row | None, new: Row) -> Row:
    return new if old is None else old


# (id, options, merge, deletes taken)
CASES: list[tuple[str, dict[str, str], Merge, bool]] = [
    ("deduplicate-fixed-bucket", {"bucket": "2"}, _dedup, True),
    ("deduplicate-dynamic-bucket", {"bucket": "-1"}, _dedup, True),
    ("partial-update", {"bucket": "2", "merge-engine": "partial-update"}, _partial, False),
    (
        "aggregation-sum",
        {"bucket": "2", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
        _sum,
        False,
    ),
    ("first-row", {"bucket": "2", "merge-engine": "first-row"}, _first, False),
]


def _apply(table: dict[int, Row], rows: list[Row], merge: Merge) -> None:
    for r in rows:
        table[r[0]] = merge(table.get(r[0]), r)


@pytest.mark.parametrize(
    ("options", "merge", "deletes"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_lakeskip_reads_and_writes_newest_paimon_primary_key_tables(
    session: Any,
    paimon_newest: Any,
    tmp_path: Path,
    options: dict[str, str],
    merge: Merge,
    deletes: bool,
) -> None:
    wh = tmp_path / "warehouse"
    name = "default.k"
    create = {
        "op": "create",
        "table": name,
        "fields": FIELDS,
        "partition": ["dt"],
        "options": {"primary-key": "dt,id", **options},
    }
    first = [[i, f"s{i}", i, f"p{i % 2}"] for i in range(30)]
    second = [[i, None if i % 2 else f"u{i}", 100 + i, f"p{i % 2}"] for i in range(0, 40, 3)]
    expected: dict[int, Row] = {}
    _apply(expected, first, merge)
    _apply(expected, second, merge)
    ops: list[dict[str, Any]] = [
        create,
        {"op": "write", "table": name, "rows": first},
        {"op": "write", "table": name, "rows": second},
    ]
    if deletes:
        gone = [[i, None, None, f"p{i % 2}"] for i in range(1, 40, 7)]
        ops.append({"op": "write", "table": name, "rows": gone, "kinds": ["-D"] * len(gone)})
        for r in gone:
            expected.pop(r[0], None)
    *_, files = paimon_newest(wh, *ops, {"op": "files", "table": name})
    assert len(files) > 2, f"several sorted runs: {files}"
    text = text_rows(expected.values())
    assert java_rows(paimon_newest, wh, name) == text
    assert lakeskip_rows(session, f"SELECT * FROM {name}") == text, (
        "lakeskip merges Paimon's sorted runs as Paimon does"
    )

    # lakeskip writes: new keys, and keys Paimon wrote (NULLs in s for partial-update / sum)
    ours = [[i, None if i % 4 == 0 else f"l{i}", 1000 + i, f"p{i % 2}"] for i in range(20, 50, 4)]
    values = ", ".join(
        f"({i}, {'NULL' if s is None else repr(s)}, {n}, '{dt}')" for i, s, n, dt in ours
    )
    session.sql(f"INSERT INTO {name} VALUES {values}")
    _apply(expected, ours, merge)
    text = text_rows(expected.values())
    assert lakeskip_rows(session, f"SELECT * FROM {name}") == text
    assert java_rows(paimon_newest, wh, name) == text, "Paimon reads lakeskip's commit"
    session.sql(f"CALL sys.compact(table => '{name}')")
    assert java_rows(paimon_newest, wh, name) == text, "Paimon reads lakeskip's compaction"
    assert lakeskip_rows(session, f"SELECT * FROM {name}") == text
