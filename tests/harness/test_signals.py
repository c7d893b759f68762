"""SIGTERM / Ctrl-C reach the whole run, which stops cleanly with a resume hint (#15.6, #15.13)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from harness.records import read_records
from tests.conftest import ROOT
from tests.harness.fakes import small_workload
from tests.harness.test_resume import child_pids


def start(tmp_path) -> tuple[subprocess.Popen, object]:
    out = tmp_path / "run"
    args = [
        "--backend",
        "hf",
        "--workload-file",
        str(small_workload(tmp_path)),
        "--repeats",
        "30",
        "--no-report",
    ]
    parent = subprocess.Popen(
        [sys.executable, "compare.py", *args, "--out", str(out)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    path = out / "records.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and (not path.exists() or len(path.read_text().splitlines()) < 2):
        assert parent.poll() is None, parent.communicate()
        time.sleep(0.1)
    return parent, out


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_to_the_parent_stops_the_child_too(tmp_path, sig, code):
    parent, out = start(tmp_path)
    parent.send_signal(sig)
    _, err = parent.communicate(timeout=60)
    assert parent.returncode == code, err[-3000:]
    assert "--resume" in err
    assert "Traceback" not in err, err[-3000:]  # 15.13: one line, not a 95-line traceback
    assert child_pids(out) == []
    n = len((out / "records.jsonl").read_text().splitlines())
    time.sleep(1.5)
    assert len((out / "records.jsonl").read_text().splitlines()) == n  # nobody is still appending
    assert n < 2 * (30 * 6 + 2 * 30)
    assert read_records(out)
