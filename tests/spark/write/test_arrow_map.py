"""``map_in_arrow`` (the write tasks' way into Spark): the heap freeze it ships to the Python
workers, and its fall back to PySpark's own ``mapInArrow`` when a PySpark internal the jar's
path uses is gone or fails (each broken only as seen from ``arrow_map``: PySpark's own code
keeps its internals, as a PySpark release that renamed them would). Oracle of the writes: the
rows Spark itself computes for the same SELECT."""

from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from py4j.protocol import Py4JError
from pyspark.sql.types import LongType, StructField, StructType

from lakeskip.spark.read import arrow_map

_SELECT = "SELECT id, CAST(id * 7 % 11 AS STRING) AS s FROM range(0, 500, 1, 3)"


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


_HEAP = StructType([StructField(n, LongType()) for n in ("pid", "frozen", "walked", "rows")])


def test_workers_heap_frozen_driver_not(spark: Any) -> None:
    """Every task runs on a frozen heap (PySpark's ``gc.collect()`` after each task walks
    only the few objects made since), the driver's heap is left alone."""

    def heap(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """In a worker (a closure: shipped by value): its pid, objects frozen, objects a
        collection walks, rows seen."""
        rows = sum(b.num_rows for b in batches)
        yield pa.RecordBatch.from_pydict(
            {
                "pid": [os.getpid()],
                "frozen": [gc.get_freeze_count()],
                "walked": [len(gc.get_objects())],
                "rows": [rows],
            }
        )

    before = gc.get_freeze_count()
    df = spark.range(0, 3000, 1, 6)
    out = [r for _ in range(2) for r in arrow_map.map_in_arrow(df, heap, _HEAP).collect()]
    assert gc.get_freeze_count() == before, "the driver's heap is not frozen"
    assert sum(r.rows for r in out) == 2 * 3000
    for r in out:
        assert r.frozen > 0, r
        # unfrozen: what the task itself made (without the freeze: the imported modules, some
        # 40,000 objects or more, and fewer frozen ones)
        assert r.walked < r.frozen, r


def test_freeze_only_when_the_heap_grew() -> None:
    """The task as shipped freezes when more than _UNFROZEN_LIMIT objects are unfrozen: on a
    worker's first task, again only once that many new objects live (modules imported since),
    not on every task (a freeze per task would freeze each task's own command, whose cycles
    are then never collected)."""
    script = textwrap.dedent(
        """
        import gc
        from lakeskip.spark.read.arrow_map import _UNFROZEN_LIMIT, _in_worker
        calls = []
        real = gc.freeze
        gc.freeze = lambda: (calls.append(1), real())
        def task(batches):
            return iter(list(batches))
        shipped = _in_worker(task)
        assert shipped.__name__ == "task", shipped.__name__
        for _ in range(3):
            assert list(shipped(iter([1, 2]))) == [1, 2]
        assert len(calls) == 1 and gc.get_freeze_count() > _UNFROZEN_LIMIT, calls
        assert len(gc.get_objects()) < _UNFROZEN_LIMIT
        kept = [[] for _ in range(2 * _UNFROZEN_LIMIT)]  # as many new objects alive
        for _ in range(3):
            assert list(shipped(iter([3]))) == [3]
        assert len(calls) == 2, calls
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.stdout.strip() == "ok", done.stderr


def _seen_by_arrow_map(
    monkeypatch: pytest.MonkeyPatch, obj: Any, attr: str, seen: Callable[[Any], Any]
) -> None:
    """``obj.attr`` read from ``arrow_map``'s code is ``seen(value)`` (which may raise); read
    from anywhere else (PySpark's own code), the value itself."""

    value = getattr(obj, attr)

    def get(self: Any) -> Any:
        caller = sys._getframe(1).f_globals.get("__name__")
        return seen(value) if caller == arrow_map.__name__ else value

    cls = type(obj)
    monkeypatch.setattr(obj, "__class__", type(cls.__name__, (cls,), {attr: property(get)}))


def _missing(value: Any) -> Any:
    raise AttributeError("gone in this PySpark")


class _FailingThreshold:
    """A JVM view whose ``PythonUtils.getBroadcastThreshold`` raises ``Py4JError``."""

    def __init__(self, jvm: Any) -> None:
        self._jvm = jvm

    def __getattr__(self, name: str) -> Any:
        if name == "PythonUtils":

            def fail(*args: Any) -> Any:
                raise Py4JError("getBroadcastThreshold does not exist in the JVM")

            return SimpleNamespace(getBroadcastThreshold=fail)
        return getattr(self._jvm, name)


def _break(monkeypatch: pytest.MonkeyPatch, spark: Any, internal: str) -> None:
    import pyspark.sql.classic.dataframe
    import pyspark.sql.udf

    sc = spark.sparkContext
    monkeypatch.delitem(sc.__dict__, arrow_map._TEMPLATES, raising=False)  # looked up again
    match internal:
        case "_wrap_function":
            _seen_by_arrow_map(monkeypatch, pyspark.sql.udf, "_wrap_function", _missing)
        case "_pickled_broadcast_vars":
            _seen_by_arrow_map(monkeypatch, sc, "_pickled_broadcast_vars", _missing)
        case "getBroadcastThreshold":
            _seen_by_arrow_map(monkeypatch, sc, "_jvm", _FailingThreshold)
        case "pyspark.sql.classic":
            _seen_by_arrow_map(monkeypatch, pyspark.sql.classic.dataframe, "DataFrame", _missing)
        case _:
            raise AssertionError(internal)


@pytest.mark.parametrize(
    "internal",
    [
        None,
        "_wrap_function",
        "_pickled_broadcast_vars",
        "getBroadcastThreshold",
        "pyspark.sql.classic",
    ],
)
def test_write_lands_without_pyspark_internal(
    session: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    internal: str | None,
) -> None:
    spark = session.spark
    name = f"lakeskip.default.t_{(internal or 'none').replace('.', '_')}"
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, s STRING) "
        "TBLPROPERTIES ('file-index.bloom-filter.columns' = 's')"
    )
    if internal is not None:
        _break(monkeypatch, spark, internal)
    caplog.set_level(logging.DEBUG, logger=arrow_map.__name__)
    spark.sql(f"INSERT INTO {name} {_SELECT}")
    monkeypatch.undo()
    lines = [r for r in caplog.records if r.name == arrow_map.__name__]
    if internal is None:
        assert lines == []
    else:
        assert len(lines) == 1, lines
        assert lines[0].levelno == logging.DEBUG
        assert "PySpark's mapInArrow" in lines[0].getMessage()
    assert _rows(spark.table(name)) == _rows(spark.sql(_SELECT))
    assert _rows(spark.sql(f"SELECT id FROM {name} WHERE s = '3'")) == _rows(
        spark.sql(f"SELECT id FROM ({_SELECT}) WHERE s = '3'")
    )
