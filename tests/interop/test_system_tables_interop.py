"""lakeskip's system tables against Paimon 0.9.0's own (``PaimonProbe`` op ``system``) and
pypaimon 2.1's (``catalog.get_table("db.t$snapshots")``) on one lakeskip-written table after
inserts, an ALTER, tags, a DELETE with deletion vectors and expiry.

Every column both sides have is compared, as text. lakeskip follows Paimon 1.4
(``release-1.4.2``'s ``table/system/*.java``), so Paimon 0.9's text forms that changed since
are mapped to 1.4's first: a partition row ``[a]`` -> ``{a}`` (``t$files``, the manifest
partition stats), ``t$partitions``' ``[a]`` -> ``dt=a``; 0.9 and pypaimon print a data file's
name where 1.4 prints its path (names compared); 0.9's ``t$read_optimized`` is ``t$ro``.
0.9's ``t$ro`` of a deletion-vector table reads every level above 0 (1.4: the top level
only, as lakeskip), so it is compared where the two agree. 0.9's ``t$partitions`` ignores time
travel (1.4 honours it, as lakeskip does), so only its
latest state is compared. Times are compared by value: Paimon renders
commit / schema times in the JVM's default zone (the probe sets it to the Spark session's),
pypaimon in the process's (``TZ``), lakeskip in the Spark session's.

pypaimon 2.1 departs from Paimon's Java on a few columns; lakeskip follows Java there, so
those are not compared (``PYPAIMON_DIFFERS`` gives the reasons). Paimon 0.9 has no
``t$table_indexes``; pypaimon has no ``t$audit_log`` / ``t$read_optimized``.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Row
from tests.interop.test_pypaimon import pypaimon_python  # noqa: F401

pytestmark = pytest.mark.interop

PIN = "'file-index.paimon-compatibility'='0.9'"

# JSON text compared as JSON: Paimon prints a schema's options in Java HashMap order
JSON_COLUMNS = {"fields", "partition_keys", "primary_keys", "options"}
# partition rows, printed by Paimon 0.9 as Arrays.toString, by 1.4 as a ROW -> STRING cast
PARTITION_ROWS = {"partition", "min_partition_stats", "max_partition_stats"}

# (table, column) -> why pypaimon 2.1's value is not Paimon's (Java 1.4.2, which lakeskip follows)
PYPAIMON_DIFFERS = {
    ("files", "partition"): "pypaimon prints dt=a, Java FilesTable casts the row: {a}",
    ("table_indexes", "partition"): "pypaimon prints dt=a, Java TableIndexesTable casts: {a}",
    ("files", "null_value_counts"): "pypaimon prints JSON, Java Map.toString: {dt=0, id=0}",
    ("files", "min_value_stats"): "pypaimon prints JSON, Java Map.toString",
    ("files", "max_value_stats"): "pypaimon prints JSON, Java Map.toString",
    ("files", "file_source"): "pypaimon prints the byte (0), Java FileSource.toString (APPEND)",
}
# pypaimon drops a file's creation-time milliseconds (DataFileMeta.creation_time_epoch_millis
# goes through time.mktime): compared to the second
PYPAIMON_SECONDS = {("files", "creation_time")}


def _is_time(field: str) -> bool:
    return field.endswith("_time") or field == "created_at"


def _ours(v: Any) -> str | None:
    """A value lakeskip's Spark rows hold, as the readers' text."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        return v.isoformat()
    if isinstance(v, Row):
        return json.dumps(v.asDict(recursive=True), sort_keys=True)
    if isinstance(v, list):
        items = [x.asDict(recursive=True) if isinstance(x, Row) else x for x in v]
        return json.dumps(items, sort_keys=True)
    return str(v)


def _norm(reader: str, system: str, field: str, v: str | None, keys: list[str]) -> Any:
    if v is None:
        return None
    if system == "schemas" and field in JSON_COLUMNS:
        return json.dumps(json.loads(v), sort_keys=True)
    if field == "file_path":
        return v.rsplit("/", 1)[-1]
    if _is_time(field):
        t = datetime.datetime.fromisoformat(v)
        if reader == "pypaimon" and (system, field) in PYPAIMON_SECONDS:
            t = t.replace(microsecond=0)
        return t.isoformat()
    if reader == "paimon09" and field in PARTITION_ROWS and v.startswith("["):
        values = v[1:-1].split(", ")
        if system == "partitions":  # 1.4's PartitionsTable: k=v joined by '/'
            return "/".join(f"{k}={x}" for k, x in zip(keys, values, strict=True))
        return "{" + ", ".join(values) + "}"
    return v


