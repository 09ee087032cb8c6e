"""The read oracle of the Spark primary-key tests: a ``(k, p, n)`` table read through the
Spark catalog, whole and under filters on the key, the value and the partition, returns the
model's rows."""

from __future__ import annotations

from typing import Any

__all__ = ["check_catalog_reads"]


def check_catalog_reads(
    spark: Any, name: str, rows: list[tuple[Any, ...]], lo: int, key: int
) -> None:
    """``SELECT k, p, n FROM <name> [WHERE ...]`` equals ``rows`` (the model's, sorted) and
    its filtered subsets: values from ``lo``, equal to ``lo``, key ``key``, both, and a
    disjunction over the partition."""
    assert sorted(tuple(r) for r in spark.sql(f"SELECT k, p, n FROM {name}").collect()) == rows
    for where, keep in (
        (f"n >= {lo}", lambda r: r[2] >= lo),
        (f"n = {lo}", lambda r: r[2] == lo),
        (f"k = {key}", lambda r: r[0] == key),
        (f"k = {key} AND n = {lo}", lambda r: r[0] == key and r[2] == lo),
        (f"p = 'p1' OR n < {lo}", lambda r: r[1] == "p1" or r[2] < lo),
    ):
        got = sorted(
            tuple(r) for r in spark.sql(f"SELECT k, p, n FROM {name} WHERE {where}").collect()
        )
        assert got == [r for r in rows if keep(r)], where
