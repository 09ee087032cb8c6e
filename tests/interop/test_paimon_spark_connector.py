"""Tables written by Apache Paimon's own Spark connector, read, pruned and written by lakeskip in
the same Spark application, then read again by Paimon's connector.

The application is a child process (its own Spark session: Paimon's jars and session extensions
must be there when the session starts, which the shared session cannot have). Both catalogs sit
on one warehouse: ``paimon`` (``org.apache.paimon.spark.SparkCatalog``) and ``lakeskip``.

* an append table with Paimon's bloom-filter and bitmap indexes (embedded and in ``.index``
  files), written by four Paimon INSERTs: lakeskip reads Paimon's rows, keeps fewer files than
  all for an indexed point lookup and the same rows; lakeskip INSERTs, DELETEs and compacts;
  both read the expected rows;
* a primary-key table with deletion vectors in two buckets, upserted by Paimon: lakeskip reads
  it, upserts and DELETEs, compacts; Paimon reads, writes again, and both read.

Paimon 2.0.0's ``PaimonSparkSessionExtensions`` do not load on Spark 4.3 (an
``AbstractMethodError`` in its Spark 4.1 row-level rewrite rules), so Paimon's side has no
``CALL`` procedures and no DELETE here: its compactions are not exercised by this test.

Every read is compared with rows computed here, in plain Python (the oracle).

Central serves no Paimon Spark connector for Spark 4 (bench/README.md says what was tried,
last on 2026-11-29), so the connector's jars are named by ``LAKESKIP_PAIMON_SPARK_JARS``;
without it the test skips, saying so. The same kinds, written by Paimon 2.0.0's Java API
instead of its connector, run in CI: ``paimon_java/test_paimon_newest_tables.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.interop

JARS = os.environ.get("LAKESKIP_PAIMON_SPARK_JARS", "")

APP = r"""
import json, sys
from pathlib import Path
import lakeskip
from lakeskip.spark.front.builder import build_spark_session
from lakeskip.spark.front.catalog_setup import catalog_conf
from lakeskip.spark.jvm.build import build_jar

wh, jars = Path(sys.argv[1]), sys.argv[2].split(":")
conf = catalog_conf(str(wh), "lakeskip", jar=build_jar())
conf["spark.jars"] = ",".join([conf["spark.jars"], *jars])
# Paimon 2.0.0's session extensions do not load on Spark 4.3 (bench/README.md): the catalog
# alone, so no CALL paimon.sys.* and no Paimon DELETE / UPDATE here
conf["spark.paimon.requiredSparkConfsCheck.enabled"] = "false"
conf["spark.sql.catalog.paimon"] = "org.apache.paimon.spark.SparkCatalog"
conf["spark.sql.catalog.paimon.warehouse"] = wh.as_uri()
conf["spark.sql.shuffle.partitions"] = "2"
spark = build_spark_session(master="local[2]", conf=conf, app_name="paimon-interop")
s = lakeskip.connect(str(wh), spark=spark)
out = {}

def rows(sql):
    return sorted(([None if v is None else str(v) for v in r] for r in spark.sql(sql).collect()),
                  key=repr)

def both(tag, table, where=""):
    out[tag] = {e: rows(f"SELECT * FROM {e}.db.{table} {where}") for e in ("paimon", "lakeskip")}

def kept(sql):
    s.sql(sql).collect()
    (r,) = s.last_reports
    return [r.kept_files, r.total_files]

spark.sql("CREATE NAMESPACE paimon.db")
# -- append table with Paimon's file indexes
spark.sql(
    "CREATE TABLE paimon.db.ap (id BIGINT, s STRING, b INT) TBLPROPERTIES ("
    "'file-index.bloom-filter.columns' = 'id,s', 'file-index.bloom-filter.s.items' = '50', "
    "'file-index.bloom-filter.id.items' = '50', 'file-index.bitmap.columns' = 'b', "
    f"'file-index.in-manifest-threshold' = '{sys.argv[3]}')"
)
for f in range(4):
    spark.sql(
        f"INSERT INTO paimon.db.ap SELECT /*+ REPARTITION(1) */ id, concat('s', id), "
        f"CAST(id % 7 + {f} * 10 AS INT) FROM range({f * 50}, {f * 50 + 50})"
    )
