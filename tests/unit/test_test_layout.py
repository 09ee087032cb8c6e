"""The test tree itself: pytest imports a test module outside a package by its basename, so
two such modules with one name break the collection of the whole suite (``import file
mismatch``) -- but only when both are collected, which a run of one folder never shows."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _module_name(path: Path) -> str:
    """The name pytest's default (prepend) import mode gives a test module: dotted through
    the packages (folders with ``__init__.py``) it sits in, else its basename."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def test_no_two_test_modules_share_an_import_name() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        by_name[_module_name(path)].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not clashes, f"rename one of each: {clashes}"
