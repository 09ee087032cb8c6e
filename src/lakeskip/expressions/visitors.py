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

from typing import Generic, TypeVar

from lakeskip.errors import InvalidArgumentError
from lakeskip.expressions.bound import BoundLeafVisitor, BoundPredicate
from lakeskip.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Not,
    Or,
    UnboundPredicate,
)

__all__ = [
    "BooleanExpressionVisitor",
    "BoundLeafVisitor",
    "BoundPredicateVisitor",
    "column_names",
    "conjuncts",
    "referenced_names",
    "visit",
]

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


class BoundPredicateVisitor(BooleanExpressionVisitor[T], BoundLeafVisitor[T]):
    """A tree visitor whose bound leaves dispatch themselves to the
    :class:`~lakeskip.expressions.bound.BoundLeafVisitor` methods (one per operator, each
    abstract, so mypy rejects a visitor that misses an operator).
    """

    def visit_bound_predicate(self, predicate: BoundPredicate) -> T:
        return predicate.accept(self)


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


class _Names(BooleanExpressionVisitor[frozenset[str]]):
    def visit_true(self) -> frozenset[str]:
        return frozenset()

    def visit_false(self) -> frozenset[str]:
        return frozenset()

    def visit_not(self, child_result: frozenset[str]) -> frozenset[str]:
        return child_result

    def visit_and(
        self, left_result: frozenset[str], right_result: frozenset[str]
    ) -> frozenset[str]:
        return left_result | right_result

    def visit_or(self, left_result: frozenset[str], right_result: frozenset[str]) -> frozenset[str]:
        return left_result | right_result

    def visit_bound_predicate(self, predicate: BoundPredicate) -> frozenset[str]:
        return frozenset((predicate.term.name,))


def referenced_names(bound: BooleanExpression) -> frozenset[str]:
    """The file-index column names (``col`` or ``col[key]``) a bound tree tests.

    >>> from lakeskip import types as T
    >>> from lakeskip.expressions import bind, EqualTo, And, IsNull
    >>> rt = T.RowType.of(("a", T.INT), ("b", T.STRING))
    >>> sorted(referenced_names(bind(rt, And(EqualTo("a", 1), IsNull("b")))))
    ['a', 'b']

    Raises:
        InvalidArgumentError: an unbound predicate in the tree.
    """
    return visit(bound, _Names())


def conjuncts(expr: BooleanExpression) -> list[BooleanExpression]:
    """The parts of a tree of ``And``s, left to right (the tree itself when it is no ``And``).

    >>> from lakeskip.expressions import EqualTo, IsNull, Or
    >>> len(conjuncts(And(And(EqualTo("a", 1), IsNull("b")), Or(EqualTo("c", 2), IsNull("c")))))
    3
    """
    if isinstance(expr, And):
        return [*conjuncts(expr.left), *conjuncts(expr.right)]
    return [expr]


def column_names(expr: BooleanExpression) -> set[str]:
    """Lower-cased top-level column names an unbound tree reads.

    >>> from lakeskip.expressions import EqualTo, IsNull
    >>> sorted(column_names(Or(EqualTo("A", 1), Not(IsNull("b")))))
    ['a', 'b']
    """
    if isinstance(expr, (And, Or)):
        return column_names(expr.left) | column_names(expr.right)
    if isinstance(expr, Not):
        return column_names(expr.child)
    if isinstance(expr, UnboundPredicate):
        return {expr.term.name.lower()}
    return set()
