"""``lakeskip.catalog.pk.merge_engine``: option checks and the corner cases of Paimon's
``PartialUpdateMergeFunction`` (current Paimon, which pypaimon follows)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeskip.catalog.pk.merge_engine import MergeEngine, check_merge_options
from lakeskip.errors import CorruptMetadataError, InvalidOptionError

SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"


def _versions(rows: list[tuple[int, int, int, str | None, int | None]]) -> pa.Table:
    k, seq, kind, a, n = zip(*rows, strict=True)
    return pa.table(
        {
            "k": pa.array(k, pa.int32()),
            "a": pa.array(a, pa.string()),
            "n": pa.array(n, pa.int32()),
            SEQ: pa.array(seq, pa.int64()),
            KIND: pa.array(kind, pa.int8()),
        }
    )


def _merge(engine: MergeEngine, rows: list[tuple[int, int, int, str | None, int | None]]) -> list:
    out = engine.merge_versions(_versions(rows), ["k"], SEQ, KIND)
    return [(r["k"], r["a"], r["n"], r[SEQ], r[KIND]) for r in out.to_pylist()]


def test_partial_update_rules() -> None:
    plain = MergeEngine("partial-update")
    remove = MergeEngine("partial-update", remove_record_on_delete=True)
    ignore = MergeEngine("partial-update", ignore_delete=True)
    # versions arrive out of order; the newest non-null value of each column wins
    assert _merge(plain, [(1, 5, 0, None, 3), (1, 2, 0, "a", 9), (1, 3, 2, "b", None)]) == [
        (1, "b", 3, 5, 0)
    ]
    with pytest.raises(CorruptMetadataError, match="ignore-delete"):
        _merge(plain, [(1, 1, 0, "a", 1), (1, 2, 3, "a", 1)])
    # -D resets the row to its own values; newest -D: no row
    assert _merge(remove, [(1, 1, 0, "a", 1), (1, 2, 3, "d", None), (1, 3, 0, None, 7)]) == [
        (1, "d", 7, 3, 0)
    ]
    assert _merge(remove, [(1, 1, 0, "a", 1), (1, 2, 3, "a", 1)]) == []
    # -U is skipped (after seeding the row when it comes first)
    assert _merge(remove, [(1, 1, 1, "u", 4), (1, 2, 0, None, 5)]) == [(1, "u", 5, 2, 0)]
    # ignore-delete: retracts skipped; a retract-only key is no row
    assert _merge(ignore, [(1, 1, 0, "a", 1), (1, 2, 3, None, None), (2, 1, 3, "x", 1)]) == [
        (1, "a", 1, 2, 0)
    ]
    # deduplicate: newest version, its own kind
    assert _merge(MergeEngine(), [(1, 1, 0, "a", 1), (1, 2, 2, None, 5)]) == [(1, None, 5, 2, 2)]


def test_merge_write_fills_in_arrival_order() -> None:
    t = pa.table({"k": [2, 1, 2, 2], "a": ["x", None, None, "z"], "n": [1, 2, 3, None]})
    pu = MergeEngine("partial-update")
    assert pu.merge_write(t, ["k"], kind=0).to_pylist() == [
        {"k": 1, "a": None, "n": 2},
        {"k": 2, "a": "z", "n": 3},
    ]
    # -D rows of one write with remove-record-on-delete: the last one of a key stands (it
    # resets the row); other retracts only seed a row when they come first: the first stands
    remove = MergeEngine("partial-update", remove_record_on_delete=True)
    assert remove.merge_write(t, ["k"], kind=3).to_pylist()[1] == {"k": 2, "a": "z", "n": None}
    ignore = MergeEngine("partial-update", ignore_delete=True)
    assert ignore.merge_write(t, ["k"], kind=3).to_pylist()[1] == {"k": 2, "a": "x", "n": 1}
    assert remove.merge_write(t, ["k"], kind=1).to_pylist()[1] == {"k": 2, "a": "x", "n": 1}


def test_option_checks() -> None:
    check_merge_options({"merge-engine": "partial-update", "ignore-delete": "true"}, ["id"])
    for options, match in (
        ({"merge-engine": "aggregate"}, "is not supported"),
        ({"merge-engine": "aggregation", "fields.v.aggregate-function": "count"}, "'count'"),
        ({"merge-engine": "aggregation", "fields.v.aggregate-function": "avg"}, "unknown .*'avg'"),
        ({"merge-engine": "partial-update", "fields.v.aggregate-function": "sum"}, "aggregation"),
        ({"merge-engine": "first-row", "sequence.field": "v"}, "first-row"),
        ({"sequence.field": "v", "sequence.field.sort-order": "up"}, "ascending or desc"),
        ({"sequence.field": "v,v"}, "listed twice"),
        ({"merge-engine": "first-row", "deletion-vectors.enabled": "true"}, "first-row' yet"),
        ({"merge-engine": "partial-update"}, "needs a primary key"),
        ({"ignore-delete": "true"}, "partial-update' only"),
        ({"merge-engine": "deduplicate", "fields.a.sequence-group": "b"}, "partial-update"),
        (
            {
                "merge-engine": "partial-update",
                "fields.a.sequence-group": "b",
                "sequence.field": "a",
            },
            "together with sequence groups",
        ),
        (
            {
                "merge-engine": "partial-update",
                "fields.a.sequence-group": "b",
                "fields.c.sequence-group": "b",
            },
            "two sequence groups",
        ),
    ):
        with pytest.raises(InvalidOptionError, match=match):
            check_merge_options(options, ["id"] if "needs" not in match else [])
    assert (
        MergeEngine.of({"merge-engine": "Partial-Update"}).to_json()["engine"] == "partial-update"
    )
    assert MergeEngine().delete_refusal("t") is None
    assert MergeEngine().dml_refusal("DELETE", "t") is None
    assert "first-row" in (MergeEngine("first-row").dml_refusal("UPDATE", "t") or "")
    assert "remove-record-on-delete" in (MergeEngine("partial-update").delete_refusal("t") or "")


def test_first_row_keeps_the_oldest_version() -> None:
    first = MergeEngine.of({"merge-engine": "first-row"})
    assert first.first_row and not first.partial_update
    t = pa.table({"k": [2, 1, 2, 1], "v": ["a", "b", "c", "d"]})
    assert first.merge_write(t, ["k"], kind=0).to_pylist() == [
        {"k": 1, "v": "b"},
        {"k": 2, "v": "a"},
    ], "the first row written for a key stands"
    versions = pa.table(
        {
            "k": [1, 1, 2, 2, 3],
            "v": ["new", "old", "x", "y", "z"],
            "_SEQUENCE_NUMBER": pa.array([9, 4, 1, 2, 5], pa.int64()),
            "_VALUE_KIND": pa.array([0, 0, 2, 0, 0], pa.int8()),
        }
    )
    merged = first.merge_versions(versions, ["k"], "_SEQUENCE_NUMBER", "_VALUE_KIND")
    assert merged.select(["k", "v"]).to_pylist() == [
        {"k": 1, "v": "old"},
        {"k": 2, "v": "x"},
        {"k": 3, "v": "z"},
    ]
    retract = versions.set_column(3, "_VALUE_KIND", pa.array([0, 0, 3, 0, 0], pa.int8()))
    with pytest.raises(CorruptMetadataError, match="first-row"):
        first.merge_versions(retract, ["k"], "_SEQUENCE_NUMBER", "_VALUE_KIND")
