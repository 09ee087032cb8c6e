"""Partitions on disk: a partition's values in internal form (:func:`normalize_partition`) and
the relative directory of its bucket (:func:`partition_path`, e.g. ``dt=2024-01-01/bucket-0``),
spelled as Paimon's ``PartitionPathUtils`` does (``partition.legacy-name``,
``partition.default-name``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.options import DEFAULT_PARTITION_NAME, option_bool
from lakeskip.errors import InvalidArgumentError
from lakeskip.types import DataType, TypeRoot, from_internal, to_internal

__all__ = [
    "BUCKET_DIR_PREFIX",
    "UNAWARE_BUCKET_TOTAL",
    "escape_path_name",
    "normalize_partition",
    "partition_path",
    "partition_value_string",
]

BUCKET_DIR_PREFIX = "bucket-"
UNAWARE_BUCKET_TOTAL = -1
_PATH_ESCAPES = frozenset([*map(chr, range(0x20)), *"\"#%'*/:=?\\\x7f{}[]^"])


def escape_path_name(text: str) -> str:
    """Paimon's ``PartitionPathUtils.escapePathName``.

    >>> escape_path_name("a/b=c d")
    'a%2Fb%3Dc d'
    """
    return "".join(f"%{ord(c):02X}" if c in _PATH_ESCAPES else c for c in text)


def partition_value_string(value: Any, dtype: DataType, legacy: bool = True) -> str | None:
    """The directory spelling of one partition value (``None`` for null).

    ``partition.legacy-name=true`` (Paimon's default) is Java's ``toString`` of the internal
    value: a DATE is its epoch day number, a TIMESTAMP ``LocalDateTime.toString()``.
    With ``legacy=False`` dates are ISO (``CAST(x AS STRING)``).

    >>> from lakeskip.types import DATE
    >>> partition_value_string(19723, DATE), partition_value_string(19723, DATE, legacy=False)
    ('19723', '2024-01-01')
    """
    if value is None:
        return None
    r = dtype.root
    if r is TypeRoot.BOOLEAN:
        return "true" if value else "false"
    if r is TypeRoot.DATE:
        return str(value) if legacy else str(from_internal(dtype, value).isoformat())
    if dtype.is_timestamp:
        dt = from_internal(dtype, value).replace(tzinfo=None)
        text = str(dt.isoformat())
        # Java LocalDateTime.toString drops zero seconds and trims sub-second digits
        if dt.second == 0 and dt.microsecond == 0:
            text = text[:16]
        elif dt.microsecond % 1000 == 0:
            text = text[:23] if dt.microsecond else text
        return text
    if r is TypeRoot.DECIMAL:
        return format(value, "f")
    if r is TypeRoot.BINARY:
        return bytes(value).hex()
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        return repr(float(value))
    return str(value)


def normalize_partition(schema: TableSchema, partition: Sequence[Any]) -> tuple[Any, ...]:
    """Partition values in internal form (``datetime.date`` -> epoch days, ...).

    Raises:
        InvalidArgumentError: wrong number of values (TypeMismatchError: a value that does
            not fit its column).
    """
    keys = schema.partition_keys
    if len(partition) != len(keys):
        raise InvalidArgumentError(
            f"partition {tuple(partition)!r} has {len(partition)} values for keys {list(keys)}"
        )
    types = schema.partition_types()
    return tuple(_internal(t, v) for t, v in zip(types, partition, strict=True))


def _internal(t: DataType, value: Any) -> Any:
    # DATE / TIMESTAMP values already in internal form are ints; to_internal wants objects
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if is_int and (t.root is TypeRoot.DATE or t.is_timestamp):
        return value
    return to_internal(t, value)


def partition_path(schema: TableSchema, partition: Sequence[Any], bucket: int = 0) -> str:
    """Relative directory of a partition's bucket, e.g. ``dt=2024-01-01/bucket-0``.

    Values may be internal-form or plain Python (``datetime.date``, ...).
    """
    keys = schema.partition_keys
    partition = normalize_partition(schema, partition)
    default = schema.options.get("partition.default-name", DEFAULT_PARTITION_NAME)
    legacy = option_bool(schema.options, "partition.legacy-name")
    parts = []
    for key, value in zip(keys, partition, strict=True):
        text = partition_value_string(value, schema.row_type.field(key).type, legacy)
        if text is None or not text.strip():
            text = default
        parts.append(f"{escape_path_name(key)}={escape_path_name(text)}")
    parts.append(f"{BUCKET_DIR_PREFIX}{bucket}")
    return "/".join(parts)
