"""``MERGE INTO``: sqlglot tree -> :class:`Merge`, a typed statement of Spark SQL fragments.

The fragments (source query, ON condition, clause conditions, assigned values) stay Spark SQL
text: Spark evaluates them, with its own semantics, when the copy-on-write job runs
(:mod:`lakeskip.spark.modify.dispatch`). Here we only take the statement apart and check its shape::

    MERGE INTO target [[AS] t] USING (source_table | (query)) [[AS] s] ON <on>
      WHEN MATCHED [AND <cond>] THEN UPDATE SET c = expr, ... | UPDATE SET * | DELETE
      WHEN NOT MATCHED [BY TARGET] [AND <cond>] THEN INSERT (c, ...) VALUES (expr, ...) | INSERT *
      WHEN NOT MATCHED BY SOURCE [AND <cond>] THEN UPDATE SET c = expr, ... | DELETE
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sqlglot import exp

from lakeskip.errors import SqlParseError, UnsupportedStatementError
from lakeskip.sql.statement_types import DIALECT, Statement, TableIdent

__all__ = ["Merge", "MergeAction", "MergeActionKind", "merge_from_tree"]


class MergeActionKind(enum.Enum):
    UPDATE = "update"
    DELETE = "delete"
    INSERT = "insert"


@dataclass(frozen=True, slots=True)
class MergeAction:
    """One ``WHEN ... THEN`` clause.

    Attributes:
        kind: update, delete or insert.
        condition: the clause's ``AND <cond>`` (Spark SQL), ``None``: always.
        assignments: ``(column, Spark SQL expression)`` pairs; ``None`` for ``UPDATE SET *`` /
            ``INSERT *`` (every target column from the source column of the same name) and
            for DELETE.
    """

    kind: MergeActionKind
    condition: str | None = None
    assignments: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True, slots=True)
class Merge(Statement):
    """``MERGE INTO``: ``source_sql`` is a query; ``alias`` / ``source_alias`` are the names
    the ON condition and the clauses use for target and source."""

    ident: TableIdent
    alias: str | None
    source_sql: str
    source_alias: str
    on: str
    matched: tuple[MergeAction, ...]
    not_matched: tuple[MergeAction, ...]
    not_matched_by_source: tuple[MergeAction, ...]
    sql: str = ""


def _assignments(items: list[exp.Expression], what: str) -> tuple[tuple[str, str], ...] | None:
    if len(items) == 1 and isinstance(items[0], exp.Star):
        return None
    out: list[tuple[str, str]] = []
    for a in items:
        target = a.this if isinstance(a, exp.EQ) else None
        if not isinstance(target, exp.Column) or target.args.get("db"):
            raise UnsupportedStatementError(
                f"{what}: SET {a.sql(DIALECT)} is not supported (use SET column = expr)"
            )
        out.append((target.name, a.expression.sql(DIALECT)))
    return tuple(out)


def _insert(then: exp.Insert, what: str) -> tuple[tuple[str, str], ...] | None:
    if isinstance(then.this, exp.Star):
        return None
    columns = then.this.expressions if isinstance(then.this, exp.Tuple) else [then.this]
    values_node = then.expression
    values = values_node.expressions if isinstance(values_node, exp.Tuple) else [values_node]
    if any(not isinstance(c, exp.Column) for c in columns):
        raise UnsupportedStatementError(f"{what}: INSERT names columns only")
    if len(columns) != len(values):
        raise SqlParseError(
            f"{what}: INSERT lists {len(columns)} column(s) and {len(values)} value(s)"
        )
    return tuple((c.name, v.sql(DIALECT)) for c, v in zip(columns, values, strict=True))


def _action(when: exp.When, what: str) -> tuple[str, MergeAction]:
    matched = bool(when.args.get("matched"))
    by_source = bool(when.args.get("source"))
    group = "matched" if matched else ("by_source" if by_source else "not_matched")
    cond_node = when.args.get("condition")
    condition = cond_node.sql(DIALECT) if cond_node is not None else None
    then = when.args.get("then")
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        kind, assigned = MergeActionKind.DELETE, None
    elif isinstance(then, exp.Update):
        kind, assigned = MergeActionKind.UPDATE, _assignments(list(then.expressions), what)
    elif isinstance(then, exp.Insert):
        kind, assigned = MergeActionKind.INSERT, _insert(then, what)
    else:
        raise UnsupportedStatementError(f"{what}: unsupported clause {when.sql(DIALECT)}")
    allowed = {
        "matched": (MergeActionKind.UPDATE, MergeActionKind.DELETE),
        "by_source": (MergeActionKind.UPDATE, MergeActionKind.DELETE),
        "not_matched": (MergeActionKind.INSERT,),
    }[group]
    if kind not in allowed:
        label = {
            "matched": "WHEN MATCHED",
            "by_source": "WHEN NOT MATCHED BY SOURCE",
            "not_matched": "WHEN NOT MATCHED",
        }[group]
        raise SqlParseError(f"{what}: {label} cannot {kind.value.upper()}")
    if group == "by_source" and kind is MergeActionKind.UPDATE and assigned is None:
        raise SqlParseError(f"{what}: WHEN NOT MATCHED BY SOURCE cannot UPDATE SET *")
    return group, MergeAction(kind, condition, assigned)


def merge_from_tree(tree: exp.Merge, ident: TableIdent, text: str) -> Merge:
    """The typed statement; ``ident`` is the target as the caller resolved it."""
    what = f"MERGE INTO {ident}"
    target = tree.this
    alias = target.alias or None if isinstance(target, exp.Table) else None
    using = tree.args.get("using")
    if isinstance(using, exp.Table):
        source_alias = using.alias or using.name
        bare = using.copy()
        bare.set("alias", None)
        source_sql = f"SELECT * FROM {bare.sql(DIALECT)}"
    elif isinstance(using, exp.Subquery) and isinstance(using.this, exp.Query):
        if not using.alias:
            raise SqlParseError(f"{what}: the source subquery needs an alias (USING (...) AS s)")
        source_alias = using.alias
        source_sql = using.this.sql(DIALECT)
    else:
        raise UnsupportedStatementError(
            f"{what}: USING {using.sql(DIALECT) if using is not None else '?'} is not supported"
        )
    on = tree.args.get("on")
    if on is None or tree.args.get("using_cond"):
        raise UnsupportedStatementError(f"{what}: MERGE needs ON <condition>")
    whens_node = tree.args.get("whens")
    whens = list(whens_node.expressions) if whens_node is not None else []
    if not whens:
        raise SqlParseError(f"{what}: no WHEN clause")
    groups: dict[str, list[MergeAction]] = {"matched": [], "not_matched": [], "by_source": []}
    for w in whens:
        group, action = _action(w, what)
        groups[group].append(action)
    for group, actions in groups.items():
        for a in actions[:-1]:
            if a.condition is None:
                raise SqlParseError(
                    f"{what}: only the last WHEN {group.replace('_', ' ').upper()} clause "
                    "may omit its condition"
                )
    return Merge(
        ident=ident,
        alias=alias,
        source_sql=source_sql,
        source_alias=source_alias,
        on=on.sql(DIALECT),
        matched=tuple(groups["matched"]),
        not_matched=tuple(groups["not_matched"]),
        not_matched_by_source=tuple(groups["by_source"]),
        sql=text,
    )
