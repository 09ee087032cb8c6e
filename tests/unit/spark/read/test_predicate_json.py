"""Spark predicate JSON -> lakeskip expressions: never narrower than Spark's predicate.

Oracle: a reference SQL three-valued evaluator of the JSON tree itself (including the parts
lakeskip cannot translate, such as ``UPPER(s) = 'X'``), on hypothesis-generated rows with
nulls. Wherever Spark's predicate is TRUE the translation must be TRUE (else the planner
could skip a file holding that row); a translation marked exact must agree wherever Spark's predicate is TRUE or FALSE.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from lakeskip.expressions import AlwaysFalse, bind, evaluate_arrow_3vl
from lakeskip.spark.read.predicate_json import literal_from_json, predicate_from_json, translate
from lakeskip.types import BIGINT, STRING, RowType

ROW_TYPE = RowType.of(("a", BIGINT), ("s", STRING))
INTS = st.one_of(st.none(), st.integers(-3, 3))
STRS = st.one_of(st.none(), st.sampled_from(["", "x", "X", "xy", "b"]))

ROWS = st.lists(st.tuples(INTS, STRS), min_size=1, max_size=30)


def _lit_a(v: int | None) -> dict[str, Any]:
    return {"lit": v, "type": "integer"} if v is not None else {"lit": None, "type": "null"}


A = {"ref": ["a"]}
S = {"ref": ["s"]}
UPPER_S = {"other": "UPPER(s)"}  # untranslatable on purpose


@st.composite
def leaves(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["cmp", "cmp_flip", "nullsafe", "in", "null", "starts", "upper"]))
    if kind in ("cmp", "cmp_flip"):
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        lit = _lit_a(draw(st.integers(-3, 3)))
        return {"op": op, "args": [A, lit] if kind == "cmp" else [lit, A]}
    if kind == "nullsafe":
        return {"op": "<=>", "args": [A, _lit_a(draw(INTS))]}
    if kind == "in":
        # no values at all: a runtime filter of a join whose other side is empty
        values = draw(st.lists(INTS, min_size=0, max_size=4))
        return {"op": "IN", "args": [A, *[_lit_a(v) for v in values]]}
    if kind == "null":
        return {
            "op": draw(st.sampled_from(["IS_NULL", "IS_NOT_NULL"])),
            "args": [draw(st.sampled_from([A, S]))],
        }
    if kind == "starts":
        return {
            "op": "STARTS_WITH",
            "args": [S, {"lit": draw(st.sampled_from(["", "x", "X"])), "type": "string"}],
        }
    return {
        "op": "=",
        "args": [UPPER_S, {"lit": draw(st.sampled_from(["X", "XY"])), "type": "string"}],
    }


def predicates() -> st.SearchStrategy[dict[str, Any]]:
    return st.recursive(
        leaves(),
        lambda kids: st.one_of(
            st.tuples(st.sampled_from(["AND", "OR"]), kids, kids).map(
                lambda t: {"op": t[0], "args": [t[1], t[2]]}
            ),
            kids.map(lambda k: {"op": "NOT", "args": [k]}),
        ),
        max_leaves=6,
    )


def _value(node: dict[str, Any], row: dict[str, Any]) -> Any:
    if "ref" in node:
        return row[node["ref"][0]]
    if "other" in node:
        s = row["s"]
        return None if s is None else s.upper()
    return literal_from_json(node)


def sql_eval(node: dict[str, Any], row: dict[str, Any]) -> bool | None:
    """SQL three-valued logic, as Spark evaluates the predicate."""
    op, args = node["op"], node["args"]
    if op == "AND":
        left, right = sql_eval(args[0], row), sql_eval(args[1], row)
        if left is False or right is False:
            return False
        return None if left is None or right is None else True
    if op == "OR":
        left, right = sql_eval(args[0], row), sql_eval(args[1], row)
        if left is True or right is True:
            return True
        return None if left is None or right is None else False
    if op == "NOT":
        v = sql_eval(args[0], row)
        return None if v is None else not v
    if op == "IS_NULL":
        return _value(args[0], row) is None
    if op == "IS_NOT_NULL":
        return _value(args[0], row) is not None
    x = _value(args[0], row)
    if op == "<=>":
        return x == _value(args[1], row)
    if op == "IN":
        values = [_value(a, row) for a in args[1:]]
        if x is None:
            return None
        if x in [v for v in values if v is not None]:
            return True
        return None if None in values else False
    y = _value(args[1], row)
    if x is None or y is None:
        return None
    if op == "STARTS_WITH":
        return bool(x.startswith(y))
    return {
        "=": x == y,
        "<>": x != y,
        "<": x < y,
        "<=": x <= y,
        ">": x > y,
        ">=": x >= y,
    }[op]


def _table(rows: list[tuple[int | None, str | None]]) -> pa.Table:
    return pa.table(
        {
            "a": pa.array([r[0] for r in rows], pa.int64()),
            "s": pa.array([r[1] for r in rows], pa.string()),
        }
    )


@given(rows=ROWS, node=predicates())
def test_translation_keeps_every_row_spark_selects(rows: list[Any], node: dict[str, Any]) -> None:
    expected = [sql_eval(node, {"a": a, "s": s}) for a, s in rows]
    translated = translate(node, ROW_TYPE)
    if translated is None:
        return  # untranslatable: the planner keeps every file
    expr, exact = translated
    got = evaluate_arrow_3vl(bind(ROW_TYPE, expr), _table(rows)).to_pylist()
    for row, want, have in zip(rows, expected, got, strict=True):
        if want is True:
            assert have is True, (
                f"row {row} matches {node} but the translation {expr!r} says {have}"
            )
        if exact and want is not None:
            # what NOT needs: TRUE and FALSE kept (NULL may come out FALSE: NOT of it then
            # selects more rows, never fewer)
            assert have == want, f"row {row}: exact translation {expr!r} gives {have}, Spark {want}"


@given(rows=ROWS, nodes=st.lists(st.one_of(predicates(), st.none()), max_size=3))
def test_conjunction_of_filters_keeps_every_row(rows: list[Any], nodes: list[Any]) -> None:
    expr = predicate_from_json(nodes, ROW_TYPE)
    if expr is None:
        return
    got = evaluate_arrow_3vl(bind(ROW_TYPE, expr), _table(rows)).to_pylist()
    for row, have in zip(rows, got, strict=True):
        selected = all(n is None or sql_eval(n, {"a": row[0], "s": row[1]}) is True for n in nodes)
        # a None filter is one Spark could not express: it may reject the row, never select
        # it on our behalf, so only rows every known filter selects must survive
        known = all(sql_eval(n, {"a": row[0], "s": row[1]}) is True for n in nodes if n is not None)
        if selected or known:
            assert have is True, f"row {row} selected by {nodes}, dropped by {expr!r}"


def test_map_key_reference_and_unknown_column() -> None:
    rt = RowType.of(
        ("attrs", __import__("lakeskip.types", fromlist=["map_of"]).map_of(STRING, STRING))
    )
    node = {"op": "=", "args": [{"ref": ["attrs\x00device"]}, {"lit": "tv", "type": "string"}]}
    t = translate(node, rt)
    assert t is not None and repr(t[0]) == "EqualTo(Reference('attrs', key='device'), 'tv')"
    unknown = {"op": "=", "args": [{"ref": ["nope"]}, {"lit": 1, "type": "integer"}]}
    assert translate(unknown, rt) is None, "a column the table lacks must not translate"


def test_in_of_no_values_selects_no_row() -> None:
    """Spark's runtime filter of a join whose other side is empty: ``a IN ()``, true for no
    row, skips every file; under NOT it is not used (inexact)."""
    t = translate({"op": "IN", "args": [A]}, ROW_TYPE)
    assert t is not None and isinstance(t[0], AlwaysFalse) and not t[1]
    assert translate({"op": "NOT", "args": [{"op": "IN", "args": [A]}]}, ROW_TYPE) is None
    assert translate({"op": "IN", "args": [{"ref": ["nope"]}]}, ROW_TYPE) is None


def test_in_of_null_values_only_selects_no_row() -> None:
    """``a IN (NULL)``: NULL or FALSE for every row (a join whose other side holds only NULL
    keys), so no row passes and every file may be skipped; under NOT (also never TRUE) it is
    not used (inexact), which keeps every file."""
    null = {"lit": None, "type": "integer"}
    t = translate({"op": "IN", "args": [A, null, null]}, ROW_TYPE)
    assert t is not None and isinstance(t[0], AlwaysFalse) and not t[1]
    assert translate({"op": "NOT", "args": [{"op": "IN", "args": [A, null]}]}, ROW_TYPE) is None
