"""Binding: column resolution, exact literal coercion, map keys, time zones, errors."""

from __future__ import annotations

import datetime
import decimal
import math
import struct

import pytest

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.errors import ColumnNotFoundError, TypeMismatchError

DEC = T.decimal_type(5, 2)
TS_MS = T.DataType(T.TypeRoot.TIMESTAMP_LTZ, precision=3)
SCHEMA = T.RowType.of(
    ("a", T.TINYINT),
    ("i", T.INT),
    ("d", DEC),
    ("f", T.FLOAT),
    ("g", T.DOUBLE),
    ("s", T.STRING),
    ("day", T.DATE),
    ("ltz", T.TIMESTAMP_LTZ),
    ("ntz", T.TIMESTAMP),
    ("ms", TS_MS),
    ("flag", T.BOOLEAN),
    ("raw", T.BINARY),
    ("m", T.map_of(T.STRING, T.INT)),
    ("Mixed", T.BIGINT),
)


def _ref(name: str) -> E.BoundReference:
    f = SCHEMA.field(name)
    return E.BoundReference(f, f.type)


def _f32(x: float) -> float:
    return float(struct.unpack(">f", struct.pack(">f", x))[0])


A, I, D, F, G = _ref("a"), _ref("i"), _ref("d"), _ref("f"), _ref("g")  # noqa: E741 (column i)
NEXT_F32_ABOVE_01 = _f32(0.1)  # float32(0.1) rounds up: 0.100000001490116...
PREV_F32_BELOW_01 = float(struct.unpack(">f", struct.pack(">I", 0x3DCCCCCC))[0])

