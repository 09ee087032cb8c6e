"""MERGE INTO on every DML engine: the statement's clauses resolved against the target
(:func:`merge_spec`), the target's files it may touch (:func:`merge_target`), the commit's
check (:func:`merge_concurrent_check`), and the "changes" frame (:func:`merge_changes`, used by
the primary-key and deletion-vector engines).

The changes frame has one row per target row an action applies to and one per inserted source row::

    <table columns>     the row to write: new values (UPDATE), the target row (DELETE),
                        the inserted row (INSERT)
    __lakeskip_action   the clause code: 1.. = WHEN MATCHED / NOT MATCHED BY SOURCE clauses
                        in order, INSERT_CODE (-1) = an inserted row, 0 = no action
    __lakeskip_m        how many source rows matched the target row (0 for inserts)
    <carried columns>   target columns the engine needs (row position, old key), NULL for
                        inserts

A target row with no action is kept only when it matched several source rows (so the
multiple-match check sees it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
)
from lakeskip.spark.modify.base import (
    ACTION_COLUMN,
    INSERT_CODE,
    MATCHES_COLUMN,
    SOURCE_MARK,
    MergeRequest,
    session_time_zone,
    sql_with,
)
from lakeskip.spark.modify.merge_prune import MergeTarget, plan_merge_target
from lakeskip.spark.modify.serializable import serializable_check
from lakeskip.sql.merge import MergeAction, MergeActionKind
from lakeskip.sql.query import nondeterministic_function
from lakeskip.types import RowType, quote_identifier

__all__ = [
    "MergeSpec",
    "case_chain",
    "check_single_match",
    "merge_changes",
    "merge_concurrent_check",
    "merge_joined",
    "merge_spec",
    "merge_target",
]


@dataclass(frozen=True, slots=True)
class MergeSpec:
    """A MERGE INTO statement, checked and resolved against the target's schema.

    Attributes:
        what: ``"MERGE INTO t"`` for messages.
        alias / source_alias: the names the statement uses.
        on: the match condition.
        matched / not_matched / not_matched_by_source: the clauses, in order.
        updates: clause code -> column -> value, for the UPDATE clauses (codes: 1.. over
            WHEN MATCHED then WHEN NOT MATCHED BY SOURCE, in order).
        deletes: the codes of the DELETE clauses.
        inserts: per WHEN NOT MATCHED clause, column -> value.
        time_zone: Spark's session time zone.
    """

    what: str
    alias: str
    source_alias: str
    on: str
    matched: tuple[MergeAction, ...]
    not_matched: tuple[MergeAction, ...]
    not_matched_by_source: tuple[MergeAction, ...]
    updates: Mapping[int, Mapping[str, str]]
    deletes: tuple[int, ...]
    inserts: tuple[Mapping[str, str], ...]
    time_zone: str

    def action_sql(self) -> str:
        """The clause code of a joined (target, source) row: the first clause that applies."""
        s = quote_identifier(self.source_alias)
        return (
            f"CASE WHEN {s}.{SOURCE_MARK} IS NOT NULL THEN {case_chain(self.matched, 1)} "
            f"ELSE {case_chain(self.not_matched_by_source, 1 + len(self.matched))} END"
        )


def case_chain(actions: Sequence[MergeAction], first_code: int) -> str:
    """``CASE WHEN cond THEN code ... ELSE 0 END``: the first clause whose condition is TRUE
    (SQL: a NULL condition does not apply)."""
    if not actions:
        return "0"
    parts = []
    for i, a in enumerate(actions):
        cond = f"coalesce(({a.condition}), false)" if a.condition is not None else "TRUE"
        parts.append(f"WHEN {cond} THEN {first_code + i}")
    return "CASE " + " ".join(parts) + " ELSE 0 END"


def _resolve_assignments(
    table: FileStoreTable, row_type: RowType, action: MergeAction, source_alias: str, what: str
) -> dict[str, str]:
    """column -> Spark SQL value of an UPDATE/INSERT action (``*``: the source's columns)."""
    if action.assignments is None:
        s = quote_identifier(source_alias)
        return {f.name: f"{s}.{quote_identifier(f.name)}" for f in row_type}
    out: dict[str, str] = {}
    for column, value in action.assignments:
        if not row_type.has(column):
            raise ColumnNotFoundError(
                f"{what}: no column {column} in {table.identifier} (columns: "
                f"{', '.join(row_type.names)})"
            )
        name = row_type.field(column).name
        if name in out:
            raise InvalidArgumentError(f"{what}: column {name} assigned twice")
        out[name] = value
    return out


def merge_spec(request: MergeRequest) -> MergeSpec:
    """Check a MERGE (deterministic conditions, distinct names, known columns) and resolve its
    clauses; refreshes ``table``.

    Raises:
        InvalidArgumentError: a condition is not deterministic; target and source have one
            name; a column is assigned twice.
        ColumnNotFoundError: a SET / INSERT column is not in the table.
    """
    table, on, source_alias = request.table, request.on, request.source_alias
    matched, not_matched = request.matched, request.not_matched
    not_matched_by_source = request.not_matched_by_source
    what = f"MERGE INTO {table.identifier}"
    for text in [on, *(a.condition for a in (*matched, *not_matched, *not_matched_by_source))]:
        if text is not None and (fn := nondeterministic_function(text)) is not None:
            raise InvalidArgumentError(f"{what}: conditions must be deterministic ({fn}() is not)")
    table.refresh()
    row_type = table.schema.row_type
    alias = request.alias or table.identifier.rsplit(".", 1)[-1]
    if alias.lower() == source_alias.lower():
        raise InvalidArgumentError(f"{what}: target and source are both named {alias}")
    targeted = (*matched, *not_matched_by_source)
    return MergeSpec(
        what=what,
        alias=alias,
        source_alias=source_alias,
        on=on,
        matched=tuple(matched),
        not_matched=tuple(not_matched),
        not_matched_by_source=tuple(not_matched_by_source),
        updates={
            i: _resolve_assignments(table, row_type, a, source_alias, what)
            for i, a in enumerate(targeted, start=1)
            if a.kind is MergeActionKind.UPDATE
        },
        deletes=tuple(
            i for i, a in enumerate(targeted, start=1) if a.kind is MergeActionKind.DELETE
        ),
        inserts=tuple(
            _resolve_assignments(table, row_type, a, source_alias, what) for a in not_matched
        ),
        time_zone=session_time_zone(request.spark, request.time_zone),
    )


def merge_target(
    spark: SparkSession, table: FileStoreTable, spec: MergeSpec, source: DataFrame
) -> MergeTarget:
    """The target files a MERGE reads (pruned by the source's ON keys) and the source to use
    from here on (evaluated once): :func:`lakeskip.spark.modify.merge_prune.plan_merge_target`."""
    return plan_merge_target(
        spark,
        table,
        source,
        on=spec.on,
        alias=spec.alias,
        source_alias=spec.source_alias,
        by_source=bool(spec.not_matched_by_source),
        time_zone=spec.time_zone,
    )


def merge_concurrent_check(
    table: FileStoreTable, spec: MergeSpec, planned: MergeTarget
) -> Callable[[Snapshot | None], None]:
    """A MERGE's :func:`~lakeskip.spark.modify.serializable.serializable_check`: the target
    rows that may match a source row (ON's target conjuncts and the source's keys, as
    planned; every row when the target was not pruned) are the same at the snapshot it
    commits on as at the one it planned on."""
    return serializable_check(
        table,
        planned.snapshot,
        planned.predicate,
        spec.time_zone,
        spec.what,
        read_files=planned.files,
    )


def merge_joined(spec: MergeSpec, views: Mapping[str, str], identity: Sequence[str]) -> str:
    """``FROM`` text: each target row once per matching source row (NULLs: none). Without WHEN
    MATCHED clauses only whether a match exists matters, so each target row appears once
    (identified by the ``identity`` columns)."""
    t, s = quote_identifier(spec.alias), quote_identifier(spec.source_alias)
    cond = f"({spec.on})"
    if spec.matched:
        return f"{views['t']} AS {t} LEFT JOIN {views['s']} AS {s} ON {cond}"
    ids = ", ".join(f"{t}.{quote_identifier(c)} AS __i{n}" for n, c in enumerate(identity))
    same = " AND ".join(f"{t}.{quote_identifier(c)} <=> {s}.__i{n}" for n, c in enumerate(identity))
    return (
        f"{views['t']} AS {t} LEFT JOIN (SELECT DISTINCT {ids}, TRUE AS {SOURCE_MARK} "
        f"FROM {views['t']} AS {t} JOIN {views['s']} AS {s} ON {cond}) AS {s} ON {same}"
    )


def merge_changes(
    spark: SparkSession,
    spec: MergeSpec,
    row_type: RowType,
    target: DataFrame | None,
    source: DataFrame,
    identity: Sequence[str],
    carry: Sequence[tuple[str, str, str]] = (),
) -> DataFrame | None:
    """The changes frame of the module docstring (``None``: no clause can apply).

    Args:
        target: the target's live rows (one per logical row; ``None``: empty table).
        identity: target columns naming one row (its key, or file and position).
        carry: (target column, output name, Spark DDL type) to carry along.
    """
    t, s = quote_identifier(spec.alias), quote_identifier(spec.source_alias)
    src = source.select("*", F.lit(True).alias(SOURCE_MARK))
    pieces: list[DataFrame] = []
    if target is not None and (spec.matched or spec.not_matched_by_source):
        names = list(row_type.names)
        values = []
        for code, assigned in spec.updates.items():
            for column, value in assigned.items():
                ddl = row_type.field(column).type.spark_ddl()
                values.append(f"CAST(({value}) AS {ddl}) AS __v{code}_{names.index(column)}")
        ids = ", ".join(f"{t}.{quote_identifier(c)}" for c in identity)
        m = (
            f"count({s}.{SOURCE_MARK}) OVER (PARTITION BY {ids})"
            if spec.matched
            else f"CASE WHEN {s}.{SOURCE_MARK} IS NULL THEN 0 ELSE 1 END"
        )
        inner = ", ".join(
            [
                f"{t}.*",
                f"{spec.action_sql()} AS {ACTION_COLUMN}",
                f"{m} AS {MATCHES_COLUMN}",
                *values,
            ]
        )
        outer = []
        for i, f in enumerate(row_type):
            q = quote_identifier(f.name)
            whens = [f"WHEN {c} THEN __v{c}_{i}" for c, a in spec.updates.items() if f.name in a]
            outer.append(
                f"CASE {ACTION_COLUMN} {' '.join(whens)} ELSE {q} END AS {q}" if whens else q
            )
        outer += [
            f"CAST({ACTION_COLUMN} AS INT) AS {ACTION_COLUMN}",
            f"CAST({MATCHES_COLUMN} AS BIGINT) AS {MATCHES_COLUMN}",
            *(
                f"CAST({quote_identifier(c)} AS {ddl}) AS {quote_identifier(n)}"
                for c, n, ddl in carry
            ),
        ]
        pieces.append(
            sql_with(
                spark,
                {"t": target, "s": src},
                lambda v: (
                    f"SELECT {', '.join(outer)} FROM (SELECT {inner} FROM "
                    f"{merge_joined(spec, v, identity)}) "
                    f"WHERE {ACTION_COLUMN} <> 0 OR {MATCHES_COLUMN} > 1"
                ),
            )
        )
    if spec.not_matched:
        frames = {"s": src} if target is None else {"s": src, "t": target}
        firsts = [
            f"coalesce(({a.condition}), false)" if a.condition is not None else "TRUE"
            for a in spec.not_matched
        ]
        items = []
        for f in row_type:
            ddl = f.type.spark_ddl()
            # one branch per clause, in order: the first clause that applies decides
            whens = [
                f"WHEN {c} THEN "
                + (f"CAST(({assigned[f.name]}) AS {ddl})" if f.name in assigned else "NULL")
                for c, assigned in zip(firsts, spec.inserts, strict=True)
            ]
            items.append(f"CAST(CASE {' '.join(whens)} END AS {ddl}) AS {quote_identifier(f.name)}")
        items += [
            f"CAST({INSERT_CODE} AS INT) AS {ACTION_COLUMN}",
            f"CAST(0 AS BIGINT) AS {MATCHES_COLUMN}",
            *(f"CAST(NULL AS {ddl}) AS {quote_identifier(n)}" for _, n, ddl in carry),
        ]

        def insert_sql(v: Mapping[str, str]) -> str:
            anti = f" LEFT ANTI JOIN {v['t']} AS {t} ON ({spec.on})" if "t" in v else ""
            return (
                f"SELECT {', '.join(items)} FROM {v['s']} AS {s}{anti} WHERE {' OR '.join(firsts)}"
            )

        pieces.append(sql_with(spark, frames, insert_sql))
    if not pieces:
        return None
    out = pieces[0]
    for p in pieces[1:]:
        out = out.unionAll(p)
    return out


def check_single_match(spec: MergeSpec, max_matches: int) -> None:
    """Spark's rule: with WHEN MATCHED clauses, a target row matched by several source rows
    is an error (whether or not a clause applies to it)."""
    if spec.matched and max_matches > 1:
        raise InvalidArgumentError(
            f"{spec.what}: a target row matches more than one source row (each target row may "
            "be updated or deleted by one source row only)"
        )
