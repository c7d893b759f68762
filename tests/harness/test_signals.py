"""SIGTERM / Ctrl-C reach the whole run, which stops cleanly with a resume hint (#15.6, #15.13)."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from llm_call_anatomy.harness.records import read_records
from tests.harness.background_runs import child_pids, small_run_args, start_run


def start(tmp_path) -> tuple[subprocess.Popen, object]:
    out = tmp_path / "run"
    args = small_run_args(tmp_path, 30)
    return start_run(args, out, 2), out


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
    # the cut backend's engine facts (written by its child) reach env.json, where the report looks first
    written = {p.stem for p in (out / "env").glob("*.json")}
    assert written and set(json.loads((out / "env.json").read_text())["backends"]) == written
