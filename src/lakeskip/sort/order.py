"""Sort strategies for sort compaction: validation and the row permutation they produce.

Paimon's ``CALL sys.compact(order_strategy => 'order' | 'zorder' | 'hilbert', order_by => ...)``
(``CompactProcedure.java``, ``spark/sort/{Order,Zorder,Hilbert}Sorter.java``):

* ``order``   sorts on the columns themselves (Spark ascending: NULLS FIRST, NaN above every
  number, strings by unsigned UTF-8 bytes);
* ``zorder``  sorts on :func:`lakeskip.sort.zorder.zorder_keys`;
* ``hilbert`` sorts on :func:`lakeskip.sort.hilbert.hilbert_keys` (two or more columns).

Binary keys compare as unsigned bytes, as Spark orders ``BinaryType``. Order columns must exist,
must not be partition columns (Paimon: "order_by should not contain partition cols") and must
not be nested.

Example:
    >>> import pyarrow as pa
    >>> from lakeskip.types import INT
    >>> sort_indices([pa.array([3, None, 1])], [INT], ORDER).tolist()
    [1, 2, 0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.errors import InvalidArgumentError
from lakeskip.sort._columns import prepare_columns
from lakeskip.sort.hilbert import hilbert_keys
from lakeskip.sort.zorder import DEFAULT_VAR_LENGTH_CONTRIBUTION, zorder_keys
from lakeskip.types import DataType, Field, RowType, TypeRoot

__all__ = [
    "HILBERT",
    "ORDER",
    "SORT_STRATEGIES",
    "ZORDER",
    "sort_indices",
    "sort_keys",
    "sortable",
    "validate_sort_columns",
    "validate_strategy",
]

ORDER = "order"
ZORDER = "zorder"
HILBERT = "hilbert"
#: Paimon's ``order_strategy`` values that actually sort (``none`` is not a sort).
SORT_STRATEGIES = (ORDER, ZORDER, HILBERT)


def sortable(dtype: DataType) -> bool:
    """Whether rows can be ordered by a column of this type (every strategy agrees).

    Example:
        >>> from lakeskip.types import STRING, map_of
        >>> sortable(STRING), sortable(map_of(STRING, STRING))
        (True, False)
    """
    return not dtype.is_nested


def validate_strategy(strategy: str) -> str:
    """Normalise an ``order_strategy`` name (case-insensitive).

    Raises:
        InvalidArgumentError: not one of ``order``, ``zorder``, ``hilbert``.
    """
    name = strategy.strip().lower()
    if name not in SORT_STRATEGIES:
        raise InvalidArgumentError(
            f"unknown order strategy {strategy!r} (expected one of {', '.join(SORT_STRATEGIES)})"
        )
    return name


def validate_sort_columns(
    row_type: RowType,
    names: Sequence[str],
    partition_keys: Sequence[str] = (),
    strategy: str = ORDER,
) -> tuple[Field, ...]:
    """Check ``order_by`` columns and resolve them to fields, in the given order.

    Args:
        row_type: the table schema.
        names: the ``order_by`` column names.
        partition_keys: the table's partition columns (never allowed).
        strategy: ``order`` / ``zorder`` / ``hilbert`` (Hilbert needs two or more columns).

    Raises:
        ColumnNotFoundError: a name is not a column.
        InvalidArgumentError: no columns, a duplicate, a partition column, a nested column,
            an unknown strategy, or a single column for Hilbert.

    Example:
        >>> from lakeskip.types import INT, STRING, RowType, map_of
        >>> schema = RowType.of(("id", INT), ("dt", STRING), ("attrs", map_of(STRING, STRING)))
        >>> [f.name for f in validate_sort_columns(schema, ["id"], ["dt"])]
        ['id']
        >>> validate_sort_columns(schema, ["dt"], ["dt"])
        Traceback (most recent call last):
        ...
        lakeskip.errors.InvalidArgumentError: cannot sort by partition column dt
        >>> validate_sort_columns(schema, ["attrs"], ["dt"])
        Traceback (most recent call last):
        ...
        lakeskip.errors.InvalidArgumentError: cannot sort by MAP column attrs
    """
    name = validate_strategy(strategy)
    if not names:
        raise InvalidArgumentError("order column could not be empty")
    fields = tuple(row_type.field(n) for n in names)
    seen: set[str] = set()
    partitions = {p.lower() for p in partition_keys}
    for f in fields:
        if f.name in seen:
            raise InvalidArgumentError(f"sort column {f.name} is listed twice")
        seen.add(f.name)
        if f.name.lower() in partitions:
            raise InvalidArgumentError(f"cannot sort by partition column {f.name}")
        if not sortable(f.type):
            raise InvalidArgumentError(f"cannot sort by {f.type.root.value} column {f.name}")
    if name == HILBERT and len(fields) < 2:
        raise InvalidArgumentError("Hilbert sort needs at least two columns")
    return fields


def sort_keys(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
    strategy: str,
    var_length_contribution: int = DEFAULT_VAR_LENGTH_CONTRIBUTION,
) -> pa.BinaryArray:
    """The binary sort key of a curve strategy (``zorder`` or ``hilbert``).

    Raises:
        InvalidArgumentError: ``order`` (it sorts on the columns, no key) or unknown strategy.
    """
    name = validate_strategy(strategy)
    if name == ZORDER:
        return zorder_keys(columns, types, var_length_contribution)
    if name == HILBERT:
        return hilbert_keys(columns, types)
    raise InvalidArgumentError("the 'order' strategy sorts on the columns and has no key")


def _order_table(
    arrays: Sequence[pa.Array], types: Sequence[DataType]
) -> tuple[pa.Table, list[tuple[str, str, str]]]:
    """Columns plus helper flags so Arrow sorts like Spark: nulls first, NaN above numbers."""
    data: dict[str, pa.Array] = {}
    keys: list[tuple[str, str, str]] = []
    for i, (arr, t) in enumerate(zip(arrays, types, strict=True)):
        if t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            # Arrow places NaN next to the nulls; Spark puts nulls first and NaN after +inf.
            data[f"n{i}"] = pc.is_valid(arr)
            data[f"x{i}"] = pc.fill_null(pc.is_nan(arr), False)
            data[f"v{i}"] = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
            keys += [(f"n{i}", "ascending", "at_end"), (f"x{i}", "ascending", "at_end")]
            keys.append((f"v{i}", "ascending", "at_end"))
        else:
            data[f"v{i}"] = arr
            keys.append((f"v{i}", "ascending", "at_start"))
    return pa.table(data), keys


def sort_indices(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
    strategy: str = ORDER,
    var_length_contribution: int = DEFAULT_VAR_LENGTH_CONTRIBUTION,
) -> npt.NDArray[np.int64]:
    """The stable row permutation that puts rows in ``strategy`` order.

    Args:
        columns: the sort columns (same length).
        types: their lakeskip types.
        strategy: ``order``, ``zorder`` or ``hilbert``.
        var_length_contribution: z-order bytes per STRING/BINARY column.

    Returns:
        int64 row indices; ``table.take(result)`` is the sorted table.

    Raises:
        InvalidArgumentError: unknown strategy, mismatched columns, Hilbert with one column.
        TypeMismatchError: a column type the strategy cannot encode.
    """
    name = validate_strategy(strategy)
    arrays, _ = prepare_columns(columns, types)
    for t in types:
        if not sortable(t):
            raise InvalidArgumentError(f"cannot sort by {t.root.value} column")
    if name == ORDER:
        table, keys = _order_table(arrays, types)
        indices = pc.sort_indices(table, sort_keys=keys)
    else:
        indices = pc.sort_indices(sort_keys(arrays, types, name, var_length_contribution))
    return np.asarray(indices.to_numpy(), dtype=np.int64)
