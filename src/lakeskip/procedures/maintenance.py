"""``CALL sys.expire_snapshots(...)`` and ``CALL sys.remove_orphan_files(...)``.

Metadata-sized work (listing and deleting files) that runs on the driver.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.maintenance import expire_snapshots, remove_orphan_files
from lakeskip.errors import InvalidArgumentError
from lakeskip.procedures.base import (
    Executor,
    Procedure,
    ProcedureParameter,
    ProcedureResult,
    qualify,
)

__all__ = ["ExpireSnapshots", "RemoveOrphanFiles", "parse_timestamp_millis"]


def parse_timestamp_millis(text: str, name: str) -> int:
    """``'yyyy-MM-dd HH:mm:ss'`` (UTC) -> epoch millis.

    >>> parse_timestamp_millis("1970-01-01 00:00:01", "older_than")
    1000
    """
    try:
        ts = datetime.datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError as e:
        raise InvalidArgumentError(
            f"{name} => {text!r} is not a timestamp (use 'yyyy-MM-dd HH:mm:ss')"
        ) from e
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=datetime.timezone.utc)
    return int(ts.timestamp() * 1000)


class ExpireSnapshots(Procedure):
    name = "sys.expire_snapshots"
    doc = "Delete old snapshots and the files only they used."
    parameters = (
        ProcedureParameter("table", str, required=True),
        ProcedureParameter("retain_last", int, default=1),
        ProcedureParameter("older_than", str),
    )

    def run(
        self,
        *,
        catalog: Catalog,
        executor: Executor,
        arguments: Mapping[str, Any],
        default_database: str,
    ) -> ProcedureResult:
        table = catalog.get_table(qualify(arguments["table"], default_database))
        older = arguments.get("older_than")
        millis = parse_timestamp_millis(older, "older_than") if older else None
        r = expire_snapshots(table, int(arguments["retain_last"]), millis)
        return ProcedureResult(
            columns=(
                ("snapshots_deleted", "INT"),
                ("data_files_deleted", "INT"),
                ("index_files_deleted", "INT"),
                ("manifest_files_deleted", "INT"),
            ),
            values=(
                (
                    r.snapshots_deleted,
                    r.data_files_deleted,
                    r.index_files_deleted,
                    r.manifest_files_deleted,
                ),
            ),
        )


class RemoveOrphanFiles(Procedure):
    name = "sys.remove_orphan_files"
    doc = "Delete files no snapshot references that are older than older_than (default 1 day)."
    parameters = (
        ProcedureParameter("table", str, required=True),
        ProcedureParameter("older_than", str),
        ProcedureParameter("dry_run", bool, default=False),
    )

    def run(
        self,
        *,
        catalog: Catalog,
        executor: Executor,
        arguments: Mapping[str, Any],
        default_database: str,
    ) -> ProcedureResult:
        table = catalog.get_table(qualify(arguments["table"], default_database))
        older = arguments.get("older_than")
        millis = parse_timestamp_millis(older, "older_than") if older else None
        r = remove_orphan_files(table, millis, bool(arguments["dry_run"]))
        return ProcedureResult(
            columns=(("files_deleted", "INT"), ("bytes_deleted", "BIGINT"), ("dry_run", "BOOLEAN")),
            values=((r.files_deleted, r.bytes_deleted, bool(arguments["dry_run"])),),
        )
