"""Every workload file the H200 sittings queue (lab/h200/*.yaml) lints as the sittings run it: on the Qwen3-8B
shape (its real tokenizer, built here), so a typo or an unknown field fails here, not 20 device-minutes into a
sitting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "lab" / "h200").glob("*.yaml"))
# the context the sittings give each (study.sh: 3072; the long-context call and anatomy_sitting.sh: 32768)
MAX_MODEL_LEN = {"long-context.yaml": 32768, "anatomy.yaml": 32768, "trace-conversation.yaml": 32768}


def missing_traces(path: Path) -> list[Path]:
    """The trace files a workload file names that are not here (the shared traces sit beside the checkout:
    ../shared/traces, where a clean clone elsewhere may have none)."""
    import yaml

    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    named = [path.parent / w["trace"]["path"] for w in doc["workloads"] if (w.get("trace") or {}).get("path")]
    return [p for p in named if not p.exists()]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_sittings_workload_file_lints(path: Path) -> None:
    if missing := missing_traces(path):
        pytest.skip(f"{path.name}: its trace is not beside this checkout ({missing[0].resolve()})")
    argv = [sys.executable, "compare.py", "--backend", "vllm-server", "--model", "qwen3-8b-shape"]
    argv += ["--random-weights", "--max-model-len", str(MAX_MODEL_LEN.get(path.name, 3072))]
    argv += ["--workload-file", str(path.relative_to(ROOT)), "--lint-only"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "valid:" in done.stdout


def test_there_are_files_to_lint() -> None:
    assert len(FILES) >= 5 and any(p.name == "think-3.yaml" for p in FILES)
