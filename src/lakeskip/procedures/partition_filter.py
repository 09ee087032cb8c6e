"""The ``where => '...'`` argument of procedures: a predicate over partition columns only."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError
from lakeskip.expressions import bind, evaluate_arrow
from lakeskip.sql.partition_predicate import parse_partition_predicate

__all__ = ["filter_partitions"]


def filter_partitions(
    table: FileStoreTable, entries: Sequence[ManifestEntry], where: str
) -> list[ManifestEntry]:
    """The entries whose partition satisfies ``where``.

    Raises:
        InvalidArgumentError: the table is not partitioned, or ``where`` names a column that is
            not a partition column.
        SqlParseError: ``where`` is not a valid SQL predicate.
    """
    schema = table.schema
    keys = list(schema.partition_keys)
    if not keys:
        raise InvalidArgumentError(
            f"where => '{where}': table {table.identifier} is not partitioned"
        )
    part_type = schema.row_type.project(keys)
    predicate = parse_partition_predicate(where, part_type)
    bound = bind(part_type, predicate)
    values = {k: [e.partition[i] for e in entries] for i, k in enumerate(keys)}
    data = pa.table({k: pa.array(values[k], part_type.field(k).type.to_arrow()) for k in keys})
    mask = evaluate_arrow(bound, data).to_pylist()
    return [e for e, keep in zip(entries, mask, strict=True) if keep]
