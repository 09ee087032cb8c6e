"""The one dispatch point for DELETE / UPDATE / MERGE INTO: which engine runs on a table.

``Session.sql``, ``lakeskip sql`` and plain ``spark.sql`` (through the catalog's
``LakeDmlStrategy`` callback) all reach :func:`engine_for` via :mod:`lakeskip.spark.statements`.
A new table kind plugs in by listing its engine in :data:`ENGINES` before copy-on-write (the
first engine whose ``handles(table)`` is true runs the statement).
"""

from __future__ import annotations

from lakeskip.catalog.table import FileStoreTable
from lakeskip.spark.dml import COPY_ON_WRITE, DmlEngine

__all__ = ["ENGINES", "engine_for"]

#: first match wins; copy-on-write handles every append table, so it stays last
ENGINES: tuple[DmlEngine, ...] = (COPY_ON_WRITE,)
# primary-key tables (spark.pk_dml) and deletion-vector tables (spark.dv_dml) are still
# dispatched inside delete_where / update_where; MERGE INTO refuses both kinds


def engine_for(table: FileStoreTable) -> DmlEngine:
    """The engine for ``table``'s kind (primary key, deletion vectors, plain append)."""
    for engine in ENGINES:
        if engine.handles(table):
            return engine
    return COPY_ON_WRITE
