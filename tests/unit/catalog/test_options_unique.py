"""Every table option lakeskip knows is listed once: a second entry for a key would silently
replace the first in ``KNOWN_OPTIONS`` (its default, validator and doc)."""

from __future__ import annotations

import ast
import inspect
from collections import Counter

import pytest

from lakeskip.catalog import options
from lakeskip.catalog.options import KNOWN_OPTIONS, OptionSpec, options_by_key


def _listed_keys() -> list[str]:
    """The key of every ``OptionSpec(...)`` written in the options module's source (a
    literal or a module constant)."""
    tree = ast.parse(inspect.getsource(options))
    keys = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "OptionSpec"
            and node.args
        ):
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            keys.append(first.value)
        elif isinstance(first, ast.Name):
            keys.append(getattr(options, first.id))
    return keys


def test_no_option_listed_twice() -> None:
    keys = _listed_keys()
    assert [k for k, n in Counter(keys).items() if n > 1] == []
    assert sorted(keys) == sorted(KNOWN_OPTIONS)
    assert KNOWN_OPTIONS["write-only"].doc.startswith("primary-key tables: no compaction")


def test_options_by_key_refuses_a_key_twice() -> None:
    spec = OptionSpec("a", None, lambda value, key: None, "")
    assert options_by_key([spec]) == {"a": spec}
    with pytest.raises(ValueError, match="'a' is listed twice"):
        options_by_key([spec, spec])
