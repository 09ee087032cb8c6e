"""Parsing file-index.* table options."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lakeskip import types as T
from lakeskip.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    InvalidOptionError,
    UnknownIndexTypeError,
    UnsupportedIndexTypeError,
)
from lakeskip.index.options import is_file_index_option, parse_file_index_options

SCHEMA = T.RowType.of(
    ("id", T.BIGINT),
    ("s", T.STRING),
    ("flag", T.BOOLEAN),
    ("m", T.map_of(T.STRING, T.INT)),
    ("mi", T.map_of(T.INT, T.INT)),
)


def test_defaults_and_merging() -> None:
    o = parse_file_index_options(
        {
            "file-index.bloom-filter.columns": "id, s,m[k1],m[k2]",
            "file-index.bloom-filter.id.items": "100",
            "file-index.bloom-filter.m.fpp": "0.2",
            "file-index.bloom-filter.m[k1].fpp": "0.05",
            "file-index.bloom-filter.m[k1].items": "7",
            "other": "x",
        },
        SCHEMA,
    )
    by = {s.name: s for s in o.specs}
    assert list(by) == ["id", "s", "m[k1]", "m[k2]"], "column order kept"
    assert dict(by["id"].options) == {"items": "100"}
    assert dict(by["m[k1]"].options) == {"fpp": "0.05", "items": "7"}, "per-key over per-map"
    assert dict(by["m[k2]"].options) == {"fpp": "0.2"}, "per-map options inherited"
    assert by["m[k1]"].map_key == "k1" and by["m[k1]"].column == "m"
    assert o.in_manifest_threshold == 500 and o.read_enabled and o.enabled


def test_threshold_and_read_enabled() -> None:
    o = parse_file_index_options(
        {"file-index.in-manifest-threshold": "1kb", "file-index.read.enabled": "false"}, SCHEMA
    )
    assert o.in_manifest_threshold == 1024
    assert not o.read_enabled and not o.enabled, "no specs: disabled"


@pytest.mark.parametrize(
    ("opts", "err", "needle"),
    [
        ({"file-index.nope.columns": "id"}, UnknownIndexTypeError, "nope"),
        ({"file-index.bloom-filter.columns": "zz"}, ColumnNotFoundError, "zz"),
        ({"file-index.bloom-filter.columns": "flag"}, UnsupportedIndexTypeError, "flag"),
        ({"file-index.bloom-filter.columns": "id[k]"}, InvalidArgumentError, "id"),
        ({"file-index.bloom-filter.columns": "mi[k]"}, InvalidArgumentError, "mi"),
        (
            {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.s.items": "5"},
            InvalidOptionError,
            "file-index.bloom-filter.s.items",
        ),
        (
            {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.bogus": "5"},
            InvalidOptionError,
            "bogus",
        ),
        (
            {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp": "2"},
            InvalidOptionError,
            "fpp",
        ),
        ({"file-index.in-manifest-threshold": "lots"}, InvalidOptionError, "threshold"),
        ({"file-index.read.enabled": "maybe"}, InvalidOptionError, "read.enabled"),
        ({"file-index.bloom-filter.columns": "id, ,s"}, InvalidOptionError, "empty column"),
        ({"file-index.bloom-filter.columns": ","}, InvalidOptionError, "bloom-filter.columns"),
        ({"file-index.bitmap.columns": "m"}, UnsupportedIndexTypeError, "column m"),
        ({"file-index.range-bitmap.columns": "m"}, UnsupportedIndexTypeError, "column m"),
        (
            {
                "file-index.range-bitmap.columns": "s",
                "file-index.range-bitmap.s.chunk-size": "big",
            },
            InvalidOptionError,
            "chunk-size",
        ),
        (
            {"file-index.range-bitmap.columns": "id", "file-index.range-bitmap.id.items": "5"},
            InvalidOptionError,
            "items",
        ),
        (
            {"file-index.bloom-filter.columns": "m[k]", "file-index.bloom-filter.m[j].fpp": "0.1"},
            InvalidOptionError,
            "m[j]",
        ),
        (
            {"file-index.bloom-filter.columns": "id", "file-index.bitmap.id.version": "2"},
            InvalidOptionError,
            "file-index.bitmap.id.version",
        ),
    ],
)
def test_errors(opts: dict[str, str], err: type[Exception], needle: str) -> None:
    with pytest.raises(err, match=needle.replace("[", r"\[").replace(".", r"\.")) as info:
        parse_file_index_options(opts, SCHEMA)
    assert "\n" not in str(info.value), "one-line message"


def test_is_file_index_option() -> None:
    assert is_file_index_option("file-index.bloom-filter.columns")
    assert not is_file_index_option("bucket")


def test_unsupported_type_message_is_exact() -> None:
    with pytest.raises(UnsupportedIndexTypeError) as info:
        parse_file_index_options({"file-index.bloom-filter.columns": "flag"}, SCHEMA)
    assert "bloom-filter index does not support column flag BOOLEAN" in str(info.value)
    assert "file-index.bloom-filter.columns" in str(info.value), "names the key"


def test_trailing_comma_and_duplicates_like_java() -> None:
    # Java's String.split drops trailing empty strings; a column listed twice is one index
    o = parse_file_index_options({"file-index.bloom-filter.columns": "id,s,id,"}, SCHEMA)
    assert [s.name for s in o.specs] == ["id", "s"]


def test_several_index_types_on_one_column() -> None:
    o = parse_file_index_options(
        {
            "file-index.bloom-filter.columns": "id",
            "file-index.bitmap.columns": "id,m[k]",
            "file-index.bsi.columns": "id",
            "file-index.bitmap.id.version": "1",
            "file-index.in-manifest-threshold": "2 kb",
        },
        SCHEMA,
    )
    got = sorted((s.name, s.index_type, dict(s.options)) for s in o.specs)
    assert got == [
        ("id", "bitmap", {"version": "1"}),
        ("id", "bloom-filter", {}),
        ("id", "bsi", {}),
        ("m[k]", "bitmap", {}),
    ], "options stay with their own index type"
    assert o.in_manifest_threshold == 2048
    assert next(s for s in o.specs if s.name == "m[k]").data_type == T.INT, "map value type"


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"file-index.bloom-filter.colums": "s"},
            InvalidOptionError,
            "unknown option 'file-index.bloom-filter.colums' "
            "(did you mean 'file-index.bloom-filter.columns'?)",
        ),
        (
            {"file-index.bitmap": "s"},
            InvalidOptionError,
            "unknown option 'file-index.bitmap' (did you mean 'file-index.bitmap.columns'?)",
        ),
        (
            {"file-index.read.enable": "true"},
            InvalidOptionError,
            "unknown option 'file-index.read.enable' (did you mean 'file-index.read.enabled'?)",
        ),
        (
            {"file-index.bloom-filtr.columns": "s"},
            UnknownIndexTypeError,
            "unknown file index type 'bloom-filtr' (did you mean 'bloom-filter'? known: ",
        ),
        (
            {"file-index.bloom-filter.columns": "s", "file-index.bloom-filter.s.ffp": "0.1"},
            InvalidOptionError,
            "unknown option 'ffp' for bloom-filter index (did you mean 'fpp'? known: fpp, items)",
        ),
    ],
)
def test_typos_get_a_suggestion(
    options: dict[str, str], error: type[Exception], message: str
) -> None:
    schema = T.RowType((T.Field(0, "s", T.STRING),))
    with pytest.raises(error) as info:
        parse_file_index_options(options, schema)
    assert str(info.value).startswith(message), str(info.value)


def test_load_all_imports_every_index_type_up_front() -> None:
    """A fresh interpreter: the index types are imported lazily, until ``load_all`` (the
    catalog's callback service calls it when it starts, so no query's planning imports)."""
    code = (
        "import sys\n"
        "from lakeskip.index import registry\n"
        "mods = {t: registry._FACTORIES[t].split(':')[0] for t in registry.INDEX_TYPES}\n"
        "assert len(mods) == 4, mods\n"
        "lazy = [m for m in mods.values() if m in sys.modules]\n"
        "registry.load_all()\n"
        "missing = [m for m in mods.values() if m not in sys.modules]\n"
        "print(lazy, missing)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[] []", out
