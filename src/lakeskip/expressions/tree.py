"""The predicate tree: unbound nodes built by users and the SQL layer.

Modelled on pyiceberg, with the constant folding in builder functions so every node is a
plain frozen, hashable dataclass: :func:`and_`, :func:`or_`, :func:`not_`, :func:`in_` and
:func:`not_in` fold (``and_(x, AlwaysFalse())`` is ``AlwaysFalse()``, ``in_(t, [v])`` is
``EqualTo(t, v)``), the class constructors never do. ``~x``, ``x & y`` and ``x | y`` use the
builders. :meth:`BooleanExpression.negate` gives the exact SQL negation (in three-valued
logic ``NOT (a = 1)`` selects exactly the rows ``a <> 1`` selects). Each leaf class names
its :class:`~lakeskip.expressions.operators.Operator` in the class constant ``op``.

>>> and_(EqualTo("a", 1), AlwaysTrue())
EqualTo(Reference('a'), 1)
>>> IsNull("a") | AlwaysTrue()
AlwaysTrue()
>>> in_("a", [3]), in_("a", []), not_in("a", [3, 3])
(EqualTo(Reference('a'), 3), AlwaysFalse(), NotEqualTo(Reference('a'), 3))
>>> And(EqualTo("a", 1), AlwaysTrue())
And(EqualTo(Reference('a'), 1), AlwaysTrue())
>>> (~LessThan("a", 5)).negate(), LessThan("a", 5).op
(LessThan(Reference('a'), 5), <Operator.LT: '<'>)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from lakeskip.errors import InvalidArgumentError
from lakeskip.expressions.operators import Operator

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "EqualTo",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "IsNotNull",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "LiteralPredicate",
    "Not",
    "NotEqualTo",
    "NotIn",
    "NotStartsWith",
    "Or",
    "Reference",
    "SetPredicate",
    "StartsWith",
    "UnaryPredicate",
    "UnboundPredicate",
    "and_",
    "in_",
    "literal_predicate",
    "not_",
    "not_in",
    "or_",
    "sorted_values",
]


@dataclass(frozen=True, slots=True)
class Reference:
    """A column, or one key of a map column (``Reference("attrs", key="device")``)."""

    name: str
    key: str | None = None

    @property
    def display(self) -> str:
        """Paimon's file-index column name: ``col`` or ``col[key]``."""
        return self.name if self.key is None else f"{self.name}[{self.key}]"

    def __repr__(self) -> str:
        if self.key is None:
            return f"Reference({self.name!r})"
        return f"Reference({self.name!r}, key={self.key!r})"


def _ref(term: str | Reference) -> Reference:
    if isinstance(term, Reference):
        return term
    if isinstance(term, str):
        return Reference(term)
    raise InvalidArgumentError(f"expected a column name or Reference, got {term!r}")


class BooleanExpression:
    """Base of every node."""

    __slots__ = ()

    def negate(self) -> BooleanExpression:
        raise NotImplementedError

    def __invert__(self) -> BooleanExpression:
        return not_(self)

    def __and__(self, other: BooleanExpression) -> BooleanExpression:
        return and_(self, other)

    def __or__(self, other: BooleanExpression) -> BooleanExpression:
        return or_(self, other)


class AlwaysTrue(BooleanExpression):
    """Every row might match (also: "not understood")."""

    __slots__ = ()
    _instance: AlwaysTrue | None = None

    def __new__(cls) -> AlwaysTrue:
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def negate(self) -> BooleanExpression:
        return AlwaysFalse()

    def __repr__(self) -> str:
        return "AlwaysTrue()"

    def __reduce__(self) -> tuple[Any, ...]:
        return (AlwaysTrue, ())


class AlwaysFalse(BooleanExpression):
    """No row matches."""

    __slots__ = ()
    _instance: AlwaysFalse | None = None

    def __new__(cls) -> AlwaysFalse:
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def negate(self) -> BooleanExpression:
        return AlwaysTrue()

    def __repr__(self) -> str:
        return "AlwaysFalse()"

    def __reduce__(self) -> tuple[Any, ...]:
        return (AlwaysFalse, ())


@dataclass(frozen=True, slots=True)
class And(BooleanExpression):
    """Both sides hold. Build with :func:`and_` to fold constants; the node itself is plain."""

    left: BooleanExpression
    right: BooleanExpression

    def negate(self) -> BooleanExpression:
        return or_(self.left.negate(), self.right.negate())

    def __repr__(self) -> str:
        return f"And({self.left!r}, {self.right!r})"


@dataclass(frozen=True, slots=True)
class Or(BooleanExpression):
    """Either side holds. Build with :func:`or_` to fold constants."""

    left: BooleanExpression
    right: BooleanExpression

    def negate(self) -> BooleanExpression:
        return and_(self.left.negate(), self.right.negate())

    def __repr__(self) -> str:
        return f"Or({self.left!r}, {self.right!r})"


