"""The plan's time up front (issue 43): a backend's whole run on this machine is remembered, and the next
run's plan scales it to its own tokens ("about 35 min at this machine's pace"); a backend never timed here is
named as such, and an unreadable file is no estimate, never an error."""

from __future__ import annotations

import json

from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.harness import pace
from llm_call_anatomy.harness.plan_summary import plan_lines
from tests.conftest import compare


def plan(calls: int, tokens: int = 64) -> Plan:
    warm = Group(block="j/m", steps=[Step("j", "json", "m", "case=0", "p", tokens, rep=-1)], warmup=True)
    timed = [
        Group(block="j/m", steps=[Step("j", "json", "m", f"case={i}", "p", tokens)]) for i in range(calls)
    ]
    pool = Group(block="l/pool", steps=[Step("l", "load", "S=0", "pool", "p", 999)], load={"pool": True})
    return Plan(groups=[warm, *timed, pool])


def test_a_remembered_run_scales_to_the_next_plan(tmp_path):
    path = tmp_path / "pace.json"
    assert pace.plan_tokens(plan(15)) == 16 * 64  # warm-up included, the search's pool not
    assert pace.time_line(path, ["hf"], "tiny", "cpu", 1024) is None  # nothing timed here yet
    pace.remember(path, "hf", "tiny", "cpu", seconds=120.0, tokens=1024)
    pace.remember(path, "vllm", "tiny", "cpu", seconds=60.0, tokens=1024)
    assert pace.estimate(path, ["hf", "vllm"], "tiny", "cpu", 10 * 1024) == {"hf": 1200.0, "vllm": 600.0}
    assert pace.time_line(path, ["hf", "vllm"], "tiny", "cpu", 10 * 1024) == (
        "  time: about 30 min at this machine's pace (the last runs here of hf, vllm on this model and "
        "device); the progress bar's ETA once cases finish"
    )
    said = pace.time_line(path, ["hf", "sglang"], "tiny", "cpu", 1024)
    assert (
        said.startswith("  time: about 2 min for hf at this machine's pace (as they ran")
        and "sglang not timed here" in said
    )
    assert pace.estimate(path, ["hf"], "smollm2", "cpu", 1024) == {}  # another model: its own pace
    lines = plan_lines(plan(15), ["hf", "vllm"], time=said)
    assert lines[-1] == said


def test_an_unreadable_file_is_no_estimate(tmp_path):
    path = tmp_path / "pace.json"
    path.write_text("not json")
    assert pace.estimate(path, ["hf"], "tiny", "cpu", 100) == {}
    pace.remember(path, "hf", "tiny", "cpu", seconds=10.0, tokens=100)  # written anew, whole
    assert json.loads(path.read_text())["hf | tiny | cpu"]["tokens"] == 100
    pace.remember(tmp_path / "missing-dir" / "x" / "pace.json", "hf", "tiny", "cpu", 10.0, 100)  # no error


def test_the_second_run_of_a_machine_has_its_time_up_front(tmp_path):
    env = {**__import__("os").environ, "LCA_CACHE": str(tmp_path / "cache")}
    args = ["--backend", "hf", "--model", "tiny", "--workloads", "template", "--repeats", "1", "--no-report"]
    first = compare(*args, "--out", str(tmp_path / "a"), env=env, timeout=600).stdout
    assert "  time: no estimate before the first case" in first
    second = compare(*args, "--out", str(tmp_path / "b"), env=env, timeout=600).stdout.splitlines()
    line = next(x for x in second if x.startswith("  time: "))
    assert line.startswith("  time: about ") and "at this machine's pace (the last runs here of hf" in line
    assert second.index(line) < second.index("== hf ==")
