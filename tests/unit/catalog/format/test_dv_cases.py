"""The deletion-vector case table (``tests/fixtures/deletion_vectors``) against pyarrow's
copy of the rule, ``drop_deleted`` (compaction and the primary-key lookup read whole files
through it); the Spark test of the same table drives the Python anti-join and Java's scan."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyroaring import BitMap
from tests.fixtures.deletion_vectors.cases import CASES, ROW_TYPE, DvCase

from lakeskip.catalog.format.deletion_vectors import drop_deleted
from lakeskip.errors import CorruptDeletionVectorError
from lakeskip.expressions import bind
from lakeskip.expressions.arrow_eval import evaluate_arrow
from lakeskip.index.primitives.roaring import serialize_bitmap
from lakeskip.sql.query import condition_predicate


def _sorted(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return sorted(rows, key=lambda r: r[0])  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_drop_deleted(case: DvCase) -> None:
    parts = []
    for i, f in enumerate(case.files):
        data = f.arrow(ROW_TYPE)
        dv = serialize_bitmap(BitMap(f.deleted)) if f.deleted else None
        parts.append(drop_deleted(data, dv, f"file {i}"))
    live = pa.concat_tables(parts)
    predicate = bind(ROW_TYPE, condition_predicate(case.where, ROW_TYPE, "t"))
    got = live.filter(evaluate_arrow(predicate, live))
    assert _sorted([tuple(r.values()) for r in got.to_pylist()]) == list(case.expected), case.why


def test_the_table_names_real_positions() -> None:
    for case in CASES:
        for f in case.files:
            assert all(0 <= p < len(f.rows) for p in f.deleted), case.name
            assert list(f.deleted) == sorted(set(f.deleted)), case.name
    assert {c.name for c in CASES} >= {"row_groups_skipped", "per_file", "nulls"}


def test_a_position_beyond_the_file_is_corrupt() -> None:
    data = CASES[0].files[0].arrow(ROW_TYPE)
    with pytest.raises(CorruptDeletionVectorError, match="deletes row 5 of 5"):
        drop_deleted(data, serialize_bitmap(BitMap([5])), "f")
