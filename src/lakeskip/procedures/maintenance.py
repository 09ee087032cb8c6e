"""``CALL sys.expire_snapshots(...)`` and ``CALL sys.remove_orphan_files(...)``.

Both list and delete metadata-sized sets of files on the driver, so they need no executor
(``executor=None`` is fine). The work is :mod:`lakeskip.catalog.ops.maintenance`.

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
from lakeskip.catalog.ops.maintenance import expire_snapshots, remove_orphan_files
from lakeskip.catalog.option_checks import validate_options
from lakeskip.catalog.options import option_int, option_millis
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


class ExpireSnapshots(TableProcedure):
    """``sys.expire_snapshots(table, retain_max, retain_min, older_than, max_deletes, options)``,
    Paimon's procedure: arguments not given come from the table's ``snapshot.num-retained.max``,
    ``snapshot.num-retained.min``, ``snapshot.time-retained`` (``older_than`` = now minus it)
    and ``snapshot.expire.limit`` (``options => 'k=v,...'`` overrides them for this call).

    ``retain_last => n`` is lakeskip's shorthand for "keep the newest n, expire the rest"
    (with ``older_than``: also keep every snapshot current at or after it); table options
    are then not consulted.
    """

    name = "sys.expire_snapshots"
    doc = "Delete old snapshots and the data, index and manifest files only they used."
    parameters = (
        ProcedureParameter("table", str, required=True),
        ProcedureParameter("retain_max", int, doc="keep at most this many snapshots"),
        ProcedureParameter("retain_min", int, doc="keep at least this many snapshots"),
        ProcedureParameter("older_than", str, doc="keep snapshots current at or after this"),
        ProcedureParameter("max_deletes", int, doc="expire at most this many in this call"),
        ProcedureParameter("options", str, doc="table options for this call: 'k=v,k2=v2'"),
        ProcedureParameter("retain_last", int, doc="keep the newest n, expire the rest"),
    )

    def run_on(
        self, table: FileStoreTable, arguments: Mapping[str, Any], executor: Executor
    ) -> ProcedureResult:
        older = _older_than(arguments)
        retain_max = _optional_int(arguments, "retain_max")
        max_deletes = _optional_int(arguments, "max_deletes")
        if arguments.get("retain_last") is not None:
            if arguments.get("retain_min") is not None:
                raise InvalidArgumentError(f"{self.name}: give retain_last or retain_min, not both")
            retain = int(arguments["retain_last"])
        else:
            options = {**table.schema.options, **_dynamic_options(arguments.get("options"))}
            given = _optional_int(arguments, "retain_min")
            retain = (
                given if given is not None else option_int(options, "snapshot.num-retained.min")
            )
            if retain_max is None:
                retain_max = option_int(options, "snapshot.num-retained.max")
            if max_deletes is None:
                max_deletes = option_int(options, "snapshot.expire.limit")
            if older is None:
                older = int(time.time() * 1000) - option_millis(options, "snapshot.time-retained")
        if retain < 1:
            which = "retain_last" if arguments.get("retain_last") is not None else "retain_min"
            raise InvalidArgumentError(f"{self.name}: {which} must be at least 1, got {retain}")
        r = expire_snapshots(table, retain, older, retain_max=retain_max, max_deletes=max_deletes)
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


def _optional_int(arguments: Mapping[str, Any], name: str) -> int | None:
    value = arguments.get(name)
    return None if value is None else int(value)


def _dynamic_options(text: str | None) -> dict[str, str]:
    """Paimon's procedure ``options`` argument: ``'k1=v1,k2=v2'``."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f"options => {text!r}: expected 'key=value,...'")
        out[key.strip()] = value.strip()
    validate_options(out, None)
    return out


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
        table = target_table(catalog, arguments, default_database)
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
