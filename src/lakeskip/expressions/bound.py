"""Bound nodes: a resolved column (:class:`BoundReference`) and one leaf class per operator.

A bound leaf holds its literal(s) in the column type's internal form (see
:mod:`lakeskip.types`). Every leaf class has a short ``op`` tag (``"eq"``, ``"lt"``, ...)
that index readers and evaluators dispatch on, and an exact :meth:`negate`.

>>> from lakeskip import types as T
>>> a = BoundReference(T.Field(0, "a", T.INT), T.INT)
>>> BoundLessThan(a, 5).negate()
BoundGreaterThanOrEqual(a, 5)
>>> BoundIn(a, [3, 1]), BoundIn(a, [3, 1]).op
(BoundIn(a, [1, 3]), 'in')
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lakeskip.errors import InvalidArgumentError
from lakeskip.expressions.tree import BooleanExpression, sorted_values
from lakeskip.types import DataType, Field

__all__ = [
    "BoundEqualTo",
    "BoundGreaterThan",
    "BoundGreaterThanOrEqual",
    "BoundIn",
    "BoundIsNotNull",
    "BoundIsNull",
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
        op: the operator tag, one of ``eq ne lt le gt ge in not_in is_null not_null
            starts_with not_starts_with`` (a class constant).
        term: the bound column.
        value: the literal (comparison and prefix leaves), else ``None``.
        values: the literals of ``in``/``not_in`` leaves, else empty.
    """

    op: ClassVar[str] = ""
    term: BoundReference
    value: Any = None
    values: frozenset[Any] = field(default_factory=frozenset)

    def negate(self) -> BooleanExpression:
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


class BoundLiteralPredicate(BoundPredicate):
    """A leaf comparing with one internal-form literal."""

    __slots__ = ()

    def __init__(self, term: BoundReference, value: Any) -> None:
        if value is None:
            raise InvalidArgumentError(f"{type(self).__name__}: NULL is not a comparable value")
        object.__setattr__(self, "term", term)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "values", frozenset())

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

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r}, {sorted_values(self.values)!r})"


class BoundIsNull(BoundUnaryPredicate):
    __slots__ = ()
    op = "is_null"

    def negate(self) -> BooleanExpression:
        return BoundIsNotNull(self.term)


class BoundIsNotNull(BoundUnaryPredicate):
    __slots__ = ()
    op = "not_null"

    def negate(self) -> BooleanExpression:
        return BoundIsNull(self.term)


class BoundEqualTo(BoundLiteralPredicate):
    __slots__ = ()
    op = "eq"

    def negate(self) -> BooleanExpression:
        return BoundNotEqualTo(self.term, self.value)


class BoundNotEqualTo(BoundLiteralPredicate):
    __slots__ = ()
    op = "ne"

    def negate(self) -> BooleanExpression:
        return BoundEqualTo(self.term, self.value)


class BoundLessThan(BoundLiteralPredicate):
    __slots__ = ()
    op = "lt"

    def negate(self) -> BooleanExpression:
        return BoundGreaterThanOrEqual(self.term, self.value)


class BoundLessThanOrEqual(BoundLiteralPredicate):
    __slots__ = ()
    op = "le"

    def negate(self) -> BooleanExpression:
        return BoundGreaterThan(self.term, self.value)


class BoundGreaterThan(BoundLiteralPredicate):
    __slots__ = ()
    op = "gt"

    def negate(self) -> BooleanExpression:
        return BoundLessThanOrEqual(self.term, self.value)


class BoundGreaterThanOrEqual(BoundLiteralPredicate):
    __slots__ = ()
    op = "ge"

    def negate(self) -> BooleanExpression:
        return BoundLessThan(self.term, self.value)


class BoundStartsWith(BoundLiteralPredicate):
    __slots__ = ()
    op = "starts_with"

    def negate(self) -> BooleanExpression:
        return BoundNotStartsWith(self.term, self.value)


class BoundNotStartsWith(BoundLiteralPredicate):
    __slots__ = ()
    op = "not_starts_with"

    def negate(self) -> BooleanExpression:
        return BoundStartsWith(self.term, self.value)


class BoundIn(BoundSetPredicate):
    __slots__ = ()
    op = "in"

    def negate(self) -> BooleanExpression:
        return BoundNotIn(self.term, self.values)


class BoundNotIn(BoundSetPredicate):
    __slots__ = ()
    op = "not_in"

    def negate(self) -> BooleanExpression:
        return BoundIn(self.term, self.values)


_UNARY: dict[str, type[BoundUnaryPredicate]] = {"is_null": BoundIsNull, "not_null": BoundIsNotNull}
_LITERAL: dict[str, type[BoundLiteralPredicate]] = {
    c.op: c
    for c in (
        BoundEqualTo,
        BoundNotEqualTo,
        BoundLessThan,
        BoundLessThanOrEqual,
        BoundGreaterThan,
        BoundGreaterThanOrEqual,
        BoundStartsWith,
        BoundNotStartsWith,
    )
}
_SET: dict[str, type[BoundSetPredicate]] = {"in": BoundIn, "not_in": BoundNotIn}


def bound_predicate(
    op: str, term: BoundReference, value: Any = None, values: Iterable[Any] = ()
) -> BoundPredicate:
    """Build the bound leaf for an ``op`` tag.

    >>> from lakeskip import types as T
    >>> bound_predicate("le", BoundReference(T.Field(0, "a", T.INT), T.INT), 3)
    BoundLessThanOrEqual(a, 3)
    """
    if op in _UNARY:
        return _UNARY[op](term)
    if op in _LITERAL:
        return _LITERAL[op](term, value)
    if op in _SET:
        return _SET[op](term, values)
    raise InvalidArgumentError(f"unknown predicate operator {op!r}")
