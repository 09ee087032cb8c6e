"""A manifest entry: one ADD or DELETE of a data file (``ManifestEntry`` records; the file
layout is in :mod:`lakeskip.catalog.format.manifest`, which re-exports these names).

Example:
    >>> FileKind(1).name
    'DELETE'
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from lakeskip.catalog.format.data_file import DataFileMeta

__all__ = ["FileKind", "ManifestEntry"]


class FileKind(enum.IntEnum):
    """``_KIND`` of a manifest entry."""

    ADD = 0
    DELETE = 1


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One ADD or DELETE of a data file. ``partition`` holds internal-form values."""

    kind: FileKind
    partition: tuple[Any, ...]
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple[object, ...]:
        """Key matching a DELETE to the ADD it cancels (Paimon's ``FileEntry.Identifier``)."""
        return (self.partition, self.bucket, *self.file.identifier)
