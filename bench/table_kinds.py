"""Primary-key and deletion-vector tables: what point lookups read, through plain ``spark.sql``.

    make bench-kinds                                   # default: 2M rows, 64 files, 40 lookups
    .venv/bin/python bench/table_kinds.py --rows 500000 --files 32 --lookups 20

Two figures of issue #15, each query run through plain ``spark.sql`` on the lakeskip catalog
(``lakeskip.bench.*``) with :func:`lakeskip.spark.pruning_reports` around it:

**pk** -- ``CREATE TABLE ... (id BIGINT PRIMARY KEY NOT ENFORCED, ...) WITH ('bucket' = '8')``
written in ``--commits`` INSERTs (each upserts a quarter of the keys and adds new ones, so
every bucket holds overlapping files), then a ``DELETE`` (``-D`` versions) and one more
INSERT that brings back half of the deleted keys. For ``--lookups`` random keys (live,
deleted, re-inserted, never written): ``SELECT id, v, s ... WHERE id = k``. Reported: files
kept / total, buckets kept (from the planner's own plan of the same predicate), the files
that hold any version of ``k`` (must all be kept), and the answer checked against an
independent recomputation (the write pattern is arithmetic: the expected row of every key is
computed in Python) and against the same merge done by hand (newest ``_SEQUENCE_NUMBER`` per
key, ``-U``/``-D`` dropped) over plain ``spark.read.parquet``. Timed side by side: the
catalog query, the hand merge over all the table's files, and the hand merge over only the
files of ``k``'s bucket (what an ideal bucket-pruning reader reads).

**dv** -- an append table with ``'deletion-vectors' = 'true'`` and a bloom filter on ``c1``
(``items`` = rows per file), ``--files`` files, then ``DELETE ... WHERE id % 5 = 0`` (deletion
vectors, no data file rewritten). For random ``c1 = v`` lookups: files kept vs *ideal* (files
that hold a live match), vs the files holding any match (deleted or not: a file's bloom
filter is built at write time and cannot know about later deletes), vs the bound
``ideal + fpp * files``, per query and summed; rows checked against plain Spark over all the
files with the deleted rows removed by the DELETE's own condition.

**pkdv** -- a primary-key table with ``'deletion-vectors' = 'true'`` (``bucket`` =
``--files`` / 2) and a bloom filter on the value column ``c1``: one INSERT of every key, then
an INSERT upserting every fifth key with a new ``c1`` (the new run lands one level lower, the
old versions are marked in deletion vectors). The same ``c1 = v`` lookups and bound as
**dv**; rows checked against an independent recomputation of each key's latest ``c1``; ideal
files = files holding a live match (read through their DVs).

Medians over the lookups (each timed once, after warm-up queries). Writes
``bench/results/kinds-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

import lakeskip
from lakeskip.expressions import EqualTo, bind
from lakeskip.planner.bucket_selector import select_buckets
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark import pruning_reports
from lakeskip.spark.read.query import table_file_paths

PK, DV, PKDV = "bench.pk", "bench.dv", "bench.pkdv"
BUCKETS = 8
DELETE_MOD, DELETE_REM = 50, 7  # pk: DELETE WHERE id % 50 = 7 ...
REVIVE_MOD = 100  # ... then re-insert the keys with id % 100 = 7
DV_DELETE = "id % 5 = 0"


def _timed(fn: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    v = fn()
    return v, time.perf_counter() - t


# -- primary-key table --------------------------------------------------------------------


def _value(id_: Any, commit: int) -> Any:
    """The ``v`` written for a key in a commit (Spark Column or Python int, same arithmetic)."""
    return (id_ * 1_000_003 + commit * 7_919) % 1_000_000_007


def _upserted(id_: Any, commit: int) -> Any:
    """Does commit ``commit`` (>= 1) upsert an existing key? A quarter of them, varying."""
    return (id_ * 2_654_435_761 + commit) % 4 == 0


def _expected(k: int, rows: int, commits: int, new: int) -> tuple[int, int, str] | None:
    """The row of key ``k`` after the whole write pattern, recomputed without Spark."""
    last: int | None = 0 if 0 <= k < rows else None
    for c in range(1, commits):
        if (0 <= k < rows and _upserted(k, c)) or rows + (c - 1) * new <= k < rows + c * new:
            last = c
    if last is not None and k % DELETE_MOD == DELETE_REM:
        last = commits if k % REVIVE_MOD == DELETE_REM else None
    if last is None:
        return None
    return (k, _value(k, last), f"s{last}")


def _pk_batch(spark: Any, lo: int, hi: int, commit: int, where: Any = None) -> DataFrame:
    df: DataFrame = spark.range(lo, hi, numPartitions=4)
    if where is not None:
        df = df.where(where)
    return df.select(
        F.col("id"),
        _value(F.col("id"), commit).alias("v"),
        F.lit(f"s{commit}").alias("s"),
    )


def _write_pk(session: Any, name: str, rows: int, commits: int, new: int) -> None:
    spark = session.spark
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT PRIMARY KEY NOT ENFORCED, v BIGINT, s STRING) "
        f"TBLPROPERTIES ('bucket' = '{BUCKETS}')"
    )

    def insert(df: DataFrame) -> None:
        df.createOrReplaceTempView("pk_batch")
        spark.sql(f"INSERT INTO {name} SELECT * FROM pk_batch")

    insert(_pk_batch(spark, 0, rows, 0))
    for c in range(1, commits):
        upserts = _pk_batch(spark, 0, rows, c, _upserted(F.col("id"), c))
        insert(upserts.unionByName(_pk_batch(spark, rows + (c - 1) * new, rows + c * new, c)))
    # DELETE through lakeskip's SQL front end (Session.sql): plain spark.sql on the catalog
    # answers "Table does not support deletes" (LakeTable implements no row-level operations)
    session.sql(f"DELETE FROM {PK} WHERE id % {DELETE_MOD} = {DELETE_REM}").collect()
    end = rows + (commits - 1) * new
    insert(_pk_batch(spark, 0, end, commits, F.col("id") % REVIVE_MOD == DELETE_REM))


def _hand_merge(df: DataFrame, k: int) -> DataFrame:
    """Paimon's deduplicate merge by hand: the newest version of the key, unless a delete."""
    newest = Window.partitionBy("_KEY_id").orderBy(F.col("_SEQUENCE_NUMBER").desc())
    return (
        df.where(F.col("_KEY_id") == k)
        .withColumn("_n", F.row_number().over(newest))
        .where((F.col("_n") == 1) & F.col("_VALUE_KIND").isin(0, 2))
        .select("id", "v", "s")
    )


