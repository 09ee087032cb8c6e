"""Interop with pypaimon 2.1 in both directions (its own virtualenv: it pins pyarrow<20).

The virtualenv is ``<repo>/.venv-interop``, built on demand (``python3 -m venv`` +
``pip install pypaimon==2.1.0``). The tests are skipped, with the reason, only when it cannot
be built (no network, no index).
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeskip.catalog import (
    Catalog,
    CommitKind,
    FileKind,
    FileStoreTable,
    ManifestEntry,
    collect_stats,
    file_column_stats,
    make_data_file_meta,
)
from lakeskip.catalog.options import stats_mode
from lakeskip.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP,
    RowType,
    decimal_type,
    to_internal,
)

pytestmark = pytest.mark.interop

REPO = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("LAKESKIP_INTEROP_VENV", REPO / ".venv-interop"))
PYPAIMON = "pypaimon==2.1.0"


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def _has_pypaimon() -> bool:
    py = _venv_python()
    if not py.exists():
        return False
    probe = subprocess.run([str(py), "-c", "import pypaimon"], capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="session")
def pypaimon_python() -> str:
    """Path of a Python with pypaimon 2.1; builds the virtualenv if needed."""
    if not _has_pypaimon():
        base = os.environ.get("LAKESKIP_INTEROP_PYTHON", "python3")
        steps = [
            [base, "-m", "venv", str(VENV)],
            [str(_venv_python()), "-m", "pip", "install", "--quiet", PYPAIMON],
        ]
        for cmd in steps:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                pytest.skip(
                    f"cannot build the pypaimon virtualenv at {VENV} ({' '.join(cmd[:3])} "
                    f"failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]})"
                )
        if not _has_pypaimon():
            pytest.skip(f"{PYPAIMON} installed into {VENV} but cannot be imported")
    return str(_venv_python())


def run_pypaimon(python: str, script: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """Run a script under pypaimon (in ``env``, else this process's environment); it prints
    one JSON document."""
    r = subprocess.run(
        [python, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert r.returncode == 0, f"pypaimon script failed:\n{r.stderr[-3000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


# -- lakeskip writes, pypaimon reads -----------------------------------------------------

ROW = RowType.of(
    ("id", BIGINT),
    ("name", STRING),
    ("score", DOUBLE),
    ("qty", INT),
    ("flag", BOOLEAN),
    ("price", decimal_type(10, 2)),
    ("day", DATE),
    ("ts", TIMESTAMP),
    ("dt", STRING),
    ("h", INT),
)


def _rows(ids: range, dt: str, h: int) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "name": f"n{i}" * (i % 3 + 1),
            "score": i / 3,
            "qty": i % 5 if i % 4 else None,
            "flag": i % 2 == 0,
            "price": decimal.Decimal(i).scaleb(-2),
            "day": datetime.date(2024, 1, 1) + datetime.timedelta(days=i),
            "ts": datetime.datetime(2024, 1, 1, 12) + datetime.timedelta(seconds=i, microseconds=7),
            "dt": dt,
            "h": h,
        }
        for i in ids
    ]


def _write(t: FileStoreTable, rows: list[dict[str, Any]], part: tuple[Any, ...]) -> ManifestEntry:
    arrow = pa.Table.from_pylist(rows, schema=ROW.to_arrow())
    name = t.new_data_file_name()
    path = f"{t.path}/{t.partition_path(part)}/{name}"
    with t.file_io.open_output(path) as out:
        pq.write_table(arrow, out)
    stats, cols = collect_stats(arrow, ROW, stats_mode(t.schema.options))
    meta = make_data_file_meta(
        name, t.file_io.file_size(path), arrow.num_rows, stats, cols, t.schema.id, None, ()
    )
    return ManifestEntry(FileKind.ADD, part, 0, -1, meta)


READ_SCRIPT = """
    import json, sys
    from pypaimon import CatalogFactory
    cat = CatalogFactory.create({"warehouse": sys.argv[1]})
    t = cat.get_table("db.t")
    rb = t.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    pb = rb.new_predicate_builder()
    frb = t.new_read_builder().with_filter(pb.equal("id", int(sys.argv[2])))
    pruned = len(frb.new_scan().plan().splits())
    print(json.dumps({"rows": rows, "splits_for_id": pruned}, default=str))
"""


def _jsonish(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, default=str, sort_keys=True) for r in rows)


def test_pypaimon_reads_a_lakeskip_table(pypaimon_python: str, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", ROW, partition_keys=["dt", "h"])
    a = _write(t, _rows(range(0, 5), "2024-01-01", 1), ("2024-01-01", 1))
    b = _write(t, _rows(range(5, 9), "2024-01-02", 2), ("2024-01-02", 2))
    c = _write(t, _rows(range(9, 12), "2024-01-02", 3), ("2024-01-02", 3))
    t.commit([a])
    t.commit([b, c])
    a2 = _write(t, _rows(range(0, 5), "2024-01-01", 1), ("2024-01-01", 1))
    t.commit([a2], deleted=[a], kind=CommitKind.COMPACT)  # same rows, new file
    b2 = _write(t, _rows(range(100, 102), "2024-01-02", 2), ("2024-01-02", 2))
    t.commit([b2], kind=CommitKind.OVERWRITE, overwrite_partitions=[("2024-01-02", 2)])
    expected = (
        _rows(range(0, 5), "2024-01-01", 1)
        + _rows(range(9, 12), "2024-01-02", 3)
        + _rows(range(100, 102), "2024-01-02", 2)
    )
    got = run_pypaimon(pypaimon_python, READ_SCRIPT, wh, "10")
    assert _jsonish(got["rows"]) == _jsonish(expected), "pypaimon must see exactly our rows"
    # our truncate(16) stats are decodable by pypaimon and prune: id=10 lives in one file
    assert got["splits_for_id"] == 1, f"pypaimon planned {got['splits_for_id']} splits for id=10"
    # a shared warehouse: pypaimon appends to our table on top of our snapshots, we read it
    run_pypaimon(pypaimon_python, APPEND_SCRIPT, wh)
    t = cat.get_table("db.t")
    snap = t.latest_snapshot()
    assert snap is not None and snap.id == 5 and snap.total_record_count == len(expected) + 1
    assert sum(e.file.row_count for e in t.scan_files()) == len(expected) + 1


APPEND_SCRIPT = """
    import datetime, decimal, json, sys
    import pyarrow as pa
    from pypaimon import CatalogFactory
    t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table("db.t")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()),
                        ("qty", pa.int32()), ("flag", pa.bool_()), ("price", pa.decimal128(10, 2)),
                        ("day", pa.date32()), ("ts", pa.timestamp("us")), ("dt", pa.string()),
                        ("h", pa.int32())])
    row = dict(id=500, name="p", score=1.0, qty=1, flag=True, price=decimal.Decimal("1.00"),
               day=datetime.date(2024, 2, 1), ts=datetime.datetime(2024, 2, 1), dt="2024-01-01",
               h=1)
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.Table.from_pylist([row], schema=schema))
    c = wb.new_commit()
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    print(json.dumps("ok"))
"""


# -- pypaimon writes, lakeskip reads -----------------------------------------------------

WRITE_SCRIPT = """
    import json, sys, datetime, decimal
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema
    wh, mode = sys.argv[1], sys.argv[2]
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", False)
    pa_schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()),
                           ("day", pa.date32()), ("price", pa.decimal128(10, 2)),
                           ("dt", pa.string())])
    options = {} if mode == "default" else {"metadata.stats-mode": mode}
    cat.create_table("db.t", Schema.from_pyarrow_schema(pa_schema, partition_keys=["dt"],
                                                        options=options), False)
    t = cat.get_table("db.t")
    out = []
    for commit in range(3):
        rows = [{"id": commit * 10 + i, "name": None if i == 2 else f"name-{commit}-{i}" * 3,
                 "score": i * 1.5, "day": datetime.date(2024, 1, 1 + i),
                 "price": decimal.Decimal(i * 7).scaleb(-2), "dt": f"d{commit % 2}"}
                for i in range(4)]
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(pa.Table.from_pylist(rows, schema=pa_schema))
        c = wb.new_commit()
        c.commit(w.prepare_commit())
        w.close()
        c.close()
        out += rows
    print(json.dumps(out, default=str))