@dataclass(frozen=True, slots=True)
class Not(BooleanExpression):
    """SQL NOT. Build with :func:`not_` to fold constants and double negation."""

    child: BooleanExpression

    def negate(self) -> BooleanExpression:
        return self.child

    def __repr__(self) -> str:
        return f"Not({self.child!r})"


def and_(
    left: BooleanExpression, right: BooleanExpression, *rest: BooleanExpression
) -> BooleanExpression:
    """AND of two or more expressions, constants folded (``x AND FALSE`` is FALSE,
    ``x AND TRUE`` and ``x AND x`` are ``x``).

    >>> and_(EqualTo("a", 1), AlwaysTrue(), IsNull("b"))
    And(EqualTo(Reference('a'), 1), IsNull(Reference('b')))
    """
    if rest:
        return and_(and_(left, right), *rest)
    if isinstance(left, AlwaysFalse) or isinstance(right, AlwaysFalse):
        return AlwaysFalse()
    if isinstance(left, AlwaysTrue):
        return right
    if isinstance(right, AlwaysTrue) or left == right:
        return left
    return And(left, right)


def or_(
    left: BooleanExpression, right: BooleanExpression, *rest: BooleanExpression
) -> BooleanExpression:
    """OR of two or more expressions, constants folded.

    >>> or_(AlwaysFalse(), EqualTo("a", 1))
    EqualTo(Reference('a'), 1)
    """
    if rest:
        return or_(or_(left, right), *rest)
    if isinstance(left, AlwaysTrue) or isinstance(right, AlwaysTrue):
        return AlwaysTrue()
    if isinstance(left, AlwaysFalse):
        return right
    if isinstance(right, AlwaysFalse) or left == right:
        return left
    return Or(left, right)


def not_(child: BooleanExpression) -> BooleanExpression:
    """NOT, constants and double negation folded (the leaves are left for
    :func:`~lakeskip.expressions.binding.rewrite_not`).

    >>> not_(AlwaysTrue()), not_(not_(IsNull("a")))
    (AlwaysFalse(), IsNull(Reference('a')))
    """
    if isinstance(child, AlwaysTrue):
        return AlwaysFalse()
    if isinstance(child, AlwaysFalse):
        return AlwaysTrue()
    if isinstance(child, Not):
        return child.child
    return Not(child)


class UnboundPredicate(BooleanExpression):
    """A leaf over one column (or map key)."""

    __slots__ = ()
    op: ClassVar[Operator]
    term: Reference


@dataclass(frozen=True, slots=True, init=False)
class UnaryPredicate(UnboundPredicate):
    term: Reference

    def __init__(self, term: str | Reference) -> None:
        object.__setattr__(self, "term", _ref(term))

    def negate(self) -> BooleanExpression:
        return _UNARY[self.op.negated](self.term)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r})"


@dataclass(frozen=True, slots=True, init=False)
class LiteralPredicate(UnboundPredicate):
    term: Reference
    value: Any

    def __init__(self, term: str | Reference, value: Any) -> None:
        if value is None:
            raise InvalidArgumentError(
                f"{type(self).__name__}: NULL is not a comparable value (use IsNull)"
            )
        _check_hashable(value, type(self).__name__)
        object.__setattr__(self, "term", _ref(term))
        object.__setattr__(self, "value", value)

    def negate(self) -> BooleanExpression:
        return _LITERAL[self.op.negated](self.term, self.value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r}, {self.value!r})"


class SetPredicate(UnboundPredicate):
    __slots__ = ()
    values: frozenset[Any]


def _check_hashable(value: Any, name: str) -> None:
    try:
        hash(value)
    except TypeError as e:
        raise InvalidArgumentError(f"{name}: {value!r} is not a literal value") from e


def _value_set(values: Iterable[Any], name: str) -> frozenset[Any]:
    if isinstance(values, (str, bytes)):
        raise InvalidArgumentError(f"{name}: expected a collection of values, got {values!r}")
    try:
        out = frozenset(values)
    except TypeError as e:
        raise InvalidArgumentError(f"{name}: values must be hashable literals") from e
    if None in out:
        raise InvalidArgumentError(f"{name}: NULL is not a valid list value")
    return out


def sorted_values(values: Iterable[Any]) -> list[Any]:
    """Literals in a stable display order: natural order, else by ``repr`` (mixed types, or
    a Decimal beside a float NaN, which Python refuses to compare).

    >>> from decimal import Decimal
    >>> sorted_values([3, 1]), sorted_values([Decimal("1.5"), float("nan")])
    ([1, 3], [Decimal('1.5'), nan])
    """
    try:
        return sorted(values)
    except (TypeError, ArithmeticError):
        return sorted(values, key=repr)


