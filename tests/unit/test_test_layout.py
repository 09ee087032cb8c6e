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


SRC = TESTS.parent / "src" / "lakeskip"
UNIT = TESTS / "unit"
# data beside the tests, not tests of a package
_NOT_A_PACKAGE = {"golden", "__pycache__"}


def _test_folders(root: Path) -> list[Path]:
    return sorted(
        p for p in [root, *root.rglob("*")] if p.is_dir() and not _NOT_A_PACKAGE & set(p.parts)
    )


def test_unit_folders_mirror_the_packages() -> None:
    """``tests/unit/<a>/<b>/`` tests ``lakeskip.<a>.<b>``: every folder has a package twin."""
    orphans = [
        str(folder.relative_to(TESTS))
        for folder in _test_folders(UNIT)
        if not (SRC / folder.relative_to(UNIT) / "__init__.py").exists()
    ]
    assert not orphans, f"no package src/lakeskip/... for: {orphans}"


def test_a_module_test_sits_in_its_package_twin() -> None:
    """``test_<m>.py`` for a module ``<m>.py`` below its folder's twin sits in the twin of the
    package holding it (``tests/unit/catalog/format/test_stats.py`` for
    ``lakeskip/catalog/format/stats.py``), and for a sub-package ``<m>/`` in that package's twin
    (``tests/unit/index/bitmap/test_bitmap.py``)."""
    misplaced: dict[str, list[str]] = {}
    for path in UNIT.rglob("test_*.py"):
        rel = path.parent.relative_to(UNIT)
        twin = SRC / rel
        name = path.stem.removeprefix("test_")
        modules = {p.parent.relative_to(SRC) for p in twin.rglob(f"{name}.py")}
        packages = {p.parent.relative_to(SRC) for p in twin.rglob(f"{name}/__init__.py")}
        homes = modules | packages
        if homes and rel not in homes:
            misplaced[str(path.relative_to(TESTS))] = sorted(f"tests/unit/{h}" for h in homes)
    assert not misplaced, f"move to the package's twin: {misplaced}"


def test_spark_tests_sit_in_folders_by_concern() -> None:
    """``tests/spark/`` holds folders by concern (read, write, pk, dml, catalog, procedures,
    front), no test module of its own."""
    loose = sorted(p.name for p in (TESTS / "spark").glob("test_*.py"))
    assert not loose, f"move into a folder of tests/spark/: {loose}"


def test_no_test_folder_holds_more_than_15_test_modules() -> None:
    """The source tree's folder-size rule (``test_structure.py``) for the tests."""
    crowded = {
        str(folder.relative_to(TESTS)): n
        for folder in _test_folders(TESTS)
        if (n := len(list(folder.glob("test_*.py")))) > 15
    }
    assert not crowded, f"split by concern: {crowded}"


def test_every_slow_test_runs_in_a_target_ci_runs() -> None:
    """``make test`` and ``make test-e2e`` leave ``slow`` tests out: ``make fuzz`` runs the
    files it names whole, ``make test-interop`` every ``interop`` test; a slow test in
    neither runs nowhere (``test_stream_read_kill`` was so)."""
    root = TESTS.parent
    ci = [line.split() for line in (root / ".ci" / "run").read_text().splitlines()]
    commands = {" ".join(w[-2:]) for w in ci if w and not w[0].startswith("#")}
    assert {"make fuzz", "make test-interop"} <= commands, f".ci/run runs both: {commands}"
    fuzz = (root / "Makefile").read_text().split("\nfuzz:", 1)[1].split("\n\n", 1)[0]
    nowhere = []
    for path in sorted(TESTS.rglob("test_*.py")):
        text = path.read_text()
        rel = path.relative_to(root).as_posix()
        if "mark.slow" in text and rel not in fuzz and "mark.interop" not in text:
            nowhere.append(rel)
    assert not nowhere, f"slow tests no target of .ci/run runs: {nowhere}"
