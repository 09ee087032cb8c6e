"""The procedures callable as ``CALL sys.<name>(...)``."""

from __future__ import annotations

import importlib

from lakeskip.errors import UnknownProcedureError
from lakeskip.procedures.base import Procedure

__all__ = ["PROCEDURES", "get_procedure"]

#: name -> "module:Class", imported on first use
PROCEDURES: dict[str, str] = {
    "sys.rewrite_file_index": "lakeskip.procedures.rewrite_file_index:RewriteFileIndex",
    "sys.compact": "lakeskip.procedures.compact:Compact",
    "sys.expire_snapshots": "lakeskip.procedures.maintenance:ExpireSnapshots",
    "sys.remove_orphan_files": "lakeskip.procedures.maintenance:RemoveOrphanFiles",
    "sys.create_tag": "lakeskip.procedures.tags:CreateTag",
    "sys.replace_tag": "lakeskip.procedures.tags:ReplaceTag",
    "sys.delete_tag": "lakeskip.procedures.tags:DeleteTag",
    "sys.rename_tag": "lakeskip.procedures.tags:RenameTag",
    "sys.rollback": "lakeskip.procedures.rollback:Rollback",
    "sys.rollback_to_timestamp": "lakeskip.procedures.rollback:RollbackToTimestamp",
}


def get_procedure(name: str) -> Procedure:
    """Look a procedure up by ``sys.<name>`` (``<name>`` alone works too).

    Raises:
        UnknownProcedureError: no such procedure (the message lists the known ones).
    """
    key = name.lower() if "." in name else f"sys.{name.lower()}"
    target = PROCEDURES.get(key)
    if target is None:
        known = ", ".join(sorted(PROCEDURES))
        raise UnknownProcedureError(f"unknown procedure {name!r} (known: {known})")
    module, cls = target.split(":")
    proc = getattr(importlib.import_module(module), cls)()
    assert isinstance(proc, Procedure)
    return proc
