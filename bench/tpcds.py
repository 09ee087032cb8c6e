"""TPC-DS on lakeskip beside plain Spark: answers, times, and fact files read / needed / total.

    make bench-tpcds                                  # SF 0.1, every query, 3 sides
    .venv/bin/python bench/tpcds.py --sf 1 --load-only        # load all 3 sides, time nothing
    .venv/bin/python bench/tpcds.py --sf 1 --runs 3 --no-warmup --no-needed  # quiet timing run
    .venv/bin/python bench/tpcds.py --sf 1 --runs 0 --sides lakeskip,spark   # answers + files
    .venv/bin/python bench/tpcds.py --sf 0.01 --check --sides lakeskip,spark  # make test-tpcds

**Data** (cached in ``--cache``, default ``.tpcds-cache/`` or ``$LAKESKIP_TPCDS_CACHE``): the
package index's ``duckdb`` with ``duckdb-extension-tpcds`` (the extension file is LOADed from
the wheel, nothing is downloaded at run time), ``CALL dsdgen(sf=...)``, every table exported to
one Parquet file; the 99 query texts from the extension's ``tpcds_queries()``.

**Queries**: the generator's texts (DuckDB dialect) transpiled to Spark SQL by sqlglot
(``sqlglot.parse(q, read="duckdb")`` then ``.sql(dialect="spark")``: ``INTERVAL`` arithmetic
on dates, ``CAST(x AS DATE)``, quoting and ``LIMIT`` come out as Spark writes them; comma
joins become ``INNER JOIN``, since Spark 4.3 plans a comma join as a Cross join, for which it
plans no dynamic pruning on any side); each side then
gets its own table names (``lakeskip.tpcds.t``, ``files_t``, ``part_t``) by rewriting the
``exp.Table`` nodes, CTE names left alone. A query Spark cannot run on the plain side is
reported as such and left out of the totals.

**Sides** (all on the same rows):

* ``lakeskip``: lakeskip tables written by ``session.write``, fact tables then clustered by
  their date key as a data engineer would (``CALL sys.compact(table => ..., order_strategy
  => 'order', order_by => '<date key>')``), ``target-file-size`` ``--file-size`` (default
  scaled with the SF so a fact table has tens of files). Each table's load prints where its
  time went: the write's and the compaction's wall seconds, their Python tasks' CPU per stage
  (``last_write_timings``) and each Spark stage they ran.
* ``spark``: plain ``spark.read.parquet`` over exactly the lakeskip tables' data files.
* ``partitioned``: plain Spark over fact tables written ``partitionBy(<date key>)`` (Spark's
  own dynamic partition pruning applies); dimensions as ``spark``.
* ``static`` (optional): the lakeskip tables with runtime filtering off
  (``spark.lakeskip.runtime-filter.enabled=false``): what runtime filtering costs and saves.

The side that runs a query first pays what Spark caches for the next (the whole-stage code
Janino compiled for the same operators above the scans): the first side rotates from query
to query, and the ``--runs`` timed runs alternate their order. Each side's first run is
profiled (with ``--no-warmup`` it is also the first of the ``--runs`` timed runs, so a timed run
executes each query ``--runs`` times per side, not one more; ``--no-needed`` skips the
needed-files queries, which only the file counts use): Spark's phases (``QueryPlanningTracker``: parsing, analysis, optimization,
planning; *execution* the rest of the wall time), lakeskip's callbacks (calls and ms in
Python per operation) and the Spark jobs it ran.

**Per query**: answers equal (rows compared as sorted multisets, numbers to 9 significant
digits, since a float sum depends on the order Spark adds in), median time of ``--runs``,
and for fact tables: files *kept* (lakeskip: its scans' ``lakeskip files kept`` metric, after
runtime filters; plain Spark: ``number of files read``), files *total* of those scans, and
files *needed*: for each SELECT that reads a fact table directly, the distinct
``input_file_name()`` of its fact rows that survive that SELECT's joins and WHERE (the same
text with the fact table replaced by a view adding ``input_file_name()``, run on the
``spark`` side) -- HAVING and outer scopes are not applied, so *needed* is an upper bound.
Figures are read from Spark's SQL status store (the executed plan's metrics, subqueries
included). Writes ``bench/results/tpcds-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import glob
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import query_profile  # type: ignore[import-not-found]
import sqlglot
from sqlglot import exp

import lakeskip
from lakeskip.spark.front.catalog_setup import service_for

FACTS = {
    "store_sales": "ss_sold_date_sk",
    "store_returns": "sr_returned_date_sk",
    "catalog_sales": "cs_sold_date_sk",
    "catalog_returns": "cr_returned_date_sk",
    "web_sales": "ws_sold_date_sk",
    "web_returns": "wr_returned_date_sk",
    "inventory": "inv_date_sk",
}
TABLES = [
    *FACTS,
    "call_center",
    "catalog_page",
    "customer",
    "customer_address",
    "customer_demographics",
    "date_dim",
    "household_demographics",
    "income_band",
    "item",
    "promotion",
    "reason",
    "ship_mode",
    "store",
    "time_dim",
    "warehouse",
    "web_page",
    "web_site",
]
ROOT = Path(__file__).resolve().parent.parent


# -- data ---------------------------------------------------------------------------------


def generate(sf: float, cache: Path) -> Path:
    """The tables as Parquet and the query texts, generated once per scale factor."""
    out = cache / f"sf{sf:g}"
    done = out / "queries.json"
    if done.exists():
        return out
    import duckdb
    import duckdb_extension_tpcds

    ext = glob.glob(f"{duckdb_extension_tpcds.__path__[0]}/extensions/**/*.duckdb_extension",
                    recursive=True)  # fmt: skip
    if not ext:
        raise SystemExit("duckdb-extension-tpcds has no extension file")
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{ext[0]}'")
    t0 = time.perf_counter()
    con.execute(f"CALL dsdgen(sf={sf})")
    for t in TABLES:
        con.execute(f"COPY (SELECT * FROM {t}) TO '{out / t}.parquet' (FORMAT parquet)")
    queries = {int(n): q for n, q in con.execute("SELECT * FROM tpcds_queries()").fetchall()}
    done.write_text(json.dumps(queries, indent=1))
    print(f"generated SF {sf:g} in {time.perf_counter() - t0:.1f} s into {out}", flush=True)
    return out


def transpile(text: str) -> str:
    """A generator query (DuckDB dialect) as Spark SQL."""
    trees = sqlglot.parse(text.strip().rstrip(";"), read="duckdb")
    if len(trees) != 1 or trees[0] is None:
        raise ValueError("expected one statement")
    tree = trees[0]
    # Spark 4.3 plans a comma join (FROM a, b WHERE a.k = b.k) as a Cross join, on which its
    # PartitionPruning plans no dynamic pruning (canPruneLeft/Right: Inner, semi, outer only):
    # written as INNER JOIN it is the same join, and both lakeskip's runtime filters and plain
    # Spark's DPP over the date-partitioned files apply
    for j in tree.find_all(exp.Join):
        if not (j.args.get("on") or j.args.get("using") or j.kind or j.side or j.method):
            j.set("kind", "INNER")
    return tree.sql(dialect="spark")


def with_tables(sql: str, names: dict[str, str]) -> str:
    """``sql`` with each base table renamed by ``names`` (CTE names left alone)."""
    tree = sqlglot.parse_one(sql, read="spark")
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    for t in tree.find_all(exp.Table):
        if t.name in names and t.name not in ctes:
            alias = t.alias_or_name
            parts = names[t.name].split(".")
            t.set("this", exp.to_identifier(parts[-1]))
            t.set("db", exp.to_identifier(parts[-2]) if len(parts) > 1 else None)
            t.set("catalog", exp.to_identifier(parts[-3]) if len(parts) > 2 else None)
            if not t.alias:
                t.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    return tree.sql(dialect="spark")


def needed_queries(sql: str, fact: str, view: str) -> list[str]:
    """For each SELECT reading ``fact`` directly: its fact rows' files that survive its
    joins and WHERE (the fact table replaced by ``view``, which adds ``__file``)."""
    tree = sqlglot.parse_one(sql, read="spark")
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    with_ = tree.args.get("with")
    out = []
    for select in tree.find_all(exp.Select):
        sources = []
        # sqlglot >= 26 names the FROM clause "from_" (older: "from"): without it, a SELECT
        # whose fact table is its FROM table was never counted
        frm = select.args.get("from_") or select.args.get("from")
        if frm is not None:
            sources.append(frm.this)
        sources += [j.this for j in select.args.get("joins") or []]
        hits = [s for s in sources if isinstance(s, exp.Table) and s.name == fact]
        if fact in ctes or not hits:
            continue
        for hit in hits:
            q = select.copy()
            q.set("expressions", [exp.column("__file", table=hit.alias_or_name)])
            for t in q.find_all(exp.Table):
                if t.name == fact and t.alias_or_name == hit.alias_or_name:
                    alias = t.alias_or_name
                    t.set("this", exp.to_identifier(view))
                    t.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
                    break
            for arg in ("group", "having", "order", "limit", "qualify", "windows", "with"):
                q.set(arg, None)
            q.set("distinct", exp.Distinct())
            if with_ is not None:
                q.set("with", with_.copy())
            out.append(q.sql(dialect="spark"))
    return out


# -- measuring ----------------------------------------------------------------------------


def _norm(v: Any) -> Any:
    if isinstance(v, (float, Decimal)):
        return float(f"{float(v):.9g}")
    return v


def canonical(rows: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((tuple(_norm(v) for v in r) for r in rows), key=repr)


def scan_figures(spark: Any) -> dict[str, dict[str, int]]:
    """Per table: files kept and total over the last execution's scans (status store)."""
    spark._jsc.sc().listenerBus().waitUntilEmpty()  # the metrics arrive by the listener bus
    store = spark._jsparkSession.sharedState().statusStore()
    execs = store.executionsList()
    last = execs.apply(execs.size() - 1)
    eid = last.executionId()
    values = store.executionMetrics(eid)
    graph = store.planGraph(eid)
    nodes = graph.allNodes()
    out: dict[str, dict[str, int]] = {}
    for i in range(nodes.size()):
        node = nodes.apply(i)
        name, desc = node.name(), node.desc()
        table = next(
            (f for f in FACTS if re.search(rf"\b(part_|files_|tpcds\.)?{f}\b", desc)), None
        )
        if table is None or not ("Scan" in name or "BatchScan" in name):
            continue
        got: dict[str, int] = {}
        ms = node.metrics()
        for j in range(ms.size()):
            m = ms.apply(j)
            v = values.get(m.accumulatorId())
            if v.isEmpty():
                continue
            digits = re.sub(r"[^0-9]", "", str(v.get()).split("(")[0])
            if digits:
                got[m.name()] = int(digits)
        fig = out.setdefault(table, {"kept": 0, "total": 0, "scans": 0, "own_filter": 0})
        fig["scans"] += 1
        if own_filter(desc):
            fig["own_filter"] += 1
        if "lakeskip files kept" in got:
            fig["kept"] += got["lakeskip files kept"]
            fig["total"] += got.get("lakeskip files total", 0)
        elif "number of files read" in got:
            fig["kept"] += got["number of files read"]
        elif "number of resulted table files" in got:  # Paimon's connector (paimon_tpcds.py)
            fig["kept"] += got["number of resulted table files"]
            fig["total"] += got["number of resulted table files"] + got.get(
                "number of skipped table files", 0
            )
    return out


