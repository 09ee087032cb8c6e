"""Bound nodes: a resolved column (:class:`BoundReference`) and one leaf class per operator.

A bound leaf holds its literal(s) in the column type's internal form (see
:mod:`lakeskip.types`). Every leaf class names its
:class:`~lakeskip.expressions.operators.Operator` in the class constant ``op``, calls its own
method of a :class:`BoundLeafVisitor` in
:meth:`~BoundPredicate.accept` (per-class dispatch: no table, no ``getattr``), and negates
exactly through :attr:`Operator.negated <lakeskip.expressions.operators.Operator.negated>`.

>>> from lakeskip import types as T
>>> a = BoundReference(T.Field(0, "a", T.INT), T.INT)
>>> BoundLessThan(a, 5).negate()
BoundGreaterThanOrEqual(a, 5)
>>> BoundIn(a, [3, 1]), BoundIn(a, [3, 1]).op
(BoundIn(a, [1, 3]), <Operator.IN: 'IN'>)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from lakeskip.errors import InvalidArgumentError
from lakeskip.expressions.operators import Operator, unreachable
from lakeskip.expressions.tree import BooleanExpression, sorted_values
from lakeskip.types import DataType, Field

T = TypeVar("T")

__all__ = [
    "BoundEqualTo",
    "BoundGreaterThan",
    "BoundGreaterThanOrEqual",
    "BoundIn",
    "BoundIsNotNull",
    "BoundIsNull",
    "BoundLeafVisitor",
    "BoundLessThan",
    "BoundLessThanOrEqual",
    "BoundLiteralPredicate",
    "BoundNotEqualTo",
    "BoundNotIn",
    "BoundNotStartsWith",
    "BoundPredicate",
    "BoundReference",
    "BoundSetPredicate",
    "BoundStartsWith",
    "BoundUnaryPredicate",
    "bound_predicate",
]


class BoundLeafVisitor(ABC, Generic[T]):
    """One method per leaf operator, each given the :class:`BoundReference` and the
    internal-form literal(s); a bound leaf calls its own in :meth:`BoundPredicate.accept`.
    It lives beside the leaves it names (the tree visitor,
    :class:`~lakeskip.expressions.visitors.BoundPredicateVisitor`, extends it), so the two
    modules import in one direction.

    The index readers (:class:`lakeskip.index.base.FileIndexReader`) answer the same
    method names for their one column, without the ``term`` argument.
    """

    @abstractmethod
    def visit_equal(self, term: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_not_equal(self, term: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_less_than(self, term: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_less_than_or_equal(self, term: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_greater_than(self, term: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_greater_than_or_equal(self, term: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_in(self, term: BoundReference, values: frozenset[Any]) -> T: ...

    @abstractmethod
    def visit_not_in(self, term: BoundReference, values: frozenset[Any]) -> T: ...

    @abstractmethod
    def visit_is_null(self, term: BoundReference) -> T: ...

    @abstractmethod
    def visit_not_null(self, term: BoundReference) -> T: ...

    @abstractmethod
    def visit_starts_with(self, term: BoundReference, prefix: str) -> T: ...

    @abstractmethod
    def visit_not_starts_with(self, term: BoundReference, prefix: str) -> T: ...


@dataclass(frozen=True, slots=True)
class BoundReference:
    """A resolved column, or one key of a map column.

    Attributes:
        field: the schema field (for a map key: the map column).
        type: the type of the compared values (for a map key: the map's value type).
        key: the map key, or ``None`` for a plain column.
    """

    field: Field
    type: DataType
    key: str | None = None

    @property
    def name(self) -> str:
        """Paimon's file-index column name: ``col`` or ``col[key]``."""
        return self.field.name if self.key is None else f"{self.field.name}[{self.key}]"

    @property
    def column(self) -> str:
        """The table column holding the values (the map column for a map key)."""
        return self.field.name

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class BoundPredicate(BooleanExpression):
    """Base of the bound leaves.

    Attributes:
        op: the leaf's :class:`~lakeskip.expressions.operators.Operator` (a class constant).
        term: the bound column.
        value: the literal (comparison and prefix leaves), else ``None``.
        values: the literals of ``in``/``not_in`` leaves, else empty.
    """

    op: ClassVar[Operator]
    term: BoundReference
    value: Any = None
    values: frozenset[Any] = field(default_factory=frozenset)

    def negate(self) -> BooleanExpression:
        raise NotImplementedError

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        """Call the ``visitor`` method for this leaf's operator."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r})"


class BoundUnaryPredicate(BoundPredicate):
    """A leaf without a literal (``IS NULL`` / ``IS NOT NULL``)."""

    __slots__ = ()

    def __init__(self, term: BoundReference) -> None:
        object.__setattr__(self, "term", term)
        object.__setattr__(self, "value", None)
        object.__setattr__(self, "values", frozenset())

    def negate(self) -> BooleanExpression:
        return bound_predicate(self.op.negated, self.term)


class BoundLiteralPredicate(BoundPredicate):
    """A leaf comparing with one internal-form literal."""

    __slots__ = ()

    def __init__(self, term: BoundReference, value: Any) -> None:
        if value is None:
            raise InvalidArgumentError(f"{type(self).__name__}: NULL is not a comparable value")
        object.__setattr__(self, "term", term)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "values", frozenset())

    def negate(self) -> BooleanExpression:
        return bound_predicate(self.op.negated, self.term, self.value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r}, {self.value!r})"


class BoundSetPredicate(BoundPredicate):
    """A leaf testing membership in a set of (at least two) internal-form literals."""

    __slots__ = ()

    def __init__(self, term: BoundReference, values: Iterable[Any]) -> None:
        vs = frozenset(values)
        if None in vs:
            raise InvalidArgumentError(f"{type(self).__name__}: NULL is not a valid list value")
        object.__setattr__(self, "term", term)
        object.__setattr__(self, "value", None)
        object.__setattr__(self, "values", vs)

    def negate(self) -> BooleanExpression:
        return bound_predicate(self.op.negated, self.term, values=self.values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r}, {sorted_values(self.values)!r})"


class BoundIsNull(BoundUnaryPredicate):
    __slots__ = ()
    op = Operator.IS_NULL

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_is_null(self.term)


class BoundIsNotNull(BoundUnaryPredicate):
    __slots__ = ()
    op = Operator.NOT_NULL

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_not_null(self.term)


class BoundEqualTo(BoundLiteralPredicate):
    __slots__ = ()
    op = Operator.EQ

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_equal(self.term, self.value)


class BoundNotEqualTo(BoundLiteralPredicate):
    __slots__ = ()
    op = Operator.NE

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_not_equal(self.term, self.value)


class BoundLessThan(BoundLiteralPredicate):
    __slots__ = ()
    op = Operator.LT

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_less_than(self.term, self.value)


class BoundLessThanOrEqual(BoundLiteralPredicate):
    __slots__ = ()
    op = Operator.LE

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_less_than_or_equal(self.term, self.value)


class BoundGreaterThan(BoundLiteralPredicate):
    __slots__ = ()
    op = Operator.GT

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_greater_than(self.term, self.value)


class BoundGreaterThanOrEqual(BoundLiteralPredicate):
    __slots__ = ()
    op = Operator.GE

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_greater_than_or_equal(self.term, self.value)


class BoundStartsWith(BoundLiteralPredicate):
    __slots__ = ()
    op = Operator.STARTS_WITH

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_starts_with(self.term, self.value)


class BoundNotStartsWith(BoundLiteralPredicate):
    __slots__ = ()
    op = Operator.NOT_STARTS_WITH

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_not_starts_with(self.term, self.value)


class BoundIn(BoundSetPredicate):
    __slots__ = ()
    op = Operator.IN

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_in(self.term, self.values)


class BoundNotIn(BoundSetPredicate):
    __slots__ = ()
    op = Operator.NOT_IN

    def accept(self, visitor: BoundLeafVisitor[T]) -> T:
        return visitor.visit_not_in(self.term, self.values)


def bound_predicate(
    op: Operator, term: BoundReference, value: Any = None, values: Iterable[Any] = ()
) -> BoundPredicate:
    """Build the bound leaf for an operator (``value`` for comparisons and prefixes,
    ``values`` for IN / NOT IN).

    >>> from lakeskip import types as T
    >>> bound_predicate(Operator.LE, BoundReference(T.Field(0, "a", T.INT), T.INT), 3)
    BoundLessThanOrEqual(a, 3)
    """
    match op:
        case Operator.IS_NULL:
            return BoundIsNull(term)
        case Operator.NOT_NULL:
            return BoundIsNotNull(term)
        case Operator.EQ:
            return BoundEqualTo(term, value)
        case Operator.NE:
            return BoundNotEqualTo(term, value)
        case Operator.LT:
            return BoundLessThan(term, value)
        case Operator.LE:
            return BoundLessThanOrEqual(term, value)
        case Operator.GT:
            return BoundGreaterThan(term, value)
        case Operator.GE:
            return BoundGreaterThanOrEqual(term, value)
        case Operator.STARTS_WITH:
            return BoundStartsWith(term, value)
        case Operator.NOT_STARTS_WITH:
            return BoundNotStartsWith(term, value)
        case Operator.IN:
            return BoundIn(term, values)
        case Operator.NOT_IN:
            return BoundNotIn(term, values)
        case _:
            unreachable(op)
