"""The predicate tree, binding, NOT push-down, visitors and the Arrow oracle evaluator."""

from __future__ import annotations

from lakeskip.expressions.arrow_eval import evaluate_arrow, evaluate_arrow_3vl
from lakeskip.expressions.binding import BoundPredicate, BoundReference, bind, rewrite_not
from lakeskip.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotStartsWith,
    Or,
    Reference,
    StartsWith,
    UnboundPredicate,
)
from lakeskip.expressions.visitors import BooleanExpressionVisitor, BoundPredicateVisitor, visit

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "BooleanExpressionVisitor",
    "BoundPredicate",
    "BoundPredicateVisitor",
    "BoundReference",
    "EqualTo",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "IsNotNull",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "Not",
    "NotEqualTo",
    "NotIn",
    "NotStartsWith",
    "Or",
    "Reference",
    "StartsWith",
    "UnboundPredicate",
    "bind",
    "evaluate_arrow",
    "evaluate_arrow_3vl",
    "rewrite_not",
    "visit",
]
