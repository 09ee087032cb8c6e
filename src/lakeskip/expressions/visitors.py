"""Visitors over bound trees: one method per node kind, results combined bottom-up.

>>> from lakeskip import types as T
>>> from lakeskip.expressions import bind, EqualTo, Or, IsNull
>>> class Columns(BooleanExpressionVisitor[set]):
...     def visit_true(self): return set()
...     def visit_false(self): return set()
...     def visit_not(self, child): return child
...     def visit_and(self, left, right): return left | right
...     def visit_or(self, left, right): return left | right
...     def visit_bound_predicate(self, p): return {p.term.name}
>>> rt = T.RowType.of(("a", T.INT), ("b", T.STRING))
>>> sorted(visit(bind(rt, Or(EqualTo("a", 1), IsNull("b"))), Columns()))
['a', 'b']
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

from lakeskip.errors import InvalidArgumentError
from lakeskip.expressions.bound import BoundPredicate, BoundReference
from lakeskip.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Not,
    Or,
    UnboundPredicate,
)

__all__ = ["BooleanExpressionVisitor", "BoundPredicateVisitor", "visit"]

T = TypeVar("T")


class BooleanExpressionVisitor(Generic[T]):
    """Override what you need; the defaults raise for unexpected nodes."""

    def visit_true(self) -> T:
        raise NotImplementedError

    def visit_false(self) -> T:
        raise NotImplementedError

    def visit_not(self, child_result: T) -> T:
        raise NotImplementedError

    def visit_and(self, left_result: T, right_result: T) -> T:
        raise NotImplementedError

    def visit_or(self, left_result: T, right_result: T) -> T:
        raise NotImplementedError

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> T:
        raise InvalidArgumentError(f"unbound predicate {predicate!r}: bind it first")

    def visit_bound_predicate(self, predicate: BoundPredicate) -> T:
        raise NotImplementedError


class BoundPredicateVisitor(BooleanExpressionVisitor[T], ABC):
    """One method per leaf operator, each given the :class:`BoundReference` and the
    internal-form literal(s). Bound leaves dispatch to them themselves
    (:meth:`~lakeskip.expressions.bound.BoundPredicate.accept`), and every method is
    abstract, so mypy rejects a visitor that misses an operator.

    The index readers (:class:`lakeskip.index.base.FileIndexReader`) answer the same
    method names for their one column, without the ``term`` argument.
    """

    def visit_bound_predicate(self, predicate: BoundPredicate) -> T:
        return predicate.accept(self)

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


def visit(expr: BooleanExpression, visitor: BooleanExpressionVisitor[T]) -> T:
    """Post-order traversal of ``expr`` with ``visitor`` (children before their parent).

    Raises:
        InvalidArgumentError: a node that is not part of the predicate tree.
    """
    if isinstance(expr, AlwaysTrue):
        return visitor.visit_true()
    if isinstance(expr, AlwaysFalse):
        return visitor.visit_false()
    if isinstance(expr, Not):
        return visitor.visit_not(visit(expr.child, visitor))
    if isinstance(expr, And):
        return visitor.visit_and(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Or):
        return visitor.visit_or(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, BoundPredicate):
        return visitor.visit_bound_predicate(expr)
    if isinstance(expr, UnboundPredicate):
        return visitor.visit_unbound_predicate(expr)
    raise InvalidArgumentError(f"cannot visit {expr!r}")
