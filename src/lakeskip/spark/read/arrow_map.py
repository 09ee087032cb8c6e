"""``DataFrame.mapInArrow`` on any column names.

PySpark's ``mapInArrow`` passes each input column to the UDF as ``df[name]``, which parses the
name: a column named with a backquote or a dot (``a`b``, ``a.b``: legal, quoted, in Spark SQL)
fails there (``INVALID_ATTRIBUTE_NAME_SYNTAX`` / unresolved). :func:`map_in_arrow` then hands the
columns over under positional names and gives the function its batches under the real ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakeskip.types import quote_identifier

__all__ = ["map_in_arrow"]

ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _parsed_apart(name: str) -> bool:
    """Whether ``df[name]`` reads ``name`` as something else than the column ``name``."""
    return "`" in name or "." in name


class _Renamed:
    """``task`` over batches renamed to ``names`` (picklable: it ships to the executors)."""

    def __init__(self, task: ArrowTask, names: Sequence[str]) -> None:
        self.task = task
        self.names = list(names)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        names = self.names
        return self.task(pa.RecordBatch.from_arrays(b.columns, names=names) for b in batches)


def map_in_arrow(df: DataFrame, task: ArrowTask, schema: str) -> DataFrame:
    """``df.mapInArrow(task, schema)``, for any column names of ``df`` (the same number of
    py4j round trips when no name needs it)."""
    names = df.columns
    if not any(_parsed_apart(n) for n in names):
        return df.mapInArrow(task, schema)
    safe = df.select(*[F.col(quote_identifier(n)).alias(f"_c{i}") for i, n in enumerate(names)])
    return safe.mapInArrow(_Renamed(task, names), schema)
