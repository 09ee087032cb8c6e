"""The shape of ``src/lakeskip``: no import circle (function-local imports included), and no
folder holding more than 15 modules (issue 29).

import-linter's layer contracts (pyproject) see only the packages they name, and a circle
hidden behind a function-local import passes them. This test reads every module with
``ast`` and takes every ``import`` / ``from ... import`` at any depth: module level, inside
functions, and inside ``if TYPE_CHECKING:`` blocks. Type-only imports count on purpose: a
type that two modules need from each other is a piece that belongs in one of them (or in a
third), and counting them keeps "just move it under TYPE_CHECKING" from hiding a circle.

``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``
(its ``__init__``). A package's ``__init__`` re-exporting its children is an edge like any
other, so a child importing names from its own package's ``__init__`` would be a circle.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _modules() -> dict[str, tuple[Path, bool]]:
    mods: dict[str, tuple[Path, bool]] = {}
    for path in sorted((SRC / "lakeskip").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (path, is_pkg)
    return mods


def _owner(name: str, mods: dict[str, tuple[Path, bool]]) -> str | None:
    """The longest module prefix of a dotted name (``a.b.C`` -> ``a.b``)."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache  # read once for both tests (every module parsed: seconds on a busy machine)
def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for mod, (path, is_pkg) in mods.items():
        package = mod if is_pkg else mod.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(_owner(a.name, mods) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    source = f"{base}.{node.module}" if node.module else base
                else:
                    source = node.module or ""
                for alias in node.names:
                    child = f"{source}.{alias.name}"
                    targets.add(child if child in mods else _owner(source, mods))
        graph[mod] = {t for t in targets if t is not None and t != mod}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One concrete circle (``a -> b -> ... -> a``) per strongly connected component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def strongconnect(v: str) -> None:  # Tarjan, iterative enough for ~150 modules
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)

    cycles = []
    for component in components:
        start = min(component)
        # breadth-first back to start inside the component: the shortest circle through it
        paths = {start: [start]}
        queue = [start]
        found: list[str] | None = None
        while queue and found is None:
            v = queue.pop(0)
            for w in sorted(graph[v] & component):
                if w == start:
                    found = [*paths[v], start]
                    break
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    queue.append(w)
        assert found is not None
        cycles.append(found)
    return cycles


def test_the_graph_is_read() -> None:
    graph = import_graph()
    # a function-local import is an edge (catalog_writes imports the writer inside a function)
    assert "lakeskip.spark.write.writer" in graph["lakeskip.spark.bridge.catalog_writes"]
    assert "lakeskip.catalog.table" in graph["lakeskip.catalog.catalog"]


def test_find_cycles_names_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]


def test_no_import_cycles() -> None:
    cycles = find_cycles(import_graph())
    assert not cycles, "import circles in src/lakeskip:\n" + "\n".join(
        " -> ".join(c) for c in cycles
    )


MAX_MODULES_PER_FOLDER = 15


def _crowded(root: Path) -> dict[str, int]:
    crowded = {}
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        modules = [
            p for p in folder.iterdir() if p.suffix in (".py", ".java") and p.name != "__init__.py"
        ]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            crowded[str(folder.relative_to(root.parent))] = len(modules)
    return crowded


def test_no_folder_holds_more_than_15_modules() -> None:
    """A folder that grows past this should be split by concern, as spark/, catalog/ and the
    Java catalog (``spark/jvm/java/lakeskip/jvm``) were. Counted: the folder's own ``.py``
    and ``.java`` files, ``__init__`` left out."""
    crowded = _crowded(SRC / "lakeskip")
    assert not crowded, f"folders over {MAX_MODULES_PER_FOLDER} modules: {crowded}"


def test_the_folder_count_sees_java(tmp_path: Path) -> None:
    pkg = tmp_path / "lakeskip" / "jvm"
    pkg.mkdir(parents=True)
    for i in range(MAX_MODULES_PER_FOLDER + 1):
        (pkg / f"C{i}.java").write_text(f"class C{i} {{}}")
    assert _crowded(tmp_path / "lakeskip") == {"lakeskip/jvm": MAX_MODULES_PER_FOLDER + 1}
