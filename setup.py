"""The wheel's one package and the build step that stamps the commit (the rest is pyproject.toml's).

The wheel installs ``llm_call_anatomy`` only (issue 38): ``llm_call_anatomy/__init__.py`` and the checkout's
five layers mapped inside it (``package_dir``: ``llm_call_anatomy.reports`` is ``reports/``), every package
of each layer listed. A source archive built from a checkout carries ``.lca-commit`` at its root (``git
rev-parse HEAD``, with ``-dirty`` where the tree differs); a wheel carries it as
``llm_call_anatomy/harness/.lca-commit``, from the checkout it is built in or from the archive's file.
``harness/env.py``'s ``commit_provenance`` reads it where the installed package is no checkout. Nothing is
tracked: ``.lca-commit`` is in .gitignore."""

from __future__ import annotations

import subprocess
from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
STAMP = ".lca-commit"
PACKAGE = "llm_call_anatomy"
LAYERS = ("contract", "backends", "workloads", "reports", "harness")  # as llm_call_anatomy/__init__.py's


def packages() -> tuple[list[str], dict[str, str]]:
    """The wheel's packages, every one under ``llm_call_anatomy``, and where each layer's folder is."""
    found, where = [PACKAGE], {PACKAGE: PACKAGE}
    for layer in LAYERS:
        where[f"{PACKAGE}.{layer}"] = layer
        found += [f"{PACKAGE}.{layer}"] + [
            f"{PACKAGE}.{layer}.{p}"
            for p in find_namespace_packages(str(HERE / layer), exclude=["*__pycache__*"])
        ]
    return found, where


def commit() -> str | None:
    """HEAD of the checkout this file is the top of (``-dirty`` where ``git status`` shows changes), else
    the first line of the ``.lca-commit`` an archive carries, else None."""
    try:
        top = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--show-toplevel", "HEAD"],
                             capture_output=True, text=True, timeout=10)  # fmt: skip
        if top.returncode == 0:
            where, _, head = top.stdout.strip().partition("\n")
            if Path(where).resolve() == HERE:
                status = subprocess.run(["git", "-C", str(HERE), "status", "--porcelain", "--", "."],
                                        capture_output=True, text=True, timeout=10)  # fmt: skip
                return head.strip() + ("-dirty" if status.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    path = HERE / STAMP
    lines = path.read_text(encoding="utf-8").split() if path.is_file() else []
    return lines[0] if lines else None


class BuildPy(build_py):
    def run(self) -> None:
        found = commit()  # before anything is written (an unignored output would read as -dirty)
        super().run()
        if found and not self.editable_mode:  # an editable install reads the checkout's git itself
            target = Path(self.build_lib) / PACKAGE / "harness" / STAMP
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(found + "\n", encoding="utf-8")


class Sdist(sdist):
    def run(self) -> None:
        self.found = commit()  # before the release tree is made inside the checkout (it would read as -dirty)
        super().run()

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        if self.found:
            target = Path(base_dir) / STAMP
            target.unlink(missing_ok=True)  # a hard link to the checkout's own copy: not written through
            target.write_text(self.found + "\n", encoding="utf-8")


PACKAGES, PACKAGE_DIR = packages()
setup(packages=PACKAGES, package_dir=PACKAGE_DIR, cmdclass={"build_py": BuildPy, "sdist": Sdist})
