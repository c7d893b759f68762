"""``llm-call-anatomy`` routes to the study and to ``report``; ``python compare.py`` keeps working (#20)."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from llm_call_anatomy.harness import console, version
from tests.conftest import ROOT, compare


def test_version_is_the_declared_one():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version.version() == declared
    assert compare("--version", timeout=120).stdout.strip() == f"compare.py {declared}"


def test_console_routes_report_and_study(tmp_path, capsys):
    assert console.main(["report", str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err.startswith("llm-call-anatomy report: error: ")
    assert console.main(["--backend", "tensorrt", "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.startswith("llm-call-anatomy: error: unknown backend 'tensorrt'")


def test_module_entry_point_prints_help():
    proc = subprocess.run(
        [sys.executable, "-m", "llm_call_anatomy.harness.console", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("usage: llm-call-anatomy ")


def test_messages_and_help_name_the_command_the_user_typed(tmp_path, capsys, monkeypatch):
    """issue 43: installed, the last lines and --help's examples say llm-call-anatomy, not compare.py."""
    from llm_call_anatomy.harness.backend_runs import build_report
    from llm_call_anatomy.harness.cli_parser import epilog

    assert version.commands("compare.py") == ("python compare.py", "python compare.py report")
    assert version.commands("llm-call-anatomy") == ("llm-call-anatomy", "llm-call-anatomy report")
    installed = epilog("llm-call-anatomy")
    assert "compare.py --" not in installed and "python compare.py report runs" not in installed
    assert "  llm-call-anatomy report --baseline runs/a --candidate runs/b" in installed
    assert "  python compare.py --lint-only --workload-file my_study.yaml" in epilog("compare.py")
    monkeypatch.setitem(sys.modules, "llm_call_anatomy.reports", None)  # a venv without the report extra
    assert build_report(tmp_path, "llm-call-anatomy") is False
    said = capsys.readouterr().err.strip()
    assert said.startswith("llm-call-anatomy: report not built: ") and "[report]'" in said


def test_the_last_line_names_the_installed_command(tmp_path, capsys):
    code = console.main(["--backend", "sglang", "--model", "tiny", "--workloads", "template",
                         "--repeats", "1", "--out", str(tmp_path / "run"), "--no-report"])  # fmt: skip
    if code == 0:
        return  # sglang is installed here: it measured
    assert code == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("llm-call-anatomy: nothing was measured: sglang was skipped")
