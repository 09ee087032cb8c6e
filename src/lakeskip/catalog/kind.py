"""The kind of a table: decided once, from its schema and options, and matched by every layer.

A table's primary key, ``deletion-vectors.enabled`` and ``merge-engine`` decide how its rows
live in its files, and so how it is planned, read, written, changed by DML, described to
Spark and compacted. :func:`table_kind` makes that decision in one place
(``FileStoreTable.kind``, or :func:`schema_kind` of a schema a write task or a time-travel
read holds); code that depends on it ``match``es the four kinds and ends in
:func:`typing.assert_never`, so mypy names every place a new kind must be handled::

    kind       rows live as                          planner            read
    Append     every row of every file               file by file       the files
    AppendDv   rows of the files minus their DVs     file by file       the files minus DVs
    PkMerge    versions of keys, merged when read    bucket by bucket   newest version per key
    PkRaw      one live version per key, level > 0   level 0 skipped,   level > 0 files minus
               (deletion vectors, or first-row)      then file by file  their DVs, no merge

    kind       write                                 DML                compaction
    Append     new files                             copy-on-write      bin-pack / sort
    AppendDv   new files                             DV marks (dv_dml)  bin-pack / sort, DVs go
    PkMerge    level-0 versions, sequence numbers    new versions       one sorted run a bucket
    PkRaw      lookup write (catalog.pk_dv_write)    lookup write, DVs  one sorted run a bucket

The bucket mode (:class:`~lakeskip.catalog.pk.dynamic_bucket.BucketMode`, Paimon's names,
decided by :func:`~lakeskip.catalog.pk.dynamic_bucket.bucket_mode`) rides along: ``bucket`` =
N is FIXED on every kind; ``bucket`` = -1 (the default) is UNAWARE on an append table and
DYNAMIC on a primary-key table (the HASH index assigns keys to buckets).

Example:
    >>> table_kind({}, ())
    Append(bucket=<BucketMode.UNAWARE: 'bucket-unaware'>)
    >>> table_kind({"deletion-vectors.enabled": "true"}, ()).__class__.__name__
    'AppendDv'
    >>> table_kind({"bucket": "2"}, ("id",)).__class__.__name__
    'PkMerge'
    >>> k = table_kind({"bucket": "2", "merge-engine": "first-row"}, ("id",))
    >>> type(k).__name__, k.deletion_vectors, k.merge.first_row
    ('PkRaw', False, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, assert_never

from lakeskip.catalog.pk.dynamic_bucket import BucketMode, bucket_mode
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.errors import InvalidOptionError

if TYPE_CHECKING:
    from lakeskip.catalog.format.schema import TableSchema
    from lakeskip.types import RowType

__all__ = [
    "DELETION_VECTORS",
    "DELETION_VECTORS_ALIAS",
    "Append",
    "AppendDv",
    "BucketMode",
    "PkMerge",
    "PkRaw",
    "TableKind",
    "merge_engine_of",
    "schema_kind",
    "table_kind",
]

DELETION_VECTORS = "deletion-vectors.enabled"
#: lakeskip's shorthand, stored under Paimon's key at CREATE / ALTER
DELETION_VECTORS_ALIAS = "deletion-vectors"


@dataclass(frozen=True, slots=True)
class Append:
    """An append table: every row of every live file is a row of the table."""

    bucket: BucketMode


@dataclass(frozen=True, slots=True)
class AppendDv:
    """An append table with deletion vectors: the rows of its files minus the positions
    their DVs hold; DELETE / UPDATE / MERGE mark positions instead of rewriting files."""

    bucket: BucketMode


@dataclass(frozen=True, slots=True)
class PkMerge:
    """A primary-key table read by merge: its files hold versions of keys (sequence number,
    row kind), the table's row of a key is ``merge`` over them (``deduplicate``,
    ``partial-update``); writes add versions at level 0."""

    bucket: BucketMode
    merge: MergeEngine


@dataclass(frozen=True, slots=True)
class PkRaw:
    """A primary-key table read raw, as Paimon's batch reads do with deletion vectors or
    ``first-row``: level-0 files are skipped, the files above hold one live version per key
    and are read as they are, minus their DVs. Writes keep that true by a lookup in each
    bucket (:mod:`lakeskip.catalog.write.pk_dv_write`).

    Attributes:
        merge: ``deduplicate`` (with deletion vectors) or ``first-row``.
        deletion_vectors: ``deletion-vectors.enabled`` (false: ``first-row`` without DVs,
            where a write drops the rows whose key is already live and marks nothing).
    """

    bucket: BucketMode
    merge: MergeEngine
    deletion_vectors: bool


#: every kind of table; ``match`` it exhaustively (``case _: assert_never(kind)``)
TableKind = Append | AppendDv | PkMerge | PkRaw


def table_kind(
    options: Mapping[str, str],
    primary_keys: Sequence[str],
    row_type: RowType | None = None,
) -> TableKind:
    """The kind of a table with these (stored) options and primary key; an aggregation
    engine needs the table's columns (``row_type``) to merge.

    Raises:
        InvalidOptionError: ``deletion-vectors.enabled`` is not true or false, or the
            primary-key table's ``merge-engine`` is one lakeskip cannot read.
    """
    dv = _deletion_vectors(options)
    bucket = bucket_mode(options, primary_keys)
    if not primary_keys:
        return AppendDv(bucket) if dv else Append(bucket)
    merge = MergeEngine.of(options, row_type, primary_keys)
    if dv or merge.first_row:
        return PkRaw(bucket, merge, dv)
    return PkMerge(bucket, merge)


def schema_kind(schema: TableSchema) -> TableKind:
    """The kind of a table at this schema (:func:`table_kind` of its options, key and
    columns: its merge engine is :meth:`MergeEngine.for_schema`)."""
    return table_kind(schema.options, schema.primary_keys, schema.row_type)


def merge_engine_of(kind: TableKind) -> MergeEngine | None:
    """How a primary-key table merges the versions of a key (``None``: an append table).

    >>> merge_engine_of(table_kind({"bucket": "1"}, ("id",))).kind
    'deduplicate'
    >>> merge_engine_of(table_kind({}, ())) is None
    True
    """
    match kind:
        case PkMerge(merge=merge) | PkRaw(merge=merge):
            return merge
        case Append() | AppendDv():
            return None
        case _:
            assert_never(kind)


def _deletion_vectors(options: Mapping[str, str]) -> bool:
    raw = options.get(DELETION_VECTORS, options.get(DELETION_VECTORS_ALIAS, "false"))
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise InvalidOptionError(f"option {DELETION_VECTORS!r} = {raw!r}: expected true or false")
    return value == "true"
