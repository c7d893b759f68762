"""Issue #21's H200 sitting (benchmarks/h200/serving_sitting.sh): valid bash, and each queued study's
compare.py flags parse and its ``--load`` override validates on the built-in load workloads (a typo would
otherwise cost the device minutes of everything queued before it)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from harness.cli import parser
from workloads import overrides
from workloads.load.spec import parse_load
from workloads.reader import read_workload_file

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "h200" / "serving_sitting.sh"


def studies() -> list[tuple[str, str, list[str]]]:
    """(name, backend, flags) of each ``study TIMEOUT NAME BACKEND FLAGS`` line (continuation lines
    joined)."""
    text = SCRIPT.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        words = shlex.split(line.strip().removeprefix("OVERHEAD=1 "), comments=True)
        if words[:1] == ["study"] and len(words) > 3 and words[1].isdigit():
            out.append((words[2], words[3], words[4:]))
    return out


def test_the_script_is_valid_bash() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_each_study_parses_and_its_load_override_validates() -> None:
    found = studies()
    assert {backend for _, backend, _ in found} == {"hf-graphs", "vllm-server", "vllm", "sglang-server"}
    builtin = read_workload_file(ROOT / "workloads" / "builtin" / "load.yaml")
    for name, backend, flags in found:
        args = parser("compare.py").parse_args(["--backend", backend, *flags])
        assert args.workloads, name
        if args.load:
            specs = overrides.apply_fields(builtin, "--load", parse_load(args.load))
            assert all(s.search_levels == 0 for s in specs), (
                name
            )  # the planned levels only: the search is #22's
    assert len({name for name, _, _ in found}) == len(found)  # one archive per study
