"""The capacity search through the runner and the one load loop, on a stand-in engine whose latency grows
with load and has a known knee; and the search's bracket logic on its own.

The stand-in batches every request in flight; a request's first token comes ``UNIT_S`` x (requests in
flight when it arrived) after its submit, plus ``SATURATED_S`` once more than ``KNEE`` are in flight.
In a closed loop at C every request after the first wave arrives with exactly C in flight, so a target
of TTFT p90 <= ``LIMIT_MS`` is met up to C = KNEE and missed from KNEE + 1 on, with wide margins
(120 ms vs 330 ms against 220 ms) that a loaded machine's scheduling jitter cannot cross.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from llm_call_anatomy.backends.base import Backend, TokenClock
from llm_call_anatomy.contract import capacity as cap
from llm_call_anatomy.contract.adapter import BackendSettings, Capabilities, RawOutput, Request
from llm_call_anatomy.contract.level_stats import level_stats
from llm_call_anatomy.contract.slo import parse_target
from llm_call_anatomy.harness.load_search import measured_levels
from llm_call_anatomy.harness.runner import Runner

UNIT_S, SATURATED_S, KNEE, LIMIT_MS = 0.010, 0.200, 12, 220
TARGET = f"knee:ttft_p90_ms={LIMIT_MS}"
SPEC = f"""
workloads:
  - name: lf
    kind: load
    shape: fixed
    prompt_tokens: 16
    shared_prefix_tokens: [0]
    output_tokens: 3
    requests: 40
    warmup_requests: 0
    levels: [1, 4, 16]
    search_levels: 4
    search_targets: ["{TARGET}"]
"""


class Knee(Backend):
    name = "knee"
    capabilities = Capabilities(load=True, batches_requests=True)

    def __init__(self) -> None:
        super().__init__(BackendSettings(model_path="-", model_label="-"))
        self.in_flight = 0
        self.resets = 0

    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:  # pragma: no cover - load only
        raise NotImplementedError

    def reset_cache(self) -> None:
        self.resets += 1

    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        self.in_flight += 1
        try:
            await asyncio.sleep(UNIT_S * self.in_flight + (SATURATED_S if self.in_flight > KNEE else 0.0))
            for _ in range(request.max_new_tokens):
                clock.tick(1)
                await asyncio.sleep(0.002)
        finally:
            self.in_flight -= 1
        return RawOutput(token_ids=[7] * request.max_new_tokens, text="")


def plan_of(spec: str, model_dir, folder):
    """The plan of a workload file holding ``spec`` (written into ``folder``), one repeat, rendered with
    the model's own tokenizer."""
    from transformers import AutoTokenizer

    from llm_call_anatomy.contract.chat import Renderer
    from llm_call_anatomy.workloads.catalog import build_plan
    from llm_call_anatomy.workloads.reader import read_workload_file

    path = folder / "load.yaml"
    path.write_text(spec)
    return build_plan(read_workload_file(path), Renderer(AutoTokenizer.from_pretrained(model_dir)), repeats=1)


@pytest.fixture(scope="module")
def plan(tiny_model_dir, tmp_path_factory):
    return plan_of(SPEC, tiny_model_dir, tmp_path_factory.mktemp("spec"))


def run(plan, run_dir, resume=False) -> Knee:
    backend = Knee()
    Runner(backend, plan, run_dir, {"run_id": run_dir.name, "backend": backend.name}, resume=resume).run()
    return backend


def capacity_of(run_dir):
    levels = measured_levels(run_dir, "knee", 0, "lf", "S=0", "closed")
    target = parse_target(TARGET)
    judged = {c: (cap.judge(target, level_stats(rows, c)), facts) for c, (rows, facts) in levels.items()}
    return cap.capacity(target, "closed", judged, ceiling=16), levels


