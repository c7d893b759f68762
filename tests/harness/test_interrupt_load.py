"""Ctrl-C in the middle of a load level driven from client processes prints the clean message alone (issue
44, item 14): the client processes, in the run's process group, get the SIGINT too and used to print a
torn ``Traceback ... asyncio/runners.py`` as they were stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT
from tests.harness.background_runs import child_pids
from tests.harness.faulty_server import Faults, faulty_server

pytestmark = [pytest.mark.openai, pytest.mark.slow]

SPEC = """
workloads:
  - {name: lf, kind: load, shape: fixed, levels: [4], rates: [], requests: 16, output_tokens: 30,
     prompt_tokens: 32, shared_prefix_tokens: [0], warmup_requests: 0}
"""


def test_ctrl_c_in_a_sharded_level_is_one_clean_message(tmp_path):
    out, spec = tmp_path / "run", tmp_path / "lf.yaml"
    spec.write_text(SPEC)
    with faulty_server(Faults(token_gap_s=0.1)) as server:
        parent = subprocess.Popen(
            [
                sys.executable, "compare.py", "--backend", "openai", "--base-url", server.url,
                "--model", "tiny", "--workload-file", str(spec), "--client-procs", "2", "--no-report",
                "--out", str(out),
            ],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.time() + 180
        while server.completions < 3 and time.time() < deadline:  # the level is under way, from its clients
            assert parent.poll() is None, parent.communicate()[1][-3000:]
            time.sleep(0.05)
        time.sleep(0.3)
        parent.send_signal(signal.SIGINT)
        _, err = parent.communicate(timeout=90)
    assert parent.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert "interrupted (SIGINT)" in err and "--resume" in err
    assert child_pids(out) == []
