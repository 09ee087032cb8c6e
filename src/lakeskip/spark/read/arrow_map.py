"""``DataFrame.mapInArrow`` on any column names, in a fixed number of py4j round trips.

PySpark's ``mapInArrow`` passes each input column to the UDF as ``df[name]``, which parses the
name: a column named with a backquote or a dot (``a`b``, ``a.b``: legal, quoted, in Spark SQL)
fails there (``INVALID_ATTRIBUTE_NAME_SYNTAX`` / unresolved); it costs py4j round trips a
column (``df[name]``, then the Scala ``Seq`` of the UDF's arguments filled element by
element), and ~20 more to set the UDF up. :func:`map_in_arrow` pickles the task as PySpark
does and hands it to the jar's ``ArrowMap``, which builds the UDF (from a template
``PythonFunction`` of the same Python context) and takes every column by its quoted name, in
one call. A command PySpark would broadcast, or a DDL-string schema: PySpark builds the UDF,
``ArrowMap`` the rest. Without the jar (or without a JVM handle: Spark Connect), PySpark's
``mapInArrow``, the columns handed over under positional names when a name needs it.

Every task runs in a Python worker that PySpark reuses from task to task, and after each task
PySpark's daemon runs ``gc.collect()`` in it: a full collection walks every object the
worker holds, ~85,000 once the write path's modules are imported (~45 ms of CPU a task on
this project's machine, and the worker's next task waits for it). The task as shipped
(:func:`_in_worker`), when a collection would walk more than :data:`_UNFROZEN_LIMIT` objects
(a worker's first lakeskip task; one after a task that imported more modules), collects and
moves what the worker holds to the permanent generation (``gc.freeze()``), which no
collection walks again: the ``gc.collect()`` after a task walks only what was made since.
Frozen objects are still freed by reference counting; one kept in a reference cycle that
becomes garbage later (the command of the task that froze) is never freed: a few kilobytes
a freeze, and each freeze needs that many new objects alive.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.types import StructType

from lakeskip.types import DataType, RowType, TypeRoot, quote_identifier

__all__ = ["map_in_arrow", "spark_struct"]

_ATOMIC: dict[TypeRoot, T.DataType] = {
    TypeRoot.BOOLEAN: T.BooleanType(),
    TypeRoot.TINYINT: T.ByteType(),
    TypeRoot.SMALLINT: T.ShortType(),
    TypeRoot.INT: T.IntegerType(),
    TypeRoot.BIGINT: T.LongType(),
    TypeRoot.FLOAT: T.FloatType(),
    TypeRoot.DOUBLE: T.DoubleType(),
    TypeRoot.STRING: T.StringType(),
    TypeRoot.BINARY: T.BinaryType(),
    TypeRoot.DATE: T.DateType(),
    TypeRoot.TIMESTAMP: T.TimestampNTZType(),
    TypeRoot.TIMESTAMP_LTZ: T.TimestampType(),
}


def _spark_type(t: DataType) -> T.DataType:
    """What Spark parses ``t.spark_ddl()`` to, built in Python (no py4j call)."""
    r = t.root
    if r in _ATOMIC:
        return _ATOMIC[r]
    if r is TypeRoot.DECIMAL:
        assert t.precision is not None and t.scale is not None
        return T.DecimalType(t.precision, t.scale)
    if r is TypeRoot.MAP:
        assert t.key is not None and t.value is not None
        return T.MapType(_spark_type(t.key), _spark_type(t.value), True)
    if r is TypeRoot.ARRAY:
        assert t.value is not None
        return T.ArrayType(_spark_type(t.value), True)
    assert r is TypeRoot.ROW
    return T.StructType(
        [
            T.StructField(
                f.name,
                _spark_type(f.type),
                f.type.nullable,
                {"comment": f.description} if f.description is not None else None,
            )
            for f in t.row_fields
        ]
    )


def spark_struct(row_type: RowType, *extra: tuple[str, T.DataType]) -> StructType:
    """The ``StructType`` of ``row_type.spark_ddl()`` (top-level fields nullable, as the DDL
    says) followed by the nullable ``extra`` columns: a schema :func:`map_in_arrow` takes
    down its JVM path, built without the py4j calls of Spark's DDL parser."""
    fields = [T.StructField(f.name, _spark_type(f.type), True) for f in row_type.fields]
    return StructType(fields + [T.StructField(n, t, True) for n, t in extra])


ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]

_ARROW_MAP = "lakeskip.jvm.write.ArrowMap"
_log = logging.getLogger(__name__)


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


#: a task freezes the worker's heap when a collection would walk more objects than this
_UNFROZEN_LIMIT = 10_000