"""


@pytest.mark.parametrize("mode", ["full", "default"])
def test_lakeskip_reads_a_pypaimon_table(pypaimon_python: str, tmp_path: Path, mode: str) -> None:
    wh = str(tmp_path / "wh")
    written = run_pypaimon(pypaimon_python, WRITE_SCRIPT, wh, mode)
    t = Catalog(wh).get_table("db.t")
    assert t.schema.partition_keys == ("dt",)
    snap = t.latest_snapshot()
    assert snap is not None and snap.id == 3 and snap.total_record_count == 12
    entries = t.scan_files(snap)
    rows: list[dict[str, Any]] = []
    with_stats = 0
    for e in entries:
        with t.file_io.open_input(t.data_file_path(e)) as f:
            data = pq.read_table(f)
        assert data.num_rows == e.file.row_count
        assert e.partition == (data.column("dt")[0].as_py(),), "partition decoded from BinaryRow"
        rows += data.to_pylist()
        stats = file_column_stats(e.file, t.schema_by_id(e.file.schema_id), t.schema)
        if mode == "default":
            assert all(lo is None and hi is None for lo, hi, _ in stats.values()), (
                f"pypaimon's default stats-mode none: no min/max, got {stats}"
            )
            continue
        assert stats, "stats-mode full: every column has stats"
        with_stats += 1
        for f in t.schema.row_type:
            if f.name not in stats:
                continue
            lo, hi, nulls = stats[f.name]
            values = [to_internal(f.type, v) for v in data.column(f.name).to_pylist()]
            present = [v for v in values if v is not None]
            if nulls is not None:
                assert nulls == len(values) - len(present), f"null count of {f.name}"
            if present and lo is not None:
                assert lo == min(present) and hi == max(present), (
                    f"{f.name}: stats ({lo!r}, {hi!r}) vs data ({min(present)!r}, {max(present)!r})"
                )
    assert _jsonish(rows) == _jsonish(written), "lakeskip must see exactly pypaimon's rows"
    if mode == "full":
        assert with_stats == len(entries)
