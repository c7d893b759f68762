"""Every public function or method longer than 15 lines says what it does (issue 23, phase 3).

An AST scan of the source packages: a function or method whose name has no leading underscore and whose
``def`` line to last line spans more than ``MAX_LINES`` lines must have a docstring. Nested functions and
methods count like top-level ones. The second test runs the same scan on a source string, so it is known
to catch what it is for.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("contract", "backends", "workloads", "harness", "reports", "benchmarks")
MAX_LINES = 15  # a public function longer than this needs a docstring

PENDING: set[str] = set()  # files exempted while another branch edits them (empty: none)


def undocumented(source: str) -> list[tuple[str, int, int]]:
    """(name, line, length) of every public function or method in ``source`` that spans more than
    ``MAX_LINES`` lines and has no docstring."""
    return sorted(
        (n.name, n.lineno, n.end_lineno - n.lineno + 1)
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and not n.name.startswith("_")
        and n.end_lineno - n.lineno + 1 > MAX_LINES
        and not ast.get_docstring(n)
    )


def source_files() -> list[Path]:
    return sorted(f for pkg in PACKAGES for f in (ROOT / pkg).rglob("*.py") if ".venv" not in f.parts)


def test_every_long_public_function_has_a_docstring():
    files = source_files()
    assert len(files) > 50  # the scan sees the tree
    missing = [
        f"{rel}:{line} {name} ({length} lines)"
        for f in files
        if (rel := f.relative_to(ROOT).as_posix()) not in PENDING
        for name, line, length in undocumented(f.read_text(encoding="utf-8"))
    ]
    assert not missing, "public functions over 15 lines without a docstring:\n" + "\n".join(missing)


def function(name: str, lines: int, *, doc: bool = False, indent: str = "") -> str:
    """Source of a function ``lines`` lines long (its ``def`` line included), optionally documented."""
    head = [f"def {name}():"] + (['    """Says what it does."""'] if doc else [])
    body = [f"    x{i} = {i}" for i in range(lines - len(head) - 1)] + ["    return x0"]
    return "".join(f"{indent}{line}\n" for line in head + body)


def test_the_scan_catches_a_long_undocumented_function():
    source = "\n".join(
        [
            function("at_the_limit", MAX_LINES),
            function("over_the_limit", MAX_LINES + 1),
            function("_private", MAX_LINES + 10),
            function("documented", MAX_LINES + 10, doc=True),
            "class Thing:\n" + function("method", MAX_LINES + 1, indent="    "),
            'def outer():\n    """Documented."""\n' + function("inner", MAX_LINES + 1, indent="    "),
        ]
    )
    assert len(function("over_the_limit", MAX_LINES + 1).splitlines()) == MAX_LINES + 1
    found = {name: length for name, _, length in undocumented(source)}
    assert found == {"over_the_limit": MAX_LINES + 1, "method": MAX_LINES + 1, "inner": MAX_LINES + 1}
