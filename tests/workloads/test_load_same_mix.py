"""The same work for every backend (issue 22): runs of the built-in load whose ``--load`` differs only in
``rates`` and ``search_levels`` (the H200's server runs and in-process capacity runs, merged into one report)
plan the same requests at every closed-loop level they share; a level the capacity search adds is the
level planned at that load; the HF mix (fewer turns a session) keeps the fixed shape's requests and
changes the sessions', and the report's mix digest tells exactly those apart."""

from __future__ import annotations

import pytest

from llm_call_anatomy.workloads.catalog import build_plan, read_builtin
from llm_call_anatomy.workloads.load.report.capacity import mix_of
from llm_call_anatomy.workloads.load.search import search_groups
from llm_call_anatomy.workloads.overrides import apply

# the H200 lines' --load fields at a CPU's scale (lab/h200/capacity_sitting.sh)
SCALE = "users=4,output_tokens=4,prompt_tokens=64,shared_prefix_tokens=0:48"
SERVER = (
    f"{SCALE},levels=1:2:4,max_turns=3,search_levels=0"  # vllm-server, sglang-server: the built-in levels
)
# vllm, sglang (cache on and off), vllm-server and sglang-server's capacity runs (session d)
CAPACITY = f"{SCALE},levels=1:2:4,max_turns=3,rates=8:32,search_levels=1"
HF_MIX = f"{SCALE},levels=1:2,max_turns=2,rates=,search_levels=0"  # hf-server, hf-cb: fewer turns a session


def plan_of(renderer, load: str):
    return build_plan(apply(read_builtin(["load"]), {"--load": load}), renderer, repeats=1)


def requests(plan, steps) -> list[tuple]:
    """What a backend is sent for each step: its session and turn, its prompt's token ids, what it decodes."""
    return [
        (s.user, s.turn, s.rep, tuple(plan.prompts[s.prompt]), s.max_new_tokens, s.ignore_eos, s.temperature)
        for s in steps
    ]


def levels(plan) -> dict[tuple[str, bool], list[tuple]]:
    """(block, warm-up?) -> the requests of every planned level (the search's pool left out)."""
    return {
        (g.block, g.warmup): requests(plan, g.steps) for g in plan.groups if not (g.load or {}).get("pool")
    }


@pytest.fixture(scope="module")
def plans(renderer):
    return {name: plan_of(renderer, load) for name, load in (("server", SERVER), ("capacity", CAPACITY))}


def test_rates_and_the_search_change_no_request_of_a_shared_closed_loop_level(plans):
    server, capacity = (levels(plans[k]) for k in ("server", "capacity"))
    closed = [k for k in server if "/C=" in k[0]]
    # every level of the server run is in the capacity run, which adds only its Poisson rates
    assert set(server) <= set(capacity) and len(closed) == len(server) == 3 * 3 * 2
    assert {k[0].rsplit("/", 1)[1] for k in set(capacity) - set(server)} == {"rate=8", "rate=32"}
    for key in closed:
        assert server[key] == capacity[key], key  # warm-ups too: the level starts from the same cache
        assert server[key]  # a level of requests, not two empty lists


def test_a_level_the_search_adds_is_the_level_planned_at_that_load(plans):
    """The capacity run's search cuts its levels from a pool: at a planned level's load they are that level's
    requests, so a level one run searched and another planned compare."""
    plan = plans["capacity"]
    planned = levels(plan)
    for g in plan.groups:
        info = (g.load or {}).get("search")
        if not info or info["loop"] != "closed":
            continue
        pool = {p.load["pool"]: p.steps for p in plan.groups if p.block == info["pool"]}
        variant = g.block.rsplit("/", 1)[0]
        for c in (1, 2, 4):
            warm, timed = search_groups(info, pool.get("warmup", []), pool["timed"], variant, c, None, "chat")
            assert requests(plan, timed.steps) == planned[(f"{variant}/C={c}", False)], (variant, c)
            assert requests(plan, warm.steps) == planned[(f"{variant}/C={c}", True)], (variant, c)


def test_the_hf_mix_keeps_the_fixed_shapes_requests_and_the_report_tells_its_sessions_apart(renderer, plans):
    """hf-server and hf-cb run fewer turns a session (and no rates, no search): their fixed-shape levels are
    the others' requests, their sessions are not, and the report's mix digest (of the records' prompt lengths
    and turns) says the same: equal where the requests are, different where they are not."""
    hf, server = plan_of(renderer, HF_MIX), plans["server"]
    a, b = levels(hf), levels(server)

    def digest(plan, block):
        steps = next(g.steps for g in plan.groups if g.block == block and not g.warmup)
        return mix_of([{"prompt_tokens": len(plan.prompts[s.prompt]), "turn": s.turn} for s in steps])

    shared = [k for k in a if not k[1]]
    assert len(shared) == 3 * 2
    for block, _ in shared:
        same = a[(block, False)] == b[(block, False)]
        assert same == (not block.startswith("load-sessions/")), block
        assert (digest(hf, block) == digest(server, block)) == same, block
