"""How long each stage of a write task took (:class:`WriteTimings`, summed by the driver).

A writer keeps one mutable :class:`StageClock`; :meth:`DataWriter.timings
<lakeskip.catalog.write.data_writer.DataWriter.timings>` freezes it into a
:class:`WriteTimings`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

__all__ = ["StageClock", "WriteTimings"]


class StageClock:
    """Per-stage seconds of one writer (mutable; :meth:`DataWriter.timings` freezes it)."""

    __slots__ = ("cpu", "cpu_mark", "files", "index_cpu", "rows", "seconds", "stage_cpu")

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(WriteTimings.STAGES, 0.0)
        self.stage_cpu: dict[str, float] = dict.fromkeys(WriteTimings.STAGES, 0.0)
        self.files = 0
        self.rows = 0
        # the process's CPU seconds (a Spark Python worker runs one task at a time), charged
        # to the stage that ends at each add: the stages follow one another with no gap
        self.cpu = 0.0
        self.index_cpu = 0.0
        self.cpu_mark = time.process_time()

    def add(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] += now - since
        cpu = time.process_time()
        self.cpu += cpu - self.cpu_mark
        self.stage_cpu[stage] += cpu - self.cpu_mark
        if stage == "index":
            self.index_cpu += cpu - self.cpu_mark
        self.cpu_mark = cpu
        return now


@dataclass(frozen=True, slots=True)
class WriteTimings:
    """Seconds spent in each stage of the write tasks, summed over tasks and files.

    Stages: ``input`` (waiting for the next Arrow batch: upstream Spark work and the JVM to
    Python transfer), ``prepare`` (cast to the table schema, partition split, concatenation),
    ``parquet`` (encoding and writing the data file), ``stats`` (min/max/null counts),
    ``index`` (building every file index and the container), ``index_io`` (writing
    ``.index`` files) and ``meta`` (the manifest entry).

    The stages are wall-clock seconds: on a loaded machine they grow with the time the task
    waits for a core. ``cpu`` is the CPU seconds the task's Python process spent (all stages,
    ``input`` included: decoding the Arrow batches) and ``index_cpu`` those of the ``index``
    stage; they hardly move with the load. ``stage_cpu`` splits ``cpu`` by stage (in
    :data:`STAGES` order; :meth:`cpu_by_stage`).

    >>> (WriteTimings(parquet=1.0, files=1) + WriteTimings(parquet=0.5, index=2.0, files=2)).summary()
    'files 3, rows 0: parquet 1.50 s, index 2.00 s'
    >>> WriteTimings(index=0.5, cpu=1.0, index_cpu=0.25).summary()
    'files 0, rows 0: index 0.50 s; cpu 1.00 s (index 0.25 s)'
    """

    STAGES: ClassVar[tuple[str, ...]] = (
        "input",
        "prepare",
        "parquet",
        "stats",
        "index",
        "index_io",
        "meta",
    )
    input: float = 0.0
    prepare: float = 0.0
    parquet: float = 0.0
    stats: float = 0.0
    index: float = 0.0
    index_io: float = 0.0
    meta: float = 0.0
    files: int = 0
    rows: int = 0
    cpu: float = 0.0
    index_cpu: float = 0.0
    # primary-key writes: bytes of sorted runs spilled to local disk (summed over tasks)
    # and the most bytes one task's write buffer held at once (the largest over tasks)
    spilled: int = 0
    peak_buffer: int = 0
    stage_cpu: tuple[float, ...] = ()

    def __add__(self, other: WriteTimings) -> WriteTimings:
        return WriteTimings(
            **{s: getattr(self, s) + getattr(other, s) for s in self.STAGES},
            files=self.files + other.files,
            rows=self.rows + other.rows,
            cpu=self.cpu + other.cpu,
            index_cpu=self.index_cpu + other.index_cpu,
            spilled=self.spilled + other.spilled,
            peak_buffer=max(self.peak_buffer, other.peak_buffer),
            stage_cpu=tuple(
                a + b
                for a, b in zip(
                    self.stage_cpu or (0.0,) * len(self.STAGES),
                    other.stage_cpu or (0.0,) * len(self.STAGES),
                    strict=True,
                )
            ),
        )

    def cpu_by_stage(self) -> dict[str, float]:
        """Stage -> CPU seconds of the Python process (``input``: decoding the Arrow batches
        and waiting for them; all zero when not measured).

        >>> WriteTimings(stage_cpu=(0.5, 0, 1.0, 0, 0, 0, 0)).cpu_by_stage()["parquet"]
        1.0
        """
        return dict(zip(self.STAGES, self.stage_cpu or (0.0,) * len(self.STAGES), strict=True))

    def as_dict(self) -> dict[str, float]:
        """Stage -> seconds, plus ``files``, ``rows``, ``cpu`` and ``index_cpu`` (for JSON
        reports)."""
        out = {s: getattr(self, s) for s in self.STAGES}
        out["files"] = self.files
        out["rows"] = self.rows
        out["cpu"] = self.cpu
        out["index_cpu"] = self.index_cpu
        return out

    def summary(self) -> str:
        stages = ", ".join(
            f"{s} {getattr(self, s):.2f} s" for s in self.STAGES if getattr(self, s) > 0
        )
        cpu = f"; cpu {self.cpu:.2f} s (index {self.index_cpu:.2f} s)" if self.cpu > 0 else ""
        return f"files {self.files}, rows {self.rows}: {stages}{cpu}"
