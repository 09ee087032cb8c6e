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

The bucket mode (:class:`BucketMode`, Paimon's names) rides along: ``bucket`` = N > 0 is
FIXED on every kind; ``bucket`` = -1 is UNAWARE on an append table and DYNAMIC on a
primary-key table (written by Paimon; lakeskip reads such tables and writes fixed ones).

Example:
    >>> table_kind({}, ())
    Append(bucket=<BucketMode.UNAWARE: 'unaware'>)
    >>> table_kind({"deletion-vectors.enabled": "true"}, ()).__class__.__name__
    'AppendDv'
    >>> table_kind({"bucket": "2"}, ("id",)).__class__.__name__
    'PkMerge'
    >>> k = table_kind({"bucket": "2", "merge-engine": "first-row"}, ("id",))
    >>> type(k).__name__, k.deletion_vectors, k.merge.first_row
    ('PkRaw', False, True)
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, assert_never

from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.errors import InvalidOptionError

if TYPE_CHECKING:
    from lakeskip.catalog.format.schema import TableSchema

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
_BUCKET = "bucket"


class BucketMode(enum.Enum):
    """How rows are spread over a partition's ``bucket-<n>/`` directories (Paimon's
    ``BucketMode``)."""

    #: ``bucket`` = N > 0: a row's bucket is the hash of its bucket key
    FIXED = "fixed"
    #: ``bucket`` = -1 on an append table: one bucket (0), any task writes any file
    UNAWARE = "unaware"
    #: ``bucket`` = -1 on a primary-key table: Paimon assigns keys to buckets by an index
    DYNAMIC = "dynamic"


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


def table_kind(options: Mapping[str, str], primary_keys: Sequence[str]) -> TableKind:
    """The kind of a table with these (stored) options and primary key.

    Raises:
        InvalidOptionError: ``deletion-vectors.enabled`` is not true or false, or the
            primary-key table's ``merge-engine`` is one lakeskip cannot read.
    """
    dv = _deletion_vectors(options)
    fixed = _bucket_count(options) > 0
    if not primary_keys:
        bucket = BucketMode.FIXED if fixed else BucketMode.UNAWARE
        return AppendDv(bucket) if dv else Append(bucket)
    bucket = BucketMode.FIXED if fixed else BucketMode.DYNAMIC
    merge = MergeEngine.of(options)
    if dv or merge.first_row:
        return PkRaw(bucket, merge, dv)
    return PkMerge(bucket, merge)


def schema_kind(schema: TableSchema) -> TableKind:
    """The kind of a table at this schema (:func:`table_kind` of its options and key)."""
    return table_kind(schema.options, schema.primary_keys)


def merge_engine_of(kind: TableKind) -> MergeEngine | None:
    """How a primary-key table merges the versions of a key (``None``: an append table).

    >>> merge_engine_of(table_kind({"bucket": "1"}, ("id",)))
    MergeEngine(kind='deduplicate', ignore_delete=False, remove_record_on_delete=False)
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


def _bucket_count(options: Mapping[str, str]) -> int:
    """``bucket`` as stored (a value lakeskip cannot parse counts as -1 here; writing such a
    table fails where the bucket spec is read)."""
    try:
        return int(str(options.get(_BUCKET, "-1")).strip())
    except ValueError:
        return -1