def bench_pk(session: Any, args: argparse.Namespace) -> dict[str, Any]:
    spark = session.spark
    name = f"{session.catalog_name}.{PK}"
    new = max(1, args.rows // 20)
    _, t_write = _timed(lambda: _write_pk(session, name, args.rows, args.commits, new))
    table = session.catalog.get_table(PK)
    entries = table.scan_files()
    paths = table_file_paths(table, entries)
    by_bucket: dict[int, list[str]] = {}
    for e, p in zip(entries, paths, strict=True):
        by_bucket.setdefault(e.bucket, []).append(p)
    print(
        f"pk: {args.rows:,} keys + {args.commits - 1} upsert commits, a DELETE and a re-insert "
        f"in {t_write:.1f} s: {len(entries)} files in "
        f"{len(by_bucket)} buckets ({', '.join(str(len(v)) for _, v in sorted(by_bucket.items()))})"
    )
    every = spark.read.parquet(*paths)
    bucket_dfs = {b: spark.read.parquet(*ps) for b, ps in by_bucket.items()}
    planner = ScanPlanner(table)
    row_type, spec = table.schema.row_type, table.schema.bucket_spec()
    assert spec is not None
    end = args.rows + (args.commits - 1) * new
    rng = random.Random(args.seed)
    keys = [rng.randrange(0, end) for _ in range(args.lookups - 4)]
    # a deleted key, a re-inserted one, a new key of the last upsert commit, one never written
    keys += [DELETE_MOD * 3 + DELETE_REM, REVIVE_MOD * 5 + DELETE_REM, end - 1, end + 12_345]
    rows: list[dict[str, Any]] = []
    for i, k in enumerate(keys):
        sql = f"SELECT id, v, s FROM {name} WHERE id = {k}"
        if i == 0:  # warm every path once
            spark.sql(sql).collect()
            _hand_merge(every, k).collect()
            for d in bucket_dfs.values():
                _hand_merge(d, k).collect()
        with pruning_reports(spark) as reports:
            got, t_cat = _timed(lambda s=sql: [tuple(r) for r in spark.sql(s).collect()])
        rep = reports[0]
        plan = planner.plan(EqualTo("id", k))
        kept = {e.file.file_name for e in plan.files}
        buckets = sorted({e.bucket for e in plan.files})
        holders = {
            Path(r.f).name
            for r in every.where(F.col("_KEY_id") == k)
            .select(F.input_file_name().alias("f"))
            .distinct()
            .collect()
        }
        hand, t_all = _timed(lambda k=k: [tuple(r) for r in _hand_merge(every, k).collect()])
        # the bucket Paimon's bucket function gives k: the holders must all be in it
        hashed = select_buckets(bind(row_type, EqualTo("id", k)), spec)
        if hashed is None or len(hashed) != 1:
            raise AssertionError(f"id = {k}: bucket function gave {hashed}")
        (b,) = hashed
        if any(e.bucket != b for e in entries if e.file.file_name in holders):
            raise AssertionError(f"id = {k}: versions outside its bucket {b}")
        hand_b, t_bucket = _timed(
            lambda k=k, b=b: [tuple(r) for r in _hand_merge(bucket_dfs[b], k).collect()]
        )
        want = _expected(k, args.rows, args.commits, new)
        expected = [want] if want is not None else []
        if not (got == hand == hand_b == expected):
            raise AssertionError(
                f"WRONG ANSWER id = {k}: catalog {got}, by hand {hand}, {expected}"
            )
        if not holders <= kept:
            raise AssertionError(f"id = {k}: files {sorted(holders - kept)} hold it but skipped")
        if rep.kept_files != len(kept):
            raise AssertionError(f"id = {k}: catalog kept {rep.kept_files}, planner {len(kept)}")
        rows.append(
            {
                "key": k,
                "rows": len(got),
                "files_total": rep.total_files,
                "files_kept": rep.kept_files,
                "files_bucket": len(by_bucket.get(b, [])),
                "files_holding_key": len(holders),
                "buckets_kept": len(buckets),
                "skipped_by_bucket": rep.skipped_by_bucket,
                "skipped_by_stats": rep.skipped_by_stats,
                "planning_ms": rep.planning_ms,
                "catalog_s": t_cat,
                "hand_all_s": t_all,
                "hand_bucket_s": t_bucket,
            }
        )
    summary = {
        "files": len(entries),
        "write_s": t_write,
        "lookups": len(rows),
        "max_buckets_kept": max(r["buckets_kept"] for r in rows),
        "mean_files_kept": statistics.mean(r["files_kept"] for r in rows),
        "mean_files_bucket": statistics.mean(r["files_bucket"] for r in rows),
        "mean_files_holding_key": statistics.mean(r["files_holding_key"] for r in rows),
        "median_catalog_s": statistics.median(r["catalog_s"] for r in rows),
        "median_hand_all_s": statistics.median(r["hand_all_s"] for r in rows),
        "median_hand_bucket_s": statistics.median(r["hand_bucket_s"] for r in rows),
    }
    print(
        f"pk point lookups ({len(rows)}, all answers correct): buckets kept max "
        f"{summary['max_buckets_kept']}; files kept mean {summary['mean_files_kept']:.2f} of "
        f"{len(entries)} (bucket holds {summary['mean_files_bucket']:.2f}, files holding a "
        f"version of the key {summary['mean_files_holding_key']:.2f}); median s: catalog "
        f"{summary['median_catalog_s']:.3f}, hand merge all files "
        f"{summary['median_hand_all_s']:.3f}, hand merge the bucket's files "
        f"{summary['median_hand_bucket_s']:.3f}"
    )
    return {"summary": summary, "queries": rows}


# -- deletion-vector table ----------------------------------------------------------------


def bench_dv(session: Any, args: argparse.Namespace) -> dict[str, Any]:
    spark = session.spark
    name = f"{session.catalog_name}.{DV}"
    per_file = max(1, args.rows // args.files)
    domain = max(1, args.rows // 4)  # each c1 value in ~4 rows, spread over random files
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, c1 BIGINT, pad STRING) TBLPROPERTIES ("
        "'deletion-vectors' = 'true', 'target-file-size' = '1 gb', "
        "'file-index.bloom-filter.columns' = 'c1', "
        f"'file-index.bloom-filter.c1.items' = '{per_file}', "
        f"'file-index.bloom-filter.c1.fpp' = '{args.fpp}')"
    )
    df = spark.range(args.rows, numPartitions=args.files).select(
        F.col("id"),
        (F.abs(F.xxhash64("id")) % domain).alias("c1"),
        F.concat(F.lit("p"), (F.col("id") % 1000).cast("string")).alias("pad"),
    )
    df.createOrReplaceTempView("dv_batch")
    _, t_write = _timed(lambda: spark.sql(f"INSERT INTO {name} SELECT * FROM dv_batch"))
    _, t_delete = _timed(lambda: session.sql(f"DELETE FROM {DV} WHERE {DV_DELETE}").collect())
    table = session.catalog.get_table(DV)
    entries = table.scan_files()
    files = len(entries)
    print(
        f"\ndv: {args.rows:,} rows in {files} files (write {t_write:.1f} s), "
        f"DELETE WHERE {DV_DELETE} in {t_delete:.1f} s; bloom items {per_file}, fpp {args.fpp}"
    )
    plain = spark.read.parquet(*table_file_paths(table, entries))
    live = plain.where(f"NOT ({DV_DELETE})")
    rng = random.Random(args.seed + 1)
    values = [rng.randrange(0, domain) for _ in range(args.lookups - 2)] + [domain, domain + 7]
    rows: list[dict[str, Any]] = []
    for i, v in enumerate(values):
        sql = f"SELECT count(*), sum(id) FROM {name} WHERE c1 = {v}"
        if i == 0:
            spark.sql(sql).collect()
            live.where(F.col("c1") == v).agg(F.count("*"), F.sum("id")).collect()
        with pruning_reports(spark) as reports:
            got, t_cat = _timed(lambda s=sql: tuple(spark.sql(s).collect()[0]))
        rep = reports[0]
        want, t_plain = _timed(
            lambda v=v: tuple(live.where(F.col("c1") == v).agg(F.count("*"), F.sum("id")).first())
        )
        if got != want:
            raise AssertionError(
                f"WRONG ANSWER c1 = {v}: catalog {got}, plain minus deleted {want}"
            )
        f = F.input_file_name().alias("f")
        ideal = live.where(F.col("c1") == v).select(f).distinct().count()
        any_match = plain.where(F.col("c1") == v).select(f).distinct().count()
        bound = ideal + args.fpp * files
        rows.append(
            {
                "value": v,
                "rows": got[0],
                "files_total": rep.total_files,
                "files_kept": rep.kept_files,
                "files_ideal": ideal,
                "files_any_match": any_match,
                "bound": bound,
                "within_bound": rep.kept_files <= bound,
                "planning_ms": rep.planning_ms,
                "catalog_s": t_cat,
                "plain_s": t_plain,
            }
        )
    total = {k: sum(r[k] for r in rows) for k in ("files_kept", "files_ideal", "files_any_match")}
    bound_sum = total["files_ideal"] + args.fpp * files * len(rows)
    false_pos = total["files_kept"] - total["files_any_match"]
    summary = {
        "files": files,
        "lookups": len(rows),
        "fpp": args.fpp,
        **{f"sum_{k}": v for k, v in total.items()},
        "sum_bound": bound_sum,
        "within_bound_summed": total["files_kept"] <= bound_sum,
        "queries_over_bound": sum(not r["within_bound"] for r in rows),
        "bloom_false_positive_rate": false_pos
        / max(1, files * len(rows) - total["files_any_match"]),
        "median_catalog_s": statistics.median(r["catalog_s"] for r in rows),
        "median_plain_s": statistics.median(r["plain_s"] for r in rows),
    }
    print(
        f"{'c1':>10} {'rows':>5} {'kept':>5} {'ideal':>5} {'any':>4} {'bound':>6} "
        f"{'catalog s':>9} {'plain s':>8}"
    )
    for r in rows:
        print(
            f"{r['value']:>10} {r['rows']:>5} {r['files_kept']:>5} {r['files_ideal']:>5} "
            f"{r['files_any_match']:>4} {r['bound']:>6.1f}{'' if r['within_bound'] else '!'} "
            f"{r['catalog_s']:>9.3f} {r['plain_s']:>8.3f}"
        )
    print(
        f"dv bloom lookups ({len(rows)}, all answers correct): kept {total['files_kept']} vs "
        f"ideal {total['files_ideal']} (any match incl. deleted {total['files_any_match']}) vs "
        f"bound ideal + fpp*files = {bound_sum:.1f} summed -> "
        f"{'within' if summary['within_bound_summed'] else 'OVER'}; "
        f"{summary['queries_over_bound']} queries over their own bound; measured bloom false "
        f"positive rate {summary['bloom_false_positive_rate']:.3f}; median s catalog "
        f"{summary['median_catalog_s']:.3f} vs plain all files {summary['median_plain_s']:.3f}"
    )
    return {"summary": summary, "queries": rows}


# -- primary-key table with deletion vectors ---------------------------------------------


def bench_pkdv(session: Any, args: argparse.Namespace) -> dict[str, Any]:
    from lakeskip.spark.read.dv import FILE_COLUMN, live_rows_frame, read_vectors

    spark = session.spark
    name = f"{session.catalog_name}.{PKDV}"
    buckets = max(1, args.files // 2)
    per_file = max(1, args.rows // buckets)
    domain = max(1, args.rows // 4)
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT PRIMARY KEY NOT ENFORCED, c1 BIGINT, pad STRING) "
        f"TBLPROPERTIES ('bucket' = '{buckets}', 'deletion-vectors' = 'true', "
        "'target-file-size' = '1 gb', 'file-index.bloom-filter.columns' = 'c1', "
        f"'file-index.bloom-filter.c1.items' = '{per_file}', "
        f"'file-index.bloom-filter.c1.fpp' = '{args.fpp}')"
    )

    def c1(shift: int) -> Any:
        return F.abs(F.xxhash64(F.col("id") + F.lit(shift))) % domain

    base = spark.range(args.rows, numPartitions=max(1, args.files)).select(
        F.col("id"), c1(0).alias("c1"), F.concat(F.lit("p"), (F.col("id") % 1000).cast("string"))
    )
    base.createOrReplaceTempView("pkdv_base")
    _, t_write = _timed(lambda: spark.sql(f"INSERT INTO {name} SELECT * FROM pkdv_base"))
    upsert = base.where("id % 5 = 0").select("id", c1(args.rows).alias("c1"), F.lit("u"))
    upsert.createOrReplaceTempView("pkdv_upsert")
    _, t_upsert = _timed(lambda: spark.sql(f"INSERT INTO {name} SELECT * FROM pkdv_upsert"))
    # independent recomputation of every key's latest c1
    live = spark.range(args.rows).select(
        F.col("id"), F.when(F.col("id") % 5 == 0, c1(args.rows)).otherwise(c1(0)).alias("c1")
    )
    table = session.catalog.get_table(PKDV)
    entries = table.scan_files()
    files = len(entries)
    with_file = live_rows_frame(
        spark,
        table,
        entries,
        read_vectors(table, entries, table.latest_snapshot()),
        with_position=True,
    )
    plain = spark.read.parquet(*table_file_paths(table, entries))
    print(
        f"\npkdv: {args.rows:,} keys, {buckets} buckets, {files} files at levels "
        f"{sorted({e.file.level for e in entries})} (write {t_write:.1f} s, upsert of every "
        f"fifth key {t_upsert:.1f} s), {len(table.deletion_files())} files with DVs"
    )
    rng = random.Random(args.seed + 2)
    values = [rng.randrange(0, domain) for _ in range(args.lookups - 2)] + [domain, domain + 7]
    rows: list[dict[str, Any]] = []
    for i, v in enumerate(values):
        sql = f"SELECT count(*), sum(id) FROM {name} WHERE c1 = {v}"
        if i == 0:
            spark.sql(sql).collect()
        with pruning_reports(spark) as reports:
            got, t_cat = _timed(lambda s=sql: tuple(spark.sql(s).collect()[0]))
        rep = reports[0]
        want = tuple(live.where(F.col("c1") == v).agg(F.count("*"), F.sum("id")).first())
        if got != want:
            raise AssertionError(f"WRONG ANSWER c1 = {v}: catalog {got}, recomputed {want}")
        ideal = with_file.where(F.col("c1") == v).select(FILE_COLUMN).distinct().count()
        f = F.input_file_name().alias("f")
        any_match = plain.where(F.col("c1") == v).select(f).distinct().count()
        bound = ideal + args.fpp * files
        rows.append(
            {
                "value": v,
                "rows": got[0],
                "files_total": rep.total_files,
                "files_kept": rep.kept_files,
                "files_ideal": ideal,
                "files_any_match": any_match,
                "bound": bound,
                "within_bound": rep.kept_files <= bound,
                "catalog_s": t_cat,
            }
        )
    total = {k: sum(r[k] for r in rows) for k in ("files_kept", "files_ideal", "files_any_match")}
    bound_sum = total["files_ideal"] + args.fpp * files * len(rows)
    summary = {
        "files": files,
        "buckets": buckets,
        "lookups": len(rows),
        "fpp": args.fpp,
        **{f"sum_{k}": v for k, v in total.items()},
        "sum_bound": bound_sum,
        "within_bound_summed": total["files_kept"] <= bound_sum,
        "queries_over_bound": sum(not r["within_bound"] for r in rows),
        "median_catalog_s": statistics.median(r["catalog_s"] for r in rows),
    }
    print(
        f"pkdv bloom lookups ({len(rows)}, all answers correct): kept {total['files_kept']} vs "
        f"ideal {total['files_ideal']} (any match incl. deleted {total['files_any_match']}) vs "
        f"bound ideal + fpp*files = {bound_sum:.1f} summed -> "
        f"{'within' if summary['within_bound_summed'] else 'OVER'}; "
        f"{summary['queries_over_bound']} queries over their own bound; median catalog s "
        f"{summary['median_catalog_s']:.3f}"
    )
    return {"summary": summary, "queries": rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000, help="pk keys / dv rows")
    ap.add_argument("--files", type=int, default=64, help="dv table data files")
    ap.add_argument("--commits", type=int, default=4, help="pk INSERTs before the DELETE")
    ap.add_argument("--lookups", type=int, default=40)
    ap.add_argument("--fpp", type=float, default=0.05, help="dv bloom filter fpp")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--only", choices=["pk", "dv", "pkdv"])
    ap.add_argument("--warehouse", default="/tmp/lakeskip-bench-kinds")
    args = ap.parse_args()
    if args.lookups < 5 or args.commits < 1:
        ap.error("--lookups must be >= 5 and --commits >= 1")
    session = lakeskip.connect(
        args.warehouse,
        conf={"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "8"},
    )
    if session.catalog_name is None:
        raise SystemExit(
            "the lakeskip Spark catalog is not installed (no javac): nothing to measure"
        )
    session.spark.sql(f"CREATE DATABASE IF NOT EXISTS {session.catalog_name}.bench")
    for t in (PK, DV, PKDV):
        session.spark.sql(f"DROP TABLE IF EXISTS {session.catalog_name}.{t}")
    out: dict[str, Any] = {"rows": args.rows, "cores": os.cpu_count(), "args": vars(args)}
    if args.only in (None, "pk"):
        out["pk"] = bench_pk(session, args)
    if args.only in (None, "dv"):
        out["dv"] = bench_dv(session, args)
    if args.only in (None, "pkdv"):
        out["pkdv"] = bench_pkdv(session, args)
    out_dir = Path(__file__).parent / "results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"kinds-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(out, indent=2, default=str))
    print(f"results: bench/results/{path.name}")


if __name__ == "__main__":
    main()
