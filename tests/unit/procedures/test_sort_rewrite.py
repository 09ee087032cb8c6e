"""Curve-sort compaction in plain tasks: the rows stay exactly the same, every new file is
sorted by the key, and the files of a partition cover disjoint, ordered key ranges."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeskip.catalog import Catalog
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import write_all
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.procedures.base import SortSpec
from lakeskip.procedures.compact import Compact
from lakeskip.procedures.sort_rewrite import key_bytes, rewrite_sorted_in_tasks
from lakeskip.sort import sort_keys
from lakeskip.sort.ranked import column_bounds, ranked_keys
from lakeskip.types import RowType, parse_sql_type

T = TypeVar("T")
R = TypeVar("R")


class LocalExecutor:
    """Runs every task in this process, in order (the Spark executor runs them as tasks)."""

    def __init__(self, parallelism: int = 1) -> None:
        self.calls: list[tuple[str, int]] = []
        self.parallelism = parallelism

    def map(self, fn: Callable[[T], R], items: Sequence[T], description: str) -> list[R]:
        self.calls.append((description, len(items)))
        return [fn(i) for i in items]

    def rewrite_sorted(self, table: Any, files: Any, sort: Any) -> list[ManifestEntry]:
        raise AssertionError("curve sorts must not go through the Spark shuffle")


ROW = RowType.of(
    ("id", parse_sql_type("BIGINT")),
    ("country", parse_sql_type("STRING")),
    ("price", parse_sql_type("BIGINT")),
    ("score", parse_sql_type("DOUBLE")),
    ("dt", parse_sql_type("STRING")),
    ("tags", parse_sql_type("MAP<STRING, STRING>")),
)


def _rows(table: FileStoreTable, entries: Sequence[ManifestEntry]) -> list[pa.Table]:
    return [pq.read_table(table.data_file_path(e)) for e in entries]


def _key_of(t: pa.Table, sort: SortSpec, sample: pa.Table | None = None) -> np.ndarray:  # type: ignore[type-arg]
    """The rewrite's key of every row of ``t``; rank keys take their boundaries from
    ``sample`` (a small partition is sampled whole, so the boundaries are its rows')."""
    types = [ROW.field(c).type for c in sort.columns]
    if sort.curve_keys == "rank":
        source = sample if sample is not None else t
        bounds = column_bounds([source[c] for c in sort.columns], types)
        return key_bytes(ranked_keys([t[c] for c in sort.columns], types, bounds, sort.strategy))
    keys = sort_keys([t[c] for c in sort.columns], types, sort.strategy, 8)
    return key_bytes(keys)


def _canonical(t: pa.Table) -> Counter[str]:
    return Counter(repr(r) for r in t.to_pylist())


def _check(
    table: FileStoreTable,
    old: list[ManifestEntry],
    sort: SortSpec,
    task_bytes: int | None = 1,
    executor: LocalExecutor | None = None,
) -> list[ManifestEntry]:
    before = pa.concat_tables(_rows(table, old))
    executor = executor if executor is not None else LocalExecutor()
    new = rewrite_sorted_in_tasks(table, old, sort, executor, task_bytes=task_bytes)
    rounds = ["sample", "sort", "write"] if sort.curve_keys == "rank" else ["sort", "write"]
    assert [d for d, _ in executor.calls] == [
        f"compact {table.identifier} ({sort.strategy}): {r}" for r in rounds
    ]
    files = _rows(table, new)
    after = pa.concat_tables(files) if files else before.slice(0, 0)
    assert after.num_rows == before.num_rows
    assert _canonical(after) == _canonical(before), "compaction must keep exactly the same rows"
    assert all(e.file.level == 1 for e in new)
    assert sum(e.file.row_count for e in new) == before.num_rows
    by_partition: dict[tuple[Any, ...], list[np.ndarray]] = {}  # type: ignore[type-arg]
    partition_rows = {
        p: pa.concat_tables([t for e, t in zip(new, files, strict=True) if e.partition == p])
        for p in {e.partition for e in new}
    }
    for e, t in zip(new, files, strict=True):
        keys = _key_of(t, sort, partition_rows[e.partition])
        assert (keys[:-1] <= keys[1:]).all(), f"{e.file.file_name} is not sorted by the key"
        by_partition.setdefault(tuple(e.partition), []).append(keys)
    for ranges in by_partition.values():
        ranges.sort(key=lambda k: k[0])
        for a, b in itertools.pairwise(ranges):
            assert a[-1] < b[0], "files of one partition must hold disjoint key ranges"
    assert not any(p.name.startswith(".sort-tmp") for p in Path(table.path).iterdir()), (
        "spill files must be removed"
    )
    return new


def _table(catalog: Catalog, target: str, partitioned: bool = False) -> FileStoreTable:
    return catalog.create_table(
        "t" if not partitioned else "p",
        ROW,
        partition_keys=["dt"] if partitioned else [],
        options={"target-file-size": target, "file-index.bloom-filter.columns": "country"},
    )


def _write(table: FileStoreTable, data: pa.Table, pieces: int) -> list[ManifestEntry]:
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    step = max(1, -(-data.num_rows // pieces))
    entries = []
    for lo in range(0, data.num_rows, step):
        entries += write_all(spec, [data.slice(lo, step)])
    table.commit(entries, kind=CommitKind.APPEND)
    return entries


def _data(n: int, seed: int, countries: int = 30) -> pa.Table:
    rng = np.random.default_rng(seed)
    country = [
        None if i % 17 == 0 else f"C{x}" for i, x in enumerate(rng.integers(0, countries, n))
    ]
    price = [None if i % 13 == 0 else int(x) for i, x in enumerate(rng.integers(-500, 500, n))]
    score = rng.normal(size=n)
    score[::11] = np.nan
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "country": pa.array(country, pa.string()),
            "price": pa.array(price, pa.int64()),
            "score": pa.array(score),
            "dt": pa.array([f"d{i % 3}" for i in range(n)]),
            "tags": pa.array(
                [[("k", str(i % 5))] for i in range(n)], pa.map_(pa.string(), pa.string())
            ),
        }
    )


@pytest.mark.parametrize("curve", ["rank", "paimon"])
@pytest.mark.parametrize("strategy", ["zorder", "hilbert"])
@pytest.mark.parametrize("grouping", ["one per task", "grouped", "default"])
def test_many_ranges_from_many_files(
    tmp_path: Path, strategy: str, grouping: str, curve: str
) -> None:
    table = _table(Catalog(str(tmp_path / "wh")), "8 kb")
    old = _write(table, _data(20_000, 1), pieces=7)
    largest = max(e.file.file_size for e in old)
    task_bytes = {"one per task": 1, "grouped": 2 * largest + 1, "default": None}[grouping]
    executor = LocalExecutor()
    sort = SortSpec(strategy, ("country", "price"), 8, curve)
    new = _check(table, old, sort, task_bytes, executor)
    assert len(new) > 4, "a small target file size should give several ranges"
    (_, maps), (_, reduces) = executor.calls[-2:]
    if task_bytes == 1:
        assert (maps, reduces) == (len(old), len(new)), "one task per file and per range"
    elif task_bytes is None:
        # a small table on one core: about two tasks per round (greedy grouping may give 3)
        assert 2 <= maps <= 3 and 2 <= reduces <= 3, f"{maps} map, {reduces} reduce tasks"
    else:
        assert 1 < maps < len(old) and 1 < reduces < len(new), "files and ranges grouped"


def test_partitions_are_sorted_separately(tmp_path: Path) -> None:
    table = _table(Catalog(str(tmp_path / "wh")), "16 kb", partitioned=True)
    old = _write(table, _data(9_000, 2), pieces=4)
    new = _check(table, old, SortSpec("zorder", ("price", "score"), 8))
    assert {e.partition for e in new} == {e.partition for e in old}


def test_all_keys_equal_gives_one_range(tmp_path: Path) -> None:
    table = _table(Catalog(str(tmp_path / "wh")), "4 kb")
    data = _data(5_000, 3, countries=1)
    data = data.set_column(2, "price", pa.array([7] * data.num_rows, pa.int64()))
    data = data.set_column(1, "country", pa.array(["C0"] * data.num_rows))
    new = _check(table, _write(table, data, pieces=3), SortSpec("zorder", ("country", "price"), 8))
    assert len(new) == 1, "equal keys cannot be split across files"


def test_rows_with_equal_keys_keep_their_input_order(tmp_path: Path) -> None:
    table = _table(Catalog(str(tmp_path / "wh")), "1 gb")
    data = _data(3_000, 4, countries=2)
    old = _write(table, data, pieces=1)
    sort = SortSpec("zorder", ("country",), 8, "paimon")
    (entry,) = _check(table, old, sort)
    out = pq.read_table(table.data_file_path(entry))
    expected = data.take(pc.sort_indices(_key_array(data, sort)))
    assert out["id"].to_pylist() == expected["id"].to_pylist()


def _key_array(t: pa.Table, sort: SortSpec) -> pa.Array:
    types = [ROW.field(c).type for c in sort.columns]
    return sort_keys([t[c] for c in sort.columns], types, sort.strategy, 8)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(1, 3_000),
    pieces=st.integers(1, 6),
    countries=st.integers(1, 40),
    seed=st.integers(0, 2**16),
    target_kb=st.integers(1, 64),
    task_bytes=st.sampled_from([1, 5_000, 50_000, None]),
    curve=st.sampled_from(["rank", "paimon"]),
)
def test_random_tables(
    tmp_path: Path,
    n: int,
    pieces: int,
    countries: int,
    seed: int,
    target_kb: int,
    task_bytes: int | None,
    curve: str,
) -> None:
    wh = tmp_path / f"wh-{seed}-{n}-{pieces}-{countries}-{target_kb}-{task_bytes}-{curve}"
    table = _table(Catalog(str(wh)), f"{target_kb} kb")
    _check(
        table,
        _write(table, _data(n, seed, countries), pieces),
        SortSpec("zorder", ("country", "price"), 8, curve),
        task_bytes,
    )


