"""No import circle in the package, not even one an import inside a function hides, and none at run time
through a registry: every module imports first.

A module that imports another at its top while the other imports it back inside a function (or under
TYPE_CHECKING) is a circle all the same: it works in one import order only, and the late import is there to
dodge it. The import rules of the layers and the kinds' rooms are ``tests/test_layers.py``'s."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_layers import PACKAGE, ROOT, in_the_package

# Every import statement counts, wherever it is; ``from P import name`` is an edge to the module
# ``P.name`` where that is a module, else to ``P``. A package's ``__init__`` is an edge only where it is named
# (importing ``a.b.c`` runs ``a/b/__init__.py`` too, but that edge would make every package a circle with its
# modules and says nothing about the design). The package's layers only: ``benchmarks/`` is not in it.
GRAPHED = ("contract", "backends", "workloads", "reports", "harness")


def module_name(path: Path) -> str:
    """A file's module inside the package: ``reports/assemble.py`` -> ``reports.assemble``, a package's
    ``__init__.py`` -> the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_project_modules(source: str, modules: set[str]) -> dict[str, int]:
    """The modules of ``modules`` that ``source`` imports anywhere (at the top, inside a function, under
    ``TYPE_CHECKING``), each with the line of its first import."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [
                n if in_the_package(n) in modules else node.module
                for n in (f"{node.module}.{alias.name}" for alias in node.names)
            ]
        else:
            continue
        for name in names:
            if (target := in_the_package(name)) in modules:
                found.setdefault(target, node.lineno)
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: the line}, over the project's packages (``GRAPHED``)."""
    paths = {module_name(p): p for top in GRAPHED for p in sorted((ROOT / top).rglob("*.py"))}
    graph = {}
    for name, path in paths.items():
        graph[name] = imported_project_modules(path.read_text(encoding="utf-8"), set(paths))
        graph[name].pop(name, None)
    return graph


def a_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import circle of ``graph`` as its modules in order (the first again at the end), None if none."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := walk(node)):
            return found
    return None


def described(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    """``a -> b (a.py line 12) -> a (b.py line 40)``: each step with the line of its import."""
    steps = [cycle[0]] + [f"{b} (line {graph[a][b]} of {a})" for a, b in zip(cycle, cycle[1:], strict=False)]
    return " -> ".join(steps)


def test_the_cycle_scan_sees_a_circle_hidden_in_a_function():
    modules = {"reports.assemble", "reports.analysis.caveats", "reports.stats"}
    top = (
        "from llm_call_anatomy.reports.analysis import caveats\n"
        "from llm_call_anatomy.reports.stats import num\n"
    )
    hidden = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from llm_call_anatomy.reports.stats import x\n"
        "def derive():\n    from llm_call_anatomy.reports.assemble import block_size\n"
    )
    graph = {
        "reports.assemble": imported_project_modules(top, modules),
        "reports.analysis.caveats": imported_project_modules(hidden, modules),
        "reports.stats": {},
    }
    assert graph["reports.assemble"] == {"reports.analysis.caveats": 1, "reports.stats": 2}
    assert graph["reports.analysis.caveats"] == {"reports.stats": 3, "reports.assemble": 5}
    cycle = a_cycle(graph)
    assert cycle == ["reports.analysis.caveats", "reports.assemble", "reports.analysis.caveats"]
    assert described(cycle, graph) == (
        "reports.analysis.caveats -> reports.assemble (line 5 of reports.analysis.caveats) "
        "-> reports.analysis.caveats (line 1 of reports.assemble)"
    )
    del graph["reports.analysis.caveats"]["reports.assemble"]
    assert a_cycle(graph) is None


def test_no_import_circle_even_through_an_import_inside_a_function():
    """Cut a circle by moving the piece both need to the lower module or to a small module of its own (the
    page model ``reports.model``, ``harness.version``, ``backends.load_level``), not by importing late."""
    graph = import_graph()
    assert len(graph) > 200 and sum(map(len, graph.values())) > 500  # the scan found the tree
    cycle = a_cycle(graph)
    assert cycle is None, "an import circle: " + described(cycle, graph)


# A registry imports its units by name (``importlib``), which no scan of import statements sees: the kinds'
# catalog imports every kind's room, so a room that imported the catalog at its top would be a circle at run
# time only. Each module of the package is imported first, in a fresh set of the package's modules.
IMPORT_EACH_FIRST = """
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "llm_call_anatomy" or m.startswith("llm_call_anatomy.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:  # an optional engine not installed here (vllm, sglang...): not ours
        if (exc.name or "").startswith("llm_call_anatomy"):
            failed.append(f"{name}: {exc}")
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed))
"""


@pytest.mark.slow
def test_every_module_imports_first_even_through_a_registry():
    names = [f"{PACKAGE}.{m}" for m in sorted(import_graph())]
    proc = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH_FIRST, *names],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "", "a circle at import time:\n" + proc.stdout
