"""The H200-pair sitting (lab/h200/two_gpus_sitting.sh): each study's compare.py flags parse and pass
the two-GPU checks on a host that sees two CUDA devices, and the configurations are the ones the issue asks
for."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from llm_call_anatomy.harness.cli import parser
from llm_call_anatomy.harness.parallel_args import check_parallel

SCRIPT = Path(__file__).resolve().parents[2] / "lab" / "h200" / "two_gpus_sitting.sh"


def studies() -> list[tuple[str, str, list[str]]]:
    """(name, backend, flags) of each ``study TIMEOUT NAME BACKEND FLAGS`` line."""
    out = []
    for line in SCRIPT.read_text().splitlines():
        if not line.strip().startswith("study "):
            continue
        words = shlex.split(line.strip())
        if words[:1] == ["study"] and len(words) > 3 and words[1].isdigit():
            out.append((words[2], words[3], words[4:]))
    return out


def test_the_script_is_valid_bash() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_each_study_passes_the_checks_on_two_gpus() -> None:
    found = studies()
    assert len(found) == 5
    configs = set()
    for name, backend, flags in found:
        args = parser("compare.py").parse_args(["--backend", backend, "--workloads", "load", *flags])
        check_parallel(args.dp, args.tp, args.router, [backend], "cuda", cuda_devices=2)
        assert args.tp * args.dp == 2, name  # both GPUs, every configuration
        configs.add((backend, args.tp, args.dp, args.router))
    assert configs == {
        ("vllm-server", 2, 1, "internal"),
        ("vllm-server", 1, 2, "internal"),
        ("sglang-server", 2, 1, "internal"),
        ("sglang-server", 1, 2, "round_robin"),
        ("sglang-server", 1, 2, "cache_aware"),
    }
