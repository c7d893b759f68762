"""A run says what it will do before the first engine starts (issue 43): one line a workload with its
counts, the total over the backends; after each backend the rest at the pace of those that ran; and
``--repeats R`` makes every workload small, a grid with its own count too (the json calls per temperature)."""

from __future__ import annotations

import importlib.util

import pytest

from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.harness.cli_parser import parser
from llm_call_anatomy.harness.plan_summary import duration, plan_lines, rest_line
from llm_call_anatomy.harness.run_plan import choose_workloads
from tests.conftest import compare


def grid(modes: int, temperatures: int, calls: int) -> list[Group]:
    return [
        Group(
            block=f"j/m{m}",
            steps=[Step("j", "json", f"m{m}", f"case={c % 8}", "p", 64, rep=c // 8, temperature=t / 10)],
        )  # fmt: skip
        for t in range(temperatures)
        for c in range(calls)
        for m in range(modes)
    ]


def test_the_plan_names_each_workload_s_counts_and_the_total():
    warm = Group(block="j/m0", steps=[Step("j", "json", "m0", "case=0", "p", 64, rep=-1)], warmup=True)
    sweep = [
        Group(block=f"s/N={n}", steps=[Step("s", "sweep", "greedy", f"N={n}", "p", 64)]) for n in (64, 256)
    ]
    lines = plan_lines(Plan(groups=[warm, *grid(3, 5, 16), *sweep]), ["hf", "vllm"])
    assert lines[0] == "plan:"
    assert (
        lines[1] == "  j: 240 requests (3 modes, 5 temperatures, 8 cases, 2 repeats), up to 15,360 new tokens"
    )
    assert lines[2] == "  s: 2 requests (2 cases), up to 128 new tokens"
    assert lines[3] == "  242 timed requests a backend × 2 backends (hf, vllm) = 484, plus warm-ups"
    assert "ETA" in lines[4]


def test_a_backend_foreseen_skipped_is_named_with_its_reason_and_not_counted():
    sweep = [
        Group(block=f"s/N={n}", steps=[Step("s", "sweep", "greedy", f"N={n}", "p", 64)]) for n in (64, 256)
    ]
    plan = Plan(groups=sweep)
    gpu = "runs on a CUDA GPU only (this run is on cpu)"
    lines = plan_lines(plan, ["hf", "hf-graphs", "vllm"], skipped={"hf-graphs": gpu})
    assert lines[2] == "  2 timed requests a backend × 2 backends (hf, vllm) = 4"
    assert lines[3] == f"  hf-graphs: skipped, not counted: {gpu}"
    assert lines[4].startswith("  time: no estimate before the first case")
    lines = plan_lines(plan, ["hf-graphs"], skipped={"hf-graphs": gpu})
    assert lines[2:] == [
        "  nothing to time: every backend will be skipped",
        f"  hf-graphs: skipped, not counted: {gpu}",
    ]


def test_a_load_counts_its_levels_and_a_search_pool_is_no_request():
    level = Group(block="l/C=1", steps=[Step("l", "load", "S=0", "C=1", "p", 8, user=i) for i in range(4)],
                  load={"concurrency": 1})  # fmt: skip
    pool = Group(block="l/pool", steps=[Step("l", "load", "S=0", "pool", "p", 8)] * 50,
                 load={"pool": True, "search": True})  # fmt: skip
    lines = plan_lines(Plan(groups=[level, pool]), ["hf"])
    assert lines[1] == "  l: 4 requests (1 load level), up to 32 new tokens"
    assert lines[2] == "  4 timed requests a backend and the levels the capacity search adds"


def test_the_rest_of_the_run_at_the_pace_of_the_backends_that_ran():
    assert rest_line({}, ["vllm"]) is None  # nothing ran yet (the first was skipped): no pace
    assert rest_line({"hf": 600.0}, []) is None  # nothing left
    assert rest_line({"hf": 600.0, "hf-cb": 1200.0}, ["vllm", "sglang"]) == (
        "about 30 min left for vllm, sglang (at the pace of hf, hf-cb on this machine: 15 min a backend)"
    )
    assert [duration(s) for s in (42, 600, 3 * 3600)] == ["42 s", "10 min", "3.0 h"]


@pytest.mark.parametrize(
    ("argv", "calls"),
    [
        ([], 16),  # the file's, when --repeats is not given
        (["--repeats", "1"], 1),  # small for every workload
        (["--repeats", "3"], 3),
        (["--repeats", "40"], 16),  # a cap, never more than the file's
        (["--repeats", "1", "--json-calls", "4"], 4),  # the grid's own option wins
    ],
)
def test_repeats_given_caps_the_json_grid(argv, calls, capsys):
    args = parser().parse_args(["--workloads", "json,sweep", *argv])
    (json_spec,) = [s for s in choose_workloads(args).specs if s.name == "json"]
    assert json_spec.calls_per_temperature == calls
    said = capsys.readouterr().out
    assert ("--json-calls 1 (pass --json-calls to choose)" in said) == (argv == ["--repeats", "1"])


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang is installed here")
def test_the_plan_is_printed_before_the_first_engine_start(tmp_path):
    proc = compare("--backend", "sglang", "--model", "tiny", "--workloads", "json,sweep", "--repeats", "1",
                   "--out", str(tmp_path / "run"), "--no-report", check=False, timeout=300)  # fmt: skip
    out = proc.stdout.splitlines()
    assert out.index("plan:") < out.index("== sglang ==")
    assert "  json: 15 requests (3 modes, 5 temperatures), up to 960 new tokens" in out
    assert "  nothing to time: every backend will be skipped" in out  # sglang: foreseen, not counted
    assert (
        "  sglang: skipped, not counted: not installed here (sglang): pip install 'llm-call-anatomy[sglang]'"
        in out
    )


def test_a_busy_machine_is_warned_of_before_the_first_engine_start():
    from llm_call_anatomy.harness.plan_summary import busy_line

    assert busy_line(1.5, 2, "cpu") is None and busy_line(None, 2, "cpu") is None
    said = busy_line(3.2, 2, "cpu")
    assert said.startswith("warning: this machine is busy: load average 3.2 over its 2 cores")
    assert "OMP_NUM_THREADS" in said and "docs/explanation/methodology.md#a-busy-machine" in said
    assert "OMP_NUM_THREADS" not in busy_line(40.0, 32, "cuda")


def test_the_cores_are_those_the_process_may_run_on():
    """A container limited to 2 of the host's 64 cores is busy at a load of 3, not at 65."""
    import os

    from llm_call_anatomy.harness.plan_summary import machine_load

    load, cores = machine_load()
    assert load is None or load >= 0
    assert cores == (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())


def test_a_load_is_counted_by_its_modes_and_levels():
    levels = [
        Group(
            block=f"l/S={s}/C={c}",
            steps=[Step("l", "load", f"S={s}", f"C={c}", "p", 8, rep=i, user=i) for i in range(c)],
            load={"concurrency": c},
        )  # fmt: skip
        for s in (0, 960)
        for c in (1, 4)
    ]
    assert plan_lines(Plan(groups=levels), ["hf"])[1] == (
        "  l: 10 requests (2 modes, 4 load levels), up to 80 new tokens"
    )