def _compare(
    df: Any, theirs: dict[str, Any], reader: str, system: str, keys: list[str], label: str
) -> int:
    """Compare lakeskip's rows (a Spark DataFrame) with a reader's ``{"fields", "rows"}`` on
    every common column; returns the number of rows."""
    skip = {f for (s, f) in PYPAIMON_DIFFERS if s == system} if reader == "pypaimon" else set()
    common = [f for f in theirs["fields"] if f in df.columns and f not in skip]
    assert len(common) >= 2, (system, theirs["fields"], df.columns)
    ours = sorted(
        (tuple(_norm(reader, system, f, _ours(r[f]), keys) for f in common) for r in df.collect()),
        key=repr,
    )
    idx = [theirs["fields"].index(f) for f in common]
    got = sorted(
        (
            tuple(_norm(reader, system, f, row[i], keys) for f, i in zip(common, idx, strict=True))
            for row in theirs["rows"]
        ),
        key=repr,
    )
    assert ours == got, f"{reader} {label}: columns {common}\nlakeskip {ours}\n{reader} {got}"
    return len(ours)


def _zone(session: Any) -> str:
    df = session.sql("SELECT 1")
    zone: str = df.sparkSession.conf.get("spark.sql.session.timeZone")
    return zone


# Paimon 0.9's name of a system table that 1.x renamed
PAIMON09_NAMES = {"read_optimized": "ro"}


def _paimon09(session: Any, paimon_java: Any, wh: Path, system: str, tail: str = "") -> int:
    name = PAIMON09_NAMES.get(system, system)
    op: dict[str, Any] = {"op": "system", "table": f"default.t${name}", "zone": _zone(session)}
    if tail:
        op["options"] = {"scan.snapshot-id": tail}
    (theirs,) = paimon_java(wh, op)
    travel = f" VERSION AS OF {tail}" if tail else ""
    df = session.sql(f"SELECT * FROM `t${system}`{travel}")
    return _compare(df, theirs, "paimon09", system, ["dt"], f"t${system}{travel}")


PYPAIMON_SYSTEM = r"""
import datetime, json, sys
from pypaimon import CatalogFactory
catalog = CatalogFactory.create({"warehouse": sys.argv[1]})
def text(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        return v.isoformat()
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True)
    return str(v)
out = {}
for name in sys.argv[2:]:
    rb = catalog.get_table("default.t$" + name).new_read_builder()
    a = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    fields = a.schema.names
    out[name] = {"fields": fields, "rows": [[text(r[f]) for f in fields] for r in a.to_pylist()]}
print(json.dumps(out))
"""


def _pypaimon(session: Any, python: str, wh: Path, *systems: str) -> dict[str, int]:
    env = {**os.environ, "TZ": _zone(session)}  # pypaimon renders commit times in local time
    r = subprocess.run(
        [python, "-c", PYPAIMON_SYSTEM, str(wh), *systems],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert r.returncode == 0, f"pypaimon failed:\n{r.stderr[-3000:]}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return {
        s: _compare(session.sql(f"SELECT * FROM `t${s}`"), out[s], "pypaimon", s, ["dt"], s)
        for s in systems
    }


def _build(session: Any) -> None:
    """Three inserts into two partitions, an ALTER (schema 1), tag ``one`` on snapshot 1, a
    DELETE that writes deletion vectors, tag ``last``."""
    session.sql(
        "CREATE TABLE t (id BIGINT, s STRING, dt STRING) PARTITIONED BY (dt) WITH ("
        "'file-index.bloom-filter.columns'='s', 'deletion-vectors.enabled'='true', "
        f"{PIN})"
    )
    for i, dt in enumerate(["a", "b", "a"]):
        session.sql(
            f"INSERT INTO t SELECT id, concat('s', CAST(id AS STRING)), '{dt}' "
            f"FROM range({i * 10}, {i * 10 + 10}, 1, 1)"
        )
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('snapshot.num-retained.min'='1')")
    session.sql("CALL sys.create_tag(table => 't', tag => 'one', snapshot => 1)")
    session.sql("DELETE FROM t WHERE id IN (3, 25)")
    session.sql("CALL sys.create_tag(table => 't', tag => 'last')")


