"""Whole-table option checks of ``CREATE TABLE`` / ``ALTER TABLE`` (:func:`validate_options`):
every key known (an unknown one gets a did-you-mean suggestion, a Paimon key lakeskip does not
implement says so), every value valid (each key's own validator in
:data:`~lakeskip.catalog.options.KNOWN_OPTIONS`), and the rules between options and columns
(buckets, deletion vectors, merge engines, full compaction, clustering, file indexes).

Options of tables written by Paimon or pypaimon are read as they are: nothing here runs on a
read.

Example:
    >>> validate_options({"bucket": "4"}, None)
    Traceback (most recent call last):
    ...
    lakeskip.errors.InvalidOptionError: option 'bucket' = '4' needs option 'bucket-key' on an append table
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

from lakeskip.catalog.format.paimon_options import PAIMON_CORE_OPTIONS
from lakeskip.catalog.format.parquet_options import is_parquet_option, parquet_write_options
from lakeskip.catalog.kind import DELETION_VECTORS
from lakeskip.catalog.options import (
    BUCKET,
    BUCKET_KEY,
    FIELDS_PREFIX,
    FILE_INDEX_PREFIX,
    FULL_COMPACTION_DELTA_COMMITS,
    KNOWN_OPTIONS,
    OPTION_ALIASES,
    STATS_MODE,
    STATS_MODE_SUFFIX,
    option_bool,
)
from lakeskip.catalog.pk.merge_engine import MergeEngine, check_merge_options, is_merge_option
from lakeskip.catalog.pk.primary_key import PRIMARY_KEY_OPTION
from lakeskip.errors import ColumnNotFoundError, InvalidOptionError
from lakeskip.types import RowType

__all__ = [
    "check_deletion_vectors",
    "check_option_change",
    "normalize_option_aliases",
    "validate_options",
]


def normalize_option_aliases(options: Mapping[str, str]) -> dict[str, str]:
    """Options with shorthand keys stored under Paimon's key (``deletion-vectors`` ->
    ``deletion-vectors.enabled``), so Paimon readers see them.

    >>> normalize_option_aliases({"deletion-vectors": "true"})
    {'deletion-vectors.enabled': 'true'}

    Raises:
        InvalidOptionError: both spellings given with different values.
    """
    out = dict(options)
    for alias, key in OPTION_ALIASES.items():
        if alias in out:
            value = out.pop(alias)
            if key in out and str(out[key]).strip().lower() != str(value).strip().lower():
                raise InvalidOptionError(
                    f"options {alias!r} = {value!r} and {key!r} = {out[key]!r} disagree"
                )
            out[key] = value
    return out


def _suggest(key: str) -> str:
    candidates = [
        *KNOWN_OPTIONS,
        "file-index.<type>.columns",
        "fields.<column>.stats-mode",
        "parquet.bloom.filter.enabled",
    ]
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    paimon = difflib.get_close_matches(key, sorted(PAIMON_CORE_OPTIONS), n=1, cutoff=0.6)
    prefixed = sorted(
        (k for k in PAIMON_CORE_OPTIONS if k.startswith(key + ".")),
        key=lambda k: (not k.endswith(".enabled"), k),
    )
    near = prefixed[0] if prefixed else (paimon[0] if paimon else None)
    if near is not None:
        return f" (did you mean {near!r}? a Paimon option lakeskip does not support yet)"
    return ""


def _unknown_option(key: str) -> InvalidOptionError:
    if key in PAIMON_CORE_OPTIONS:
        return InvalidOptionError(
            f"table option {key!r} is a Paimon option lakeskip does not support yet "
            "(lakeskip writes Parquet, fixed or unaware buckets, merge-engine deduplicate, "
            "partial-update, first-row or aggregation)"
        )
    return InvalidOptionError(f"unknown table option {key!r}{_suggest(key)}")


def validate_options(
    options: Mapping[str, str],
    row_type: RowType | None,
    partition_keys: Sequence[str] = (),
    primary_keys: Sequence[str] = (),
) -> None:
    """Check every option of a CREATE/ALTER TABLE.

    Args:
        options: the table's full option map after the change.
        row_type: the table's columns (``None`` skips column checks, e.g. in doctests).
        partition_keys: the table's partition columns.
        primary_keys: the table's primary key (its bucket key defaults to it).

    Raises:
        InvalidOptionError: unknown key or malformed value.
        ColumnNotFoundError: an option names a column that does not exist.
        UnsupportedIndexTypeError / UnknownIndexTypeError: bad ``file-index.*`` options.
    """
    has_index = False
    _validate_bucket(options, row_type, partition_keys, primary_keys)
    check_deletion_vectors(options, primary_keys)
    check_merge_options(options, primary_keys, row_type)
    _check_full_compaction(options, primary_keys)
    for key, value in options.items():
        if not isinstance(value, str):
            raise InvalidOptionError(f"option {key!r}: value must be a string, got {value!r}")
        if key.startswith(FILE_INDEX_PREFIX):
            has_index = True
            continue
        if is_parquet_option(key):
            continue  # checked together below: per-column keys need the whole map
        if is_merge_option(key) and key not in KNOWN_OPTIONS:
            continue  # fields.<c>.aggregate-function ...: check_merge_options above
        if key.startswith(FIELDS_PREFIX) and key.endswith(STATS_MODE_SUFFIX):
            column = key[len(FIELDS_PREFIX) : -len(STATS_MODE_SUFFIX)]
            if row_type is not None:
                row_type.index_of(column)
            KNOWN_OPTIONS[STATS_MODE].check(value, key)
            continue
        spec = KNOWN_OPTIONS.get(key)
        if spec is None:
            raise _unknown_option(key)
        spec.check(value, key)
    parquet_write_options(options, row_type)
    if row_type is None:
        return
    columns = options.get("clustering.columns")
    if columns:
        for c in (c.strip() for c in columns.split(",")):
            if not c:
                raise InvalidOptionError(f"option 'clustering.columns' = {columns!r}: empty name")
            row_type.index_of(c)
            if c in partition_keys:
                raise InvalidOptionError(f"option 'clustering.columns': {c} is a partition column")
        from lakeskip.sort.clustering import clustering_from_options

        clustering_from_options(options, row_type, partition_keys)  # sortable, known strategy
    if has_index:
        _validate_index_options(options, row_type, partition_keys)


def _check_full_compaction(options: Mapping[str, str], primary_keys: Sequence[str]) -> None:
    """``full-compaction.delta-commits`` compacts the buckets a write wrote: primary-key
    tables and fixed-bucket append tables; refused on an unaware-bucket append table, with
    Paimon's reason (``SchemaValidation.validateBucket``).

    >>> _check_full_compaction({FULL_COMPACTION_DELTA_COMMITS: "1", BUCKET: "2"}, ())
    >>> _check_full_compaction({FULL_COMPACTION_DELTA_COMMITS: "1"}, ())
    Traceback (most recent call last):
    ...
    lakeskip.errors.InvalidOptionError: option 'full-compaction.delta-commits' needs fixed buckets on an append table ('bucket' > 0): an unaware-bucket append table has no buckets to compact after a write
    """
    if FULL_COMPACTION_DELTA_COMMITS not in options or primary_keys:
        return
    if str(options.get(BUCKET, "-1")).strip() == "-1":
        raise InvalidOptionError(
            f"option {FULL_COMPACTION_DELTA_COMMITS!r} needs fixed buckets on an append table "
            "('bucket' > 0): an unaware-bucket append table has no buckets to compact after "
            "a write"
        )


def check_deletion_vectors(options: Mapping[str, str], primary_keys: Sequence[str] = ()) -> None:
    """Deletion vectors are supported on unaware-bucket append tables (``bucket`` = -1) and
    on primary-key tables (fixed buckets; see :mod:`lakeskip.catalog.write.pk_dv_write`).

    Raises:
        InvalidOptionError: deletion vectors on a fixed-bucket append table, or on a
            partial-update primary-key table.
    """
    enabled = str(options.get(DELETION_VECTORS, "false")).strip().lower() == "true"
    if not enabled:
        return
    if primary_keys:
        # the lookup write (catalog.pk_dv_write) keeps the newest version whole: deduplicate
        engine = MergeEngine.of(options)
        if engine.partial_update:
            raise InvalidOptionError(
                f"option {DELETION_VECTORS!r} is not supported with 'merge-engine' = "
                "'partial-update' yet (primary-key tables with deletion vectors are deduplicate)"
            )
        return
    bucket = str(options.get(BUCKET, "-1")).strip()
    if bucket not in ("-1", ""):
        raise InvalidOptionError(
            f"option {DELETION_VECTORS!r} is supported on unaware-bucket append tables and "
            f"primary-key tables only ('bucket' = -1), not with 'bucket' = {bucket!r}"
        )


def check_option_change(
    current: Mapping[str, str], merged: Mapping[str, str], primary_keys: Sequence[str]
) -> None:
    """What ``ALTER TABLE ... SET / UNSET TBLPROPERTIES`` may not change, from the table's
    ``current`` options to the ``merged`` ones: deletion vectors are never turned off (nor
    on, on a primary-key table), and the options the table's files depend on (bucketing,
    the primary key, the merge engine's) stay as they are.

    >>> check_option_change({"bucket": "2"}, {"bucket": "4"}, ["k"])
    Traceback (most recent call last):
    ...
    lakeskip.errors.InvalidOptionError: option 'bucket' cannot be changed by ALTER TABLE (the table's files depend on it); create a new table

    Raises:
        InvalidOptionError: the change is refused.
    """
    if option_bool(current, DELETION_VECTORS) and not option_bool(merged, DELETION_VECTORS):
        raise InvalidOptionError(
            f"option {DELETION_VECTORS!r} cannot be turned off by ALTER TABLE (deleted "
            "rows live in deletion vectors that Paimon readers would then ignore)"
        )
    if primary_keys and option_bool(current, DELETION_VECTORS) != (
        option_bool(merged, DELETION_VECTORS)
    ):
        # Paimon treats it as immutable here: level-0 files written without DVs
        # would be invisible to DV readers, and DV'd rows visible to merging ones
        raise InvalidOptionError(
            f"option {DELETION_VECTORS!r} cannot be changed by ALTER TABLE on a "
            "primary-key table (its files are laid out for one mode); create a new table"
        )
    check_deletion_vectors(merged, primary_keys)
    fixed = {"bucket", "bucket-key", PRIMARY_KEY_OPTION}
    fixed |= {k for k in (*merged, *current) if is_merge_option(k)}
    for k in sorted(fixed):
        if merged.get(k) != current.get(k):
            raise InvalidOptionError(
                f"option {k!r} cannot be changed by ALTER TABLE (the table's files "
                "depend on it); create a new table"
            )


def _validate_bucket(
    options: Mapping[str, str],
    row_type: RowType | None,
    partition_keys: Sequence[str],
    primary_keys: Sequence[str] = (),
) -> None:
    """``bucket`` > 0 needs ``bucket-key`` (append tables have no primary key to default
    to): known, distinct, non-partition columns of hashable types, as Paimon requires."""
    raw = options.get(BUCKET)
    keys = options.get(BUCKET_KEY)
    if raw is None and keys is None:
        return
    KNOWN_OPTIONS[BUCKET].check(raw if raw is not None else "-1", BUCKET)
    fixed = raw is not None and int(str(raw).strip()) > 0
    if keys is not None and not fixed:
        raise InvalidOptionError(f"option {BUCKET_KEY!r} needs option 'bucket' > 0")
    if fixed and not (keys or "").strip() and not primary_keys:
        raise InvalidOptionError(
            f"option 'bucket' = {raw!r} needs option {BUCKET_KEY!r} on an append table"
        )
    if row_type is None or keys is None:
        return
    seen: list[str] = []
    for c in (c.strip() for c in keys.split(",")):
        if not c:
            raise InvalidOptionError(f"option {BUCKET_KEY!r} = {keys!r}: empty name")
        if not row_type.has(c):
            raise InvalidOptionError(
                f"option {BUCKET_KEY!r}: unknown column {c!r} (columns: {', '.join(row_type.names)})"
            )
        actual = row_type.field(c).name
        if actual != c:  # Paimon matches bucket-key names exactly
            raise InvalidOptionError(
                f"option {BUCKET_KEY!r}: column {c!r} is spelled {actual!r} in the table"
            )
        if c in seen:
            raise InvalidOptionError(f"option {BUCKET_KEY!r}: column {c!r} listed twice")
        if c in partition_keys:
            raise InvalidOptionError(f"option {BUCKET_KEY!r}: {c} is a partition column")
        t = row_type.field(c).type
        if t.is_nested:
            raise InvalidOptionError(
                f"option {BUCKET_KEY!r}: column {c} of type {t} cannot be hashed"
            )
        seen.append(c)


def _validate_index_options(
    options: Mapping[str, str], row_type: RowType, partition_keys: Sequence[str]
) -> None:
    from lakeskip.catalog.options import file_index_options

    try:  # with the implied ones: their per-column options are valid too
        file_index_options(dict(options), row_type, partition_keys)
    except ColumnNotFoundError:
        raise
    except KeyError as e:  # a foreign KeyError must not escape untyped
        raise InvalidOptionError(f"invalid file-index option: {e}") from e
