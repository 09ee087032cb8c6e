"""Values: the internal (physical) form of each type, the one Paimon's Java code hashes and
compares (:func:`to_internal`, :func:`from_internal`), and Spark session time zones
(:func:`session_time_zone`)."""

from __future__ import annotations

import datetime
import decimal
import re
from typing import Any

from lakeskip.errors import TypeMismatchError
from lakeskip.types.data_type import INT_RANGES, DataType, TypeRoot

__all__ = [
    "EPOCH_DATE",
    "EPOCH_NAIVE",
    "EPOCH_UTC",
    "from_internal",
    "session_time_zone",
    "to_internal",
]

EPOCH_DATE = datetime.date(1970, 1, 1)
EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

_UTC_NAMES = frozenset({"UTC", "ETC/UTC", "GMT", "ETC/GMT", "Z", "UCT", "ZULU", "UNIVERSAL"})
_ZONE_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$")


def session_time_zone(name: str) -> tuple[datetime.tzinfo, bool]:
    """A Spark session time zone (``spark.sql.session.timeZone``: a region id, ``UTC``, or
    an offset such as ``+05:30``) and whether its offset never changes.

    >>> session_time_zone("+05:30")
    (datetime.timezone(datetime.timedelta(seconds=19800)), True)
    >>> session_time_zone("America/Los_Angeles")[1]
    False

    Raises:
        ValueError: an unknown zone.
    """
    import zoneinfo

    key = name.strip()
    if key.upper() in _UTC_NAMES:
        return datetime.timezone.utc, True
    m = _ZONE_OFFSET.match(key)
    if m:
        offset = datetime.timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        if offset >= datetime.timedelta(hours=18):
            raise ValueError(f"unknown time zone {name!r}")
        return datetime.timezone(-offset if m.group(1) == "-" else offset), True
    try:
        return zoneinfo.ZoneInfo(key), False
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
        raise ValueError(f"unknown time zone {name!r}") from e


def to_internal(t: DataType, value: Any) -> Any:
    """Convert a Python literal to the internal form of ``t`` (see the module docstring).

    ``None`` stays ``None``. Raises :class:`TypeMismatchError` when the value does not fit.

    >>> from lakeskip.types.data_type import TIMESTAMP, decimal_type
    >>> to_internal(TIMESTAMP, datetime.datetime(1970, 1, 1, 0, 0, 1))
    1000000
    >>> to_internal(decimal_type(5, 2), "1.5")
    Decimal('1.50')
    """
    if value is None:
        return None
    r = t.root
    try:
        if t.is_integer:
            if isinstance(value, bool) or not isinstance(value, int):
                if (isinstance(value, float) and value.is_integer()) or (
                    isinstance(value, decimal.Decimal) and value == value.to_integral_value()
                ):
                    value = int(value)
                else:
                    raise TypeMismatchError(f"{value!r} is not a valid {t}")
            lo, hi = INT_RANGES[r]
            if not lo <= value <= hi:
                raise TypeMismatchError(f"{value} is out of range for {t}")
            return value
        if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
                raise TypeMismatchError(f"{value!r} is not a valid {t}")
            return float(value)
        if r is TypeRoot.DECIMAL:
            if isinstance(value, bool):
                raise TypeMismatchError(f"{value!r} is not a valid {t}")
            d = decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)
            assert t.scale is not None and t.precision is not None
            if not d.is_finite():
                raise TypeMismatchError(f"{value} is not a valid {t}")
            q = d.quantize(decimal.Decimal(1).scaleb(-t.scale))
            if q != d or len(q.as_tuple().digits) - t.scale > t.precision - t.scale:
                raise TypeMismatchError(f"{value} does not fit {t}")
            return q
        if r is TypeRoot.STRING:
            if not isinstance(value, str):
                raise TypeMismatchError(f"{value!r} is not a string")
            return value
        if r is TypeRoot.BINARY:
            if isinstance(value, (bytes, bytearray, memoryview)):
                return bytes(value)
            raise TypeMismatchError(f"{value!r} is not binary")
        if r is TypeRoot.BOOLEAN:
            if not isinstance(value, bool):
                raise TypeMismatchError(f"{value!r} is not a boolean")
            return value
        if r is TypeRoot.DATE:
            if isinstance(value, datetime.datetime):
                raise TypeMismatchError(f"{value!r} is a timestamp, not a date")
            if isinstance(value, datetime.date):
                return (value - EPOCH_DATE).days
            if isinstance(value, str):
                return (datetime.date.fromisoformat(value.strip()) - EPOCH_DATE).days
            raise TypeMismatchError(f"{value!r} is not a date")
        if t.is_timestamp:
            return _timestamp_internal(t, value)
    except (ValueError, ArithmeticError, TypeError) as e:
        if isinstance(e, TypeMismatchError):
            raise
        raise TypeMismatchError(f"{value!r} is not a valid {t}: {e}") from e
    raise TypeMismatchError(f"no literal values for type {t}")


def _timestamp_internal(t: DataType, value: Any) -> int:
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value.strip().replace(" ", "T", 1))
    elif isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime.datetime):
        raise TypeMismatchError(f"{value!r} is not a timestamp")
    if value.tzinfo is not None:
        delta = value - EPOCH_UTC
    else:
        # Naive values are wall-clock time; for LTZ columns we interpret them in UTC, which
        # is the session time zone lakeskip configures for Spark.
        delta = value - EPOCH_NAIVE
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if t.timestamp_unit == "ms":
        return micros // 1000
    return micros


def from_internal(t: DataType, value: Any) -> Any:
    """Inverse of :func:`to_internal` for display (dates and timestamps back to datetime)."""
    if value is None:
        return None
    if t.root is TypeRoot.DATE:
        return EPOCH_DATE + datetime.timedelta(days=value)
    if t.is_timestamp:
        micros = value * 1000 if t.timestamp_unit == "ms" else value
        base = EPOCH_UTC if t.root is TypeRoot.TIMESTAMP_LTZ else EPOCH_NAIVE
        return base + datetime.timedelta(microseconds=micros)
    return value
