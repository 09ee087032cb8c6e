"""Fixed-bucket append tables between lakeskip and pypaimon 2.1 (its own virtualenv).

pypaimon 2.1 has its own port of Paimon's bucket function (``FixedBucketRowKeyExtractor``):
it must agree with lakeskip's on every row of a lakeskip table (a four-column bucket key of
mixed types with nulls), read the same rows, and lakeskip must find every row of a
pypaimon-written bucketed table in the bucket its own function gives.
"""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.interop.test_pypaimon import pypaimon_python, run_pypaimon  # noqa: F401

from lakeskip.catalog import Catalog
from lakeskip.catalog.format.bucket import bucket_ids, bucket_of
from lakeskip.catalog.write.data_writer import write_all
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.expressions import And, EqualTo
from lakeskip.planner.scan import ScanPlanner
from lakeskip.types import BIGINT, DATE, STRING, RowType, decimal_type

pytestmark = pytest.mark.interop

ROW = RowType.of(
    ("id", BIGINT), ("name", STRING), ("day", DATE), ("price", decimal_type(10, 2)), ("dt", STRING)
)
KEY = "name,day,price,id"

READ_SCRIPT = """
    import json, sys
    from pypaimon import CatalogFactory
    from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor
    t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table(sys.argv[2])
    rb = t.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    ex = FixedBucketRowKeyExtractor(t.table_schema)
    buckets = []
    for batch in data.to_batches():
        buckets += ex.extract_partition_bucket_batch(batch)[1]
    print(json.dumps({"rows": data.to_pylist(), "buckets": buckets}, default=str))
"""


def _rows(lo: int, hi: int) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "name": None if i % 11 == 0 else f"name-{i % 13}" * (i % 3 + 1),
            "day": None if i % 17 == 0 else datetime.date(2024, 1, 1) + datetime.timedelta(i % 40),
            "price": decimal.Decimal(i * 37 - 500).scaleb(-2),
            "dt": f"d{i % 2}",
        }
        for i in range(lo, hi)
    ]


def _jsonish(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, default=str, sort_keys=True) for r in rows)


def test_pypaimon_reads_lakeskip_bucketed_table_and_agrees_on_every_bucket(
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table(
        "db.b", ROW, partition_keys=["dt"], options={"bucket": "6", "bucket-key": KEY}
    )
    spec = WriteSpec(file_io=t.file_io, table_path=t.path, schema=t.schema)
    written = _rows(0, 150) + _rows(150, 230)
    for lo, hi in ((0, 150), (150, 230)):
        t.commit(write_all(spec, [pa.Table.from_pylist(_rows(lo, hi), schema=ROW.to_arrow())]))
    entries = t.scan_files()
    assert len({e.bucket for e in entries}) == 6 and {e.total_buckets for e in entries} == {6}
    got = run_pypaimon(pypaimon_python, READ_SCRIPT, wh, "db.b")
    assert _jsonish(got["rows"]) == _jsonish(written), "pypaimon must see exactly our rows"
    # pypaimon's bucket of every row == the bucket of the lakeskip file holding it
    bucket_by_id: dict[int, int] = {}
    for e in entries:
        with t.file_io.open_input(t.data_file_path(e)) as f:
            for i in pq.read_table(f, columns=["id"])["id"].to_pylist():
                bucket_by_id[i] = e.bucket
    theirs = {r["id"]: b for r, b in zip(got["rows"], got["buckets"], strict=True)}
    assert theirs == bucket_by_id


WRITE_SCRIPT = """
    import json, sys, datetime
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema
    cat = CatalogFactory.create({"warehouse": sys.argv[1]})
    cat.create_database("db", False)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.date32())])
    cat.create_table("db.p", Schema.from_pyarrow_schema(
        schema, options={"bucket": "4", "bucket-key": "id,name"}), False)
    t = cat.get_table("db.p")
    out = []
    for commit in range(3):
        rows = [{"id": commit * 40 + i, "name": None if i % 9 == 0 else f"n{i % 6}",
                 "day": datetime.date(2024, 3, 1 + i % 20)} for i in range(40)]
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        c = wb.new_commit()
        c.commit(w.prepare_commit())
        w.close()
        c.close()
        out += rows
    print(json.dumps(out, default=str))
"""


def test_lakeskip_reads_and_prunes_a_pypaimon_bucketed_table(
    pypaimon_python: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    wh = str(tmp_path / "wh")
    written = run_pypaimon(pypaimon_python, WRITE_SCRIPT, wh)
    t = Catalog(wh).get_table("db.p")
    entries = t.scan_files()
    assert {e.total_buckets for e in entries} == {4} and len({e.bucket for e in entries}) > 1
    rows: list[dict[str, Any]] = []
    types = [BIGINT, STRING]
    for e in entries:
        with t.file_io.open_input(t.data_file_path(e)) as f:
            data = pq.read_table(f)
        assert set(bucket_ids([data["id"], data["name"]], types, 4).tolist()) == {e.bucket}
        rows += data.to_pylist()
    assert _jsonish(rows) == _jsonish(
        [{**r, "day": datetime.date.fromisoformat(r["day"])} for r in written]
    )
    plan = ScanPlanner(t).plan(And(EqualTo("id", 45), EqualTo("name", "n5")))
    want = bucket_of((45, "n5"), types, 4)
    assert {e.bucket for e in plan.files} <= {want} and plan.report.skipped_by_bucket > 0
