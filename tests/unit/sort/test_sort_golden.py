"""Z-order and Hilbert keys versus Paimon 0.9.0's own ``ZIndexer`` / ``HilbertIndexer`` output.

Vectors: ``tests/golden/java/{zorder,hilbert}_keys.json`` (how they were made:
``tests/golden/README.md``). Values are column-major; one expected key per row.
"""

from __future__ import annotations

import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeskip.sort import KEY_BYTES, hilbert_keys, zorder_key_size, zorder_keys
from lakeskip.types import DataType, TypeRoot, parse_sql_type

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "java"


def _cases(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((GOLDEN / name).read_text(encoding="utf-8"))["cases"]
    return cases


def _column(java_type: str, values: list[Any]) -> tuple[DataType, pa.Array]:
    dtype = parse_sql_type("VARBINARY" if java_type == "BYTES" else java_type)
    root = dtype.root
    target = dtype.to_arrow()
    if root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        values = [None if v is None else float(v) for v in values]
    elif root == TypeRoot.BINARY:
        values = [None if v is None else bytes.fromhex(v) for v in values]
    elif root == TypeRoot.DECIMAL:
        values = [None if v is None else decimal.Decimal(v) for v in values]
    elif root == TypeRoot.DATE:
        return dtype, pa.array(values, pa.int32()).cast(target)
    elif dtype.is_timestamp:
        return dtype, pa.array(values, pa.int64()).cast(target)
    return dtype, pa.array(values, target)


def _inputs(case: dict[str, Any]) -> tuple[list[pa.Array], list[DataType]]:
    pairs = [_column(t, v) for t, v in zip(case["type"], case["values"], strict=True)]
    return [a for _, a in pairs], [t for t, _ in pairs]


Z_CASES = _cases("zorder_keys.json")
H_CASES = _cases("hilbert_keys.json")


def _ids(case: dict[str, Any]) -> str:
    return str(case["case"])


def _assert_keys(kind: str, case: dict[str, Any], keys: pa.BinaryArray) -> None:
    got = [k.hex() for k in keys.to_pylist()]
    for row, (g, e) in enumerate(zip(got, case["hex"], strict=True)):
        values = [col[row] for col in case["values"]]
        assert g == e, f"{kind} {case['case']} row {row} {values}: key {g} != Java {e}"


@pytest.mark.parametrize("case", Z_CASES, ids=_ids)
def test_zorder_keys_match_java(case: dict[str, Any]) -> None:
    columns, types = _inputs(case)
    var_size = int(case["options"]["varTypeSize"])
    keys = zorder_keys(columns, types, var_length_contribution=var_size)
    assert keys.type == pa.binary(), "keys are a plain binary array"
    assert keys.null_count == 0, "z-order keys are never null"
    size = zorder_key_size(types, var_size)
    assert all(len(k) == size for k in keys.to_pylist()), f"every key has {size} bytes"
    _assert_keys("zorder", case, keys)


@pytest.mark.parametrize("case", H_CASES, ids=_ids)
def test_hilbert_keys_match_java(case: dict[str, Any]) -> None:
    columns, types = _inputs(case)
    keys = hilbert_keys(columns, types)
    assert all(len(k) == KEY_BYTES for k in keys.to_pylist()), "Hilbert keys are 63 bytes"
    _assert_keys("hilbert", case, keys)


@pytest.mark.parametrize("case", [*Z_CASES[:3], *H_CASES[:2]], ids=_ids)
def test_sliced_and_chunked_inputs_give_the_same_keys(case: dict[str, Any]) -> None:
    """Arrow offsets (slices) and chunk boundaries must not shift any byte."""
    columns, types = _inputs(case)
    is_z = "varTypeSize" in case["options"]

    def encode(cols: list[Any]) -> list[str]:
        keys = (
            zorder_keys(cols, types, int(case["options"]["varTypeSize"]))
            if is_z
            else hilbert_keys(cols, types)
        )
        return [k.hex() for k in keys.to_pylist()]

    sliced = encode([c.slice(3) for c in columns])
    assert sliced == case["hex"][3:], f"{case['case']}: slicing the input changed the keys"
    chunked = encode([pa.chunked_array([c.slice(0, 5), c.slice(5)]) for c in columns])
    assert chunked == case["hex"], f"{case['case']}: chunking the input changed the keys"


def test_eight_column_hilbert_vectors_cover_the_64_byte_truncation() -> None:
    """With 8 columns a key whose top bit is set is 64 bytes in Java and loses its last byte."""
    case = next(c for c in H_CASES if c["case"] == "eight_bigints")
    truncated = [h for h in case["hex"] if h.startswith("00") and int(h[2:4], 16) >= 0x80]
    padded = [h for h in case["hex"] if int(h[:2], 16) < 0x80 and not h.startswith("00")]
    assert truncated and padded, "the vector set must exercise both toByteArray() lengths"
