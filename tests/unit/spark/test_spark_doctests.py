"""Doctest examples of the Spark package's pure modules (the Spark-free ones run elsewhere)."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "name", ["lakeskip.spark.read.predicate_json", "lakeskip.spark.bridge.sql_rewrite"]
)
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0, f"doctests of {name}"