def test_the_search_finds_the_knee_between_the_planned_levels_and_resumes(plan, tmp_path):
    out = tmp_path / "run"
    run(plan, out)
    found, levels = capacity_of(out)
    # planned 1, 4, 16; the search: 8 (geometric midpoint of 4 and 16), 11, 13, each a level like any; then
    # 13 / 11 = 1.18 is within the search's ratio (1.25): both ends reported, the knee (12) between them
    assert (found.value, found.next_up, found.bound) == (11, 13, "bracket")
    assert found.ratio == pytest.approx(13 / 11) and found.value <= KNEE < found.next_up
    assert found.limiter.startswith("TTFT p90 ") and f"> {LIMIT_MS} ms (n=" in found.limiter
    assert sorted(levels) == [1, 4, 8, 11, 13, 16]
    assert {c for c, (_, facts) in levels.items() if facts.searched_for == "knee"} == {8, 11, 13}
    assert all(len(rows) == 40 for rows, _ in levels.values())  # the same requests as a planned level

    # a crash during the last added level: its level record and half its requests are lost; --resume
    # runs that level again, and nothing else
    path = out / "records.jsonl"
    lines = path.read_text().splitlines()
    rows = [json.loads(x) for x in lines]
    cut = [i for i, r in enumerate(rows) if r.get("case") == "C=13"]
    path.write_text("\n".join(x for i, x in enumerate(lines) if i not in cut[20:]) + "\n")
    run(plan, out, resume=True)
    again, levels = capacity_of(out)
    assert (again.value, again.next_up) == (11, 13) and sorted(levels) == [1, 4, 8, 11, 13, 16]
    keys = [(r["case"], r["rep"]) for r in map(json.loads, path.read_text().splitlines())]
    assert len(set(keys)) == len({(r["case"], r["rep"]) for r in rows})  # the uninterrupted key set
    assert sum(k[0] == "C=11" for k in keys) == 41  # the finished levels did not run again


def test_without_the_search_only_the_planned_levels_run(plan, tmp_path):
    import dataclasses

    bare = dataclasses.replace(
        plan,
        groups=[
            dataclasses.replace(g, load={k: v for k, v in g.load.items() if k != "search"})
            for g in plan.groups
        ],
    )
    run(bare, tmp_path / "run")
    found, levels = capacity_of(tmp_path / "run")
    assert sorted(levels) == [1, 4, 16] and (found.value, found.next_up, found.bound) == (4, 16, "bracket")


@pytest.mark.parametrize(
    "met,integer,ceiling,expected",
    [
        ({1: True, 4: True, 16: False}, True, None, 8),  # geometric midpoint
        ({8: True, 16: False}, True, None, 11),
        ({12: True, 13: False}, True, None, None),  # adjacent: done
        ({1: True, 4: True}, True, 16, 8),  # every level met: twice the highest, up to the ceiling
        ({1: True, 8: True}, True, 12, 12),
        ({1: True, 4: True}, True, None, None),  # no ceiling above the levels: a floor
        ({4: False}, True, None, 2),  # even the lowest missed: below it
        ({1: False}, True, None, None),
        ({2.0: True, 8.0: False}, False, None, 4.0),  # rates: continuous
        ({4.0: True, 4.3: False}, False, None, None),  # within 10 %
    ],
)
def test_next_level_bisects_the_bracket(met, integer, ceiling, expected):
    assert cap.next_level(met, integer, ceiling) == expected


def test_a_level_that_meets_the_target_above_a_miss_is_flagged_not_searched_around():
    lo, hi, non_monotone = cap.bracket({1: True, 4: False, 8: True})
    assert (lo, hi, non_monotone) == (1, 4, True)


def test_the_limiter_names_the_kv_cache_and_preemptions_where_the_engine_shows_them():
    from llm_call_anatomy.contract.slo import Verdict

    v = Verdict(False, {}, {}, "TTFT p90 900 ms > 500 ms")
    assert cap.limiter_text(v, {"kv_cache_usage_peak": 0.99, "preemptions": 3.0}) == (
        "TTFT p90 900 ms > 500 ms; KV cache full (peak 99%); 3 preemptions"
    )
    assert (
        cap.limiter_text(v, {"kv_cache_usage_peak": float("nan"), "preemptions": float("nan")}) == v.limiter
    )


RATES_SPEC = f"""
workloads:
  - name: lf
    kind: load
    shape: fixed
    prompt_tokens: 16
    shared_prefix_tokens: [0]
    output_tokens: 3
    warmup_requests: 0
    levels: [1]
    rates: [5, 200]
    duration_s: 2
    search_levels: 3
    search_targets: ["{TARGET}"]
"""


def test_the_open_loop_search_refines_between_the_poisson_rates(tiny_model_dir, tmp_path):
    """At 5 requests/s the stand-in is idle between arrivals; at 200/s, sustained for 2 s, its queue passes
    the knee. Where between the search lands depends on the machine's timing, so the test checks what
    must hold whatever it is: each added rate lies inside the bracket it refines, the capacity passed the
    target and the next rate up did not, and no more than the budget was added. Every rate level runs
    its duration (the arrivals the seeded process draws over 2 s), each request with its planned submit."""
    from llm_call_anatomy.contract.arrivals import arrival_times
    from llm_call_anatomy.workloads.load.prompts import RANDOM_SEED

    plan = plan_of(RATES_SPEC, tiny_model_dir, tmp_path)
    out = tmp_path / "run"
    run(plan, out)
    levels = measured_levels(out, "knee", 0, "lf", "S=0", "open")
    added = sorted(r for r, (_, facts) in levels.items() if facts.searched_for)
    assert 1 <= len(added) <= 3 and all(5 < r < 200 for r in added)
    for r, (rows, facts) in levels.items():
        due = arrival_times(r, until_s=2.0 * (facts.extended or 1), seed=RANDOM_SEED)
        assert len(rows) == len(due) and all(x["load_rate_rps"] == r for x in rows)
        assert sorted(x["planned_submit_s"] for x in rows) == pytest.approx(due)
    target = parse_target(TARGET)
    judged = {
        r: (cap.judge(target, level_stats(rows, None), facts), facts) for r, (rows, facts) in levels.items()
    }
    found = cap.capacity(target, "open", judged, ceiling=200)
    assert found.value is not None and judged[found.value][0].passed and not judged[found.next_up][0].passed
    assert found.value >= 5 and found.next_up <= 200


