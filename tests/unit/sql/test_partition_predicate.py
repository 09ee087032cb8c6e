"""``where => '...'`` of procedures: parsed in the SQL layer, partition columns only."""

from __future__ import annotations

import pytest

from lakeskip import types as T
from lakeskip.errors import InvalidArgumentError, SqlParseError
from lakeskip.expressions import AlwaysTrue, EqualTo, GreaterThanOrEqual, and_
from lakeskip.sql.partition_predicate import parse_partition_predicate

PT = T.RowType.of(("dt", T.STRING), ("hr", T.INT))


def test_names_come_out_as_the_partition_columns() -> None:
    got = parse_partition_predicate("DT = '2024-01-01' and HR >= 3", PT)
    want = and_(EqualTo("dt", "2024-01-01"), GreaterThanOrEqual("hr", 3))
    assert got == want, f"case-insensitive names map to the declared ones: {got!r}"


def test_untranslatable_part_keeps_every_partition() -> None:
    got = parse_partition_predicate("upper(dt) = 'X'", PT)
    assert got == AlwaysTrue(), f"a function of a column is unknown, so keep: {got!r}"


def test_non_partition_column_is_named() -> None:
    with pytest.raises(InvalidArgumentError, match=r"price is not a partition column"):
        parse_partition_predicate("dt = 'a' OR price > 3", PT)


def test_parse_error_has_position() -> None:
    with pytest.raises(SqlParseError) as info:
        parse_partition_predicate("dt = = 'a'", PT)
    assert info.value.line == 1, f"line of the error: {info.value!r}"
