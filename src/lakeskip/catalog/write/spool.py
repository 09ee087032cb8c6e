"""A bucket's new rows between the lookup and the write (:class:`Spool`): in memory up to a
budget, past it in an Arrow IPC stream file on local disk."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

__all__ = ["Spool"]


class Spool:
    """A bucket's new rows (key-sorted tables) between the lookup and the write: in memory
    up to ``budget`` bytes, past it in an Arrow IPC stream file at ``spill()``'s path (read
    back a table at a time)."""

    def __init__(self, budget: int, spill: Callable[[], str]) -> None:
        self.budget = budget
        self.spill = spill
        self.tables: list[pa.Table] = []
        self.rows = 0
        self.nbytes = 0
        self.path: str | None = None
        self._sink: Any = None
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None

    def add(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        self.rows += table.num_rows
        self.nbytes += table.nbytes
        if self._writer is None and self.nbytes <= self.budget:
            self.tables.append(table)
            return
        if self._writer is None:
            self.path = self.spill()
            self._sink = pa.OSFile(self.path, "wb")
            self._writer = pa.ipc.new_stream(self._sink, table.schema)
            for held in self.tables:
                self._writer.write_table(held)
            self.tables = []
        self._writer.write_table(table)

    def __iter__(self) -> Iterator[pa.Table]:
        if self._writer is None:
            yield from self.tables
            return
        self._writer.close()
        self._sink.close()
        self._writer = None
        assert self.path is not None
        with pa.input_stream(self.path) as source:
            for batch in pa.ipc.open_stream(source):
                yield pa.Table.from_batches([batch])

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = None
        if self.path is not None and os.path.exists(self.path):
            os.remove(self.path)
        self.tables = []