PAIMON09_SYSTEMS = ("snapshots", "schemas", "options", "tags", "files", "manifests", "partitions")


def test_system_tables_agree_with_paimon_09(session: Any, paimon_java: Any, tmp_path: Path) -> None:
    wh = tmp_path / "warehouse"
    _build(session)
    counts = {name: _paimon09(session, paimon_java, wh, name) for name in PAIMON09_SYSTEMS}
    assert counts == {
        "snapshots": 4,
        "schemas": 2,
        "options": 4,
        "tags": 2,
        "files": 3,
        "manifests": 3,  # one per INSERT: the DV-only DELETE lists no (empty) manifest
        "partitions": 2,
    }
    assert _paimon09(session, paimon_java, wh, "files", "1") == 1
    assert _paimon09(session, paimon_java, wh, "manifests", "2") == 2

    session.sql("CALL sys.expire_snapshots(table => 't', retain_max => 1)")
    after = {name: _paimon09(session, paimon_java, wh, name) for name in PAIMON09_SYSTEMS}
    assert (after["snapshots"], after["tags"], after["files"]) == (1, 2, 3)


def test_system_tables_agree_with_pypaimon(
    session: Any,
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    wh = tmp_path / "warehouse"
    _build(session)
    systems = (*PAIMON09_SYSTEMS, "table_indexes")
    counts = _pypaimon(session, pypaimon_python, wh, *systems)
    assert (counts["snapshots"], counts["table_indexes"], counts["manifests"]) == (4, 1, 3)
    session.sql("CALL sys.expire_snapshots(table => 't', retain_max => 1)")
    after = _pypaimon(session, pypaimon_python, wh, *systems)
    assert (after["snapshots"], after["tags"], after["table_indexes"]) == (1, 2, 1)


@pytest.mark.parametrize("dv", ["false", "true"])
def test_audit_log_and_read_optimized_agree_with_paimon_09(
    session: Any, paimon_java: Any, tmp_path: Path, dv: str
) -> None:
    """``t$audit_log`` of a primary-key table after inserts, upserts and a DELETE (``-D``
    records without DVs; DVs otherwise), now and at an older snapshot; ``t$read_optimized``
    (the top-level files only) before and after a full compaction and one more insert."""
    wh = tmp_path / "warehouse"
    session.sql(
        "CREATE TABLE t (id BIGINT, s STRING, dt STRING) PARTITIONED BY (dt) WITH ("
        f"'primary-key'='id,dt', 'bucket'='2', 'deletion-vectors.enabled'='{dv}', {PIN})"
    )
    session.sql("INSERT INTO t SELECT id, concat('s', CAST(id AS STRING)), 'a' FROM range(0, 8)")
    session.sql("INSERT INTO t SELECT id, 'up', 'a' FROM range(4, 10)")
    session.sql("DELETE FROM t WHERE id IN (1, 6)")
    n = _paimon09(session, paimon_java, wh, "audit_log")
    kinds = {r[0] for r in session.sql("SELECT rowkind FROM `t$audit_log`").collect()}
    assert (n, kinds) == ((10, {"+I", "-D"}) if dv == "false" else (8, {"+I"}))
    assert _paimon09(session, paimon_java, wh, "audit_log", "1") == 8

    # Paimon 0.9's t$ro of a deletion-vector table reads every level above 0 (its
    # DataTableBatchScan replaces ReadOptimizedTable's level filter with `level > 0`); 1.4
    # reads the top level only (withLevel(numLevels - 1), kept beside that filter), as lakeskip
    # does. They agree when every file is top-level (after a full compaction) or at level 0.
    ro = "read_optimized"
    if dv == "false":
        assert _paimon09(session, paimon_java, wh, ro) == 0  # all level 0
    session.sql("CALL sys.compact(table => 't')")
    assert _paimon09(session, paimon_java, wh, ro) == 8
    if dv == "false":
        session.sql("INSERT INTO t VALUES (100, 'new', 'a'), (2, 'up2', 'a')")
        assert _paimon09(session, paimon_java, wh, ro) == 8  # the level-0 rows are not read
