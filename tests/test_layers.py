"""Each layer on its own floor: a module imports only its own package and the floors below it.

    contract  <  backends, workloads, reports  <  harness  <  benchmarks

``contract/`` holds the plain types every layer exchanges and imports no layer; an adapter (``backends/``) and
a planner (``workloads/``) know only the contract, never each other; the report (``reports/``) reads records
and the contract only, so it can be rebuilt from old runs without the measuring code; the harness drives
backends and workloads and builds the report at the end; the benchmarks sit on top of the study (a benchmark
reaches into a study through the child's ``LCA_CHILD_HOOK``, not the other way round). A workload kind is one
room, ``workloads/<kind>/``, with two halves on two floors: its measuring half (the room's own modules) on the
workloads' floor, its report half (``workloads/<kind>/report/``) on the report's; the report's core
(``reports/``) finds the report halves by their folders and imports none of them by name. Nothing imports the
front door (``compare.py``) or the tests. The standard library and third-party packages are open to all. An
AST scan, so that an import inside a function counts."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "llm_call_anatomy"  # the one package the layers are imported through (llm_call_anatomy/__init__.py)
PROJECT = ("contract", "backends", "workloads", "reports", "harness", "benchmarks", "compare", "tests")
# What each layer may import besides itself.
BELOW: dict[str, set[str]] = {
    "contract": set(),
    "backends": {"contract"},
    "workloads": {"contract"},
    "reports": {"contract"},
    "harness": {"contract", "backends", "workloads", "reports"},
    "benchmarks": {"contract", "backends", "workloads", "reports", "harness"},
}


def in_the_package(name: str) -> str:
    """A module's name inside the package: ``llm_call_anatomy.reports.gate`` -> ``reports.gate`` (every
    import names the package, ``tests/test_namespace.py``); any other name as it is."""
    return name.removeprefix(f"{PACKAGE}.")


def imported_modules(source: str) -> set[str]:
    """Every absolute module name ``source`` imports, wherever the import statement is (``from
    llm_call_anatomy import backends`` imports ``llm_call_anatomy.backends``)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == PACKAGE:
            names.update(f"{PACKAGE}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def layer_of_module(name: str) -> str:
    """The floor of a module: its top-level package, except a kind's report half (``workloads.<kind>.report``
    and below), which stands on the report's floor."""
    parts = in_the_package(name).split(".")
    if parts[0] == "workloads" and len(parts) >= 3 and parts[2] == "report":
        return "reports"
    return parts[0]


def layer_of_path(path: Path) -> str:
    """The floor of a file of the tree (as :func:`layer_of_module` for its module)."""
    return layer_of_module(".".join(path.relative_to(ROOT).with_suffix("").parts))  # a checkout's path


def imported_layers(source: str) -> set[str]:
    """The project's floors ``source`` imports (relative imports stay in their package)."""
    return {layer_of_module(name) for name in imported_modules(source)} & set(PROJECT)


def upward_imports(layer: str, source: str) -> set[str]:
    """The project packages a module of ``layer`` imports that are not on a floor below it."""
    return imported_layers(source) - BELOW[layer] - {layer}


def test_the_scan_sees_every_form_of_import():
    assert imported_layers("def f():\n    from benchmarks.overhead import measure_into\n") == {"benchmarks"}
    assert imported_layers("import benchmarks.study_time as st") == {"benchmarks"}
    assert imported_layers("from llm_call_anatomy import harness, reports as r") == {"harness", "reports"}
    assert imported_layers("import llm_call_anatomy.backends.hf as hf") == {"backends"}
    assert imported_layers("from benchmarks import overhead") == {"benchmarks"}
    assert imported_layers(
        "try:\n    import llm_call_anatomy.harness.chat\nexcept ImportError:\n    pass\n"
    ) == {"harness"}
    assert (
        imported_layers("import benchmarks_extra\nfrom .benchmarks import x\nx = 'benchmarks.overhead'")
        == set()
    )
    assert imported_layers("import json, pandas\nfrom contracts import x") == set()


def test_a_planted_upward_import_is_caught():
    # what the tree held before the contract floor: a planner rendering through the harness, the
    # report reading the harness's records module, an adapter parsing with the harness's options
    assert upward_imports("workloads", "from llm_call_anatomy.harness.chat import Renderer") == {"harness"}
    assert upward_imports("reports", "from llm_call_anatomy.harness.records import Record") == {"harness"}
    assert upward_imports(
        "backends", "def f():\n    from llm_call_anatomy.harness.load_args import parse_pairs\n"
    ) == {"harness"}
    assert upward_imports("reports", "from llm_call_anatomy.workloads.plan import Step") == {"workloads"}
    assert upward_imports("backends", "from llm_call_anatomy.workloads import build_plan") == {"workloads"}
    assert upward_imports("contract", "from llm_call_anatomy.backends.base import Request") == {"backends"}
    assert upward_imports("harness", "from benchmarks import overhead") == {"benchmarks"}
    assert upward_imports("harness", "import compare") == {"compare"}
    # and what is allowed
    assert (
        upward_imports(
            "reports",
            "from llm_call_anatomy.contract.records import Record\n"
            "from llm_call_anatomy.reports.stats import spread",
        )
        == set()
    )
    assert (
        upward_imports(
            "harness",
            "from llm_call_anatomy.backends.base import Backend\nfrom llm_call_anatomy.reports import build",
        )
        == set()
    )
    assert (
        upward_imports(
            "benchmarks",
            "from llm_call_anatomy.harness.chat import Renderer\n"
            "from llm_call_anatomy.reports.stats import spread",
        )
        == set()
    )


def test_a_kind_room_has_two_floors():
    assert layer_of_module("llm_call_anatomy.workloads.load.report.capacity") == "reports"
    assert layer_of_module("llm_call_anatomy.workloads.load.planner") == "workloads"
    assert layer_of_module("workloads.reporting") == "workloads"
    # the measuring half never imports the report half, and the report half no measuring module
    assert upward_imports("workloads", "from llm_call_anatomy.workloads.sweep.report import analysis") == {
        "reports"
    }
    assert upward_imports("reports", "from llm_call_anatomy.workloads.sweep.kind import SweepSpec") == {
        "workloads"
    }
    assert (
        upward_imports("reports", "from llm_call_anatomy.workloads.sweep.report.analysis import per_length")
        == set()
    )


def test_every_module_imports_only_its_floor_and_below():
    offenders, scanned = [], 0
    for top in BELOW:
        for path in sorted((ROOT / top).rglob("*.py")):
            scanned += 1
            layer = layer_of_path(path)
            up = upward_imports(layer, path.read_text(encoding="utf-8"))
            if up:
                offenders.append(f"{path.relative_to(ROOT)} imports {', '.join(sorted(up))}")
    assert scanned > 60  # the scan found the tree
    assert offenders == []


def test_the_contract_needs_nothing_but_the_standard_library():
    # the floor every environment imports (the vLLM and SGLang ones pin their own packages)
    foreign = set()
    for path in sorted((ROOT / "contract").rglob("*.py")):
        tops = {
            in_the_package(name).split(".")[0] for name in imported_modules(path.read_text(encoding="utf-8"))
        }
        foreign |= {
            f"{path.name}: {t}" for t in tops - set(sys.stdlib_module_names) - {"__future__", "contract"}
        }
    assert foreign == set()


# --- the harness and the workload kinds ----------------------------------------------------------
def imported_names(source: str) -> set[str]:
    """Every module ``source`` imports, and for ``from package import name`` also ``package.name``
    (``name`` may be a module: ``from llm_call_anatomy.workloads import load``)."""
    names = imported_modules(source)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module != PACKAGE:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def kind_rooms() -> set[str]:
    """The room (package) of every registered workload kind, e.g. ``workloads.load``."""
    from llm_call_anatomy.workloads.kinds import REGISTRY

    return {target.split(":")[0].rpartition(".")[0] for target in REGISTRY.values()}


def kind_imports(source: str, rooms: set[str]) -> set[str]:
    """The modules of ``source``'s imports that are a kind's room or inside one."""
    return {n for n in imported_names(source) if any(n == room or n.startswith(room + ".") for room in rooms)}


def test_the_kind_scan_sees_a_kind_module_and_only_that():
    rooms = {"llm_call_anatomy.workloads.load", "llm_call_anatomy.workloads.sweep"}
    planted = "def f():\n    from llm_call_anatomy.workloads.load import search_groups\n"
    assert kind_imports(planted, rooms) == {
        "llm_call_anatomy.workloads.load",
        "llm_call_anatomy.workloads.load.search_groups",
    }
    assert kind_imports("from llm_call_anatomy.workloads import load", rooms) == {
        "llm_call_anatomy.workloads.load"
    }
    assert kind_imports(
        "import llm_call_anatomy.workloads.sweep as s\n"
        "from llm_call_anatomy.workloads.load.planner import plan",
        rooms,
    ) == {
        "llm_call_anatomy.workloads.sweep",
        "llm_call_anatomy.workloads.load.planner",
        "llm_call_anatomy.workloads.load.planner.plan",
    }
    generic = (
        "from llm_call_anatomy.workloads.loader import x\n"
        "from llm_call_anatomy.workloads.kinds import kind\n"
        "from llm_call_anatomy import workloads"
    )
    assert kind_imports(generic, rooms) == set()  # workloads.loader only starts like a room


def test_the_harness_reaches_a_workload_kind_only_through_the_registry():
    """A kind's behaviour is a field of its ``Kind`` (``workloads.kinds``): the harness imports the registry
    and the generic workload modules, never a kind's own module."""
    rooms = kind_rooms()
    assert len(rooms) >= 5  # the registry was read
    offenders = [
        f"{path.relative_to(ROOT)} imports {', '.join(sorted(found))}"
        for path in sorted((ROOT / "harness").rglob("*.py"))
        if (found := kind_imports(path.read_text(encoding="utf-8"), rooms))
    ]
    assert offenders == []


def test_the_report_core_names_no_kind():
    """``reports/`` is the generic core (runs, page model, assembly, shared charts, statistics, exports, the
    gate): it imports nothing of ``workloads`` at all, so no kind's module either; the kinds' report halves
    are found by their folders (``reports.kinds``)."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {', '.join(sorted(found))}"
        for path in sorted((ROOT / "reports").rglob("*.py"))
        if "examples" not in path.parts
        and (
            found := {
                n
                for n in imported_modules(path.read_text(encoding="utf-8"))
                if in_the_package(n).split(".")[0] == "workloads"
            }
        )
    ]
    assert offenders == []


def test_the_core_scan_would_see_a_kind_import():
    found = {
        n
        for n in imported_modules("def f():\n    from llm_call_anatomy.workloads.load.report import levels\n")
    }
    assert any(in_the_package(n).split(".")[0] == "workloads" for n in found)
