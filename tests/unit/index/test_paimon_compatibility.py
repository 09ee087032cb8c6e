"""``file-index.paimon-compatibility``: pin the oldest Paimon that must read the indexes."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from lakeskip import types as T
from lakeskip.catalog.option_checks import validate_options
from lakeskip.errors import InvalidOptionError
from lakeskip.index.bitmap import VERSION_1, VERSION_2
from lakeskip.index.file_index import FileIndexFile, build_file_index
from lakeskip.index.format import FileIndexContainer
from lakeskip.index.options import (
    MIN_PAIMON_VERSION,
    PAIMON_COMPATIBILITY,
    parse_file_index_options,
    parse_paimon_compatibility,
)
from lakeskip.index.result import SKIP

ROW = T.RowType.of(
    ("id", T.BIGINT), ("s", T.STRING), ("v", T.INT), ("m", T.map_of(T.STRING, T.STRING))
)


def _bitmap_version(options: dict[str, str]) -> int:
    opts = parse_file_index_options(options, ROW)
    data = pa.table({"v": pa.array([1, 2, 2, None], pa.int32())})
    built = build_file_index(data, T.RowType.of(("v", T.INT)), opts)
    assert built.embedded is not None
    payload = FileIndexContainer.decode(built.embedded).payload("v", "bitmap")
    assert payload is not None
    return int(bytes(payload)[0])


def test_bitmap_defaults_to_v1_below_paimon_1_1() -> None:
    base = {"file-index.bitmap.columns": "v"}
    assert _bitmap_version(base) == VERSION_2, "unpinned: Paimon's default, version 2"
    assert _bitmap_version({**base, PAIMON_COMPATIBILITY: "latest"}) == VERSION_2
    for pinned in ("0.9", "1.0", "1.0.1"):
        got = _bitmap_version({**base, PAIMON_COMPATIBILITY: pinned})
        assert got == VERSION_1, f"pinned {pinned}: Paimon < 1.1 reads only bitmap version 1"
    for pinned in ("1.1", "1.3", "2.0"):
        assert _bitmap_version({**base, PAIMON_COMPATIBILITY: pinned}) == VERSION_2
    explicit = {**base, "file-index.bitmap.v.version": "1", PAIMON_COMPATIBILITY: "1.3"}
    assert _bitmap_version(explicit) == VERSION_1, "an explicit version is kept"


@pytest.mark.parametrize(
    ("options", "pinned", "message"),
    [
        ({"file-index.bsi.columns": "v"}, "0.9", "bsi indexes need Paimon 1.0"),
        ({"file-index.range-bitmap.columns": "v"}, "1.2", "range-bitmap indexes need Paimon 1.3"),
        ({"file-index.bitmap.columns": "v"}, "0.8", "bitmap indexes need Paimon 0.9"),
        (
            {"file-index.bitmap.columns": "v", "file-index.bitmap.v.version": "2"},
            "1.0",
            "bitmap version 2 needs Paimon 1.1",
        ),
        ({"file-index.bloom-filter.columns": "m[k]"}, "0.8", "map-key indexes need Paimon 0.9"),
    ],
)
def test_indexes_the_pinned_paimon_cannot_read_are_rejected(
    options: dict[str, str], pinned: str, message: str
) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        parse_file_index_options({**options, PAIMON_COMPATIBILITY: pinned}, ROW)
    with pytest.raises(InvalidOptionError, match=message):  # CREATE / ALTER TABLE validation
        validate_options({**options, PAIMON_COMPATIBILITY: pinned}, ROW)
    parse_file_index_options(options, ROW)  # fine without the pin


def test_every_index_type_is_accepted_from_its_first_paimon() -> None:
    columns = {"bloom-filter": "s", "bitmap": "v", "bsi": "v", "range-bitmap": "id"}
    for index_type, (major, minor) in MIN_PAIMON_VERSION.items():
        opts = {f"file-index.{index_type}.columns": columns[index_type]}
        parse_file_index_options({**opts, PAIMON_COMPATIBILITY: f"{major}.{minor}"}, ROW)
        older = f"{major}.{minor - 1}" if minor else f"{major - 1}.9"
        with pytest.raises(InvalidOptionError):
            parse_file_index_options({**opts, PAIMON_COMPATIBILITY: older}, ROW)


@pytest.mark.parametrize("value", ["", "0.7", "one", "1", "1.x", "v1.1", "1.1.1.1"])
def test_bad_values_name_the_option(value: str) -> None:
    with pytest.raises(InvalidOptionError, match=re.escape(PAIMON_COMPATIBILITY)):
        parse_paimon_compatibility(value)
    with pytest.raises(InvalidOptionError, match=re.escape(PAIMON_COMPATIBILITY)):
        validate_options({PAIMON_COMPATIBILITY: value, "file-index.bloom-filter.columns": "s"}, ROW)


def test_pinned_table_still_reads_back() -> None:
    options = {
        "file-index.bloom-filter.columns": "s,id",
        "file-index.bloom-filter.s.items": "10",
        "file-index.bloom-filter.id.items": "10",
        "file-index.bitmap.columns": "v",
        PAIMON_COMPATIBILITY: "0.9",
    }
    opts = parse_file_index_options(options, ROW)
    rt = T.RowType.of(("id", T.BIGINT), ("s", T.STRING), ("v", T.INT))
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "s": ["a", "b", None],
            "v": pa.array([7, 7, 8], pa.int32()),
        }
    )
    built = build_file_index(data, rt, opts)
    assert built.embedded is not None
    f = FileIndexFile.from_bytes(built.embedded, rt)
    assert [r.visit_equal("zz") for r in f.readers("s")] == [SKIP], "bloom: 'zz' absent"
    assert [r.visit_equal("a").remain() for r in f.readers("s")] == [True]
    assert [r.visit_equal(9).remain() for r in f.readers("v")] == [False], "bitmap V1: no 9"
    assert [r.visit_equal(8).remain() for r in f.readers("v")] == [True]


def test_create_and_alter_table_check_the_pin(tmp_path: Path) -> None:
    from lakeskip.catalog import Catalog

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    row = T.RowType.of(("id", T.BIGINT), ("v", T.INT))
    with pytest.raises(InvalidOptionError, match=r"bsi indexes need Paimon 1\.0"):
        catalog.create_table(
            "db.a", row, options={"file-index.bsi.columns": "v", PAIMON_COMPATIBILITY: "0.9"}
        )
    catalog.create_table("db.b", row, options={"file-index.bsi.columns": "v"})
    with pytest.raises(InvalidOptionError, match=r"bsi indexes need Paimon 1\.0"):
        catalog.alter_table("db.b", {PAIMON_COMPATIBILITY: "0.9"})
    assert PAIMON_COMPATIBILITY not in catalog.get_table("db.b").schema.options, "not applied"
    catalog.alter_table("db.b", {PAIMON_COMPATIBILITY: "1.0"})
    with pytest.raises(InvalidOptionError, match=re.escape(PAIMON_COMPATIBILITY)):
        catalog.alter_table("db.b", {PAIMON_COMPATIBILITY: "newest"})
    # pinned below 1.1: bitmap indexes come out as version 1 from the writer
    catalog.alter_table(
        "db.b", {PAIMON_COMPATIBILITY: "0.9"}, unset_options=["file-index.bsi.columns"]
    )
    catalog.alter_table("db.b", {"file-index.bitmap.columns": "v"})
    opts = parse_file_index_options(catalog.get_table("db.b").schema.options, row)
    assert [dict(s.options) for s in opts.specs] == [{"version": "1"}]
