"""Whole containers byte-identical with Paimon's ``DataFileIndexWriter`` (column order).

``tests/golden/java/container_writer.json`` holds 40 containers written by Paimon 0.9.0's
``DataFileIndexWriter`` from random schemas (3 to 16 indexed columns, bloom and bitmap V1,
map keys, shuffled option order, unrelated table options); see ``tests/golden/README.md``.
lakeskip must rebuild each one byte for byte from the same options and rows: the payloads
alone were already identical, the column order is Paimon's Java HashMap iteration order.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeskip import types as T
from lakeskip.index.container_order import (
    LAYOUT_LEGACY,
    LAYOUT_TYPE_FIRST,
    container_order,
    java_string_hash,
)
from lakeskip.index.file_index import build_file_index
from lakeskip.index.format import FileIndexContainer
from lakeskip.index.options import parse_file_index_options

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "java"
CASES: list[dict[str, Any]] = json.loads(
    (GOLDEN / "container_writer.json").read_text(encoding="utf-8")
)["cases"]
CASES_1_2: list[dict[str, Any]] = json.loads(
    (GOLDEN / "container_writer_1_2.json").read_text(encoding="utf-8")
)["cases"]
_TYPES = {"INT": T.INT, "BIGINT": T.BIGINT, "STRING": T.STRING}


def _dtype(name: str) -> T.DataType:
    return _TYPES[name] if name in _TYPES else T.map_of(T.STRING, T.STRING)


def _build(case: dict[str, Any], layout: str) -> bytes:
    row_type = T.RowType.of(*((n, _dtype(t)) for n, t in case["fields"]))
    options = dict(case["options"])
    opts = parse_file_index_options(options, row_type)
    if layout != LAYOUT_TYPE_FIRST:
        order = container_order([(s.column, s.map_key, s.index_type) for s in opts.specs],
                                options, layout)  # fmt: skip
        opts = type(opts)(opts.specs, opts.in_manifest_threshold, opts.read_enabled, tuple(order))
    columns = {}
    for (name, t), values in zip(case["fields"], case["rows"], strict=True):
        if t in _TYPES:
            columns[name] = pa.array(values, _dtype(t).to_arrow())
        else:
            maps = [None if v is None else list(v.items()) for v in values]
            columns[name] = pa.array(maps, pa.map_(pa.string(), pa.string()))
    built = build_file_index(pa.table(columns), row_type, opts)
    assert built.embedded is not None, f"{case['case']}: expected an embedded container"
    return built.embedded


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_container_bytes_match_paimon_0_9(case: dict[str, Any]) -> None:
    want = bytes.fromhex(case["hex"])
    got = _build(case, LAYOUT_LEGACY)
    java_cols = FileIndexContainer.decode(want).columns()
    ours = FileIndexContainer.decode(got).columns()
    # Paimon < 1.2 keeps one index type per column; these cases configure one
    assert ours == java_cols, f"{case['case']}: column order differs from Paimon 0.9"
    assert got == want, f"{case['case']}: same column order but bytes differ"


@pytest.mark.parametrize("case", CASES_1_2, ids=[c["case"] for c in CASES_1_2])
def test_container_bytes_match_paimon_1_2(case: dict[str, Any]) -> None:
    """Paimon >= 1.2 keys its maintainers by index type, then column (and writes every type
    of a column); lakeskip's default layout."""
    want = bytes.fromhex(case["hex"])
    got = _build(case, LAYOUT_TYPE_FIRST)
    java_cols = FileIndexContainer.decode(want).columns()
    assert FileIndexContainer.decode(got).columns() == java_cols, (
        f"{case['case']}: column order differs from Paimon 1.2"
    )
    assert got == want, f"{case['case']}: same column order but bytes differ"


def test_golden_cases_exercise_hashmap_ties() -> None:
    """At least some cases must have columns sharing a HashMap bin (insertion order decides),
    and some must differ from option order, or the vectors would not pin anything."""
    tie_cases = 0
    reordered = 0
    for case in CASES:
        cols = FileIndexContainer.decode(bytes.fromhex(case["hex"])).columns()
        cap = 16
        while len(cols) > cap * 0.75:
            cap *= 2
        bins = [((h & 0xFFFFFFFF) ^ ((h & 0xFFFFFFFF) >> 16)) & (cap - 1)
                for h in map(java_string_hash, cols)]  # fmt: skip
        tie_cases += len(set(bins)) < len(bins)
        listed = [c for k, v in case["options"] if k.endswith(".columns") for c in v.split(",")]
        reordered += cols != listed
    assert tie_cases >= 10, f"only {tie_cases} cases with a shared bin"
    assert reordered >= 30, f"only {reordered} cases where Paimon's order is not option order"


def test_layouts_agree_without_ties_and_keep_every_index() -> None:
    rng = random.Random(7)
    for _ in range(200):
        names = rng.sample([f"c{i}" for i in range(40)], rng.randint(1, 14))
        specs = [(n, None, rng.choice(["bloom-filter", "bitmap"])) for n in names]
        specs += [(n, None, "bsi") for n in rng.sample(names, min(2, len(names)))]
        opts: dict[str, str] = {}
        for t in ("bloom-filter", "bitmap", "bsi"):
            cols = [n for n, _, tt in specs if tt == t]
            if cols:
                opts[f"file-index.{t}.columns"] = ",".join(cols)
        for layout in (LAYOUT_TYPE_FIRST, LAYOUT_LEGACY):
            order = container_order(specs, opts, layout)
            got = sorted((n, t) for n, ts in order for t in ts)
            assert got == sorted((n, t) for n, _, t in specs), "every index exactly once"
            assert len({n for n, _ in order}) == len(order), "each column once"


def test_java_string_hash_matches_java() -> None:
    # printed by java.lang.String.hashCode() (OpenJDK 17)
    assert java_string_hash("a") == 97
    assert java_string_hash("bloom-filter") == 862074498
    assert java_string_hash("bitmap") == -1388777169
    assert java_string_hash("m[k1]") == 103479209
    assert java_string_hash("\U0001f600") == 1772899  # a surrogate pair: two UTF-16 units
