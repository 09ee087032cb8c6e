"""Concurrent-writer soak: separate OS processes commit to the same two tables for minutes.

    PYTHONPATH=$PWD/src:$PWD PATH=/work/main/.venv/bin:$PATH \\
        python bench/soak_commits.py --minutes 5 --processes 2 --threads 2

Issue 33's criterion: ``--processes`` × ``--threads`` writers (each process its own
SparkSession through ``lakeskip.connect``, ``local[1]``) issue random INSERT / DELETE /
UPDATE / MERGE / ``CALL sys.compact`` statements through ``Session.sql`` against an append
table and a 2-bucket primary-key table with deletion vectors, for ``--minutes``. Every
statement carries its own op id as the value it writes, and its effect is a pure function of
the table state it commits on, so the committed statements can be replayed.

Each statement's outcome (snapshot id it committed, or the error) is logged. At the end the
parent process checks, for each table:

* the share of statements that committed (the criterion asks ≥ 99 %);
* the committed snapshot ids are distinct and contiguous from the start snapshot to the latest;
* the table equals a replay of the committed statements in snapshot order;
* how contended the run was whatever the load (a loaded machine runs fewer, longer statements):
  the mean number of other commits that landed while a statement (a MERGE) ran;
* no file under the table is left that no snapshot references (``remove_orphan_files`` dry run
  with ``older_than`` = now, after every writer has exited): a failed or retried attempt left
  no trace.

Prints a summary and writes ``bench/results/soak-<timestamp>.json`` with the load average at
start and end (figures are taken on a loaded, shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PK = "soak_kv"
APPEND = "soak_a"
KINDS = ("insert", "delete", "update", "merge", "compact")
WEIGHTS = (30, 20, 20, 20, 10)
PK_KEYS = 40  # keys 0..39: writers overlap on keys and buckets
APPEND_IDS = 200


# ---------------------------------------------------------------- statements and their replay


def make_op(rng: random.Random, op_id: str) -> dict[str, Any]:
    """A random statement: table, kind and the parameters its SQL and replay are built from."""
    table = rng.choice((PK, APPEND))
    kind = rng.choices(KINDS, WEIGHTS)[0]
    domain = PK_KEYS if table == PK else APPEND_IDS
    op: dict[str, Any] = {"op": op_id, "table": table, "kind": kind}
    if kind in ("insert", "merge"):
        op["keys"] = sorted(rng.sample(range(domain), rng.randint(1, 3)))
    elif kind == "delete":
        op["lo"] = rng.randrange(domain)
        op["hi"] = op["lo"] + (2 if table == PK else 4)
    elif kind == "update":
        op["lo"] = rng.randrange(domain)
        op["hi"] = op["lo"] + (4 if table == PK else 9)
    return op


def op_sql(op: dict[str, Any]) -> str:
    t, kind, tag = op["table"], op["kind"], op["op"]
    key = "k" if t == PK else "id"
    if kind == "insert":
        return f"INSERT INTO {t} VALUES " + ", ".join(f"({k}, '{tag}')" for k in op["keys"])
    if kind == "delete":
        return f"DELETE FROM {t} WHERE {key} BETWEEN {op['lo']} AND {op['hi']}"
    if kind == "update":
        return f"UPDATE {t} SET v = '{tag}' WHERE {key} BETWEEN {op['lo']} AND {op['hi']}"
    if kind == "merge":
        source = " UNION ALL ".join(f"SELECT {k} AS {key}, '{tag}' AS v" for k in op["keys"])
        return (
            f"MERGE INTO {t} USING ({source}) s ON {t}.{key} = s.{key} "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
        )
    return f"CALL sys.compact(table => '{t}')"


def replay_pk(state: dict[int, str], op: dict[str, Any]) -> None:
    kind, tag = op["kind"], op["op"]
    if kind in ("insert", "merge"):
        state.update(dict.fromkeys(op["keys"], tag))
    elif kind == "delete":
        for k in range(op["lo"], op["hi"] + 1):
            state.pop(k, None)
    elif kind == "update":
        for k in range(op["lo"], op["hi"] + 1):
            if k in state:
                state[k] = tag


def replay_append(rows: list[list[Any]], op: dict[str, Any]) -> None:
    kind, tag = op["kind"], op["op"]
    if kind == "insert":
        rows.extend([k, tag] for k in op["keys"])
    elif kind == "delete":
        rows[:] = [r for r in rows if not op["lo"] <= r[0] <= op["hi"]]
    elif kind == "update":
        for r in rows:
            if op["lo"] <= r[0] <= op["hi"]:
                r[1] = tag
    elif kind == "merge":
        present = {r[0] for r in rows}
        for r in rows:
            if r[0] in op["keys"]:
                r[1] = tag
        rows.extend([k, tag] for k in op["keys"] if k not in present)


PK_START = dict.fromkeys(range(0, PK_KEYS, 2), "start")
APPEND_START = [[i, "start"] for i in range(0, APPEND_IDS, 5)]


# ---------------------------------------------------------------- writer process


def connect(warehouse: str) -> Any:
    import lakeskip

    return lakeskip.connect(
        warehouse,
        master="local[1]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
    )


def worker(args: argparse.Namespace) -> None:
    session = connect(args.warehouse)
    deadline = time.time() + args.minutes * 60
    log_path = Path(args.log)
    lock = threading.Lock()
    with log_path.open("a") as log:

        def thread_main(thread: int) -> None:
            rng = random.Random(f"{args.seed}-{args.worker}-{thread}")
            i = 0
            while time.time() < deadline:
                op = make_op(rng, f"p{args.worker}t{thread}-{i}")
                i += 1
                started = time.time()
                try:
                    row = session.sql(op_sql(op)).collect()[0].asDict()
                    op["snapshot_id"] = row.get("snapshot_id")
                    op["committed"] = True
                except Exception as e:  # logged; the parent counts and reports it
                    op["committed"] = False
                    op["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:400]}"
                    op["trace"] = traceback.format_exc()[-2000:]
                op["started"] = started
                op["seconds"] = round(time.time() - started, 3)
                with lock:
                    log.write(json.dumps(op) + "\n")
                    log.flush()

        threads = [threading.Thread(target=thread_main, args=(t,)) for t in range(args.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    session.spark.stop()


# ---------------------------------------------------------------- checks


def contention(mine: list[dict[str, Any]]) -> dict[str, float]:
    """How contended the run was, whatever the load: per statement (and per MERGE), the mean
    number of other statements' commits to the table that landed while it ran (its retries
    included). A loaded machine runs fewer statements, but each one longer."""
    done = [
        (o["started"] + o["seconds"], o["op"])
        for o in mine
        if o["committed"] and o.get("snapshot_id") is not None
    ]

    def during(o: dict[str, Any]) -> int:
        start, end = o["started"], o["started"] + o["seconds"]
        return sum(1 for t, op in done if start < t < end and op != o["op"])

    def mean(xs: list[int]) -> float:
        return round(sum(xs) / len(xs), 2) if xs else 0.0

    return {
        "other_commits_during_a_statement": mean([during(o) for o in mine]),
        "other_commits_during_a_merge": mean([during(o) for o in mine if o["kind"] == "merge"]),
    }


def check_table(session: Any, table: str, ops: list[dict[str, Any]], first: int) -> dict[str, Any]:
    from lakeskip.catalog.ops.maintenance import remove_orphan_files

    mine = [o for o in ops if o["table"] == table]
    attempted = Counter(o["kind"] for o in mine)
    committed = Counter(o["kind"] for o in mine if o["committed"])
    errors = Counter(o["error"] for o in mine if not o["committed"])
    with_snapshot = [o for o in mine if o["committed"] and o.get("snapshot_id") is not None]
    no_change = [o for o in mine if o["committed"] and o.get("snapshot_id") is None]
    t = session.catalog.get_table(f"default.{table}")
    latest = t.latest_snapshot().id
    ids = sorted(o["snapshot_id"] for o in with_snapshot)
    contiguous = ids == list(range(first + 1, latest + 1))

    if table == PK:
        pk_state = dict(PK_START)
        for o in sorted(with_snapshot, key=lambda o: o["snapshot_id"]):
            replay_pk(pk_state, o)
        got_pk = {r.k: r.v for r in session.sql(f"SELECT k, v FROM {table}").collect()}
        equal = got_pk == pk_state
        diff: dict[str, Any] = {
            "missing_or_different": {k: v for k, v in pk_state.items() if got_pk.get(k) != v},
            "phantom_or_different": {k: v for k, v in got_pk.items() if pk_state.get(k) != v},
        }
        rows = len(got_pk)
    else:
        rows_state = [list(r) for r in APPEND_START]
        for o in sorted(with_snapshot, key=lambda o: o["snapshot_id"]):
            replay_append(rows_state, o)
        got = Counter((r.id, r.v) for r in session.sql(f"SELECT id, v FROM {table}").collect())
        want = Counter((r[0], r[1]) for r in rows_state)
        equal = got == want
        diff = {
            "missing": [list(k) for k in (want - got).elements()][:50],
            "phantom": [list(k) for k in (got - want).elements()][:50],
        }
        rows = sum(got.values())

    time.sleep(1.5)  # every writer has exited: any file older than now is settled
    orphans = list(remove_orphan_files(t, int(time.time() * 1000), dry_run=True).paths)
    return {
        "attempted": dict(attempted),
        "committed": dict(committed),
        "attempted_total": len(mine),
        "committed_total": sum(committed.values()),
        "committed_share": sum(committed.values()) / len(mine) if mine else None,
        "committed_without_snapshot": dict(Counter(o["kind"] for o in no_change)),
        "errors": dict(errors),
        "first_snapshot": first,
        "latest_snapshot": latest,
        "snapshot_ids_contiguous": contiguous,
        "duplicate_snapshot_ids": [i for i, n in Counter(ids).items() if n > 1],
        "snapshots_not_from_a_logged_op": sorted(set(range(first + 1, latest + 1)) - set(ids)),
        "replay_equal": equal,
        "replay_diff": diff if not equal else {},
        "rows": rows,
        "orphan_files": orphans,
        "contention": contention(mine),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warehouse", default=None, help="default: a new temporary directory")
    p.add_argument("--seed", type=int, default=33)
    p.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--log", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker is not None:
        worker(args)
        return

    load_start = os.getloadavg()
    warehouse = args.warehouse or tempfile.mkdtemp(prefix="lakeskip-soak-")
    warehouse = os.path.abspath(warehouse)
    logs = Path(warehouse).parent / (Path(warehouse).name + "-logs")
    logs.mkdir(parents=True, exist_ok=True)
    print(f"warehouse {warehouse}, logs {logs}, load average at start {load_start}", flush=True)

    session = connect(warehouse)
    retry = "'commit.min-retry-wait' = '10 ms', 'commit.max-retry-wait' = '1 s'"
    session.sql(
        f"CREATE TABLE {PK} (k INT PRIMARY KEY NOT ENFORCED, v STRING) WITH "
        f"('bucket' = '2', 'deletion-vectors.enabled' = 'true', {retry})"
    )
    session.sql(f"CREATE TABLE {APPEND} (id INT, v STRING) WITH ({retry})")
    session.sql(
        f"INSERT INTO {PK} VALUES " + ", ".join(f"({k}, '{v}')" for k, v in PK_START.items())
    )
    session.sql(
        f"INSERT INTO {APPEND} VALUES " + ", ".join(f"({i}, '{v}')" for i, v in APPEND_START)
    )
    first = {
        t: session.catalog.get_table(f"default.{t}").latest_snapshot().id for t in (PK, APPEND)
    }

    started = time.time()
    procs = []
    for w in range(args.processes):
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            str(w),
            "--log",
            str(logs / f"ops-{w}.jsonl"),
            "--warehouse",
            warehouse,
            "--minutes",
            str(args.minutes),
            "--threads",
            str(args.threads),
            "--seed",
            str(args.seed),
        ]
        err = (logs / f"worker-{w}.stderr").open("w")
        procs.append((subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT), err))
    load_peak = load_start[0]
    while any(pr.poll() is None for pr, _ in procs):
        time.sleep(5)
        load_peak = max(load_peak, os.getloadavg()[0])
        if time.time() - started > args.minutes * 60 + 600:
            for pr, _ in procs:
                if pr.poll() is None:
                    pr.kill()
    for _, err in procs:
        err.close()
    exit_codes = [pr.returncode for pr, _ in procs]
    wall = time.time() - started

    ops: list[dict[str, Any]] = []
    for w in range(args.processes):
        path = logs / f"ops-{w}.jsonl"
        if path.exists():
            ops.extend(json.loads(line) for line in path.read_text().splitlines() if line)
    tables = {t: check_table(session, t, ops, first[t]) for t in (PK, APPEND)}
    load_end = os.getloadavg()
    session.spark.stop()

    total = len(ops)
    committed = sum(o["committed"] for o in ops)
    share = committed / total if total else 0.0
    ok = (
        share >= 0.99
        and all(exit_codes[i] == 0 for i in range(len(exit_codes)))
        and all(
            r["replay_equal"] and r["snapshot_ids_contiguous"] and not r["orphan_files"]
            for r in tables.values()
        )
    )
    result = {
        "bench": "soak_commits",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "args": {k: v for k, v in vars(args).items() if k not in ("worker", "log")},
        "warehouse": warehouse,
        "writers": args.processes * args.threads,
        "worker_exit_codes": exit_codes,
        "wall_seconds": round(wall, 1),
        "ops_attempted": total,
        "ops_committed": committed,
        "committed_share": share,
        "criterion_met": ok,
        "tables": tables,
        "failed_ops": [
            {k: o[k] for k in ("op", "table", "kind", "error", "seconds")}
            for o in ops
            if not o["committed"]
        ],
        "seconds_per_op_median": sorted(o["seconds"] for o in ops)[total // 2] if ops else None,
        "load_average_start": load_start,
        "load_average_end": load_end,
        "load_average_1min_peak": load_peak,
        "loaded": True,
    }
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    path = out / f"soak-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=2, default=str) + "\n")

    print(
        f"\nsoak: {result['writers']} writers ({args.processes} processes × {args.threads} "
        f"threads), {wall:.0f} s wall, worker exit codes {exit_codes}"
    )
    for t, r in tables.items():
        print(
            f"\n{t}: {r['committed_total']}/{r['attempted_total']} committed "
            f"({100 * (r['committed_share'] or 0):.1f} %)"
        )
        for kind in KINDS:
            a, c = r["attempted"].get(kind, 0), r["committed"].get(kind, 0)
            print(
                f"  {kind:8s} {c:4d}/{a:4d}  (committed without a snapshot: "
                f"{r['committed_without_snapshot'].get(kind, 0)})"
            )
        print(
            f"  snapshots {r['first_snapshot'] + 1}..{r['latest_snapshot']} contiguous: "
            f"{r['snapshot_ids_contiguous']}; replay equal: {r['replay_equal']} "
            f"({r['rows']} rows); orphan files: {len(r['orphan_files'])}"
        )
        print(f"  contention (other commits landing while one ran): {r['contention']}")
        for e, n in r["errors"].items():
            print(f"  error ×{n}: {e}")
        if not r["replay_equal"]:
            print(f"  replay diff: {json.dumps(r['replay_diff'])[:2000]}")
        if r["orphan_files"]:
            print(f"  orphans: {r['orphan_files'][:10]}")
    print(f"\nall: {committed}/{total} committed ({100 * share:.2f} %), criterion met: {ok}")
    print(
        f"load average (loaded machine) start {load_start}, end {load_end}, "
        f"1-min peak {load_peak:.2f}"
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
