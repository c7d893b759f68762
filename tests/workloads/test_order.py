"""The plan's order: variants interleaved within a repeat, rotating between repeats and engine starts."""

from __future__ import annotations

from collections import Counter

from llm_call_anatomy.workloads.catalog import build_plan, read_builtin
from llm_call_anatomy.workloads.kinds import repeated_kinds
from llm_call_anatomy.workloads.plan import rotated


def timed(plan, workload: str, start: int = 0):
    return [
        s
        for g in plan.groups
        if not g.warmup
        for s in g.steps
        if s.workload == workload and s.engine_start == start
    ]


def test_rotated():
    assert (
        rotated([1, 2, 3], 0) == [1, 2, 3]
        and rotated([1, 2, 3], 1) == [2, 3, 1]
        and rotated((1, 2, 3), 4) == [2, 3, 1]
    )
    assert rotated([], 3) == []


def test_every_position_of_the_sweep_holds_every_length_once_over_as_many_repeats(renderer):
    lengths = read_builtin(["sweep"])[0].lengths
    plan = build_plan(read_builtin(["sweep"]), renderer, repeats=len(lengths))
    steps = timed(plan, "sweep")
    orders = [[s.case for s in steps if s.rep == rep] for rep in range(len(lengths))]
    assert all(sorted(o) == sorted(f"N={n}" for n in lengths) for o in orders)  # each repeat: every N once
    for position in range(len(lengths)):
        assert len({o[position] for o in orders}) == len(lengths)  # no N always first (or last)
    warm = [g for g in plan.groups if g.warmup]
    assert plan.groups[: len(warm)] == warm  # warm-ups first, then the timed groups


def test_later_starts_repeat_only_the_latency_kinds_with_their_own_keys(renderer):
    specs = read_builtin(["conversation", "sweep", "json", "template"])
    plan = build_plan(
        [s.model_copy(update={"calls_per_temperature": 1}) if s.kind == "json" else s for s in specs],
        renderer,
        repeats=2,
        starts=3,
    )
    kinds = {
        start: {s.kind for g in plan.groups for s in g.steps if s.engine_start == start} for start in range(3)
    }
    assert kinds[0] == {"conversation", "sweep", "json", "template"}
    assert kinds[1] == kinds[2] == set(repeated_kinds())
    keys = Counter(s.key() for g in plan.groups if not g.warmup for s in g.steps)
    assert max(keys.values()) == 1  # a record key names one request
    first = [s.mode for s in timed(plan, "conversation", 0) if s.turn == 1]
    second = [s.mode for s in timed(plan, "conversation", 1) if s.turn == 1]
    assert first == ["full", "cached", "cached", "full"] and second == ["cached", "full", "full", "cached"]


def test_json_modes_take_turns_call_by_call(renderer):
    spec = read_builtin(["json"])[0].model_copy(update={"calls_per_temperature": 3})
    steps = timed(build_plan([spec], renderer, repeats=1), "json")
    modes = [m.name for m in spec.modes]
    calls = [[s.mode for s in steps[i : i + len(modes)]] for i in range(0, len(steps), len(modes))]
    assert calls[:3] == [rotated(modes, 0), rotated(modes, 1), rotated(modes, 2)]
    assert sum(1 for s in steps if s.top_logprobs) == len(modes)  # step-0 candidates once per mode
