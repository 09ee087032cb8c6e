"""Atomic CREATE / REPLACE TABLE ... AS SELECT: build the table under a hidden name, then publish.

::

    stage     create  <db>.__lakeskip_staging_<id>_<name>   (hidden from SHOW TABLES)
    write     the query's rows go to the staged table (data files, then its snapshot)
    publish   CTAS: rename staged -> name (fails if name appeared meanwhile)
              RTAS: rename name -> trash, staged -> name, drop trash (the old table comes back
              if the second rename fails)
    abort     drop the staged table: the warehouse is as before

So a failed write never leaves a half-made table, and REPLACE keeps the old table's contents
until the new one is complete. A crash leaves the table before or after, too: hidden names
end in the table's name (``__lakeskip_replaced_<id>_<name>``), and a lookup of a table that
is missing while such a replaced table exists (an RTAS killed between its two renames) moves
the old table back (:meth:`Catalog.get_table`). What a crash leaves under hidden names (a
staged table never published, a replaced table not yet dropped) is removed by
``remove_orphan_files`` on the table once older than its ``older_than``. A table directory is moved by one rename, which only a local
(or HDFS-like) filesystem does atomically: on an object store there is no staging and the
table is created (or replaced) up front, as a non-staging Spark catalog would
(:func:`can_stage`).
"""

from __future__ import annotations

import uuid

from lakeskip.catalog.catalog import REPLACED_PREFIX, STAGING_PREFIX, Catalog, parse_identifier
from lakeskip.errors import TableAlreadyExistsError

__all__ = ["STAGING_PREFIX", "can_stage", "is_hidden", "publish", "staging_identifier"]


def is_hidden(table_name: str) -> bool:
    """A staged or replaced table that is not (or no longer) part of the catalog."""
    return table_name.startswith((STAGING_PREFIX, REPLACED_PREFIX))


def can_stage(catalog: Catalog) -> bool:
    return catalog.file_io.is_local


def staging_identifier(identifier: str) -> str:
    db, name = parse_identifier(identifier)
    return f"{db}.{STAGING_PREFIX}{uuid.uuid4().hex[:12]}_{name}"


def publish(catalog: Catalog, staged: str, identifier: str, *, replace: bool) -> None:
    """Make the staged table ``identifier`` (replacing the current one when ``replace``).

    Raises:
        TableAlreadyExistsError: CTAS, and a table of that name appeared meanwhile (the staged
            table is dropped).
    """
    db, name = parse_identifier(identifier)
    if not catalog.table_exists(identifier):
        try:
            catalog.rename_table(staged, identifier)
        except TableAlreadyExistsError:
            catalog.drop_table(staged, ignore_if_not_exists=True)
            raise
        return
    if not replace:
        catalog.drop_table(staged, ignore_if_not_exists=True)
        raise TableAlreadyExistsError(f"table already exists: {identifier}")
    trash = f"{db}.{REPLACED_PREFIX}{uuid.uuid4().hex[:12]}_{name}"
    catalog.rename_table(identifier, trash)
    try:
        # the bare move: a lookup of `identifier` now would move the old table back
        catalog.file_io.rename(catalog.table_path(staged), catalog.table_path(identifier))
    except BaseException:
        catalog.restore_replaced(identifier)  # the old table stays
        raise
    catalog.drop_table(trash, ignore_if_not_exists=True)
