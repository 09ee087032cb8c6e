"""Runs ``tests/fixtures/sql/create_table.sql`` through one way of running SQL and records, per
case, the table's schema file (normalised) or the one-line error. Imported by
``test_ddl_paths.py`` for the in-process paths, and run as a script there for the sessions
that need their own JVM (built by ``lakeskip.connect()``, with and without
``as_session_catalog``)::

    python tests/spark/front/ddl_corpus.py plain|session_catalog <warehouse>

prints one JSON object: ``{"paths": {path: {case: outcome}}, "upsert": {path: rows}}``, and
for ``session_catalog`` also ``"new_session"``: what the freshly built session answered first
(a table made with Paimon's WITH, a pruned SELECT and CALL sys.x through ``spark_catalog``),
and ``"evolution"``: mergeSchema writes and CREATE TABLE LIKE (``_with_the_extension``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "sql" / "create_table.sql"

#: the upsert of issue 28, through plain spark.sql ({t}: the table's name on the path)
UPSERT = (
    "CREATE TABLE {t} (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
    "WITH ('file-index.bloom-filter.columns'='v')",
    "INSERT INTO {t} VALUES (1, 'a'), (2, 'b')",
    "INSERT INTO {t} VALUES (1, 'a2')",
)


@dataclass(frozen=True)
class Case:
    name: str
    sql: str  # with {t}
    error: str | None  # regex the one-line error must match; None: must succeed


def load_corpus(path: Path = CORPUS) -> list[Case]:
    cases: list[Case] = []
    for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
        lines = [ln for ln in block.strip().splitlines() if not ln.startswith("--")]
        if not lines:
            continue
        text = "\n".join(lines)
        sql, _, expect = text.rpartition(";")
        expect = expect.strip()
        if expect == "ok":
            error = None
        elif expect.startswith("error:"):
            error = expect[len("error:") :].strip()
        else:
            raise ValueError(f"bad expectation {expect!r} in {path}")
        cases.append(Case(f"c{len(cases):02d}", sql.strip(), error))
    return cases


def schema_file(warehouse: str, db: str, table: str) -> dict[str, Any] | None:
    """The table's latest schema file, without its creation time; ``None``: no table."""
    schema_dir = Path(warehouse) / f"{db}.db" / table / "schema"
    files = sorted(schema_dir.glob("schema-*"), key=lambda p: int(p.name.split("-")[1]))
    if not files:
        return None
    out: dict[str, Any] = json.loads(files[-1].read_text(encoding="utf-8"))
    out.pop("timeMillis", None)
    return out


def one_line(e: BaseException) -> str:
    from lakeskip.errors import LakeskipError
    from lakeskip.spark.bridge.error_text import spark_error_message

    text = str(e) if isinstance(e, LakeskipError) else spark_error_message(e)
    return text if "\n" not in text.strip() else "NOT ONE LINE: " + text


def run_path(
    run: Callable[[str], object],
    name: Callable[[str], str],
    where: Callable[[str], tuple[str, str]],
    warehouse: str,
    cases: list[Case],
) -> dict[str, Any]:
    """Each case through ``run`` with ``{t}`` = ``name(case)``; the outcome: the schema file
    (``where(case)`` = db, table in ``warehouse``) or ``{"error": message, "left_table": ...}``."""
    out: dict[str, Any] = {}
    for case in cases:
        sql = case.sql.replace("{t}", name(case.name))
        db, table = where(case.name)
        try:
            run(sql)
        except Exception as e:
            out[case.name] = {
                "error": one_line(e),
                "typed": type(e).__name__,
                "left_table": schema_file(warehouse, db, table) is not None,
            }
            continue
        out[case.name] = {"schema": schema_file(warehouse, db, table)}
    return out


def upsert_rows(run: Callable[[str], object], query: Callable[[str], list[Any]], t: str) -> Any:
    for sql in UPSERT:
        run(sql.replace("{t}", t))
    return sorted([list(r) for r in query(f"SELECT id, v FROM {t}")])


