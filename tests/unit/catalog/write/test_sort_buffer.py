"""Primary-key writes in bounded memory (:mod:`lakeskip.catalog.write.sort_buffer`) without
Spark: the k-way merge against a plain sort, and whole tables written with a tiny
``write-buffer-size`` (spilled runs, intermediate merges at fan-in 2) against the same rows
written unbounded and against a model of the merge engine."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples
from tests.pk_tables import pk_write_spec, write_pk_dv

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.kind import PkRaw
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND, RowKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.bucket_lookup import read_versions
from lakeskip.catalog.write.data_writer import DataWriter
from lakeskip.catalog.write.sort_buffer import ARRIVAL, BufferOptions, SortBuffer, merge_sorted
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.types import BIGINT, INT, STRING, RowType

ROW = RowType.of(("k", INT), ("s", STRING), ("v", BIGINT), ("q", INT))
TINY = {"write-buffer-size": "2 kb", "local-sort.max-num-file-handles": "2"}
HUGE = {"write-buffer-size": "1 gb"}


@settings(max_examples=unit_examples(60), deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 8), st.text("ab", max_size=2)), max_size=30),
        min_size=1,
        max_size=5,
    ),
    st.integers(1, 7),
)
def test_merge_sorted_is_a_sort_in_whole_keys(runs: list[list[Any]], batch: int) -> None:
    sources = []
    everything = []
    tie = 0
    for run in runs:
        rows = []
        for k, s in sorted(run):
            rows.append((k, s, tie))
            tie += 1
        everything += rows
        t = pa.table(
            {
                "k": [r[0] for r in rows],
                "s": [r[1] for r in rows],
                "t": pa.array([r[2] for r in rows], pa.int64()),
            },
            schema=pa.schema([("k", pa.int64()), ("s", pa.string()), ("t", pa.int64())]),
        )
        sources.append(iter([t.slice(i, batch) for i in range(0, len(t), batch)]))
    chunks = list(merge_sorted(sources, ["k", "s"], "t"))
    got = [r for c in chunks for r in zip(*c.to_pydict().values(), strict=True)]
    assert got == sorted(everything)
    seen: set[tuple[int, str]] = set()
    for c in chunks:  # every key in exactly one chunk
        keys = set(zip(c["k"].to_pylist(), c["s"].to_pylist(), strict=True))
        assert not keys & seen
        seen |= keys


def test_sort_buffer_spills_and_merges_in_arrival_order() -> None:
    options = BufferOptions(size=512, spillable=True, fan_in=2)
    rng = random.Random(3)
    with SortBuffer(["k"], options) as buf:
        fed = []
        for _ in range(40):
            ks = [rng.randrange(30) for _ in range(rng.randrange(1, 20))]
            buf.add(((), 0), pa.table({"k": pa.array(ks, pa.int32())}))
            fed += ks
            assert buf.in_memory <= options.size  # spilled back under the budget
        assert buf.spills > 2
        out = pa.concat_tables(list(buf.drain(((), 0))))
    assert out["k"].to_pylist() == sorted(fed)
    arrivals = list(zip(out["k"].to_pylist(), out[ARRIVAL].to_pylist(), strict=True))
    assert arrivals == sorted(arrivals)  # same key: arrival order
    assert sorted(out[ARRIVAL].to_pylist()) == list(range(len(fed)))


def _rows(seed: int, n: int, keys: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "k": rng.randrange(keys),
            "s": rng.choice([None, "x", "yy", "zzz" * rng.randrange(4)]),
            "v": rng.choice([None, rng.randrange(-50, 50)]),
            "q": rng.randrange(4),
        }
        for _ in range(n)
    ]


def _write(
    table: FileStoreTable, batches: list[list[dict[str, Any]]], kind: RowKind = RowKind.INSERT
) -> DataWriter:
    data = [pa.Table.from_pylist(b, schema=ROW.to_arrow()) for b in batches]
    if isinstance(table.kind, PkRaw):
        return write_pk_dv(table, data, kind)
    writer = DataWriter(pk_write_spec(table, kind))
    table.commit(writer.write_batches(data))
    return writer


def _merged(table: FileStoreTable) -> list[tuple[Any, ...]]:
    """The table's rows: every file's versions (minus DVs) merged by the table's engine."""
    table = table.refresh()
    refs = table.deletion_files()
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    parts = []
    for e in table.scan_files():
        ref = refs.get(e.file.file_name)
        dv = None
        if ref is not None:
            from lakeskip.index.primitives.roaring import serialize_bitmap

            dv = serialize_bitmap(table.read_deletion_vector(ref, e.file.row_count))
        parts.append(read_versions(spec, table.data_file_path(e), dv))
    kv = pa.concat_tables(parts)
    out = MergeEngine.for_schema(table.schema).merge_versions(
        kv, ["k"], SEQUENCE_NUMBER, VALUE_KIND
    )
    return sorted(tuple(r[c] for c in ROW.names) for r in out.to_pylist())


