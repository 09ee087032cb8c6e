"""The unbound tree: constant folding, structural equality, hashing, negation, NOT push-down."""

from __future__ import annotations

import copy
import decimal
import pickle

import pytest
from hypothesis import given
from tests.unit.expressions.strategies import predicates

from lakeskip import expressions as E
from lakeskip.errors import InvalidArgumentError

A = E.Reference("a")
X = E.EqualTo("a", 1)
Y = E.IsNull("b")


def test_singletons() -> None:
    assert E.AlwaysTrue() is E.AlwaysTrue(), "AlwaysTrue must be a singleton"
    assert E.AlwaysFalse() is E.AlwaysFalse(), "AlwaysFalse must be a singleton"
    assert pickle.loads(pickle.dumps(E.AlwaysTrue())) is E.AlwaysTrue(), "pickle keeps identity"
    assert copy.deepcopy(E.AlwaysFalse()) is E.AlwaysFalse(), "deepcopy keeps identity"


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        (E.and_(X, E.AlwaysFalse()), E.AlwaysFalse()),
        (E.and_(E.AlwaysFalse(), X), E.AlwaysFalse()),
        (E.and_(X, E.AlwaysTrue()), X),
        (E.and_(E.AlwaysTrue(), X), X),
        (E.and_(X, X), X),
        (E.or_(X, E.AlwaysTrue()), E.AlwaysTrue()),
        (E.or_(E.AlwaysFalse(), X), X),
        (E.or_(X, E.AlwaysFalse()), X),
        (E.not_(E.not_(X)), X),
        (E.not_(E.AlwaysTrue()), E.AlwaysFalse()),
        (E.not_(E.AlwaysFalse()), E.AlwaysTrue()),
        (E.in_("a", [1]), E.EqualTo("a", 1)),
        (E.in_("a", [1, 1]), E.EqualTo("a", 1)),
        (E.in_("a", []), E.AlwaysFalse()),
        (E.not_in("a", [2]), E.NotEqualTo("a", 2)),
        (E.not_in("a", []), E.AlwaysTrue()),
        (E.and_(X, Y, E.AlwaysFalse()), E.AlwaysFalse()),
        (E.or_(X, Y, E.AlwaysTrue()), E.AlwaysTrue()),
        (~X, E.Not(X)),
        (X & Y, E.And(X, Y)),
        (X | Y, E.Or(X, Y)),
        (E.And(X, E.AlwaysTrue()), E.And(X, E.AlwaysTrue())),  # the node class never folds
    ],
)
def test_constant_folding(built: E.BooleanExpression, expected: E.BooleanExpression) -> None:
    assert built == expected, f"folding: got {built!r}, expected {expected!r}"


def test_variadic_and_or_nest_left() -> None:
    z = E.LessThan("c", 3)
    assert E.and_(X, Y, z) == E.and_(E.and_(X, Y), z), "And(a, b, c) is And(And(a, b), c)"
    assert E.or_(X, Y, z) == E.or_(E.or_(X, Y), z), "Or(a, b, c) is Or(Or(a, b), c)"


def test_in_collapses_duplicates_and_compares_as_set() -> None:
    assert E.In("a", [1, 2, 2, 3]) == E.In("a", (3, 2, 1)), "In compares its values as a set"
    assert E.In("a", [1, 2, 2]).values == frozenset({1, 2}), "duplicates collapse"
    assert repr(E.In("a", [3, 1, 2])) == "In(Reference('a'), [1, 2, 3])", "repr sorts values"


def test_terms_accept_names_and_references() -> None:
    assert E.EqualTo("a", 1) == E.EqualTo(A, 1), "str term is Reference(str)"
    m = E.Reference("attrs", key="k")
    assert E.EqualTo(m, "x").term.display == "attrs[k]", "map-key display name is m[k]"
    assert repr(m) == "Reference('attrs', key='k')", "readable map-key repr"
    assert E.EqualTo(m, "x") != E.EqualTo("attrs", "x"), "key is part of equality"


def test_structural_equality_and_hash() -> None:
    a = E.And(E.EqualTo("a", 1), E.Or(E.IsNull("b"), E.StartsWith("s", "x")))
    b = E.And(E.EqualTo("a", 1), E.Or(E.IsNull("b"), E.StartsWith("s", "x")))
    assert a == b and hash(a) == hash(b), "equal trees must be equal and hash equal"
    assert E.LessThan("a", 1) != E.LessThanOrEqual("a", 1), "operator is part of equality"
    assert E.EqualTo("a", 1) != E.NotEqualTo("a", 1), "operator is part of equality"
    assert len({a, b, E.Not(a)}) == 2, "usable in sets"


def test_nodes_are_frozen() -> None:
    with pytest.raises(AttributeError):
        X.value = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        E.And(X, Y).left = Y  # type: ignore[misc]


