"""The predicate tree: unbound nodes built by users and the SQL layer.

Modelled on pyiceberg: constructors fold constants (``And(x, AlwaysFalse())`` is
``AlwaysFalse()``, ``In(t, [v])`` is ``EqualTo(t, v)``), every node is frozen and hashable,
``~x`` is ``Not(x)``, and :meth:`BooleanExpression.negate` gives the exact SQL negation (in
three-valued logic ``NOT (a = 1)`` selects exactly the rows ``a <> 1`` selects).

>>> And(EqualTo("a", 1), AlwaysTrue())
EqualTo(Reference('a'), 1)
>>> Or(IsNull("a"), AlwaysTrue())
AlwaysTrue()
>>> In("a", [3]), In("a", []), NotIn("a", [3, 3])
(EqualTo(Reference('a'), 3), AlwaysFalse(), NotEqualTo(Reference('a'), 3))
>>> Not(LessThan("a", 5)).negate()
LessThan(Reference('a'), 5)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lakeskip.errors import InvalidArgumentError

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
        return Not(self)

    def __and__(self, other: BooleanExpression) -> BooleanExpression:
        return And(self, other)

    def __or__(self, other: BooleanExpression) -> BooleanExpression:
        return Or(self, other)


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


@dataclass(frozen=True, slots=True, init=False)
class And(BooleanExpression):
    left: BooleanExpression
    right: BooleanExpression

    def __new__(
        cls, left: BooleanExpression, right: BooleanExpression, *rest: BooleanExpression
    ) -> Any:  # type: ignore[misc]
        if rest:
            return And(And(left, right), *rest)
        if isinstance(left, AlwaysFalse) or isinstance(right, AlwaysFalse):
            return AlwaysFalse()
        if isinstance(left, AlwaysTrue):
            return right
        if isinstance(right, AlwaysTrue):
            return left
        if left == right:
            return left
        obj = object.__new__(cls)
        object.__setattr__(obj, "left", left)
        object.__setattr__(obj, "right", right)
        return obj

    def __init__(self, *args: Any) -> None:
        pass

    def __getnewargs__(self) -> tuple[BooleanExpression, BooleanExpression]:
        return (self.left, self.right)

    def negate(self) -> BooleanExpression:
        return Or(self.left.negate(), self.right.negate())

    def __repr__(self) -> str:
        return f"And({self.left!r}, {self.right!r})"


@dataclass(frozen=True, slots=True, init=False)
class Or(BooleanExpression):
    left: BooleanExpression
    right: BooleanExpression

    def __new__(
        cls, left: BooleanExpression, right: BooleanExpression, *rest: BooleanExpression
    ) -> Any:  # type: ignore[misc]
        if rest:
            return Or(Or(left, right), *rest)
        if isinstance(left, AlwaysTrue) or isinstance(right, AlwaysTrue):
            return AlwaysTrue()
        if isinstance(left, AlwaysFalse):
            return right
        if isinstance(right, AlwaysFalse):
            return left
        if left == right:
            return left
        obj = object.__new__(cls)
        object.__setattr__(obj, "left", left)
        object.__setattr__(obj, "right", right)
        return obj

    def __init__(self, *args: Any) -> None:
        pass

    def __getnewargs__(self) -> tuple[BooleanExpression, BooleanExpression]:
        return (self.left, self.right)

    def negate(self) -> BooleanExpression:
        return And(self.left.negate(), self.right.negate())

    def __repr__(self) -> str:
        return f"Or({self.left!r}, {self.right!r})"


@dataclass(frozen=True, slots=True, init=False)
class Not(BooleanExpression):
    child: BooleanExpression

    def __new__(cls, child: BooleanExpression) -> Any:  # type: ignore[misc]
        if isinstance(child, AlwaysTrue):
            return AlwaysFalse()
        if isinstance(child, AlwaysFalse):
            return AlwaysTrue()
        if isinstance(child, Not):
            return child.child
        obj = object.__new__(cls)
        object.__setattr__(obj, "child", child)
        return obj

    def __init__(self, *args: Any) -> None:
        pass

    def __getnewargs__(self) -> tuple[BooleanExpression]:
        return (self.child,)

    def negate(self) -> BooleanExpression:
        return self.child

    def __repr__(self) -> str:
        return f"Not({self.child!r})"


class UnboundPredicate(BooleanExpression):
    """A leaf over one column (or map key)."""

    __slots__ = ()
    term: Reference


@dataclass(frozen=True, slots=True, init=False)
class UnaryPredicate(UnboundPredicate):
    term: Reference

    def __init__(self, term: str | Reference) -> None:
        object.__setattr__(self, "term", _ref(term))

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
    term: Reference
    values: frozenset[Any]

    def __new__(cls, term: str | Reference, values: Iterable[Any]) -> Any:  # type: ignore[misc]
        vs = _value_set(values, "In")
        if not vs:
            _ref(term)
            return AlwaysFalse()
        if len(vs) == 1:
            return EqualTo(term, next(iter(vs)))
        obj = object.__new__(cls)
        object.__setattr__(obj, "term", _ref(term))
        object.__setattr__(obj, "values", vs)
        return obj

    def __init__(self, *args: Any) -> None:
        pass

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self.term, self.values)

    def negate(self) -> BooleanExpression:
        return NotIn(self.term, self.values)

    def __repr__(self) -> str:
        return f"In({self.term!r}, {sorted_values(self.values)!r})"


@dataclass(frozen=True, slots=True, init=False)
class NotIn(SetPredicate):
    """``a NOT IN (...)`` over non-null values: true for non-null ``a`` outside the list.

    ``NotIn(t, [])`` is ``AlwaysTrue()``: the empty AND is true for every row, nulls
    included (Spark 4 agrees: ``NULL IN ()`` is false, so ``NULL NOT IN ()`` is true), it is
    the exact negation of ``In(t, []) = AlwaysFalse()``, and it is the choice that keeps the
    most rows. SQL itself has no empty lists; binding, which drops list values a column
    cannot hold, turns an emptied NOT IN into ``IsNotNull`` (``a <> 1.5`` is null for null
    ``a``) -- see :mod:`lakeskip.expressions.binding`."""

    term: Reference
    values: frozenset[Any]

    def __new__(cls, term: str | Reference, values: Iterable[Any]) -> Any:  # type: ignore[misc]
        vs = _value_set(values, "NotIn")
        if not vs:
            _ref(term)
            return AlwaysTrue()
        if len(vs) == 1:
            return NotEqualTo(term, next(iter(vs)))
        obj = object.__new__(cls)
        object.__setattr__(obj, "term", _ref(term))
        object.__setattr__(obj, "values", vs)
        return obj

    def __init__(self, *args: Any) -> None:
        pass

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self.term, self.values)

    def negate(self) -> BooleanExpression:
        return In(self.term, self.values)

    def __repr__(self) -> str:
        return f"NotIn({self.term!r}, {sorted_values(self.values)!r})"


class IsNull(UnaryPredicate):
    __slots__ = ()

    def negate(self) -> BooleanExpression:
        return IsNotNull(self.term)


class IsNotNull(UnaryPredicate):
    __slots__ = ()

    def negate(self) -> BooleanExpression:
        return IsNull(self.term)


class EqualTo(LiteralPredicate):
    __slots__ = ()

    def negate(self) -> BooleanExpression:
        return NotEqualTo(self.term, self.value)


class NotEqualTo(LiteralPredicate):
    __slots__ = ()

    def negate(self) -> BooleanExpression:
        return EqualTo(self.term, self.value)


class LessThan(LiteralPredicate):
    __slots__ = ()

    def negate(self) -> BooleanExpression:
        return GreaterThanOrEqual(self.term, self.value)


class LessThanOrEqual(LiteralPredicate):
    __slots__ = ()

    def negate(self) -> BooleanExpression:
        return GreaterThan(self.term, self.value)


class GreaterThan(LiteralPredicate):
    __slots__ = ()

    def negate(self) -> BooleanExpression:
        return LessThanOrEqual(self.term, self.value)


class GreaterThanOrEqual(LiteralPredicate):
    __slots__ = ()

    def negate(self) -> BooleanExpression:
        return LessThan(self.term, self.value)


class StartsWith(LiteralPredicate):
    __slots__ = ()

    def negate(self) -> BooleanExpression:
        return NotStartsWith(self.term, self.value)


class NotStartsWith(LiteralPredicate):
    __slots__ = ()

    def negate(self) -> BooleanExpression:
        return StartsWith(self.term, self.value)
