"""``CALL sys.expire_snapshots(...)`` and ``CALL sys.remove_orphan_files(...)``.

Both list and delete metadata-sized sets of files on the driver, so they need no executor
(``executor=None`` is fine). The work is :mod:`lakeskip.catalog.maintenance`.

Timestamps are Paimon's ``'yyyy-MM-dd HH:mm:ss[.SSS]'`` (or ``'yyyy-MM-dd'``), read in
the local time zone as Paimon reads them in the JVM's default zone; an explicit offset
(``'2024-05-01 12:00:00+00:00'``) is honoured.
"""

from __future__ import annotations

import datetime
import time
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

#: Paimon's ``remove_orphan_files`` default: files older than one day
DEFAULT_ORPHAN_AGE_MILLIS = 86_400_000


def parse_timestamp_millis(text: str, name: str) -> int:
    """``'yyyy-MM-dd HH:mm:ss[.SSS]'`` (local time unless an offset is given) -> epoch millis.

    >>> parse_timestamp_millis("1970-01-01 00:00:01.5+00:00", "older_than")
    1500

    Raises:
        InvalidArgumentError: not a timestamp.
    """
    try:
        ts = datetime.datetime.fromisoformat(text.strip())
    except ValueError as e:
        raise InvalidArgumentError(
            f"{name} => {text!r} is not a timestamp (use 'yyyy-MM-dd HH:mm:ss')"
        ) from e
    if ts.tzinfo is None:
        ts = ts.astimezone()  # naive = local time, as Paimon's TimeZone.getDefault()
    return int(ts.timestamp() * 1000)


def _older_than(arguments: Mapping[str, Any]) -> int | None:
    text = arguments.get("older_than")
    if text is None or not str(text).strip():
        return None
    return parse_timestamp_millis(str(text), "older_than")


class ExpireSnapshots(Procedure):
    """``sys.expire_snapshots(table, retain_last => 1, older_than => 'yyyy-MM-dd HH:mm:ss')``.

    Keeps the newest ``retain_last`` snapshots and, with ``older_than``, every snapshot
    still current at or after that instant; deletes the rest and the files only they used.
    """

    name = "sys.expire_snapshots"
    doc = "Delete old snapshots and the data, index and manifest files only they used."
    parameters = (
        ProcedureParameter("table", str, required=True),
        ProcedureParameter("retain_last", int, default=1, doc="newest snapshots to keep (>= 1)"),
        ProcedureParameter("older_than", str, doc="keep snapshots current at or after this"),
    )

    def run(
        self,
        *,
        catalog: Catalog,
        executor: Executor,
        arguments: Mapping[str, Any],
        default_database: str,
    ) -> ProcedureResult:
        retain = int(arguments["retain_last"])
        if retain < 1:
            raise InvalidArgumentError(f"{self.name}: retain_last must be at least 1, got {retain}")
        older = _older_than(arguments)
        table = catalog.get_table(qualify(arguments["table"], default_database))
        r = expire_snapshots(table, retain, older)
        return ProcedureResult(
            columns=(
                ("snapshots_deleted", "INT"),
                ("data_files_deleted", "BIGINT"),
                ("index_files_deleted", "BIGINT"),
                ("manifest_files_deleted", "BIGINT"),
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
    """``sys.remove_orphan_files(table, older_than => now - 1 day, dry_run => false)``.

    Deletes files under the table that no snapshot, tag or branch references and that were
    last modified before ``older_than`` (which must be in the past, as in Paimon).
    """

    name = "sys.remove_orphan_files"
    doc = "Delete unreferenced files older than older_than (default: 1 day ago)."
    parameters = (
        ProcedureParameter("table", str, required=True),
        ProcedureParameter("older_than", str, doc="only files modified before this"),
        ProcedureParameter("dry_run", bool, default=False, doc="report, delete nothing"),
    )

    def run(
        self,
        *,
        catalog: Catalog,
        executor: Executor,
        arguments: Mapping[str, Any],
        default_database: str,
    ) -> ProcedureResult:
        older = _older_than(arguments)
        now = int(time.time() * 1000)
        if older is None:
            older = now - DEFAULT_ORPHAN_AGE_MILLIS
        elif older > now:
            raise InvalidArgumentError(
                f"{self.name}: older_than => {arguments['older_than']!r} is in the future; "
                "files of commits in flight would be deleted"
            )
        dry_run = bool(arguments["dry_run"])
        table = catalog.get_table(qualify(arguments["table"], default_database))
        r = remove_orphan_files(table, older, dry_run)
        return ProcedureResult(
            columns=(
                ("files_deleted", "BIGINT"),
                ("bytes_deleted", "BIGINT"),
                ("dry_run", "BOOLEAN"),
                ("paths", "ARRAY<STRING>"),
            ),
            values=((r.files_deleted, r.bytes_deleted, dry_run, list(r.paths)),),
        )
