"""Catalog API: databases, tables, options; every bad input is a typed error, nothing written."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lakeskip.catalog import Catalog, FileIO
from lakeskip.catalog.format.schema import SchemaManager
from lakeskip.errors import (
    ColumnNotFoundError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidOptionError,
    LakeskipError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from lakeskip.types import BIGINT, DOUBLE, STRING, Field, RowType, map_of

ROW = RowType.of(("id", BIGINT), ("name", STRING), ("dt", STRING))


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_databases(catalog: Catalog) -> None:
    assert catalog.list_databases() == []
    catalog.create_database("a")
    catalog.create_database("a", ignore_if_exists=True)
    with pytest.raises(DatabaseAlreadyExistsError):
        catalog.create_database("a")
    assert catalog.list_databases() == ["a"] and catalog.database_exists("a")
    catalog.create_table("a.t", ROW)
    with pytest.raises(DatabaseNotEmptyError):
        catalog.drop_database("a")
    catalog.drop_database("a", cascade=True)
    assert not catalog.database_exists("a")
    with pytest.raises(DatabaseNotFoundError):
        catalog.drop_database("a")
    catalog.drop_database("a", ignore_if_not_exists=True)


def test_tables(catalog: Catalog) -> None:
    t = catalog.create_table("t", ROW, comment="hello")  # database "default" on demand
    assert t.identifier == "default.t" and catalog.list_databases() == ["default"]
    assert [f.id for f in t.schema.row_type] == [0, 1, 2]
    assert catalog.table_exists("default.t") and catalog.list_tables("default") == ["t"]
    assert catalog.get_table("t").schema == t.schema
    assert catalog.create_table("t", ROW, ignore_if_exists=True).schema == t.schema
    catalog.drop_table("t")
    assert not catalog.table_exists("t")
    catalog.drop_table("t", ignore_if_not_exists=True)


def test_uri_warehouse(tmp_path: Path) -> None:
    cat = Catalog(f"file://{tmp_path}/wh")
    cat.create_table("t", ROW)
    assert (tmp_path / "wh" / "default.db" / "t" / "schema" / "schema-0").exists()
    io, path = FileIO.for_uri(f"file://{tmp_path}/wh")
    assert path == f"{tmp_path}/wh" and io.is_local and io.atomic_create


BAD_CREATES: list[tuple[str, dict[str, Any], type[LakeskipError], str]] = [
    ("nodb.t", {}, DatabaseNotFoundError, "database not found: nodb"),
    ("a.b.c", {}, InvalidArgumentError, "invalid table identifier"),
    ("t", {"partition_keys": ["nope"]}, ColumnNotFoundError, "partition column not found: nope"),
    ("t", {"partition_keys": ["id", "name", "dt"]}, InvalidArgumentError, "all of its columns"),
    ("t", {"options": {"bucket": "2"}}, InvalidOptionError, "needs option 'bucket-key'"),
    ("t", {"options": {"bucket": "0", "bucket-key": "id"}}, InvalidOptionError, "'bucket'"),
    ("t", {"options": {"bucket": "x", "bucket-key": "id"}}, InvalidOptionError, "not an integer"),
    ("t", {"options": {"bucket-key": "id"}}, InvalidOptionError, "needs option 'bucket' > 0"),
    ("t", {"options": {"bucket": "2", "bucket-key": "nope"}}, InvalidOptionError, "unknown column"),
    ("t", {"options": {"bucket": "2", "bucket-key": "id,id"}}, InvalidOptionError, "twice"),
    ("t", {"options": {"bucket": "2", "bucket-key": "ID"}}, InvalidOptionError, "spelled 'id'"),
    ("t", {"options": {"bucket": "2", "bucket-key": "id,"}}, InvalidOptionError, "empty name"),
    (
        "t",
        {"partition_keys": ["dt"], "options": {"bucket": "2", "bucket-key": "dt"}},
        InvalidOptionError,
        "bucket-key': dt is a partition column",
    ),
    ("t", {"options": {"file.format": "orc"}}, InvalidOptionError, "file.format"),
    ("t" * 401, {}, InvalidArgumentError, "table name too long: 401 bytes, at most 200 ('ttt"),
    ("é" * 101, {}, InvalidArgumentError, "table name too long: 202 bytes"),
    ("d" * 300 + ".t", {}, InvalidArgumentError, "database name too long: 300 bytes"),
    ("t", {"options": {"target-file-size": "big"}}, InvalidOptionError, "invalid size"),
    ("t", {"options": {"metadata.stats-mode": "truncate(0)"}}, InvalidOptionError, "stats mode"),
    (
        "t",
        {"options": {"metdata.stats-mode": "full"}},
        InvalidOptionError,
        "did you mean 'metadata.stats-mode'",
    ),
    ("t", {"options": {"clustering.columns": "id,zz"}}, ColumnNotFoundError, "zz"),
    (
        "t",
        {"options": {"clustering.columns": "dt"}, "partition_keys": ["dt"]},
        InvalidOptionError,
        "partition column",
    ),
    ("t", {"options": {"fields.nope.stats-mode": "full"}}, ColumnNotFoundError, "nope"),
    ("t", {"options": {"write-only": "yes"}}, InvalidOptionError, "true or false"),
]


@pytest.mark.parametrize(("ident", "kwargs", "error", "message"), BAD_CREATES)
def test_bad_create_raises_typed_one_line_error_and_writes_nothing(
    catalog: Catalog,
    tmp_path: Path,
    ident: str,
    kwargs: dict[str, Any],
    error: type[LakeskipError],
    message: str,
) -> None:
    before = _files(tmp_path)
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        catalog.create_table(ident, ROW, **kwargs)
    assert "\n" not in str(info.value), "one-line message"
    assert _files(tmp_path) == before, "a rejected CREATE TABLE writes nothing"


def test_existing_table_and_missing_table(catalog: Catalog) -> None:
    catalog.create_table("t", ROW)
    with pytest.raises(TableAlreadyExistsError, match=r"default\.t"):
        catalog.create_table("t", ROW)
    with pytest.raises(TableNotFoundError, match=r"table not found: default\.x"):
        catalog.get_table("x")
    with pytest.raises(TableNotFoundError):
        catalog.drop_table("x")
    with pytest.raises(TableNotFoundError):
        catalog.alter_table("x", set_options={"write-only": "true"})


def test_nested_partition_key_rejected(catalog: Catalog) -> None:
    rt = RowType.of(("id", BIGINT), ("m", map_of(STRING, DOUBLE)))
    with pytest.raises(InvalidArgumentError, match="cannot be"):
        catalog.create_table("t", rt, partition_keys=["m"])


def test_alter_options_creates_schema_and_validates(catalog: Catalog, tmp_path: Path) -> None:
    t = catalog.create_table("t", ROW, options={"write-only": "true"})
    s1 = catalog.alter_table("t", set_options={"metadata.stats-mode": "counts"})
    assert s1.id == 1 and s1.options == {"write-only": "true", "metadata.stats-mode": "counts"}
    s2 = catalog.alter_table("t", unset_options=["write-only"])
    assert s2.id == 2 and s2.options == {"metadata.stats-mode": "counts"}
    assert catalog.alter_table("t", unset_options=["not-set"]) == s2, "no-op writes nothing"
    before = _files(tmp_path)
    with pytest.raises(InvalidOptionError, match="unknown table option"):
        catalog.alter_table("t", set_options={"nonsense.key": "1"})
    with pytest.raises(InvalidOptionError):
        catalog.alter_table("t", set_options={"bucket": "8"})
    with pytest.raises(InvalidOptionError, match="cannot be changed by ALTER TABLE"):
        catalog.alter_table("t", set_options={"bucket": "8", "bucket-key": "id"})
    assert _files(tmp_path) == before, "a rejected ALTER writes nothing"
    assert t.refresh().schema.id == 2 and t.schema_by_id(0).options == {"write-only": "true"}


def test_options_of_foreign_tables_are_not_revalidated(catalog: Catalog) -> None:
    t = catalog.create_table("t", ROW)
    # a table written by Paimon may carry options lakeskip does not know
    foreign = t.schema.with_options(1, {"changelog-producer": "input"})
    assert t.schema_manager.try_commit(foreign)
    s = catalog.alter_table("t", set_options={"write-only": "true"})
    assert s.options == {"changelog-producer": "input", "write-only": "true"}


def test_file_index_options_are_validated_when_available(catalog: Catalog) -> None:
    pytest.importorskip("lakeskip.index.options", reason="lakeskip.index.options not written yet")
    with pytest.raises((ColumnNotFoundError, InvalidOptionError)):
        catalog.create_table("t", ROW, options={"file-index.bloom-filter.columns": "nope"})
    assert not catalog.table_exists("t")


def test_bucketed_table_options(catalog: Catalog) -> None:
    opts = {"bucket": "4", "bucket-key": "name, id"}
    t = catalog.create_table("b", ROW, partition_keys=["dt"], options=opts)
    assert t.schema.options == opts
    with pytest.raises(InvalidOptionError, match="'bucket-key' cannot be changed"):
        catalog.alter_table("b", set_options={"bucket-key": "id"})
    with pytest.raises(InvalidOptionError, match="'bucket' cannot be changed"):
        catalog.alter_table("b", unset_options=["bucket"])
    nested = RowType.of(("id", BIGINT), ("m", map_of(STRING, STRING)))
    with pytest.raises(InvalidOptionError, match=r"column m of type .* cannot be hashed"):
        catalog.create_table("n", nested, options={"bucket": "2", "bucket-key": "m"})


def test_schema_writes_whose_answer_was_lost_are_committed_once(
    catalog: Catalog, lose_answers: Callable[[str], list[str]]
) -> None:
    """A create-only write of ``schema-<id>`` that happened but answered "exists" (a lost
    answer, retried) is this call's schema: CREATE TABLE does not report an existing
    table, ALTER does not apply its change a second time."""
    catalog.create_database("db")
    lost = lose_answers("/schema/schema-")
    t = catalog.create_table("db.t", RowType.of(("id", BIGINT)))
    assert t.schema.id == 0 and [p.rsplit("/", 1)[1] for p in lost] == ["schema-0"]
    added = catalog.add_columns("db.t", [Field(0, "v", STRING)])
    assert added.id == 1 and added.row_type.names == ["id", "v"], "one v, in schema 1"
    altered = catalog.alter_table("db.t", {"snapshot.num-retained.max": "7"})
    assert altered.id == 2 and altered.options["snapshot.num-retained.max"] == "7"
    assert len(lost) == 3, f"every schema write lost its answer: {lost}"
    manager = SchemaManager(t.file_io, t.path)
    assert manager.list_ids() == [0, 1, 2]
    # another writer's schema at that id (other bytes) is still a lost race
    assert not manager.try_commit(dataclasses.replace(altered, time_millis=1))
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.t", RowType.of(("id", BIGINT)))
