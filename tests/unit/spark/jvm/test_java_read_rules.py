"""The Java read side's rules without a Spark session: ``PkMerge`` over the merge-rule case
table (``tests/cases/pk_merge_cases.json``) and ``LakeDvScan``'s reader over the
deletion-vector case table (``tests/fixtures/deletion_vectors/cases.json``), and
``PredicateJson``'s transcription of Spark predicates as Python's reader reads it back.

``tests/java/lakeskip/jvm/read/pk/ReadRulesCheck.java`` is compiled against the
catalog jar and pyspark's jars and run once, in one JVM, on every case; Python gives it what
the catalog sends (the merge rule as ``MergeEngine.to_json`` crosses the protocol, each DV as
the planner encodes it) and compares what it returns with the case tables."""

from __future__ import annotations

import base64
import datetime
import json
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyroaring import BitMap
from tests.cases.pk_merge_cases import KEY, Case
from tests.cases.pk_merge_cases import load as load_merge_cases
from tests.fixtures.deletion_vectors.cases import CASES as DV_CASES
from tests.fixtures.deletion_vectors.cases import ROW_TYPE as DV_ROW_TYPE

from lakeskip import types as T
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.expressions import bind
from lakeskip.expressions.arrow_eval import evaluate_arrow
from lakeskip.index.primitives.roaring import serialize_bitmap
from lakeskip.spark.jvm import build
from lakeskip.spark.jvm.protocol import MergeSpec, decode, encode
from lakeskip.spark.read.predicate_json import literal_from_json
from lakeskip.sql.query import condition_predicate

#: the Java checks, under tests/java/ (a source tree of their own, not a test package)
JAVA_TESTS = Path(__file__).resolve().parents[3] / "java"
SOURCES = sorted(JAVA_TESTS.rglob("*.java"))
MERGE_CASES = load_merge_cases()

# one javac and one JVM: not in make test-unit
pytestmark = pytest.mark.processes


def _merge_input(case: Case) -> dict[str, Any]:
    engine = MergeEngine.of(case.options, case.row_type, [KEY])
    return {
        "name": case.name,
        "key": KEY,
        # the rule as it crosses the protocol to LakePkScan
        "merge": encode(decode(MergeSpec, engine.to_json())),
        "columns": [[f.name, f.type.spark_ddl()] for f in case.row_type],
        "versions": [
            {"seq": seq, "kind": kind, "row": {n: _json_value(v) for n, v in values.items()}}
            for seq, kind, values in case.versions
        ],
    }


def _json_value(v: Any) -> Any:
    return str(v) if isinstance(v, Decimal) else v


def _dv_input() -> list[dict[str, Any]]:
    out = []
    for case in DV_CASES:
        files = []
        for i, f in enumerate(case.files):
            data = f.arrow(DV_ROW_TYPE)
            predicate = bind(DV_ROW_TYPE, condition_predicate(case.where, DV_ROW_TYPE, "t"))
            match = (
                evaluate_arrow(predicate, data).to_pylist() if case.where else [True] * len(f.rows)
            )
            dv = (
                base64.b64encode(serialize_bitmap(BitMap(f.deleted))).decode("ascii")
                if f.deleted
                else None
            )
            files.append(
                {
                    "name": f"data-{i}.parquet",
                    "rows": [list(r) for r in f.rows],
                    "row_group_rows": f.row_group_rows,
                    "match": [bool(m) for m in match],
                    "dv": dv,
                }
            )
        out.append({"name": case.name, "files": files})
    return out


@pytest.fixture(scope="module")
def java_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    java = shutil.which("java")
    if build.find_javac() is None or java is None:
        pytest.skip("no JDK: the Java rules are tested where the catalog jar can be built")
    jar = build.build_jar()
    _, spark_jars = build._pyspark_jars()
    tmp = tmp_path_factory.mktemp("java_rules")
    classes = tmp / "classes"
    cp = f"{jar}:{spark_jars}/*"
    javac = [build.find_javac() or "javac", "--release", "17", "-nowarn", "-encoding", "UTF-8"]
    subprocess.run(
        [*javac, "-cp", cp, "-d", str(classes), *map(str, SOURCES)], check=True, capture_output=True
    )
    given = tmp / "in.json"
    got = tmp / "out.json"
    given.write_text(
        json.dumps(
            {
                "merge": [_merge_input(c) for c in MERGE_CASES],
                "dv": _dv_input(),
                "literals": [{"type": t, "value": v} for t, v, _ in LITERALS],
            }
        )
    )
    proc = subprocess.run(
        [java, "-cp", f"{classes}:{cp}", "lakeskip.jvm.read.pk.ReadRulesCheck", given, got],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(got.read_text())
    return result


def _typed(case: Case, row: list[Any]) -> tuple[Any, ...]:
    out = []
    for f, v in zip(case.row_type, row, strict=True):
        if v is not None and f.type.root == T.TypeRoot.DECIMAL:
            v = Decimal(v)
        out.append(v)
    return tuple(out)


@pytest.mark.parametrize("case", MERGE_CASES, ids=[c.name for c in MERGE_CASES])
def test_java_merge_matches_the_case_table(case: Case, java_results: dict[str, Any]) -> None:
    got = java_results["merge"][case.name]
    assert "order_matters" not in got, got["order_matters"]
    if case.error is not None:
        assert case.error in got.get("error", ""), got
        return
    assert "error" not in got, got["error"]
    rows = sorted((_typed(case, r) for r in got["rows"]), key=lambda r: r[0])
    assert rows == case.expected()


@pytest.mark.parametrize("case", DV_CASES, ids=[c.name for c in DV_CASES])
def test_java_dv_reader_matches_the_case_table(case: Any, java_results: dict[str, Any]) -> None:
    rows = [tuple(r) for r in java_results["dv"][case.name]]
    # Spark's filter after the scan
    live = pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "v": pa.array([r[1] for r in rows], pa.int32()),
        }
    )
    predicate = bind(DV_ROW_TYPE, condition_predicate(case.where, DV_ROW_TYPE, "t"))
    kept = live.filter(evaluate_arrow(predicate, live))
    got = sorted((tuple(r.values()) for r in kept.to_pylist()), key=lambda r: r[0])
    assert got == list(case.expected), case.why


