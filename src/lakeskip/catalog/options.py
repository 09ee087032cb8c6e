"""Table options: the keys lakeskip knows, their defaults and their validators.

Each key's validator checks its value alone; the whole map of a ``CREATE TABLE`` /
``ALTER TABLE`` (unknown keys, rules between options and columns) is checked by
:func:`lakeskip.catalog.option_checks.validate_options`, ``file-index.*`` keys by
:func:`lakeskip.index.options.parse_file_index_options` against the table's columns. The
accessors (:func:`stats_mode`, :func:`target_file_size`, :func:`option_int`, ...) read an
option or its default.

Example:
    >>> stats_mode({})
    'truncate(16)'
    >>> target_file_size({"target-file-size": "64 mb"})
    67108864
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakeskip.catalog.format.stats import parse_stats_mode
from lakeskip.catalog.kind import DELETION_VECTORS, DELETION_VECTORS_ALIAS
from lakeskip.catalog.pk.merge_engine import IGNORE_DELETE, REMOVE_RECORD_ON_DELETE
from lakeskip.errors import InvalidOptionError, LakeskipError

if TYPE_CHECKING:
    from lakeskip.index.options import FileIndexOptions
    from lakeskip.types import RowType

__all__ = [
    "KNOWN_OPTIONS",
    "OptionSpec",
    "check_writable",
    "commit_max_retries",
    "file_index_options",
    "implied_index_options",
    "manifest_compression",
    "parse_duration_millis",
    "parse_stats_mode",
    "sorted_run_stop_trigger",
    "stats_mode",
    "target_file_size",
]

BUCKET = "bucket"
BUCKET_KEY = "bucket-key"
FILE_FORMAT = "file.format"
TARGET_FILE_SIZE = "target-file-size"
FULL_COMPACTION_DELTA_COMMITS = "full-compaction.delta-commits"
COMPACTION_MIN_FILE_NUM = "compaction.min.file-num"
COMPACTION_TRIGGER = "num-sorted-run.compaction-trigger"
STOP_TRIGGER = "num-sorted-run.stop-trigger"
BLOOM_COLUMNS = "file-index.bloom-filter.columns"
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
    """Checked with the whole option map by
    :func:`~lakeskip.catalog.pk.merge_engine.check_merge_options` (the engine's
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
            COMPACTION_TRIGGER,
            "5",
            _int_at_least(1),
            "primary-key tables: sorted runs of a bucket that trigger a compaction",
        ),
        OptionSpec(
            STOP_TRIGGER,
            None,
            _int_at_least(1),
            "unaware-bucket append tables with clustering.incremental written by a streaming "
            "query: level-0 files of a partition at which a micro-batch waits for the running "
            "clustering round (default num-sorted-run.compaction-trigger + 3, as Paimon's "
            "write stall)",
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


def sorted_run_stop_trigger(options: Mapping[str, str]) -> int:
    """``num-sorted-run.stop-trigger``, by default ``num-sorted-run.compaction-trigger`` + 3
    (Paimon's ``CoreOptions.numSortedRunStopTrigger``).

    >>> sorted_run_stop_trigger({}), sorted_run_stop_trigger({STOP_TRIGGER: "2"})
    (8, 2)
    """
    value = options.get(STOP_TRIGGER)
    if value is not None:
        try:
            return max(1, int(value))
        except ValueError:
            pass
    return option_int(options, COMPACTION_TRIGGER) + 3


def implied_index_options(
    options: Mapping[str, str], row_type: RowType, partition_keys: Sequence[str] = ()
) -> Mapping[str, str]:
    """``options`` plus the file indexes a table has without naming them: on a table with
    ``clustering.incremental = true``, a bloom filter on each clustering column (of a type
    the bloom filter takes) that ``file-index.bloom-filter.columns`` does not name.

    Such a table's writes land unsorted (level 0) and are clustered later, in the
    background; until then each new file spans the clustering column's whole range, so its
    min/max cannot rule out a point lookup, and the clustered file whose range holds a key
    that only a new file has cannot either. The bloom filter lets the planner skip both, so
    a point lookup on the clustering column keeps about the files a clustered write would,
    while batches still wait. Its ``file-index.bloom-filter.<column>.*`` options apply.

    >>> from lakeskip import types as T
    >>> rt = T.RowType.of(("k", T.BIGINT), ("u", T.STRING))
    >>> implied_index_options({"clustering.columns": "k"}, rt)
    {'clustering.columns': 'k'}
    >>> o = implied_index_options({"clustering.columns": "k", "clustering.incremental": "true",
    ...     BLOOM_COLUMNS: "u"}, rt)
    >>> o[BLOOM_COLUMNS]
    'u,k'
    """
    from lakeskip.index.registry import get_indexer
    from lakeskip.sort.clustering import clustering_from_options

    try:
        cluster = clustering_from_options(options, row_type, partition_keys)
    except (LakeskipError, ValueError):  # a bad clustering option is refused where it is set
        return options
    if cluster is None or not cluster.incremental:
        return options
    named = [c.strip() for c in options.get(BLOOM_COLUMNS, "").split(",") if c.strip()]
    bloom = get_indexer("bloom-filter")
    added = [
        c
        for c in cluster.columns
        if c not in named and c in row_type.names and bloom.supports(row_type.field(c).type)
    ]
    if not added:
        return options
    return {**options, BLOOM_COLUMNS: ",".join([*named, *added])}


def file_index_options(
    options: Mapping[str, str], row_type: RowType, partition_keys: Sequence[str] = ()
) -> FileIndexOptions:
    """The file indexes a table's files are written with and read by: its ``file-index.*``
    options and the ones they imply (:func:`implied_index_options`).

    Parsed once per (options, columns, partition keys) and shared (the result is frozen):
    the planner asks two or three times per scan, and a parse (every index's option checks,
    Paimon's container order) cost ~1-2 ms, a quarter of planning a TPC-H SF 1 scan."""
    keys = tuple(partition_keys)
    # in the options' order: it decides the order of the specs and the container's layout
    items = tuple(options.items())
    try:
        return _cached_index_options(items, row_type, keys)
    except TypeError:  # an unhashable option value: parsed every time
        return _parse_index_options(options, row_type, keys)


def _parse_index_options(
    options: Mapping[str, str], row_type: RowType, partition_keys: Sequence[str]
) -> FileIndexOptions:
    from lakeskip.index.options import parse_file_index_options

    return parse_file_index_options(
        implied_index_options(options, row_type, partition_keys), row_type
    )


@functools.lru_cache(maxsize=256)
def _cached_index_options(
    items: tuple[tuple[str, str], ...], row_type: RowType, partition_keys: tuple[str, ...]
) -> FileIndexOptions:
    # an error is raised again on every call (lru_cache keeps only results)
    return _parse_index_options(dict(items), row_type, partition_keys)
