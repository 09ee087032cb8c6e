"""``DataFrame.mapInArrow`` on any column names, in a fixed number of py4j round trips.

PySpark's ``mapInArrow`` passes each input column to the UDF as ``df[name]``, which parses the
name: a column named with a backquote or a dot (``a`b``, ``a.b``: legal, quoted, in Spark SQL)
fails there (``INVALID_ATTRIBUTE_NAME_SYNTAX`` / unresolved); and it costs py4j round trips a
column (``df[name]``, then the Scala ``Seq`` of the UDF's arguments filled element by
element). :func:`map_in_arrow` builds the UDF with PySpark and hands it to the jar's
``ArrowMap``, which takes every column by its quoted name in one call. Without the jar (or
without a JVM handle: Spark Connect) it takes PySpark's ``mapInArrow``, the columns handed
over under positional names when a name needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakeskip.types import quote_identifier

__all__ = ["map_in_arrow"]

ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]

_ARROW_MAP = "lakeskip.jvm.read.ArrowMap"


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


def map_in_arrow(df: DataFrame, task: ArrowTask, schema: str | StructType) -> DataFrame:
    """``df.mapInArrow(task, schema)``, for any column names of ``df``. ``schema`` as a
    ``StructType`` saves the JVM's parse of a DDL string."""
    jdf = getattr(df, "_jdf", None)
    if jdf is not None:
        from py4j.java_gateway import JavaClass
        from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
        from pyspark.sql.udf import UserDefinedFunction
        from pyspark.util import PythonEvalType

        session = df.sparkSession
        arrow_map = getattr(session._jvm, _ARROW_MAP)
        if isinstance(arrow_map, JavaClass):  # else an unknown name: the jar is not loaded
            udf = UserDefinedFunction(
                task, returnType=schema, evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF
            )
            return ClassicDataFrame(arrow_map.mapInArrow(jdf, udf._judf), session)
    names = df.columns
    if not any(_parsed_apart(n) for n in names):
        return df.mapInArrow(task, schema)
    safe = df.select(*[F.col(quote_identifier(n)).alias(f"_c{i}") for i, n in enumerate(names)])
    return safe.mapInArrow(_Renamed(task, names), schema)