CASES = [
    # integer column, non-integral literal: exact rewrites
    (E.LessThan("a", 1.5), E.BoundLessThanOrEqual(A, 1)),
    (E.LessThanOrEqual("a", decimal.Decimal("1.5")), E.BoundLessThanOrEqual(A, 1)),
    (E.GreaterThan("a", 1.5), E.BoundGreaterThanOrEqual(A, 2)),
    (E.GreaterThanOrEqual("a", -1.5), E.BoundGreaterThanOrEqual(A, -1)),
    (E.EqualTo("a", 1.5), E.AlwaysFalse()),
    (E.NotEqualTo("a", 1.5), E.BoundIsNotNull(A)),
    (E.EqualTo("a", 2.0), E.BoundEqualTo(A, 2)),
    (E.EqualTo("a", decimal.Decimal("2.00")), E.BoundEqualTo(A, 2)),
    # out of the type's range: never AlwaysTrue (null rows must stay unselected)
    (E.LessThan("a", 1000), E.BoundIsNotNull(A)),
    (E.GreaterThan("a", 1000), E.AlwaysFalse()),
    (E.GreaterThan("a", -1000), E.BoundIsNotNull(A)),
    (E.LessThanOrEqual("a", -129), E.AlwaysFalse()),
    (E.EqualTo("a", 1000), E.AlwaysFalse()),
    (E.NotEqualTo("a", 1000), E.BoundIsNotNull(A)),
    (E.LessThan("a", 127.5), E.BoundLessThanOrEqual(A, 127)),
    (E.GreaterThan("a", 127.5), E.AlwaysFalse()),
    (E.LessThan("a", -128.5), E.AlwaysFalse()),
    (E.LessThan("i", 2**40), E.BoundIsNotNull(I)),
    # NaN / infinities vs integers: Spark compares as doubles, NaN above everything
    (E.LessThan("a", math.nan), E.BoundIsNotNull(A)),
    (E.GreaterThanOrEqual("a", math.nan), E.AlwaysFalse()),
    (E.LessThan("a", math.inf), E.BoundIsNotNull(A)),
    (E.GreaterThan("a", -math.inf), E.BoundIsNotNull(A)),
    # In / NotIn drop values the type cannot hold
    (E.In("a", [1, 1.5, 1000]), E.BoundEqualTo(A, 1)),
    (E.In("a", [1.5, 1000]), E.AlwaysFalse()),
    (E.In("a", [1, 2.0, 3]), E.BoundIn(A, [1, 2, 3])),
    (E.NotIn("a", [1, 1.5]), E.BoundNotEqualTo(A, 1)),
    (E.NotIn("a", [1.5, 1000]), E.BoundIsNotNull(A)),
    (E.NotIn("a", [1, 2]), E.BoundNotIn(A, [1, 2])),
    # decimals: more scale than the column -> exact rewrite; out of precision
    (
        E.GreaterThan("d", decimal.Decimal("1.555")),
        E.BoundGreaterThanOrEqual(D, decimal.Decimal("1.56")),
    ),
    (E.LessThan("d", "1.555"), E.BoundLessThanOrEqual(D, decimal.Decimal("1.55"))),
    (E.EqualTo("d", 1.5), E.BoundEqualTo(D, decimal.Decimal("1.50"))),
    (E.EqualTo("d", 1), E.BoundEqualTo(D, decimal.Decimal("1.00"))),
    (E.EqualTo("d", decimal.Decimal("1.555")), E.AlwaysFalse()),
    (E.LessThan("d", 1000), E.BoundIsNotNull(D)),
    (E.GreaterThan("d", decimal.Decimal("999.995")), E.AlwaysFalse()),
    (
        E.GreaterThan("d", decimal.Decimal("999.985")),
        E.BoundGreaterThanOrEqual(D, decimal.Decimal("999.99")),
    ),
    # floats: int / Decimal literals become doubles; FLOAT compares as double
    (E.EqualTo("g", 1), E.BoundEqualTo(G, 1.0)),
    (E.EqualTo("g", decimal.Decimal("0.1")), E.BoundEqualTo(G, 0.1)),
    (E.EqualTo("f", 0.5), E.BoundEqualTo(F, 0.5)),
    (E.EqualTo("f", 0.1), E.AlwaysFalse()),
    (E.NotEqualTo("f", 0.1), E.BoundIsNotNull(F)),
    (E.LessThan("f", 0.1), E.BoundLessThanOrEqual(F, PREV_F32_BELOW_01)),
    (E.GreaterThan("f", 0.1), E.BoundGreaterThanOrEqual(F, NEXT_F32_ABOVE_01)),
    (E.GreaterThan("f", 1e39), E.BoundGreaterThanOrEqual(F, math.inf)),
    # strings, prefixes
    (E.StartsWith("s", ""), E.BoundIsNotNull(_ref("s"))),
    (E.NotStartsWith("s", ""), E.AlwaysFalse()),
    (E.StartsWith("s", "ab"), E.BoundStartsWith(_ref("s"), "ab")),
    # dates accept ISO strings
    (E.EqualTo("day", "1970-01-03"), E.BoundEqualTo(_ref("day"), 2)),
    (E.EqualTo("day", datetime.date(1969, 12, 31)), E.BoundEqualTo(_ref("day"), -1)),
    # timestamps accept dates and strings; millisecond columns round sub-ms literals exactly
    (E.EqualTo("ntz", "1970-01-01 00:00:01"), E.BoundEqualTo(_ref("ntz"), 1_000_000)),
    (E.EqualTo("ltz", datetime.date(1970, 1, 2)), E.BoundEqualTo(_ref("ltz"), 86_400_000_000)),
    (E.EqualTo("ms", "1970-01-01 00:00:00.0015"), E.AlwaysFalse()),
    (E.LessThan("ms", "1970-01-01 00:00:00.0015"), E.BoundLessThanOrEqual(_ref("ms"), 1)),
    (E.GreaterThan("ms", "1970-01-01 00:00:00.0015"), E.BoundGreaterThanOrEqual(_ref("ms"), 2)),
    (E.EqualTo("ms", "1970-01-01 00:00:00.002"), E.BoundEqualTo(_ref("ms"), 2)),
    # booleans, binary
    (E.EqualTo("flag", True), E.BoundEqualTo(_ref("flag"), True)),
    (E.EqualTo("raw", b"\x00"), E.BoundEqualTo(_ref("raw"), b"\x00")),
    # nullability is never folded (files from other engines may break NOT NULL)
    (E.IsNull("a"), E.BoundIsNull(A)),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[repr(c[0]) for c in CASES])
def test_coercion(expr: E.BooleanExpression, expected: E.BooleanExpression) -> None:
    got = E.bind(SCHEMA, expr)
    assert got == expected, f"bind({expr!r}) = {got!r}, expected {expected!r}"
    assert type(got) is type(expected), f"bound class of {expr!r}: {type(got).__name__}"