def test_key_bytes_orders_like_arrow_binary_sort() -> None:
    rng = np.random.default_rng(0)
    values = [bytes(r) for r in rng.integers(0, 3, (2_000, 5), dtype=np.uint8)]  # many NULs
    arr = pa.array(values, pa.binary())
    assert np.argsort(key_bytes(arr), kind="stable").tolist() == pc.sort_indices(arr).to_pylist()
    fixed = arr.cast(pa.binary(5))
    assert np.argsort(key_bytes(fixed), kind="stable").tolist() == pc.sort_indices(arr).to_pylist()
    with pytest.raises(ValueError, match="same non-zero width"):
        key_bytes(pa.array([b"a", b"bc"]))


class _FailingExecutor(LocalExecutor):
    """Runs the map round, then fails the write round as a crashed task would."""

    def map(self, fn: Callable[[T], R], items: Sequence[T], description: str) -> list[R]:
        if description.endswith(": write"):
            raise RuntimeError("task failed")
        return super().map(fn, items, description)


@pytest.mark.parametrize("via", ["rewrite", "sys.compact"])
def test_a_failed_rewrite_removes_its_spill_files(tmp_path: Path, via: str) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    table = _table(catalog, "8 kb")
    old = _write(table, _data(4_000, 5), pieces=3)
    snapshot = table.latest_snapshot()
    with pytest.raises(RuntimeError, match="task failed"):
        if via == "rewrite":
            rewrite_sorted_in_tasks(
                table, old, SortSpec("zorder", ("price",), 8), _FailingExecutor()
            )
        else:
            Compact().run(
                catalog=catalog,
                executor=_FailingExecutor(),
                arguments={"table": "default.t", "order_strategy": "zorder", "order_by": "price"},
                default_database="default",
            )
    spill = [p.name for p in Path(table.path).iterdir() if p.name.startswith(".sort-tmp")]
    assert not spill, "the spill directory is removed when the rewrite fails"
    assert table.refresh().latest_snapshot() == snapshot, "nothing committed"
