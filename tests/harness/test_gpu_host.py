"""What env.json records about other engines on the GPU host: the sitting's declaration, and NVML's
processes, each marked as this run's own or another's."""

from __future__ import annotations

import os
import subprocess
import sys

from llm_call_anatomy.harness import gpu_host


def test_a_child_of_this_process_is_ours_and_init_is_not():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert gpu_host.is_ours(child.pid) and gpu_host.is_ours(os.getpid())
        assert not gpu_host.is_ours(1) and not gpu_host.is_ours(os.getppid())
    finally:
        child.kill()
        child.wait()


def test_the_sittings_declaration_is_recorded(monkeypatch):
    monkeypatch.setenv(gpu_host.DECLARED_ENV, "sglang study on GPU 1")
    facts = gpu_host.facts()
    assert facts["declared"] == "sglang study on GPU 1" and facts["hostname"]


def test_processes_seen_in_an_earlier_sample_are_kept(monkeypatch):
    monkeypatch.setattr(gpu_host, "gpu_processes", lambda: [{"gpu": 0, "pid": 10, "ours": True}])
    first = gpu_host.facts()
    monkeypatch.setattr(gpu_host, "gpu_processes", lambda: [{"gpu": 1, "pid": 20, "ours": False}])
    later = gpu_host.facts(first)
    assert {p["pid"] for p in later["gpu_processes"]} == {10, 20} and later["other_processes"] == 1
    monkeypatch.setattr(gpu_host, "gpu_processes", lambda: None)
    assert gpu_host.facts()["gpu_processes"] is None  # no NVML here: not known, which is not "none"
