"""Data files carry Paimon's Parquet field ids (:mod:`lakeskip.catalog.write.parquet_field_ids`):
the schema's ids on columns and ROW fields, Paimon's derived ids on ARRAY elements, MAP keys
and values and a key-value file's system columns, read back from the written file by pyarrow;
the rows read back unchanged. (Against Paimon 2.0.0's own files: the interop test
``test_lakeskip_reads_and_writes_newest_paimon_row_array_map_columns``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.write.rolling_writer import write_data_file, write_kv_data_file
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.types import RowType, parse_sql_type

# SpecialFields: Integer.MAX_VALUE / 4 (nested-type base), / 2 (key columns), MAX - 1, MAX - 2
BASE = 536_870_911
KEY_START = 1_073_741_823
SEQUENCE_ID = 2_147_483_646
VALUE_KIND_ID = 2_147_483_645

ROW = RowType.of(
    ("id", parse_sql_type("BIGINT")),
    ("r", parse_sql_type("ROW<a INT, b ARRAY<STRING>>")),
    ("arr", parse_sql_type("ARRAY<INT>")),
    ("m", parse_sql_type("MAP<STRING, ARRAY<INT>>")),
)
ROWS = [
    {"id": 1, "r": {"a": 1, "b": ["x", None]}, "arr": [1, None], "m": [("k", [1, 2])]},
    {"id": 2, "r": None, "arr": None, "m": None},
    {"id": 3, "r": {"a": None, "b": None}, "arr": [], "m": [("j", None)]},
]


def _ids(path: str) -> dict[str, int | None]:
    out: dict[str, int | None] = {}

    def walk(prefix: str, f: pa.Field) -> None:
        name = prefix + f.name
        raw = (f.metadata or {}).get(b"PARQUET:field_id")
        out[name] = None if raw is None else int(raw)
        if pa.types.is_map(f.type):
            walk(name + ".", f.type.key_field)
            walk(name + ".", f.type.item_field)
        elif pa.types.is_list(f.type):
            walk(name + ".", f.type.value_field)
        elif pa.types.is_struct(f.type):
            for i in range(f.type.num_fields):
                walk(name + ".", f.type.field(i))

    for f in pq.read_schema(path):
        walk("", f)
    return out


def _expected_value_ids(schema_row: RowType) -> dict[str, int]:
    i = {f.name: f.id for f in schema_row}
    r = {f.name: f.id for f in schema_row.field("r").type.row_fields}
    return {
        "id": i["id"],
        "r": i["r"],
        "r.a": r["a"],
        "r.b": r["b"],
        "r.b.element": BASE + r["b"] * 1024 + 1,  # depth restarts inside a ROW
        "arr": i["arr"],
        "arr.element": BASE + i["arr"] * 1024 + 1,
        "m": i["m"],
        "m.key": BASE - i["m"] * 1024 - 1,
        "m.value": BASE + i["m"] * 1024 + 1,
        "m.value.element": BASE + i["m"] * 1024 + 2,
    }


def _write(tmp_path: Path, primary_key: bool) -> tuple[str, RowType, Any]:
    keys = ["id"] if primary_key else []
    options = {"bucket": "1"} if primary_key else {}
    table = Catalog(str(tmp_path / "wh")).create_table(
        "default.t", ROW, options=options, primary_keys=keys
    )
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    data = pa.Table.from_pylist(ROWS, schema=table.schema.row_type.to_arrow())
    if primary_key:
        entry = write_kv_data_file(spec, data, (), "data-kv.parquet", 0, 1, 0)
    else:
        entry = write_data_file(spec, data, (), "data-0.parquet")
    path = f"{table.path}/bucket-0/{entry.file.file_name}"
    return path, table.schema.row_type, data


def test_an_append_file_carries_paimons_field_ids(tmp_path: Path) -> None:
    path, row_type, data = _write(tmp_path, primary_key=False)
    assert _ids(path) == _expected_value_ids(row_type)
    assert pq.read_table(path).select(data.column_names).to_pylist() == data.to_pylist()


def test_a_key_value_file_carries_paimons_system_field_ids(tmp_path: Path) -> None:
    path, row_type, data = _write(tmp_path, primary_key=True)
    want = {
        "_KEY_id": KEY_START + row_type.field("id").id,
        "_SEQUENCE_NUMBER": SEQUENCE_ID,
        "_VALUE_KIND": VALUE_KIND_ID,
        **_expected_value_ids(row_type),
    }
    assert _ids(path) == want
    assert pq.read_table(path).select(data.column_names).to_pylist() == data.to_pylist()
