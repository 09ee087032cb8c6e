"""Which lakeskip tables a query reads, and which predicates apply to each reference.

Every reference (a FROM/JOIN source in some scope: the main query, CTEs, derived tables,
subqueries) gets its own predicate: the AND of the translated WHERE conjuncts of the scope
that reads it directly, over columns attributed to that reference. Sound by construction:

* join conditions (ON / USING) are never used as filters;
* a table on the null-supplying side of an outer join gets no predicate (pruning its rows
  could turn a filtered-out joined row into a NULL-extended row that passes the WHERE);
* an unqualified column is attributed only when it cannot belong to another source;
* predicates of an outer query are not pushed into CTEs or derived tables (their own WHERE
  clauses are used where they read the table).

Example:
    >>> import sqlglot
    >>> from lakeskip import types as T
    >>> rt = T.RowType.of(("id", T.BIGINT), ("k", T.STRING))
    >>> tree = sqlglot.parse_one(
    ...     "SELECT * FROM db.t a LEFT JOIN db.t b ON a.id = b.id WHERE a.k = 'x' AND b.id > 1",
    ...     read="spark")
    >>> scans = analyze_query(tree, tables=lambda i: rt, default_db="default")
    >>> [(s.alias, repr(s.predicate)) for s in scans]
    [('a', "EqualTo(Reference('k'), 'x')"), ('b', 'AlwaysTrue()')]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.optimizer.scope import Scope, traverse_scope

from lakeskip.errors import SqlParseError, UnsupportedStatementError
from lakeskip.expressions import AlwaysTrue, BooleanExpression, Reference, and_
from lakeskip.sql.predicates import to_expression
from lakeskip.sql.statement_types import DIALECT, Query, TableIdent
from lakeskip.types import RowType

__all__ = [
    "AsOf",
    "TableScan",
    "analyze_query",
    "condition_predicate",
    "nondeterministic_function",
    "qualify_tables",
    "rewrite_tables",
    "time_travel_of",
]


@dataclass(frozen=True, slots=True)
class AsOf:
    """A reference's time-travel clause: ``VERSION AS OF <version>`` (a snapshot id or a tag)
    or ``TIMESTAMP AS OF <timestamp_sql>`` (any Spark expression castable to a timestamp)."""

    version: int | str | None = None
    timestamp_sql: str | None = None


@dataclass(frozen=True, slots=True)
class TableScan:
    """One reference to a lakeskip table, with the predicate that may prune it."""

    node: exp.Table = field(compare=False)
    ident: TableIdent
    alias: str | None
    predicate: BooleanExpression
    as_of: AsOf | None = None


def time_travel_of(node: exp.Table) -> AsOf | None:
    """The ``VERSION AS OF`` / ``TIMESTAMP AS OF`` clause of a table reference, if any.

    >>> import sqlglot
    >>> t = sqlglot.parse_one("SELECT * FROM t VERSION AS OF 'v1'", read="spark")
    >>> time_travel_of(t.find(exp.Table))
    AsOf(version='v1', timestamp_sql=None)
    """
    version = node.args.get("version")
    if version is None:
        return None
    value = version.expression
    kind = str(version.this).upper()
    if str(version.args.get("kind") or "").upper() != "AS OF":
        raise UnsupportedStatementError(
            f"time travel {version.sql(DIALECT)!r} is not supported (use VERSION AS OF or "
            "TIMESTAMP AS OF)"
        )
    if kind == "TIMESTAMP":
        return AsOf(timestamp_sql=value.sql(DIALECT))
    if isinstance(value, exp.Literal):
        if value.is_string:
            return AsOf(version=str(value.this))
        text = str(value.this)
        if text.isdigit():
            return AsOf(version=int(text))
    raise UnsupportedStatementError(
        f"VERSION AS OF needs a snapshot id or a tag name, got {value.sql(DIALECT)!r}"
    )


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        inner = node.this
        return _conjuncts(inner) if isinstance(inner, exp.And) else [node]
    return [node]


def _null_supplying(select: exp.Expression) -> set[str]:
    """Aliases of sources on the null-supplying side of an outer join in this SELECT."""
    out: set[str] = set()
    joins = select.args.get("joins") or []
    if not joins:
        return out
    seen: list[str] = []
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is not None and isinstance(from_.this, exp.Expression):
        seen.append(from_.this.alias_or_name)
    for j in joins:
        name = j.this.alias_or_name
        side = (j.args.get("side") or "").upper()
        if side in ("LEFT", "FULL"):
            out.add(name)
        if side in ("RIGHT", "FULL"):
            out.update(seen)
        seen.append(name)
    return out


def analyze_query(
    tree: exp.Expression,
    tables: Callable[[TableIdent], RowType | None],
    schemas: Mapping[str, Mapping[str, str]] | None = None,
    default_db: str = "default",
    time_zone: str = "UTC",
) -> list[TableScan]:
    """One :class:`TableScan` per reference to a lakeskip table in ``tree``.

    Args:
        tree: the parsed query.
        tables: returns the row type of a lakeskip table, or ``None`` for anything else.
        schemas: column names of other tables by qualified name, when known (lets
            unqualified columns be attributed in joins with non-lakeskip tables).
        default_db: database of unqualified table names.
        time_zone: Spark's session time zone, for timestamp literals.
    """
    scans: list[TableScan] = []
    for scope in traverse_scope(tree):
        refs: dict[str, tuple[exp.Table, TableIdent, RowType]] = {}
        other_columns: dict[str, set[str] | None] = {}
        for alias, source in scope.sources.items():
            if isinstance(source, exp.Table):
                if source.catalog:  # not ours (e.g. spark_catalog.db.t)
                    other_columns[alias] = None
                    continue
                ident = TableIdent(source.db or None, source.name)
                row_type = tables(ident)
                if row_type is not None:
                    refs[alias] = (source, ident, row_type)
                    continue
                if "$" in source.name:
                    base = TableIdent(ident.database, source.name.split("$", 1)[0])
                    if tables(base) is not None:
                        raise UnsupportedStatementError(
                            f"system table {source.name} is read through the Spark catalog "
                            "(lakeskip.connect with javac available)"
                        )
                known = (schemas or {}).get(ident.qualified(default_db))
                other_columns[alias] = {c.lower() for c in known} if known is not None else None
            elif isinstance(source, Scope):
                other_columns[alias] = _scope_columns(source)
            else:
                other_columns[alias] = None
        if not refs:
            continue
        select = scope.expression
        where = select.args.get("where") if isinstance(select, exp.Select) else None
        nullable_side = _null_supplying(select) if isinstance(select, exp.Select) else set()
        for alias, (node, ident, row_type) in refs.items():
            predicate: BooleanExpression = AlwaysTrue()
            # a sample or pivot applies before the WHERE: pruning would change what it sees
            reshaped = node.args.get("sample") is not None or bool(node.args.get("pivots"))
            if where is not None and alias not in nullable_side and not reshaped:
                resolver = _resolver(alias, row_type, refs, other_columns, len(scope.sources))
                parts = [
                    to_expression(c, resolver, row_type, time_zone) for c in _conjuncts(where.this)
                ]
                for p in parts:
                    predicate = and_(predicate, p)
            alias_node = node.args.get("alias")
            if alias_node is not None and not isinstance(alias_node.this, exp.Identifier):
                # `t$snapshots` parses as `t AS ${snapshots}`
                raise UnsupportedStatementError(
                    f"quote a system table name in backquotes: `{node.name}$...` "
                    f"(got {node.sql(DIALECT)})"
                )
            scans.append(
                TableScan(node, ident, node.alias or None, predicate, time_travel_of(node))
            )
    return scans


def _scope_columns(scope: Scope) -> set[str] | None:
    select = scope.expression
    if isinstance(select, exp.Select):
        names = set()
        for e in select.expressions:
            if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star):
                return None
            names.add(e.alias_or_name.lower())
        return names
    return None


def _resolver(
    alias: str,
    row_type: RowType,
    refs: Mapping[str, tuple[exp.Table, TableIdent, RowType]],
    other_columns: Mapping[str, set[str] | None],
    n_sources: int,
) -> Callable[[exp.Expression], Reference | None]:
    def column_ref(col: exp.Column) -> Reference | None:
        qualifier = col.table
        name = col.name
        if col.args.get("db") or col.args.get("catalog"):
            return None
        if qualifier:
            if qualifier != alias or not row_type.has(name):
                return None
            return Reference(row_type.field(name).name)
        if not row_type.has(name):
            return None
        if n_sources > 1:
            for other, (_, _, rt) in refs.items():
                if other != alias and rt.has(name):
                    return None  # ambiguous (Spark would reject it anyway)
            for cols in other_columns.values():
                if cols is None or name.lower() in cols:
                    return None  # might belong to a source we know nothing about
        return Reference(row_type.field(name).name)

    def resolve(node: exp.Expression) -> Reference | None:
        if isinstance(node, exp.Column):
            return column_ref(node)
        if isinstance(node, exp.Bracket) and isinstance(node.this, exp.Column):
            keys = node.expressions
            if len(keys) == 1 and isinstance(keys[0], exp.Literal) and keys[0].is_string:
                base = column_ref(node.this)
                if base is not None and row_type.field(base.name).type.root.name == "MAP":
                    return Reference(base.name, key=str(keys[0].this))
        return None

    return resolve


def rewrite_tables(tree: exp.Expression, mapping: Mapping[int, str]) -> str:
    """The query's Spark SQL with each mapped table reference (by ``id(node)``) replaced by a
    view name, keeping its alias (or the table's name as alias, so ``t.col`` still works).

    Every other clause of the reference (TABLESAMPLE, PIVOT, hints, ...) is kept; only the
    time-travel clause is removed, because the view already holds that snapshot's files.
    """

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and id(node) in mapping:
            alias = node.alias or node.name
            new = node.copy()
            for key in ("db", "catalog", "version"):
                new.set(key, None)
            new.set("this", exp.to_identifier(mapping[id(node)]))
            alias_node = node.args.get("alias")
            if alias_node is not None:
                alias_node = alias_node.copy()
                alias_node.set("this", exp.to_identifier(alias))
            else:
                alias_node = exp.TableAlias(this=exp.to_identifier(alias))
            new.set("alias", alias_node)
            return new
        return node

    return tree.transform(swap, copy=False).sql(DIALECT)


def table_references(query: Query) -> list[tuple[str | None, TableIdent]]:
    """Every table name ``query`` reads, as written: (its catalog, if named; the name).
    CTE and view names are among them (the caller looks each up).

    >>> import sqlglot
    >>> q = Query("", sqlglot.parse_one("SELECT * FROM a JOIN lk.d.b USING (x)", read="spark"))
    >>> table_references(q)
    [(None, TableIdent(database=None, name='a')), ('lk', TableIdent(database='d', name='b'))]
    """
    return [
        (n.catalog or None, TableIdent(n.db or None, n.name))
        for n in query.tree.find_all(exp.Table)
        if n.name
    ]


def qualify_tables(
    query: Query,
    tables: Callable[[TableIdent], RowType | None],
    catalog_name: str,
    default_db: str,
) -> str:
    """``query``'s SQL with every lakeskip table reference qualified as
    ``<catalog_name>.<db>.<table>`` (keeping its name as the alias, so column references
    like ``t.id`` still resolve); ``tables`` says which names are lakeskip tables."""
    tree = query.tree.copy()
    for scan in analyze_query(tree, tables=tables, default_db=default_db):
        node: exp.Table = scan.node
        db, _, _ = scan.ident.qualified(default_db).partition(".")
        if not node.alias:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(node.name)))
        node.set("db", exp.to_identifier(db))
        node.set("catalog", exp.to_identifier(catalog_name))
    return str(tree.sql(DIALECT))


_TARGET = "__lakeskip_dml_target"


def condition_predicate(
    condition: str | None, row_type: RowType, alias: str, time_zone: str = "UTC"
) -> BooleanExpression:
    """The pruning predicate of a DELETE/UPDATE ``WHERE`` condition over one table, read as
    ``SELECT * FROM <table> AS <alias> WHERE <condition>`` (so subqueries and qualified columns
    are scoped exactly as in a query). ``None`` (no WHERE) is ``AlwaysTrue``.

    >>> from lakeskip import types as T
    >>> rt = T.RowType.of(("id", T.BIGINT), ("k", T.STRING))
    >>> condition_predicate("t.id = 3 AND k IN (SELECT k FROM u)", rt, "t")
    EqualTo(Reference('id'), 3)
    """
    if condition is None:
        return AlwaysTrue()
    target = exp.to_identifier(_TARGET).sql(DIALECT)
    text = f"SELECT * FROM {target} AS {exp.to_identifier(alias).sql(DIALECT)} WHERE {condition}"
    try:
        tree = sqlglot.parse_one(text, read=DIALECT)
    except (ParseError, TokenError) as e:
        raise SqlParseError(f"cannot parse the condition {condition!r}: {e}") from e
    if not isinstance(tree, exp.Select):  # e.g. a condition that ends the statement early
        raise SqlParseError(f"cannot parse the condition {condition!r}")
    from_ = tree.args.get("from") or tree.args.get("from_")
    main = from_.this if from_ is not None else None

    def tables(ident: TableIdent) -> RowType | None:
        return row_type if ident == TableIdent(None, _TARGET) else None

    for scan in analyze_query(tree, tables=tables, time_zone=time_zone):
        if scan.node is main:
            return scan.predicate
    return AlwaysTrue()


_NONDETERMINISTIC = frozenset(
    {
        "rand",
        "random",
        "randn",
        "uuid",
        "shuffle",
        "monotonically_increasing_id",
        "spark_partition_id",
        "input_file_name",
        "input_file_block_start",
        "input_file_block_length",
    }
)


def nondeterministic_function(condition: str) -> str | None:
    """The first function in ``condition`` whose value changes from one evaluation to the next
    (``rand()``, ``uuid()``, ...), or ``None``. A DELETE/UPDATE condition is evaluated twice
    (to find the files, then to rewrite them), so it must give the same answer both times.

    >>> nondeterministic_function("a > 1 AND rand() < 0.5"), nondeterministic_function("a > 1")
    ('rand', None)
    """
    try:
        tree = sqlglot.parse_one(condition, read=DIALECT)
    except (ParseError, TokenError):
        return None  # condition_predicate reports it
    for f in tree.find_all(exp.Func):
        name = (f.name if isinstance(f, exp.Anonymous) else f.sql_name()).lower()
        if name in _NONDETERMINISTIC:
            return name
    return None