def own_filter(desc: str) -> bool:
    """Whether a scan's plan text shows a predicate of its own (``DataFilters`` other than
    ``isnotnull``): a fact scan without one is filtered only through its joins. Spark's
    ``DataFilters`` leave out subquery filters (dynamic pruning, bloom filters); the text is
    complete because the session sets ``spark.sql.maxMetadataStringLength`` high."""
    m = re.search(r"DataFilters: \[(.*?)\](?:, (?:Format|Location|PartitionFilters|PushedFilters|"
                  r"ReadSchema)|$)", desc)  # fmt: skip
    if m is None:
        return False
    rest = re.sub(r"isnotnull\([^()]*\)", "", m.group(1))
    return bool(re.search(r"[A-Za-z0-9]", rest))


def runtime_filtered(spark: Any, sql: str) -> str:
    """The lakeskip scans of ``sql``'s physical plan (not run) with their runtime filters:
    ``table[column IN dynamicpruning]`` where Spark planned one, ``table[true]`` where it
    planned one and dropped it (no broadcast to reuse), ``table`` where none."""
    text = str(spark.sql(sql)._jdf.queryExecution().executedPlan().toString())
    out = []
    for line in text.splitlines():
        m = re.search(r"BatchScan lakeskip\.tpcds\.(\w+)\b.*RuntimeFilters: \[(.*)\]\s*$", line)
        if m is None:
            continue
        filters = re.findall(r"dynamicpruningexpression\((true|.+?) IN dynamicpruning#\d+\)|"
                             r"dynamicpruningexpression\((true)\)", m.group(2))  # fmt: skip
        cols = [re.sub(r"#\d+", "", a or b).replace(" ", "") for a, b in filters]
        out.append(m.group(1) + (f"[{','.join(cols)}]" if cols else ""))
    return " ".join(out)


