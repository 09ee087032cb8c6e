"""The leaf operators as a type: one :class:`Operator` member per kind of leaf predicate.

Every unbound and bound leaf class names its operator in a class constant ``op``; code that
must talk about an operator as a value (building a bound leaf from an unbound one, the
bit-sliced comparisons of the BSI and range-bitmap readers) takes an :class:`Operator`, and
``match`` statements over it end in :func:`unreachable`, so mypy reports every place a new
member is not handled. Walking a tree dispatches per class instead (each bound leaf calls its
own method of :class:`~lakeskip.expressions.visitors.BoundPredicateVisitor`).

>>> Operator.LT.mirrored, Operator.LT.negated, str(Operator.NOT_IN)
(<Operator.GT: '>'>, <Operator.GE: '>='>, 'NOT IN')
"""

from __future__ import annotations

import enum
from typing import NoReturn

__all__ = ["Operator", "unreachable"]


def unreachable(value: NoReturn) -> NoReturn:
    """The end of an exhaustive ``match``/``if`` chain: mypy fails if ``value`` can still be
    anything, e.g. an :class:`Operator` member no branch handled."""
    raise AssertionError(f"unhandled case: {value!r}")


class Operator(enum.Enum):
    """A leaf operator; the value is its SQL spelling."""

    EQ = "="
    NE = "<>"
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    IN = "IN"
    NOT_IN = "NOT IN"
    IS_NULL = "IS NULL"
    NOT_NULL = "IS NOT NULL"
    STARTS_WITH = "STARTS WITH"
    NOT_STARTS_WITH = "NOT STARTS WITH"

    def __str__(self) -> str:
        return self.value

    @property
    def negated(self) -> Operator:
        """The operator selecting exactly the other non-null rows (``<`` -> ``>=``)."""
        match self:
            case Operator.EQ:
                return Operator.NE
            case Operator.NE:
                return Operator.EQ
            case Operator.LT:
                return Operator.GE
            case Operator.GE:
                return Operator.LT
            case Operator.LE:
                return Operator.GT
            case Operator.GT:
                return Operator.LE
            case Operator.IN:
                return Operator.NOT_IN
            case Operator.NOT_IN:
                return Operator.IN
            case Operator.IS_NULL:
                return Operator.NOT_NULL
            case Operator.NOT_NULL:
                return Operator.IS_NULL
            case Operator.STARTS_WITH:
                return Operator.NOT_STARTS_WITH
            case Operator.NOT_STARTS_WITH:
                return Operator.STARTS_WITH
            case _:
                unreachable(self)

    @property
    def mirrored(self) -> Operator:
        """The comparison with its sides swapped: ``a < b`` is ``b > a``; other operators
        are their own mirror (``=``, ``<>``) or have none (returned unchanged)."""
        match self:
            case Operator.LT:
                return Operator.GT
            case Operator.LE:
                return Operator.GE
            case Operator.GT:
                return Operator.LT
            case Operator.GE:
                return Operator.LE
            case _:
                return self
