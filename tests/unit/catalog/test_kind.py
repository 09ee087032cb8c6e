"""The table kind: decided once from the schema's options and primary key."""

from __future__ import annotations

import pickle

import pytest

from lakeskip.catalog import Catalog
from lakeskip.catalog.kind import (
    Append,
    AppendDv,
    BucketMode,
    PkMerge,
    PkRaw,
    merge_engine_of,
    schema_kind,
    table_kind,
)
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.errors import InvalidOptionError
from lakeskip.types import BIGINT, STRING, RowType

PK = ("id",)


@pytest.mark.parametrize(
    ("options", "keys", "expected"),
    [
        ({}, (), Append(BucketMode.UNAWARE)),
        ({"bucket": "4", "bucket-key": "id"}, (), Append(BucketMode.FIXED)),
        ({"deletion-vectors.enabled": "true"}, (), AppendDv(BucketMode.UNAWARE)),
        ({"deletion-vectors": "TRUE"}, (), AppendDv(BucketMode.UNAWARE)),  # the alias
        ({"deletion-vectors.enabled": "false"}, (), Append(BucketMode.UNAWARE)),
        ({"bucket": "2"}, PK, PkMerge(BucketMode.FIXED, MergeEngine())),
        (
            {"bucket": "2", "merge-engine": "partial-update", "ignore-delete": "true"},
            PK,
            PkMerge(BucketMode.FIXED, MergeEngine("partial-update", ignore_delete=True)),
        ),
        (
            {"bucket": "2", "deletion-vectors.enabled": "true"},
            PK,
            PkRaw(BucketMode.FIXED, MergeEngine(), deletion_vectors=True),
        ),
        (
            {"bucket": "2", "merge-engine": "first-row"},
            PK,
            PkRaw(BucketMode.FIXED, MergeEngine("first-row"), deletion_vectors=False),
        ),
        # Paimon's dynamic bucket mode: read by lakeskip, not written yet
        ({"bucket": "-1"}, PK, PkMerge(BucketMode.DYNAMIC, MergeEngine())),
    ],
)
def test_kind_of_options(options: dict[str, str], keys: tuple[str, ...], expected: object) -> None:
    kind = table_kind(options, keys)
    assert kind == expected
    assert (merge_engine_of(kind) is None) == (not keys)


def test_unreadable_options_are_typed_errors() -> None:
    with pytest.raises(InvalidOptionError, match="expected true or false"):
        table_kind({"deletion-vectors.enabled": "yes"}, ())
    with pytest.raises(InvalidOptionError, match="merge-engine"):
        table_kind({"bucket": "1", "merge-engine": "nope"}, PK)


def test_the_table_follows_its_schema(catalog: Catalog) -> None:
    row = RowType.of(("id", BIGINT), ("s", STRING))
    t = catalog.create_table("default.t", row)
    assert t.kind == Append(BucketMode.UNAWARE)
    assert t.kind is t.kind  # decided once per schema
    assert schema_kind(pickle.loads(pickle.dumps(t.schema))) == t.kind  # as write tasks see it
    catalog.alter_table("default.t", {"deletion-vectors": "true"})
    assert t.refresh().kind == AppendDv(BucketMode.UNAWARE)
    pk = catalog.create_table(
        "default.pk", row, options={"deletion-vectors": "true"}, primary_keys=["id"]
    )
    # no bucket option: a primary-key table is dynamic-bucket by default, as in Paimon
    assert pk.kind == PkRaw(BucketMode.DYNAMIC, MergeEngine(), deletion_vectors=True)