def run(spark: Any, sql: str) -> tuple[float, list[Any]]:
    t0 = time.perf_counter()
    rows = spark.sql(sql).collect()
    return time.perf_counter() - t0, rows


def profiled(spark: Any, service: Any, sql: str) -> tuple[float, list[Any], dict[str, Any]]:
    """One run of ``sql`` with where its time went (:func:`query_profile.profiled`)."""
    secs, rows, _, prof = query_profile.profiled(spark, service, sql)
    return secs, rows, prof


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument(
        "--cache", default=os.environ.get("LAKESKIP_TPCDS_CACHE", str(ROOT / ".tpcds-cache"))
    )
    ap.add_argument("--warehouse", default=None, help="default: <cache>/warehouse-sf<sf>")
    ap.add_argument("--runs", type=int, default=1, help="timed runs per query and side")
    ap.add_argument(
        "--queries", default="", help="e.g. 42,3,7, run in that order (default: all 99)"
    )
    ap.add_argument("--sides", default="lakeskip,spark,partitioned")
    ap.add_argument("--file-size", default=None, help="lakeskip target-file-size")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every answer is equal")
    ap.add_argument("--no-needed", action="store_true", help="skip the needed-files queries")
    ap.add_argument(
        "--no-warmup", action="store_true",
        help="the profiled first run is the first of the --runs timed runs (no extra untimed "
             "run: the quiet run's 3 executions per query and side, not 4)",
    )  # fmt: skip
    ap.add_argument(
        "--load-only", action="store_true",
        help="load the tables the queries read (and the partitioned side if in --sides), exit",
    )  # fmt: skip
    ap.add_argument("--memory", default="4g")
    ap.add_argument(
        "--fixed-order", action="store_true", help="sides always in --sides order (no rotation)"
    )
    ap.add_argument(
        "--explain", action="store_true",
        help="plan only: which lakeskip scans get a runtime filter, per query",
    )  # fmt: skip
    args = ap.parse_args(argv)
    sides = [s for s in args.sides.split(",") if s]
    data = generate(args.sf, Path(args.cache))
    queries = {int(k): v for k, v in json.loads((data / "queries.json").read_text()).items()}
    if args.queries:
        queries = {n: queries[n] for n in map(int, args.queries.split(","))}
    warehouse = args.warehouse or str(Path(args.cache) / f"warehouse-sf{args.sf:g}")
    file_size = args.file_size or f"{max(256, int(4096 * args.sf))}kb"
    # the plan texts whole (scan_figures reads each fact scan's DataFilters from them)
    session = lakeskip.connect(warehouse, conf={"spark.driver.memory": args.memory,
                                                "spark.sql.shuffle.partitions": "4",
                                                "spark.sql.maxMetadataStringLength": "100000",
                                                "spark.ui.enabled": "false"})  # fmt: skip
    spark = session.spark
    service = service_for(spark)
    load = [os.getloadavg()]
    # only the tables the selected queries read are loaded (a subset of queries at SF 1
    # need not write inventory's 11.7M rows)
    read = set()
    for text in queries.values():
        with contextlib.suppress(Exception):
            tree = sqlglot.parse_one(transpile(text), read="spark")
            read |= {t.name for t in tree.find_all(exp.Table)}
    tables = [t for t in TABLES if t in read]
    _load_lakeskip(session, data, file_size, tables, Path(warehouse))
    files = {t: session.table(f"tpcds.{t}").files() for t in tables}
    for t, paths in files.items():
        spark.read.parquet(*paths).createOrReplaceTempView(f"files_{t}")
        if t in FACTS and not args.no_needed:
            spark.sql(f"SELECT *, input_file_name() AS __file FROM files_{t}")\
                .createOrReplaceTempView(f"needed_{t}")  # fmt: skip
    if "partitioned" in sides:
        _load_partitioned(spark, data, Path(warehouse) / "partitioned", files)
    names = {
        "lakeskip": {t: f"lakeskip.tpcds.{t}" for t in TABLES},
        "spark": {t: f"files_{t}" for t in TABLES},
        "partitioned": {t: (f"part_{t}" if t in FACTS else f"files_{t}") for t in TABLES},
    }
    names["static"] = names["lakeskip"]
    if args.load_only:
        print(f"loaded {len(tables)} tables into {warehouse}; load average {os.getloadavg()}")
        return 0
    if args.explain:
        for n, text in sorted(queries.items()):
            scans = runtime_filtered(spark, with_tables(transpile(text), names["lakeskip"]))
            print(f"q{n}: {scans}", flush=True)
        return 0
    results: list[dict[str, Any]] = []
    bad = 0
    out = ROOT / "bench" / "results" / f"tpcds-{time.strftime('%Y%m%d-%H%M%S')}.json"

    def write(summary: dict[str, Any]) -> None:  # after every query: a cut-off run keeps figures
        out.write_text(json.dumps({"sf": args.sf, "file_size": file_size, "load": load,
                                   "code": _commit(), "summary": summary, "queries": results},
                                  indent=1, default=str))  # fmt: skip

    # --queries runs in the order given (the figures that matter first in a cut-off run)
    for n, text in queries.items() if args.queries else sorted(queries.items()):
        res: dict[str, Any] = {"query": n}
        try:
            sql = transpile(text)
        except Exception as e:
            res["error"] = f"transpile: {e}"
            results.append(res)
            print(f"q{n}: {res['error']}", flush=True)
            continue
        answers: dict[str, list[Any]] = {}
        # the side that runs a query first pays what Spark then caches for the next one
        # (Janino's compiled whole-stage code of the same operators): the first side
        # changes from query to query, and timed runs alternate their order
        k = 0 if args.fixed_order else n % len(sides)
        order = sides[k:] + sides[:k]
        queries_of = {s: with_tables(sql, names[s]) for s in sides}
        for side in order:
            try:
                with _side_conf(spark, side):
                    secs, rows, prof = profiled(spark, service, queries_of[side])  # first run
                figures = scan_figures(spark)
                answers[side] = canonical(rows)
                res[side] = {"first": secs, "rows": len(rows), "files": figures, **prof}
            except Exception as e:
                res[side] = {"error": str(e).splitlines()[0][:200]}
        # --no-warmup: the first run is the first timed run (its order is run 0's)
        times: dict[str, list[float]] = {
            s: [res[s]["first"]] if args.no_warmup and "error" not in res[s] else [] for s in sides
        }
        shift = 1 if args.no_warmup else 0
        for i in range(shift, args.runs):  # after the first run: reversed, then alternating
            for side in order if (i - shift) % 2 else order[::-1]:
                if "error" not in res[side]:
                    with _side_conf(spark, side):
                        times[side].append(run(spark, queries_of[side])[0])
        for side in sides:
            r = res[side]
            if "error" not in r:
                r["seconds"] = statistics.median(times[side]) if times[side] else r["first"]
        got = list(answers.values())
        res["equal"] = len(got) == len(sides) and all(a == got[0] for a in got)
        if not res["equal"] and "error" not in res.get(sides[-1], {}):
            bad += 1
        if not args.no_needed and "error" not in res.get("spark", {}):
            needed: dict[str, int] = {}
            for fact in FACTS:
                for nq in needed_queries(
                    with_tables(sql, {t: f"files_{t}" for t in TABLES if t != fact}),
                    fact,
                    f"needed_{fact}",
                ):
                    try:
                        needed[fact] = needed.get(fact, 0) + len(spark.sql(nq).collect())
                    except Exception:
                        needed[fact] = -1
                        break
            res["needed"] = needed
        results.append(res)
        print(_line(res, sides), f"load {os.getloadavg()[0]:.1f}", flush=True)
        write(_totals(results, sides))
    load.append(os.getloadavg())
    summary = _totals(results, sides)
    print(json.dumps(summary, indent=1))
    write(summary)
    dim = summary["needed"]["through_dimensions"]
    if "lakeskip" in sides and dim["queries"]:
        print(f"fact files of the {dim['queries']} queries whose fact scans are filtered only "
              f"through a dimension: lakeskip kept {dim['lakeskip_kept']} / needed "
              f"{dim['needed']} / total {dim['total']} = {dim['kept_per_needed']}x needed")  # fmt: skip
    print(f"load average before/after: {load}; written {out}")
    if args.check and bad:
        print(f"{bad} queries gave different answers", file=sys.stderr)
        return 1
    return 0


