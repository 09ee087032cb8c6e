"""Hypothesis strategies: random typed columns (nulls, duplicates, edges) and random
predicates over them, with literals drawn from the data, around its edges and of "foreign"
Python types that binding must coerce exactly (``1.5`` for an INT column, ``"2024-01-02"``
for a DATE, ``0.1`` for a FLOAT, a naive datetime for a TIMESTAMP_LTZ).

Reuse: ``predicates(columns)`` draws an unbound predicate over ``{name: values}``; the
column types come from :data:`ALL_SCALARS` by name unless ``types`` is given.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from lakeskip import expressions as E
from lakeskip import types as T

EPOCH = datetime.datetime(1970, 1, 1)
UTC = datetime.timezone.utc


def _f32(x: float) -> float:
    return float(struct.unpack(">f", struct.pack(">f", x))[0])


_DOUBLES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 1.5, -2.25]),
)
_FLOATS32 = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0.0, -0.0, 1.5, _f32(0.1), 3.4028234663852886e38]),
)

# the columns every index / planner test draws from (keep stable: other tests iterate it)
SCALARS: dict[str, tuple[T.DataType, st.SearchStrategy[Any]]] = {
    "i8": (T.TINYINT, st.integers(-128, 127)),
    "i32": (T.INT, st.integers(-50, 50)),
    "i64": (T.BIGINT, st.one_of(st.integers(-(2**63) + 1, 2**63 - 1), st.integers(-20, 20))),
    "f64": (T.DOUBLE, _DOUBLES),
    "s": (
        T.STRING,
        st.one_of(st.text(alphabet="abcé\x00", max_size=4), st.sampled_from(["a", "ab", "b"])),
    ),
    "d": (T.DATE, st.dates(datetime.date(1960, 1, 1), datetime.date(2030, 1, 1))),
    "ts": (
        T.TIMESTAMP_LTZ,
        st.datetimes(datetime.datetime(1990, 1, 1), datetime.datetime(2030, 1, 1)).map(
            lambda d: d.replace(tzinfo=UTC)
        ),
    ),
    "dec": (T.decimal_type(9, 2), st.decimals(-(10**6), 10**6, places=2, allow_nan=False)),
    "b": (T.BOOLEAN, st.booleans()),
}

# more types, for the expression and stats tests
EXTRA_SCALARS: dict[str, tuple[T.DataType, st.SearchStrategy[Any]]] = {
    "i16": (T.SMALLINT, st.integers(-(2**15), 2**15 - 1)),
    "f32": (T.FLOAT, _FLOATS32),
    "ntz": (
        T.TIMESTAMP,
        st.datetimes(datetime.datetime(1990, 1, 1), datetime.datetime(2030, 1, 1)),
    ),
    "ts_ms": (
        T.DataType(T.TypeRoot.TIMESTAMP_LTZ, precision=3),
        st.datetimes(datetime.datetime(1990, 1, 1), datetime.datetime(2030, 1, 1)).map(
            lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000, tzinfo=UTC)
        ),
    ),
    "bin": (T.BINARY, st.binary(max_size=3)),
}

ALL_SCALARS = {**SCALARS, **EXTRA_SCALARS}


def column_values(name: str, n: int) -> st.SearchStrategy[list[Any]]:
    _, values = ALL_SCALARS[name]
    pool = st.lists(values, min_size=1, max_size=6)
    # few distinct values (duplicates) or many, always with some nulls possible
    return pool.flatmap(
        lambda p: st.lists(st.one_of(st.none(), st.sampled_from(p), values), min_size=n, max_size=n)
    )


def to_arrow(name: str, values: list[Any]) -> pa.Array:
    t, _ = ALL_SCALARS[name]
    return pa.array(values, t.to_arrow())


def _type_values(t: T.DataType) -> st.SearchStrategy[Any]:
    for dtype, values in ALL_SCALARS.values():
        if dtype == t:
            return values
    if t.root is T.TypeRoot.STRING:
        return SCALARS["s"][1]
    raise ValueError(f"no literal strategy for {t}")


def _foreign(t: T.DataType, v: Any) -> st.SearchStrategy[Any]:
    """Literals of other Python types that still compare with a column of type ``t``."""
    r = t.root
    if t.is_integer and isinstance(v, int):
        return st.sampled_from(
            [
                decimal.Decimal(v) + decimal.Decimal("0.5"),
                decimal.Decimal(v) - decimal.Decimal("0.25"),
                float(v) + 0.5,
                float(v),
                2**63,
                -(2**63) - 1,
                1000,
                -1000,
                40000,
                float("nan"),
                float("inf"),
                -float("inf"),
            ]
        )
    if r in (T.TypeRoot.FLOAT, T.TypeRoot.DOUBLE) and isinstance(v, float) and v == v:
        return st.sampled_from([0.1, v + 1e-9, decimal.Decimal("0.1"), 3, 1e39, -1e39, v])
    if r is T.TypeRoot.DECIMAL and isinstance(v, decimal.Decimal):
        return st.sampled_from(
            [v + decimal.Decimal("0.005"), str(v), float(v), int(v), decimal.Decimal("1e7")]
        )
    if r is T.TypeRoot.DATE and isinstance(v, datetime.date):
        return st.just(v.isoformat())
    if t.is_timestamp and isinstance(v, datetime.datetime):
        naive = v.replace(tzinfo=None)
        return st.sampled_from(
            [
                naive,
                naive.isoformat(sep=" "),
                naive.date(),
                v.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
                naive + datetime.timedelta(microseconds=1),
            ]
        )
    return st.just(v)


def _literal(t: T.DataType, data: list[Any]) -> st.SearchStrategy[Any]:
    values = _type_values(t)
    present = [v for v in data if v is not None]
    base = st.one_of(st.sampled_from(present), values) if present else values
    return st.one_of(base, base.flatmap(lambda v: _foreign(t, v)))


def _type_of(name: str, types: dict[str, T.DataType] | None) -> T.DataType:
    return types[name] if types is not None else ALL_SCALARS[name][0]


def leaf(
    draw: Any,
    name: str,
    data: list[Any],
    types: dict[str, T.DataType] | None = None,
    term: str | E.Reference | None = None,
) -> E.BooleanExpression:
    """One random leaf over column ``name`` (values ``data``); ``term`` overrides the
    reference (e.g. a map key) while ``name`` still selects the literal type."""
    t = _type_of(name, types)
    ref: str | E.Reference = name if term is None else term
    ops = ["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "is_null", "not_null"]
    if t.root is T.TypeRoot.STRING:
        ops += ["starts_with", "not_starts_with"]
    op = draw(st.sampled_from(ops))
    lit = _literal(t, data)
    if op == "is_null":
        return E.IsNull(ref)
    if op == "not_null":
        return E.IsNotNull(ref)
    if op in ("in", "not_in"):
        vals = draw(st.lists(lit, min_size=1, max_size=4))
        return (E.In if op == "in" else E.NotIn)(ref, vals)
    if op in ("starts_with", "not_starts_with"):
        v = draw(lit)
        prefix = v[: draw(st.integers(0, len(v)))] if isinstance(v, str) else "a"
        return (E.StartsWith if op == "starts_with" else E.NotStartsWith)(ref, prefix)
    cls = {
        "eq": E.EqualTo,
        "ne": E.NotEqualTo,
        "lt": E.LessThan,
        "le": E.LessThanOrEqual,
        "gt": E.GreaterThan,
        "ge": E.GreaterThanOrEqual,
    }[op]
    return cls(ref, draw(lit))


@st.composite
def predicates(
    draw: Any,
    columns: dict[str, list[Any]],
    depth: int = 2,
    types: dict[str, T.DataType] | None = None,
) -> E.BooleanExpression:
    """A random predicate (And/Or/Not nesting up to ``depth``) over ``{name: values}``."""
    names = list(columns)
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        name = draw(st.sampled_from(names))
        return leaf(draw, name, columns[name], types)
    kind = draw(st.sampled_from(["and", "or", "not"]))
    if kind == "not":
        return E.Not(draw(predicates(columns, depth - 1, types)))
    left = draw(predicates(columns, depth - 1, types))
    right = draw(predicates(columns, depth - 1, types))
    return E.And(left, right) if kind == "and" else E.Or(left, right)
