"""``CALL sys.create_tag / replace_tag / delete_tag / rename_tag(...)``: Paimon's tag
procedures, with Paimon's argument names. Metadata only: no executor is needed. The work
is :mod:`lakeskip.catalog.ops.tags`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakeskip.catalog.ops.tags import create_tag, delete_tag, rename_tag, replace_tag
from lakeskip.catalog.options import parse_duration_millis
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError, InvalidOptionError
from lakeskip.procedures.base import (
    Executor,
    ProcedureParameter,
    ProcedureResult,
    TableProcedure,
)

__all__ = ["CreateTag", "DeleteTag", "RenameTag", "ReplaceTag"]

_TAGGED = (("result", "BOOLEAN"), ("snapshot_id", "BIGINT"))


def _retained(arguments: Mapping[str, Any]) -> int | None:
    text = arguments.get("time_retained")
    if text is None or not str(text).strip():
        return None
    try:
        return parse_duration_millis(str(text), "time_retained")
    except InvalidOptionError as e:
        raise InvalidArgumentError(str(e)) from e


def _snapshot_id(arguments: Mapping[str, Any]) -> int | None:
    value = arguments.get("snapshot")
    return None if value is None else int(value)


class CreateTag(TableProcedure):
    """``sys.create_tag(table, tag, snapshot => latest, time_retained => '1 d')``."""

    name = "sys.create_tag"
    doc = "Name a snapshot (default: the latest) so it can be read and is never expired."
    parameters = (
        ProcedureParameter("table", str, required=True),
        ProcedureParameter("tag", str, required=True),
        ProcedureParameter("snapshot", int, doc="snapshot id (default: the latest)"),
        ProcedureParameter("time_retained", str, doc="how long the tag is kept, e.g. '7 d'"),
    )

    def run_on(
        self, table: FileStoreTable, arguments: Mapping[str, Any], executor: Executor
    ) -> ProcedureResult:
        snap = create_tag(table, arguments["tag"], _snapshot_id(arguments), _retained(arguments))
        return ProcedureResult(columns=_TAGGED, values=((True, snap.id),))


class ReplaceTag(TableProcedure):
    """``sys.replace_tag(table, tag, snapshot => latest, time_retained)``."""

    name = "sys.replace_tag"
    doc = "Point an existing tag at another snapshot (default: the latest)."
    parameters = CreateTag.parameters

    def run_on(
        self, table: FileStoreTable, arguments: Mapping[str, Any], executor: Executor
    ) -> ProcedureResult:
        snap = replace_tag(table, arguments["tag"], _snapshot_id(arguments), _retained(arguments))
        return ProcedureResult(columns=_TAGGED, values=((True, snap.id),))


class DeleteTag(TableProcedure):
    """``sys.delete_tag(table, tag)``: ``tag`` may list several, comma-separated."""

    name = "sys.delete_tag"
    doc = "Delete tags (comma-separated names); their snapshots' files go at the next expiry."
    parameters = (
        ProcedureParameter("table", str, required=True),
        ProcedureParameter("tag", str, required=True),
    )

    def run_on(
        self, table: FileStoreTable, arguments: Mapping[str, Any], executor: Executor
    ) -> ProcedureResult:
        deleted = delete_tag(table, arguments["tag"])
        return ProcedureResult(
            columns=(("result", "BOOLEAN"), ("tags_deleted", "INT")),
            values=((True, len(deleted)),),
        )


class RenameTag(TableProcedure):
    """``sys.rename_tag(table, tag, target_tag)``."""

    name = "sys.rename_tag"
    doc = "Rename a tag."
    parameters = (
        ProcedureParameter("table", str, required=True),
        ProcedureParameter("tag", str, required=True),
        ProcedureParameter("target_tag", str, required=True),
    )

    def run_on(
        self, table: FileStoreTable, arguments: Mapping[str, Any], executor: Executor
    ) -> ProcedureResult:
        rename_tag(table, arguments["tag"], arguments["target_tag"])
        return ProcedureResult(columns=(("result", "BOOLEAN"),), values=((True,),))