@contextlib.contextmanager
def _side_conf(spark: Any, side: str) -> Iterator[None]:
    """``static``: the lakeskip tables with runtime filtering off (what it costs and saves)."""
    if side != "static":
        yield
        return
    spark.conf.set("spark.lakeskip.runtime-filter.enabled", "false")
    try:
        yield
    finally:
        spark.conf.unset("spark.lakeskip.runtime-filter.enabled")


def _line(res: dict[str, Any], sides: list[str]) -> str:
    parts = [f"q{res['query']}", "equal" if res.get("equal") else "DIFFERENT"]
    for s in sides:
        r = res.get(s, {})
        if "error" in r:
            parts.append(f"{s}: error {r['error'][:80]}")
            continue
        kept = sum(f["kept"] for f in r["files"].values())
        ph = r.get("phases_ms", {})
        planned = sum(v for k, v in ph.items() if k != "execution")
        calls = sum(c[0] for c in r.get("callbacks", {}).values())
        parts.append(
            f"{s} {r['seconds']:.2f}s (first {r['first']:.2f}s: plan {planned:.0f}ms, "
            f"{calls} callbacks, {r.get('jobs', 0)} jobs) files {kept}"
        )
    if "needed" in res:
        parts.append(f"needed {sum(v for v in res['needed'].values() if v > 0)}")
    lake = res.get("lakeskip", {}).get("files")
    if lake:
        parts.append(f"of {sum(f['total'] for f in lake.values())}")
    if _through_dimensions(res, sides):
        parts.append("(fact filtered only through joins)")
    return "  ".join(parts)


