"""The backends a run will skip are foreseen before the first engine starts (issue 43): a module a backend
needs that the interpreter running it lacks, or a GPU-only backend on a CPU, is named in the plan with its
reason and left out of its counts and its time; the children still run and record the skip themselves."""

from __future__ import annotations

import os
import sys

from llm_call_anatomy import backends
from llm_call_anatomy.harness import skips
from tests.conftest import compare
from tests.harness.fakes import small_workload


def test_a_backend_whose_module_is_missing_here_is_foreseen_skipped_with_its_extra(monkeypatch):
    monkeypatch.setitem(backends.NEEDS, "vllm", backends.Needs(("json", "no_such_module_43")))
    assert skips.skip_reason("vllm", "cpu", sys.executable) == (
        "not installed here (no_such_module_43): pip install 'llm-call-anatomy[vllm]'"
    )
    monkeypatch.setitem(backends.NEEDS, "vllm", backends.Needs(("json",)))
    assert skips.skip_reason("vllm", "cpu", sys.executable) is None  # what is installed passes


def test_a_gpu_only_backend_is_foreseen_skipped_on_a_cpu_and_not_on_a_gpu():
    assert (
        skips.skip_reason("hf-graphs", "cpu", sys.executable)
        == "runs on a CUDA GPU only (this run is on cpu)"
    )
    assert skips.skip_reason("hf-graphs", "cuda", sys.executable) is None
    assert skips.skip_reason("hf", "cpu", sys.executable) is None


def test_another_interpreter_is_asked_in_a_process_of_its_own(tmp_path, monkeypatch):
    other = tmp_path / "python"
    os.symlink(sys.executable, other)  # another path: the probe runs in a child process
    monkeypatch.setitem(backends.NEEDS, "sglang-server", backends.Needs(("json", "no_such_module_43")))
    assert skips.missing_modules(("json", "no_such_module_43"), str(other)) == ["no_such_module_43"]
    why = skips.foreseen(["hf", "sglang-server"], "cuda", {"sglang-server": str(other)})
    assert why == {"sglang-server": f"not installed in {other} (no_such_module_43): pip install "
                                    "'llm-call-anatomy[openai]'"}  # fmt: skip
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    assert skips.missing_modules(("json",), str(broken)) is None  # could not be asked: nothing foreseen
    assert skips.foreseen(["sglang-server"], "cuda", {"sglang-server": str(broken)}) == {}


def test_a_column_takes_its_base_s_needs_and_interpreter():
    assert backends.needs("hf-graphs@x") == backends.needs("hf-graphs")
    assert skips.interpreter("vllm@fp8", {"vllm": "/venv/bin/python"}) == "/venv/bin/python"
    assert skips.interpreter("vllm@fp8", {"vllm@fp8": "/a", "vllm": "/b"}) == "/a"


def test_the_plan_leaves_out_the_backends_it_foresees_skipped(tmp_path):
    """hf runs; hf-graphs (a GPU's) and sglang (not installed, or a GPU's) are named in the plan, not counted,
    and not among the backends whose time is left after hf."""
    small = str(small_workload(tmp_path))
    proc = compare("--backend", "hf,hf-graphs,sglang", "--model", "tiny", "--device", "cpu",
                   "--workload-file", small, "--repeats", "1", "--out", str(tmp_path / "run"))  # fmt: skip
    plan = proc.stdout[proc.stdout.index("plan:") : proc.stdout.index("== hf ==")]
    assert "timed requests a backend, plus warm-ups" in plan  # one backend: no "× 3 backends"
    assert "× 3 backends" not in plan and "hf-graphs, " not in plan
    assert "  hf-graphs: skipped, not counted: runs on a CUDA GPU only (this run is on cpu)" in plan
    assert "  sglang: skipped, not counted: " in plan
    assert "left for" not in proc.stdout  # nothing is left to time after hf
    assert "hf-graphs: skipped: hf-graphs captures CUDA graphs" in proc.stderr  # the child still says why
