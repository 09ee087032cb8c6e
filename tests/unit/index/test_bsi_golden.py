"""BSI compatibility with Paimon's Java bytes (vectors via apache/paimon-cpp's tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeskip import types as T
from lakeskip.index.registry import get_indexer
from lakeskip.index.result import BitmapResult

CASES = json.loads(
    (Path(__file__).resolve().parents[2] / "golden" / "paimon_cpp" / "bsi.json").read_text()
)["cases"]


def _rows(result: Any) -> set[int]:
    assert isinstance(result, BitmapResult), result
    return set(result.bitmap)


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_writer_reproduces_java_bytes(case: dict[str, Any]) -> None:
    dtype = T.parse_sql_type(case["type"])
    w = get_indexer("bsi").create_writer(dtype, {})
    w.write(pa.array(case["values"], dtype.to_arrow()))
    assert list(w.serialize()) == case["bytes"], f"{case['case']}: bytes differ from Java"


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_reader_answers_java_bytes_exactly(case: dict[str, Any]) -> None:
    dtype = T.parse_sql_type(case["type"])
    r = get_indexer("bsi").create_reader(dtype, {}, bytes(case["bytes"]))
    values = case["values"]
    present = [v for v in values if v is not None]
    probes = sorted({*present, -100, -3, -2, -1, 0, 1, 2, 3, 100})
    ops = {
        "visit_equal": lambda a, b: a == b,
        "visit_not_equal": lambda a, b: a != b,
        "visit_less_than": lambda a, b: a < b,
        "visit_less_than_or_equal": lambda a, b: a <= b,
        "visit_greater_than": lambda a, b: a > b,
        "visit_greater_than_or_equal": lambda a, b: a >= b,
    }
    for name, op in ops.items():
        for p in probes:
            expected = {i for i, v in enumerate(values) if v is not None and op(v, p)}
            assert _rows(getattr(r, name)(p)) == expected, f"{case['case']}: {name}({p})"
    nulls = {i for i, v in enumerate(values) if v is None}
    assert _rows(r.visit_is_null()) == nulls
    assert _rows(r.visit_not_null()) == set(range(len(values))) - nulls
    lits = [-1, 1, 2, 3]
    assert _rows(r.visit_in(lits)) == {i for i, v in enumerate(values) if v in lits}
    assert _rows(r.visit_not_in(lits)) == {
        i for i, v in enumerate(values) if v is not None and v not in lits
    }