#: (Spark type, the value as Java builds it, what Python's reader must make of Java's JSON)
LITERALS: list[tuple[str, Any, Any]] = [
    ("int", 5, 5),
    ("bigint", 2**40 + 1, 2**40 + 1),
    ("smallint", -3, -3),
    ("tinyint", 7, 7),
    ("boolean", True, True),
    ("float", "1.5", 1.5),
    ("double", "-0.25", -0.25),
    ("double", "-Infinity", float("-inf")),
    ("decimal(4,2)", "12.30", Decimal("12.30")),
    ("string", "é\u00e9 x", "é\u00e9 x"),
    ("date", 19723, datetime.date(2024, 1, 1)),
    ("timestamp", 1704067200000001, datetime.datetime(2024, 1, 1, 0, 0, 0, 1, datetime.UTC)),
    ("timestamp_ntz", 1704067200000000, datetime.datetime(2024, 1, 1)),
    ("binary", "AAEC/w==", b"\x00\x01\x02\xff"),
    ("void", None, None),
]


def test_java_literals_read_back_as_python_values(java_results: dict[str, Any]) -> None:
    """``PredicateJson`` writes each Spark literal so that the Python reader gets its value
    back exactly (the type tag included)."""
    got = java_results["literals"]
    assert len(got) == len(LITERALS)
    for (spark_type, _, expected), node in zip(LITERALS, got, strict=True):
        assert node["op"] == "=" and node["args"][0] == {"ref": ["c"]}, node
        value = literal_from_json(node["args"][1])
        assert value == expected and type(value) is type(expected), (spark_type, node)
    nan = literal_from_json({"lit": "NaN", "type": "double"})
    assert nan != nan


def test_java_predicate_trees_are_transcribed(java_results: dict[str, Any]) -> None:
    """Spark's V2 names, nested references as name paths, AND / OR / NOT kept as trees, and
    an expression Python cannot read passed as ``other`` (Python then keeps every file)."""
    five = {"lit": 5, "type": "integer"}
    assert java_results["predicates"] == [
        {
            "op": "AND",
            "args": [
                {"op": "=", "args": [{"ref": ["a"]}, five]},
                {
                    "op": "NOT",
                    "args": [
                        {"op": "STARTS_WITH", "args": [{"ref": ["s"]}, _string("x")]},
                    ],
                },
            ],
        },
        {
            "op": "OR",
            "args": [
                {"op": "IS_NULL", "args": [{"ref": ["st", "inner"]}]},
                {
                    "op": "IN",
                    "args": [
                        {"ref": ["a"]},
                        {"lit": 1, "type": "integer"},
                        {"lit": 2, "type": "integer"},
                    ],
                },
            ],
        },
        {"op": "<", "args": [{"other": "UPPER(s)"}, _string("X")]},
    ]


def _string(s: str) -> dict[str, Any]:
    return {"lit": s, "type": "string"}


def test_java_scan_cache_keys(java_results: dict[str, Any]) -> None:
    """A repeated query shares its scan's key whatever ids Spark gave its attributes; another
    literal or column never does, nor 0.0 against -0.0 (``ScanCache.key``: the filters' text);
    the key's copy of the SQL / Hadoop settings is shared while they hold the same entries,
    and unequal after any change of a value or an entry (``Settings``); a scan's Hadoop
    settings count as made of those copies and its options only when they are exactly Spark's
    overlay of them (``Settings.Frozen.madeWith``, the reader factories' key)."""
    assert java_results["cache_keys"] == {
        "same_filter_other_ids": True,
        "other_literal": False,
        "zero_and_negative_zero": False,
        "other_column": False,
        "settings_unchanged_same_copy": True,
        "settings_changed_in_place": False,
        "settings_back": True,
        "settings_added": False,
        "settings_removed": False,
        "settings_output_only": True,
        "made_with": True,
        "made_with_output_only_aside": True,
        "made_with_an_entry_more": False,
        "made_with_an_entry_missing": False,
        "made_with_an_earlier_value": False,
        "made_with_the_path": False,
    }


def test_every_case_reached_java(java_results: dict[str, Any]) -> None:
    assert set(java_results["merge"]) == {c.name for c in MERGE_CASES}
    assert set(java_results["dv"]) == {c.name for c in DV_CASES}