@pytest.mark.parametrize(
    "expr",
    [
        E.And(X, Y),
        E.Or(X, E.Not(E.LessThan("c", 2))),
        E.In("a", [1, 2]),
        E.NotIn("a", [1, 2]),
        E.StartsWith(E.Reference("m", key="k"), "p"),
    ],
)
def test_pickle_round_trip(expr: E.BooleanExpression) -> None:
    assert pickle.loads(pickle.dumps(expr)) == expr, f"pickle round trip of {expr!r}"


@pytest.mark.parametrize(
    ("leaf", "negated"),
    [
        (E.EqualTo("a", 1), E.NotEqualTo("a", 1)),
        (E.LessThan("a", 1), E.GreaterThanOrEqual("a", 1)),
        (E.LessThanOrEqual("a", 1), E.GreaterThan("a", 1)),
        (E.In("a", [1, 2]), E.NotIn("a", [1, 2])),
        (E.IsNull("a"), E.IsNotNull("a")),
        (E.StartsWith("s", "x"), E.NotStartsWith("s", "x")),
        (E.And(X, Y), E.Or(X.negate(), Y.negate())),
        (E.AlwaysTrue(), E.AlwaysFalse()),
    ],
)
def test_negate_pairs(leaf: E.BooleanExpression, negated: E.BooleanExpression) -> None:
    assert leaf.negate() == negated, f"{leaf!r}.negate() should be {negated!r}"
    assert negated.negate() == leaf, f"negation must be an involution for {negated!r}"


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (lambda: E.EqualTo("a", None), "NULL"),
        (lambda: E.In("a", [1, None]), "NULL"),
        (lambda: E.NotIn("a", [None]), "NULL"),
        (lambda: E.EqualTo(1, 1), "column name or Reference"),
        (lambda: E.In("a", "abc"), "collection"),
        (lambda: E.EqualTo("a", [1]), "not a literal"),
        (lambda: E.In("a", [[1]]), "hashable"),
    ],
)
def test_invalid_arguments(bad: object, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        bad()  # type: ignore[operator]


def test_not_negates_to_its_child() -> None:
    assert E.Not(X).negate() == X, "Not(x).negate() is x"


def test_reprs_are_readable() -> None:
    e = E.Or(E.And(E.EqualTo("a", decimal.Decimal("1.5")), E.IsNull("b")), E.Not(Y))
    assert repr(e) == (
        "Or(And(EqualTo(Reference('a'), Decimal('1.5')), IsNull(Reference('b'))), "
        "Not(IsNull(Reference('b'))))"
    ), repr(e)


def _has_not(e: E.BooleanExpression) -> bool:
    if isinstance(e, E.Not):
        return True
    if isinstance(e, (E.And, E.Or)):
        return _has_not(e.left) or _has_not(e.right)
    return False


COLUMNS = {"i32": [1, 2, None], "s": ["a", "ab", None], "f64": [1.0, float("nan")]}


@given(pred=predicates(COLUMNS, depth=3))
def test_rewrite_not_removes_every_not(pred: E.BooleanExpression) -> None:
    out = E.rewrite_not(pred)
    assert not _has_not(out), f"rewrite_not left a Not in {out!r} (from {pred!r})"
    assert E.rewrite_not(E.Not(pred)) == E.rewrite_not(pred.negate()), (
        "rewrite_not(Not(p)) must equal rewrite_not(p.negate())"
    )
    assert E.rewrite_not(out) == out, "rewrite_not must be idempotent"


def test_rewrite_not_example() -> None:
    e = E.Not(E.Or(E.And(X, E.Not(Y)), E.In("c", [1, 2])))
    assert E.rewrite_not(e) == E.And(
        E.Or(E.NotEqualTo("a", 1), E.IsNull("b")), E.NotIn("c", [1, 2])
    ), "De Morgan with leaf negation"


def test_repr_of_a_list_with_a_decimal_and_a_nan() -> None:
    """Regression (found by the never-wrong fuzz): Python refuses ``Decimal < nan``; the
    planner's report calls repr on every predicate, so it must not raise."""
    for _ in range(20):  # set iteration order varies; every order must work
        p = E.NotIn("i64", [-7, decimal.Decimal("14.75"), 1000, float("nan")])
        assert "Decimal('14.75')" in repr(p)


def test_every_operator_has_one_leaf_class_and_negates_exactly() -> None:
    unbound = [E.IsNull("a"), E.IsNotNull("a"), E.In("a", [1, 2]), E.NotIn("a", [1, 2])]
    unbound += [
        c("a", 1)
        for c in (
            E.EqualTo,
            E.NotEqualTo,
            E.LessThan,
            E.LessThanOrEqual,
            E.GreaterThan,
            E.GreaterThanOrEqual,
            E.StartsWith,
            E.NotStartsWith,
        )
    ]
    assert sorted(p.op.name for p in unbound) == sorted(o.name for o in E.Operator), (
        "one unbound leaf class per Operator"
    )
    for p in unbound:
        n = p.negate()
        assert n.op is p.op.negated and n.term == p.term, f"{p!r} negates to {n!r}"
        assert n.negate() == p, f"{p!r}: negation is an involution"