def _in_worker(task: ArrowTask) -> ArrowTask:
    """``task``, first freezing the worker's heap when it holds more than
    :data:`_UNFROZEN_LIMIT` unfrozen objects (see the module's docstring). A closure, so
    that cloudpickle ships it by value: unpickling it in the worker imports nothing of
    ``lakeskip.spark``."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if len(gc.get_objects()) > _UNFROZEN_LIMIT:  # frozen objects are not listed
            gc.collect()
            gc.freeze()
        return task(batches)

    run.__name__ = getattr(task, "__name__", type(task).__name__)  # the UDF's name in plans
    return run


def _noop() -> None:
    """The command of the template ``PythonFunction`` (never run)."""


# kept on the SparkContext (a new context has none)
_TEMPLATES = "_lakeskip_arrow_templates"


def _template(sc: Any) -> tuple[Any, int]:
    """A ``PythonFunction`` of ``sc``'s Python context (its environment and includes as they
    are now) whose environment, includes, Python and accumulator the jar's ``ArrowMap``
    copies, and the size above which PySpark broadcasts a pickled command."""
    from pyspark.sql.udf import _wrap_function

    templates: dict[tuple[Any, ...], tuple[Any, int]] = sc.__dict__.setdefault(_TEMPLATES, {})
    key = (tuple(sc._python_includes), tuple(sorted(sc.environment.items())))
    got = templates.get(key)
    if got is None:
        threshold = int(sc._jvm.PythonUtils.getBroadcastThreshold(sc._jsc))
        got = templates[key] = (_wrap_function(sc, _noop), threshold)
    return got


def _pickled(sc: Any, task: ArrowTask, schema: StructType, threshold: int) -> bytes | None:
    """``(task, schema)`` pickled as PySpark pickles a UDF's command; ``None`` when PySpark
    would broadcast it (larger than ``threshold``, or holding a broadcast variable)."""
    from pyspark.serializers import CloudPickleSerializer

    registry = sc._pickled_broadcast_vars
    had = set(registry)
    serializer: Any = CloudPickleSerializer()  # type: ignore[no-untyped-call]
    command: bytes = serializer.dumps((task, schema))
    if set(registry) != had or len(command) > threshold:
        return None  # (a broadcast: PySpark's own path pickles again and takes it)
    return command


def _through_jar(df: DataFrame, jdf: Any, shipped: ArrowTask, schema: str | StructType) -> Any:
    """:func:`map_in_arrow` by the jar's ``ArrowMap`` (``None``: the jar is not loaded). Uses
    PySpark internals (``pyspark.sql.classic``, ``_wrap_function``, ``_pickled_broadcast_vars``,
    ``PythonUtils.getBroadcastThreshold``, ``UserDefinedFunction._judf``): any of them
    missing or failing raises here."""
    from py4j.java_gateway import JavaClass
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
    from pyspark.sql.udf import UserDefinedFunction
    from pyspark.util import PythonEvalType

    session = df.sparkSession
    arrow_map = getattr(session._jvm, _ARROW_MAP)
    if not isinstance(arrow_map, JavaClass):  # an unknown name: the jar is not loaded
        return None
    sc = session.sparkContext
    if isinstance(schema, StructType):
        like, threshold = _template(sc)
        if command := _pickled(sc, shipped, schema, threshold):
            jout = arrow_map.mapInArrow(
                jdf, shipped.__name__, bytearray(command), like, schema.json()
            )
            return ClassicDataFrame(jout, session)
    udf = UserDefinedFunction(
        shipped, returnType=schema, evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF
    )
    return ClassicDataFrame(arrow_map.mapInArrow(jdf, udf._judf), session)


def map_in_arrow(df: DataFrame, task: ArrowTask, schema: str | StructType) -> DataFrame:
    """``df.mapInArrow(task, schema)``, for any column names of ``df``. ``schema`` as a
    ``StructType``: the UDF too is built in the JVM in the same call (its command pickled
    here, as PySpark pickles it). When the jar's path cannot be taken (a PySpark internal it
    uses is gone or fails: ``AttributeError``, ``ImportError``, ``Py4JError``), PySpark's own
    ``mapInArrow``, with one debug log line."""
    shipped = _in_worker(task)
    jdf = getattr(df, "_jdf", None)
    if jdf is not None:
        from py4j.protocol import Py4JError

        try:
            out = _through_jar(df, jdf, shipped, schema)
        except (AttributeError, ImportError, Py4JError) as e:
            _log.debug("map_in_arrow: PySpark's mapInArrow (the jar's path failed: %r)", e)
            out = None
        if out is not None:
            return cast(DataFrame, out)
    names = df.columns
    if not any(_parsed_apart(n) for n in names):
        return df.mapInArrow(shipped, schema)
    safe = df.select(*[F.col(quote_identifier(n)).alias(f"_c{i}") for i, n in enumerate(names)])
    return safe.mapInArrow(_in_worker(_Renamed(task, names)), schema)