both("ap_paimon", "ap")
out["ap_kept_id"] = kept("SELECT * FROM lakeskip.db.ap WHERE id = 120")
out["ap_kept_s"] = kept("SELECT * FROM lakeskip.db.ap WHERE s = 's33'")
out["ap_kept_b"] = kept("SELECT * FROM lakeskip.db.ap WHERE b = 23")
out["ap_lookup"] = rows("SELECT * FROM lakeskip.db.ap WHERE s = 's33'")
spark.sql("INSERT INTO lakeskip.db.ap SELECT id, concat('s', id), 99 FROM range(200, 210)")
spark.sql("DELETE FROM lakeskip.db.ap WHERE id % 10 = 3")
both("ap_lakeskip", "ap")
s.table("db.ap").compact()
both("ap_compacted", "ap")
out["ap_files_after"] = len(s.table("db.ap").files())
# -- primary-key table with deletion vectors
spark.sql(
    "CREATE TABLE paimon.db.pk (id BIGINT, v STRING, n INT) TBLPROPERTIES ("
    "'primary-key' = 'id', 'bucket' = '2', 'deletion-vectors.enabled' = 'true')"
)
spark.sql("INSERT INTO paimon.db.pk SELECT id, concat('a', id), 1 FROM range(0, 40)")
spark.sql("INSERT INTO paimon.db.pk SELECT id, concat('b', id), 2 FROM range(30, 50)")
both("pk_paimon", "pk")
spark.sql("INSERT INTO lakeskip.db.pk SELECT id, concat('c', id), 3 FROM range(45, 60)")
spark.sql("DELETE FROM lakeskip.db.pk WHERE id % 9 = 1")
both("pk_lakeskip", "pk")
# lakeskip's procedures through its Python API: Paimon's parser claims every CALL ... sys.compact
s.table("db.pk").compact()
both("pk_compacted", "pk")
spark.sql("INSERT INTO paimon.db.pk SELECT id, concat('d', id), 4 FROM range(55, 65)")
both("pk_paimon_again", "pk")
spark.stop()
print(json.dumps(out))
"""


def _text(rows: list[tuple[Any, ...]]) -> list[list[str | None]]:
    return sorted(([None if v is None else str(v) for v in r] for r in rows), key=repr)


def _append_oracle(lakeskip_writes: bool) -> list[list[str | None]]:
    rows = [(i, f"s{i}", i % 7 + (i // 50) * 10) for i in range(200)]
    if lakeskip_writes:
        rows += [(i, f"s{i}", 99) for i in range(200, 210)]
        rows = [r for r in rows if r[0] % 10 != 3]
    return _text(rows)


def _pk_oracle(step: int) -> list[list[str | None]]:
    table: dict[int, tuple[Any, ...]] = {i: (i, f"a{i}", 1) for i in range(40)}
    table |= {i: (i, f"b{i}", 2) for i in range(30, 50)}
    if step >= 1:
        table |= {i: (i, f"c{i}", 3) for i in range(45, 60)}
        table = {k: r for k, r in table.items() if k % 9 != 1}
    if step >= 2:
        table |= {i: (i, f"d{i}", 4) for i in range(55, 65)}
    return _text(list(table.values()))


@pytest.mark.parametrize("threshold", ["500 b", "1 b"], ids=["embedded", "index-files"])
def test_lakeskip_reads_and_writes_tables_of_paimons_spark_connector(
    tmp_path: Path, threshold: str
) -> None:
    jars = [j for j in JARS.split(os.pathsep) if j]
    if not jars:
        pytest.skip(
            "LAKESKIP_PAIMON_SPARK_JARS names no Paimon Spark connector (Central has none for "
            "Spark 4; bench/README.md)"
        )
    missing = [j for j in jars if not Path(j).is_file()]
    assert not missing, f"LAKESKIP_PAIMON_SPARK_JARS names missing files: {missing}"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(APP),
            str(tmp_path / "wh"),
            ":".join(jars),
            threshold,
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-6000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])

    for tag, expected in (
        ("ap_paimon", _append_oracle(False)),
        ("ap_lakeskip", _append_oracle(True)),
        ("ap_compacted", _append_oracle(True)),
    ):
        assert out[tag]["paimon"] == expected, f"{tag}: Paimon's rows"
        assert out[tag]["lakeskip"] == expected, f"{tag}: lakeskip's rows"
    # Paimon's indexes prune in lakeskip: one file of four holds each value
    for key in ("ap_kept_id", "ap_kept_s", "ap_kept_b"):
        kept, total = out[key]
        assert total == 4 and 1 <= kept < total, f"{key}: {kept}/{total}"
    assert out["ap_lookup"] == [["33", "s33", str(33 % 7)]]
    for tag, step in (
        ("pk_paimon", 0),
        ("pk_lakeskip", 1),
        ("pk_compacted", 1),
        ("pk_paimon_again", 2),
    ):
        expected = _pk_oracle(step)
        assert out[tag]["paimon"] == expected, f"{tag}: Paimon's rows"
        assert out[tag]["lakeskip"] == expected, f"{tag}: lakeskip's rows"
