"""The Arrow oracle against a pure-Python row-by-row evaluator (tests/unit/expressions/pyeval.py).

Random tables of every scalar type (nulls everywhere, NaN and +-0.0 in floats, a map column
with missing keys) and random predicates with literals of foreign Python types: the rows
``evaluate_arrow(bind(schema, p))`` selects must be exactly the rows the Python evaluator
selects for the *unbound* ``p`` -- and the same for ``NOT p`` (together: the same
three-valued result). This checks binding's coercions, NOT push-down and the kernels."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.expressions.pyeval import eval_row, select
from tests.unit.expressions.strategies import ALL_SCALARS, column_values, leaf, predicates

from lakeskip import expressions as E
from lakeskip import types as T

NAMES = sorted(ALL_SCALARS)
ZONES = ["UTC", "America/Los_Angeles", "Asia/Kolkata"]
MAP_TYPE = T.map_of(T.STRING, T.STRING)


def _map_values(draw: Any, n: int) -> list[Any]:
    entry = st.dictionaries(
        st.sampled_from(["k", "j"]), st.one_of(st.none(), st.sampled_from(["x", "xy", "y"]))
    )
    return [draw(st.one_of(st.none(), entry.map(lambda d: list(d.items())))) for _ in range(n)]


@st.composite
def tables(draw: Any) -> tuple[T.RowType, pa.Table, dict[str, list[Any]]]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=2, max_size=6, unique=True))
    n = draw(st.integers(0, 12))
    cols = {c: draw(column_values(c, n)) for c in names}
    schema = T.RowType.of(*[(c, ALL_SCALARS[c][0]) for c in names], ("m", MAP_TYPE))
    arrays = {c: pa.array(cols[c], ALL_SCALARS[c][0].to_arrow()) for c in names}
    arrays["m"] = pa.array(_map_values(draw, n), MAP_TYPE.to_arrow())
    return schema, pa.table(arrays), cols


@given(data=st.data())
def test_arrow_oracle_matches_python_rows(data: st.DataObject) -> None:
    schema, table, cols = data.draw(tables(), label="table")
    tz = data.draw(st.sampled_from(ZONES), label="tz")
    rows = table.to_pylist()
    for _ in range(5):
        pred = data.draw(predicates(cols, depth=3), label="predicate")
        if data.draw(st.booleans(), label="with map key"):
            key = E.Reference("m", key=data.draw(st.sampled_from(["k", "j"])))
            map_leaf = leaf(data.draw, "s", ["x", "xy"], term=key)
            pred = E.Or(pred, map_leaf) if data.draw(st.booleans()) else E.And(pred, map_leaf)
        for p in (pred, E.Not(pred)):
            bound = E.bind(schema, p, time_zone=tz)
            got = E.evaluate_arrow(bound, table)
            assert got.null_count == 0, "evaluate_arrow never returns nulls"
            expected = select(p, rows, schema, tz)
            assert got.to_pylist() == expected, (
                f"oracle disagrees for {p!r} bound as {bound!r} (tz={tz}): "
                f"arrow={got.to_pylist()} python={expected} rows={rows}"
            )


@given(data=st.data())
def test_three_valued_result_without_rewrites(data: st.DataObject) -> None:
    """With literals taken from the data (no coercion rewrites), the 3-valued Arrow result
    of a tree bound *with* its NOTs equals the Python one, nulls included."""
    schema, table, cols = data.draw(tables(), label="table")
    rows = table.to_pylist()
    present = {c: [v for v in vs if v is not None] for c, vs in cols.items()}
    names = [
        c for c, vs in present.items() if vs and ALL_SCALARS[c][0].root is not T.TypeRoot.STRING
    ]
    if not names:
        return
    exact = {c: present[c] for c in names}

    def exact_leaf(c: str) -> st.SearchStrategy[E.BooleanExpression]:
        v = st.sampled_from(exact[c])
        return st.one_of(
            st.builds(E.EqualTo, st.just(c), v),
            st.builds(E.LessThan, st.just(c), v),
            st.builds(E.GreaterThanOrEqual, st.just(c), v),
            st.builds(E.In, st.just(c), st.lists(v, min_size=1, max_size=3)),
            st.builds(E.NotIn, st.just(c), st.lists(v, min_size=1, max_size=3)),
            st.builds(E.IsNull, st.just(c)),
        )

    leaves = st.sampled_from(names).flatmap(exact_leaf)
    trees = st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.builds(E.And, kids, kids), st.builds(E.Or, kids, kids), st.builds(E.Not, kids)
        ),
        max_leaves=6,
    )
    pred = data.draw(trees, label="predicate")
    got = E.evaluate_arrow_3vl(E.bind_expression(schema, pred), table).to_pylist()
    expected = [eval_row(pred, r, schema) for r in rows]
    assert got == expected, f"3VL differs for {pred!r}: arrow={got} python={expected}"


NAN = float("nan")


@pytest.mark.parametrize(
    ("pred", "expected"),
    [
        (E.EqualTo("f", NAN), [True, False, False, False, False]),
        (E.NotEqualTo("f", NAN), [False, True, True, True, False]),
        (E.GreaterThan("f", 1e308), [True, False, False, True, False]),
        (E.GreaterThan("f", float("inf")), [True, False, False, False, False]),
        (E.LessThan("f", NAN), [False, True, True, True, False]),
        (E.LessThanOrEqual("f", NAN), [True, True, True, True, False]),
        (E.EqualTo("f", 0.0), [False, True, True, False, False]),
        (E.In("f", [NAN, 0.0]), [True, True, True, False, False]),
        (E.NotIn("f", [NAN, 0.0]), [False, False, False, True, False]),
        (E.NotIn("f", [1.0, 2.0]), [True, True, True, True, False]),
    ],
)
def test_spark_float_semantics(pred: E.BooleanExpression, expected: list[bool]) -> None:
    schema = T.RowType.of(("f", T.DOUBLE))
    table = pa.table({"f": pa.array([NAN, 0.0, -0.0, float("inf"), None], pa.float64())})
    got = E.evaluate_arrow(E.bind(schema, pred), table).to_pylist()
    assert got == expected, f"Spark float semantics for {pred!r}: got {got}"


def test_map_key_lookup_and_three_valued_not() -> None:
    schema = T.RowType.of(("m", MAP_TYPE), ("a", T.INT))
    table = pa.table(
        {
            "m": pa.array([[("k", "x")], [("j", "x")], None, [("k", None)]], MAP_TYPE.to_arrow()),
            "a": pa.array([1, None, 3, None], pa.int32()),
        }
    )
    k = E.Reference("m", key="k")
    assert E.evaluate_arrow(E.bind(schema, E.EqualTo(k, "x")), table).to_pylist() == [
        True,
        False,
        False,
        False,
    ], "map lookup: only row 0 has m['k'] = 'x'"
    assert E.evaluate_arrow(E.bind(schema, E.IsNull(k)), table).to_pylist() == [
        False,
        True,
        True,
        True,
    ], "missing key, null map and null value are all null"
    three = E.evaluate_arrow_3vl(E.bind_expression(schema, E.Not(E.EqualTo("a", 1))), table)
    assert three.to_pylist() == [False, None, True, None], "NOT of unknown stays unknown"
    assert E.evaluate_arrow(
        E.bind(schema, E.Or(E.EqualTo("a", 3), E.IsNull("a"))), table
    ).to_pylist() == [
        False,
        True,
        True,
        True,
    ], "Kleene OR: unknown OR true is true"


def test_constants_and_empty_table() -> None:
    schema = T.RowType.of(("a", T.INT))
    empty = pa.table({"a": pa.array([], pa.int32())})
    assert E.evaluate_arrow(E.bind(schema, E.EqualTo("a", 1)), empty).to_pylist() == []
    t = pa.table({"a": pa.array([1, None], pa.int32())})
    assert E.evaluate_arrow(E.AlwaysTrue(), t).to_pylist() == [True, True]
    assert E.evaluate_arrow(E.AlwaysFalse(), t).to_pylist() == [False, False]
    chunked = pa.Table.from_batches(
        [
            pa.record_batch({"a": pa.array([1], pa.int32())}),
            pa.record_batch({"a": pa.array([2], pa.int32())}),
        ]
    )
    got = E.evaluate_arrow(E.bind(schema, E.GreaterThan("a", 1)), chunked).to_pylist()
    assert got == [False, True], "chunked columns are combined"


def test_unbound_tree_is_rejected() -> None:
    from lakeskip.errors import InvalidArgumentError

    t = pa.table({"a": pa.array([1], pa.int32())})
    with pytest.raises(InvalidArgumentError, match="bound"):
        E.evaluate_arrow(E.EqualTo("a", 1), t)
