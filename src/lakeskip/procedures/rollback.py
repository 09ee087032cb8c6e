"""``CALL sys.rollback(table, version | snapshot | tag)`` and
``CALL sys.rollback_to_timestamp(table, timestamp)``, with Paimon's arguments and result
columns. Unlike Paimon, the rollback is a new snapshot and the newer snapshots stay
readable until they expire (:mod:`lakeskip.catalog.ops.rollback`). Metadata only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.ops.rollback import rollback_to
from lakeskip.catalog.ops.time_travel import TimeTravel, resolve_snapshot
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError
from lakeskip.procedures.base import (
    Executor,
    Procedure,
    ProcedureParameter,
    ProcedureResult,
    TableProcedure,
    target_table,
)

__all__ = ["Rollback", "RollbackToTimestamp"]

_COLUMNS = (
    ("previous_snapshot_id", "BIGINT"),
    ("current_snapshot_id", "BIGINT"),
    ("files_added", "BIGINT"),
    ("files_deleted", "BIGINT"),
)


def _run(table: FileStoreTable, travel: TimeTravel) -> ProcedureResult:
    target = resolve_snapshot(table, travel)
    latest = table.latest_snapshot()
    previous = latest.id if latest is not None else None
    r = rollback_to(table, target)
    current = r.snapshot.id if r.snapshot is not None else previous
    return ProcedureResult(
        columns=_COLUMNS, values=((previous, current, r.files_added, r.files_deleted),)
    )


class Rollback(Procedure):
    """``sys.rollback(table, version)``: a version of digits is a snapshot id, anything
    else a tag (Paimon's rule); or exactly one of ``snapshot`` / ``tag``."""

    name = "sys.rollback"
    doc = "Make the table's data that of an earlier snapshot or tag, as a new snapshot."
    parameters = (
        ProcedureParameter("table", str, required=True),
        ProcedureParameter("version", str, doc="snapshot id or tag name"),
        ProcedureParameter("snapshot", int, doc="snapshot id"),
        ProcedureParameter("tag", str, doc="tag name"),
    )

    def run(
        self,
        *,
        catalog: Catalog,
        executor: Executor,
        arguments: Mapping[str, Any],
        default_database: str,
    ) -> ProcedureResult:
        given = [k for k in ("version", "snapshot", "tag") if arguments.get(k) is not None]
        if len(given) != 1:
            raise InvalidArgumentError(
                f"{self.name}: give exactly one of version, snapshot, tag (got "
                f"{', '.join(given) or 'none'})"
            )
        table = target_table(catalog, arguments, default_database)
        if arguments.get("snapshot") is not None:
            travel = TimeTravel(snapshot_id=int(arguments["snapshot"]))
        elif arguments.get("tag") is not None:
            travel = TimeTravel(tag=str(arguments["tag"]))
        else:
            version = str(arguments["version"]).strip()
            travel = (
                TimeTravel(snapshot_id=int(version))
                if version.isdigit()
                else TimeTravel(tag=version)
            )
        return _run(table, travel)


class RollbackToTimestamp(TableProcedure):
    """``sys.rollback_to_timestamp(table, timestamp)``: epoch millis; the newest snapshot
    committed at or before it."""

    name = "sys.rollback_to_timestamp"
    doc = "Make the table's data that of the snapshot current at a time (epoch millis)."
    parameters = (
        ProcedureParameter("table", str, required=True),
        ProcedureParameter("timestamp", int, required=True, doc="epoch milliseconds"),
    )

    def run_on(
        self, table: FileStoreTable, arguments: Mapping[str, Any], executor: Executor
    ) -> ProcedureResult:
        return _run(table, TimeTravel(timestamp_millis=int(arguments["timestamp"])))
