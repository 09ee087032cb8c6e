"""The file indexes a table has without naming them (``implied_index_options``): a bloom
filter on the clustering columns of a table clustered incrementally, used alike by the
writers (``WriteSpec.index_options``), the planner and the option checks."""

from __future__ import annotations

import pytest

from lakeskip import types as T
from lakeskip.catalog.format.schema import TableSchema
from lakeskip.catalog.option_checks import validate_options
from lakeskip.catalog.options import (
    file_index_options,
    implied_index_options,
    sorted_run_stop_trigger,
)
from lakeskip.catalog.write.write_spec import WriteSpec
from lakeskip.errors import InvalidOptionError

ROWS = T.RowType.of(("k", T.BIGINT), ("s", T.STRING), ("p", T.INT))
INCREMENTAL = {"clustering.columns": "k,s", "clustering.incremental": "true"}


def _indexed(options: dict[str, str], partition_keys: tuple[str, ...] = ()) -> list[str]:
    specs = file_index_options(options, ROWS, partition_keys).specs
    return [f"{s.index_type}({s.name})" for s in specs]


def test_incremental_clustering_implies_a_bloom_filter_on_each_clustering_column() -> None:
    assert _indexed(INCREMENTAL) == ["bloom-filter(k)", "bloom-filter(s)"]
    # a column the options index already is not indexed twice; other indexes stay
    both = {**INCREMENTAL, "file-index.bloom-filter.columns": "s", "file-index.bitmap.columns": "p"}
    assert sorted(_indexed(both)) == ["bitmap(p)", "bloom-filter(k)", "bloom-filter(s)"]


def test_nothing_is_implied_without_incremental_clustering() -> None:
    for options in (
        {},
        {"clustering.columns": "k"},
        {"clustering.columns": "k", "clustering.incremental": "false"},
    ):
        assert implied_index_options(options, ROWS) is options
        assert _indexed(options) == []
    # a clustering option the table cannot have implies nothing here (refused where set)
    bad = {"clustering.columns": "nope", "clustering.incremental": "true"}
    assert implied_index_options(bad, ROWS) is bad


def test_the_implied_index_takes_its_per_column_options() -> None:
    options = {**INCREMENTAL, "file-index.bloom-filter.k.items": "1000"}
    validate_options(options, ROWS)  # accepted: k has an (implied) bloom filter
    spec = next(s for s in file_index_options(options, ROWS).specs if s.name == "k")
    assert dict(spec.options) == {"items": "1000"}
    with pytest.raises(InvalidOptionError, match="has no bloom-filter index"):
        validate_options(
            {"clustering.columns": "k", "file-index.bloom-filter.k.items": "1000"}, ROWS
        )


def test_writers_build_the_implied_indexes() -> None:
    schema = TableSchema.create(0, ROWS, (), INCREMENTAL, None)
    spec = WriteSpec(file_io=None, table_path="/t", schema=schema)  # type: ignore[arg-type]
    assert [s.name for s in spec.index_options().specs] == ["k", "s"]


def test_file_index_options_are_parsed_once_per_options_and_columns() -> None:
    """The planner asks for a table's index options two or three times per scan: parsed once
    (issue 39), and a change of the options, columns or partition keys is parsed anew."""
    options = {"file-index.bloom-filter.columns": "k", "file-index.bitmap.columns": "p"}
    first = file_index_options(options, ROWS)
    # an equal mapping of another identity: the same parse
    assert file_index_options(dict(options), ROWS) is first
    # in another order: parsed in that order (the specs' order and the container's layout
    # follow the options' order)
    again = file_index_options(dict(reversed(list(options.items()))), ROWS)
    assert [s.name for s in again.specs] == [s.name for s in first.specs][::-1]
    assert sorted(s.name for s in first.specs) == ["k", "p"]
    changed = file_index_options({**options, "file-index.bitmap.columns": "s"}, ROWS)
    assert sorted(s.name for s in changed.specs) == ["k", "s"]
    wider = T.RowType.of(("k", T.BIGINT), ("s", T.STRING), ("p", T.INT), ("q", T.INT))
    assert file_index_options(options, wider) is not first
    assert file_index_options({**INCREMENTAL, **options}, ROWS, ("p",)) is not (
        file_index_options({**INCREMENTAL, **options}, ROWS)
    )
    # options that fail are refused on every call (errors are not kept)
    for _ in range(2):
        with pytest.raises(InvalidOptionError):
            file_index_options({"file-index.bloom-filter.k.nope": "1"}, ROWS)


def test_stop_trigger_defaults_to_the_compaction_trigger_plus_three() -> None:
    assert sorted_run_stop_trigger({}) == 8
    assert sorted_run_stop_trigger({"num-sorted-run.compaction-trigger": "2"}) == 5
    assert sorted_run_stop_trigger({"num-sorted-run.stop-trigger": "3"}) == 3
