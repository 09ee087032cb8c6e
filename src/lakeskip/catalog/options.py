"""Table options: the keys lakeskip knows, their defaults and their validators.

Validation runs only on ``CREATE TABLE`` and ``ALTER TABLE`` (options of tables written by
Paimon or pypaimon are read as they are). An unknown key raises
:class:`~lakeskip.errors.InvalidOptionError` with a did-you-mean suggestion; ``file-index.*``
keys are checked by :func:`lakeskip.index.options.parse_file_index_options` against the
table's columns.

Example:
    >>> stats_mode({})
    'truncate(16)'
    >>> target_file_size({"target-file-size": "64 mb"})
    67108864
    >>> validate_options({"bucket": "4"}, None)
    Traceback (most recent call last):
    ...
    lakeskip.errors.InvalidOptionError: option 'bucket' = '4' needs option 'bucket-key' on an append table
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from lakeskip.catalog.format.paimon_options import PAIMON_CORE_OPTIONS
from lakeskip.catalog.format.parquet_options import is_parquet_option, parquet_write_options
from lakeskip.catalog.format.stats import parse_stats_mode
from lakeskip.catalog.kind import DELETION_VECTORS, DELETION_VECTORS_ALIAS
from lakeskip.catalog.pk.merge_engine import (
    IGNORE_DELETE,
    REMOVE_RECORD_ON_DELETE,
    MergeEngine,
    check_merge_options,
    is_merge_option,
)
from lakeskip.errors import ColumnNotFoundError, InvalidOptionError
from lakeskip.types import RowType

__all__ = [
    "KNOWN_OPTIONS",
    "OptionSpec",
    "check_deletion_vectors",
    "check_writable",
    "commit_max_retries",
    "manifest_compression",
    "normalize_option_aliases",
    "parse_duration_millis",
    "parse_stats_mode",
    "stats_mode",
    "target_file_size",
    "validate_options",
]

BUCKET = "bucket"
BUCKET_KEY = "bucket-key"
FILE_FORMAT = "file.format"
TARGET_FILE_SIZE = "target-file-size"
FULL_COMPACTION_DELTA_COMMITS = "full-compaction.delta-commits"
COMPACTION_MIN_FILE_NUM = "compaction.min.file-num"
CHANGELOG_PRODUCER = "changelog-producer"
STATS_MODE = "metadata.stats-mode"
FILE_INDEX_PREFIX = "file-index."
FIELDS_PREFIX = "fields."
STATS_MODE_SUFFIX = ".stats-mode"
DEFAULT_STATS_MODE = "truncate(16)"
DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
OPTION_ALIASES = {DELETION_VECTORS_ALIAS: DELETION_VECTORS}

_DURATION_UNITS = {
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "s": 1000,
    "sec": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "m": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}


def parse_duration_millis(text: str, key: str = "duration") -> int:
    """Paimon's Duration syntax: ``10 ms``, ``10s``, ``1 h``, ``100`` (millis).

    >>> parse_duration_millis("10 s")
    10000
    """
    m = re.match(r"^\s*(\d+)\s*([a-z]*)\s*$", str(text).lower())
    if m is None or (m.group(2) and m.group(2) not in _DURATION_UNITS):
        raise InvalidOptionError(f"invalid duration for {key}: {text!r} (e.g. '10 s', '1 h')")
    return int(m.group(1)) * _DURATION_UNITS.get(m.group(2) or "ms", 1)


def _memory_size(value: str, key: str) -> None:
    from lakeskip.index.base import parse_memory_size

    if parse_memory_size(value, key) <= 0:
        raise InvalidOptionError(f"option {key!r} must be positive, got {value!r}")


def _int_at_least(lo: int) -> Callable[[str, str], None]:
    def check(value: str, key: str) -> None:
        try:
            n = int(str(value).strip())
        except ValueError:
            raise InvalidOptionError(f"option {key!r} = {value!r}: not an integer") from None
        if n < lo:
            raise InvalidOptionError(f"option {key!r} = {value!r}: must be >= {lo}")

    return check


def _boolean(value: str, key: str) -> None:
    if str(value).strip().lower() not in ("true", "false"):
        raise InvalidOptionError(f"option {key!r} = {value!r}: expected true or false")


def _one_of(*choices: str) -> Callable[[str, str], None]:
    def check(value: str, key: str) -> None:
        if str(value).strip().lower() not in choices:
            raise InvalidOptionError(
                f"option {key!r} = {value!r}: expected one of {', '.join(choices)}"
            )

    return check


def _bucket(value: str, key: str) -> None:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r} = {value!r}: not an integer") from None
    if n != -1 and n <= 0:
        raise InvalidOptionError(
            f"option {key!r} = {value!r}: -1 (unaware-bucket) or a bucket count > 0"
        )


def _max_buckets(value: str, key: str) -> None:
    _int_at_least(-1)(value, key)
    if int(str(value).strip()) == 0:
        raise InvalidOptionError(f"option {key!r} = {value!r}: -1 (unlimited) or > 0")


def _changelog_producer(value: str, key: str) -> None:
    v = str(value).strip().lower()
    if v == "none":
        return
    if v in ("input", "lookup", "full-compaction"):
        raise InvalidOptionError(
            f"option {key!r} = {value!r} is not supported yet: lakeskip writes no changelog "
            "files (only 'none')"
        )
    raise InvalidOptionError(
        f"option {key!r} = {value!r}: expected one of none, input, lookup, full-compaction"
    )


def check_writable(options: Mapping[str, str]) -> None:
    """Refuse to write a table (one another engine created) whose options ask writers for
    what lakeskip does not write: a ``changelog-producer`` other than ``none``, whose
    changelog files Paimon's streaming readers would miss.

    >>> check_writable({"changelog-producer": "none"})
    >>> check_writable({"changelog-producer": "full-compaction"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lakeskip.errors.InvalidOptionError: the table has 'changelog-producer' = 'full-compaction': ...

    Raises:
        InvalidOptionError: as above.
    """
    value = options.get(CHANGELOG_PRODUCER)
    if value is not None and str(value).strip().lower() != "none":
        raise InvalidOptionError(
            f"the table has {CHANGELOG_PRODUCER!r} = {value!r}: lakeskip writes no changelog "
            "files, so it does not write to this table (ALTER TABLE ... SET TBLPROPERTIES "
            f"({CHANGELOG_PRODUCER!r} = 'none') first)"
        )


def _merge_engine(value: str, key: str) -> None:
    """Checked with the whole option map by :func:`check_merge_options` (the engine's
    options and the primary key decide together)."""


def _stats_mode(value: str, key: str) -> None:
    try:
        parse_stats_mode(value)
    except InvalidOptionError as e:
        raise InvalidOptionError(f"option {key!r}: {e}") from None


def _duration(value: str, key: str) -> None:
    parse_duration_millis(value, key)


def _any(value: str, key: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One known option: its default (as Paimon spells it) and a validator."""

    key: str
    default: str | None
    check: Callable[[str, str], None]
    doc: str


def options_by_key(specs: Sequence[OptionSpec]) -> dict[str, OptionSpec]:
    """``specs`` by key; a key listed twice is a mistake (the later entry would silently
    win), refused at import.

    >>> options_by_key([OptionSpec("a", None, _any, ""), OptionSpec("a", "1", _any, "")])
    Traceback (most recent call last):
    ...
    ValueError: option 'a' is listed twice
    """
    out: dict[str, OptionSpec] = {}
    for spec in specs:
        if spec.key in out:
            raise ValueError(f"option {spec.key!r} is listed twice")
        out[spec.key] = spec
    return out


KNOWN_OPTIONS: Mapping[str, OptionSpec] = options_by_key(
    (
        OptionSpec(
            BUCKET, "-1", _bucket, "-1 (unaware-bucket) or N > 0 fixed buckets (needs bucket-key)"
        ),
        OptionSpec(BUCKET_KEY, None, _any, "columns hashed to pick a row's bucket (bucket > 0)"),
        OptionSpec(
            "dynamic-bucket.target-row-num",
            "2000000",
            _int_at_least(1),
            "dynamic bucket mode: keys per bucket before a new bucket opens",
        ),
        OptionSpec(
            "dynamic-bucket.initial-buckets",
            None,
            _int_at_least(1),
            "dynamic bucket mode: assigners (buckets opened at first) per partition",
        ),
        OptionSpec(
            "dynamic-bucket.assigner-parallelism",
            None,
            _int_at_least(1),
            "dynamic bucket mode: Spark tasks assigning buckets (default: Spark's parallelism)",
        ),
        OptionSpec(
            "dynamic-bucket.max-buckets",
            "-1",
            _max_buckets,
            "dynamic bucket mode: most buckets per partition (-1: unlimited)",
        ),
        OptionSpec(
            "merge-engine",
            "deduplicate",
            _merge_engine,
            "primary-key tables: how versions of a key merge (deduplicate: the newest wins; "
            "partial-update: each column's newest non-null value; aggregation: "
            "fields.<column>.aggregate-function)",
        ),
        OptionSpec(
            "sequence.field",
            None,
            _any,
            "primary-key tables: column(s) ordering the versions of a key (ties: write order)",
        ),
        OptionSpec(
            "sequence.field.sort-order",
            "ascending",
            _one_of("ascending", "descending"),
            "the order of sequence.field (Paimon 0.9 readers know only ascending)",
        ),
        OptionSpec(
            "fields.default-aggregate-function",
            None,
            _any,
            "aggregation tables: the function of columns without their own "
            "(default last_non_null_value)",
        ),
        OptionSpec(
            IGNORE_DELETE,
            "false",
            _boolean,
            "partial-update tables: skip delete records (DELETE is refused)",
        ),
        OptionSpec(
            REMOVE_RECORD_ON_DELETE,
            "false",
            _boolean,
            "partial-update tables: a delete removes the whole row (DELETE is allowed)",
        ),
        # primary-key writes in bounded memory (lakeskip.catalog.write.sort_buffer)
        OptionSpec(
            "write-buffer-size",
            "256 mb",
            _memory_size,
            "primary-key tables: rows a write task buffers before spilling a sorted run",
        ),
        OptionSpec(
            "write-buffer-spillable",
            "true",
            _boolean,
            "primary-key tables: spill the write buffer to local disk (false: flush a file)",
        ),
        OptionSpec(
            "local-sort.max-num-file-handles",
            "128",
            _int_at_least(2),
            "primary-key tables: most spilled runs merged at once",
        ),
        # universal compaction of primary-key tables (lakeskip.catalog.write.universal)
        OptionSpec(
            "num-sorted-run.compaction-trigger",
            "5",
            _int_at_least(1),
            "primary-key tables: sorted runs of a bucket that trigger a compaction",
        ),
        OptionSpec(
            "compaction.max-size-amplification-percent",
            "200",
            _int_at_least(0),
            "primary-key tables: newer runs' size, in % of the oldest, for a full compaction",
        ),
        OptionSpec(
            COMPACTION_MIN_FILE_NUM,
            "5",
            _int_at_least(1),
            "unaware-bucket append tables written by a streaming query: a partition's small "
            "files (under 70 % of target-file-size) are compacted once there are this many",
        ),
        OptionSpec(
            "write-only",
            "false",
            _boolean,
            "primary-key tables: no compaction after writes (CALL sys.compact still compacts)",
        ),
        OptionSpec(
            "compaction.size-ratio",
            "1",
            _int_at_least(0),
            "primary-key tables: % flexibility when comparing sorted run sizes",
        ),
        OptionSpec(
            CHANGELOG_PRODUCER,
            "none",
            _changelog_producer,
            "only 'none': lakeskip writes no changelog files (input, lookup, full-compaction "
            "are refused, and so are writes to a table that has one)",
        ),
        OptionSpec(
            FULL_COMPACTION_DELTA_COMMITS,
            None,
            _int_at_least(1),
            "primary-key and fixed-bucket append tables: every write is followed by a full "
            "compaction of the buckets it wrote (Paimon's rule for batch writes: any value "
            ">= 1)",
        ),
        # time travel of batch reads (lakeskip.catalog.ops.time_travel)
        OptionSpec("scan.snapshot-id", None, _int_at_least(1), "read this snapshot"),
        OptionSpec("scan.timestamp-millis", None, _int_at_least(0), "read as of this time"),
        OptionSpec("scan.tag-name", None, _any, "read this tag"),
        OptionSpec("scan.version", None, _any, "read this tag or snapshot id"),
        OptionSpec(FILE_FORMAT, "parquet", _one_of("parquet"), "data file format"),
        OptionSpec(
            "file.compression",
            "zstd",
            _one_of("zstd", "snappy", "gzip", "lz4", "none"),
            "Parquet codec; zstd is Paimon's default, read by Spark as fast as its own snappy "
            "files (bench/tpch_files.py) and 24% smaller",
        ),
        OptionSpec(TARGET_FILE_SIZE, "128 mb", _memory_size, "data files roll at this size"),
        OptionSpec(
            STATS_MODE,
            DEFAULT_STATS_MODE,
            _stats_mode,
            "min/max/null-count stats: none, counts, full, truncate(N)",
        ),
        OptionSpec("metadata.stats-dense-store", "true", _boolean, "store only collected stats"),
        OptionSpec(
            "alter-column-null-to-not-null.disabled",
            "true",
            _boolean,
            "refuse ALTER COLUMN ... SET NOT NULL (false: allowed when every live file's "
            "stats prove the column holds no NULL)",
        ),
        OptionSpec(
            "manifest.compression",
            "zstd",
            _one_of("zstd", "deflate", "null", "none"),
            "Avro codec of manifests",
        ),
        OptionSpec("manifest.target-file-size", "8 mb", _memory_size, "manifest roll size"),
        OptionSpec(
            "manifest.merge-min-count",
            "30",
            _int_at_least(1),
            "merge base manifests once there are this many",
        ),
        OptionSpec(
            "partition.default-name",
            DEFAULT_PARTITION_NAME,
            _any,
            "directory name of a null or empty partition value",
        ),
        OptionSpec(
            "partition.legacy-name",
            "true",
            _boolean,
            "partition directory values by toString of the internal value",
        ),
        OptionSpec(
            "commit.max-retries",
            "10",
            _int_at_least(0),
            "retries of a commit that lost the race for the next snapshot",
        ),
        OptionSpec("commit.min-retry-wait", "10 ms", _duration, "first retry back-off"),
        OptionSpec("commit.max-retry-wait", "10 s", _duration, "largest retry back-off"),
        OptionSpec("clustering.columns", None, _any, "columns to cluster (sort) by"),
        OptionSpec(
            "clustering.strategy",
            "auto",
            _one_of("auto", "order", "zorder", "hilbert"),
            "clustering curve",
        ),
        OptionSpec("clustering.incremental", "false", _boolean, "incremental clustering"),
        OptionSpec(
            "zorder.var-length-contribution",
            "8",
            _int_at_least(1),
            "bytes a string/binary column contributes to a z-order key",
        ),
        OptionSpec(
            "sort.curve-keys",
            "rank",
            _one_of("rank", "paimon"),
            "z-order/Hilbert keys: rank (every column by its rank in a sample, equal share "
            "of the curve) or paimon (Paimon's raw-byte keys, its exact layout)",
        ),
        OptionSpec(
            "sort-compaction.range-strategy",
            "size",
            _one_of("size", "quantity"),
            "range partitioning of sort compaction",
        ),
        OptionSpec(
            "sort-compaction.local-sample.magnification",
            "1000",
            _int_at_least(1),
            "sample size factor of sort compaction",
        ),
        OptionSpec(
            "snapshot.num-retained.min", "10", _int_at_least(1), "snapshots always kept by expiry"
        ),
        OptionSpec(
            "snapshot.num-retained.max",
            "2147483647",
            _int_at_least(1),
            "snapshots kept at most by expiry",
        ),
        OptionSpec("snapshot.time-retained", "1 h", _duration, "age after which snapshots expire"),
        OptionSpec(
            "snapshot.expire.limit", "50", _int_at_least(1), "snapshots expired at most per call"
        ),
        OptionSpec(
            DELETION_VECTORS,
            "false",
            _boolean,
            "DELETE/UPDATE mark rows in deletion vectors instead of rewriting files "
            "(alias: 'deletion-vectors')",
        ),
        OptionSpec(
            "deletion-vectors.bitmap64",
            "false",
            _one_of("false"),
            "64-bit deletion vectors (not supported: Paimon 0.9 and pypaimon read 32-bit ones)",
        ),
        OptionSpec(
            "deletion-vector.index-file.target-size",
            "2 mb",
            _memory_size,
            "accepted for Paimon compatibility (lakeskip writes one index file per bucket "
            "and commit)",
        ),
    )
)


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
            _stats_mode(value, key)
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
        _validate_index_options(options, row_type)


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
    _bucket(raw if raw is not None else "-1", BUCKET)
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


def _validate_index_options(options: Mapping[str, str], row_type: RowType) -> None:
    from lakeskip.index.options import parse_file_index_options

    try:
        parse_file_index_options(dict(options), row_type)
    except ColumnNotFoundError:
        raise
    except KeyError as e:  # a foreign KeyError must not escape untyped
        raise InvalidOptionError(f"invalid file-index option: {e}") from e


def _get(options: Mapping[str, str], key: str) -> str:
    value = options.get(key)
    if value is None:
        default = KNOWN_OPTIONS[key].default
        assert default is not None
        return default
    return value


def stats_mode(options: Mapping[str, str]) -> str:
    """The table's ``metadata.stats-mode`` (Java's default ``truncate(16)``)."""
    return _get(options, STATS_MODE)


def target_file_size(options: Mapping[str, str]) -> int:
    """``target-file-size`` in bytes (default 128 MB)."""
    from lakeskip.index.base import parse_memory_size

    return parse_memory_size(_get(options, TARGET_FILE_SIZE), TARGET_FILE_SIZE)


def manifest_compression(options: Mapping[str, str]) -> str:
    """The Avro codec name for fastavro (``zstandard``, ``deflate``, ``null``)."""
    value = _get(options, "manifest.compression").strip().lower()
    return {"zstd": "zstandard", "none": "null"}.get(value, value)


def commit_max_retries(options: Mapping[str, str]) -> int:
    try:
        return int(_get(options, "commit.max-retries"))
    except ValueError:
        return 10


def option_int(options: Mapping[str, str], key: str) -> int:
    try:
        return int(_get(options, key))
    except ValueError:
        default = KNOWN_OPTIONS[key].default
        assert default is not None
        return int(default)


def option_millis(options: Mapping[str, str], key: str) -> int:
    try:
        return parse_duration_millis(_get(options, key), key)
    except InvalidOptionError:
        default = KNOWN_OPTIONS[key].default
        assert default is not None
        return parse_duration_millis(default, key)


def option_bool(options: Mapping[str, str], key: str) -> bool:
    return _get(options, key).strip().lower() == "true"
