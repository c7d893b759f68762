"""A server that fails every request: the run goes on, the report says why, the exit status says so (#15.1, .4, .5, .12)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.records import read_records
from tests.conftest import ROOT
from tests.harness.fakes import failing_server, small_workload

KEY = "sk-live-0123456789abcdefSECRET"
pytestmark = pytest.mark.openai


def run_against_failing_server(tmp_path, *extra: str) -> tuple[subprocess.CompletedProcess, object]:
    out = tmp_path / "run"
    env = {**os.environ, "LCA_FAKE_KEY": KEY}
    with failing_server() as url:
        proc = subprocess.run(
            [sys.executable, "compare.py", "--backend", "openai", "--base-url", url, "--api-key-env", "LCA_FAKE_KEY",
             "--workload-file", str(small_workload(tmp_path)), "--repeats", "1", "--out", str(out), *extra],
            cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    return proc, out


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory):
    return run_against_failing_server(tmp_path_factory.mktemp("failing"))


def test_every_request_failed_still_gives_a_report(failed_run):  # 15.1
    proc, out = failed_run
    assert "report: " in proc.stdout and "KeyError" not in proc.stderr, proc.stderr[-3000:]
    page = (out / "report.html").read_text()
    rows = read_records(out)
    assert rows and all(r["error"] for r in rows)
    assert "failed" in page and "InternalServerError" in page  # the section says what failed and why


def test_markup_in_a_server_error_does_not_stop_the_run(failed_run):  # 15.4
    proc, out = failed_run
    assert "MarkupError" not in proc.stderr
    assert {r["workload"] for r in read_records(out)} == {"chat", "lengths"}  # both workloads ran
    assert "[/bold] engine crashed" in proc.stderr  # printed as the server wrote it


def test_a_backend_that_errored_exits_non_zero(failed_run):  # 15.5
    proc, _ = failed_run
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "report: " in proc.stdout  # the report is written all the same
    assert "compare.py: openai failed (exit 1)" in proc.stderr


def test_a_key_the_server_echoes_is_redacted_everywhere(failed_run):  # 15.12
    proc, out = failed_run
    assert KEY not in proc.stdout + proc.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert any("[redacted]" in (r["error"] or "") for r in read_records(out))
