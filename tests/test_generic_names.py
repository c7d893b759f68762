"""No generic module decides on a kind's or a backend's name: the registries are the only dispatchers.

An AST scan of every module outside the kind rooms and the registry tables: a registered workload
kind's or backend's name as a string literal is a defect where the code *decides* on it, i.e. as
an operand of a comparison (``kind == "json"``, ``"load" in step.needs``, ``in ("hf", "vllm")``),
as an argument of a pandas ``.eq`` / ``.ne`` / ``.isin``, or as the ``kind=`` of a record or step
being built. A kind's behaviour is a field of its ``Kind`` / ``ReportKind``; a backend's is a
capability or an env.json fact. Elsewhere a literal may coincide with a name without naming it
(``Group.load``, the ``load`` capability, a PyPI package called ``vllm``), so only those three
forms count.
"""

from __future__ import annotations

import ast
from pathlib import Path

from llm_call_anatomy import backends
from llm_call_anatomy.reports import kinds as report_kinds
from llm_call_anatomy.workloads import kinds as measuring_kinds

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("contract", "backends", "workloads", "reports", "harness")
# The registry tables and the modules that are about the seed article's figures kind by kind; the kinds'
# rooms (every file under ``workloads/<kind>/``) name themselves and are found by :func:`in_a_kind_room`.
ROOMS = {
    "backends/__init__.py",  # the backend registry
    "workloads/kinds.py",
    "reports/kinds.py",  # the kind registries
    "reports/analysis/seed_claims/__init__.py",  # what the seed's claims share
    "reports/readme_tables.py",
}


def in_a_kind_room(path: Path) -> bool:
    """A file of a registered kind's room, ``workloads/<kind>/...``."""
    parts = path.relative_to(ROOT).parts
    return len(parts) > 2 and parts[0] == "workloads" and parts[1] in set(measuring_kinds.names())


DECIDING_CALLS = {"eq", "ne", "isin"}
# (module, literal) that coincide with a registered name without naming it, and why
COINCIDENCES = {("reports/export.py", "json"): "the export format --format json, not the kind"}


def names() -> set[str]:
    return set(measuring_kinds.names()) | set(report_kinds.names()) | set(backends.REGISTRY)


def _literals(node: ast.AST) -> list[ast.Constant]:
    """String constants of ``node`` itself or of a tuple / list / set literal it is."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in node.elts for c in _literals(e)]
    return []


def deciding_names(source: str, watched: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every watched name ``source`` decides on."""
    found = []
    for node in ast.walk(ast.parse(source)):
        operands: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in DECIDING_CALLS:
                operands = list(node.args)
            operands += [k.value for k in node.keywords if k.arg == "kind"]
        found += [(c.lineno, c.value) for o in operands for c in _literals(o) if c.value in watched]
    return found


def generic_modules() -> list[Path]:
    paths = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    return [
        p
        for p in paths
        if "examples" not in p.parts
        and p.relative_to(ROOT).as_posix() not in ROOMS
        and not in_a_kind_room(p)
        and not any(part in ("hf", "vllm", "sglang", "openai") for part in p.relative_to(ROOT).parts[1:-1])
    ]


def test_the_scan_sees_each_form_of_deciding_on_a_name():
    watched = {"json", "load", "hf", "vllm"}
    src = (
        'if spec.kind == "json": pass\nif "load" in step.needs: pass\nok = name in ("hf", "vllm")\n'
        'df[df["kind"].eq("json")]\nRecord(kind="load")\n'
    )
    assert sorted(deciding_names(src, watched)) == [
        (1, "json"),
        (2, "load"),
        (3, "hf"),
        (3, "vllm"),
        (4, "json"),
        (5, "load"),
    ]
    harmless = (
        'group.get("load")\nPACKAGES = ("torch", "vllm")\nGroupRunner(run, needs="load")\nx = {"json": 1}\n'
    )
    assert deciding_names(harmless, watched) == []


def test_the_scan_covers_the_generic_modules():
    covered = {p.relative_to(ROOT).as_posix() for p in generic_modules()}
    for module in (
        "harness/cli.py",
        "harness/cli_parser.py",
        "harness/run_plan.py",
        "harness/backend_runs.py",
        "harness/runner.py",
        "harness/load_runner.py",
        "harness/load_search.py",
        "harness/cli_checks.py",
        "workloads/reader.py",
        "workloads/__init__.py",
        "reports/assemble.py",
        "reports/analysis/agreement.py",
        "reports/analysis/caveats.py",
        "reports/page.py",
        "backends/base.py",
        "backends/load_loop.py",
        "contract/plan.py",
    ):
        assert module in covered, module
    assert "backends/vllm/backend.py" not in covered and "workloads/load/planner.py" not in covered


def test_no_generic_module_decides_on_a_kind_or_backend_name():
    watched = names()
    offences = [
        f"{p.relative_to(ROOT)}:{line}: {name!r}"
        for p in generic_modules()
        for line, name in deciding_names(p.read_text(encoding="utf-8"), watched)
        if (p.relative_to(ROOT).as_posix(), name) not in COINCIDENCES
    ]
    assert not offences, (
        "decided on a registered name (make it a field of the kind, a capability or an env fact):\n"
        + "\n".join(offences)
    )
