"""Shared test helpers: run the real CLI in a subprocess, read a run's records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("LCA_CACHE", str(ROOT / ".cache" / "models"))
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The tests that Ctrl-C a run (tests/harness/test_signals.py, tests/backends/test_openai_servers.py)
# need their children to start with SIGINT at its default, as a run started from a terminal does. A shell
# without job control starts a background command (`pytest ... &` in a script) with SIGINT ignored, its
# children inherit that, and Python then raises no KeyboardInterrupt: the run ignores the Ctrl-C and ends
# with 0. compare.py keeps an ignored SIGINT ignored, as every Unix program does (the shell asked for it);
# the tests set their own process's handler instead, which a child gets back as the default on exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The lab's committed evidence (lab/examples, lab/results) is not part of a small clone
# (docs/start/install.md#a-small-clone): the product tests that read an example run as a realistic fixture
# skip there, and run wherever the evidence is checked out (CI clones it whole).
def lab_example(name: str) -> Path:
    """``lab/examples/<name>``, or a skip naming why it is absent."""
    path = ROOT / "lab" / "examples" / name
    if not path.is_dir():
        pytest.skip(f"lab/examples/{name} is not checked out (a small clone: docs/start/install.md)")
    return path


# the fields every record carries, whatever its kind (the records contract, docs/reference/records.md)
RECORD_CONTRACT = (
    "run_id",
    "backend",
    "backend_version",
    "model",
    "workload",
    "mode",
    "case",
    "rep",
    "turn",
    "temperature",
    "prompt_tokens",
    "shared_prefix_tokens",
    "cached_tokens",
    "computed_tokens",
    "ttft_ms",
    "decode_ms_per_token",
    "output_tokens",
    "first_token_id",
    "output_text",
    "valid_json",
    "clean",
    "timing_source",
    "error",
    "skipped",
)


# the workloads a run without --workloads measures: every built-in one (each kind room's builtin.yaml)
DEFAULT_WORKLOADS = frozenset({"conversation", "sweep", "json", "template", "load-sessions", "load-fixed"})


def compare(
    *args: str, timeout: float = 900, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run ``python compare.py ARGS`` from the repo root (in ``env``, else this process's environment) and
    return the finished process."""
    proc = subprocess.run(
        [sys.executable, "compare.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"compare.py {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return proc


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (Path(run_dir) / "records.jsonl").read_text().splitlines()]


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    from llm_call_anatomy.harness.models import build_tiny

    return build_tiny()


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """SmolLM2-135M-Instruct, materialised once (about a minute the first time; skipped without its
    package)."""
    from llm_call_anatomy.harness import models

    try:
        return models.build_smollm2()
    except models.ModelError as exc:
        pytest.skip(str(exc))
