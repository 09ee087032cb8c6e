"""Several processes appending to one table at once: every commit lands, counts are exact."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lakeskip.catalog import Catalog
from lakeskip.types import BIGINT, INT, RowType

# processes forked per test (or moto's S3 server): make test runs it, make test-unit does not
pytestmark = pytest.mark.processes

WRITERS = 4
COMMITS = 25
ROWS_PER_COMMIT = 3

WORKER = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    import pyarrow.parquet as pq
    from lakeskip.catalog import Catalog, FileKind, ManifestEntry, collect_stats
    from lakeskip.catalog import make_data_file_meta

    warehouse, writer, commits, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    table = Catalog(warehouse).get_table("db.t")
    rt = table.schema.row_type
    for c in range(commits):
        base = (writer * commits + c) * rows
        data = pa.table({"id": list(range(base, base + rows)), "writer": [writer] * rows},
                        schema=rt.to_arrow())
        name = table.new_data_file_name()
        path = f"{table.path}/{table.partition_path(())}/{name}"
        with table.file_io.open_output(path) as out:
            pq.write_table(data, out)
        stats, cols = collect_stats(data, rt, "full")
        meta = make_data_file_meta(name, table.file_io.file_size(path), rows, stats, cols,
                                   table.schema.id, None, ())
        snap = table.commit([ManifestEntry(FileKind.ADD, (), 0, -1, meta)])
        assert snap is not None
        print(snap.id, flush=True)
    """
)


def test_concurrent_appends_from_several_processes(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    cat = Catalog(warehouse)
    cat.create_database("db")
    cat.create_table(
        "db.t",
        RowType.of(("id", BIGINT), ("writer", INT)),
        # default back-off; more retries than Paimon's 10 so a busy CI box cannot flake
        options={"commit.max-retries": "50"},
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, warehouse, str(w), str(COMMITS), str(ROWS_PER_COMMIT)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    published: list[int] = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"writer failed: {err[-2000:]}"
        published += [int(x) for x in out.split()]
    total = WRITERS * COMMITS
    assert sorted(published) == list(range(1, total + 1)), (
        "every commit got its own snapshot id, none lost or duplicated"
    )
    table = cat.get_table("db.t")
    snaps = table.list_snapshots()
    assert [s.id for s in snaps] == list(range(1, total + 1))
    assert [s.total_record_count for s in snaps] == [
        i * ROWS_PER_COMMIT for i in range(1, total + 1)
    ], "total record counts grow by exactly one commit each"
    assert all(s.delta_record_count == ROWS_PER_COMMIT for s in snaps)
    files = table.scan_files()
    assert len(files) == total, f"expected {total} live files, got {len(files)}"
    assert sum(e.file.row_count for e in files) == total * ROWS_PER_COMMIT
    manifests = {n.name for n in table.file_io.list_dir(f"{table.path}/manifest")}
    referenced = set()
    for s in snaps[-1:]:
        referenced |= {s.base_manifest_list, s.delta_manifest_list}
        referenced |= {m.file_name for m in table.manifest_metas(s)}
    assert referenced <= manifests, "every referenced manifest exists"
