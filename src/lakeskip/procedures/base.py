"""Procedures: ``CALL sys.<name>(...)`` from SQL, ``session.call(...)`` from Python.

A :class:`Procedure` declares its parameters; :meth:`Procedure.bind_arguments` checks a call's
positional and named (``arg => value``) arguments against them with one-line errors, and
:meth:`Procedure.run` does the work through an :class:`Executor` -- the seam that lets the
work that grows with the data run in Spark tasks while this package stays Spark-free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.table import FileStoreTable, retry_on_conflict
from lakeskip.errors import InvalidArgumentError

__all__ = [
    "Executor",
    "Procedure",
    "ProcedureParameter",
    "ProcedureResult",
    "SortSpec",
    "target_table",
]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class ProcedureParameter:
    """One declared argument."""

    name: str
    kind: type  # str, int or bool
    required: bool = False
    default: Any = None
    doc: str = ""


@dataclass(frozen=True, slots=True)
class ProcedureResult:
    """The result row(s) a procedure returns: ``columns`` are (name, Spark SQL type)."""

    columns: tuple[tuple[str, str], ...]
    values: tuple[tuple[Any, ...], ...]

    def spark_schema(self) -> str:
        return ", ".join(f"{n} {t}" for n, t in self.columns)

    def rows(self) -> list[tuple[Any, ...]]:
        return [tuple(v) for v in self.values]

    def as_dict(self) -> dict[str, Any]:
        """The first row by column name (convenient in tests and the Python API)."""
        return dict(zip((c for c, _ in self.columns), self.values[0], strict=True))


@dataclass(frozen=True, slots=True)
class SortSpec:
    """How compaction orders rows: ``strategy`` is order | zorder | hilbert; ``curve_keys``
    (``sort.curve-keys``) is ``rank`` (each column by its rank in a sample,
    :mod:`lakeskip.sort.ranked`) or ``paimon`` (Paimon's raw-byte keys)."""

    strategy: str
    columns: tuple[str, ...]
    var_length_contribution: int = 8
    curve_keys: str = "rank"


class Executor(Protocol):
    """Where the per-file work runs. The Spark implementation runs one task per item."""

    @property
    def parallelism(self) -> int:
        """How many tasks run at once (Spark's default parallelism); work is split into at
        least this many tasks where it can be."""
        ...

    def map(self, fn: Callable[[T], R], items: Sequence[T], description: str) -> list[R]:
        """Apply ``fn`` to every item (in tasks); results in item order."""
        ...

    def rewrite_sorted(
        self,
        table: FileStoreTable,
        files: Sequence[ManifestEntry],
        sort: SortSpec,
        deleted: Mapping[str, bytes] | None = None,
    ) -> list[ManifestEntry]:
        """Read ``files``, range-partition and sort their rows by ``sort``, and write new
        data files (with stats and indexes); returns the new ADD entries. ``deleted``: data
        file name -> its deletion vector (portable RoaringBitmap bytes); those rows are
        dropped."""
        ...


class Procedure:
    """Base class: subclasses set ``name``, ``parameters``, ``result_columns`` and ``run``."""

    name: str = ""
    doc: str = ""
    parameters: tuple[ProcedureParameter, ...] = ()

    def bind_arguments(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Match positional and named arguments to parameters.

        Raises:
            InvalidArgumentError: too many, unknown, duplicate, missing or mistyped arguments.
        """
        params = self.parameters
        if len(args) > len(params):
            raise InvalidArgumentError(
                f"{self.name} takes at most {len(params)} arguments, got {len(args)}"
            )
        bound: dict[str, Any] = {}
        for p, v in zip(params, args, strict=False):
            bound[p.name] = v
        by_name = {p.name: p for p in params}
        for key, value in kwargs.items():
            k = key.lower()
            if k not in by_name:
                known = ", ".join(p.name for p in params)
                raise InvalidArgumentError(
                    f"{self.name} has no argument {key!r} (arguments: {known})"
                )
            if k in bound:
                raise InvalidArgumentError(f"{self.name}: argument {k!r} given twice")
            bound[k] = value
        for p in params:
            if p.name not in bound or bound[p.name] is None:
                if p.required:
                    raise InvalidArgumentError(f"{self.name}: missing required argument {p.name!r}")
                bound[p.name] = p.default
                continue
            bound[p.name] = _coerce(self.name, p, bound[p.name])
        return bound

    def run(
        self,
        *,
        catalog: Catalog,
        executor: Executor,
        arguments: Mapping[str, Any],
        default_database: str,
    ) -> ProcedureResult:
        raise NotImplementedError


class TableProcedure(Procedure):
    """A procedure on the one table its ``table`` argument names: subclasses implement
    :meth:`run_on` with that table (unqualified: in the default database)."""

    def run(
        self,
        *,
        catalog: Catalog,
        executor: Executor,
        arguments: Mapping[str, Any],
        default_database: str,
    ) -> ProcedureResult:
        table = target_table(catalog, arguments, default_database)
        return self.run_on(table, arguments, executor)

    def run_on(
        self, table: FileStoreTable, arguments: Mapping[str, Any], executor: Executor
    ) -> ProcedureResult:
        raise NotImplementedError


def run_procedure(
    procedure: Procedure,
    *,
    catalog: Catalog,
    executor: Executor,
    arguments: Mapping[str, Any],
    default_database: str,
) -> ProcedureResult:
    """Run a procedure (arguments already bound); run it again while its commit conflicts
    with a concurrent one (:func:`~lakeskip.catalog.table.retry_on_conflict`: every
    procedure plans against the latest snapshot and removes what it wrote when its commit
    conflicts)."""

    def run() -> ProcedureResult:
        return procedure.run(
            catalog=catalog,
            executor=executor,
            arguments=arguments,
            default_database=default_database,
        )

    if not arguments.get("table"):
        return run()
    return retry_on_conflict(target_table(catalog, arguments, default_database), run)


def _coerce(proc: str, p: ProcedureParameter, value: Any) -> Any:
    if p.kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
    elif p.kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
    elif p.kind is str and isinstance(value, str):
        return value
    raise InvalidArgumentError(
        f"{proc}: argument {p.name!r} must be {p.kind.__name__}, got {value!r}"
    )


def qualify(table: str, default_database: str) -> str:
    return table if "." in table else f"{default_database}.{table}"


def target_table(
    catalog: Catalog, arguments: Mapping[str, Any], default_database: str
) -> FileStoreTable:
    """The table a procedure's ``table`` argument names (unqualified: the default database)."""
    return catalog.get_table(qualify(arguments["table"], default_database))
