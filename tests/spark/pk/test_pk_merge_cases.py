"""The merge-rule case table (``tests/cases/pk_merge_cases.json``) through Spark: each case's
versions are laid down as a table's level-0 files (one per version rank, sorted, unique keys,
as a writer leaves them), then read by the Spark catalog's merge-on-read scan (Java's
``LakePkScan``), by ``Session.sql`` (the temp-view merge, Python in Spark tasks) and after
``sys.compact`` (Python's merge rewrites the files; Java reads them). Cases that share
columns and options share a table (keys offset per case) so the suite stays fast."""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.cases.pk_merge_cases import Case, load, option_groups, table_options

from lakeskip.catalog.write.rolling_writer import write_kv_data_file
from lakeskip.catalog.write.write_spec import WriteSpec

GROUPS = option_groups(load())
_OFFSET = 1000


def _lay_down(session: Any, name: str, cases: list[Case]) -> None:
    table = session.catalog.create_table(
        f"default.{name}", cases[0].row_type, options=table_options(cases[0])
    )
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    entries = []
    for i, case in enumerate(cases):
        for j, (values, seqs, kinds) in enumerate(case.file_tables(i * _OFFSET)):
            entries.append(
                write_kv_data_file(
                    spec,
                    values,
                    (),
                    f"data-case{i}-{j}.parquet",
                    0,
                    1,
                    0,
                    versions=(seqs, kinds),
                )
            )
    table.commit(entries)


def _by_case(rows: list[Any], cases: list[Case]) -> list[list[tuple[Any, ...]]]:
    out: list[list[tuple[Any, ...]]] = [[] for _ in cases]
    for r in sorted((tuple(r) for r in rows), key=lambda r: r[0]):
        out[r[0] // _OFFSET].append(r)
    return out


@pytest.mark.parametrize("group", list(GROUPS), ids=[g[0].name for g in GROUPS.values()])
def test_spark_merges_match_the_case_table(session: Any, group: str) -> None:
    cases = GROUPS[group]
    _lay_down(session, group, cases)
    catalog_sql = f"SELECT * FROM {session.catalog_name}.default.{group}"
    readers = {
        "java": lambda: session.spark.sql(catalog_sql).collect(),
        "temp view": lambda: session.sql(f"SELECT * FROM {group}").collect(),
    }
    if cases[0].error is not None:
        for read in readers.values():
            with pytest.raises(Exception, match=re.escape(cases[0].error)):
                read()
        return
    want = [c.expected(i * _OFFSET) for i, c in enumerate(cases)]
    for reader, read in readers.items():
        got = _by_case(read(), cases)
        for case, g, w in zip(cases, got, want, strict=True):
            assert g == w, f"{reader}: {case.name}"
    session.sql(f"CALL sys.compact(table => '{group}')")
    got = _by_case(session.spark.sql(catalog_sql).collect(), cases)
    for case, g, w in zip(cases, got, want, strict=True):
        assert g == w, f"after compaction: {case.name}"
