"""``llm-call-anatomy`` routes to the study and to ``report``; ``python compare.py`` keeps working (#20)."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from harness import console
from tests.conftest import ROOT, compare


def test_version_is_the_declared_one():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert console.version() == declared
    assert compare("--version", timeout=120).stdout.strip() == f"compare.py {declared}"


def test_console_routes_report_and_study(tmp_path, capsys):
    assert console.main(["report", str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err.startswith("llm-call-anatomy report: error: ")
    assert console.main(["--backend", "tensorrt", "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.startswith("llm-call-anatomy: error: unknown backend 'tensorrt'")


def test_module_entry_point_prints_help():
    proc = subprocess.run(
        [sys.executable, "-m", "harness.console", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("usage: llm-call-anatomy ")
