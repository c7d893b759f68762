"""The JSON workload's plan: warm-ups in the shapes of the timed calls."""

from __future__ import annotations

from llm_call_anatomy.workloads.catalog import build_plan, read_builtin


def test_each_mode_warms_up_every_request_shape_it_times(renderer):
    plan = build_plan(read_builtin(["json"]), renderer, 1)
    for block in dict.fromkeys(g.block for g in plan.groups):
        groups = [g for g in plan.groups if g.block == block]
        warm = [s for g in groups if g.warmup for s in g.steps]
        timed = [s for g in groups if not g.warmup for s in g.steps]
        for feature in (lambda s: s.top_logprobs > 0, lambda s: s.temperature > 0, lambda s: s.grammar):
            assert {feature(s) for s in timed} <= {feature(s) for s in warm}, block
        assert any(s.top_logprobs for s in warm) and any(s.temperature > 0 for s in warm), block
        assert all(s.rep == -1 for s in warm) and all(s.rep >= 0 for s in timed)
