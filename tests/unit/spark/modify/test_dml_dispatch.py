"""The DML dispatch point: the public functions build one request and hand it to the engine
``engine_for`` picks by the table's kind (no Spark needed: the engines are replaced)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from lakeskip.catalog.kind import Append, AppendDv, BucketMode, PkMerge, PkRaw, TableKind
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.spark.modify import dispatch as dml
from lakeskip.spark.modify.base import DmlEngine, DmlRequest, DmlResult, MergeRequest, MergeResult
from lakeskip.sql.merge import MergeAction, MergeActionKind

_KINDS: dict[str, TableKind] = {
    "plain": Append(BucketMode.UNAWARE),
    "dv": AppendDv(BucketMode.UNAWARE),
    "pk": PkMerge(BucketMode.FIXED, MergeEngine()),
    "pkdv": PkRaw(BucketMode.FIXED, MergeEngine(), deletion_vectors=True),
}


class _Table:
    identifier = "db.t"

    def __init__(self, kind: str, options: dict[str, str] | None = None) -> None:
        self.kind = _KINDS[kind]
        self.schema = SimpleNamespace(options=options or {})

    def refresh(self) -> _Table:
        return self


def _engine(name: str, seen: list[Any]) -> DmlEngine:
    def delete_update(r: DmlRequest) -> DmlResult:
        seen.append((name, r))
        return DmlResult(0, 0, 0, 0, None)

    def merge(r: MergeRequest) -> MergeResult:
        seen.append((name, r))
        return MergeResult(0, 0, 0, 0, 0, 0, None)

    return DmlEngine(name, delete_update, merge)


def test_requests_reach_the_first_engine_that_handles_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(dml, "PRIMARY_KEY", _engine("pk", seen))
    monkeypatch.setattr(dml, "DELETION_VECTORS", _engine("dv", seen))
    monkeypatch.setattr(dml, "COPY_ON_WRITE", _engine("any", seen))
    monkeypatch.setattr(dml, "resolve_set", lambda table, a: dict(a))
    spark: Any = object()
    source: Any = object()
    dml.delete_where(spark, _Table("dv"), "x = 1", alias="a", time_zone="UTC")  # type: ignore[arg-type]
    dml.update_where(spark, _Table("pk"), {"v": "1"}, None)  # type: ignore[arg-type]
    upd = MergeAction(MergeActionKind.UPDATE, None, None)
    ins = MergeAction(MergeActionKind.INSERT, "s.v > 0", None)
    dele = MergeAction(MergeActionKind.DELETE, None, None)
    dml.merge_into(
        spark,
        _Table("plain"),  # type: ignore[arg-type]
        source,
        on="t.k = s.k",
        source_alias="s",
        matched=[upd],
        not_matched=[ins],
        not_matched_by_source=[dele],
        time_zone="UTC",
    )
    (n1, r1), (n2, r2), (n3, r3) = seen
    assert (n1, r1.condition, r1.assignments, r1.alias, r1.time_zone) == (
        "dv",
        "x = 1",
        None,
        "a",
        "UTC",
    )
    assert not r1.update and r2.update and (n2, dict(r2.assignments)) == ("pk", {"v": "1"})
    fields = ["source", "on", "source_alias", "alias", "matched", "not_matched"]
    fields += ["not_matched_by_source", "time_zone"]
    assert n3 == "any" and tuple(getattr(r3, f) for f in fields) == (
        source,
        "t.k = s.k",
        "s",
        None,
        (upd,),
        (ins,),
        (dele,),
        "UTC",
    )


def test_each_table_kind_has_its_engine() -> None:
    expected = {
        "plain": dml.COPY_ON_WRITE,
        "dv": dml.DELETION_VECTORS,
        "pk": dml.PRIMARY_KEY,
        "pkdv": dml.PRIMARY_KEY,
    }
    assert {k: dml.engine_for(_Table(k)).name for k in _KINDS} == {  # type: ignore[arg-type]
        k: e.name for k, e in expected.items()
    }


def test_a_table_with_a_changelog_producer_is_not_written() -> None:
    """lakeskip writes no changelog files: DML on a table another engine created with a
    ``changelog-producer`` is refused before an engine runs."""
    from lakeskip.errors import InvalidOptionError

    table: Any = _Table("pk", {"changelog-producer": "full-compaction"})
    with pytest.raises(InvalidOptionError, match="writes no changelog files"):
        dml.engine_for(table)
    assert dml.engine_for(_Table("pk", {"changelog-producer": "none"})) is dml.PRIMARY_KEY  # type: ignore[arg-type]