def _with_the_extension(session: Any, run: Callable[[str], object], query: Any) -> dict[str, Any]:
    """What needs ``LakeExtensions`` or ``spark_catalog`` (issue 41): a DataFrame write with
    ``mergeSchema`` / ``write.merge-schema`` adds its new columns (on spark_catalog's table
    ``t`` and on the lakeskip catalog), one without the option is refused and changes
    nothing; ``CREATE TABLE x LIKE t`` on spark_catalog copies a lakeskip table."""
    spark = session.spark
    out: dict[str, Any] = {}

    def names(table: str) -> list[str]:
        return [f.name for f in session.catalog.get_table(table).schema.row_type]

    run("CREATE TABLE lakeskip.default.m (id INT, k STRING)")
    run("INSERT INTO lakeskip.default.m VALUES (1, 'a')")
    for name, key in (("t", "mergeSchema"), ("lakeskip.default.m", "write.merge-schema")):
        df = spark.createDataFrame([(9, "z", 90)], "id INT, k STRING, n INT")
        try:
            df.writeTo(name).append()
        except Exception as e:
            out[f"{name} refused"] = one_line(e)
        out[f"{name} columns before"] = names("default." + name.split(".")[-1])
        df.writeTo(name).option(key, "true").append()
        out[f"{name} columns"] = names("default." + name.split(".")[-1])
        out[f"{name} rows"] = sorted([list(r) for r in query(f"SELECT * FROM {name}")], key=repr)
    try:
        run("CREATE TABLE tl LIKE t")
        out["like"] = {
            "columns": names("default.tl"),
            "options": session.catalog.get_table("default.tl").schema.options,
            "rows": [list(r) for r in query("SELECT * FROM tl")],
        }
    except Exception as e:
        out["like"] = one_line(e)
    return out


def _main(mode: str, warehouse: str) -> None:
    import lakeskip

    session = lakeskip.connect(
        warehouse,
        master="local[1]",
        as_session_catalog=mode == "session_catalog",
        conf={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "1",
            "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        },
    )
    spark = session.spark

    def run(sql: str) -> object:
        return spark.sql(sql).collect()

    def query(sql: str) -> list[Any]:
        return spark.sql(sql).collect()

    cases = load_corpus()
    paths: dict[str, Any] = {}
    upsert: dict[str, Any] = {}
    new_session: dict[str, Any] = {}
    evolution: dict[str, Any] = {}
    if mode == "session_catalog":
        # the first way in, in its own JVM: lakeskip.connect() with the catalog in the conf,
        # installed as spark_catalog, and the parser extension for WITH / CALL sys.x
        run("CREATE TABLE t (id BIGINT, k STRING) WITH ('file-index.bloom-filter.columns'='k')")
        run("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        new_session["rows"] = [list(r) for r in query("SELECT * FROM t WHERE k = 'b'")]
        run("CALL sys.rewrite_file_index(table => 'default.t')")
        new_session["catalog"] = session.catalog_name
        new_session["options"] = session.catalog.get_table("default.t").schema.options
        evolution = _with_the_extension(session, run, query)
        run("CREATE DATABASE IF NOT EXISTS q")
        paths["spark_catalog unqualified"] = run_path(
            run, lambda c: f"u_{c}", lambda c: ("default", f"u_{c}"), warehouse, cases
        )
        paths["spark_catalog qualified"] = run_path(
            run, lambda c: f"spark_catalog.q.{c}", lambda c: ("q", c), warehouse, cases
        )
        upsert["spark_catalog unqualified"] = upsert_rows(run, query, "k_unqualified")
        upsert["spark_catalog qualified"] = upsert_rows(run, query, "spark_catalog.q.k")
    run("CREATE DATABASE IF NOT EXISTS lakeskip.lq")
    paths["lakeskip qualified"] = run_path(
        run, lambda c: f"lakeskip.lq.{c}", lambda c: ("lq", c), warehouse, cases
    )
    upsert["lakeskip qualified"] = upsert_rows(run, query, "lakeskip.lq.k")
    run("CREATE DATABASE IF NOT EXISTS lakeskip.lu")
    run("USE lakeskip.lu")
    paths["lakeskip unqualified (USE lakeskip.lu)"] = run_path(
        run, lambda c: c, lambda c: ("lu", c), warehouse, cases
    )
    upsert["lakeskip unqualified (USE lakeskip.lu)"] = upsert_rows(run, query, "k")
    print(
        json.dumps(
            {"paths": paths, "upsert": upsert, "new_session": new_session, "evolution": evolution}
        )
    )


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2])
