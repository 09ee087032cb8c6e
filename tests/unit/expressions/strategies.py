"""Hypothesis strategies: random typed columns (nulls, duplicates, edges) and random
predicates over them, with literals drawn from the data and around its edges."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from lakeskip import expressions as E
from lakeskip import types as T

EPOCH = datetime.datetime(1970, 1, 1)

SCALARS: dict[str, tuple[T.DataType, st.SearchStrategy[Any]]] = {
    "i8": (T.TINYINT, st.integers(-128, 127)),
    "i32": (T.INT, st.integers(-50, 50)),
    "i64": (T.BIGINT, st.one_of(st.integers(-(2**63) + 1, 2**63 - 1), st.integers(-20, 20))),
    "f64": (
        T.DOUBLE,
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True, width=64),
            st.sampled_from([0.0, -0.0, 1.5, -2.25]),
        ),
    ),
    "s": (
        T.STRING,
        st.one_of(st.text(alphabet="abcé\x00", max_size=4), st.sampled_from(["a", "ab", "b"])),
    ),
    "d": (T.DATE, st.dates(datetime.date(1960, 1, 1), datetime.date(2030, 1, 1))),
    "ts": (
        T.TIMESTAMP_LTZ,
        st.datetimes(datetime.datetime(1990, 1, 1), datetime.datetime(2030, 1, 1)).map(
            lambda d: d.replace(tzinfo=datetime.timezone.utc)
        ),
    ),
    "dec": (T.decimal_type(9, 2), st.decimals(-(10**6), 10**6, places=2, allow_nan=False)),
    "b": (T.BOOLEAN, st.booleans()),
}


def column_values(name: str, n: int) -> st.SearchStrategy[list[Any]]:
    _, values = SCALARS[name]
    pool = st.lists(values, min_size=1, max_size=6)
    # few distinct values (duplicates) or many, always with some nulls possible
    return pool.flatmap(
        lambda p: st.lists(st.one_of(st.none(), st.sampled_from(p), values), min_size=n, max_size=n)
    )


def to_arrow(name: str, values: list[Any]) -> pa.Array:
    t, _ = SCALARS[name]
    return pa.array(values, t.to_arrow())


def _literal(name: str, data: list[Any]) -> st.SearchStrategy[Any]:
    _, values = SCALARS[name]
    present = [v for v in data if v is not None]
    if present:
        return st.one_of(st.sampled_from(present), values)
    return values


def leaf(draw: Any, name: str, data: list[Any]) -> E.BooleanExpression:
    t, _ = SCALARS[name]
    ops = ["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "is_null", "not_null"]
    if t.root is T.TypeRoot.STRING:
        ops += ["starts_with", "not_starts_with"]
    op = draw(st.sampled_from(ops))
    lit = _literal(name, data)
    if op == "is_null":
        return E.IsNull(name)
    if op == "not_null":
        return E.IsNotNull(name)
    if op in ("in", "not_in"):
        vals = draw(st.lists(lit, min_size=1, max_size=4))
        return (E.In if op == "in" else E.NotIn)(name, vals)
    if op in ("starts_with", "not_starts_with"):
        v = draw(lit)
        prefix = v[: draw(st.integers(0, len(v)))] if isinstance(v, str) else "a"
        return (E.StartsWith if op == "starts_with" else E.NotStartsWith)(name, prefix)
    cls = {
        "eq": E.EqualTo,
        "ne": E.NotEqualTo,
        "lt": E.LessThan,
        "le": E.LessThanOrEqual,
        "gt": E.GreaterThan,
        "ge": E.GreaterThanOrEqual,
    }[op]
    v = draw(lit)
    if t.root in (T.TypeRoot.TINYINT, T.TypeRoot.INT) and draw(st.booleans()):
        v = draw(
            st.sampled_from(
                [
                    decimal.Decimal(v) + decimal.Decimal("0.5") if isinstance(v, int) else v,
                    1000,
                    -1000,
                ]
            )
        )
    return cls(name, v)


@st.composite
def predicates(draw: Any, columns: dict[str, list[Any]], depth: int = 2) -> E.BooleanExpression:
    """A random predicate (And/Or/Not nesting) over the given columns."""
    names = list(columns)
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        name = draw(st.sampled_from(names))
        return leaf(draw, name, columns[name])
    kind = draw(st.sampled_from(["and", "or", "not"]))
    if kind == "not":
        return E.Not(draw(predicates(columns, depth - 1)))
    left = draw(predicates(columns, depth - 1))
    right = draw(predicates(columns, depth - 1))
    return E.And(left, right) if kind == "and" else E.Or(left, right)
