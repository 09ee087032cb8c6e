"""What ``merge_pruning`` reads out of a MERGE's ON condition: only conjuncts that every
matching (target, source) pair satisfies, with each column on the side Spark puts it."""

from __future__ import annotations

import pytest

from lakeskip import types as T
from lakeskip.expressions import AlwaysTrue, EqualTo, GreaterThan, and_
from lakeskip.sql.merge_keys import MergeKey, merge_pruning

ROW = T.RowType.of(("id", T.BIGINT), ("k", T.STRING), ("p", T.INT), ("only_t", T.INT))
SOURCE = ["id", "k", "v", "only_s"]


def _keys(on: str) -> list[tuple[str, str, bool]]:
    return [
        (k.column, k.source_sql, k.null_safe) for k in merge_pruning(on, ROW, "t", "s", SOURCE).keys
    ]


@pytest.mark.parametrize(
    ("on", "keys"),
    [
        ("t.id = s.id", [("id", "s.id", False)]),
        ("s.id = t.id", [("id", "s.id", False)]),
        ("t.id <=> s.id", [("id", "s.id", True)]),
        ("T.ID = S.ID", [("id", "S.ID", False)]),  # Spark's names are case-insensitive
        (
            "(t.id = s.id) AND ((t.k = lower(s.k)))",
            [("id", "s.id", False), ("k", "LOWER(s.k)", False)],
        ),
        ("only_t = only_s", [("only_t", "only_s", False)]),  # unqualified: the side that has it
        ("t.id = s.id + s.v AND s.v > 0", [("id", "s.id + s.v", False)]),
        # not usable: both sides' columns, an OR, a constant, an expression over the target,
        # an ambiguous name, a subquery, a per-query function, an unknown alias
        ("t.id = s.id + t.p", []),
        ("t.id = s.id OR t.k = s.k", []),
        ("t.id = 5", []),
        ("t.id + 1 = s.id", []),
        ("id = s.id", []),
        ("t.id = (SELECT max(id) FROM s)", []),
        ("t.p = s.v + current_date()", []),
        ("t.id = x.id", []),
        ("t.nope = s.id", []),
        ("t.id = s.nope", []),
        ("t.id < s.id", []),
        ("this is not sql (", []),
    ],
)
def test_key_equalities(on: str, keys: list[tuple[str, str, bool]]) -> None:
    assert _keys(on) == keys


def test_target_only_conjuncts_become_a_predicate() -> None:
    p = merge_pruning("t.id = s.id AND t.p = 3 AND only_t > 1 AND s.v = 2", ROW, "t", "s", SOURCE)
    assert p.keys == (MergeKey("id", "s.id", False),)
    assert p.target_predicate == and_(EqualTo("p", 3), GreaterThan("only_t", 1))
    # a conjunct reading the source, or an OR across sides, constrains nothing on its own
    p = merge_pruning("t.id = s.id AND (t.p = 3 OR s.v = 1)", ROW, "t", "s", SOURCE)
    assert p.target_predicate == AlwaysTrue()


def test_same_alias_on_both_sides_is_not_guessed() -> None:
    assert merge_pruning("t.id = t.id", ROW, "t", "t", SOURCE).keys == ()
