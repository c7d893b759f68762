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
MAX_MODEL_LEN = {"long-context.yaml": 32768, "anatomy.yaml": 32768}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_sittings_workload_file_lints(path: Path) -> None:
    argv = [sys.executable, "compare.py", "--backend", "vllm-server", "--model", "qwen3-8b-shape"]
    argv += ["--random-weights", "--max-model-len", str(MAX_MODEL_LEN.get(path.name, 3072))]
    argv += ["--workload-file", str(path.relative_to(ROOT)), "--lint-only"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "valid:" in done.stdout


def test_there_are_files_to_lint() -> None:
    assert len(FILES) >= 5 and any(p.name == "think-3.yaml" for p in FILES)
