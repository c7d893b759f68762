"""Fault test: kill a small run at random points (SIGKILL; once leaving a torn line), resume each time,
and end with exactly the keys of an uninterrupted run (#15 "Also", #15.2)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time

from llm_call_anatomy.contract.records import row_key
from llm_call_anatomy.harness.records import read_records
from tests.conftest import compare
from tests.harness.background_runs import child_pids, small_run_args, start_run


def keys(run_dir) -> set[tuple]:
    rows = read_records(run_dir)
    assert all(not r["error"] and not r["skipped"] for r in rows)
    return {row_key(r) for r in rows}


def kill_after(args: list[str], out, n_lines: int) -> None:
    """Start the run (resuming when records exist) and SIGKILL parent and child once ``n_lines`` lines
    exist."""
    path = out / "records.jsonl"
    resume = ["--resume"] if path.exists() else []
    parent = start_run([*args, *resume], out, n_lines, timeout_s=120, stdout=subprocess.DEVNULL)
    for pid in child_pids(out):  # the child first: it outlives its parent by design, and would go on writing
        os.kill(pid, signal.SIGKILL)
    parent.kill()
    parent.communicate(timeout=60)
    # the child (and any child the parent started in its last moment) is killed until none is left running,
    # so nothing it writes can land after what the test appends next
    deadline = time.time() + 30
    while (running := [pid for pid in child_pids(out) if not zombie(pid)]) and time.time() < deadline:
        for pid in running:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    assert not running, f"child processes still running after SIGKILL: {running}"


def zombie(pid: int) -> bool:
    """A process that has exited but is not yet reaped (it writes nothing more), or one already gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_killed_runs_resume_to_the_uninterrupted_key_set(tmp_path):
    args = small_run_args(tmp_path, 2)
    compare(*args, "--out", str(tmp_path / "whole"))
    expected = keys(tmp_path / "whole")
    total = len(expected)

    out = tmp_path / "killed"
    rng = random.Random(15)
    seen = 0
    for attempt in range(3):
        seen = rng.randint(seen + 1, seen + total // 4)
        kill_after(args, out, seen)
        if attempt == 2:  # a crash in the middle of a write, just before the resume that finishes the run
            path = out / "records.jsonl"
            lines = path.read_bytes().splitlines(keepends=True)
            if len(lines) >= total:  # the child outran the SIGKILL and finished (an idle CPU): as if it had
                path.write_bytes(b"".join(lines[: total - 1]))  # died before its last record, so that the
                # resume has a case to run and opens the records for appending, where the cut happens
            with path.open("a") as f:
                f.write('{"run_id": "killed", "backend": "hf", "workload": "len')
        seen = len((out / "records.jsonl").read_bytes().splitlines())
    proc = compare(*args, "--out", str(out), "--resume")
    assert keys(out) == expected
    assert "cut a torn last line" in proc.stderr  # cut before anything was appended, with a warning
    assert (out / "records.jsonl").read_bytes().endswith(b"\n")