def test_bind_pushes_not_down_before_rewriting() -> None:
    # under NOT, "= 1.5 -> AlwaysFalse" would become AlwaysTrue and select null rows
    assert E.bind(SCHEMA, E.Not(E.EqualTo("a", 1.5))) == E.BoundIsNotNull(A), (
        "NOT (a = 1.5) keeps only non-null rows"
    )
    assert E.bind(SCHEMA, E.Not(E.NotEqualTo("a", 1.5))) == E.AlwaysFalse(), (
        "NOT (a <> 1.5) selects nothing"
    )
    assert E.bind(SCHEMA, E.Not(E.And(E.IsNull("a"), E.LessThan("i", 3)))) == E.Or(
        E.BoundIsNotNull(A), E.BoundGreaterThanOrEqual(I, 3)
    ), "De Morgan before binding"


def test_bind_expression_keeps_not() -> None:
    got = E.bind_expression(SCHEMA, E.Not(E.EqualTo("a", 1)))
    assert got == E.Not(E.BoundEqualTo(A, 1)), f"bind_expression keeps Not: {got!r}"


def test_bind_is_idempotent_on_bound_trees() -> None:
    bound = E.bind(SCHEMA, E.Or(E.EqualTo("a", 1), E.IsNull("s")))
    assert E.bind(SCHEMA, bound) == bound, "binding a bound tree changes nothing"


def test_column_not_found_names_the_column() -> None:
    with pytest.raises(ColumnNotFoundError, match="nope"):
        E.bind(SCHEMA, E.EqualTo("nope", 1))
    with pytest.raises(ColumnNotFoundError, match="nope"):
        E.bind(SCHEMA, E.Or(E.IsNull("a"), E.IsNull("nope")))


def test_case_sensitivity() -> None:
    mixed = _ref("Mixed")
    assert E.bind(SCHEMA, E.EqualTo("mixed", 1)) == E.BoundEqualTo(mixed, 1), (
        "default binding is case-insensitive, like Spark"
    )
    assert E.bind(SCHEMA, E.EqualTo("Mixed", 1), case_sensitive=True) == E.BoundEqualTo(mixed, 1)
    with pytest.raises(ColumnNotFoundError, match="mixed"):
        E.bind(SCHEMA, E.EqualTo("mixed", 1), case_sensitive=True)


def test_map_key_binds_to_value_type() -> None:
    got = E.bind(SCHEMA, E.GreaterThan(E.Reference("m", key="k"), 1.5))
    assert isinstance(got, E.BoundGreaterThanOrEqual), f"INT map value coerced: {got!r}"
    assert got.value == 2, "1.5 on INT map values becomes >= 2"
    assert got.term.name == "m[k]", "file-index column name of a map key is m[k]"
    assert got.term.column == "m" and got.term.key == "k", "bound reference knows map and key"
    assert got.term.type.root is T.TypeRoot.INT, "map key binds to the value type"
    null = E.bind(SCHEMA, E.IsNull(E.Reference("m", key="k")))
    assert null == E.BoundIsNull(got.term), "IS NULL on a map key (missing key is null)"


@pytest.mark.parametrize(
    ("expr", "match"),
    [
        (E.EqualTo("s", 1), r"s \(STRING\)"),
        (E.EqualTo("a", "1"), r"a \(TINYINT\)"),
        (E.EqualTo("a", True), "a"),
        (E.EqualTo("day", "yesterday"), "day"),
        (E.EqualTo("day", datetime.datetime(2024, 1, 1)), "day"),
        (E.EqualTo("ltz", 5), "ltz"),
        (E.EqualTo("ntz", "not a time"), "ntz"),
        (E.EqualTo("flag", 1), "flag"),
        (E.EqualTo("raw", "x"), "raw"),
        (E.EqualTo("d", "abc"), "d"),
        (E.StartsWith("a", "1"), "STRING"),
        (E.EqualTo("m", 1), "m"),
        (E.EqualTo(E.Reference("a", key="k"), 1), "MAP"),
        (E.In("s", ["a", 1]), "s"),
    ],
)
def test_type_mismatch_names_column(expr: E.BooleanExpression, match: str) -> None:
    with pytest.raises(TypeMismatchError, match=match) as info:
        E.bind(SCHEMA, expr)
    assert "\n" not in str(info.value), "one-line message"


