"""Paimon's text forms of values, as its system tables and ``DESCRIBE`` show them.

Partitions and keys as ``{v1, v2}`` / ``[v1, v2]``, each value as Java's ``String.valueOf`` of
Paimon's internal object, schema parts as flat JSON, durations as
``java.time.Duration.toString``. Paimon's ``TIMESTAMP(3)`` columns hold wall-clock times: a
commit time in the reader's time zone (Paimon uses the JVM's default zone), a file's creation
time as the writer recorded it.

>>> java_duration(90_061_000)
'PT25H1M1S'
>>> from lakeskip.types import INT, STRING
>>> row_text([1, None], [INT, STRING])
'{1, null}'
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from typing import Any

from lakeskip.catalog.partitions import partition_value_string
from lakeskip.types import DataType, TypeRoot

__all__ = ["flat_json", "java_duration", "java_text", "row_text", "stored_wall", "wall"]


def java_duration(millis: int) -> str:
    """``java.time.Duration.ofMillis(millis).toString()`` (``PT1H30M``, ``PT0.5S``)."""
    if millis == 0:
        return "PT0S"
    sign = "-" if millis < 0 else ""
    ms = abs(millis)
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, frac = divmod(rest, 1000)
    out = "PT"
    if hours:
        out += f"{sign}{hours}H"
    if minutes:
        out += f"{sign}{minutes}M"
    if seconds or frac:
        text = str(seconds) + (f".{frac:03d}".rstrip("0") if frac else "")
        out += f"{sign}{text}S"
    return out


def wall(millis: int, zone: datetime.tzinfo) -> datetime.datetime:
    """Epoch millis as the wall-clock time in ``zone`` (naive)."""
    utc = datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.timezone.utc)
    return utc.astimezone(zone).replace(tzinfo=None)


def stored_wall(millis: int | None) -> datetime.datetime | None:
    """A ``TIMESTAMP(3)`` value as stored (Paimon's wall-clock millis), naive."""
    if millis is None:
        return None
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=millis)


def java_text(value: Any, t: DataType) -> str:
    """``String.valueOf`` of Paimon's internal object for a stats / key / partition value."""
    if value is None:
        return "null"
    if t.root is TypeRoot.BINARY:
        return "[" + ", ".join(str(b if b < 128 else b - 256) for b in bytes(value)) + "]"
    text = partition_value_string(value, t)
    return "null" if text is None else text


def row_text(values: Sequence[Any], types: Sequence[DataType]) -> str:
    """Paimon's ROW -> STRING cast: ``{v1, v2}``."""
    return "{" + ", ".join(java_text(v, t) for v, t in zip(values, types, strict=True)) + "}"


def flat_json(value: Any) -> str:
    """Compact JSON, as Paimon prints schema parts."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