@dataclass(frozen=True, slots=True, init=False)
class In(SetPredicate):
    """``a IN (...)``. Build with :func:`in_`: an empty list is FALSE, one value ``=``."""

    op = Operator.IN
    term: Reference
    values: frozenset[Any]

    def __init__(self, term: str | Reference, values: Iterable[Any]) -> None:
        object.__setattr__(self, "term", _ref(term))
        object.__setattr__(self, "values", _value_set(values, "In"))

    def negate(self) -> BooleanExpression:
        return NotIn(self.term, self.values)

    def __repr__(self) -> str:
        return f"In({self.term!r}, {sorted_values(self.values)!r})"


@dataclass(frozen=True, slots=True, init=False)
class NotIn(SetPredicate):
    """``a NOT IN (...)`` over non-null values: true for non-null ``a`` outside the list.

    ``not_in(t, [])`` is ``AlwaysTrue()``: the empty AND is true for every row, nulls
    included (Spark 4 agrees: ``NULL IN ()`` is false, so ``NULL NOT IN ()`` is true), it is
    the exact negation of ``in_(t, []) = AlwaysFalse()``, and it is the choice that keeps the
    most rows. SQL itself has no empty lists; binding, which drops list values a column
    cannot hold, turns an emptied NOT IN into ``IsNotNull`` (``a <> 1.5`` is null for null
    ``a``) -- see :mod:`lakeskip.expressions.binding`."""

    op = Operator.NOT_IN
    term: Reference
    values: frozenset[Any]

    def __init__(self, term: str | Reference, values: Iterable[Any]) -> None:
        object.__setattr__(self, "term", _ref(term))
        object.__setattr__(self, "values", _value_set(values, "NotIn"))

    def negate(self) -> BooleanExpression:
        return In(self.term, self.values)

    def __repr__(self) -> str:
        return f"NotIn({self.term!r}, {sorted_values(self.values)!r})"


def in_(term: str | Reference, values: Iterable[Any]) -> BooleanExpression:
    """``term IN (values)`` folded: no value is FALSE, one value is :class:`EqualTo`.

    >>> in_("a", [3]), in_("a", []), in_("a", [2, 1])
    (EqualTo(Reference('a'), 3), AlwaysFalse(), In(Reference('a'), [1, 2]))
    """
    node = In(term, values)
    if not node.values:
        return AlwaysFalse()
    if len(node.values) == 1:
        return EqualTo(node.term, next(iter(node.values)))
    return node


def not_in(term: str | Reference, values: Iterable[Any]) -> BooleanExpression:
    """``term NOT IN (values)`` folded: no value is TRUE (see :class:`NotIn`), one value is
    :class:`NotEqualTo`.

    >>> not_in("a", [3, 3]), not_in("a", [])
    (NotEqualTo(Reference('a'), 3), AlwaysTrue())
    """
    node = NotIn(term, values)
    if not node.values:
        return AlwaysTrue()
    if len(node.values) == 1:
        return NotEqualTo(node.term, next(iter(node.values)))
    return node


class IsNull(UnaryPredicate):
    __slots__ = ()
    op = Operator.IS_NULL


class IsNotNull(UnaryPredicate):
    __slots__ = ()
    op = Operator.NOT_NULL


class EqualTo(LiteralPredicate):
    __slots__ = ()
    op = Operator.EQ


class NotEqualTo(LiteralPredicate):
    __slots__ = ()
    op = Operator.NE


class LessThan(LiteralPredicate):
    __slots__ = ()
    op = Operator.LT


class LessThanOrEqual(LiteralPredicate):
    __slots__ = ()
    op = Operator.LE


class GreaterThan(LiteralPredicate):
    __slots__ = ()
    op = Operator.GT


class GreaterThanOrEqual(LiteralPredicate):
    __slots__ = ()
    op = Operator.GE


class StartsWith(LiteralPredicate):
    __slots__ = ()
    op = Operator.STARTS_WITH


class NotStartsWith(LiteralPredicate):
    __slots__ = ()
    op = Operator.NOT_STARTS_WITH


def literal_predicate(op: Operator, term: str | Reference, value: Any) -> LiteralPredicate:
    """The leaf comparing ``term`` with ``value`` by ``op`` (a comparison or prefix test).

    >>> literal_predicate(Operator.GE, "a", 3)
    GreaterThanOrEqual(Reference('a'), 3)

    Raises:
        InvalidArgumentError: ``op`` takes no single literal (IN, IS NULL, ...).
    """
    cls = _LITERAL.get(op)
    if cls is None:
        raise InvalidArgumentError(f"{op} does not compare with one literal")
    return cls(term, value)


# each leaf class by its operator, for the generic negate() of the leaf bases
_UNARY: dict[Operator, type[UnaryPredicate]] = {c.op: c for c in (IsNull, IsNotNull)}
_LITERAL: dict[Operator, type[LiteralPredicate]] = {
    c.op: c
    for c in (
        EqualTo,
        NotEqualTo,
        LessThan,
        LessThanOrEqual,
        GreaterThan,
        GreaterThanOrEqual,
        StartsWith,
        NotStartsWith,
    )
}
