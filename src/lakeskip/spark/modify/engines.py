"""The engine choice for DELETE / UPDATE / MERGE INTO, as the statement layer sees it.

``Session.sql``, ``lakeskip sql`` and plain ``spark.sql`` (through the catalog's
``LakeDmlStrategy`` callback) all reach :func:`run_dml` / :func:`run_merge` (which ask
:func:`engine_for`) via :mod:`lakeskip.spark.front.statements`, with the statement as one
:class:`~lakeskip.spark.modify.base.DmlRequest` / :class:`~lakeskip.spark.modify.base.MergeRequest`.
The choice itself is :func:`lakeskip.spark.modify.dispatch.engine_for`, a ``match`` over the table's kind
(:mod:`lakeskip.catalog.kind`: copy-on-write, deletion vectors, primary key), so the public
``dml.delete_where`` / ``update_where`` / ``merge_into`` dispatch through the same place. A new
table kind makes mypy point there; its :class:`~lakeskip.spark.modify.base.DmlEngine` plugs in as
one more ``case``.
"""

from __future__ import annotations

from lakeskip.spark.modify.dispatch import engine_for, run_dml, run_merge

__all__ = ["engine_for", "run_dml", "run_merge"]
