"""pyiceberg's side of ``bench/planning.py``: the same files as an Iceberg table, planned by
``Table.scan(row_filter).plan_files()``.

Run by ``bench/planning.py`` with the Python named by ``--pyiceberg-python`` (pyiceberg need
not share lakeskip's environment: ``pip install 'pyiceberg[sql-sqlite,pyarrow]'``). It builds
(once, in ``--dir``) a table whose manifests list N data files with the same per-file column
bounds and null counts as lakeskip's bench table (Iceberg has no bloom filters in its
manifests, so only the bounds prune), committed in the same batches (one manifest each),
then plans the same point lookup in a fresh process: catalog opened, manifests read from
disk. Prints one JSON object.

    python bench/planning_pyiceberg.py --dir /tmp/ice --files 100000 --user u23757
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def _user(i: int, total: int) -> str:
    return f"u{(i * 7919) % total}"


def build(path: str, files: int, rows: int, batch: int) -> float:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.conversions import to_bytes
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.schema import Schema
    from pyiceberg.typedef import Record
    from pyiceberg.types import LongType, NestedField, StringType

    Path(path).mkdir(parents=True, exist_ok=True)
    cat = SqlCatalog("b", uri=f"sqlite:///{path}/catalog.db", warehouse=f"file://{path}")
    cat.create_namespace("b")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "user_id", StringType(), required=False),
        NestedField(3, "status", StringType(), required=False),
    )
    table = cat.create_table("b.t", schema)
    total = files * rows
    t0 = time.perf_counter()
    for start in range(0, files, batch):
        with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
            for f in range(start, min(files, start + batch)):
                ids = range(f * rows, (f + 1) * rows)
                users = [_user(i, total) for i in ids]
                status = "A" if f % 50 == 0 else "B"
                append.append_data_file(
                    DataFile.from_args(
                        content=DataFileContent.DATA,
                        file_path=f"{path}/data/data-bench-{f}.parquet",
                        file_format=FileFormat.PARQUET,
                        partition=Record(),
                        record_count=rows,
                        file_size_in_bytes=1000,
                        value_counts={1: rows, 2: rows, 3: rows},
                        null_value_counts={1: 0, 2: 0, 3: 0},
                        lower_bounds={
                            1: to_bytes(LongType(), ids[0]),
                            2: to_bytes(StringType(), min(users)),
                            3: to_bytes(StringType(), status),
                        },
                        upper_bounds={
                            1: to_bytes(LongType(), ids[-1]),
                            2: to_bytes(StringType(), max(users)),
                            3: to_bytes(StringType(), status),
                        },
                    )
                )
        table = cat.load_table("b.t")
    return time.perf_counter() - t0


def plan(path: str, user: str) -> dict[str, float]:
    t0 = time.perf_counter()
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo

    t1 = time.perf_counter()
    c1 = time.process_time()
    cat = SqlCatalog("b", uri=f"sqlite:///{path}/catalog.db", warehouse=f"file://{path}")
    table = cat.load_table("b.t")
    tasks = list(table.scan(row_filter=EqualTo("user_id", user)).plan_files())
    t2 = time.perf_counter()
    return {
        "imports_s": t1 - t0,
        "plan_s": t2 - t1,
        "plan_cpu_s": time.process_time() - c1,
        "kept": len(tasks),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--files", type=int, required=True)
    ap.add_argument("--rows-per-file", type=int, default=20)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--user", required=True)
    ap.add_argument("--plan-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.plan_only:
        print(json.dumps(plan(args.dir, args.user)))
        return
    built = None
    if not Path(args.dir, "catalog.db").exists():
        built = build(args.dir, args.files, args.rows_per_file, args.batch)
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--dir",
            args.dir,
            "--files",
            str(args.files),
            "--user",
            args.user,
            "--plan-only",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout)
    result["build_s"] = built
    print(json.dumps(result))


if __name__ == "__main__":
    main()
