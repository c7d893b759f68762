"""One package on ``sys.path`` (issue 38): every import of a layer names ``llm_call_anatomy``.

The wheel installs the five layers inside ``llm_call_anatomy`` (tests/package/test_wheel.py); a checkout
keeps them at the top level and ``llm_call_anatomy/__init__.py`` maps the package onto them. A bare ``import
reports`` or ``from harness.cli import main`` would work in a checkout (its root is on ``sys.path``), import a
second copy of the module beside the package's, and fail once installed: an AST scan of every Python file of
the tree (the product, the tests, the benchmarks, the lab) refuses it, and a scan of the commands written in
the tree refuses ``python -m <layer>...``.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import llm_call_anatomy
from llm_call_anatomy import LAYERS
from tests.conftest import ROOT

NOT_SOURCE = {".git", ".venv", "build", "dist", "runs", ".cache", ".gpu", "node_modules"}
TEXT = {".md", ".sh", ".toml", ".yaml", ".yml", ".py"}
# ``-m`` and a layer's bare name; and the report's old checkout command, python -m + reports (written apart:
# the rewrite script of issue 38 turns it into ``python compare.py report`` wherever it is whole)
OLD_COMMAND = re.compile(rf"-m\s+(?:{'|'.join(LAYERS)})\b|python -m report(?=s\b)")


def tracked(*suffixes: str) -> list[Path]:
    """The tree's files with one of ``suffixes`` (git's list where there is one: no build outputs)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"],
                            capture_output=True, text=True)  # fmt: skip
    if listed.returncode == 0:
        paths = [ROOT / f for f in listed.stdout.splitlines()]
    else:  # a copy without .git
        paths = [p for p in ROOT.rglob("*") if not NOT_SOURCE & set(p.relative_to(ROOT).parts)]
    return [p for p in paths if p.suffix in suffixes and p.is_file() and "examples" not in p.parts]


def bare_layer_imports(source: str) -> list[str]:
    """``line: statement`` of every import of a layer by its bare name (``import reports``, ``from
    harness.cli import main``), wherever the statement is."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{node.lineno}: {ast.unparse(node)}" for n in names if n.split(".")[0] in LAYERS]
    return found


def test_the_scan_sees_a_bare_layer_import():
    planted = "import reports\nfrom harness.cli import main\ndef f():\n    import backends.base as b\n"
    assert len(bare_layer_imports(planted)) == 3
    good = (
        "from llm_call_anatomy import reports\nfrom llm_call_anatomy.harness.cli import main\n"
        "import llm_call_anatomy.backends.base as b\nfrom benchmarks import overhead\nimport reporting\n"
        "from . import reports\nx = 'reports.gate'\n"
    )
    assert bare_layer_imports(good) == []


def test_no_file_imports_a_layer_by_its_bare_name():
    files = tracked(".py")
    assert len(files) > 300  # the scan sees the tree: product, tests, benchmarks and lab
    offenders = [
        f"{path.relative_to(ROOT)}:{hit}"
        for path in files
        for hit in bare_layer_imports(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_no_command_runs_a_layer_by_its_bare_name():
    """A layer run by its bare name, and the report's old checkout command: the package's name instead
    (``python -m llm_call_anatomy.harness.child``), and ``python compare.py report`` for the report."""
    assert (
        OLD_COMMAND.search("python -m " + "reports runs/a")
        and OLD_COMMAND.search('"-m", "harness.child"') is None
    )
    offenders = []
    for path in tracked(*TEXT):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OLD_COMMAND.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_in_a_checkout_the_package_is_the_top_level_folders():
    assert llm_call_anatomy.HOME == ROOT
    from llm_call_anatomy import reports
    from llm_call_anatomy.harness import cli

    assert Path(reports.__file__) == ROOT / "reports" / "__init__.py"
    assert Path(cli.__file__) == ROOT / "harness" / "cli.py"
    assert set(LAYERS) == {"contract", "backends", "workloads", "reports", "harness"}


def test_no_module_forwards_an_old_import_path():
    """A name is imported from its home: no module of the package answers for moved names through a
    module-level ``__getattr__`` (PEP 562), the forwarding addresses issue 38 cut."""
    forwarding = [
        str(path.relative_to(ROOT))
        for layer in LAYERS
        for path in sorted((ROOT / layer).rglob("*.py"))
        if any(
            isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
            for node in ast.parse(path.read_text(encoding="utf-8")).body
        )
    ]
    assert forwarding == []


BARE_LINE = re.compile(
    rf"^\s*(?:from\s+(?:{'|'.join(LAYERS)})(?:\.\w+)*\s+import\b|import\s+(?:{'|'.join(LAYERS)})\b)"
)


def test_no_source_written_inside_a_string_or_a_page_imports_a_layer_by_its_bare_name():
    """Python held in a string (a script a test runs with ``python -c``, a docstring's example) and the
    docs' code blocks: the AST scan above does not read inside strings, so each line is read as text."""
    assert BARE_LINE.search("from backends.base import Request") and BARE_LINE.search("    import reports")
    assert not BARE_LINE.search("from llm_call_anatomy.backends.base import Request")
    assert not BARE_LINE.search("from benchmarks import overhead") and not BARE_LINE.search(
        "import reporting"
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in tracked(".py", ".md", ".sh")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if BARE_LINE.search(line)
    ]
    assert offenders == []
