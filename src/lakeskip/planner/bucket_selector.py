"""Bucket pruning: which buckets of a fixed-bucket table can hold rows matching a filter.

As Paimon's ``BucketSelectConverter``: only a filter that pins **every** bucket-key column to
a finite set of values (``=``, ``IN``, ``IS NULL``, combined by AND/OR) selects buckets; the
buckets are those of every combination of the values, computed by the writer's own function
(:func:`lakeskip.catalog.format.bucket.bucket_of`) from the bound literals, which are already in the
column type's internal form, so they encode to the same ``BinaryRow`` bytes as the rows.
Anything else -- a key column left free, a type whose literal encoding is not certain to match
the writer's (floating point, timestamps, binary, CHAR(n)), too many combinations -- selects
all buckets.

>>> from lakeskip import types as T
>>> from lakeskip.catalog.format.bucket import BucketSpec
>>> from lakeskip.expressions import EqualTo, Or, bind
>>> rt = T.RowType.of(("a", T.INT), ("b", T.STRING))
>>> spec = BucketSpec(8, ("a",), (T.INT,))
>>> sorted(select_buckets(bind(rt, Or(EqualTo("a", 0), EqualTo("a", 42))), spec))
[3, 5]
>>> select_buckets(bind(rt, EqualTo("b", "x")), spec) is None
True
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from lakeskip.catalog.format.bucket import PRUNABLE_ROOTS, BucketSpec, bucket_of
from lakeskip.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundEqualTo,
    BoundIn,
    BoundIsNull,
    BoundPredicate,
    Or,
    rewrite_not,
)

__all__ = ["MAX_COMBINATIONS", "select_buckets"]

MAX_COMBINATIONS = 1024
"""More value combinations than this select all buckets (planning stays cheap)."""
_MAX_DISJUNCTS = 64

# a disjunction of conjunctions: each dict pins some key columns to value sets
_Dnf = list[dict[str, frozenset[Any]]]
_ALL: _Dnf = [{}]


def _leaf(p: BoundPredicate, key: frozenset[str]) -> _Dnf:
    name = p.term.column
    if p.term.key is not None or name not in key:
        return _ALL
    if isinstance(p, BoundEqualTo):
        return [{name: frozenset([p.value])}]
    if isinstance(p, BoundIn):
        return [{name: frozenset(p.values)}]
    if isinstance(p, BoundIsNull):
        return [{name: frozenset([None])}]
    return _ALL


def _dnf(e: BooleanExpression, key: frozenset[str]) -> _Dnf:
    if isinstance(e, AlwaysTrue):
        return _ALL
    if isinstance(e, AlwaysFalse):
        return []
    if isinstance(e, And):
        left, right = _dnf(e.left, key), _dnf(e.right, key)
        if len(left) * len(right) > _MAX_DISJUNCTS:
            return _ALL  # dropping constraints only widens the selection
        out: _Dnf = []
        for a, b in itertools.product(left, right):
            merged = dict(a)
            for col, vals in b.items():
                merged[col] = merged[col] & vals if col in merged else vals
            out.append(merged)
        return out
    if isinstance(e, Or):
        both = _dnf(e.left, key) + _dnf(e.right, key)
        return _ALL if len(both) > _MAX_DISJUNCTS or any(not c for c in both) else both
    if isinstance(e, BoundPredicate):
        return _leaf(e, key)
    return _ALL


def select_buckets(bound: BooleanExpression, spec: BucketSpec) -> set[int] | None:
    """The buckets that may hold matching rows, or ``None`` for "all of them".

    Args:
        bound: the query's bound predicate.
        spec: the table's bucket spec.
    """
    # CHAR(n): Spark pads stored values and literals differently from the bytes hashed
    if any(t.root not in PRUNABLE_ROOTS or t.fixed for t in spec.types):
        return None
    dnf = _dnf(rewrite_not(bound), frozenset(spec.key))
    selected: set[int] = set()
    for conj in dnf:
        if any(k not in conj for k in spec.key):
            return None
        sets = [conj[k] for k in spec.key]
        if math.prod(len(s) for s in sets) > MAX_COMBINATIONS:
            return None
        try:
            for combo in itertools.product(*sets):
                selected.add(bucket_of(combo, spec.types, spec.num_buckets))
        except Exception:  # a literal the writer could not have produced: stay safe
            return None
    return selected
