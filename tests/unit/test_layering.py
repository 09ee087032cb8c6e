"""The layers must stay apart at run time too (import-linter checks the import statements;
this imports every module, so imports done at module import time by any code path count).

Each check runs in a fresh interpreter: the test process itself has imported pyspark.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import lakeskip

_SPARK_FREE = (
    "lakeskip.procedures",
    "lakeskip.planner",
    "lakeskip.sql",
    "lakeskip.catalog",
    "lakeskip.index",
    "lakeskip.sort",
    "lakeskip.expressions",
    "lakeskip.types",
    "lakeskip.errors",
)
# below the SQL layer nothing may pull in sqlglot
_SQL_FREE = tuple(p for p in _SPARK_FREE if p not in ("lakeskip.procedures", "lakeskip.sql"))


def _modules(prefixes: tuple[str, ...]) -> list[str]:
    every = [i.name for i in pkgutil.walk_packages(lakeskip.__path__, "lakeskip.")]
    return sorted(m for m in every if m.startswith(prefixes))


def _imported_after(modules: list[str], roots: tuple[str, ...]) -> list[str]:
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        f"print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in {roots!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [m for m in out.stdout.strip().split(",") if m]


def test_every_module_is_walked() -> None:
    mods = _modules(_SPARK_FREE)
    # guards the walk itself: it must reach leaf modules, not only package __init__s
    for leaf in ("lakeskip.planner.scan", "lakeskip.index.bsi", "lakeskip.sql.query"):
        assert leaf in mods, f"{leaf} not found by the module walk"
    assert len(mods) > 50, f"only {len(mods)} modules walked"


@pytest.mark.parametrize(
    ("prefixes", "forbidden"),
    [(_SPARK_FREE, ("pyspark", "py4j")), (_SQL_FREE, ("sqlglot",))],
    ids=["spark-free", "sqlglot-free"],
)
def test_importing_every_module_keeps_layers_apart(
    prefixes: tuple[str, ...], forbidden: tuple[str, ...]
) -> None:
    bad = _imported_after(_modules(prefixes), forbidden)
    assert not bad, f"{', '.join(forbidden)} imported by a lower layer: {bad[:5]}"
