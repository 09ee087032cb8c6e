"""Run the doctest examples in every Spark-free module: they are part of the spec."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import lakeskip

SKIP_PREFIXES = ("lakeskip.spark", "lakeskip.cli", "lakeskip.procedures")


def _modules() -> list[str]:
    infos = pkgutil.walk_packages(lakeskip.__path__, "lakeskip.")
    return sorted(i.name for i in infos if not i.name.startswith(SKIP_PREFIXES))


@pytest.mark.parametrize("name", _modules())
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
