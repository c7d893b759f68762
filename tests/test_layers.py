"""Each layer on its own floor: the study's code (harness, backends, workloads, reports) never imports
``benchmarks/``, which sits on top of it (a benchmark reaches into a study through the child's
``LCA_CHILD_HOOK``, not the other way round). An AST scan, so that an import inside a function counts."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("harness", "backends", "workloads", "reports")


def imported_modules(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def imports_benchmarks(source: str) -> bool:
    return any(name == "benchmarks" or name.startswith("benchmarks.") for name in imported_modules(source))


def test_the_scan_sees_every_form_of_import():
    assert imports_benchmarks("def f():\n    from benchmarks.overhead import measure_into\n")
    assert imports_benchmarks("import benchmarks.study_time as st")
    assert imports_benchmarks("from benchmarks import overhead")
    assert not imports_benchmarks("import benchmarks_extra\nfrom .benchmarks import x\nx = 'benchmarks.overhead'")


def test_no_study_layer_imports_benchmarks():
    files = [f for layer in LAYERS for f in sorted((ROOT / layer).rglob("*.py"))]
    assert len(files) > 20  # the scan found the tree
    offenders = [str(f.relative_to(ROOT)) for f in files if imports_benchmarks(f.read_text())]
    assert offenders == []
