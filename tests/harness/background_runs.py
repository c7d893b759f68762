"""compare.py run in the background, for the tests that interrupt a run: the small HF run they interrupt
(:func:`small_run_args`), start it and wait for its first records (:func:`start_run`), and find the child
process that measures (:func:`child_pids`)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT
from tests.harness.fakes import small_workload


def small_run_args(folder: Path, repeats: int) -> list[str]:
    """compare.py's arguments for HF on the small workload of tests/harness/fakes.py (written into
    ``folder``), ``repeats`` times, without a report."""
    workload = str(small_workload(folder))
    return ["--backend", "hf", "--workload-file", workload, "--repeats", str(repeats), "--no-report"]


def start_run(
    args: list[str] | tuple[str, ...], out: Path, n_lines: int, timeout_s: float = 300, stdout=subprocess.PIPE
) -> subprocess.Popen:
    """Start ``compare.py ARGS --out OUT`` and return it, still running, once ``out/records.jsonl`` holds
    ``n_lines`` lines or ``timeout_s`` has passed (the caller judges what was written); fails if the run
    ends first."""
    parent = subprocess.Popen(
        [sys.executable, "compare.py", *args, "--out", str(out)],
        cwd=ROOT,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )
    path = out / "records.jsonl"
    deadline = time.time() + timeout_s
    while time.time() < deadline and not (path.exists() and len(path.read_bytes().splitlines()) >= n_lines):
        assert parent.poll() is None, (
            f"the run ended before it wrote {n_lines} records: {parent.communicate()[1][-2000:]}"
        )
        time.sleep(0.05)
    return parent


def child_pids(run_dir: Path) -> list[int]:
    """The running ``harness.child`` processes that measure into ``run_dir``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"llm_call_anatomy.harness.child" in cmd and str(run_dir).encode() in cmd:
                pids.append(int(proc.name))
    return pids
