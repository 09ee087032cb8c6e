"""Bitmap V1/V2 compatibility with Paimon's Java bytes (vectors via apache/paimon-cpp)."""

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
    (Path(__file__).resolve().parents[2] / "golden" / "paimon_cpp" / "bitmap.json").read_text()
)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_writer_reproduces_java_bytes(case: dict[str, Any]) -> None:
    dtype = T.parse_sql_type(case["type"])
    w = get_indexer("bitmap").create_writer(dtype, {"version": case["version"]})
    w.write(pa.array(case["values"], dtype.to_arrow()))
    assert w.serialize().hex() == case["hex"], f"{case['case']}: bytes differ from Java"


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_reader_answers_java_bytes_exactly(case: dict[str, Any]) -> None:
    dtype = T.parse_sql_type(case["type"])
    r = get_indexer("bitmap").create_reader(dtype, {}, bytes.fromhex(case["hex"]))
    values = case["values"]
    probes = {v for v in values if v is not None} | (
        {"zz"} if dtype.root is T.TypeRoot.STRING else set()
    )
    for p in probes:
        got = r.visit_equal(p)
        assert isinstance(got, BitmapResult)
        assert set(got.bitmap) == {i for i, v in enumerate(values) if v == p}, (case["case"], p)
        ne = r.visit_not_equal(p)
        assert isinstance(ne, BitmapResult)
        assert set(ne.bitmap) == {i for i, v in enumerate(values) if v is not None and v != p}
    nulls = r.visit_is_null()
    assert isinstance(nulls, BitmapResult)
    assert set(nulls.bitmap) == {i for i, v in enumerate(values) if v is None}
