"""What the never-wrong tests of primary-key tables share: the versions in a table's files,
the rows of a model that satisfy a predicate, and drawn writes of ``(k, p, i32, s)`` rows."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import strategies as st

from lakeskip import expressions as E
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND
from lakeskip.catalog.table import FileStoreTable
from lakeskip.types import RowType

__all__ = ["draw_rows", "file_records", "filter_rows"]


def file_records(
    table: FileStoreTable, entries: list[Any], names: list[str]
) -> list[tuple[Any, int, dict[str, Any]]]:
    """Every version in the files of ``entries``: (sequence number, row kind, its ``names``)."""
    out = []
    for e in entries:
        data = pq.read_table(table.data_file_path(e)).to_pylist()
        out.extend((r[SEQUENCE_NUMBER], r[VALUE_KIND], {c: r[c] for c in names}) for r in data)
    return out


def filter_rows(
    rows: list[tuple[Any, ...]], bound: Any, row_type: RowType
) -> list[tuple[Any, ...]]:
    """The ``rows`` (tuples of ``row_type``'s fields) that satisfy ``bound``, sorted."""
    if not rows:
        return []
    names = row_type.names
    t = pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in rows], row_type.to_arrow())
    kept = t.filter(pc.fill_null(E.evaluate_arrow(bound, t), False))
    return sorted((tuple(r.values()) for r in kept.to_pylist()), key=repr)


def draw_rows(
    data: st.DataObject, n: int, keys: int, unique_keys: bool = False
) -> dict[str, list[Any]]:
    """``n`` rows of ``(k INT, p STRING, i32 INT, s STRING)`` as columns: keys below ``keys``
    (distinct with ``unique_keys``), partitions x and y, small values and NULLs."""
    k = st.lists(st.integers(0, keys - 1), min_size=n, max_size=n, unique=unique_keys)
    return {
        "k": data.draw(k, label="k"),
        "p": data.draw(st.lists(st.sampled_from(["x", "y"]), min_size=n, max_size=n)),
        "i32": data.draw(
            st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=n, max_size=n)
        ),
        "s": data.draw(
            st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c"])), min_size=n, max_size=n)
        ),
    }
