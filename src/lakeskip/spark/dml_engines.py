"""The engine choice for DELETE / UPDATE / MERGE INTO, as the statement layer sees it.

``Session.sql``, ``lakeskip sql`` and plain ``spark.sql`` (through the catalog's
``LakeDmlStrategy`` callback) all reach :func:`engine_for` via :mod:`lakeskip.spark.statements`.
The registry itself is :data:`lakeskip.spark.dml.ENGINES` (primary key, deletion vectors,
copy-on-write; the first engine whose ``handles(table)`` is true runs the statement), so the
public ``dml.delete_where`` / ``update_where`` / ``merge_into`` dispatch through the same place.
A new table kind plugs in by adding its engine there, before copy-on-write.
"""

from __future__ import annotations

from lakeskip.spark.dml import ENGINES, engine_for

__all__ = ["ENGINES", "engine_for"]
