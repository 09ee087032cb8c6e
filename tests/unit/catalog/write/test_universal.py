"""Universal compaction's pick (:mod:`lakeskip.catalog.write.universal`) on the cases of
Paimon's ``UniversalCompactionTest`` (same sizes, levels and expected units)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.pk_tables import write_pk

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND, RowKind
from lakeskip.catalog.write.universal import (
    CompactUnit,
    Run,
    UniversalOptions,
    _unit,
    bucket_runs,
    pick,
    pick_for_size_amp,
    pick_for_size_ratio,
)
from lakeskip.types import BIGINT, INT, STRING, RowType


def _testing(max_size_amp: int, size_ratio: int, trigger: int) -> UniversalOptions:
    return UniversalOptions(trigger=trigger, max_size_amp=max_size_amp, size_ratio=size_ratio)


def _runs(*level_size: tuple[int, int]) -> list[Run]:
    return [Run(level, size, (f"f{i}",)) for i, (level, size) in enumerate(level_size)]


def _sizes(unit: CompactUnit | None, runs: Sequence[Run]) -> list[int]:
    assert unit is not None
    by_name = {r.files[0]: r.size for r in runs}
    return [by_name[f] for f in unit.files]


def test_output_level() -> None:
    runs = _runs(*((level, 1) for level in (0, 0, 1, 3, 4)))
    assert [_unit(runs, 5, n).output_level for n in (1, 2, 3, 4, 5)] == [1, 1, 2, 3, 5]


def test_pick() -> None:
    c = _testing(25, 1, 3)
    runs = _runs((0, 1), (0, 2), (0, 3), (0, 3))  # size amplification
    assert _sizes(pick(runs, c, 3), runs) == [1, 2, 3, 3]
    runs = _runs((0, 1), (1, 1), (2, 1), (3, 50))  # size ratio
    assert _sizes(pick(runs, c, 4), runs) == [1, 1, 1]
    runs = _runs((0, 1), (1, 2), (2, 3), (3, 50))  # run count, grown by size ratio
    assert _sizes(pick(runs, c, 4), runs) == [1, 2, 3]


def test_no_output_level_0() -> None:
    c = _testing(25, 1, 3)
    runs = _runs((0, 1), (0, 1), (1, 1), (2, 50))
    assert _sizes(pick(runs, c, 3), runs) == [1, 1, 1]
    runs = _runs((0, 1), (0, 2), (1, 3), (2, 50))
    assert _sizes(pick(runs, c, 3), runs) == [1, 2, 3]


def test_file_num_compaction_considers_level_2() -> None:
    runs = _runs((0, 10), (0, 20), (1, 97), (2, 100))
    unit = pick(runs, _testing(200, 1, 3), 3)
    assert unit is not None and len(unit.files) == 4 and unit.output_level == 2


def test_extreme_case_no_output_level_0() -> None:
    runs = _runs((0, 1), (0, 1), (0, 1), (0, 1024), (0, 1024 * 1024))
    unit = pick(runs, _testing(200, 1, 5), 6)
    assert _sizes(unit, runs) == [1, 1, 1, 1024, 1024 * 1024]
    assert unit is not None and unit.output_level == 5


def test_size_amplification() -> None:
    c = _testing(25, 0, 1)
    sizes = [1]
    seen = []
    for _ in range(16):
        sizes = [1, *sizes]
        runs = _runs(*((0, s) for s in sizes))
        unit = pick_for_size_amp(runs, c, 2)
        if unit is not None:
            sizes = [sum(_sizes(unit, runs))]
        seen.append(sizes)
    assert seen == [
        [2], [3], [4], [1, 4], [6], [1, 6], [8], [1, 8], [1, 1, 8], [11], [1, 11],
        [1, 1, 11], [14], [1, 14], [1, 1, 14], [1, 1, 1, 14],
    ]  # fmt: skip


def test_size_ratio() -> None:
    c = _testing(25, 1, 5)
    sizes = [1, 1, 1, 1]
    seen = []
    for _ in range(21):
        sizes = [1, *sizes]
        runs = _runs(*((i, s) for i, s in enumerate(sizes)))
        unit = pick_for_size_ratio(runs, c, len(sizes) - 1)
        if unit is not None:
            picked = _sizes(unit, runs)
            rest = list(sizes)
            for p in picked:
                rest.remove(p)
            sizes = [sum(picked), *rest]
        seen.append(sizes)
    assert seen == [
        [5], [1, 5], [1, 1, 5], [1, 1, 1, 5], [4, 5], [1, 4, 5], [1, 1, 4, 5], [3, 4, 5],
        [1, 3, 4, 5], [2, 3, 4, 5], [1, 2, 3, 4, 5], [16], [1, 16], [1, 1, 16],
        [1, 1, 1, 16], [4, 16], [1, 4, 16], [1, 1, 4, 16], [3, 4, 16], [1, 3, 4, 16],
        [2, 3, 4, 16],
    ]  # fmt: skip


def _write(table: Any, rows: list[dict[str, Any]], kind: RowKind, prefix: str) -> None:
    write_pk(table, rows, kind, prefix, row_type=ROW)


def _merged(table: Any) -> list[tuple[Any, ...]]:
    kv = pa.concat_tables(
        [pq.read_table(table.data_file_path(e)) for e in table.scan_files()]
    ).select(["k", "v", "n", SEQUENCE_NUMBER, VALUE_KIND])
    out = MergeEngine.for_schema(table.schema).merge_versions(
        kv, ["k"], SEQUENCE_NUMBER, VALUE_KIND
    )
    return sorted((r["k"], r["v"], r["n"]) for r in out.to_pylist())


ROW = RowType.of(("k", INT), ("v", STRING), ("n", BIGINT))


@pytest.mark.parametrize(
    "engine",
    [
        {},
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
        {"sequence.field": "n"},
    ],
    ids=["deduplicate", "partial-update", "sequence-field"],
)
def test_minor_compaction_keeps_rows_and_the_lsm_invariant(
    tmp_path: Path, engine: dict[str, str]
) -> None:
    """Upserts and deletes of a bucket, CALL sys.compact(compact_strategy => 'minor') after
    each (trigger 2): the merged rows never change, every level above 0 is one sorted run
    (files with disjoint key ranges), retracts stay until a compaction reaches the top of
    the bucket, and the big old run is not rewritten by small upserts."""
    from tests.unit.procedures.test_sort_rewrite import LocalExecutor

    from lakeskip.procedures.compact import Compact

    cat = Catalog(str(tmp_path / "wh"))
    table = cat.create_table(
        "default.t",
        ROW,
        options={
            "primary-key": "k",
            "bucket": "1",
            "num-sorted-run.compaction-trigger": "3",
            **engine,
        },
    )
    rng = random.Random(5)
    ordered = "sequence.field" in engine
    # per key its winning version: (sequence field or 0, arrival, deleted, row)
    versions: dict[int, tuple[int, int, bool, tuple[Any, ...]]] = {}

    def apply(k: int, n: int, arrival: int, deleted: bool, row: tuple[Any, ...]) -> None:
        old = versions.get(k)
        rank = (n if ordered else 0, arrival)
        if old is None or rank >= old[:2]:
            versions[k] = (*rank, deleted, row)

    _write(table, [{"k": i, "v": "base", "n": 0} for i in range(2000)], RowKind.INSERT, "w0")
    for i in range(2000):
        apply(i, 0, 0, False, (i, "base", 0))
    picked_levels = set()
    top_runs: list[frozenset[str]] = []
    for w in range(1, 16):
        keys = rng.sample(range(40), 15) + rng.sample(range(40, 2100), 15)  # hot keys
        # the sequence field: mostly rising, sometimes older than what the key holds
        ns = {k: w if rng.random() < 0.7 else rng.randrange(w) for k in keys}
        if w % 4 == 0:
            rows = [{"k": k, "v": None, "n": ns[k]} for k in keys]
            _write(table, rows, RowKind.DELETE, f"w{w}")
            for k in keys:
                apply(k, ns[k], w, True, ())
        else:
            rows = [{"k": k, "v": f"w{w}", "n": ns[k]} for k in keys]
            _write(table, rows, RowKind.INSERT, f"w{w}")
            for k in keys:
                apply(k, ns[k], w, False, (k, f"w{w}", ns[k]))
        model = {k: v[3] for k, v in versions.items() if not v[2]}
        table = table.refresh()
        before = {e.file.file_name: e.file.level for e in table.scan_files()}
        result = Compact().run(
            catalog=cat,
            executor=LocalExecutor(),
            arguments={"table": "default.t", "compact_strategy": "minor"},
            default_database="default",
        )
        table = table.refresh()
        live = table.scan_files()
        assert _merged(table) == sorted(model.values()), w
        if result.values[0][4] is not None:
            assert result.values[0][3] == "universal"
            picked_levels |= {e.file.level for e in live if e.file.file_name not in before}
        top = frozenset(e.file.file_name for e in live if e.file.level == 3)  # trigger + 1 levels
        if top and top not in top_runs:
            top_runs.append(top)
        runs = bucket_runs(live)
        assert len(runs) <= 3  # the trigger: compacted back down to it
        for level in {e.file.level for e in live} - {0}:
            files = sorted((e for e in live if e.file.level == level), key=lambda e: e.file.min_key)
            for a, b in itertools.pairwise(files):
                assert a.file.max_key < b.file.min_key  # one sorted run per level
    assert 0 not in picked_levels and picked_levels - {3}  # some units stopped below the top
    # the 2000-key run, once at the top, is never rewritten by the small upserts
    assert len(top_runs) == 1, top_runs


def test_pick_full() -> None:
    """Paimon's ``pickFullCompaction``: every run to the top level; nothing for an empty
    bucket or one that is a single top-level run; of a single top-level run only the files
    with a DV, each rewritten on its own."""
    from lakeskip.catalog.write.universal import pick_full

    c = _testing(200, 1, 3)  # levels 0-3
    runs = _runs((0, 1), (0, 2), (1, 5), (3, 50))
    unit = pick_full(runs, c)
    assert unit is not None
    assert (unit.files, unit.output_level, unit.rewrite) == (("f0", "f1", "f2", "f3"), 3, False)
    unit = pick_full(_runs((0, 1)), c)  # one level-0 run still goes to the top
    assert unit is not None and unit.output_level == 3 and unit.files == ("f0",)
    assert pick_full([], c) is None
    top = [Run(3, 30, ("a", "b", "c"))]
    assert pick_full(top, c) is None
    unit = pick_full(top, c, with_dv=frozenset({"c", "a", "x"}))
    assert unit is not None
    assert (unit.files, unit.output_level, unit.rewrite) == (("a", "c"), 3, True)
    # a bucket already holding a higher level (CALL sys.compact's level 5): that is the top
    unit = pick_full(_runs((0, 1), (5, 10)), c)
    assert unit is not None and unit.output_level == 5
    assert pick_full([Run(5, 10, ("a",))], c) is None


def test_full_compaction_option() -> None:
    from lakeskip.catalog.option_checks import validate_options
    from lakeskip.catalog.write.universal import full_compaction_on_write
    from lakeskip.errors import InvalidOptionError

    key = "full-compaction.delta-commits"
    assert [full_compaction_on_write({key: v}) for v in ("1", "3", "0", "-1", "x")] == [
        True,
        True,
        False,
        False,
        False,
    ]
    assert not full_compaction_on_write({})
    validate_options({key: "3"}, None, primary_keys=("id",))
    for value, message in (("0", "must be >= 1"), ("three", "not an integer")):
        with pytest.raises(InvalidOptionError, match=message):
            validate_options({key: value}, None, primary_keys=("id",))
    with pytest.raises(InvalidOptionError, match="needs fixed buckets on an append table"):
        validate_options({key: "3"}, None)


def test_changelog_producer_refused(tmp_path: Path) -> None:
    """``changelog-producer``: only ``none`` at CREATE / ALTER (``full-compaction`` is
    refused as not supported: lakeskip writes no changelog files), and a table another
    engine created with one is not written: the commit is refused, the table untouched."""
    from lakeskip.catalog.format.snapshot import CommitKind
    from lakeskip.catalog.option_checks import validate_options
    from lakeskip.errors import InvalidOptionError

    validate_options({"changelog-producer": "none"}, None, primary_keys=("id",))
    for value in ("full-compaction", "lookup", "input"):
        with pytest.raises(InvalidOptionError, match="is not supported yet: lakeskip writes no"):
            validate_options({"changelog-producer": value}, None, primary_keys=("id",))
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    row_type = RowType.of(("id", INT), ("v", STRING))
    catalog.create_table("db.t", row_type, primary_keys=["id"], options={"bucket": "1"})
    table = catalog.get_table("db.t")
    table.commit([], kind=CommitKind.OVERWRITE)  # writable as created
    before = len(table.refresh().list_snapshots())
    # what Paimon (not lakeskip) may create: the stored option set behind the catalog's back
    schema = table.schema.with_options(
        table.schema.id + 1, {**table.schema.options, "changelog-producer": "full-compaction"}
    )
    from lakeskip.catalog.format.schema import SchemaManager

    assert SchemaManager(table.file_io, table.path).try_commit(schema)
    table = table.refresh()
    with pytest.raises(InvalidOptionError, match="'changelog-producer' = 'full-compaction'"):
        table.commit([], kind=CommitKind.OVERWRITE)
    assert len(table.refresh().list_snapshots()) == before


def test_full_compaction_of_one_top_run_rewrites_only_files_with_dvs(tmp_path: Path) -> None:
    """A bucket already one top-level run of several files: the full compaction after a
    write plans nothing, unless files of it have DVs; then each such file is rewritten on
    its own (its key range, minus its deleted rows, at the top level), never merged with
    another (that output could span the keys of a file between them)."""
    from pyroaring import BitMap
    from tests.unit.procedures.test_sort_rewrite import LocalExecutor

    from lakeskip.index.primitives.roaring import serialize_bitmap
    from lakeskip.procedures.compact import Compact
    from lakeskip.procedures.pk_compact import compact_bucket, plan_universal_tasks

    cat = Catalog(str(tmp_path / "wh"))
    table = cat.create_table(
        "default.t",
        ROW,
        options={"primary-key": "k", "bucket": "1", "target-file-size": "4 kb"},
    )
    rows = [{"k": i, "v": f"v{i:05}" * 8, "n": i} for i in range(20000)]
    _write(table, rows, RowKind.INSERT, "w0")
    Compact().run(  # every bucket to one run at level 5, rolled into several files
        catalog=cat, executor=LocalExecutor(), arguments={"table": "default.t"},
        default_database="default",
    )  # fmt: skip
    table = table.refresh()

    def keys(e: Any) -> tuple[int, int]:
        k = pq.read_table(table.data_file_path(e), columns=["k"])["k"].to_pylist()
        return min(k), max(k)

    live = sorted(table.scan_files(), key=keys)
    assert {e.file.level for e in live} == {5} and len(live) >= 3
    assert plan_universal_tasks(table, live, "x", full=True) == []
    a, c = live[0], live[2]
    deleted = {n: serialize_bitmap(BitMap([0, 1])) for n in (a.file.file_name, c.file.file_name)}
    tasks = plan_universal_tasks(table, live, "x", deleted=deleted, full=True)
    assert [[e.file.file_name for _, e in t.files] for t in tasks] == [
        [a.file.file_name],
        [c.file.file_name],
    ]
    assert {t.output_level for t in tasks} == {5}
    for task, src in zip(tasks, (a, c), strict=True):
        out = compact_bucket(task)
        assert sum(e.file.row_count for e in out) == src.file.row_count - 2
        lo, hi = keys(src)
        assert all(lo <= keys(e)[0] <= keys(e)[1] <= hi for e in out)
