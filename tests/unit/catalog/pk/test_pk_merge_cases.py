"""The merge-rule case table (``tests/cases/pk_merge_cases.json``) against the Python merge:
compaction's ``merge_versions`` over every version, and the same versions laid down as a
writer leaves them (one file per version rank) then merged file by file in any order."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from tests.cases.pk_merge_cases import Case, load

from lakeskip.catalog.pk.merge_engine import MergeEngine, check_merge_options
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND
from lakeskip.errors import LakeskipError

CASES = load()


def _merged(case: Case, table: pa.Table) -> list[tuple[Any, ...]]:
    engine = MergeEngine.of(case.options, case.row_type, ["k"])
    out = engine.merge_versions(table, ["k"], SEQUENCE_NUMBER, VALUE_KIND)
    return [tuple(r[n] for n in case.names) for r in out.to_pylist()]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_python_merge_matches_the_case_table(case: Case) -> None:
    check_merge_options(case.options, ["k"], case.row_type)
    versions = case.versions_table()
    if case.error is not None:
        with pytest.raises(LakeskipError, match=case.error.replace("(", r"\(").replace(")", r"\)")):
            _merged(case, versions)
        return
    assert _merged(case, versions) == case.expected()
    # the input order never matters: reversed rows merge the same
    assert _merged(case, versions.take(pa.array(range(versions.num_rows - 1, -1, -1)))) == (
        case.expected()
    )


def test_the_case_table_covers_every_engine_and_function() -> None:
    engines = {c.options.get("merge-engine", "deduplicate") for c in CASES}
    assert engines == {"deduplicate", "partial-update", "aggregation"}
    functions = {v for c in CASES for k, v in c.options.items() if k.endswith("aggregate-function")}
    assert functions >= {
        "sum",
        "product",
        "max",
        "min",
        "last_value",
        "first_value",
        "first_non_null_value",
        "bool_and",
        "bool_or",
        "listagg",
    }
    assert any("sequence.field.sort-order" in c.options for c in CASES)
    assert any(c.error for c in CASES)
