"""The leaf operators as a type: one :class:`Operator` member per kind of leaf predicate.

Every unbound and bound leaf class names its operator in a class constant ``op``; code that
must talk about an operator as a value (building a bound leaf from an unbound one, the
bit-sliced comparisons of the BSI and range-bitmap readers) takes an :class:`Operator`, and
``match`` statements over it end in :func:`unreachable`, so mypy reports every place a new
member is not handled. Walking a tree dispatches per class instead (each bound leaf calls its
own method of :class:`~lakeskip.expressions.visitors.BoundPredicateVisitor`).

>>> Operator.LT.mirrored, str(Operator.NOT_IN)
(<Operator.GT: '>'>, 'NOT IN')
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