def _model(engine: str, statements: list[list[dict[str, Any]]]) -> list[tuple[Any, ...]]:
    """Latest-row-per-key style model of the engines under test (arrival = sequence)."""
    state: dict[int, dict[str, Any]] = {}
    for stmt in statements:
        for r in stmt:
            old = state.get(r["k"])
            if engine == "deduplicate" or old is None:
                state[r["k"]] = dict(r)
            elif engine == "partial-update":
                state[r["k"]] = {c: (r[c] if r[c] is not None else old[c]) for c in r}
            elif engine == "aggregation":  # v: sum, the others: last_non_null_value
                new = {c: (r[c] if r[c] is not None else old[c]) for c in r}
                if old["v"] is not None and r["v"] is not None:
                    new["v"] = old["v"] + r["v"]
                state[r["k"]] = new
            elif engine == "first-row":
                pass
    return sorted(tuple(r[c] for c in ROW.names) for r in state.values())


ENGINES = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row"},
    "deletion-vectors": {"deletion-vectors.enabled": "true"},
    "sequence-field": {"sequence.field": "q"},
}


def test_tiny_write_buffer_writes_what_an_unbounded_one_does(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    statements = [
        [r for i in range(3) for r in _rows(10 * s + i, 150, 60)] for s in range(3)
    ]  # 3 statements of 3 batches each, many versions per key within a statement
    for name, engine_opts in ENGINES.items():
        got = {}
        for size, opts in (("tiny", TINY), ("huge", HUGE)):
            table = cat.create_table(
                f"default.{name.replace('-', '_')}_{size}",
                ROW,
                options={"primary-key": "k", "bucket": "2", **engine_opts, **opts},
            )
            for stmt in statements:
                writer = _write(table.refresh(), [stmt[i : i + 150] for i in (0, 150, 300)])
                assert writer.sort is not None
                if size == "tiny":
                    assert writer.sort.spills > 0, name
                    # the budget plus one input batch (added before the spill)
                    assert writer.sort.peak <= 2048 + 3 * 150 * 64, name
                else:
                    assert writer.sort.spills == 0
            got[size] = _merged(table)
        assert got["tiny"] == got["huge"], name
        if name in ("deduplicate", "partial-update", "aggregation", "deletion-vectors"):
            model = "deduplicate" if name == "deletion-vectors" else name
            assert got["tiny"] == _model(model, statements), name
        if name == "sequence-field":  # per key the largest q; ties: the later row
            want: dict[int, tuple[Any, ...]] = {}
            for stmt in statements:
                for r in stmt:
                    old = want.get(r["k"])
                    if old is None or r["q"] >= old[3]:
                        want[r["k"]] = tuple(r[c] for c in ROW.names)
            assert got["tiny"] == sorted(want.values())
        if name == "first-row":
            first: dict[int, tuple[Any, ...]] = {}
            for stmt in statements:
                for r in stmt:
                    first.setdefault(r["k"], tuple(r[c] for c in ROW.names))
            assert got["tiny"] == sorted(first.values())


def test_not_spillable_flushes_level_zero_files(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    table = cat.create_table(
        "default.t",
        ROW,
        options={
            "primary-key": "k",
            "bucket": "1",
            "write-buffer-size": "2 kb",
            "write-buffer-spillable": "false",
        },
    )
    stmt = _rows(1, 400, 80)
    writer = _write(table, [stmt[i : i + 50] for i in range(0, 400, 50)])
    assert writer.sort is not None and writer.sort.spills == 0
    files = table.refresh().scan_files()
    assert len(files) > 1 and {e.file.level for e in files} == {0}
    assert _merged(table) == _model("deduplicate", [stmt])


def test_spill_files_go_with_the_buffer() -> None:
    import gc
    import os

    buf = SortBuffer(["k"], BufferOptions(size=64, spillable=True, fan_in=2))
    for i in range(5):
        buf.add(((), 0), pa.table({"k": pa.array(range(i, i + 20), pa.int32())}))
    assert buf.spills and buf._dir is not None and os.listdir(buf._dir)
    where = buf._dir
    del buf  # a failed task never calls close
    gc.collect()
    assert not os.path.exists(where)
    with SortBuffer(["k"], BufferOptions(size=64, spillable=True, fan_in=2)) as closed:
        closed.add(((), 0), pa.table({"k": pa.array(range(40), pa.int32())}))
        where = closed._dir
    assert where is not None and not os.path.exists(where)
