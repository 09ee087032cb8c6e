"""What a MERGE INTO's ON condition says about the target, for pruning the target's files.

A target row can match a source row only where every top-level conjunct of ON is TRUE, so
from ON we take (:func:`merge_pruning`):

* the *key equalities* ``t.col = <source expr>`` (or ``<=>``): the target column and the
  source-side expression as Spark SQL, for the Spark layer to evaluate over the source and
  turn into ``col IN (distinct values)``;
* the *target-only* conjuncts (``t.p = 'x'``), as a pruning predicate (through
  :func:`~lakeskip.sql.query.condition_predicate`, so they bind exactly as a DELETE's WHERE).

Everything else (ORs across sides, expressions over target columns, subqueries) is ignored,
which only keeps more files. Columns are resolved as Spark resolves MERGE's ON: a qualified
name by its alias, an unqualified one by the side that has it (a name both sides have is
Spark's ambiguity error, so it never reaches a plan; we skip it anyway).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from lakeskip.expressions import AlwaysTrue, BooleanExpression
from lakeskip.sql.query import condition_predicate
from lakeskip.sql.statement_types import DIALECT
from lakeskip.types import RowType

__all__ = ["MergeKey", "MergePruning", "merge_pruning"]


@dataclass(frozen=True, slots=True)
class MergeKey:
    """One ``t.column = source_sql`` conjunct of ON.

    Attributes:
        column: the target column (the table's spelling).
        source_sql: the other side, Spark SQL over the source (qualified by its alias).
        null_safe: ``<=>``: a NULL source value matches a NULL target value.
    """

    column: str
    source_sql: str
    null_safe: bool


@dataclass(frozen=True, slots=True)
class MergePruning:
    """What ON allows of the target (see the module docstring)."""

    keys: tuple[MergeKey, ...]
    target_predicate: BooleanExpression


_NOTHING = MergePruning((), AlwaysTrue())


def merge_pruning(
    on: str,
    row_type: RowType,
    alias: str,
    source_alias: str,
    source_columns: Collection[str],
    time_zone: str = "UTC",
) -> MergePruning:
    """The key equalities and the target-only predicate of ``on`` (nothing if it does not
    parse: Spark reports that when it runs the statement).

    >>> from lakeskip import types as T
    >>> rt = T.RowType.of(("id", T.BIGINT), ("p", T.INT))
    >>> p = merge_pruning("t.id = s.id + 1 AND p = 3 AND s.v > 0", rt, "t", "s", ["id", "v"])
    >>> p.keys, p.target_predicate
    ((MergeKey(column='id', source_sql='s.id + 1', null_safe=False),), EqualTo(Reference('p'), 3))
    """
    try:
        tree = sqlglot.parse_one(on, read=DIALECT)
    except (ParseError, TokenError):
        return _NOTHING
    if tree is None:
        return _NOTHING
    sides = _Sides(row_type, alias, source_alias, source_columns)
    keys: list[MergeKey] = []
    target_only: list[str] = []
    for c in _conjuncts(tree):
        if isinstance(c, (exp.EQ, exp.NullSafeEQ)):
            for col, other in ((c.left, c.right), (c.right, c.left)):
                name = sides.target_column(col)
                if name is not None and sides.source_only(other):
                    keys.append(MergeKey(name, other.sql(DIALECT), isinstance(c, exp.NullSafeEQ)))
                    break
        if sides.target_only(c):
            target_only.append(f"({c.sql(DIALECT)})")
    predicate: BooleanExpression = AlwaysTrue()
    if target_only:
        predicate = condition_predicate(" AND ".join(target_only), row_type, alias, time_zone)
    return MergePruning(tuple(keys), predicate)


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return [*_conjuncts(node.left), *_conjuncts(node.right)]
    return [node]


_PER_QUERY = frozenset({"now", "curdate", "localtimestamp", "unix_timestamp", "uuid"})


def _per_query(f: exp.Func) -> bool:
    """A function whose value Spark fixes per query (``current_date()``): the key values
    computed in one job could differ from the MERGE's own."""
    name = (f.name if isinstance(f, exp.Anonymous) else f.sql_name()).lower()
    return name.startswith("current") or name in _PER_QUERY


class _Sides:
    """Which side of the MERGE a column of ON belongs to."""

    def __init__(
        self, row_type: RowType, alias: str, source_alias: str, source_columns: Collection[str]
    ) -> None:
        self.target = {n.lower(): n for n in row_type.names}
        self.source = {c.lower() for c in source_columns}
        self.alias = alias.lower()
        self.source_alias = source_alias.lower()

    def _side(self, col: exp.Column) -> str | None:
        """``"t"``, ``"s"`` or ``None`` (unknown or ambiguous)."""
        if col.args.get("db") is not None or col.args.get("catalog") is not None:
            return None  # t.struct.field and the like
        table, name = col.table.lower(), col.name.lower()
        if table == self.alias and table != self.source_alias:
            return "t" if name in self.target else None
        if table == self.source_alias and table != self.alias:
            return "s" if name in self.source else None
        if table:
            return None
        in_t, in_s = name in self.target, name in self.source
        return "t" if in_t and not in_s else "s" if in_s and not in_t else None

    def target_column(self, node: exp.Expr) -> str | None:
        """The target column ``node`` names (a bare column reference), else ``None``."""
        if isinstance(node, exp.Column) and self._side(node) == "t":
            return self.target[node.name.lower()]
        return None

    def _only(self, node: exp.Expr, side: str) -> bool:
        if any(True for _ in node.find_all(exp.Subquery, exp.Select, exp.Star)):
            return False
        if any(_per_query(f) for f in node.find_all(exp.Func)):
            return False
        return all(self._side(c) == side for c in node.find_all(exp.Column))

    def source_only(self, node: exp.Expr) -> bool:
        """``node`` reads source columns only, at least one (a constant is target-only)."""
        return any(True for _ in node.find_all(exp.Column)) and self._only(node, "s")

    def target_only(self, node: exp.Expr) -> bool:
        """``node`` reads target columns only, at least one."""
        return any(True for _ in node.find_all(exp.Column)) and self._only(node, "t")
