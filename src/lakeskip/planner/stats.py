"""Per-file column statistics as the planner sees them (internal-form values)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ColumnStats", "FileStats"]


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """``None`` means unknown."""

    min: Any | None
    max: Any | None
    null_count: int | None


@dataclass(frozen=True, slots=True)
class FileStats:
    """A file's row count and the stats of the columns that have any (absent = unknown)."""

    row_count: int
    columns: Mapping[str, ColumnStats]
