"""The engine choice for DELETE / UPDATE / MERGE INTO, as the statement layer sees it.

``Session.sql``, ``lakeskip sql`` and plain ``spark.sql`` (through the catalog's
``LakeDmlStrategy`` callback) all reach :func:`run_dml` / :func:`run_merge` (which ask
:func:`engine_for`) via :mod:`lakeskip.spark.front.statements`, with the statement as one
:class:`~lakeskip.spark.modify.base.DmlRequest` / :class:`~lakeskip.spark.modify.base.MergeRequest`.
The registry itself is :data:`lakeskip.spark.modify.dispatch.ENGINES` (primary key, deletion vectors,
copy-on-write; the first engine whose ``handles(table)`` is true runs the statement), so the
public ``dml.delete_where`` / ``update_where`` / ``merge_into`` dispatch through the same place.
A new table kind plugs in by adding its :class:`~lakeskip.spark.modify.base.DmlEngine` there,
before copy-on-write.
"""

from __future__ import annotations

from lakeskip.spark.modify.dispatch import ENGINES, engine_for, run_dml, run_merge

__all__ = ["ENGINES", "engine_for", "run_dml", "run_merge"]