def test_time_zones() -> None:
    naive = datetime.datetime(2024, 1, 1, 12, 0)
    la = E.bind(SCHEMA, E.EqualTo("ltz", naive), time_zone="America/Los_Angeles")
    utc = E.bind(SCHEMA, E.EqualTo("ltz", naive))
    assert isinstance(la, E.BoundEqualTo) and isinstance(utc, E.BoundEqualTo)
    assert la.value - utc.value == 8 * 3600 * 1_000_000, (
        "naive literal vs TIMESTAMP_LTZ is LA wall-clock time: 8 h after the same UTC time"
    )
    ntz = E.bind(SCHEMA, E.EqualTo("ntz", naive), time_zone="America/Los_Angeles")
    assert isinstance(ntz, E.BoundEqualTo) and ntz.value == utc.value, (
        "naive literal vs TIMESTAMP (NTZ) is taken as-is, whatever the session zone"
    )
    aware = naive.replace(tzinfo=datetime.timezone.utc)
    a_ltz = E.bind(SCHEMA, E.EqualTo("ltz", aware), time_zone="Asia/Kolkata")
    assert isinstance(a_ltz, E.BoundEqualTo) and a_ltz.value == utc.value, "aware is an instant"
    a_ntz = E.bind(SCHEMA, E.EqualTo("ntz", aware), time_zone="Asia/Kolkata")
    assert isinstance(a_ntz, E.BoundEqualTo)
    assert a_ntz.value - utc.value == (5 * 60 + 30) * 60 * 1_000_000, (
        "aware literal vs NTZ becomes the session zone's wall clock (UTC+5:30)"
    )
    s = E.bind(SCHEMA, E.EqualTo("ltz", "2024-01-01 12:00:00+02:00"), time_zone="Asia/Tokyo")
    assert isinstance(s, E.BoundEqualTo) and s.value == utc.value - 2 * 3600 * 1_000_000
    with pytest.raises(TypeMismatchError, match="time zone"):
        E.bind(SCHEMA, E.EqualTo("ltz", naive), time_zone="Mars/Olympus")


def test_bound_nodes_are_hashable_frozen_and_negate_exactly() -> None:
    b = E.bind(SCHEMA, E.In("a", [1, 2]))
    assert isinstance(b, E.BoundIn) and b.op is E.Operator.IN, repr(b)
    assert b.negate() == E.BoundNotIn(A, [1, 2]), "BoundIn negates to BoundNotIn"
    assert hash(b) == hash(E.BoundIn(A, [2, 1])), "hash ignores list order"
    assert E.BoundLessThan(A, 1) != E.BoundGreaterThan(A, 1), "class is part of equality"
    with pytest.raises(AttributeError):
        b.value = 3  # type: ignore[misc]
    assert repr(E.bind(SCHEMA, E.IsNull("a"))) == "BoundIsNull(a)"
    for op in E.Operator:
        p = E.bound_predicate(op, A, 1, values=[1, 2])
        assert p.op is op and p.negate().negate() == p, f"{op}: operator and involution"
        assert p.negate().op is not op, f"{op}: negation changes the operator"


def test_unfolded_nodes_bind_like_their_folded_forms() -> None:
    """The node classes do not fold; binding must still give the folded meaning (NOT IN ()
    is true for every row, NULL included -- not IS NOT NULL)."""
    cases = [
        (E.In("a", []), E.in_("a", [])),
        (E.NotIn("a", []), E.not_in("a", [])),
        (E.Not(E.In("a", [])), E.AlwaysTrue()),
        (E.In("a", [7]), E.in_("a", [7])),
        (E.NotIn("a", [7]), E.not_in("a", [7])),
        (E.And(E.EqualTo("a", 1), E.AlwaysTrue()), E.EqualTo("a", 1)),
        (E.Or(E.EqualTo("a", 1), E.AlwaysTrue()), E.AlwaysTrue()),
        (E.Not(E.Not(E.IsNull("a"))), E.IsNull("a")),
    ]
    for node, folded in cases:
        got, want = E.bind(SCHEMA, node), E.bind(SCHEMA, folded)
        assert got == want, f"bind({node!r}) = {got!r}, but its folded form binds to {want!r}"
