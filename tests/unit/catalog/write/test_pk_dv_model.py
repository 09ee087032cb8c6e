"""The streamed deletion-vector write of primary-key tables against a model (issue 32): random
upserts, deletes and MERGE statements (rows of a statement in several input batches, keys
repeated) on deduplicate and first-row tables, written with a buffer of a few hundred bytes
(every bucket spills sorted runs and its new rows; files roll at a tiny target size), give
the rows a latest-row-per-key (first-row: first-row-per-key) model says, each key live once
in files at level > 0, every file sorted by key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.examples import unit_examples
from tests.pk_tables import write_pk_dv

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.pk.primary_key import RowKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.pk_dv_write import DELETE_FLAG, PkDvWriter
from lakeskip.types import INT, STRING, RowType

ROW = RowType.of(("k", INT), ("v", STRING))
TINY = {
    "write-buffer-size": "300 b",
    "local-sort.max-num-file-handles": "2",
    "target-file-size": "1 kb",
}

_statement = st.tuples(
    st.sampled_from(["upsert", "upsert", "delete", "merge"]),
    st.lists(
        st.tuples(st.integers(0, 60), st.text("abc", max_size=3), st.booleans()),
        min_size=1,
        max_size=80,
    ),
    st.integers(1, 4),  # input batches
)


def _write(
    table: FileStoreTable, kind: str, rows: list[tuple[int, str, bool]], parts: int
) -> PkDvWriter:
    table = table.refresh()
    value_kind = RowKind.DELETE if kind == "delete" else RowKind.INSERT
    columns: dict[str, Any] = {"k": [r[0] for r in rows], "v": [r[1] for r in rows]}
    schema = ROW.to_arrow()
    if kind == "merge":
        columns[DELETE_FLAG] = [r[2] for r in rows]
        schema = schema.append(pa.field(DELETE_FLAG, pa.bool_()))
    data = pa.table(columns, schema=schema)
    step = -(-len(rows) // parts)
    batches = [data.slice(i, step) for i in range(0, len(rows), step)]
    writer = write_pk_dv(table, batches, value_kind, mixed=kind == "merge")
    return writer


def _live(table: FileStoreTable) -> dict[int, str]:
    """The rows a raw (non-merging) DV read gives; checks each key is live once, files are
    at level > 0 with no retract rows and sorted by key."""
    table = table.refresh()
    refs = table.deletion_files()
    out: dict[int, str] = {}
    for e in table.scan_files():
        assert e.file.level > 0 and not e.file.delete_row_count
        data = pq.read_table(table.data_file_path(e))
        keys = data["_KEY_k"].to_pylist()
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        assert data.num_rows == e.file.row_count
        ref = refs.get(e.file.file_name)
        if ref is not None:
            dead = table.read_deletion_vector(ref, e.file.row_count)
            keep = [i not in dead for i in range(data.num_rows)]
            data = data.filter(pa.array(keep))
        assert pc.all(pc.equal(data["_VALUE_KIND"], 0)).as_py() in (True, None)
        for k, v in zip(data["k"].to_pylist(), data["v"].to_pylist(), strict=True):
            assert k not in out, f"key {k} live twice"
            out[k] = v
    return out


def _model(
    first_row: bool, statements: list[tuple[str, list[tuple[int, str, bool]], int]]
) -> dict[int, str]:
    state: dict[int, str] = {}
    for kind, rows, _ in statements:
        for k, v, flag in rows:
            if kind == "delete" or (kind == "merge" and flag):
                if not first_row:
                    state.pop(k, None)
            elif first_row:
                state.setdefault(k, v)
            else:
                state[k] = v
    return state


@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
@settings(
    max_examples=unit_examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(statements=st.lists(_statement, min_size=1, max_size=7))
def test_streamed_dv_write_equals_the_model(
    tmp_path_factory: pytest.TempPathFactory,
    engine: str,
    statements: list[tuple[str, list[tuple[int, str, bool]], int]],
) -> None:
    first_row = engine == "first-row"
    if first_row:  # a first-row table keeps the first version: DELETE marks nothing
        statements = [("upsert", rows, parts) for _, rows, parts in statements]
    cat = Catalog(str(tmp_path_factory.mktemp("dvmodel") / "wh"))
    # first-row tables are read raw too (without DVs: nothing is ever deleted)
    raw = {"merge-engine": "first-row"} if first_row else {"deletion-vectors.enabled": "true"}
    options = {"primary-key": "k", "bucket": "2", **raw, **TINY}
    table = cat.create_table("default.t", ROW, options=options)
    spilled = 0
    for kind, rows, parts in statements:
        writer = _write(table, kind, rows, parts)
        assert writer.sort is not None
        spilled += writer.sort.spills
    assert _live(table) == _model(first_row, statements)
    if max(len(r) for _, r, _ in statements) > 40:
        assert spilled > 0  # the tiny buffer spilled (300 b: about 15 rows)


def test_new_rows_past_half_the_buffer_spool_to_disk_and_merge_with_the_pick(
    tmp_path: Path,
) -> None:
    """Level 1 taken and many new rows: the spool goes to disk and is merged, a batch at a
    time, with the live rows of the runs universal compaction picks."""
    cat = Catalog(str(tmp_path / "wh"))
    options = {"primary-key": "k", "bucket": "1", "deletion-vectors.enabled": "true", **TINY}
    table = cat.create_table("default.t", ROW, options=options)
    statements: list[tuple[str, list[tuple[int, str, bool]], int]] = []
    for i in range(7):  # levels 5 .. 1, then merges with the pick
        rows = [((k * 7 + i) % 400, f"{i}", False) for k in range(300)]
        statements.append(("upsert", rows, 3))
        _write(table, "upsert", rows, 3)
        assert _live(table) == _model(False, statements), i
    files = table.refresh().scan_files()
    assert len(files) > len({e.file.level for e in files})  # runs rolled into several files