SESSIONS_SPEC = f"""
workloads:
  - name: ls
    kind: load
    shape: sessions
    system: You answer in one short line.
    turns:
      - {{user: "First question?", assistant: "First answer."}}
      - {{user: "Second question?", assistant: "Second answer."}}
    users: 16
    output_tokens: 3
    warmup_requests: 0
    levels: [1, 4, 16]
    search_levels: 4
    search_targets: ["{TARGET}"]
"""


def test_the_search_on_sessions_runs_whole_sessions_of_c_users(tiny_model_dir, tmp_path):
    """Sessions of two turns: at C users the second turns arrive with C in flight, so the knee is the
    stand-in's, C=12; an added level runs C whole sessions (both turns of users 0..C-1), as a planned one."""
    plan = plan_of(SESSIONS_SPEC, tiny_model_dir, tmp_path)
    out = tmp_path / "run"
    run(plan, out)
    levels = measured_levels(out, "knee", 0, "ls", "sessions", "closed")
    target = parse_target(TARGET)
    judged = {c: (cap.judge(target, level_stats(rows, c)), facts) for c, (rows, facts) in levels.items()}
    found = cap.capacity(target, "closed", judged)
    assert (found.value, found.next_up) == (11, 13)  # 13 / 11 is within the search's ratio
    for c, (rows, _) in levels.items():
        users = max(int(c), 4)
        assert sorted((r["user"], r["turn"]) for r in rows) == [(u, t) for u in range(users) for t in (1, 2)]


def test_a_resume_starts_the_engine_while_a_search_may_have_levels_to_add(plan, tmp_path):
    """Every planned request recorded is not 'done' for a start with a capacity search: the runner must
    look."""
    from llm_call_anatomy.harness.backend_runs import all_recorded

    out = tmp_path / "run"
    run(plan, out)
    assert not all_recorded(out, "knee", plan, 0)
    import dataclasses

    bare = dataclasses.replace(
        plan,
        groups=[
            dataclasses.replace(g, load={k: v for k, v in g.load.items() if k != "search"})
            for g in plan.groups
        ],
    )
    assert all_recorded(out, "knee", bare, 0)  # without a search, every planned request recorded is done


# --- the engine's own limit (issue 39: "or the engine's own limit: max running sequences") -------------
LIMITED = SPEC.replace("levels: [1, 4, 16]", "levels: [1, 2]\n    search_max: 16")


class Limited(Knee):
    """The stand-in with a scheduler that runs at most 6 requests at once (vLLM's max_num_seqs)."""

    def max_running(self) -> tuple[int | None, str]:
        return 6, "max_num_seqs"


def test_the_search_goes_no_higher_than_the_engines_limit_and_records_it(tiny_model_dir, tmp_path):
    plan = plan_of(LIMITED, tiny_model_dir, tmp_path)
    out = tmp_path / "run"
    backend = Limited()
    Runner(backend, plan, out, {"run_id": "run", "backend": backend.name}, resume=False).run()
    levels = measured_levels(out, "knee", 0, "lf", "S=0", "closed")
    # every level passes up to the knee (12): upward 4, then the engine's 6 (not 8, 16); nothing above it
    assert sorted(levels) == [1, 2, 4, 6]
    added = {c: facts for c, (_, facts) in levels.items() if facts.searched_for}
    assert set(added) == {4, 6}
    assert {
        (f.search_engine_limit, f.search_engine_limit_name, f.search_ceiling) for f in added.values()
    } == {(6, "max_num_seqs", 16)}


@pytest.mark.parametrize(
    ("stated", "limit", "loop", "expected"),
    [
        (512, 256, "closed", 256),
        (128, 256, "closed", 128),
        (512, None, "closed", 512),
        (64.0, 8, "open", 64.0),
    ],
)
def test_the_search_ceiling_is_the_engines_limit_where_it_is_lower(stated, limit, loop, expected):
    assert cap.search_ceiling(stated, limit, loop) == expected
