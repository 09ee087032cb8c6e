"""The ``where => '...'`` argument of procedures: a predicate over partition columns only."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import sqlglot
from sqlglot import exp

from lakeskip.catalog.manifest import ManifestEntry
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError, SqlParseError
from lakeskip.expressions import Reference, bind, evaluate_arrow
from lakeskip.sql.predicates import to_expression

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
    try:
        node = sqlglot.parse_one(where, read="spark")
    except sqlglot.errors.ParseError as e:
        err = e.errors[0] if e.errors else {}
        raise SqlParseError(
            f"cannot parse where => '{where}': {err.get('description', str(e))}",
            err.get("line"),
            err.get("col"),
        ) from e
    lowered = {k.lower(): k for k in keys}
    for col in node.find_all(exp.Column):
        if col.name.lower() not in lowered:
            raise InvalidArgumentError(
                f"where => '{where}': {col.name} is not a partition column "
                f"(partition columns: {', '.join(keys)})"
            )
    part_type = schema.row_type.project(keys)

    def column_of(n: exp.Expression) -> Reference | None:
        if isinstance(n, exp.Column) and n.name.lower() in lowered:
            return Reference(lowered[n.name.lower()])
        return None

    predicate = to_expression(node, column_of, part_type)  # type: ignore[arg-type]
    bound = bind(part_type, predicate)
    values = {k: [e.partition[i] for e in entries] for i, k in enumerate(keys)}
    data = pa.table({k: pa.array(values[k], part_type.field(k).type.to_arrow()) for k in keys})
    mask = evaluate_arrow(bound, data).to_pylist()
    return [e for e, keep in zip(entries, mask, strict=True) if keep]