def _through_dimensions(res: dict[str, Any], sides: list[str]) -> bool:
    """Whether the query scans a fact table and every fact scan is filtered only through its
    joins (no predicate of its own beyond IS NOT NULL), read from the plain ``spark`` side's
    plan (lakeskip's where that side did not run)."""
    for s in ("spark", *sides):
        files = res.get(s, {}).get("files")
        if files is not None and "error" not in res[s]:
            return bool(files) and all(f.get("own_filter", 0) == 0 for f in files.values())
    return False


def _commit() -> str:
    """The code measured: ``git describe`` of the checkout, or its ``COMMIT`` file (a copy)."""
    if (ROOT / "COMMIT").exists():
        return (ROOT / "COMMIT").read_text().strip()
    with contextlib.suppress(Exception):
        import subprocess

        return subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    return ""


def _totals(results: list[dict[str, Any]], sides: list[str]) -> dict[str, Any]:
    ok = [r for r in results if all("error" not in r.get(s, {"error": 1}) for s in sides)]
    out: dict[str, Any] = {
        "queries": len(results),
        "run_on_every_side": len(ok),
        "equal": sum(1 for r in ok if r.get("equal")),
    }
    for s in sides:
        out[s] = {
            "seconds": round(sum(r[s]["seconds"] for r in ok), 2),
            "first_seconds": round(sum(r[s]["first"] for r in ok), 2),
            "planning_ms": round(
                sum(v for r in ok for k, v in r[s]["phases_ms"].items() if k != "execution")
            ),
            "jobs": sum(r[s]["jobs"] for r in ok),
            "callbacks": {
                op: [
                    sum(r[s]["callbacks"].get(op, [0, 0])[0] for r in ok),
                    round(sum(r[s]["callbacks"].get(op, [0, 0])[1] for r in ok)),
                ]
                for op in sorted({op for r in ok for op in r[s]["callbacks"]})
            },
            "fact_files_kept": sum(f["kept"] for r in ok for f in r[s]["files"].values()),
        }
    if "lakeskip" in sides:
        out["lakeskip"]["fact_files_total"] = sum(
            f["total"] for r in ok for f in r["lakeskip"]["files"].values()
        )
    with_needed = [r for r in ok if r.get("needed") and all(v >= 0 for v in r["needed"].values())]

    def files_of(rs: list[dict[str, Any]]) -> dict[str, Any]:
        fig: dict[str, Any] = {
            "queries": len(rs),
            "needed": sum(sum(r["needed"].values()) for r in rs),
            **{
                f"{s}_kept": sum(f["kept"] for r in rs for f in r[s]["files"].values())
                for s in sides
            },
        }
        if "lakeskip" in sides:
            fig["total"] = sum(f["total"] for r in rs for f in r["lakeskip"]["files"].values())
            fig["kept_per_needed"] = (
                round(fig["lakeskip_kept"] / fig["needed"], 3) if fig["needed"] else None
            )
        return fig

    out["needed"] = files_of(with_needed)
    # the measure: the queries whose fact scans are filtered only through a dimension
    dim = [r for r in with_needed if _through_dimensions(r, sides)]
    out["needed"]["through_dimensions"] = {
        **files_of(dim),
        "query_numbers": [r["query"] for r in dim],
    }
    return out


def _load_lakeskip(
    session: Any, data: Path, file_size: str, tables: list[str], warehouse: Path
) -> None:
    """The lakeskip tables, written once per warehouse (fact tables date-clustered); a table
    whose load was cut off (its ``.loading-<table>`` marker left) is dropped and loaded again."""
    spark = session.spark
    session.sql("CREATE DATABASE IF NOT EXISTS tpcds")
    existing = {
        r[1] if len(r) > 1 else r[0] for r in spark.sql("SHOW TABLES IN lakeskip.tpcds").collect()
    }
    for t in tables:
        marker = warehouse / f".loading-{t}"
        if t in existing and marker.exists():
            session.sql(f"DROP TABLE tpcds.{t}")
        elif t in existing:
            continue
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        df = spark.read.parquet(str(data / f"{t}.parquet"))
        cols = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in df.schema.fields)
        t0 = time.perf_counter()
        session.sql(f"CREATE TABLE tpcds.{t} ({cols}) WITH ('target-file-size' = '{file_size}')")
        steps = [_step(spark, "write", functools.partial(session.write, df, f"tpcds.{t}"))]
        if t in FACTS:
            sql = (f"CALL sys.compact(table => 'tpcds.{t}', order_strategy => 'order', "
                   f"order_by => '{FACTS[t]}')")  # fmt: skip
            steps.append(_step(spark, "compact", functools.partial(session.sql, sql)))
        marker.unlink()
        print(f"lakeskip.tpcds.{t}: {len(session.table(f'tpcds.{t}').files())} files, "
              f"{time.perf_counter() - t0:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
        for line in steps:
            print("  " + line, flush=True)


def _step(spark: Any, name: str, fn: Any) -> str:
    """Run ``fn`` (a write or a compaction) and say where its time went: wall seconds, the
    write tasks' Python stages (``latest_write_timings``: CPU seconds per stage, ``input`` the
    wait for Spark's rows) and each Spark stage it ran (tasks, wall, task run and CPU)."""
    from lakeskip.spark.write.writer import latest_write_timings

    store = spark._jsc.sc().statusStore()
    before = {int(s.stageId()) for s in _stages(store)}
    earlier = latest_write_timings()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    spark._jsc.sc().listenerBus().waitUntilEmpty()
    parts = [f"{name} {wall:.1f} s"]
    timings = latest_write_timings()  # a write through spark.sql: the callback thread's
    if timings is not None and timings is not earlier:
        cpu = ", ".join(f"{k} {v:.1f}" for k, v in timings.cpu_by_stage().items() if v >= 0.05)
        parts.append(f"python cpu s: {cpu} (input wait {timings.input:.1f} s)")
    for s in sorted(_stages(store), key=lambda s: int(s.stageId())):
        if int(s.stageId()) in before:
            continue
        sub, done = s.submissionTime(), s.completionTime()
        span = float("nan")
        if sub.isDefined() and done.isDefined():
            span = (done.get().getTime() - sub.get().getTime()) / 1000
        parts.append(f"stage {s.stageId()} {str(s.name()).split(' at ')[0][:40]}: "
                     f"{s.numTasks()} tasks, {span:.1f} s wall, run "
                     f"{s.executorRunTime() / 1000:.1f} s, cpu {s.executorCpuTime() / 1e9:.1f} s")  # fmt: skip
    return "\n  ".join(parts)


def _stages(store: Any) -> list[Any]:
    """Every stage in Spark's status store (``AppStatusStore.stageList``, Spark 4's five
    arguments, the last four its defaults; none if it has another signature: the profile
    then lacks its Spark stages)."""
    try:
        defaults = [getattr(store, f"stageList$default${i}")() for i in range(2, 6)]
        seq = store.stageList(None, *defaults)
    except Exception:
        return []
    return [seq.apply(i) for i in range(seq.size())]


def _load_partitioned(spark: Any, data: Path, root: Path, files: dict[str, list[str]]) -> None:
    """Fact tables partitioned by their date key (plain Spark's layout for DPP)."""
    for t, key in FACTS.items():
        if t not in files:
            continue
        target = root / t
        if not (target / "_SUCCESS").exists():
            spark.read.parquet(*files[t]).repartition(key).write.mode("overwrite")\
                .partitionBy(key).parquet(str(target))  # fmt: skip
        spark.read.parquet(str(target)).createOrReplaceTempView(f"part_{t}")


if __name__ == "__main__":
    sys.exit(main())
